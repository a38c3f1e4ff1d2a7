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

/// A figure's rows: one query mode, and one C when C is a grid dimension.
struct Group {
    mode: Option<String>,
    c: Option<f64>,
}

/// The groups of a report, in order of first appearance among the private settings (or among
/// all rows if none is private).
fn groups(report: &Report, c_is_dim: bool) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    let has_private = report.rows.iter().any(|r| finite_eps(r).is_some());
    for r in &report.rows {
        if has_private && finite_eps(r).is_none() {
            continue;
        }
        let c = if c_is_dim { r.c } else { None };
        if !groups
            .iter()
            .any(|g| g.mode == r.query_mode && same_f64(g.c, c))
        {
            groups.push(Group {
                mode: r.query_mode.clone(),
                c,
            });
        }
    }
    groups
}

/// The mechanisms with a finite ε somewhere (their index gives the colour and marker).
fn plotted_mechanisms<'r>(report: &Report, grid: &'r Grid) -> Vec<&'r String> {
    grid.mechanisms
        .iter()
        .filter(|m| {
            report
                .rows
                .iter()
                .any(|r| &&r.mechanism == m && finite_eps(r).is_some())
        })
        .collect()
}

/// The file stem of a figure: metric, query mode, C; `-2`, `-3`… when already `used`.
fn unique_stem(name: &str, g: &Group, c_is_dim: bool, used: &mut HashSet<String>) -> String {
    let mut stem = slug(name);
    if let Some(m) = &g.mode {
        stem.push('-');
        stem.push_str(&slug(m));
    }
    if c_is_dim {
        stem.push_str("-c-");
        stem.push_str(
            &g.c.map(|c| slug(&fmt_num(c)))
                .unwrap_or_else(|| "none".into()),
        );
    }
    let mut unique = stem.clone();
    let mut n = 2;
    while !used.insert(unique.clone()) {
        unique = format!("{stem}-{n}");
        n += 1;
    }
    unique
}

/// A figure's title: the metric against ε, the query mode, and C (of the figure, common to all,
/// or chosen per setting).
fn title(name: &str, g: &Group, grid: &Grid) -> String {
    let mut title = format!("{name} vs ε");
    if let Some(m) = &g.mode {
        let _ = write!(title, " — query mode: {m}");
    }
    if grid.c_is_dim {
        if let Some(c) = g.c {
            let _ = write!(title, " — C = {}", fmt_num(c));
        }
    } else if let Some(c) = grid.constant_c() {
        let _ = write!(title, " — C = {}", fmt_num(c));
    } else if grid.c_varies() {
        title.push_str(" — C chosen per setting");
    }
    title
}

/// Why a row has no point: `n/a`, `failed` or `no value`.
fn why(r: &ResultRow) -> &'static str {
    match r.status {
        Status::NotApplicable(_) => "n/a",
        Status::Failed(_) => "failed",
        Status::Ok => "no value",
    }
}

/// Build the figures of a report (no drawing yet): one per metric and group.
pub(super) fn figures(report: &Report) -> Vec<Figure> {
    let grid = Grid::new(report);
    let groups = groups(report, grid.c_is_dim);
    let mechanisms = plotted_mechanisms(report, &grid);
    let mut used: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for name in &metric_names(report) {
        for g in &groups {
            let stem = unique_stem(name, g, grid.c_is_dim, &mut used);
            let mut fig = FigureRows::new(report, name, g, grid.c_is_dim);
            let panels = fig
                .ks()
                .into_iter()
                .map(|k| fig.panel(k, &mechanisms))
                .collect();
            out.push(fig.finish(stem, title(name, g, &grid), panels));
        }
    }
    out
}

/// The rows one figure draws from (one metric and group), and its legends as its panels add to
/// them.
struct FigureRows<'r> {
    name: &'r str,
    group: &'r Group,
    c_is_dim: bool,
    /// The group's private rows (finite ε).
    rows: Vec<&'r ResultRow>,
    /// Every reference row (ε = ∞).
    refs: Vec<&'r ResultRow>,
    legend: Vec<(usize, String)>,
    ref_legend: Vec<(usize, String)>,
    max_repeats: usize,
}

