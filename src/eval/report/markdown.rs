//! The Markdown tables of a report.

use std::fmt::Write as _;

use super::{describe_metric, finite_eps, fmt_num, metric_names, same_f64, Grid};
use crate::eval::grid::UNPROJECTED;
use crate::eval::{EvalKind, Metric, Report, ResultRow, Status};
use crate::privacy::guarantee::GuaranteeKind;

/// A table row: one (mechanism, k, query mode[, C]).
#[derive(Clone)]
struct RowKey {
    mechanism: String,
    k: usize,
    mode: Option<String>,
    c: Option<f64>,
    /// Every row of this mechanism is a reference (ε = ∞): listed last in its block.
    reference: bool,
    /// The label of the mechanism's own ε = ∞ reference (its rows fill the ∞ column).
    own_reference: Option<String>,
    /// The guarantee kind, as reports name it (`DP`, `iDP`, `none`; `—` when not recorded).
    guarantee: String,
}

impl RowKey {
    fn matches(&self, r: &ResultRow, c_is_dim: bool) -> bool {
        self.mechanism == r.mechanism && self.same_setting(r, c_is_dim)
    }
    /// Same k, query mode (and C when it is a dimension).
    fn same_setting(&self, r: &ResultRow, c_is_dim: bool) -> bool {
        self.k == r.k && self.mode == r.query_mode && (!c_is_dim || same_f64(self.c, r.c))
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

/// The paragraph explaining each guarantee kind of the report's mechanisms, once (empty when no
/// row records one).
pub(super) fn guarantee_paragraph(report: &Report) -> String {
    let mut kinds: Vec<GuaranteeKind> = Vec::new();
    for r in report.rows.iter().filter(|r| r.reference.is_some()) {
        if let Some(g) = r.guarantee {
            if !kinds.iter().any(|k| k.short() == g.short()) {
                kinds.push(g);
            }
        }
    }
    if kinds.is_empty() {
        return String::new();
    }
    kinds.sort_by_key(|k| k.short() != "DP");
    let mut out = String::from("**Guarantees.** Each row names the guarantee of its mechanism. ");
    for k in &kinds {
        out.push_str(k.explain());
        out.push(' ');
    }
    out.push_str(
        "The ε = ∞ column holds each mechanism's own public map without noise (same kind, k and \
         projection seeds; for a sign mechanism, the signs of that map without flips): the limit \
         of its row as ε grows, in either query mode. `unprojected` is the original vectors — the \
         ceiling, and the ε = ∞ limit of `raw-g-opt`",
    );
    out.push_str(if report.kind == EvalKind::Retrieval {
        " (1 up to ties, as the ground truth is computed on them)."
    } else {
        "."
    });
    if kinds.contains(&GuaranteeKind::LocalDp) {
        out.push_str(
            " An LDP row privatises each row as its own user (unit vectors first for the ball \
             mechanisms), decodes it to its unbiased estimate in the input space and ranks by \
             cosine; its reference is the `unprojected` ceiling. ProjUnit's own ε = ∞ limit lies \
             below that ceiling (each user's random map loses accuracy even without noise), so \
             at k < p its ∞ cell is left empty.",
        );
    }
    out
}

/// The Markdown tables of a report: a paragraph naming the guarantee kinds present (DP, iDP),
/// then one table per metric, with a heading naming the metric and what it measures, a row per
/// (mechanism, k, query mode[, C]) with its guarantee kind, and a column per ε (ascending; `ε =
/// ∞` last: for a mechanism, its own noiseless reference named in [`ResultRow::reference`]).
/// Reference rows are not repeated as rows of their own when a mechanism row shows them, except
/// the `unprojected` ceiling, which is always listed. Cells are `mean ± sd` (3 decimals; just the
/// mean for a single repeat); `n/a (i)` and `failed (i)` point to numbered footnotes below the
/// table giving the reason; `—` marks a combination that is not in the grid.
///
/// [`ResultRow::reference`]: crate::eval::ResultRow::reference
pub fn markdown(report: &Report) -> String {
    let grid = Grid::new(report);
    let names = metric_names(report);
    let mut out = String::new();
    let para = guarantee_paragraph(report);
    if !para.is_empty() {
        let _ = writeln!(out, "{para}\n");
    }
    let table = Table {
        report,
        grid: &grid,
        keys: row_keys(report, &grid),
        any_guarantee: report.rows.iter().any(|r| r.guarantee.is_some()),
    };
    if names.is_empty() {
        out.push_str("No metrics were recorded.\n");
    }
    for (ti, name) in names.iter().enumerate() {
        if ti > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "### {} — {}\n", md_cell(name), describe_metric(name));
        let _ = writeln!(out, "{}\n", caption(&grid));
        table.write(&mut out, name);
    }
    out
}

/// The table rows, ordered: query mode (first appearance), k, reference last, mechanism, C.
/// A reference shown in the ∞ column of a mechanism row of the same setting is not listed
/// again (the ceiling always is).
fn row_keys(report: &Report, grid: &Grid) -> Vec<RowKey> {
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
                own_reference: r.reference.clone(),
                guarantee: r
                    .guarantee
                    .map(|g| g.short().to_string())
                    .unwrap_or_else(|| "—".into()),
            });
        }
    }
    let shown: Vec<(String, usize, Option<String>, Option<f64>)> = keys
        .iter()
        .filter_map(|k| {
            k.own_reference
                .clone()
                .map(|r| (r, k.k, k.mode.clone(), k.c))
        })
        .collect();
    keys.retain(|k| {
        !k.reference
            || k.mechanism == UNPROJECTED
            || !shown.iter().any(|s| {
                s.0 == k.mechanism
                    && s.1 == k.k
                    && s.2 == k.mode
                    && (!grid.c_is_dim || same_f64(s.3, k.c))
            })
    });
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
    keys
}

