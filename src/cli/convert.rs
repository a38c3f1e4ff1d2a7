use std::path::PathBuf;

use clap::Args;

use super::{InputArgs, ScaleArgs};
use crate::error::Result;
use crate::request::convert::Conversion;

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Input file.
    input: PathBuf,
    /// Output dataset (.bin).
    #[arg(short, long)]
    output: PathBuf,
    #[command(flatten)]
    input_args: InputArgs,
    #[command(flatten)]
    scale: ScaleArgs,
}

pub fn run(a: ConvertArgs) -> Result<()> {
    let opts = a.input_args.options()?;
    let req = a.scale.request()?;
    let conversion = Conversion::open(&a.input, opts, req, &a.output)?;
    if conversion.needs_column_stats() {
        super::output::note(format_args!(
            "warning: --scale max-abs derives per-column factors from the data; they are not \
             covered by any privacy guarantee of later releases"
        ));
    }
    super::output::print_str(&conversion.write()?.to_text())
}
