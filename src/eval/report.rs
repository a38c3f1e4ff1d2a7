//! Reports: Markdown, CSV, JSON and plots of a [`super::Report`].
//!
//! - [`markdown`]: one table per metric for the terminal or a README — a row per (mechanism, k,
//!   query mode[, C]), a column per ε (ascending, `∞` = the non-private reference last), cells
//!   `mean ± sd`; settings a mechanism cannot take show `n/a` with the reason as a footnote.
//! - [`write_csv`]: long format, one line per (setting, metric), every value and seed.
//! - [`write_json`]: the whole [`Report`], pretty-printed.
//! - [`plots`] / [`plots_with_warnings`]: metric vs ε (log axis), one line per mechanism, one
//!   panel per k, the non-private reference as a dashed line; written as SVG (drawn with
//!   `plotters`) and PNG (the same SVG rasterised with `resvg`).
//!
//! Every file is written atomically ([`AtomicFile`]): a failure leaves no partial file.
//!
//! **Fonts.** The SVG needs no font (its text names the generic `sans-serif` family, which the
//! viewer resolves). The PNG does: it is rendered with a TrueType/OpenType font found at run time —
//! the file named by the environment variable `DPRP_FONT` if set, else DejaVu Sans or Liberation
//! Sans at their usual paths, else any font in the system font directories. Without one, the SVGs
//! are still written; [`plots`] then returns an error and [`plots_with_warnings`] a warning.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use resvg::usvg::fontdb;
use resvg::{tiny_skia, usvg};

use super::{Metric, Report, ResultRow, Status};
use crate::atomic::AtomicFile;
use crate::error::{Error, Result};

/// Environment variable naming a TrueType/OpenType font file for the PNG plots.
pub const FONT_ENV: &str = "DPRP_FONT";

// ---------------------------------------------------------------------------------------------
// The grid: which ε, which modes, whether C is a dimension
// ---------------------------------------------------------------------------------------------

/// ε of a row as a finite number; `None` for the non-private reference (ε = ∞, given as `None`
/// or as an infinite value).
fn finite_eps(row: &ResultRow) -> Option<f64> {
    row.epsilon.filter(|e| e.is_finite())
}

/// Whether two optional numbers are the same (bitwise, so NaN equals NaN and rows group stably).
fn same_f64(a: Option<f64>, b: Option<f64>) -> bool {
    a.map(f64::to_bits) == b.map(f64::to_bits)
}

/// Format a number the short way: `1`, `0.5`, `100`.
fn fmt_num(x: f64) -> String {
    format!("{x}")
}

/// Facts about the grid shared by the table and the plots.
struct Grid {
    /// Finite ε values, ascending, distinct.
    eps: Vec<f64>,
    /// Some row is the reference (ε = ∞).
    has_inf: bool,
    /// Mechanism labels, in order of first appearance.
    mechanisms: Vec<String>,
    /// Query modes, in order of first appearance (`None` when a row has none).
    modes: Vec<Option<String>>,
    /// Some row has a query mode.
    any_mode: bool,
    /// C is a grid dimension: some (mechanism, ε, k, mode) ran with more than one C.
    c_is_dim: bool,
    /// The distinct C values (in order of first appearance), `None` included if a row has none.
    cs: Vec<Option<f64>>,
    /// Largest number of repeats of any metric.
    max_repeats: usize,
    /// Smallest number of repeats of any metric of an `Ok` row (0 if none).
    min_repeats: usize,
}

impl Grid {
    fn new(report: &Report) -> Grid {
        let mut eps: Vec<f64> = report.rows.iter().filter_map(finite_eps).collect();
        eps.sort_by(f64::total_cmp);
        eps.dedup_by(|a, b| a.to_bits() == b.to_bits());
        let has_inf = report.rows.iter().any(|r| finite_eps(r).is_none());
        let mut mechanisms: Vec<String> = Vec::new();
        let mut modes: Vec<Option<String>> = Vec::new();
        let mut cs: Vec<Option<f64>> = Vec::new();
        for r in &report.rows {
            if !mechanisms.contains(&r.mechanism) {
                mechanisms.push(r.mechanism.clone());
            }
            if !modes.contains(&r.query_mode) {
                modes.push(r.query_mode.clone());
            }
            if !cs.iter().any(|c| same_f64(*c, r.c)) {
                cs.push(r.c);
            }
        }
        let any_mode = report.rows.iter().any(|r| r.query_mode.is_some());
        // C is a dimension when two rows differ only in C.
        let c_is_dim = report.rows.iter().enumerate().any(|(i, a)| {
            report.rows[..i].iter().any(|b| {
                a.mechanism == b.mechanism
                    && same_f64(a.epsilon, b.epsilon)
                    && a.k == b.k
                    && a.query_mode == b.query_mode
                    && !same_f64(a.c, b.c)
            })
        });
        let repeats = report
            .rows
            .iter()
            .filter(|r| r.status == Status::Ok)
            .flat_map(|r| r.metrics.iter().map(|m| m.values.len()));
        let max_repeats = repeats.clone().max().unwrap_or(0);
        let min_repeats = repeats.min().unwrap_or(0);
        Grid {
            eps,
            has_inf,
            mechanisms,
            modes,
            any_mode,
            c_is_dim,
            cs,
            max_repeats,
            min_repeats,
        }
    }

    fn mechanism_index(&self, m: &str) -> usize {
        self.mechanisms
            .iter()
            .position(|x| x == m)
            .unwrap_or(usize::MAX)
    }

    fn mode_index(&self, m: &Option<String>) -> usize {
        self.modes.iter().position(|x| x == m).unwrap_or(usize::MAX)
    }

    /// The one C of every row when C is not a dimension and all rows share it.
    fn constant_c(&self) -> Option<f64> {
        match self.cs.as_slice() {
            [Some(c)] => Some(*c),
            _ => None,
        }
    }

    /// C is recorded but differs between settings without being a grid dimension (picked per
    /// setting, e.g. by validation).
    fn c_varies(&self) -> bool {
        !self.c_is_dim && self.cs.iter().filter(|c| c.is_some()).count() > 1
    }

    /// "Mean ± sd over 3 repeats." and the like.
    fn repeats_sentence(&self) -> String {
        match (self.min_repeats, self.max_repeats) {
            (_, 0) => "No setting produced values.".to_string(),
            (_, 1) => "One run per setting (no spread).".to_string(),
            (a, b) if a == b => format!("Mean ± sd over {b} repeats."),
            (a, b) => format!(
                "Mean ± sd over the repeats ({a} to {b}; a single value where a setting ran once)."
            ),
        }
    }
}

