//! What a figure is (data only) and what drawing figures wrote: the types the reports build with
//! or without the `plot` feature, which draws them ([`super::write_line_figures`]).

use std::path::PathBuf;

/// What [`super::plots_with_warnings`] or [`super::write_line_figures`] wrote.
#[derive(Debug, Clone, Default)]
pub struct PlotOutcome {
    /// Files written (SVG, and PNG next to each where it could be rendered).
    pub files: Vec<PathBuf>,
    /// Why some PNG files were not written (e.g. no font found); empty when all were.
    pub warnings: Vec<String>,
}

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
