//! The report of `dprp eval mean`: Markdown tables, CSV, JSON and log–log plots of a
//! [`MeanReport`] (plots drawn by [`crate::eval::report::write_line_figures`], files written
//! atomically like every other report).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::mean::{
    ExperimentReport, MeanReport, MeanRow, MeanSpec, Plan, CENTRAL, CENTRAL_ADD_REMOVE,
    CENTRAL_ZCDP, Z_MAX,
};
use super::mean_series::{distinct, legend_for, not_run_notes, point};
use super::report::{
    csv_field, write_line_figures, write_text_atomic, Line, LineFigure, LinePanel,
};
use super::{Metric, Status};
use crate::error::{Error, Result};
use crate::mechanism::local::release::ErrorKind;
use crate::privacy::guarantee::GuaranteeKind;

/// Three significant digits in scientific notation: `1.23e-4`.
fn sci(x: f64) -> String {
    format!("{x:.2e}")
}

fn mean_sd(m: &Metric) -> String {
    if m.values.len() > 1 {
        format!("{} ± {}", sci(m.mean), sci(m.sd))
    } else {
        sci(m.mean)
    }
}

/// A time in convenient units.
fn secs(x: f64) -> String {
    if x < 1e-3 {
        format!("{:.1} µs", x * 1e6)
    } else if x < 1.0 {
        format!("{:.2} ms", x * 1e3)
    } else {
        format!("{x:.2} s")
    }
}

/// `label (LDP)`; a central reference names its trusted server, a distributed mechanism its
/// secure aggregation.
pub fn legend_label(r: &MeanRow) -> String {
    legend_for(&r.mechanism, r)
}

/// Whether a row is a distributed mechanism's.
fn distributed(r: &MeanRow) -> bool {
    r.bits.is_some()
}

fn error_kind_name(k: ErrorKind) -> &'static str {
    match k {
        ErrorKind::Exact => "exact",
        ErrorKind::Approximate => "approximate",
        ErrorKind::UpperBound => "upper bound",
    }
}

fn check_cell(r: &MeanRow) -> String {
    match &r.check {
        None => "—".into(),
        Some(c) => format!("{} z = {:.1}", if c.agrees { "✓" } else { "✗" }, c.z),
    }
}

/// The guarantee paragraph: what LDP means, and what the central reference is.
fn guarantee_paragraph(rep: &MeanReport) -> String {
    let rows = rep.experiments.iter().flat_map(|e| e.rows.iter());
    let mut s = String::new();
    if rows.clone().any(|r| r.guarantee == GuaranteeKind::LocalDp) {
        let _ = writeln!(s, "{}\n", GuaranteeKind::LocalDp.explain());
    }
    if rows.clone().any(distributed) {
        let _ = writeln!(
            s,
            "**Distributed** mechanisms (guarantee DP, marked SecAgg: (ε, δ)-DP *of the sum*, \
             δ = {}, neighbours differ by one user's vector added or removed, clip norm c = 1): \
             each user sends integers mod 2^b carrying a small share of the noise, and secure \
             aggregation reveals only their sum, so no single message is private on its own but \
             the server learns nothing else (the evaluation adds the messages without the pads, \
             which cancel exactly). *b* is the bits per transmitted coordinate, *bits/param* \
             what a user sends per input value (b × message length / d; sketch-ddg's sketch rows \
             m in brackets); their closed form is the planner's expected error with the count \
             sketch's term at the data's own mean, an upper bound (checked one-sided, from the \
             repeats: needs 30).\n",
            rep.meta["delta"]
        );
    }
    if rows.clone().any(|r| r.mechanism == CENTRAL_ADD_REMOVE) {
        let _ = writeln!(
            s,
            "**{CENTRAL_ADD_REMOVE}** is the distributed mechanisms' reference: a *trusted \
             server* adds N(0, σ²I) to the mean, σ from the analytic Gaussian mechanism at ℓ₂ \
             sensitivity c/n (one user's vector of norm ≤ c = 1 added or removed), at the same \
             (ε, δ). Its expected squared error is d·σ².\n"
        );
    }
    if rows.clone().any(|r| r.mechanism == CENTRAL_ZCDP) {
        let _ = writeln!(
            s,
            "**{CENTRAL_ZCDP}** is the same trusted-server reference at the distributed \
             mechanisms' own accountant: σ = c/(n·√(2ρ)) with ρ the largest zCDP budget whose \
             tight conversion (Canonne, Kamath & Steinke 2020) meets (ε, δ). The distributed \
             mechanisms' distance to it is the cost of splitting, discretising and compressing \
             the noise; its distance to {CENTRAL_ADD_REMOVE} is the accountant's slack.\n"
        );
    }
    if rows.clone().any(|r| r.mechanism == CENTRAL) {
        let _ = writeln!(
            s,
            "**{CENTRAL}** (guarantee DP: (ε, δ)-DP *on the mean*, δ = {}) is a reference, not \
             a local mechanism: a *trusted server* holding every raw vector adds N(0, σ²I) to \
             their mean, σ from the analytic Gaussian mechanism at ℓ₂ sensitivity 2/n \
             (replace-one: one unit vector replaced by any other). Its expected squared error \
             is d·σ². No user is protected from the server.\n",
            rep.meta["delta"]
        );
    }
    let _ = writeln!(
        s,
        "Columns: ‖μ̂ − μ̄‖² is the squared error of the estimate against the true mean of the \
         data (mean ± sd over the repeats); *closed form* is E‖μ̂ − μ̄‖² = MSE per user / n from \
         the mechanism's constants; *check* compares the mean per-user error ‖Ẑᵢ − vᵢ‖² over \
         all users and repeats with the closed-form MSE per user: ✓ when |z| ≤ {Z_MAX} (one-sided \
         for an upper bound), — when not made (runtime runs, fewer than 30 samples). Client time \
         is per user, server time for all n users (accumulate + finish); wall clock on a shared \
         machine, one thread for the clients."
    );
    s
}

