//! Reports: Markdown, CSV, JSON and plots of a [`super::Report`].
//!
//! - [`markdown`]: a paragraph explaining the guarantee kinds present (DP, iDP), then one table
//!   per metric for the terminal or a README — a row per (mechanism, k, query mode[, C]) naming
//!   its guarantee kind, a column per ε (ascending; `∞` last: each mechanism's own noiseless
//!   reference), cells `mean ± sd`; settings a mechanism cannot take show `n/a` with the reason
//!   as a footnote.
//! - [`write_csv`]: long format, one line per (setting, metric), every value and seed.
//! - [`write_json`]: the whole [`Report`], pretty-printed.
//! - [`plots`] / [`plots_with_warnings`]: metric vs ε (log axis), one line per mechanism ending in
//!   its own ε = ∞ reference, one panel per k, the unprojected ceiling as a dashed line; written
//!   as SVG (drawn with `plotters`) and PNG (the same SVG rasterised with `resvg`).
//!
//! - [`write_line_figures`]: log–log line figures (error vs k or ε, runtime vs d) for `dprp eval
//!   mean` ([`crate::eval::mean_report`]), same palette, markers, fonts and SVG + PNG output.
//!
//! Every file is written atomically ([`AtomicFile`]): a failure leaves no partial file.
//!
//! **Fonts.** The SVG needs no font (its text names the generic `sans-serif` family, which the
//! viewer resolves). The PNG does: it is rendered with a TrueType/OpenType font found at run time —
//! the file named by the environment variable `DPRP_FONT` if set, else DejaVu Sans or Liberation
//! Sans at their usual paths, else any font in the system font directories. Without one, the SVGs
//! are still written; [`plots`] then returns an error and [`plots_with_warnings`] a warning.

#[cfg(feature = "plot")]
mod canvas;
mod figure;
mod markdown;
// Drawing (plotters, resvg): only with the `plot` feature; without it `no_plot` says so.
#[cfg(feature = "plot")]
mod figures;
#[cfg(feature = "plot")]
mod frame;
#[cfg(feature = "plot")]
mod lines;
#[cfg(feature = "plot")]
mod marks;
#[cfg(not(feature = "plot"))]
mod no_plot;
#[cfg(feature = "plot")]
mod plot;
#[cfg(feature = "plot")]
mod raster;

use std::fmt::Write as _;
use std::path::Path;

use super::{Report, ResultRow, Status};
use crate::atomic::AtomicFile;
use crate::error::{Error, Result};

pub use figure::{Line, LineFigure, LinePanel, PlotOutcome};
#[cfg(feature = "plot")]
pub use lines::write_line_figures;
pub use markdown::markdown;
#[cfg(not(feature = "plot"))]
pub use no_plot::{plots, plots_with_warnings, write_line_figures};
#[cfg(feature = "plot")]
pub use plot::{plots, plots_with_warnings};
/// Environment variable naming a TrueType/OpenType font file for the PNG plots.
/// (Read only with the `plot` feature.)
pub const FONT_ENV: &str = "DPRP_FONT";

use super::grid::UNPROJECTED;

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
        // the unprojected ceiling has no seed and runs once, whatever the repeats
        let repeats = report
            .rows
            .iter()
            .filter(|r| r.status == Status::Ok && r.mechanism != UNPROJECTED)
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
// CSV and JSON
// ---------------------------------------------------------------------------------------------

/// Write the report text `text` to `path` atomically, its options spelt as files spell them
/// ([`crate::error::in_files`]).
pub(crate) fn write_text_atomic(path: &Path, text: &str) -> Result<()> {
    write_atomic(path, crate::error::in_files(text).as_bytes())
}

/// Write `bytes` to `path` atomically.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = AtomicFile::create(path, crate::atomic::Existing::Refuse)?;
    f.write_all(bytes)?;
    f.commit()
}

