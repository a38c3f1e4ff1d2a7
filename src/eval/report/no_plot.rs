//! Reports without the `plot` feature: no figure is drawn; each call says so as a warning, so
//! that a report lists what it did not write (Markdown, CSV and JSON are written as always).

use std::path::{Path, PathBuf};

use super::{LineFigure, PlotOutcome};
use crate::error::{Error, Result};
use crate::eval::Report;

const NOT_DRAWN: &str = "no figures drawn: this build of the dprp library has no `plot` feature";

fn nothing_drawn() -> PlotOutcome {
    PlotOutcome {
        files: Vec::new(),
        warnings: vec![NOT_DRAWN.into()],
    }
}

/// Without `plot`: an error saying that no figure is drawn.
pub fn plots(_report: &Report, dir: &Path) -> Result<Vec<PathBuf>> {
    Err(Error::io(
        dir,
        std::io::Error::new(std::io::ErrorKind::Unsupported, NOT_DRAWN),
    ))
}

/// Without `plot`: nothing written, one warning saying so.
pub fn plots_with_warnings(_report: &Report, _dir: &Path) -> Result<PlotOutcome> {
    Ok(nothing_drawn())
}

/// Without `plot`: nothing written, one warning saying so.
pub fn write_line_figures(_figs: &[LineFigure], _dir: &Path) -> Result<PlotOutcome> {
    Ok(nothing_drawn())
}
