//! `dprp ledger DIR [--json]`: the releases of each dataset in a privacy budget ledger and their
//! total guarantee (see [`dprp::ledger`] and [`dprp::request::ledger`]).

use std::path::PathBuf;

use clap::Args;

use dprp::error::{Error, Result};
use dprp::request::ledger::LedgerReport;

#[derive(Debug, Args)]
pub struct LedgerArgs {
    /// The ledger directory (its *.dprp releases and the .dprp-ledger journal).
    dir: PathBuf,
    /// Print the ledger as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: LedgerArgs) -> Result<()> {
    let report = LedgerReport::open(&a.dir)?;
    if a.json {
        let s = serde_json::to_string_pretty(&report)
            .map_err(|e| Error::param("--json", e.to_string()))?;
        outln!("{s}")?;
    } else {
        super::output::print_str(&report.to_text())?;
    }
    for u in report.unreadable() {
        super::output::warn(format_args!("{} could not be read: {}", u.file, u.error));
    }
    report.complete()
}
