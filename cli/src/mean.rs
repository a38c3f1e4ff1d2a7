//! `dprp mean`: the unbiased mean of the users' vectors from local-DP releases, with its expected
//! squared error from the mechanism's closed form ([`dprp::request::mean`]).

use std::path::PathBuf;

use clap::Args;

use dprp::atomic::check_not_input;
use dprp::error::Result;
use dprp::request::mean::{MeanFile, ReleasesMean};

#[derive(Debug, Args)]
pub struct MeanArgs {
    /// Release files of one local-DP mechanism configuration (shards with disjoint row ids).
    #[arg(required = true)]
    releases: Vec<PathBuf>,
    /// Write the whole mean vector to a file: .npy (float64) or .csv (one line).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Replace an existing regular file at --output (without it, an existing output is refused;
    /// links, devices, pipes and sockets are always refused).
    #[arg(long)]
    overwrite: bool,
    /// Print the result (including the whole mean vector) as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: MeanArgs) -> Result<()> {
    let file = MeanFile::of(
        a.output.as_deref(),
        dprp::atomic::Existing::replace_if(a.overwrite),
    )?;
    if let Some(out) = &a.output {
        for r in &a.releases {
            check_not_input(r, out)?;
        }
    }
    let mean = ReleasesMean::of(&a.releases)?;
    if let Some(f) = &file {
        f.write(&mean.estimate.mean)?;
    }
    if !mean.private {
        super::output::warn(
            "a release's noise came from a user-supplied --noise-seed: the mean is NOT private",
        );
    }
    let written: Vec<&std::path::Path> = a.output.as_deref().into_iter().collect();
    super::output::report_written(&written, || {
        if a.json {
            let v = mean.to_json(a.output.as_deref());
            outln!(
                "{}",
                serde_json::to_string_pretty(&v).map_err(super::output::json_error)?
            )
        } else {
            super::output::print_str(&mean.to_text(a.output.as_deref()))
        }
    })
}