impl<'r> FigureRows<'r> {
    fn new(report: &'r Report, name: &'r str, group: &'r Group, c_is_dim: bool) -> Self {
        let mut fig = FigureRows {
            name,
            group,
            c_is_dim,
            rows: Vec::new(),
            refs: report
                .rows
                .iter()
                .filter(|r| finite_eps(r).is_none())
                .collect(),
            legend: Vec::new(),
            ref_legend: Vec::new(),
            max_repeats: 0,
        };
        fig.rows = report
            .rows
            .iter()
            .filter(|r| finite_eps(r).is_some() && fig.in_group(r))
            .collect();
        fig
    }

    /// The row has the group's query mode (and C).
    fn in_group(&self, r: &ResultRow) -> bool {
        r.query_mode == self.group.mode && (!self.c_is_dim || same_f64(r.c, self.group.c))
    }

    /// A reference row that serves the group: its C (or none) …
    fn ref_c(&self, r: &ResultRow) -> bool {
        !self.c_is_dim || same_f64(r.c, self.group.c) || r.c.is_none()
    }

    /// … and its query mode (or none).
    fn ref_serves(&self, r: &ResultRow) -> bool {
        (r.query_mode == self.group.mode || r.query_mode.is_none()) && self.ref_c(r)
    }

    /// The panels' sizes k: those of the private rows, else of the group's references.
    fn ks(&self) -> Vec<usize> {
        let mut ks: Vec<usize> = self.rows.iter().map(|r| r.k).collect();
        if self.rows.is_empty() {
            ks.extend(self.refs.iter().filter(|r| self.in_group(r)).map(|r| r.k));
        }
        ks.sort_unstable();
        ks.dedup();
        ks
    }

    /// A row's value as an ε = ∞ point, if it has one.
    fn inf_point(&self, r: &ResultRow) -> Option<Point> {
        match (&r.status, r.metric(self.name)) {
            (Status::Ok, Some(m)) if m.mean.is_finite() => Some(Point {
                eps: f64::INFINITY,
                mean: m.mean,
                sd: if m.sd.is_finite() { m.sd } else { 0.0 },
                n: m.values.len(),
            }),
            _ => None,
        }
    }

    /// The panel of size k: a series per mechanism with a value, the horizontal reference lines,
    /// notes on what is not shown.
    fn panel(&mut self, k: usize, mechanisms: &[&String]) -> Panel {
        let mut notes: Vec<String> = Vec::new();
        let mut referenced: Vec<String> = Vec::new();
        let mut series: Vec<Series> = Vec::new();
        for (mi, mech) in mechanisms.iter().enumerate() {
            series.extend(self.series(k, mi, mech, &mut notes, &mut referenced));
        }
        let refs = self.ref_lines(k, &referenced, &mut notes);
        Panel {
            k,
            series,
            refs,
            notes,
        }
    }

    /// The series of mechanism `mech` (style `mi`) at size k, ending in its own reference at
    /// ε = ∞; its missing settings become `notes`, the reference it names joins `referenced`.
    fn series(
        &mut self,
        k: usize,
        mi: usize,
        mech: &str,
        notes: &mut Vec<String>,
        referenced: &mut Vec<String>,
    ) -> Option<Series> {
        let mine: Vec<&ResultRow> = self
            .rows
            .iter()
            .copied()
            .filter(|r| r.k == k && r.mechanism == mech)
            .collect();
        if mine.is_empty() {
            return None;
        }
        let mut points = Vec::new();
        let mut missing: Vec<(&str, f64)> = Vec::new();
        for r in &mine {
            let e = finite_eps(r).unwrap_or(f64::NAN);
            match (&r.status, r.metric(self.name)) {
                (Status::Ok, Some(m)) if m.mean.is_finite() && e > 0.0 => {
                    self.max_repeats = self.max_repeats.max(m.values.len());
                    points.push(Point {
                        eps: e,
                        mean: m.mean,
                        sd: if m.sd.is_finite() { m.sd } else { 0.0 },
                        n: m.values.len(),
                    });
                }
                _ => missing.push((why(r), e)),
            }
        }
        points.sort_by(|a, b| a.eps.total_cmp(&b.eps));
        missing_notes(mech, &missing, mine.len(), notes);
        // its own reference, at ε = ∞
        let own = mine.iter().find_map(|r| r.reference.clone());
        if points.is_empty() {
            // nothing to draw; its reference is not a line of its own either
            referenced.extend(own);
            return None;
        }
        let mut inf = None;
        if let Some(label) = own {
            match self.ref_row(&label, k) {
                Some(r) => {
                    inf = self.inf_point(r);
                    if inf.is_none() {
                        notes.push(format!("{mech}: {} at ε = ∞", why(r)));
                    }
                }
                None => notes.push(format!("{mech}: no value at ε = ∞")),
            }
            referenced.push(label);
        }
        if !self.legend.iter().any(|l| l.0 == mi) {
            let g = mine
                .iter()
                .find_map(|r| r.guarantee)
                .map(|g| format!(" ({})", g.short()))
                .unwrap_or_default();
            self.legend.push((mi, format!("{mech}{g}")));
        }
        Some(Series {
            style: mi,
            points,
            inf,
        })
    }

