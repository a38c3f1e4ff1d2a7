//! The units every figure is drawn in: the panel's size, the page's title strip and font, the
//! drawing area and a panel's chart type, and plotters' errors as text. Below the frame
//! ([`super::frame`]) and the marks ([`super::marks`]), which both draw with them.

use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Size of one panel in pixels.
pub(super) const PANEL_W: u32 = 400;
pub(super) const PANEL_H: u32 = 340;
/// Height of the title strip above the panels.
pub(super) const TITLE_H: u32 = 40;
/// The font family of every text (resolved by the viewer, or by the rasteriser's font).
pub(super) const FONT: &str = "sans-serif";

/// A region of the SVG page.
pub(super) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A panel's chart: x on a log scale with labelled key points, y on the coordinate `Y`.
pub(super) type PanelChart<'a, 'b, Y> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<WithKeyPoints<LogCoord<f64>>, Y>>;

/// Convert a plotters error into text.
pub(super) fn perr<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> String {
    e.to_string()
}
