//! The plots of a report: SVG drawn with `plotters`, PNG rasterised from it (see [`super::raster`]).

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::figures::{figures, Figure, Panel, RefLine, Series};
use super::frame::{
    legend_width, perr, Axes, Legend, Page, TypeSizes, ENTRY_H, LEGEND_TOP, NOTE_H,
};
use super::marks::*;
use super::raster::{rasterise, system_fonts, Fonts, PResult};
use super::{fmt_num, write_atomic, Grid, PlotOutcome};
use crate::error::{Error, Result};
use crate::eval::Report;

/// Columns of the panel grid: up to three side by side, four as 2 × 2.
fn columns(panels: usize) -> usize {
    match panels {
        1..=3 => panels,
        4 => 2,
        _ => 3,
    }
}

/// Settings without a value, listed under the legend: "k = 1024, dp-oporp: n/a".
fn not_shown(fig: &Figure) -> Vec<String> {
    fig.panels
        .iter()
        .flat_map(|p| p.notes.iter().map(move |n| format!("k = {}, {n}", p.k)))
        .collect()
}

/// The page: the legend column as wide as its longest line and the page tall enough for the
/// legend as [`draw_legend`] lays it out.
fn page(fig: &Figure, notes: &[String]) -> Page {
    let longest = fig
        .legend
        .iter()
        .map(|l| l.1.chars().count())
        .chain(notes.iter().map(|n| n.chars().count() * 7 / 8))
        .chain(fig.ref_legend.iter().map(|l| l.1.chars().count()))
        .chain(std::iter::once(if fig.has_inf { 24 } else { 0 }))
        .chain(std::iter::once(if fig.max_repeats > 1 { 22 } else { 0 }))
        .max()
        .unwrap_or(0);
    let entries = fig.legend.len() + fig.ref_legend.len() + fig.has_inf as usize;
    let legend_h = LEGEND_TOP as usize
        + ENTRY_H as usize * entries
        + if fig.max_repeats > 1 { 32 } else { 0 }
        + if notes.is_empty() {
            0
        } else {
            8 + NOTE_H as usize * (notes.len() + 1)
        }
        + 12;
    Page::new(
        fig.panels.len(),
        columns,
        legend_width(longest, 440),
        legend_h,
    )
}

/// The ε axis: the grid's ε with some room, on a log scale; with ε = ∞ points, a column for them
/// at [`INF_AT`] × the largest ε, labelled ∞, past a dotted break.
struct EpsAxis {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
    /// Where the ∞ column is, if the figure has one.
    inf: Option<f64>,
}

impl EpsAxis {
    fn new(eps_grid: &[f64], has_inf: bool) -> EpsAxis {
        let (lo, mut hi) = match (eps_grid.first(), eps_grid.last()) {
            (Some(&a), Some(&b)) if a > 0.0 && b > a => (a / 1.5, b * 1.5),
            (Some(&a), _) if a > 0.0 => (a / 3.0, a * 3.0),
            _ => (1.0, 100.0),
        };
        let mut ticks: Vec<f64> = eps_grid.iter().copied().filter(|e| *e > 0.0).collect();
        let inf = has_inf.then(|| ticks.last().copied().unwrap_or(hi) * INF_AT);
        if let Some(x) = inf {
            hi = x * 2.5; // room for ∞ markers spread sideways (see `dodge`)
            ticks.push(x);
        }
        EpsAxis { lo, hi, ticks, inf }
    }

    /// A tick's label: the ε, or ∞ at the ∞ column.
    fn label(&self, x: f64) -> String {
        match self.inf {
            Some(i) if (x / i - 1.0).abs() < 1e-9 => "∞".to_string(),
            _ => fmt_num(x),
        }
    }
}

