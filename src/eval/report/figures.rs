//! The figures of a report as data — panels, series, reference lines, legends — built from its
//! rows before anything is drawn ([`super::plot`] draws them).

use std::collections::HashSet;
use std::fmt::Write as _;

use super::{finite_eps, fmt_num, metric_names, same_f64, Grid};
use crate::eval::grid::UNPROJECTED;
use crate::eval::{Report, ResultRow, Status};

/// One point of a line: ε, mean, sd, repeats.
#[derive(Clone, Copy)]
pub(super) struct Point {
    pub(super) eps: f64,
    pub(super) mean: f64,
    pub(super) sd: f64,
    pub(super) n: usize,
}

/// One mechanism in one panel.
pub(super) struct Series {
    /// Index among the report's mechanisms (colour and marker).
    pub(super) style: usize,
    pub(super) points: Vec<Point>,
    /// The mechanism's own noiseless reference (ε = ∞; `eps` unused), drawn as an open marker in
    /// the ∞ column at the right of the panel.
    pub(super) inf: Option<Point>,
}

/// A horizontal reference line: the unprojected ceiling, or a reference no mechanism of the panel
/// names (e.g. in a report written before references were per family).
pub(super) struct RefLine {
    /// Dash pattern (index into [`DASHES`]; the same label keeps its pattern across panels).
    pub(super) dash: usize,
    pub(super) mean: f64,
    pub(super) sd: f64,
    pub(super) n: usize,
}

/// One panel: one k.
pub(super) struct Panel {
    pub(super) k: usize,
    pub(super) series: Vec<Series>,
    pub(super) refs: Vec<RefLine>,
    pub(super) notes: Vec<String>,
}

/// One figure: one metric and one query mode or C.
pub(super) struct Figure {
    pub(super) stem: String,
    pub(super) title: String,
    pub(super) ylabel: String,
    pub(super) panels: Vec<Panel>,
    /// Mechanisms drawn (style index, label with its guarantee kind).
    pub(super) legend: Vec<(usize, String)>,
    /// Reference lines drawn (dash pattern, label).
    pub(super) ref_legend: Vec<(usize, String)>,
    /// Some mechanism has its ε = ∞ point.
    pub(super) has_inf: bool,
    pub(super) max_repeats: usize,
}

