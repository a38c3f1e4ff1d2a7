//! The frame every figure shares — the page and its title, the grid of panels, each panel's
//! axes and the legend column — so that [`super::plot`] and [`super::lines`] draw only their own
//! marks.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub(super) use super::canvas::{perr, Area, PanelChart, FONT, PANEL_H, PANEL_W, TITLE_H};
use super::marks::{colour, draw_legend_marker, NOTE_COLOR};
use super::raster::PResult;

/// The legend's left margin, the height of its first entry, the spacing of its entries and of
/// its small print.
pub(super) const LEGEND_X: i32 = 12;
pub(super) const LEGEND_TOP: i32 = 60;
pub(super) const ENTRY_H: i32 = 24;
pub(super) const NOTE_H: i32 = 18;

/// The width of a legend column whose longest line has `longest` characters: 8 pixels a
/// character and a 60-pixel sample, between 150 and `max` pixels.
pub(super) fn legend_width(longest: usize, max: u32) -> u32 {
    (60 + 8 * longest as u32).clamp(150, max)
}

/// The layout of a figure: a white page with the title centred in the top [`TITLE_H`] pixels,
/// `rows × cols` panels of [`PANEL_W`] × [`PANEL_H`] on the left and the legend column on the
/// right, the page tall enough for both.
pub(super) struct Page {
    rows: usize,
    cols: usize,
    width: u32,
    height: u32,
}

impl Page {
    /// A page for `panels` panels (room for one at least) in `columns(panels)` columns, with a
    /// legend column `legend_w` pixels wide holding `legend_h` pixels of entries.
    pub(super) fn new(
        panels: usize,
        columns: fn(usize) -> usize,
        legend_w: u32,
        legend_h: usize,
    ) -> Page {
        let n = panels.max(1);
        let cols = columns(n);
        let rows = n.div_ceil(cols);
        Page {
            rows,
            cols,
            width: cols as u32 * PANEL_W + legend_w,
            height: TITLE_H + (rows as u32 * PANEL_H).max(legend_h as u32),
        }
    }

    /// Draw the page and its title, then `draw` the panel cells (row-major) and the legend;
    /// returns the SVG text.
    pub(super) fn render(
        &self,
        title: &str,
        draw: impl FnOnce(&[Area<'_>], &mut Legend<'_, '_>) -> PResult,
    ) -> PResult<String> {
        let mut svg = String::new();
        {
            let root =
                SVGBackend::with_string(&mut svg, (self.width, self.height)).into_drawing_area();
            root.fill(&WHITE).map_err(perr)?;
            let (title_area, body) = root.split_vertically(TITLE_H);
            title_area
                .draw(&Text::new(
                    title.to_string(),
                    ((self.width / 2) as i32, 12),
                    (FONT, 20)
                        .into_font()
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Center, VPos::Top)),
                ))
                .map_err(perr)?;
            let (panels_area, legend_area) = body.split_horizontally(self.cols as u32 * PANEL_W);
            let (panels_area, _) = panels_area.split_vertically(self.rows as u32 * PANEL_H);
            let cells = panels_area.split_evenly((self.rows, self.cols));
            let mut legend = Legend {
                area: &legend_area,
                y: LEGEND_TOP,
            };
            draw(&cells, &mut legend)?;
            root.present().map_err(perr)?;
        }
        Ok(svg)
    }
}

/// Type sizes of a panel: its caption, the tick labels and the axis descriptions.
pub(super) struct TypeSizes {
    pub(super) caption: u32,
    pub(super) label: u32,
    pub(super) desc: u32,
}

/// The axes every panel of a figure shares: x on a log scale with labelled ticks, y linear (a
/// `Range<f64>`) or logarithmic (its `.log_scale()`), their descriptions and tick labels, a light
/// grid at the labelled values.
pub(super) struct Axes<'f, Y> {
    /// x range.
    pub(super) x: (f64, f64),
    /// The labelled x values.
    pub(super) ticks: Vec<f64>,
    /// y range.
    pub(super) y: Y,
    pub(super) x_desc: &'f str,
    pub(super) y_desc: &'f str,
    pub(super) x_label: &'f dyn Fn(&f64) -> String,
    pub(super) y_label: &'f dyn Fn(&f64) -> String,
    /// How many y labels to aim for (plotters' default is 11).
    pub(super) y_labels: usize,
    /// Width of the y label area in pixels.
    pub(super) y_label_area: u32,
    pub(super) sizes: TypeSizes,
}