/// The top of the y axis: 1, or the largest mean rounded up to a tenth when it exceeds 1.
fn y_max(fig: &Figure) -> f64 {
    let mut ymax: f64 = 1.0;
    for p in &fig.panels {
        for s in &p.series {
            for q in s.points.iter().chain(s.inf.iter()) {
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
    ymax
}

/// Draw a figure as SVG text.
fn figure_svg(fig: &Figure, eps_grid: &[f64]) -> PResult<String> {
    let notes = not_shown(fig);
    let eps = EpsAxis::new(eps_grid, fig.has_inf);
    let ymax = y_max(fig);
    let x_label = |x: &f64| eps.label(*x);
    let y_label = |y: &f64| format!("{y:.1}");
    let axes = Axes {
        x: (eps.lo, eps.hi),
        ticks: eps.ticks.clone(),
        y: 0.0..ymax,
        x_desc: "ε (log scale)",
        y_desc: &fig.ylabel,
        x_label: &x_label,
        y_label: &y_label,
        y_labels: 6,
        y_label_area: 52,
        sizes: TypeSizes {
            caption: 17,
            label: 14,
            desc: 15,
        },
    };
    page(fig, &notes).render(&fig.title, |cells, legend| {
        for (panel, area) in fig.panels.iter().zip(cells.iter()) {
            let mut chart = axes.panel(area, &format!("k = {}", panel.k))?;
            draw_panel(&mut chart, panel, &eps, ymax)?;
        }
        draw_legend(legend, fig, &notes)
    })
}

/// A panel's marks: the reference lines, the ∞ column and each mechanism's curve.
fn draw_panel(chart: &mut Chart<'_, '_>, panel: &Panel, eps: &EpsAxis, ymax: f64) -> PResult {
    draw_ref_lines(chart, &panel.refs, (eps.lo, eps.hi), ymax)?;
    // The ∞ column: a dotted break, then each mechanism's own reference.
    let inf_x = match eps.inf {
        Some(x) => {
            let brk = (x * x / INF_AT).sqrt();
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(brk, 0.0), (brk, ymax)],
                    2,
                    4,
                    NOTE_COLOR.mix(0.6).stroke_width(1),
                ))
                .map_err(perr)?;
            dodge(&panel.series, x, ymax, (eps.lo, eps.hi))
        }
        None => Vec::new(),
    };
    for (si, s) in panel.series.iter().enumerate() {
        draw_curve(chart, s, inf_x.get(si).copied(), ymax)?;
    }
    Ok(())
}

/// Horizontal reference lines across `(lo, hi)`: a band of ±sd when repeated and a dashed line,
/// named in the legend (no label in the panel, where labels of close lines would overlap).
fn draw_ref_lines(
    chart: &mut Chart<'_, '_>,
    refs: &[RefLine],
    (lo, hi): (f64, f64),
    ymax: f64,
) -> PResult {
    for r in refs {
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
        let (dash, gap) = DASHES[r.dash % DASHES.len()];
        chart
            .draw_series(DashedLineSeries::new(
                vec![(lo, r.mean), (hi, r.mean)],
                dash,
                gap,
                REF_COLOR.stroke_width(2),
            ))
            .map_err(perr)?;
    }
    Ok(())
}

/// A mechanism's curve: line, ±sd bars and markers; then, at `inf_x` in the ∞ column, its own
/// reference as an open marker joined to the last point by a dashed line.
fn draw_curve(chart: &mut Chart<'_, '_>, s: &Series, inf_x: Option<f64>, ymax: f64) -> PResult {
    let c = colour(s.style);
    let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (p.eps, p.mean)).collect();
    chart
        .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
        .map_err(perr)?;
    chart
        .draw_series(
            s.points
                .iter()
                .filter(|p| p.n > 1 && p.sd > 0.0)
                .map(|p| sd_bar(p.eps, (p.mean, p.sd), (0.0, ymax), c, 8)),
        )
        .map_err(perr)?;
    draw_markers(chart, s.style, &pts)?;
    let (Some(inf), Some(x), Some(last)) = (s.inf, inf_x, pts.last()) else {
        return Ok(());
    };
    if !x.is_finite() {
        return Ok(());
    }
    chart
        .draw_series(DashedLineSeries::new(
            vec![*last, (x, inf.mean)],
            4,
            3,
            c.mix(0.7).stroke_width(1),
        ))
        .map_err(perr)?;
    if inf.n > 1 && inf.sd > 0.0 {
        chart
            .draw_series(std::iter::once(sd_bar(
                x,
                (inf.mean, inf.sd),
                (0.0, ymax),
                c,
                6,
            )))
            .map_err(perr)?;
    }
    draw_open_marker(chart, s.style, (x, inf.mean))
}