/// A file-name part made of `[a-z0-9.-]`: `precision@10` → `precision-at-10`.
pub(super) fn slug(s: &str) -> String {
    let mut out = String::new();
    for ch in s.to_lowercase().replace('@', "-at-").chars() {
        if ch.is_ascii_alphanumeric() || ch == '.' {
            out.push(ch);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let t = out.trim_matches(|c| c == '-' || c == '.');
    if t.is_empty() {
        "x".to_string()
    } else {
        t.to_string()
    }
}

/// Build the figures of a report (no drawing yet).
pub(super) fn figures(report: &Report) -> Vec<Figure> {
    let grid = Grid::new(report);
    let names = metric_names(report);
    // Groups: (query mode, C if a dimension), from the private settings (or all if none).
    let mut groups: Vec<(Option<String>, Option<f64>)> = Vec::new();
    let has_private = report.rows.iter().any(|r| finite_eps(r).is_some());
    for r in &report.rows {
        if has_private && finite_eps(r).is_none() {
            continue;
        }
        let g = (r.query_mode.clone(), if grid.c_is_dim { r.c } else { None });
        if !groups.iter().any(|x| x.0 == g.0 && same_f64(x.1, g.1)) {
            groups.push(g);
        }
    }
    let in_group = |r: &ResultRow, g: &(Option<String>, Option<f64>)| {
        r.query_mode == g.0 && (!grid.c_is_dim || same_f64(r.c, g.1))
    };
    // Mechanisms (labels with a finite ε somewhere), for colours and markers.
    let mechanisms: Vec<&String> = grid
        .mechanisms
        .iter()
        .filter(|m| {
            report
                .rows
                .iter()
                .any(|r| &&r.mechanism == m && finite_eps(r).is_some())
        })
        .collect();
    let mut used: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for name in &names {
        for g in &groups {
            let mut stem = slug(name);
            if let Some(m) = &g.0 {
                stem.push('-');
                stem.push_str(&slug(m));
            }
            if grid.c_is_dim {
                stem.push_str("-c-");
                stem.push_str(
                    &g.1.map(|c| slug(&fmt_num(c)))
                        .unwrap_or_else(|| "none".into()),
                );
            }
            let mut unique = stem.clone();
            let mut n = 2;
            while !used.insert(unique.clone()) {
                unique = format!("{stem}-{n}");
                n += 1;
            }
            let rows: Vec<&ResultRow> = report
                .rows
                .iter()
                .filter(|r| finite_eps(r).is_some() && in_group(r, g))
                .collect();
            let refs_all: Vec<&ResultRow> = report
                .rows
                .iter()
                .filter(|r| finite_eps(r).is_none())
                .collect();
            let mut ks: Vec<usize> = rows.iter().map(|r| r.k).collect();
            if rows.is_empty() {
                ks.extend(refs_all.iter().filter(|r| in_group(r, g)).map(|r| r.k));
            }
            ks.sort_unstable();
            ks.dedup();
            let mut legend: Vec<(usize, String)> = Vec::new();
            let mut ref_legend: Vec<(usize, String)> = Vec::new();
            let mut panels = Vec::new();
            let mut max_repeats = 0;
            // the reference row of `label` for this figure's mode and C at size k
            let ref_row = |label: &str, k: usize| -> Option<&&ResultRow> {
                refs_all.iter().find(|r| {
                    r.mechanism == label
                        && r.k == k
                        && (r.query_mode == g.0 || r.query_mode.is_none())
                        && (!grid.c_is_dim || same_f64(r.c, g.1) || r.c.is_none())
                })
            };
            let metric_point = |r: &ResultRow| -> Option<Point> {
                match (&r.status, r.metric(name)) {
                    (Status::Ok, Some(m)) if m.mean.is_finite() => Some(Point {
                        eps: f64::INFINITY,
                        mean: m.mean,
                        sd: if m.sd.is_finite() { m.sd } else { 0.0 },
                        n: m.values.len(),
                    }),
                    _ => None,
                }
            };
            let why = |r: &ResultRow| match r.status {
                Status::NotApplicable(_) => "n/a",
                Status::Failed(_) => "failed",
                Status::Ok => "no value",
            };
            for &k in &ks {
                let mut series: Vec<Series> = Vec::new();
                let mut notes: Vec<String> = Vec::new();
                let mut referenced: Vec<String> = Vec::new();
                for (mi, mech) in mechanisms.iter().enumerate() {
                    let mine: Vec<&&ResultRow> = rows
                        .iter()
                        .filter(|r| r.k == k && &r.mechanism == *mech)
                        .collect();
                    if mine.is_empty() {
                        continue;
                    }
                    let mut points = Vec::new();
                    let mut missing: Vec<(&str, f64)> = Vec::new();
                    for r in &mine {
                        let e = finite_eps(r).unwrap_or(f64::NAN);
                        match (&r.status, r.metric(name)) {
                            (Status::Ok, Some(m)) if m.mean.is_finite() && e > 0.0 => {
                                max_repeats = max_repeats.max(m.values.len());
                                points.push(Point {
                                    eps: e,
                                    mean: m.mean,
                                    sd: if m.sd.is_finite() { m.sd } else { 0.0 },
                                    n: m.values.len(),
                                });
                            }
                            (Status::NotApplicable(_), _) => missing.push(("n/a", e)),
                            (Status::Failed(_), _) => missing.push(("failed", e)),
                            _ => missing.push(("no value", e)),
                        }
                    }
                    points.sort_by(|a, b| a.eps.total_cmp(&b.eps));
                    for tag in ["n/a", "failed", "no value"] {
                        let mut at: Vec<f64> =
                            missing.iter().filter(|m| m.0 == tag).map(|m| m.1).collect();
                        if at.is_empty() {
                            continue;
                        }
                        at.sort_by(f64::total_cmp);
                        if points.is_empty() && at.len() == mine.len() {
                            notes.push(format!("{mech}: {tag}"));
                        } else {
                            let list: Vec<String> = at.iter().map(|e| fmt_num(*e)).collect();
                            notes.push(format!("{mech}: {tag} at ε = {}", list.join(", ")));
                        }
                    }
                    // its own reference, at ε = ∞
                    let own = mine.iter().find_map(|r| r.reference.clone());
                    if points.is_empty() {
                        // nothing to draw; its reference is not a line of its own either
                        referenced.extend(own);
                        continue;
                    }
                    let mut inf = None;
                    if let Some(label) = own {
                        match ref_row(&label, k) {
                            Some(r) => {
                                inf = metric_point(r);
                                if inf.is_none() {
                                    notes.push(format!("{mech}: {} at ε = ∞", why(r)));
                                }
                            }
                            None => notes.push(format!("{mech}: no value at ε = ∞")),
                        }
                        referenced.push(label);
                    }
                    if !legend.iter().any(|l| l.0 == mi) {
                        let g = mine
                            .iter()
                            .find_map(|r| r.guarantee)
                            .map(|g| format!(" ({})", g.short()))
                            .unwrap_or_default();
                        legend.push((mi, format!("{mech}{g}")));
                    }
                    series.push(Series {
                        style: mi,
                        points,
                        inf,
                    });
                }
                // Horizontal lines: the ceiling in every panel, and references of this k that no
                // mechanism of the panel names (same mode, or none, and C; else any mode).
                let line_ok = |r: &&&ResultRow| {
                    r.mechanism == UNPROJECTED || (r.k == k && !referenced.contains(&r.mechanism))
                };
                let mut chosen: Vec<&&ResultRow> = Vec::new();
                for r in refs_all.iter().filter(|r| {
                    (r.query_mode == g.0 || r.query_mode.is_none())
                        && (!grid.c_is_dim || same_f64(r.c, g.1) || r.c.is_none())
                }) {
                    if line_ok(&r) && !chosen.iter().any(|c| c.mechanism == r.mechanism) {
                        chosen.push(r);
                    }
                }
                if chosen.is_empty() {
                    chosen.extend(
                        refs_all
                            .iter()
                            .filter(|r| {
                                line_ok(r)
                                    && (!grid.c_is_dim || same_f64(r.c, g.1) || r.c.is_none())
                            })
                            .take(1),
                    );
                }
                let mut refs = Vec::new();
                for r in chosen {
                    let Some(pt) = metric_point(r) else {
                        notes.push(format!("{}: {}", r.mechanism, why(r)));
                        continue;
                    };
                    let label = if r.mechanism == UNPROJECTED {
                        format!("{UNPROJECTED} (ceiling), ε = ∞")
                    } else {
                        format!("{}, ε = ∞", r.mechanism)
                    };
                    let dash = match ref_legend.iter().find(|l| l.1 == label) {
                        Some(l) => l.0,
                        None => {
                            let d = if r.mechanism == UNPROJECTED {
                                0
                            } else {
                                1 + ref_legend.iter().filter(|l| l.0 != 0).count()
                            };
                            ref_legend.push((d, label));
                            d
                        }
                    };
                    refs.push(RefLine {
                        dash,
                        mean: pt.mean,
                        sd: pt.sd,
                        n: pt.n,
                    });
                }
                panels.push(Panel {
                    k,
                    series,
                    refs,
                    notes,
                });
            }
            ref_legend.sort_by_key(|l| l.0);
            legend.sort_by_key(|l| l.0);
            let has_inf = panels
                .iter()
                .any(|p| p.series.iter().any(|s| s.inf.is_some()));
            let mut title = format!("{name} vs ε");
            if let Some(m) = &g.0 {
                let _ = write!(title, " — query mode: {m}");
            }
            if grid.c_is_dim {
                if let Some(c) = g.1 {
                    let _ = write!(title, " — C = {}", fmt_num(c));
                }
            } else if let Some(c) = grid.constant_c() {
                let _ = write!(title, " — C = {}", fmt_num(c));
            } else if grid.c_varies() {
                title.push_str(" — C chosen per setting");
            }
            out.push(Figure {
                stem: unique,
                title,
                ylabel: name.clone(),
                panels,
                legend,
                ref_legend,
                has_inf,
                max_repeats,
            });
        }
    }
    out
}
