//! Log–log line figures for the mean-estimation evaluation (`dprp eval mean`): error against k,
//! against ε, runtime against d. The same palette, markers, fonts and atomic SVG + PNG output as
//! the retrieval plots ([`super::plot`]), with both axes on a log scale (errors and runtimes span
//! orders of magnitude).

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::marks::*;
use super::plot::PlotOutcome;
use super::raster::{system_fonts, PResult};
use crate::error::Result;

/// One curve of a panel.
#[derive(Debug, Clone)]
pub struct Line {
    /// Style index (colour and marker; the same index in every panel and the legend).
    pub style: usize,
    /// Points `(x, mean, sd)`; a single point with `flat` is drawn across the whole panel.
    pub points: Vec<(f64, f64, f64)>,
    /// A value that does not depend on x (e.g. an unprojected mechanism in an error-vs-k panel):
    /// drawn as a dashed horizontal line at its one point's y.
    pub flat: bool,
}

/// One panel of a figure.
#[derive(Debug, Clone)]
pub struct LinePanel {
    /// Caption, e.g. `d = 8192, ε = 4`.
    pub caption: String,
    /// The curves.
    pub lines: Vec<Line>,
}

/// A figure: panels side by side (three per row), a shared legend on the right.
#[derive(Debug, Clone)]
pub struct LineFigure {
    /// File stem (`[a-z0-9.-]`), e.g. `error-vs-k`.
    pub stem: String,
    /// Title above the panels.
    pub title: String,
    /// x-axis description.
    pub xlabel: String,
    /// y-axis description.
    pub ylabel: String,
    /// The panels.
    pub panels: Vec<LinePanel>,
    /// Legend entries: style index, drawn dashed (a flat line), label.
    pub legend: Vec<(usize, bool, String)>,
    /// Lines of small print under the legend (e.g. settings not run and why).
    pub notes: Vec<String>,
}

/// x and y ranges over every panel (positive values only: the axes are logarithmic).
fn ranges(fig: &LineFigure) -> ((f64, f64), (f64, f64), Vec<f64>) {
    let mut xs: Vec<f64> = Vec::new();
    let (mut ylo, mut yhi) = (f64::INFINITY, 0f64);
    for p in &fig.panels {
        for l in &p.lines {
            for &(x, y, sd) in &l.points {
                if !l.flat && x > 0.0 && x.is_finite() {
                    xs.push(x);
                }
                if y > 0.0 && y.is_finite() {
                    ylo = ylo.min((y - sd).max(y / 10.0));
                    yhi = yhi.max(y + sd);
                }
            }
        }
    }
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let (xlo, xhi) = match (xs.first(), xs.last()) {
        (Some(&a), Some(&b)) if b > a => (a / 1.4, b * 1.4),
        (Some(&a), _) => (a / 3.0, a * 3.0),
        _ => (1.0, 10.0),
    };
    if !(ylo.is_finite() && yhi > 0.0) {
        (ylo, yhi) = (0.1, 1.0);
    }
    if yhi <= ylo * 1.01 {
        (ylo, yhi) = (ylo / 2.0, yhi * 2.0);
    }
    let ticks = thin_ticks(&xs, xlo, xhi);
    ((xlo, xhi), (ylo / 1.5, yhi * 1.5), ticks)
}

/// The labelled x ticks: grid values, left to right, each at least a tenth of the (log) axis from
/// the previous one, so labels never run into each other (4e6 and 1e7 on a 16…1e7 axis did).
fn thin_ticks(xs: &[f64], xlo: f64, xhi: f64) -> Vec<f64> {
    let min_gap = (xhi / xlo).ln() / 10.0;
    let mut ticks: Vec<f64> = Vec::new();
    for &x in xs {
        if ticks.last().is_none_or(|&last| (x / last).ln() >= min_gap) {
            ticks.push(x);
        }
    }
    ticks
}