    /// The reference row of `label` for this figure's mode and C at size k.
    fn ref_row(&self, label: &str, k: usize) -> Option<&'r ResultRow> {
        self.refs
            .iter()
            .copied()
            .find(|r| r.mechanism == label && r.k == k && self.ref_serves(r))
    }

    /// Horizontal lines of the panel of size k: the ceiling, and references of this k that no
    /// mechanism of the panel names (same mode, or none, and C; else any mode).
    fn ref_lines(
        &mut self,
        k: usize,
        referenced: &[String],
        notes: &mut Vec<String>,
    ) -> Vec<RefLine> {
        let line_ok = |r: &ResultRow| {
            r.mechanism == UNPROJECTED || (r.k == k && !referenced.contains(&r.mechanism))
        };
        let mut chosen: Vec<&ResultRow> = Vec::new();
        for &r in self.refs.iter().filter(|r| self.ref_serves(r)) {
            if line_ok(r) && !chosen.iter().any(|c| c.mechanism == r.mechanism) {
                chosen.push(r);
            }
        }
        if chosen.is_empty() {
            chosen.extend(
                self.refs
                    .iter()
                    .copied()
                    .filter(|r| line_ok(r) && self.ref_c(r))
                    .take(1),
            );
        }
        let mut lines = Vec::new();
        for r in chosen {
            let Some(pt) = self.inf_point(r) else {
                notes.push(format!("{}: {}", r.mechanism, why(r)));
                continue;
            };
            lines.push(RefLine {
                dash: self.ref_dash(r),
                mean: pt.mean,
                sd: pt.sd,
                n: pt.n,
            });
        }
        lines
    }

    /// The dash pattern of a reference line, named in the legend the first time: the ceiling's
    /// is 0, the others' the next free one.
    fn ref_dash(&mut self, r: &ResultRow) -> usize {
        let label = if r.mechanism == UNPROJECTED {
            format!("{UNPROJECTED} (ceiling), ε = ∞")
        } else {
            format!("{}, ε = ∞", r.mechanism)
        };
        if let Some(l) = self.ref_legend.iter().find(|l| l.1 == label) {
            return l.0;
        }
        let d = if r.mechanism == UNPROJECTED {
            0
        } else {
            1 + self.ref_legend.iter().filter(|l| l.0 != 0).count()
        };
        self.ref_legend.push((d, label));
        d
    }

    /// The figure, its legends in style order.
    fn finish(mut self, stem: String, title: String, panels: Vec<Panel>) -> Figure {
        self.ref_legend.sort_by_key(|l| l.0);
        self.legend.sort_by_key(|l| l.0);
        let has_inf = panels
            .iter()
            .any(|p| p.series.iter().any(|s| s.inf.is_some()));
        Figure {
            stem,
            title,
            ylabel: self.name.to_string(),
            panels,
            legend: self.legend,
            ref_legend: self.ref_legend,
            has_inf,
            max_repeats: self.max_repeats,
        }
    }
}

/// Notes on mechanism `mech`'s settings without a point (kind, ε), by kind: `mech: n/a` when
/// all of its `settings` in the panel are, else `mech: n/a at ε = 1, 10`.
fn missing_notes(mech: &str, missing: &[(&str, f64)], settings: usize, notes: &mut Vec<String>) {
    for tag in ["n/a", "failed", "no value"] {
        let mut at: Vec<f64> = missing.iter().filter(|m| m.0 == tag).map(|m| m.1).collect();
        if at.is_empty() {
            continue;
        }
        at.sort_by(f64::total_cmp);
        if at.len() == settings {
            notes.push(format!("{mech}: {tag}"));
        } else {
            let list: Vec<String> = at.iter().map(|e| fmt_num(*e)).collect();
            notes.push(format!("{mech}: {tag} at ε = {}", list.join(", ")));
        }
    }
}