/// Markdown for the whole report: a guarantee paragraph, then one section per experiment.
pub fn markdown(rep: &MeanReport) -> String {
    let mut s = String::new();
    s.push_str(&guarantee_paragraph(rep));
    for e in &rep.experiments {
        s.push('\n');
        s.push_str(&experiment_markdown(e));
    }
    s
}

/// One experiment's section: its title, what ran and whether the closed form agreed, the table,
/// the reasons for settings not run, wrapped sums, and the headline and scaling lines.
fn experiment_markdown(e: &ExperimentReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## {}\n", e.title);
    s.push_str(&run_sentence(e));
    s.push('\n');
    s.push_str(
        "| mechanism | guarantee | d | n | ε | k | b | bits/param | ‖μ̂ − μ̄‖² | closed form | \
         ratio | check | client / user | server (n users) |\n",
    );
    s.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n");
    let mut reasons: Vec<String> = Vec::new();
    for r in &e.rows {
        s.push_str(&table_row(r, &mut reasons));
    }
    if !reasons.is_empty() {
        s.push('\n');
        for (i, r) in reasons.iter().enumerate() {
            let _ = writeln!(s, "[{}] {}", i + 1, r);
        }
    }
    s.push_str(&wrapped_sums(e));
    s.push_str(&super::mean_summary::summary(e));
    s
}

/// "12 settings, 5 repeats each; 2 not run (…). Closed-form check: 9 of 10 checked settings
/// agree; disagreeing: …."
fn run_sentence(e: &ExperimentReport) -> String {
    let mut s = String::new();
    let checked: Vec<&MeanRow> = e.rows.iter().filter(|r| r.check.is_some()).collect();
    let bad: Vec<&&MeanRow> = checked
        .iter()
        .filter(|r| r.check.as_ref().is_some_and(|c| !c.agrees))
        .collect();
    let not_run = e.rows.iter().filter(|r| r.status != Status::Ok).count();
    let _ = write!(s, "{} settings, {} repeats each", e.rows.len(), e.repeat);
    if not_run > 0 {
        let _ = write!(
            s,
            "; {not_run} not run (reasons in the notes below the table)"
        );
    }
    let _ = write!(s, ".");
    if checked.is_empty() {
        s.push('\n');
        return s;
    }
    let _ = write!(
        s,
        " Closed-form check: {} of {} checked settings agree",
        checked.len() - bad.len(),
        checked.len()
    );
    if bad.is_empty() {
        let _ = writeln!(s, ".");
    } else {
        let list: Vec<String> = bad
            .iter()
            .map(|r| {
                format!(
                    "{} d = {} ε = {}{} (z = {:.1})",
                    r.mechanism,
                    r.d,
                    r.epsilon,
                    r.k.map(|k| format!(" k = {k}")).unwrap_or_default(),
                    r.check.as_ref().map(|c| c.z).unwrap_or(f64::NAN)
                )
            })
            .collect();
        let _ = writeln!(s, "; disagreeing: {}.", list.join("; "));
    }
    s
}

