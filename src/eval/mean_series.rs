//! What the report and the summary figures of `dprp eval mean` share about a row: its legend,
//! its point, the distinct values of a column, the settings not run.

use super::mean::{MeanRow, MeanSpec};
use super::{Metric, Status};

/// The legend of series `series` of row `r`: a central reference names its trusted server, a
/// distributed mechanism its secure aggregation.
pub(super) fn legend_for(series: &str, r: &MeanRow) -> String {
    if MeanSpec::is_central_label(&r.mechanism) {
        format!("{series} ({}, trusted server)", r.guarantee.short())
    } else if r.bits.is_some() {
        format!("{series} ({}, SecAgg)", r.guarantee.short())
    } else {
        format!("{series} ({})", r.guarantee.short())
    }
}

/// Distinct values in order of first appearance.
pub(super) fn distinct<T: PartialEq + Copy>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for x in it {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// Settings not run, as small print under a legend (at most 8 lines).
pub(super) fn not_run_notes(rows: &[&MeanRow]) -> Vec<String> {
    let skipped: Vec<String> = rows
        .iter()
        .filter(|r| r.status != Status::Ok)
        .map(|r| {
            format!(
                "{} d={} ε={}{}",
                r.mechanism,
                r.d,
                r.epsilon,
                r.k.map(|k| format!(" k={k}")).unwrap_or_default()
            )
        })
        .collect();
    if skipped.is_empty() {
        return Vec::new();
    }
    let mut notes = vec!["not run (see report.md):".to_string()];
    notes.extend(skipped.iter().take(7).cloned());
    if skipped.len() > 7 {
        notes.push(format!("… and {} more", skipped.len() - 7));
    }
    notes
}

/// A row's point `(x, mean, sd)` of metric `y`, if it ran.
pub(super) fn point(r: &MeanRow, x: f64, y: &Option<Metric>) -> Option<(f64, f64, f64)> {
    (r.status == Status::Ok)
        .then_some(())
        .and(y.as_ref())
        .map(|m| (x, m.mean, m.sd))
}
