use std::path::PathBuf;

use clap::Args;

use super::{InputArgs, ScaleArgs};
use dprp::atomic::Existing;
use dprp::error::Result;
use dprp::request::convert::Conversion;

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Input file.
    input: PathBuf,
    /// Output dataset (.bin: dprp's native format; a name that says another format is refused).
    #[arg(short, long)]
    output: PathBuf,
    /// Replace an existing regular file at --output (without it, an existing output is refused;
    /// links, devices, pipes and sockets are always refused).
    #[arg(long)]
    overwrite: bool,
    #[command(flatten)]
    input_args: InputArgs,
    #[command(flatten)]
    scale: ScaleArgs,
}

pub fn run(a: ConvertArgs) -> Result<()> {
    let opts = a.input_args.options()?;
    let req = a.scale.request()?;
    let output = (a.output.as_path(), Existing::replace_if(a.overwrite));
    let conversion = Conversion::open(&a.input, opts, req, output)?;
    if conversion.needs_column_stats() {
        super::output::note(format_args!(
            "warning: --scale max-abs derives per-column factors from the data; they are not \
             covered by any privacy guarantee of later releases"
        ));
    }
    let text = conversion.write()?.to_text();
    super::output::report_written(&[&a.output], || super::output::print_str(&text))
}