/// All metric names: the report's, then any a row carries that the report does not list.
fn metric_names(report: &Report) -> Vec<String> {
    let mut names = report.metrics.clone();
    for r in &report.rows {
        for m in &r.metrics {
            if !names.contains(&m.name) {
                names.push(m.name.clone());
            }
        }
    }
    names
}

/// What a metric measures, for headings and plot titles.
fn describe_metric(name: &str) -> String {
    if let Some(k) = name.strip_prefix("precision@") {
        format!(
            "share of the {k} retrieved neighbours that are among the true top-{k} \
             (cosine on the original vectors)"
        )
    } else if let Some(k) = name.strip_prefix("recall@") {
        format!(
            "share of the true top-10 neighbours (cosine on the original vectors) found among \
             the {k} retrieved"
        )
    } else if name == "accuracy" {
        "share of test rows that the linear SVM trained on released sketches classifies \
         correctly"
            .to_string()
    } else {
        name.to_string()
    }
}

// ---------------------------------------------------------------------------------------------
// Markdown
// ---------------------------------------------------------------------------------------------

/// A table row: one (mechanism, k, query mode[, C]).
#[derive(Clone)]
struct RowKey {
    mechanism: String,
    k: usize,
    mode: Option<String>,
    c: Option<f64>,
    /// Every row of this mechanism is the reference (ε = ∞): listed last in its block.
    reference: bool,
}

impl RowKey {
    fn matches(&self, r: &ResultRow, c_is_dim: bool) -> bool {
        self.mechanism == r.mechanism
            && self.k == r.k
            && self.mode == r.query_mode
            && (!c_is_dim || same_f64(self.c, r.c))
    }
}

/// Escape text for a Markdown table cell.
fn md_cell(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
}

/// `mean ± sd` with 3 decimals, just `mean` for a single repeat.
fn fmt_metric(m: &Metric) -> String {
    if m.values.len() > 1 {
        format!("{:.3} ± {:.3}", m.mean, m.sd)
    } else {
        format!("{:.3}", m.mean)
    }
}