/// Quote a CSV field when needed (RFC 4180: commas, quotes, line breaks; also surrounding spaces).
pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The CSV header of [`write_csv`].
pub const CSV_HEADER: &str = "mechanism,guarantee,epsilon,k,query_mode,c,reference,status,reason,\
metric,mean,sd,repeats,values,seeds,seconds";

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
            r.guarantee
                .map(|g| g.short().to_string())
                .unwrap_or_default(),
            r.epsilon.map(fmt_num).unwrap_or_else(|| "inf".into()),
            r.k.to_string(),
            csv_field(r.query_mode.as_deref().unwrap_or("")),
            r.c.map(fmt_num).unwrap_or_default(),
            csv_field(r.reference.as_deref().unwrap_or("")),
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
/// did not run, whose mean/sd/values are empty. Columns: [`CSV_HEADER`]; `guarantee` is `DP`,
/// `iDP` or `none` (a reference; empty when not recorded); `epsilon` is `inf` for a noiseless
/// reference; `reference` names a mechanism's own reference row (empty for a reference); `status` is `ok`, `not-applicable` or `failed`; `values` and `seeds` are
/// `;`-separated; numbers are written in full precision. Fields are quoted per RFC 4180.
///
/// The file appears atomically; its directory must exist.
pub fn write_csv(report: &Report, path: &Path) -> Result<()> {
    write_text_atomic(path, &csv_text(report))
}

/// Write the whole report as pretty-printed JSON (it reads back with `serde_json` into the same
/// [`Report`]). The file appears atomically; its directory must exist.
pub fn write_json(report: &Report, path: &Path) -> Result<()> {
    let mut text = serde_json::to_string_pretty(report)
        .map_err(|e| Error::io(path, std::io::Error::other(e)))?;
    text.push('\n');
    write_text_atomic(path, &text)
}

#[cfg(test)]
pub(super) mod testdata {
    use super::*;
    use crate::eval::grid::UNPROJECTED;
    use crate::eval::EvalKind;
    use crate::eval::Metric;