/// A setting's line of the table; a setting not run points to its reason (added to `reasons`
/// if new).
fn table_row(r: &MeanRow, reasons: &mut Vec<String>) -> String {
    let k = r.k.map(|k| k.to_string()).unwrap_or_else(|| "—".into());
    let b = r.bits.map(|b| b.to_string()).unwrap_or_else(|| "—".into());
    let bpp = match (r.bits_per_parameter, r.sketch_m, r.bpp_cap) {
        (Some(x), Some(m), _) => format!("{x:.3} (m = {m})"),
        (Some(x), None, _) => format!("{x:.3}"),
        (None, _, Some(c)) => format!("≤ {c}"),
        (None, _, None) => "—".into(),
    };
    let head = format!(
        "| {} | {} | {} | {} | {} | {k} | {b} | {bpp} |",
        r.mechanism.replace('|', "\\|"),
        if MeanSpec::is_central_label(&r.mechanism) {
            format!("{} (trusted server)", r.guarantee.short())
        } else if distributed(r) {
            format!("{} (SecAgg)", r.guarantee.short())
        } else {
            r.guarantee.short().to_string()
        },
        r.d,
        r.n,
        r.epsilon
    );
    match (&r.status, &r.sq_error, r.expected) {
        (Status::Ok, Some(m), Some(x)) => {
            let kind = r
                .error_kind
                .filter(|k| *k != ErrorKind::Exact)
                .map(|k| format!(" ({})", error_kind_name(k)))
                .unwrap_or_default();
            let time = |t: &Option<Metric>| t.as_ref().map(|c| secs(c.mean));
            format!(
                "{head} {} | {}{kind} | {:.3} | {} | {} | {} |\n",
                mean_sd(m),
                sci(x),
                m.mean / x,
                check_cell(r),
                time(&r.client_s_per_user).unwrap_or_else(|| "—".into()),
                time(&r.server_s).unwrap_or_else(|| "—".into()),
            )
        }
        (st, _, _) => {
            let reason = match st {
                Status::NotApplicable(x) | Status::Failed(x) => x.clone(),
                Status::Ok => "no values".into(),
            };
            let i = match reasons.iter().position(|x| *x == reason) {
                Some(i) => i,
                None => {
                    reasons.push(reason);
                    reasons.len() - 1
                }
            };
            format!("{head} not run [{}] | | | | | |\n", i + 1)
        }
    }
}

/// The paragraph on secure sums that wrapped around the modulus (empty when none did).
fn wrapped_sums(e: &ExperimentReport) -> String {
    let wrapped: Vec<String> = e
        .rows
        .iter()
        .filter(|r| r.wrapped.is_some_and(|w| w > 0))
        .map(|r| {
            format!(
                "{} b = {} n = {} ε = {}: {}",
                r.mechanism,
                r.bits.unwrap_or(0),
                r.n,
                r.epsilon,
                r.wrapped.unwrap_or(0)
            )
        })
        .collect();
    if wrapped.is_empty() {
        return String::new();
    }
    format!(
        "\n**Wrapped sums** (coordinates of the secure sum outside [−M/2, M/2), over all \
         repeats): {}.\n",
        wrapped.join("; ")
    )
}

/// The CSV header of [`write_csv`].
pub const CSV_HEADER: &str = "experiment,mechanism,guarantee,epsilon,d,n,k,status,reason,\
sq_error_mean,sq_error_sd,repeats,sq_error_values,expected,error_kind,check_samples,check_mean,\
check_expected,check_z,check_agrees,client_s_per_user,server_s,seeds,bits,bpp_cap,\
bits_per_parameter,sketch_m,wrapped";

