use std::path::PathBuf;

use clap::Args;

use dprp::error::{Error, Result};
use dprp::release::ReleaseSet;
use dprp::request::info::ReleaseInfo;

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Release file, or a sharded release's directory.
    release: PathBuf,
    /// Print the metadata as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: InfoArgs) -> Result<()> {
    let r = ReleaseSet::open(&a.release)?;
    let info = ReleaseInfo::of(&r);
    for w in info.advisories() {
        super::output::warn(w);
    }
    if a.json {
        let json_error = |e: serde_json::Error| Error::param("--json", e.to_string());
        let v = info.to_json().map_err(json_error)?;
        outln!("{}", serde_json::to_string_pretty(&v).map_err(json_error)?)
    } else {
        super::output::print_str(&info.to_text())
    }
}