/// The Markdown tables of a report: one per metric, with a heading naming the metric and what it
/// measures, a row per (mechanism, k, query mode[, C]) and a column per ε (ascending; `ε = ∞`, the
/// non-private reference, last). Cells are `mean ± sd` (3 decimals; just the mean for a single
/// repeat); `n/a (i)` and `failed (i)` point to numbered footnotes below the table giving the
/// reason; `—` marks a combination that is not in the grid. No setting of the report is left out.
pub fn markdown(report: &Report) -> String {
    let grid = Grid::new(report);
    let names = metric_names(report);
    let mut out = String::new();

    // Row keys, ordered: query mode (first appearance), k, reference last, mechanism, C.
    let mut keys: Vec<RowKey> = Vec::new();
    for r in &report.rows {
        if !keys.iter().any(|k| k.matches(r, grid.c_is_dim)) {
            let reference = report
                .rows
                .iter()
                .filter(|x| x.mechanism == r.mechanism)
                .all(|x| finite_eps(x).is_none());
            keys.push(RowKey {
                mechanism: r.mechanism.clone(),
                k: r.k,
                mode: r.query_mode.clone(),
                c: if grid.c_is_dim { r.c } else { None },
                reference,
            });
        }
    }
    keys.sort_by(|a, b| {
        grid.mode_index(&a.mode)
            .cmp(&grid.mode_index(&b.mode))
            .then(a.k.cmp(&b.k))
            .then(a.reference.cmp(&b.reference))
            .then(
                grid.mechanism_index(&a.mechanism)
                    .cmp(&grid.mechanism_index(&b.mechanism)),
            )
            .then(
                a.c.unwrap_or(f64::NEG_INFINITY)
                    .total_cmp(&b.c.unwrap_or(f64::NEG_INFINITY)),
            )
    });

    if names.is_empty() {
        out.push_str("No metrics were recorded.\n");
    }
    for (ti, name) in names.iter().enumerate() {
        if ti > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "### {} — {}\n", md_cell(name), describe_metric(name));
        let mut caption = grid.repeats_sentence();
        if grid.has_inf {
            caption.push_str(" Columns: ε; ∞ = the non-private projection (reference).");
        } else {
            caption.push_str(" Columns: ε.");
        }
        if grid.any_mode {
            caption.push_str(
                " Query mode: private = queries privatised like the database, raw = queries \
                 projected only.",
            );
        }
        if !grid.c_is_dim {
            if let Some(c) = grid.constant_c() {
                let _ = write!(caption, " C = {}.", fmt_num(c));
            } else if grid.c_varies() {
                caption.push_str(" The C used is given in each cell.");
            }
        }
        let _ = writeln!(out, "{caption}\n");

        // Header.
        let mut header: Vec<String> = vec!["mechanism".into(), "k".into()];
        let mut right: Vec<bool> = vec![false, true];
        if grid.any_mode {
            header.push("query".into());
            right.push(false);
        }
        if grid.c_is_dim {
            header.push("C".into());
            right.push(true);
        }
        for e in &grid.eps {
            header.push(format!("ε = {}", fmt_num(*e)));
            right.push(true);
        }
        if grid.has_inf {
            header.push("ε = ∞".into());
            right.push(true);
        }

        // Footnotes: one per distinct (status, reason), numbered in order of appearance.
        let mut notes: Vec<(&'static str, String)> = Vec::new();
        let mut body: Vec<Vec<String>> = Vec::new();
        for key in &keys {
            let mut line = vec![md_cell(&key.mechanism), key.k.to_string()];
            if grid.any_mode {
                line.push(md_cell(key.mode.as_deref().unwrap_or("—")));
            }
            if grid.c_is_dim {
                line.push(key.c.map(fmt_num).unwrap_or_else(|| "—".into()));
            }
            let columns: Vec<Option<f64>> = grid
                .eps
                .iter()
                .map(|e| Some(*e))
                .chain(grid.has_inf.then_some(None))
                .collect();
            for col in columns {
                let mut parts: Vec<String> = Vec::new();
                for r in report
                    .rows
                    .iter()
                    .filter(|r| key.matches(r, grid.c_is_dim) && same_f64(finite_eps(r), col))
                {
                    let text = match &r.status {
                        Status::Ok => {
                            let mut t =
                                r.metric(name).map(fmt_metric).unwrap_or_else(|| "—".into());
                            if grid.c_varies() {
                                if let Some(c) = r.c {
                                    let _ = write!(t, " (C = {})", fmt_num(c));
                                }
                            }
                            t
                        }
                        Status::NotApplicable(reason) | Status::Failed(reason) => {
                            let tag = if matches!(r.status, Status::Failed(_)) {
                                "failed"
                            } else {
                                "n/a"
                            };
                            let reason = reason.replace(['\n', '\r'], " ");
                            let i = match notes.iter().position(|n| n.0 == tag && n.1 == reason) {
                                Some(i) => i,
                                None => {
                                    notes.push((tag, reason));
                                    notes.len() - 1
                                }
                            };
                            format!("{tag} ({})", i + 1)
                        }
                    };
                    parts.push(text);
                }
                line.push(if parts.is_empty() {
                    "—".into()
                } else {
                    md_cell(&parts.join(" / "))
                });
            }
            body.push(line);
        }

        // Widths and layout.
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count().max(3)).collect();
        for line in &body {
            for (w, c) in widths.iter_mut().zip(line) {
                *w = (*w).max(c.chars().count());
            }
        }
        let pad = |s: &str, w: usize, right: bool| -> String {
            let n = w.saturating_sub(s.chars().count());
            if right {
                format!("{}{s}", " ".repeat(n))
            } else {
                format!("{s}{}", " ".repeat(n))
            }
        };
        let render = |cells: &[String]| -> String {
            let inner: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| pad(c, widths[i], right[i]))
                .collect();
            format!("| {} |\n", inner.join(" | "))
        };
        out.push_str(&render(&header));
        let rule: Vec<String> = widths
            .iter()
            .zip(&right)
            .map(|(w, r)| {
                let dashes = "-".repeat(*w - 1);
                if *r {
                    format!("{dashes}:")
                } else {
                    format!(":{dashes}")
                }
            })
            .collect();
        let _ = writeln!(out, "| {} |", rule.join(" | "));
        for line in &body {
            out.push_str(&render(line));
        }
        if !notes.is_empty() {
            out.push('\n');
            for (i, (tag, reason)) in notes.iter().enumerate() {
                let what = if *tag == "n/a" {
                    "not applicable"
                } else {
                    "failed"
                };
                let _ = writeln!(out, "- ({}) {what}: {reason}", i + 1);
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// CSV and JSON
// ---------------------------------------------------------------------------------------------

/// Write `bytes` to `path` atomically.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes)?;
    f.commit()
}

/// Quote a CSV field when needed (RFC 4180: commas, quotes, line breaks; also surrounding spaces).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The CSV header of [`write_csv`].
pub const CSV_HEADER: &str =
    "mechanism,epsilon,k,query_mode,c,status,reason,metric,mean,sd,repeats,values,seeds,seconds";

/// The CSV text of [`write_csv`].
fn csv_text(report: &Report) -> String {
    let names = metric_names(report);
    let mut out = String::new();
    out.push_str(CSV_HEADER);
    out.push('\n');
    for r in &report.rows {
        let (status, reason) = match &r.status {
            Status::Ok => ("ok", ""),
            Status::NotApplicable(s) => ("not-applicable", s.as_str()),
            Status::Failed(s) => ("failed", s.as_str()),
        };
        let lead = [
            csv_field(&r.mechanism),
            r.epsilon.map(fmt_num).unwrap_or_else(|| "inf".into()),
            r.k.to_string(),
            csv_field(r.query_mode.as_deref().unwrap_or("")),
            r.c.map(fmt_num).unwrap_or_default(),
            status.to_string(),
            csv_field(reason),
        ]
        .join(",");
        let seeds = csv_field(&r.seeds.join(";"));
        let seconds = fmt_num(r.seconds);
        let metrics: Vec<&str> = if names.is_empty() {
            vec![""]
        } else {
            names.iter().map(String::as_str).collect()
        };
        for name in metrics {
            let (mean, sd, repeats, values) = match r.metric(name) {
                Some(m) => (
                    fmt_num(m.mean),
                    fmt_num(m.sd),
                    m.values.len().to_string(),
                    m.values
                        .iter()
                        .map(|v| fmt_num(*v))
                        .collect::<Vec<_>>()
                        .join(";"),
                ),
                None => (String::new(), String::new(), "0".to_string(), String::new()),
            };
            let _ = writeln!(
                out,
                "{lead},{},{mean},{sd},{repeats},{values},{seeds},{seconds}",
                csv_field(name)
            );
        }
    }
    out
}

/// Write the report as CSV in long format, one line per (setting, metric) — also for settings that
/// did not run, whose mean/sd/values are empty. Columns: [`CSV_HEADER`]; `epsilon` is `inf` for the
/// non-private reference; `status` is `ok`, `not-applicable` or `failed`; `values` and `seeds` are
/// `;`-separated; numbers are written in full precision. Fields are quoted per RFC 4180.
///
/// The file appears atomically; its directory must exist.
pub fn write_csv(report: &Report, path: &Path) -> Result<()> {
    write_atomic(path, csv_text(report).as_bytes())
}

/// Write the whole report as pretty-printed JSON (it reads back with `serde_json` into the same
/// [`Report`]). The file appears atomically; its directory must exist.
pub fn write_json(report: &Report, path: &Path) -> Result<()> {
    let mut text = serde_json::to_string_pretty(report)
        .map_err(|e| Error::io(path, std::io::Error::other(e)))?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

// ---------------------------------------------------------------------------------------------
// Plots
// ---------------------------------------------------------------------------------------------

/// What [`plots_with_warnings`] wrote.
#[derive(Debug, Clone, Default)]
pub struct PlotOutcome {
    /// Files written (SVG, and PNG next to each where it could be rendered).
    pub files: Vec<PathBuf>,
    /// Why some PNG files were not written (e.g. no font found); empty when all were.
    pub warnings: Vec<String>,
}

/// One point of a line: ε, mean, sd, repeats.
#[derive(Clone, Copy)]
struct Point {
    eps: f64,
    mean: f64,
    sd: f64,
    n: usize,
}

/// One mechanism in one panel.
struct Series {
    /// Index into the report's mechanisms (colour and marker).
    style: usize,
    points: Vec<Point>,
}

/// A horizontal reference line.
struct RefLine {
    label: String,
    mean: f64,
    sd: f64,
    n: usize,
}

/// One panel: one k.
struct Panel {
    k: usize,
    series: Vec<Series>,
    refs: Vec<RefLine>,
    notes: Vec<String>,
}

/// One figure: one metric and one query mode or C.
struct Figure {
    stem: String,
    title: String,
    ylabel: String,
    panels: Vec<Panel>,
    /// Mechanisms drawn (style index, label).
    legend: Vec<(usize, String)>,
    has_ref: bool,
    max_repeats: usize,
}

/// A file-name part made of `[a-z0-9.-]`: `precision@10` → `precision-at-10`.
fn slug(s: &str) -> String {
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
fn figures(report: &Report) -> Vec<Figure> {
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
            let mut panels = Vec::new();
            let mut max_repeats = 0;
            for &k in &ks {
                let mut series: Vec<Series> = Vec::new();
                let mut notes: Vec<String> = Vec::new();
                for (mi, mech) in grid.mechanisms.iter().enumerate() {
                    let mine: Vec<&&ResultRow> = rows
                        .iter()
                        .filter(|r| r.k == k && &r.mechanism == mech)
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
                    if !points.is_empty() {
                        if !legend.iter().any(|l| l.0 == mi) {
                            legend.push((mi, mech.clone()));
                        }
                        series.push(Series { style: mi, points });
                    }
                }
                // Reference lines for this k: same mode (or none) and C; else any mode.
                let exact: Vec<&&ResultRow> = refs_all
                    .iter()
                    .filter(|r| {
                        r.k == k
                            && (r.query_mode == g.0 || r.query_mode.is_none())
                            && (!grid.c_is_dim || same_f64(r.c, g.1) || r.c.is_none())
                    })
                    .collect();
                let chosen: Vec<&&ResultRow> = if exact.is_empty() {
                    refs_all
                        .iter()
                        .filter(|r| {
                            r.k == k && (!grid.c_is_dim || same_f64(r.c, g.1) || r.c.is_none())
                        })
                        .take(1)
                        .collect()
                } else {
                    exact
                };
                let mut refs = Vec::new();
                for r in chosen {
                    match (&r.status, r.metric(name)) {
                        (Status::Ok, Some(m)) if m.mean.is_finite() => refs.push(RefLine {
                            label: if r.mechanism == "non-private" {
                                "ε = ∞".to_string()
                            } else {
                                format!("{}, ε = ∞", r.mechanism)
                            },
                            mean: m.mean,
                            sd: if m.sd.is_finite() { m.sd } else { 0.0 },
                            n: m.values.len(),
                        }),
                        (Status::NotApplicable(_), _) => {
                            notes.push(format!("{}: n/a", r.mechanism))
                        }
                        (Status::Failed(_), _) => notes.push(format!("{}: failed", r.mechanism)),
                        _ => notes.push(format!("{}: no value", r.mechanism)),
                    }
                }
                panels.push(Panel {
                    k,
                    series,
                    refs,
                    notes,
                });
            }
            let has_ref = panels.iter().any(|p| !p.refs.is_empty());
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
                has_ref,
                max_repeats,
            });
        }
    }
    out
}