/// The legend, right of the panels: the mechanisms, the ∞ marker, the reference lines, what the
/// bars mean, and the settings not shown.
fn draw_legend(legend: &mut Legend<'_, '_>, fig: &Figure, notes: &[String]) -> PResult {
    for (style, label) in &fig.legend {
        legend.curve(*style, label)?;
    }
    if fig.has_inf {
        legend.entry(
            |area, (x0, y)| {
                area.draw(&Circle::new((x0 + 16, y), 4, NOTE_COLOR.stroke_width(2)))
                    .map_err(perr)
            },
            "ε = ∞: own map, no noise",
        )?;
    }
    for (dash, label) in &fig.ref_legend {
        legend.dashed(REF_COLOR, DASHES[dash % DASHES.len()], label)?;
    }
    if fig.max_repeats > 1 {
        legend.skip(8);
        legend.note(&format!("bars: ± 1 sd, {} repeats", fig.max_repeats), 0)?;
        legend.skip(ENTRY_H - NOTE_H);
    }
    if !notes.is_empty() {
        legend.skip(8);
        legend.note("not shown:", 0)?;
        for n in notes {
            legend.note(n, 8)?;
        }
    }
    Ok(())
}

/// Draw every figure into `dir`; PNGs only when `fonts` is usable.
fn plots_into(report: &Report, dir: &Path, fonts: &PResult<Fonts>) -> Result<PlotOutcome> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let grid = Grid::new(report);
    let figs = figures(report);
    write_figures(
        dir,
        figs.iter().map(|f| (f.stem.as_str(), f)),
        |f| figure_svg(f, &grid.eps),
        fonts,
    )
}