fn csv_text(rep: &MeanReport) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    let num = |x: Option<f64>| x.map(|v| format!("{v}")).unwrap_or_default();
    for e in &rep.experiments {
        for r in &e.rows {
            let (status, reason) = match &r.status {
                Status::Ok => ("ok", ""),
                Status::NotApplicable(s) => ("not-run", s.as_str()),
                Status::Failed(s) => ("failed", s.as_str()),
            };
            let m = r.sq_error.as_ref();
            let c = r.check.as_ref();
            let fields = [
                csv_field(&e.name),
                csv_field(&r.mechanism),
                r.guarantee.short().to_string(),
                format!("{}", r.epsilon),
                r.d.to_string(),
                r.n.to_string(),
                r.k.map(|k| k.to_string()).unwrap_or_default(),
                status.to_string(),
                csv_field(reason),
                num(m.map(|m| m.mean)),
                num(m.map(|m| m.sd)),
                m.map(|m| m.values.len()).unwrap_or(0).to_string(),
                m.map(|m| {
                    m.values
                        .iter()
                        .map(|v| format!("{v}"))
                        .collect::<Vec<_>>()
                        .join(";")
                })
                .unwrap_or_default(),
                num(r.expected),
                r.error_kind
                    .map(|k| error_kind_name(k).replace(' ', "-"))
                    .unwrap_or_default(),
                c.map(|c| c.samples.to_string()).unwrap_or_default(),
                num(c.map(|c| c.mean)),
                num(c.map(|c| c.expected)),
                num(c.map(|c| c.z)),
                c.map(|c| c.agrees.to_string()).unwrap_or_default(),
                num(r.client_s_per_user.as_ref().map(|m| m.mean)),
                num(r.server_s.as_ref().map(|m| m.mean)),
                csv_field(&r.seeds.join(";")),
                r.bits.map(|b| b.to_string()).unwrap_or_default(),
                num(r.bpp_cap),
                num(r.bits_per_parameter),
                r.sketch_m.map(|m| m.to_string()).unwrap_or_default(),
                r.wrapped.map(|w| w.to_string()).unwrap_or_default(),
            ];
            out.push_str(&fields.join(","));
            out.push('\n');
        }
    }
    out
}

/// Write the report as CSV, one line per setting (columns [`CSV_HEADER`]; settings not run have
/// status `not-run` and the reason).
pub fn write_csv(rep: &MeanReport, path: &Path) -> Result<()> {
    write_text_atomic(path, &csv_text(rep))
}

/// Write the whole report as pretty-printed JSON (reads back into the same [`MeanReport`]).
pub fn write_json(rep: &MeanReport, path: &Path) -> Result<()> {
    let mut text =
        serde_json::to_string_pretty(rep).map_err(|e| Error::io(path, std::io::Error::other(e)))?;
    text.push('\n');
    write_text_atomic(path, &text)
}

/// Style index and legend of the mechanisms of an experiment.
fn styles(rows: &[&MeanRow], flat_if_no_k: bool) -> Vec<(String, usize, bool, String)> {
    let mut out: Vec<(String, usize, bool, String)> = Vec::new();
    for r in rows {
        if !out.iter().any(|x| x.0 == r.mechanism) {
            let i = out.len();
            out.push((
                r.mechanism.clone(),
                i,
                flat_if_no_k && r.k.is_none(),
                legend_label(r),
            ));
        }
    }
    out
}

/// Error against k: a panel per (d, ε); mechanisms without k are flat dashed lines.
fn error_vs_k(stem: &str, title: &str, rows: &[&MeanRow]) -> LineFigure {
    let st = styles(rows, true);
    let mut panels = Vec::new();
    for d in distinct(rows.iter().map(|r| r.d)) {
        for eps in distinct(rows.iter().map(|r| r.epsilon.to_bits())) {
            let eps = f64::from_bits(eps);
            let here: Vec<&&MeanRow> = rows
                .iter()
                .filter(|r| r.d == d && r.epsilon == eps)
                .collect();
            let lines = st
                .iter()
                .map(|(m, style, flat, _)| Line {
                    style: *style,
                    flat: *flat,
                    points: here
                        .iter()
                        .filter(|r| &r.mechanism == m)
                        .filter_map(|r| point(r, r.k.unwrap_or(0) as f64, &r.sq_error))
                        .collect(),
                })
                .collect();
            panels.push(LinePanel {
                caption: format!("d = {d}, ε = {eps}"),
                lines,
            });
        }
    }
    LineFigure {
        stem: stem.into(),
        title: title.into(),
        xlabel: "k (log scale)".into(),
        ylabel: "‖μ̂ − μ̄‖² (log scale)".into(),
        panels,
        legend: st.into_iter().map(|(_, s, f, l)| (s, f, l)).collect(),
        notes: not_run_notes(rows),
    }
}