/// Colour-blind-safe palette (Okabe–Ito, without black, which the reference uses).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(140, 86, 75),
    RGBColor(153, 153, 51),
];
const REF_COLOR: RGBColor = RGBColor(60, 60, 60);
const NOTE_COLOR: RGBColor = RGBColor(110, 110, 110);

fn colour(style: usize) -> RGBColor {
    PALETTE[style % PALETTE.len()]
}

const PANEL_W: u32 = 400;
const PANEL_H: u32 = 340;
const TITLE_H: u32 = 40;
const FONT: &str = "sans-serif";

type Chart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<WithKeyPoints<LogCoord<f64>>, RangedCoordf64>>;

/// Marker shape of a style index: 0 circle, 1 square, 2 triangle, 3 diamond, 4 cross (shapes
/// cycle more slowly than colours, so the first 40 mechanisms all differ).
fn shape(style: usize) -> usize {
    (style / PALETTE.len() + style) % 5
}

/// Draw markers (shape and colour by style index) at data points.
fn draw_markers(chart: &mut Chart<'_, '_>, style: usize, pts: &[(f64, f64)]) -> PResult {
    let c = colour(style);
    let pts = pts.iter().copied();
    let drawn = match shape(style) {
        0 => chart
            .draw_series(pts.map(|p| Circle::new(p, 4, c.filled())))
            .map(|_| ()),
        1 => chart
            .draw_series(
                pts.map(|p| EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], c.filled())),
            )
            .map(|_| ()),
        2 => chart
            .draw_series(pts.map(|p| TriangleMarker::new(p, 5, c.filled())))
            .map(|_| ()),
        3 => chart
            .draw_series(pts.map(|p| {
                EmptyElement::at(p)
                    + Polygon::new(vec![(0, -5), (5, 0), (0, 5), (-5, 0)], c.filled())
            }))
            .map(|_| ()),
        _ => chart
            .draw_series(pts.map(|p| Cross::new(p, 4, c.stroke_width(2))))
            .map(|_| ()),
    };
    drawn.map_err(perr)
}

/// The same marker in pixel coordinates (legend).
fn draw_legend_marker(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    style: usize,
    p: (i32, i32),
) -> PResult {
    let c = colour(style);
    let drawn = match shape(style) {
        0 => area.draw(&Circle::new(p, 4, c.filled())),
        1 => area.draw(&Rectangle::new(
            [(p.0 - 4, p.1 - 4), (p.0 + 4, p.1 + 4)],
            c.filled(),
        )),
        2 => area.draw(&TriangleMarker::new(p, 5, c.filled())),
        3 => area.draw(&Polygon::new(
            vec![
                (p.0, p.1 - 5),
                (p.0 + 5, p.1),
                (p.0, p.1 + 5),
                (p.0 - 5, p.1),
            ],
            c.filled(),
        )),
        _ => area.draw(&Cross::new(p, 4, c.stroke_width(2))),
    };
    drawn.map_err(perr)
}

/// Plotting errors carry the backend's error; they become text.
type PResult<T = ()> = std::result::Result<T, String>;

/// Convert a plotters error into text.
fn perr<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> String {
    e.to_string()
}