/// Write each figure as `<stem>.svg` (drawn by `draw`) and, when `fonts` is usable, `<stem>.png`
/// into `dir` (which must exist), each atomically; PNGs that cannot be rendered become one
/// warning (the SVGs are written regardless). Shared by the retrieval/SVM plots and the line
/// figures of [`super::lines`].
pub(super) fn write_figures<'f, T: 'f>(
    dir: &Path,
    figs: impl Iterator<Item = (&'f str, &'f T)>,
    draw: impl Fn(&T) -> PResult<String>,
    fonts: &PResult<Fonts>,
) -> Result<PlotOutcome> {
    let mut outcome = PlotOutcome::default();
    let mut png_failures: Vec<String> = Vec::new();
    for (stem, fig) in figs {
        let svg_path = dir.join(format!("{stem}.svg"));
        let svg = draw(fig).map_err(|e| Error::io(&svg_path, std::io::Error::other(e)))?;
        write_atomic(&svg_path, svg.as_bytes())?;
        outcome.files.push(svg_path);
        let png_path = dir.join(format!("{stem}.png"));
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
/// mechanism (markers; error bars of ±1 sd when repeated; legend on the right naming each
/// mechanism's guarantee kind, e.g. `dp-oporp (DP)`, `idp-signrp-g (iDP)`), one panel per k.
/// Each curve ends, past a dotted break, in an open marker at `∞`: its own noiseless reference
/// (the same public map without noise, [`ResultRow::reference`]); markers of equal value are
/// spread sideways so each stays visible. The unprojected ceiling is a dashed horizontal line in
/// every panel, named in the legend (as is any reference no mechanism names, e.g. in older
/// reports) rather than labelled inline. y from 0 to 1 (further if a mean exceeds 1). Settings
/// without a value (`n/a`, `failed`) are listed under the legend ("not shown: k = 1024,
/// dp-oporp: n/a"). Each figure is written as `<metric>-<mode>.svg` and `.png` (names made of
/// `[a-z0-9.-]`, e.g. `precision-at-10-private.svg`; SVM: `accuracy.svg`, or
/// `accuracy-c-0.1.svg` per C).
///
/// The PNG needs a font found at run time (see the module documentation). Without one every SVG
/// is still written and this returns an error saying so; [`plots_with_warnings`] returns a warning
/// instead.
///
/// [`ResultRow::reference`]: crate::eval::ResultRow::reference
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
    use super::super::figures::{slug, Point, Series};
    use super::super::raster::find_fonts;
    use super::super::testdata::*;
    use super::*;
    use crate::eval::grid::UNPROJECTED;
    use crate::eval::{EvalKind, Metric, ResultRow, Status};

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

    /// Each mechanism's curve ends in its own reference at ε = ∞ (not another family's); the
    /// ceiling is a horizontal line named in the legend; legend entries name the guarantee kind.
    #[test]
    fn each_curve_gets_its_own_reference_and_guarantee() {
        let figs = figures(&sample_with_refs());
        let f = &figs[0];
        assert_eq!(f.stem, "precision-at-10-private");
        let labels: Vec<&str> = f.legend.iter().map(|l| l.1.as_str()).collect();
        assert_eq!(
            labels,
            [
                "dp-oporp (DP)",
                "dp-rp-g-opt:gaussian (DP)",
                "idp-signrp-g (iDP)"
            ]
        );
        let inf = |panel: usize, style: usize| {
            f.panels[panel]
                .series
                .iter()
                .find(|s| s.style == style)
                .and_then(|s| s.inf)
                .map(|p| p.mean)
        };
        assert_eq!(f.panels[0].k, 64);
        let near = |got: Option<f64>, want: f64| {
            assert!(
                matches!(got, Some(g) if (g - want).abs() < 1e-12),
                "{got:?} vs {want}"
            )
        };
        near(inf(0, 0), 0.8);
        near(inf(0, 1), 0.7);
        near(inf(0, 2), 0.33);
        near(inf(1, 1), 0.75);
        assert!(f.has_inf);
        // the ceiling is drawn in every panel, the per-family references only as ∞ points
        assert_eq!(f.ref_legend.len(), 1);
        assert!(
            f.ref_legend[0].1.starts_with(UNPROJECTED),
            "{:?}",
            f.ref_legend
        );
        for p in &f.panels {
            assert_eq!(p.refs.len(), 1);
            assert_eq!((p.refs[0].dash, p.refs[0].mean), (0, 1.0));
            assert!(
                !p.notes.iter().any(|n| n.contains("noiseless")),
                "{:?}",
                p.notes
            );
        }
        let svg = figure_svg(f, &[1.0, 10.0]).unwrap();
        for s in [
            "idp-signrp-g (iDP)",
            "dp-oporp (DP)",
            "∞",
            "unprojected (ceiling)",
        ] {
            assert!(svg.contains(s), "{s} missing");
        }
    }

    /// ∞ points closer than a marker are spread sideways, the others stay at the ∞ column.
    #[test]
    fn close_infinity_points_are_spread() {
        let at = |m: f64| Series {
            style: 0,
            points: vec![],
            inf: Some(Point {
                eps: f64::INFINITY,
                mean: m,
                sd: 0.0,
                n: 1,
            }),
        };
        let none = Series {
            inf: None,
            ..at(0.0)
        };
        let xs = dodge(
            &[at(0.5), none, at(0.505), at(0.9)],
            300.0,
            1.0,
            (0.5, 500.0),
        );
        assert!(xs[1].is_nan());
        assert!(xs[0] < 300.0 && xs[2] > 300.0, "{xs:?}");
        assert!(
            (xs[0] * xs[2] / 300.0 / 300.0 - 1.0).abs() < 1e-9,
            "symmetric: {xs:?}"
        );
        assert_eq!(xs[3], 300.0);
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
            guarantee: None,
            reference: None,
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
        let md = super::super::markdown(&r);
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
