//! Colours, marker shapes, ±sd bars and dash patterns of the plots, and where the ε = ∞ points go.

use plotters::coord::types::RangedCoordf64;
use plotters::element::ErrorBarOrientV;
use plotters::prelude::*;

use super::canvas::{perr, PanelChart, PANEL_W};
use super::figures::Series;
use super::raster::PResult;

/// Colour-blind-safe palette (Okabe–Ito, without black, which the reference uses).
pub(super) const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(140, 86, 75),
    RGBColor(153, 153, 51),
];
pub(super) const REF_COLOR: RGBColor = RGBColor(60, 60, 60);
pub(super) const NOTE_COLOR: RGBColor = RGBColor(110, 110, 110);

pub(super) fn colour(style: usize) -> RGBColor {
    PALETTE[style % PALETTE.len()]
}

/// A retrieval/SVM panel: ε on a log scale, the metric on a linear one.
pub(super) type Chart<'a, 'b> = PanelChart<'a, 'b, RangedCoordf64>;

/// Marker shape of a style index: 0 circle, 1 square, 2 triangle, 3 diamond, 4 cross (shapes
/// cycle more slowly than colours, so the first 40 mechanisms all differ).
pub(super) fn shape(style: usize) -> usize {
    (style / PALETTE.len() + style) % 5
}

/// Draw markers (shape and colour by style index) at data points.
pub(super) fn draw_markers<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    style: usize,
    pts: &[(f64, f64)],
) -> PResult
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
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
pub(super) fn draw_legend_marker(
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

/// Dash patterns (dash, gap in pixels) of horizontal reference lines; 0 is the ceiling's.
pub(super) const DASHES: [(u32, u32); 4] = [(8, 5), (3, 3), (14, 4), (2, 7)];

/// Where the ∞ column sits: this many times the largest ε (log axis).
pub(super) const INF_AT: f64 = 3.0;

/// Approximate plot width of a panel in pixels (panel minus margins and the y label area).
pub(super) const PLOT_W: f64 = (PANEL_W - 8 - 18 - 52) as f64;

/// x positions of the series' ε = ∞ points (`NAN` for none): at `x_inf`, spread sideways where
/// values lie within a marker's height of each other (several mechanisms often share a
/// reference), so every marker stays visible.
pub(super) fn dodge(series: &[Series], x_inf: f64, ymax: f64, (lo, hi): (f64, f64)) -> Vec<f64> {
    let mut out = vec![f64::NAN; series.len()];
    let mut order: Vec<(usize, f64)> = series
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.inf.map(|p| (i, p.mean)))
        .collect();
    order.sort_by(|a, b| a.1.total_cmp(&b.1));
    // one marker width, as a factor on the log axis
    let step = ((hi / lo).ln() * 9.0 / PLOT_W).exp();
    let close = 0.03 * ymax;
    let mut i = 0;
    while i < order.len() {
        let mut j = i + 1;
        while j < order.len() && order[j].1 - order[j - 1].1 < close {
            j += 1;
        }
        let n = j - i;
        for (t, &(si, _)) in order[i..j].iter().enumerate() {
            out[si] = x_inf * step.powf(t as f64 - (n as f64 - 1.0) / 2.0);
        }
        i = j;
    }
    out
}

/// An open marker (the series' shape, outlined, white inside) at a data point: the ε = ∞ point.
pub(super) fn draw_open_marker(chart: &mut Chart<'_, '_>, style: usize, p: (f64, f64)) -> PResult {
    let c = colour(style);
    let edge = c.stroke_width(2);
    let poly: Vec<(i32, i32)> = match shape(style) {
        0 => {
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at(p)
                        + Circle::new((0, 0), 4, WHITE.filled())
                        + Circle::new((0, 0), 4, edge),
                ))
                .map_err(perr)?;
            return Ok(());
        }
        1 => vec![(-4, -4), (4, -4), (4, 4), (-4, 4)],
        2 => vec![(0, -5), (5, 4), (-5, 4)],
        3 => vec![(0, -5), (5, 0), (0, 5), (-5, 0)],
        _ => {
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at(p)
                        + Circle::new((0, 0), 6, WHITE.filled())
                        + Circle::new((0, 0), 6, c.stroke_width(1))
                        + PathElement::new(vec![(-4, -4), (4, 4)], edge)
                        + PathElement::new(vec![(-4, 4), (4, -4)], edge),
                ))
                .map_err(perr)?;
            return Ok(());
        }
    };
    let mut closed = poly.clone();
    closed.push(poly[0]);
    chart
        .draw_series(std::iter::once(
            EmptyElement::at(p)
                + Polygon::new(poly, WHITE.filled())
                + PathElement::new(closed, edge),
        ))
        .map_err(perr)?;
    Ok(())
}

/// A bar of ± `sd` around `mean` at `x`, clipped to the y range `(lo, hi)`, its caps `width`
/// pixels wide.
pub(super) fn sd_bar(
    x: f64,
    (mean, sd): (f64, f64),
    (lo, hi): (f64, f64),
    c: RGBColor,
    width: u32,
) -> ErrorBar<f64, f64, ErrorBarOrientV<f64, f64>> {
    ErrorBar::new_vertical(
        x,
        (mean - sd).max(lo),
        mean,
        (mean + sd).min(hi),
        c.stroke_width(1),
        width,
    )
}