/// Draw a figure as SVG text.
fn figure_svg(fig: &Figure, eps_grid: &[f64]) -> PResult<String> {
    let n = fig.panels.len().max(1);
    let ncols = match n {
        1..=3 => n,
        4 => 2,
        _ => 3,
    };
    let nrows = n.div_ceil(ncols);
    // Settings without a value, listed under the legend: "k = 1024, dp-oporp: n/a".
    let notes: Vec<String> = fig
        .panels
        .iter()
        .flat_map(|p| p.notes.iter().map(move |n| format!("k = {}, {n}", p.k)))
        .collect();
    let longest = fig
        .legend
        .iter()
        .map(|l| l.1.chars().count())
        .chain(notes.iter().map(|n| n.chars().count() * 7 / 8))
        .chain(std::iter::once(if fig.has_ref { 20 } else { 0 }))
        .chain(std::iter::once(if fig.max_repeats > 1 { 22 } else { 0 }))
        .max()
        .unwrap_or(0);
    let legend_w = (60 + 8 * longest as u32).clamp(150, 440);
    let width = ncols as u32 * PANEL_W + legend_w;
    let height = TITLE_H + nrows as u32 * PANEL_H;

    // x range: the grid's ε with some room, on a log scale.
    let (lo, hi) = match (eps_grid.first(), eps_grid.last()) {
        (Some(&a), Some(&b)) if a > 0.0 && b > a => (a / 1.5, b * 1.5),
        (Some(&a), _) if a > 0.0 => (a / 3.0, a * 3.0),
        _ => (1.0, 100.0),
    };
    let ticks: Vec<f64> = eps_grid.iter().copied().filter(|e| *e > 0.0).collect();
    let mut ymax: f64 = 1.0;
    for p in &fig.panels {
        for s in &p.series {
            for q in &s.points {
                ymax = ymax.max(q.mean);
            }
        }
        for r in &p.refs {
            ymax = ymax.max(r.mean);
        }
    }
    if ymax > 1.0 {
        ymax = (ymax * 10.0).ceil() / 10.0;
    }

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(perr)?;
        let (title_area, body) = root.split_vertically(TITLE_H);
        title_area
            .draw(&Text::new(
                fig.title.clone(),
                ((width / 2) as i32, 12),
                (FONT, 20)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Center, VPos::Top)),
            ))
            .map_err(perr)?;
        let (panels_area, legend_area) = body.split_horizontally(ncols as u32 * PANEL_W);
        let cells = panels_area.split_evenly((nrows, ncols));
        for (panel, area) in fig.panels.iter().zip(cells.iter()) {
            let mut chart = ChartBuilder::on(area)
                .caption(format!("k = {}", panel.k), (FONT, 17))
                .margin(8)
                .margin_right(18)
                .x_label_area_size(42)
                .y_label_area_size(52)
                .build_cartesian_2d(
                    (lo..hi).log_scale().with_key_points(ticks.clone()),
                    0.0..ymax,
                )
                .map_err(perr)?;
            let xfmt = |x: &f64| fmt_num(*x);
            let yfmt = |y: &f64| format!("{y:.1}");
            chart
                .configure_mesh()
                .x_desc("ε (log scale)")
                .y_desc(fig.ylabel.as_str())
                .x_label_formatter(&xfmt)
                .y_label_formatter(&yfmt)
                .y_labels(6)
                .label_style((FONT, 14))
                .axis_desc_style((FONT, 15))
                .bold_line_style(BLACK.mix(0.10))
                .light_line_style(TRANSPARENT)
                .draw()
                .map_err(perr)?;

            // Reference lines (ε = ∞): a band of ±sd when repeated, a dashed line and a label.
            for r in &panel.refs {
                if r.n > 1 && r.sd > 0.0 {
                    chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [
                                (lo, (r.mean - r.sd).max(0.0)),
                                (hi, (r.mean + r.sd).min(ymax)),
                            ],
                            REF_COLOR.mix(0.12).filled(),
                        )))
                        .map_err(perr)?;
                }
                chart
                    .draw_series(DashedLineSeries::new(
                        vec![(lo, r.mean), (hi, r.mean)],
                        8,
                        5,
                        REF_COLOR.stroke_width(2),
                    ))
                    .map_err(perr)?;
                // Label at the left end, where private utility is lowest.
                let below = r.mean > 0.85 * ymax;
                let (dy, vpos) = if below {
                    (5, VPos::Top)
                } else {
                    (-5, VPos::Bottom)
                };
                chart
                    .draw_series(std::iter::once(
                        EmptyElement::at((lo, r.mean))
                            + Text::new(
                                r.label.clone(),
                                (6, dy),
                                (FONT, 14)
                                    .into_font()
                                    .color(&REF_COLOR)
                                    .pos(Pos::new(HPos::Left, vpos)),
                            ),
                    ))
                    .map_err(perr)?;
            }

            for s in &panel.series {
                let c = colour(s.style);
                let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (p.eps, p.mean)).collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                    .map_err(perr)?;
                chart
                    .draw_series(s.points.iter().filter(|p| p.n > 1 && p.sd > 0.0).map(|p| {
                        ErrorBar::new_vertical(
                            p.eps,
                            (p.mean - p.sd).max(0.0),
                            p.mean,
                            (p.mean + p.sd).min(ymax),
                            c.stroke_width(1),
                            8,
                        )
                    }))
                    .map_err(perr)?;
                draw_markers(&mut chart, s.style, &pts)?;
            }
        }

        // Legend, to the right of the panels.
        let x0 = 12;
        let mut y = 60;
        let text_style = (FONT, 15)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        for (style, label) in &fig.legend {
            let c = colour(*style);
            legend_area
                .draw(&PathElement::new(
                    vec![(x0, y), (x0 + 32, y)],
                    c.stroke_width(2),
                ))
                .map_err(perr)?;
            draw_legend_marker(&legend_area, *style, (x0 + 16, y))?;
            legend_area
                .draw(&Text::new(label.clone(), (x0 + 42, y), text_style.clone()))
                .map_err(perr)?;
            y += 24;
        }
        if fig.has_ref {
            legend_area
                .draw(&PathElement::new(
                    vec![(x0, y), (x0 + 10, y)],
                    REF_COLOR.stroke_width(2),
                ))
                .map_err(perr)?;
            legend_area
                .draw(&PathElement::new(
                    vec![(x0 + 16, y), (x0 + 26, y)],
                    REF_COLOR.stroke_width(2),
                ))
                .map_err(perr)?;
            legend_area
                .draw(&Text::new(
                    "non-private, ε = ∞",
                    (x0 + 42, y),
                    text_style.clone(),
                ))
                .map_err(perr)?;
            y += 24;
        }
        if fig.max_repeats > 1 {
            y += 8;
            legend_area
                .draw(&Text::new(
                    format!("bars: ± 1 sd, {} repeats", fig.max_repeats),
                    (x0, y),
                    (FONT, 13)
                        .into_font()
                        .color(&NOTE_COLOR)
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                ))
                .map_err(perr)?;
            y += 24;
        }
        if !notes.is_empty() {
            y += 8;
            let note_style = (FONT, 13)
                .into_font()
                .color(&NOTE_COLOR)
                .pos(Pos::new(HPos::Left, VPos::Center));
            legend_area
                .draw(&Text::new("not shown:", (x0, y), note_style.clone()))
                .map_err(perr)?;
            for n in &notes {
                y += 18;
                legend_area
                    .draw(&Text::new(n.clone(), (x0 + 8, y), note_style.clone()))
                    .map_err(perr)?;
            }
        }
        root.present().map_err(perr)?;
    }
    Ok(svg)
}