    pub fn ok_row(mech: &str, eps: Option<f64>, k: usize, mode: &str, vals: &[f64]) -> ResultRow {
        ResultRow {
            mechanism: mech.into(),
            epsilon: eps,
            k,
            query_mode: Some(mode.into()),
            c: None,
            guarantee: None,
            reference: None,
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

    pub fn na_row(mech: &str, eps: f64, k: usize, mode: &str, reason: &str) -> ResultRow {
        ResultRow {
            mechanism: mech.into(),
            epsilon: Some(eps),
            k,
            query_mode: Some(mode.into()),
            c: None,
            guarantee: None,
            reference: None,
            status: Status::NotApplicable(reason.into()),
            metrics: vec![],
            seeds: vec![],
            seconds: 0.0,
        }
    }

    /// Two mechanisms, ε ∈ {1, 10} (listed out of order), k ∈ {64, 128}, one mode, a reference,
    /// OPORP not applicable at k = 128.
    pub fn sample() -> Report {
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

    /// As recorded since references are per family: guarantee kinds, each mechanism naming its
    /// reference; an iDP mechanism; the OPORP reference not applicable at k = 128; the ceiling.
    pub fn sample_with_refs() -> Report {
        use crate::privacy::guarantee::GuaranteeKind;
        let mut r = sample();
        r.rows.retain(|x| x.mechanism != "non-private");
        for x in r.rows.iter_mut() {
            x.guarantee = Some(GuaranteeKind::ApproxDp);
            x.reference = Some(if x.mechanism == "dp-oporp" {
                "noiseless:oporp".into()
            } else {
                "noiseless:gaussian".into()
            });
        }
        let with = |mut x: ResultRow, g: GuaranteeKind, reference: Option<&str>| {
            x.guarantee = Some(g);
            x.reference = reference.map(str::to_string);
            x
        };
        let none = GuaranteeKind::None;
        r.rows.extend([
            with(
                ok_row("idp-signrp-g", Some(1.0), 64, "private", &[0.3, 0.3, 0.3]),
                GuaranteeKind::IndividualDp,
                Some("noiseless-signs:rademacher"),
            ),
            with(
                ok_row(
                    "idp-signrp-g",
                    Some(10.0),
                    64,
                    "private",
                    &[0.31, 0.31, 0.31],
                ),
                GuaranteeKind::IndividualDp,
                Some("noiseless-signs:rademacher"),
            ),
            with(
                ok_row("noiseless:oporp", None, 64, "private", &[0.81, 0.8, 0.79]),
                none,
                None,
            ),
            with(
                ResultRow {
                    epsilon: None,
                    ..na_row("noiseless:oporp", 1.0, 128, "private", "OPORP needs k ≤ p")
                },
                none,
                None,
            ),
            with(
                ok_row("noiseless:gaussian", None, 64, "private", &[0.7, 0.7, 0.7]),
                none,
                None,
            ),
            with(
                ok_row(
                    "noiseless:gaussian",
                    None,
                    128,
                    "private",
                    &[0.75, 0.75, 0.75],
                ),
                none,
                None,
            ),
            with(
                ok_row(
                    "noiseless-signs:rademacher",
                    None,
                    64,
                    "private",
                    &[0.33, 0.33, 0.33],
                ),
                none,
                None,
            ),
            with(
                ok_row(UNPROJECTED, None, 100, "private", &[1.0]),
                none,
                None,
            ),
        ]);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::testdata::*;
    use super::*;
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
        assert!(rows.iter().all(|x| x.len() == 16), "{text}");
        let na = &rows[1 + 2 * 2];
        assert_eq!(na[0], "dp-oporp");
        assert_eq!(na[7], "not-applicable");
        assert_eq!(na[8], "needs k ≤ p, \"p\" = 64");
        assert_eq!(na[9], "precision@10");
        assert_eq!((na[10].as_str(), na[12].as_str()), ("", "0"));
        let first = &rows[1];
        assert_eq!(first[2], "10");
        assert_eq!(first[12], "3");
        assert_eq!(first[13], "0.5;0.6;0.7");
        assert_eq!(first[14], "0:64;1:65;2:66");
        let reference = &rows[1 + 8 * 2];
        assert_eq!(
            (reference[0].as_str(), reference[2].as_str()),
            ("non-private", "inf")
        );
        // not recorded (an older report): empty guarantee and reference
        assert_eq!((first[1].as_str(), first[6].as_str()), ("", ""));
        // recorded: the guarantee kind by its short name, the mechanism's reference by label
        let r = sample_with_refs();
        std::fs::remove_file(&path).unwrap();
        write_csv(&r, &path).unwrap();
        let rows = parse_csv(&std::fs::read_to_string(&path).unwrap());
        let find = |m: &str| rows.iter().find(|x| x[0] == m).unwrap();
        assert_eq!(find("dp-oporp")[1], "DP");
        assert_eq!(find("dp-oporp")[6], "noiseless:oporp");
        assert_eq!(find("idp-signrp-g")[1], "iDP");
        assert_eq!(find("idp-signrp-g")[6], "noiseless-signs:rademacher");
        assert_eq!(find("noiseless:oporp")[1], "none");
        assert_eq!(find("noiseless:oporp")[6], "");
    }

    #[test]
    fn json_round_trip() {
        let back: Report =
            serde_json::from_str(&serde_json::to_string(&sample_with_refs()).unwrap()).unwrap();
        assert_eq!(back, sample_with_refs());
        let text = serde_json::to_string(&sample_with_refs().rows[0]).unwrap();
        assert!(text.contains("\"guarantee\":\"approx-dp\""), "{text}");
        assert!(text.contains("\"reference\":\"noiseless:oporp\""), "{text}");
        let mut r = sample();
        r.rows[0].c = Some(0.5);
        r.rows[3].status = Status::Failed("boom, twice".into());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        write_json(&r, &path).unwrap();
        let back: Report = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(back, r);
    }
}
