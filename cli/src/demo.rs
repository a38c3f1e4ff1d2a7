use std::path::PathBuf;

use clap::Args;

use dprp::error::Result;
use dprp::request::demo::{Demo, KINDS};
use dprp::request::info::ReleaseInfo;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Directory for the demo's files (default: a temporary directory, removed afterwards);
    /// created, and an existing one must be empty unless --overwrite.
    #[arg(long)]
    out_dir: Option<PathBuf>,
    /// Let --out-dir hold files already: the demo's files (sample.bin, sample-*.dprp) replace
    /// regular files of their names.
    #[arg(long)]
    overwrite: bool,
    /// ε for the demo releases.
    #[arg(short, long, default_value_t = 10.0)]
    epsilon: f64,
}

pub fn run(a: DemoArgs) -> Result<()> {
    let existing = dprp::atomic::Existing::replace_if(a.overwrite);
    let demo = Demo::prepare(a.out_dir.as_deref(), existing)?;
    super::output::print_str(&demo.intro())?;
    for kind in KINDS {
        super::output::print_str(&demo.command(kind, a.epsilon))?;
        let r = demo.publish(kind, a.epsilon)?;
        super::output::print_str(&ReleaseInfo::of_release(&r).to_text())?;
        super::output::print_str(&demo.utility(&r)?.to_text())?;
        outln!()?;
    }
    Ok(())
}