/// A font database for the PNG renderer, with the generic families pointed at the font found.
struct Fonts {
    db: Arc<fontdb::Database>,
    family: String,
}

/// Usual places of a sans-serif TrueType font (Debian/Ubuntu, Fedora, Arch, macOS, Windows).
const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation/LiberationSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "/Library/Fonts/Arial.ttf",
    "C:\\Windows\\Fonts\\arial.ttf",
];

/// Find a font: `env` (the `DPRP_FONT` value) if given, else the first of `candidates` that
/// loads, else (if `system`) every font in the system font directories.
fn find_fonts(env: Option<PathBuf>, candidates: &[&str], system: bool) -> PResult<Fonts> {
    let mut db = fontdb::Database::new();
    if let Some(path) = env {
        db.load_font_file(&path).map_err(|e| {
            format!(
                "cannot load the font named by {FONT_ENV} ({}): {e}",
                path.display()
            )
        })?;
        if db.is_empty() {
            return Err(format!(
                "{FONT_ENV} names {}, which holds no usable TrueType/OpenType font",
                path.display()
            ));
        }
    } else {
        for c in candidates {
            if db.load_font_file(c).is_ok() && !db.is_empty() {
                break;
            }
        }
        if db.is_empty() && system {
            db.load_system_fonts();
        }
        if db.is_empty() {
            return Err(format!(
                "no TrueType/OpenType font found for the PNG plots (install e.g. the \
                 fonts-dejavu-core package, or set {FONT_ENV} to a .ttf file)"
            ));
        }
    }
    let family = db
        .faces()
        .find_map(|f| f.families.first().map(|(name, _)| name.clone()))
        .ok_or_else(|| "the font found has no family name".to_string())?;
    db.set_sans_serif_family(family.clone());
    db.set_serif_family(family.clone());
    Ok(Fonts {
        db: Arc::new(db),
        family,
    })
}

/// The process-wide font database (searched once).
fn system_fonts() -> &'static PResult<Fonts> {
    static FONTS: OnceLock<PResult<Fonts>> = OnceLock::new();
    FONTS.get_or_init(|| {
        let env = std::env::var_os(FONT_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        find_fonts(env, FONT_CANDIDATES, true)
    })
}

/// Rasterise SVG text to PNG bytes.
fn rasterise(svg: &str, fonts: &Fonts) -> PResult<Vec<u8>> {
    let opt = usvg::Options {
        fontdb: Arc::clone(&fonts.db),
        font_family: fonts.family.clone(),
        ..Default::default()
    };
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| format!("cannot read the SVG: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| "the figure has no area".to_string())?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::identity(),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| format!("cannot encode the PNG: {e}"))
}

/// Draw every figure into `dir`; PNGs only when `fonts` is usable.
fn plots_into(report: &Report, dir: &Path, fonts: &PResult<Fonts>) -> Result<PlotOutcome> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let grid = Grid::new(report);
    let mut outcome = PlotOutcome::default();
    let mut png_failures: Vec<String> = Vec::new();
    for fig in figures(report) {
        let svg_path = dir.join(format!("{}.svg", fig.stem));
        let svg = figure_svg(&fig, &grid.eps)
            .map_err(|e| Error::io(&svg_path, std::io::Error::other(e)))?;
        write_atomic(&svg_path, svg.as_bytes())?;
        outcome.files.push(svg_path);
        let png_path = dir.join(format!("{}.png", fig.stem));
        match fonts
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|f| rasterise(&svg, f))
        {
            Ok(png) => {
                write_atomic(&png_path, &png)?;
                outcome.files.push(png_path);
            }
            Err(e) => png_failures.push(format!("{}: {e}", png_path.display())),
        }
    }
    if !png_failures.is_empty() {
        let n = png_failures.len();
        let first = png_failures.swap_remove(0);
        outcome.warnings.push(if n == 1 {
            format!("PNG plot not written: {first}; the SVG was written")
        } else {
            format!("{n} PNG plots not written, e.g. {first}; the SVGs were written")
        });
    }
    Ok(outcome)
}

/// Draw the report's plots into `dir` (created if missing) and return the files written.
///
/// One figure per metric and query mode (retrieval) or C (SVM, when C is a grid dimension; one
/// figure otherwise): the metric against ε on a log axis with the grid's ε as ticks, one line per
/// mechanism (markers; error bars of ±1 sd when repeated; legend on the right), one panel per k,
/// the non-private reference for that k as a dashed horizontal line labelled `ε = ∞`; y from 0 to
/// 1 (further if a mean exceeds 1). Settings without a value (`n/a`, `failed`) are listed under
/// the legend ("not shown: k = 1024, dp-oporp: n/a"). Each figure is written as `<metric>-<mode>.svg` and `.png` (names made
/// of `[a-z0-9.-]`, e.g. `precision-at-10-private.svg`; SVM: `accuracy.svg`, or
/// `accuracy-c-0.1.svg` per C).
///
/// The PNG needs a font found at run time (see the module documentation). Without one every SVG
/// is still written and this returns an error saying so; [`plots_with_warnings`] returns a warning
/// instead.
pub fn plots(report: &Report, dir: &Path) -> Result<Vec<PathBuf>> {
    let outcome = plots_with_warnings(report, dir)?;
    match outcome.warnings.first() {
        Some(w) => Err(Error::io(
            dir,
            std::io::Error::new(std::io::ErrorKind::NotFound, w.clone()),
        )),
        None => Ok(outcome.files),
    }
}