impl<Y> Axes<'_, Y>
where
    Y: AsRangedCoord<Value = f64> + Clone,
    Y::CoordDescType: ValueFormatter<f64>,
{
    /// A panel in `area` with its caption, axes and grid drawn, ready for the marks.
    pub(super) fn panel<'a, 'b>(
        &self,
        area: &'a Area<'b>,
        caption: &str,
    ) -> PResult<PanelChart<'a, 'b, Y::CoordDescType>> {
        let mut chart = ChartBuilder::on(area)
            .caption(caption, (FONT, self.sizes.caption))
            .margin(8)
            .margin_right(18)
            .x_label_area_size(42)
            .y_label_area_size(self.y_label_area)
            .build_cartesian_2d(
                (self.x.0..self.x.1)
                    .log_scale()
                    .with_key_points(self.ticks.clone()),
                self.y.clone(),
            )
            .map_err(perr)?;
        chart
            .configure_mesh()
            .x_desc(self.x_desc)
            .y_desc(self.y_desc)
            .x_label_formatter(self.x_label)
            .y_label_formatter(self.y_label)
            .y_labels(self.y_labels)
            .label_style((FONT, self.sizes.label))
            .axis_desc_style((FONT, self.sizes.desc))
            .bold_line_style(BLACK.mix(0.10))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(perr)?;
        Ok(chart)
    }
}

/// The legend column, written top down: entries (a 32-pixel sample, then the label) every
/// [`ENTRY_H`] pixels, small print every [`NOTE_H`].
pub(super) struct Legend<'a, 'b> {
    area: &'a Area<'b>,
    /// Height of the next line.
    y: i32,
}

impl Legend<'_, '_> {
    /// An entry: `sample` drawn at the left of the current line (given its left end and
    /// height), then the label.
    pub(super) fn entry(
        &mut self,
        sample: impl FnOnce(&Area<'_>, (i32, i32)) -> PResult,
        label: &str,
    ) -> PResult {
        sample(self.area, (LEGEND_X, self.y))?;
        self.area
            .draw(&Text::new(
                label.to_string(),
                (LEGEND_X + 42, self.y),
                (FONT, 15)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(perr)?;
        self.y += ENTRY_H;
        Ok(())
    }

    /// A curve's entry: a solid line in the style's colour with its marker.
    pub(super) fn curve(&mut self, style: usize, label: &str) -> PResult {
        self.entry(
            |area, (x0, y)| {
                area.draw(&PathElement::new(
                    vec![(x0, y), (x0 + 32, y)],
                    colour(style).stroke_width(2),
                ))
                .map_err(perr)?;
                draw_legend_marker(area, style, (x0 + 16, y))
            },
            label,
        )
    }

    /// A dashed line's entry: dashes of `colour` with the pattern (dash, gap) in pixels.
    pub(super) fn dashed(
        &mut self,
        colour: RGBColor,
        (dash, gap): (u32, u32),
        label: &str,
    ) -> PResult {
        self.entry(
            |area, (x0, y)| {
                let mut x = x0;
                while x < x0 + 32 {
                    let e = (x + dash as i32).min(x0 + 32);
                    area.draw(&PathElement::new(
                        vec![(x, y), (e, y)],
                        colour.stroke_width(2),
                    ))
                    .map_err(perr)?;
                    x = e + gap as i32;
                }
                Ok(())
            },
            label,
        )
    }

    /// A line of small print, `indent` pixels in from the samples' left end.
    pub(super) fn note(&mut self, text: &str, indent: i32) -> PResult {
        self.area
            .draw(&Text::new(
                text.to_string(),
                (LEGEND_X + indent, self.y),
                (FONT, 13)
                    .into_font()
                    .color(&NOTE_COLOR)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(perr)?;
        self.y += NOTE_H;
        Ok(())
    }

    /// Move down `px` pixels.
    pub(super) fn skip(&mut self, px: i32) {
        self.y += px;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four panels in three columns: a 2 × 3 grid, the page as wide as the panels and the legend
    /// column, as tall as the title and two rows; title, legend label and small print drawn.
    #[test]
    fn page_grid_and_legend() {
        let page = Page::new(4, |n| n.min(3), legend_width(10, 440), 100);
        let mut cells_seen = 0;
        let svg = page
            .render("a title", |cells, legend| {
                cells_seen = cells.len();
                legend.curve(0, "first curve")?;
                legend.dashed(RED, (9, 4), "a flat line")?;
                legend.skip(8);
                legend.note("small print", 0)
            })
            .unwrap();
        assert_eq!(cells_seen, 6);
        let (w, h) = (3 * PANEL_W + 150, TITLE_H + 2 * PANEL_H);
        assert!(
            svg.starts_with(&format!(r#"<svg width="{w}" height="{h}""#)),
            "{}",
            &svg[..80]
        );
        for s in ["a title", "first curve", "a flat line", "small print"] {
            assert!(svg.contains(s), "{s} missing");
        }
        // the flat line's sample: three dashes across 32 pixels
        assert_eq!(svg.matches("<polyline").count(), 1 + 3, "{svg}");
        // a legend taller than the panels sets the height
        assert_eq!(Page::new(1, |n| n, 150, 900).height, TITLE_H + 900);
    }
}