/// Error against ε: a panel per (d, k) (mechanisms without k in every panel).
fn error_vs_eps(stem: &str, title: &str, rows: &[&MeanRow]) -> LineFigure {
    let st = styles(rows, false);
    let ks = distinct(rows.iter().filter_map(|r| r.k));
    let mut panels = Vec::new();
    for d in distinct(rows.iter().map(|r| r.d)) {
        let panel_ks: Vec<Option<usize>> = if ks.is_empty() {
            vec![None]
        } else {
            ks.iter().map(|k| Some(*k)).collect()
        };
        for k in panel_ks {
            let lines = st
                .iter()
                .map(|(m, style, _, _)| Line {
                    style: *style,
                    flat: false,
                    points: rows
                        .iter()
                        .filter(|r| r.d == d && &r.mechanism == m && (r.k.is_none() || r.k == k))
                        .filter_map(|r| point(r, r.epsilon, &r.sq_error))
                        .collect(),
                })
                .collect();
            panels.push(LinePanel {
                caption: match k {
                    Some(k) => format!("d = {d}, k = {k}"),
                    None => format!("d = {d}"),
                },
                lines,
            });
        }
    }
    LineFigure {
        stem: stem.into(),
        title: title.into(),
        xlabel: "ε (log scale)".into(),
        ylabel: "‖μ̂ − μ̄‖² (log scale)".into(),
        panels,
        legend: st.into_iter().map(|(_, s, f, l)| (s, f, l)).collect(),
        notes: not_run_notes(rows),
    }
}

/// Client time per user and server time against d, a pair of panels per ε.
fn runtime_vs_d(stem: &str, title: &str, rows: &[&MeanRow]) -> LineFigure {
    let st = styles(rows, false);
    let mut panels = Vec::new();
    for eps in distinct(rows.iter().map(|r| r.epsilon.to_bits())) {
        let eps = f64::from_bits(eps);
        let n = rows.first().map(|r| r.n).unwrap_or(0);
        for (what, server) in [("client, per user", false), ("server", true)] {
            let lines = st
                .iter()
                .map(|(m, style, _, _)| Line {
                    style: *style,
                    flat: false,
                    points: rows
                        .iter()
                        .filter(|r| r.epsilon == eps && &r.mechanism == m)
                        .filter_map(|r| {
                            let t = if server {
                                &r.server_s
                            } else {
                                &r.client_s_per_user
                            };
                            point(r, r.d as f64, t)
                        })
                        .collect(),
                })
                .collect();
            panels.push(LinePanel {
                caption: if server {
                    format!("{what} (n = {n}), ε = {eps}")
                } else {
                    format!("{what}, ε = {eps}")
                },
                lines,
            });
        }
    }
    LineFigure {
        stem: stem.into(),
        title: title.into(),
        xlabel: "d (log scale)".into(),
        ylabel: "seconds (log scale)".into(),
        panels,
        legend: st.into_iter().map(|(_, s, f, l)| (s, f, l)).collect(),
        notes: not_run_notes(rows),
    }
}

/// The figures of an experiment.
pub fn figures(e: &ExperimentReport) -> Vec<LineFigure> {
    let rows: Vec<&MeanRow> = e.rows.iter().collect();
    match e.plan {
        Plan::ErrorVsK => vec![error_vs_k(&e.name, &e.title, &rows)],
        Plan::ErrorVsEps => vec![error_vs_eps(&e.name, &e.title, &rows)],
        Plan::RuntimeVsD => vec![runtime_vs_d(&e.name, &e.title, &rows)],
        Plan::ErrorVsN => vec![super::mean_summary::error_vs_n(&e.name, &e.title, &rows)],
        Plan::ErrorVsBits => vec![super::mean_summary::error_vs_bits(&e.name, &e.title, &rows)],
        Plan::Grid => {
            let mut out = Vec::new();
            if distinct(rows.iter().filter_map(|r| r.k)).len() > 1 {
                out.push(error_vs_k(
                    &format!("{}-error-vs-k", e.name),
                    &format!("{}: error vs k", e.title),
                    &rows,
                ));
            }
            if distinct(rows.iter().map(|r| r.n)).len() > 1 {
                out.push(super::mean_summary::error_vs_n(
                    &format!("{}-error-vs-n", e.name),
                    &format!("{}: error vs n", e.title),
                    &rows,
                ));
            }
            if distinct(rows.iter().map(|r| r.epsilon.to_bits())).len() > 1 {
                out.push(error_vs_eps(
                    &format!("{}-error-vs-eps", e.name),
                    &format!("{}: error vs ε", e.title),
                    &rows,
                ));
            }
            out
        }
    }
}

/// Write report.md, report.csv, report.json and the plots into `dir` (which must exist); returns
/// the plot files and warnings (PNG without a font).
pub fn write_all(rep: &MeanReport, md: &str, dir: &Path) -> Result<(Vec<PathBuf>, Vec<String>)> {
    write_text_atomic(&dir.join("report.md"), md)?;
    write_csv(rep, &dir.join("report.csv"))?;
    write_json(rep, &dir.join("report.json"))?;
    let figs: Vec<LineFigure> = rep.experiments.iter().flat_map(figures).collect();
    let out = write_line_figures(&figs, dir)?;
    Ok((out.files, out.warnings))
}