/// The sentence under a table's heading: the repeats, the columns, the query modes, C.
fn caption(grid: &Grid) -> String {
    let mut caption = grid.repeats_sentence();
    if grid.has_inf {
        caption
            .push_str(" Columns: ε; ∞ = the mechanism's own public map without noise (reference).");
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
    caption
}

/// The footnotes of a table: one per distinct (`n/a` or `failed`, reason), numbered in order
/// of appearance.
#[derive(Default)]
struct Footnotes(Vec<(&'static str, String)>);

impl Footnotes {
    /// The number of the footnote (from 1), added if new.
    fn number(&mut self, tag: &'static str, reason: String) -> usize {
        match self.0.iter().position(|n| n.0 == tag && n.1 == reason) {
            Some(i) => i + 1,
            None => {
                self.0.push((tag, reason));
                self.0.len()
            }
        }
    }

    /// The list below the table (nothing when there is no footnote).
    fn write(&self, out: &mut String) {
        if self.0.is_empty() {
            return;
        }
        out.push('\n');
        for (i, (tag, reason)) in self.0.iter().enumerate() {
            let what = if *tag == "n/a" {
                "not applicable"
            } else {
                "failed"
            };
            let _ = writeln!(out, "- ({}) {what}: {reason}", i + 1);
        }
    }
}

/// What every metric's table shares: the rows and the columns.
struct Table<'r> {
    report: &'r Report,
    grid: &'r Grid,
    keys: Vec<RowKey>,
    /// Some row records its guarantee kind: a `guarantee` column.
    any_guarantee: bool,
}

impl Table<'_> {
    /// The table of metric `name`, its footnotes below.
    fn write(&self, out: &mut String, name: &str) {
        let (header, right) = self.header();
        let mut notes = Footnotes::default();
        let body: Vec<Vec<String>> = self
            .keys
            .iter()
            .map(|key| self.line(key, name, &mut notes))
            .collect();
        write_aligned(out, &header, &right, &body);
        notes.write(out);
    }

    /// The column names, and which columns are right-aligned (the numbers).
    fn header(&self) -> (Vec<String>, Vec<bool>) {
        let grid = self.grid;
        let mut header: Vec<String> = vec!["mechanism".into()];
        let mut right: Vec<bool> = vec![false];
        if self.any_guarantee {
            header.push("guarantee".into());
            right.push(false);
        }
        header.push("k".into());
        right.push(true);
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
        (header, right)
    }

    /// The cells of one table row.
    fn line(&self, key: &RowKey, name: &str, notes: &mut Footnotes) -> Vec<String> {
        let grid = self.grid;
        let mut line = vec![md_cell(&key.mechanism)];
        if self.any_guarantee {
            line.push(md_cell(&key.guarantee));
        }
        line.push(key.k.to_string());
        if grid.any_mode {
            line.push(md_cell(key.mode.as_deref().unwrap_or("—")));
        }
        if grid.c_is_dim {
            line.push(key.c.map(fmt_num).unwrap_or_else(|| "—".into()));
        }
        let columns = grid
            .eps
            .iter()
            .map(|e| Some(*e))
            .chain(grid.has_inf.then_some(None));
        for col in columns {
            line.push(self.cell(key, col, name, notes));
        }
        line
    }

    /// The cell of a row in the column of ε `col` (`None`: ∞): the value of each run of it,
    /// `/`-separated, or `—`.
    fn cell(&self, key: &RowKey, col: Option<f64>, name: &str, notes: &mut Footnotes) -> String {
        let c_is_dim = self.grid.c_is_dim;
        let rows = &self.report.rows;
        let own: Vec<&ResultRow> = rows
            .iter()
            .filter(|r| key.matches(r, c_is_dim) && same_f64(finite_eps(r), col))
            .collect();
        // The ∞ column of a mechanism: its own reference's rows.
        let cell_rows: Vec<&ResultRow> = match (&key.own_reference, col) {
            (Some(reference), None) if own.is_empty() => rows
                .iter()
                .filter(|r| {
                    &r.mechanism == reference
                        && finite_eps(r).is_none()
                        && key.same_setting(r, c_is_dim)
                })
                .collect(),
            _ => own,
        };
        let parts: Vec<String> = cell_rows
            .iter()
            .map(|r| self.value(r, name, notes))
            .collect();
        if parts.is_empty() {
            "—".into()
        } else {
            md_cell(&parts.join(" / "))
        }
    }

    /// A run's value: `mean ± sd` (with its C when C varies per setting), or `n/a (i)` /
    /// `failed (i)` pointing to its footnote.
    fn value(&self, r: &ResultRow, name: &str, notes: &mut Footnotes) -> String {
        match &r.status {
            Status::Ok => {
                let mut t = r.metric(name).map(fmt_metric).unwrap_or_else(|| "—".into());
                if self.grid.c_varies() {
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
                let i = notes.number(tag, reason.replace(['\n', '\r'], " "));
                format!("{tag} ({i})")
            }
        }
    }
}

/// A Markdown table with its columns padded to a common width: the header, the rule (`:` on
/// the aligned side), the body.
fn write_aligned(out: &mut String, header: &[String], right: &[bool], body: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count().max(3)).collect();
    for line in body {
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
    out.push_str(&render(header));
    let rule: Vec<String> = widths
        .iter()
        .zip(right)
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
    for line in body {
        out.push_str(&render(line));
    }
}

#[cfg(test)]
mod tests {
    use super::super::testdata::*;
    use super::*;
    use std::collections::HashSet;

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

    /// Cells of the table line starting with `| {mech} ` at size `k`.
    fn cells(md: &str, mech: &str, k: &str) -> Vec<String> {
        md.lines()
            .find(|l| {
                let f: Vec<&str> = l.split('|').map(str::trim).collect();
                f.len() > 3 && f[1] == mech && f[3] == k
            })
            .unwrap_or_else(|| panic!("no row {mech} {k} in\n{md}"))
            .split('|')
            .map(|c| c.trim().to_string())
            .collect()
    }

    /// Each mechanism row shows its own reference in the ε = ∞ column (OPORP's for dp-oporp,
    /// the Gaussian map's for dp-rp-g-opt:gaussian, the signs' for the iDP sign mechanism) and
    /// names its guarantee; references shown that way are not listed again, the ceiling is; the
    /// paragraph explains DP and iDP once.
    #[test]
    fn markdown_pairs_each_mechanism_with_its_own_reference() {
        let md = markdown(&sample_with_refs());
        let header = md.lines().find(|l| l.starts_with("| mechanism")).unwrap();
        assert!(
            header.starts_with("| mechanism ") && header.contains("| guarantee |"),
            "{header}"
        );
        // columns: "", mechanism, guarantee, k, query, ε = 1, ε = 10, ε = ∞
        let oporp = cells(&md, "dp-oporp", "64");
        assert_eq!(oporp[2], "DP");
        assert_eq!(oporp[7], "0.800 ± 0.010", "{md}");
        let gauss = cells(&md, "dp-rp-g-opt:gaussian", "64");
        assert_eq!(gauss[7], "0.700 ± 0.000", "{md}");
        let gauss128 = cells(&md, "dp-rp-g-opt:gaussian", "128");
        assert_eq!(gauss128[7], "0.750 ± 0.000", "{md}");
        let idp = cells(&md, "idp-signrp-g", "64");
        assert_eq!((idp[2].as_str(), idp[7].as_str()), ("iDP", "0.330 ± 0.000"));
        // the OPORP reference is not applicable at k = 128: its row says so at ∞ too
        assert!(
            cells(&md, "dp-oporp", "128")[7].starts_with("n/a ("),
            "{md}"
        );
        // references are not repeated as rows; the ceiling is listed (k = p, one run)
        assert!(!md.contains("| noiseless:"), "{md}");
        let ceiling = cells(&md, UNPROJECTED, "100");
        assert_eq!(
            (ceiling[2].as_str(), ceiling[7].as_str()),
            ("none", "1.000")
        );
        // one explanation of each guarantee kind, before the tables
        assert_eq!(md.matches("**iDP**").count(), 1, "{md}");
        assert_eq!(md.matches("**DP**").count(), 1, "{md}");
        assert!(md.find("**iDP**") < md.find("### "), "{md}");
        // without an iDP mechanism, no iDP paragraph
        let mut r = sample_with_refs();
        r.rows.retain(|x| x.mechanism != "idp-signrp-g");
        let md = markdown(&r);
        assert!(!md.contains("**iDP**") && md.contains("**DP**"), "{md}");
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
}