/// Short tick labels: `16`, `8192`, `1e6`, `0.001`.
fn tick(x: f64) -> String {
    if x >= 1e5 || (x > 0.0 && x < 1e-3) {
        format!("{x:.0e}")
    } else if x >= 10.0 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Draw a figure as SVG text.
fn figure_svg(fig: &LineFigure) -> PResult<String> {
    let n = fig.panels.len().max(1);
    let ncols = n.min(3);
    let nrows = n.div_ceil(ncols);
    let longest = fig
        .legend
        .iter()
        .map(|l| l.2.chars().count())
        .chain(fig.notes.iter().map(|s| s.chars().count() * 7 / 8))
        .max()
        .unwrap_or(0);
    let legend_w = (60 + 8 * longest as u32).clamp(150, 520);
    let width = ncols as u32 * PANEL_W + legend_w;
    let legend_h = 60 + 24 * fig.legend.len() + 18 * (fig.notes.len() + 1) + 20;
    let height = TITLE_H + (nrows as u32 * PANEL_H).max(legend_h as u32);
    let ((xlo, xhi), (ylo, yhi), ticks) = ranges(fig);
    let mut svg = String::new();
    {
        let (root, cells, legend_area) =
            frame(&mut svg, (width, height), &fig.title, (nrows, ncols))?;
        for (panel, area) in fig.panels.iter().zip(cells.iter()) {
            let mut chart = ChartBuilder::on(area)
                .caption(panel.caption.clone(), (FONT, 16))
                .margin(8)
                .margin_right(18)
                .x_label_area_size(42)
                .y_label_area_size(60)
                .build_cartesian_2d(
                    (xlo..xhi).log_scale().with_key_points(ticks.clone()),
                    (ylo..yhi).log_scale(),
                )
                .map_err(perr)?;
            let xfmt = |x: &f64| tick(*x);
            let yfmt = |y: &f64| format!("{y:.0e}");
            chart
                .configure_mesh()
                .x_desc(fig.xlabel.as_str())
                .y_desc(fig.ylabel.as_str())
                .x_label_formatter(&xfmt)
                .y_label_formatter(&yfmt)
                .label_style((FONT, 13))
                .axis_desc_style((FONT, 14))
                .bold_line_style(BLACK.mix(0.10))
                .light_line_style(TRANSPARENT)
                .draw()
                .map_err(perr)?;
            for l in &panel.lines {
                let c = colour(l.style);
                let pts: Vec<(f64, f64)> = l
                    .points
                    .iter()
                    .filter(|p| p.1 > 0.0 && p.1.is_finite())
                    .map(|p| (p.0, p.1))
                    .collect();
                if l.flat {
                    if let Some(&(_, y)) = pts.first() {
                        chart
                            .draw_series(DashedLineSeries::new(
                                vec![(xlo, y), (xhi, y)],
                                8,
                                5,
                                c.stroke_width(2),
                            ))
                            .map_err(perr)?;
                    }
                    continue;
                }
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                    .map_err(perr)?;
                chart
                    .draw_series(
                        l.points
                            .iter()
                            .filter(|p| p.1 > 0.0 && p.2 > 0.0 && p.2.is_finite())
                            .map(|p| {
                                ErrorBar::new_vertical(
                                    p.0,
                                    (p.1 - p.2).max(ylo),
                                    p.1,
                                    (p.1 + p.2).min(yhi),
                                    c.stroke_width(1),
                                    8,
                                )
                            }),
                    )
                    .map_err(perr)?;
                draw_markers(&mut chart, l.style, &pts)?;
            }
        }
        // legend
        let x0 = LEGEND_X;
        let mut y = 60;
        for (style, dashed, label) in &fig.legend {
            if *dashed {
                for seg in [(x0, x0 + 9), (x0 + 13, x0 + 22), (x0 + 26, x0 + 32)] {
                    legend_area
                        .draw(&PathElement::new(
                            vec![(seg.0, y), (seg.1, y)],
                            colour(*style).stroke_width(2),
                        ))
                        .map_err(perr)?;
                }
                legend_label(&legend_area, y, label)?;
            } else {
                legend_entry(&legend_area, *style, y, label)?;
            }
            y += 24;
        }
        let note_style = (FONT, 13)
            .into_font()
            .color(&NOTE_COLOR)
            .pos(Pos::new(HPos::Left, VPos::Center));
        y += 8;
        for s in &fig.notes {
            legend_area
                .draw(&Text::new(s.clone(), (x0, y), note_style.clone()))
                .map_err(perr)?;
            y += 18;
        }
        root.present().map_err(perr)?;
    }
    Ok(svg)
}

/// Write each figure as `<stem>.svg` and, where a font is found, `<stem>.png` into `dir` (which
/// must exist); PNGs that cannot be rendered are reported as warnings, as in
/// [`super::plots_with_warnings`].
pub fn write_line_figures(figs: &[LineFigure], dir: &Path) -> Result<PlotOutcome> {
    super::plot::write_figures(
        dir,
        figs.iter().map(|f| (f.stem.as_str(), f)),
        figure_svg,
        system_fonts(),
    )
}

#[cfg(test)]
mod tests {
    use super::thin_ticks;

    #[test]
    fn ticks_keep_a_tenth_of_the_log_axis_apart() {
        // The ProjUnit runtime grid: 4e6 and 1e7 used to be labelled side by side.
        let xs = [16.0, 128.0, 1024.0, 8192.0, 65536.0, 5e5, 4194304.0, 1e7];
        let (lo, hi) = (16.0 / 1.4, 1e7 * 1.4);
        let t = thin_ticks(&xs, lo, hi);
        assert_eq!(
            t,
            vec![16.0, 128.0, 1024.0, 8192.0, 65536.0, 5e5, 4194304.0]
        );
        let gap = (hi / lo).ln() / 10.0;
        assert!(t.windows(2).all(|w| (w[1] / w[0]).ln() >= gap));
        // A sparse grid keeps every value.
        assert_eq!(
            thin_ticks(&[1.0, 10.0, 100.0], 0.7, 140.0),
            vec![1.0, 10.0, 100.0]
        );
    }
}