/// As [`plots`], but PNG files that cannot be rendered (no font found) are reported as warnings
/// next to the files written rather than as an error.
pub fn plots_with_warnings(report: &Report, dir: &Path) -> Result<PlotOutcome> {
    plots_into(report, dir, system_fonts())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::EvalKind;

    fn ok_row(mech: &str, eps: Option<f64>, k: usize, mode: &str, vals: &[f64]) -> ResultRow {
        ResultRow {
            mechanism: mech.into(),
            epsilon: eps,
            k,
            query_mode: Some(mode.into()),
            c: None,
            status: Status::Ok,
            metrics: vec![
                Metric::from_values("precision@10", vals.to_vec()),
                Metric::from_values(
                    "recall@100",
                    vals.iter().map(|v| (v + 0.1_f64).min(1.0)).collect(),
                ),
            ],
            seeds: (0..vals.len())
                .map(|i| format!("{i:x}:{:x}", i + 100))
                .collect(),
            seconds: 0.5,
        }
    }

    fn na_row(mech: &str, eps: f64, k: usize, mode: &str, reason: &str) -> ResultRow {
        ResultRow {
            mechanism: mech.into(),
            epsilon: Some(eps),
            k,
            query_mode: Some(mode.into()),
            c: None,
            status: Status::NotApplicable(reason.into()),
            metrics: vec![],
            seeds: vec![],
            seconds: 0.0,
        }
    }

    /// Two mechanisms, ε ∈ {1, 10} (listed out of order), k ∈ {64, 128}, one mode, a reference,
    /// OPORP not applicable at k = 128.
    fn sample() -> Report {
        let reason = "OPORP needs k ≤ p, here p = 64, k = 128";
        Report {
            kind: EvalKind::Retrieval,
            metrics: vec!["precision@10".into(), "recall@100".into()],
            rows: vec![
                ok_row("dp-oporp", Some(10.0), 64, "private", &[0.5, 0.6, 0.7]),
                ok_row("dp-oporp", Some(1.0), 64, "private", &[0.1, 0.1, 0.1]),
                na_row("dp-oporp", 10.0, 128, "private", reason),
                na_row("dp-oporp", 1.0, 128, "private", reason),
                ok_row(
                    "dp-rp-g-opt:gaussian",
                    Some(10.0),
                    64,
                    "private",
                    &[0.4, 0.45, 0.5],
                ),
                ok_row(
                    "dp-rp-g-opt:gaussian",
                    Some(1.0),
                    64,
                    "private",
                    &[0.05, 0.06, 0.07],
                ),
                ok_row(
                    "dp-rp-g-opt:gaussian",
                    Some(10.0),
                    128,
                    "private",
                    &[0.3, 0.35, 0.4],
                ),
                ok_row(
                    "dp-rp-g-opt:gaussian",
                    Some(1.0),
                    128,
                    "private",
                    &[0.02, 0.03, 0.04],
                ),
                ok_row("non-private", None, 64, "private", &[0.9, 0.92, 0.94]),
                ok_row("non-private", None, 128, "private", &[0.95, 0.95, 0.95]),
            ],
            meta: serde_json::json!({"dprp": "test"}),
        }
    }

    #[test]
    fn markdown_table() {
        let md = markdown(&sample());
        assert!(
            md.contains("### precision@10 — share of the 10 retrieved"),
            "{md}"
        );
        assert!(md.contains("### recall@100 — "), "{md}");
        // ε columns ascending, ∞ last.
        let header = md.lines().find(|l| l.starts_with("| mechanism")).unwrap();
        let (a, b, c) = (
            header.find("ε = 1 ").unwrap(),
            header.find("ε = 10").unwrap(),
            header.find("ε = ∞").unwrap(),
        );
        assert!(a < b && b < c, "{header}");
        // mean ± sd with 3 decimals; a single repeat shows just the mean (sd 0 → ± 0.000 here).
        assert!(md.contains("0.600 ± 0.100"), "{md}");
        assert!(md.contains("0.920 ± 0.020"), "{md}");
        // n/a with its footnote; the combination is not dropped.
        let oporp128 = md
            .lines()
            .find(|l| l.starts_with("| dp-oporp ") && l.contains(" 128 "))
            .unwrap();
        assert!(oporp128.contains("n/a (1)"), "{oporp128}");
        assert!(md.contains("- (1) not applicable: OPORP needs k ≤ p, here p = 64, k = 128"));
        // Order within k = 64: dp-oporp, dp-rp-g-opt, then the reference; k = 64 before k = 128.
        let table: Vec<&str> = md
            .lines()
            .skip_while(|l| !l.starts_with("| mechanism"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .collect();
        let labels: Vec<(String, String)> = table
            .iter()
            .map(|l| {
                let f: Vec<&str> = l.split('|').map(str::trim).collect();
                (f[1].to_string(), f[2].to_string())
            })
            .collect();
        let expect = [
            ("dp-oporp", "64"),
            ("dp-rp-g-opt:gaussian", "64"),
            ("non-private", "64"),
            ("dp-oporp", "128"),
            ("dp-rp-g-opt:gaussian", "128"),
            ("non-private", "128"),
        ];
        assert_eq!(labels.len(), expect.len(), "{md}");
        for (got, want) in labels.iter().zip(expect) {
            assert_eq!((got.0.as_str(), got.1.as_str()), want);
        }
        // Reference value only in the ∞ column.
        let np = table[2];
        let f: Vec<&str> = np.split('|').map(str::trim).collect();
        assert_eq!(&f[4..7], &["—", "—", "0.920 ± 0.020"], "{np}");
        // One repeat: mean only.
        let mut r = sample();
        r.rows = vec![ok_row("x", Some(2.0), 8, "raw", &[0.25])];
        let md = markdown(&r);
        assert!(md.contains("| 0.250 |"), "{md}");
        assert!(!md.contains('±'), "{md}");
        assert!(!md.contains("ε = ∞"), "{md}");
    }

    #[test]
    fn markdown_failed_and_pipes() {
        let mut r = sample();
        r.rows.push(ResultRow {
            status: Status::Failed("every row | below the bound".into()),
            metrics: vec![],
            ..ok_row("dp-signrp-rr", Some(1.0), 64, "private", &[])
        });
        let md = markdown(&r);
        // Footnotes are numbered in table order: the failure at k = 64 comes first.
        assert!(md.contains("failed (1)"), "{md}");
        assert!(
            md.contains("- (1) failed: every row | below the bound"),
            "{md}"
        );
        assert!(
            md.contains("- (2) not applicable: OPORP needs k ≤ p"),
            "{md}"
        );
        // Every table line has the same number of unescaped pipes.
        let counts: HashSet<usize> = md
            .lines()
            .filter(|l| l.starts_with('|'))
            .take(8)
            .map(|l| l.replace("\\|", "").matches('|').count())
            .collect();
        assert_eq!(counts.len(), 1, "{md}");
    }

    /// Minimal RFC 4180 reader for the test.
    fn parse_csv(text: &str) -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        let mut row = Vec::new();
        let mut field = String::new();
        let mut quoted = false;
        let mut chars = text.chars().peekable();
        while let Some(ch) = chars.next() {
            match (quoted, ch) {
                (true, '"') if chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                (true, '"') => quoted = false,
                (true, c) => field.push(c),
                (false, '"') => quoted = true,
                (false, ',') => row.push(std::mem::take(&mut field)),
                (false, '\n') => {
                    row.push(std::mem::take(&mut field));
                    rows.push(std::mem::take(&mut row));
                }
                (false, c) => field.push(c),
            }
        }
        rows
    }

    #[test]
    fn csv_shape_and_quoting() {
        let mut r = sample();
        r.rows[2].status = Status::NotApplicable("needs k ≤ p, \"p\" = 64".into());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        write_csv(&r, &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let rows = parse_csv(&text);
        assert_eq!(rows[0].join(","), CSV_HEADER);
        assert_eq!(rows.len(), 1 + r.rows.len() * 2);
        assert!(rows.iter().all(|x| x.len() == 14), "{text}");
        let na = &rows[1 + 2 * 2];
        assert_eq!(na[0], "dp-oporp");
        assert_eq!(na[5], "not-applicable");
        assert_eq!(na[6], "needs k ≤ p, \"p\" = 64");
        assert_eq!(na[7], "precision@10");
        assert_eq!((na[8].as_str(), na[10].as_str()), ("", "0"));
        let first = &rows[1];
        assert_eq!(first[1], "10");
        assert_eq!(first[10], "3");
        assert_eq!(first[11], "0.5;0.6;0.7");
        assert_eq!(first[12], "0:64;1:65;2:66");
        let reference = &rows[1 + 8 * 2];
        assert_eq!(
            (reference[0].as_str(), reference[1].as_str()),
            ("non-private", "inf")
        );
    }

    #[test]
    fn json_round_trip() {
        let mut r = sample();
        r.rows[0].c = Some(0.5);
        r.rows[3].status = Status::Failed("boom, twice".into());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        write_json(&r, &path).unwrap();
        let back: Report = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("precision@10"), "precision-at-10");
        assert_eq!(slug("Recall@100 / raw"), "recall-at-100-raw");
        assert_eq!(slug("0.1"), "0.1");
        assert_eq!(slug("../x"), "x");
        assert_eq!(slug("@@"), "at-at");
    }

    #[test]
    fn plots_svg_and_png() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("plots");
        if let Err(e) = system_fonts() {
            // No font on this machine: the SVGs must still be written (checked below by hand).
            eprintln!("skipping the PNG part of plots_svg_and_png: {e}");
            let outcome = plots_with_warnings(&sample(), &out).unwrap();
            assert_eq!(outcome.files.len(), 2);
            return;
        }
        let files = plots(&sample(), &out).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "precision-at-10-private.svg",
                "precision-at-10-private.png",
                "recall-at-100-private.svg",
                "recall-at-100-private.png"
            ]
        );
        let svg = std::fs::read_to_string(&files[0]).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..50]);
        for s in [
            "dp-oporp",
            "dp-rp-g-opt:gaussian",
            "ε = ∞",
            "k = 64",
            "k = 128",
            "k = 128, dp-oporp: n/a",
        ] {
            assert!(svg.contains(s), "{s} missing");
        }
        let png = std::fs::read(&files[1]).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert!(png.len() > 1000);
    }

    #[test]
    fn svg_without_font() {
        let fonts = find_fonts(None, &["/nonexistent/font.ttf"], false);
        assert!(fonts.is_err());
        let dir = tempfile::tempdir().unwrap();
        let outcome = plots_into(&sample(), dir.path(), &fonts).unwrap();
        assert_eq!(outcome.files.len(), 2);
        assert!(outcome
            .files
            .iter()
            .all(|p| p.extension().unwrap() == "svg"));
        assert_eq!(outcome.warnings.len(), 1);
        assert!(
            outcome.warnings[0].contains("no TrueType/OpenType font"),
            "{:?}",
            outcome.warnings
        );
        assert!(!dir.path().join("precision-at-10-private.png").exists());
    }

    #[test]
    fn svm_grid_by_c() {
        let row = |c: f64, eps: Option<f64>, v: f64| ResultRow {
            mechanism: if eps.is_some() {
                "dp-oporp".into()
            } else {
                "non-private".into()
            },
            epsilon: eps,
            k: 32,
            query_mode: None,
            c: Some(c),
            status: Status::Ok,
            metrics: vec![Metric::from_values("accuracy", vec![v])],
            seeds: vec!["1:2".into()],
            seconds: 1.0,
        };
        let r = Report {
            kind: EvalKind::Svm,
            metrics: vec!["accuracy".into()],
            rows: vec![
                row(0.1, Some(1.0), 0.6),
                row(1.0, Some(1.0), 0.7),
                row(0.1, None, 0.8),
                row(1.0, None, 0.85),
            ],
            meta: serde_json::Value::Null,
        };
        let md = markdown(&r);
        assert!(md.contains(" C | ε = 1 |"), "{md}");
        assert!(!md.contains("query"), "{md}");
        let stems: Vec<String> = figures(&r).into_iter().map(|f| f.stem).collect();
        assert_eq!(stems, ["accuracy-c-0.1", "accuracy-c-1"]);
        // One C for all: a single figure named after the metric.
        let one = Report {
            rows: vec![row(1.0, Some(1.0), 0.7), row(1.0, None, 0.85)],
            ..r
        };
        let figs = figures(&one);
        assert_eq!(figs.len(), 1);
        assert_eq!(figs[0].stem, "accuracy");
        assert!(figs[0].title.contains("C = 1"));
        assert_eq!(figs[0].panels[0].refs.len(), 1);
    }
}
