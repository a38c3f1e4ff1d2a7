//! Log–log line figures for the mean-estimation evaluation (`dprp eval mean`): error against k,
//! against ε, runtime against d. The same palette, markers, fonts and atomic SVG + PNG output as
//! the retrieval plots ([`super::plot`]), with both axes on a log scale (errors and runtimes span
//! orders of magnitude).

use std::path::Path;

use plotters::coord::combinators::LogCoord;
use plotters::prelude::*;

use super::frame::{
    legend_width, perr, Axes, Legend, Page, PanelChart, TypeSizes, ENTRY_H, LEGEND_TOP, NOTE_H,
};
use super::marks::*;
use super::raster::{system_fonts, PResult};
use super::{Line, LineFigure, PlotOutcome};
use crate::error::Result;

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

/// A panel of a line figure: both axes on a log scale.
type LogChart<'a, 'b> = PanelChart<'a, 'b, LogCoord<f64>>;

/// The legend's sample of a flat (dashed) line: three dashes across the 32 pixels.
const FLAT_SAMPLE: (u32, u32) = (9, 4);

/// The page: up to three panels a row, the legend column as wide as its longest line and the
/// page tall enough for the legend as [`draw_legend`] lays it out.
fn page(fig: &LineFigure) -> Page {
    let longest = fig
        .legend
        .iter()
        .map(|l| l.2.chars().count())
        .chain(fig.notes.iter().map(|s| s.chars().count() * 7 / 8))
        .max()
        .unwrap_or(0);
    let legend_h = LEGEND_TOP as usize
        + ENTRY_H as usize * fig.legend.len()
        + NOTE_H as usize * (fig.notes.len() + 1)
        + 20;
    Page::new(
        fig.panels.len(),
        |n| n.min(3),
        legend_width(longest, 520),
        legend_h,
    )
}

/// Draw a figure as SVG text.
fn figure_svg(fig: &LineFigure) -> PResult<String> {
    let ((xlo, xhi), (ylo, yhi), ticks) = ranges(fig);
    let x_label = |x: &f64| tick(*x);
    let y_label = |y: &f64| format!("{y:.0e}");
    let axes = Axes {
        x: (xlo, xhi),
        ticks,
        y: (ylo..yhi).log_scale(),
        x_desc: &fig.xlabel,
        y_desc: &fig.ylabel,
        x_label: &x_label,
        y_label: &y_label,
        y_labels: 11,
        y_label_area: 60,
        sizes: TypeSizes {
            caption: 16,
            label: 13,
            desc: 14,
        },
    };
    page(fig).render(&fig.title, |cells, legend| {
        for (panel, area) in fig.panels.iter().zip(cells.iter()) {
            let mut chart = axes.panel(area, &panel.caption)?;
            for l in &panel.lines {
                draw_line(&mut chart, l, (xlo, xhi), (ylo, yhi))?;
            }
        }
        draw_legend(legend, fig)
    })
}

/// A curve: line, ±sd bars (clipped to `(ylo, yhi)`) and markers at its positive values; a flat
/// line is dashed across `(xlo, xhi)` at its one value.
fn draw_line(
    chart: &mut LogChart<'_, '_>,
    l: &Line,
    (xlo, xhi): (f64, f64),
    (ylo, yhi): (f64, f64),
) -> PResult {
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
        return Ok(());
    }
    chart
        .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
        .map_err(perr)?;
    chart
        .draw_series(
            l.points
                .iter()
                .filter(|p| p.1 > 0.0 && p.2 > 0.0 && p.2.is_finite())
                .map(|p| sd_bar(p.0, (p.1, p.2), (ylo, yhi), c, 8)),
        )
        .map_err(perr)?;
    draw_markers(chart, l.style, &pts)
}

/// The legend: an entry per curve (dashed for a flat line), then the notes in small print.
fn draw_legend(legend: &mut Legend<'_, '_>, fig: &LineFigure) -> PResult {
    for (style, dashed, label) in &fig.legend {
        if *dashed {
            legend.dashed(colour(*style), FLAT_SAMPLE, label)?;
        } else {
            legend.curve(*style, label)?;
        }
    }
    legend.skip(8);
    for s in &fig.notes {
        legend.note(s, 0)?;
    }
    Ok(())
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
