//! The plots of a report: SVG drawn with `plotters`, PNG rasterised from it (see [`super::raster`]).

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::figures::{figures, Figure};
use super::marks::*;
use super::raster::{rasterise, system_fonts, Fonts, PResult};
use super::{fmt_num, write_atomic, Grid};
use crate::error::{Error, Result};
use crate::eval::Report;

/// What [`plots_with_warnings`] wrote.
#[derive(Debug, Clone, Default)]
pub struct PlotOutcome {
    /// Files written (SVG, and PNG next to each where it could be rendered).
    pub files: Vec<PathBuf>,
    /// Why some PNG files were not written (e.g. no font found); empty when all were.
    pub warnings: Vec<String>,
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
        .chain(fig.ref_legend.iter().map(|l| l.1.chars().count()))
        .chain(std::iter::once(if fig.has_inf { 24 } else { 0 }))
        .chain(std::iter::once(if fig.max_repeats > 1 { 22 } else { 0 }))
        .max()
        .unwrap_or(0);
    let legend_w = (60 + 8 * longest as u32).clamp(150, 440);
    let width = ncols as u32 * PANEL_W + legend_w;
    // tall enough for the legend too (as drawn below: entries of 24 px from y = 60, notes of 18)
    let legend_h = 60
        + 24 * (fig.legend.len() + fig.ref_legend.len() + fig.has_inf as usize)
        + if fig.max_repeats > 1 { 32 } else { 0 }
        + if notes.is_empty() {
            0
        } else {
            8 + 18 * (notes.len() + 1)
        }
        + 12;
    let height = TITLE_H + (nrows as u32 * PANEL_H).max(legend_h as u32);

    // x range: the grid's ε with some room, on a log scale; with ε = ∞ points, a column for them
    // at 3× the largest ε, labelled ∞, past a dotted break.
    let (lo, mut hi) = match (eps_grid.first(), eps_grid.last()) {
        (Some(&a), Some(&b)) if a > 0.0 && b > a => (a / 1.5, b * 1.5),
        (Some(&a), _) if a > 0.0 => (a / 3.0, a * 3.0),
        _ => (1.0, 100.0),
    };
    let mut ticks: Vec<f64> = eps_grid.iter().copied().filter(|e| *e > 0.0).collect();
    let x_inf = fig
        .has_inf
        .then(|| ticks.last().copied().unwrap_or(hi) * INF_AT);
    if let Some(x) = x_inf {
        hi = x * 2.5; // room for ∞ markers spread sideways (see `dodge`)
        ticks.push(x);
    }
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

    let mut svg = String::new();
    {
        let (root, cells, legend_area) =
            frame(&mut svg, (width, height), &fig.title, (nrows, ncols))?;
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
            let xfmt = |x: &f64| match x_inf {
                Some(i) if (x / i - 1.0).abs() < 1e-9 => "∞".to_string(),
                _ => fmt_num(*x),
            };
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

            // Horizontal reference lines: a band of ±sd when repeated and a dashed line, named
            // in the legend (no label in the panel, where labels of close lines would overlap).
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

            // The ∞ column: a dotted break, then each mechanism's own reference.
            let inf_x = match x_inf {
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
                    dodge(&panel.series, x, ymax, (lo, hi))
                }
                None => Vec::new(),
            };

            for (si, s) in panel.series.iter().enumerate() {
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
                if let (Some(inf), Some(&x), Some(last)) = (s.inf, inf_x.get(si), pts.last()) {
                    if x.is_finite() {
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
                                .draw_series(std::iter::once(ErrorBar::new_vertical(
                                    x,
                                    (inf.mean - inf.sd).max(0.0),
                                    inf.mean,
                                    (inf.mean + inf.sd).min(ymax),
                                    c.stroke_width(1),
                                    6,
                                )))
                                .map_err(perr)?;
                        }
                        draw_open_marker(&mut chart, s.style, (x, inf.mean))?;
                    }
                }
            }
        }

        // Legend, to the right of the panels.
        let x0 = LEGEND_X;
        let mut y = 60;
        for (style, label) in &fig.legend {
            legend_entry(&legend_area, *style, y, label)?;
            y += 24;
        }
        if fig.has_inf {
            legend_area
                .draw(&Circle::new((x0 + 16, y), 4, NOTE_COLOR.stroke_width(2)))
                .map_err(perr)?;
            legend_label(&legend_area, y, "ε = ∞: own map, no noise")?;
            y += 24;
        }
        for (dash, label) in &fig.ref_legend {
            let (d, g) = DASHES[dash % DASHES.len()];
            let mut x = x0;
            while x < x0 + 32 {
                let e = (x + d as i32).min(x0 + 32);
                legend_area
                    .draw(&PathElement::new(
                        vec![(x, y), (e, y)],
                        REF_COLOR.stroke_width(2),
                    ))
                    .map_err(perr)?;
                x = e + g as i32;
            }
            legend_label(&legend_area, y, label)?;
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
