//! `dprp shards finish` and the syntax of `publish --shard i/N`; the sharded publishing itself is
//! in [`dprp::request::shards`].

use std::path::PathBuf;

use clap::{Args, Subcommand};

use dprp::error::{Error, Result};
use dprp::release::shards::finish;

#[derive(Args, Debug)]
pub struct ShardsArgs {
    #[command(subcommand)]
    cmd: ShardsCmd,
}

#[derive(Subcommand, Debug)]
enum ShardsCmd {
    /// Check the shards that workers wrote into DIR (`publish --shard i/N`) — all present, one
    /// release (same mechanism, parameters, public seed), disjoint rows — and write its manifest.
    Finish {
        /// The shard directory.
        dir: PathBuf,
    },
}

pub fn run(a: ShardsArgs) -> Result<()> {
    match a.cmd {
        ShardsCmd::Finish { dir } => {
            let m = finish(&dir)?;
            let manifest = dir.join(dprp::release::shards::MANIFEST);
            super::output::report_written(&[&manifest], || {
                outln!(
                    "wrote {}: {} shards, {} rows; guarantee: {}",
                    manifest.display(),
                    m.count,
                    m.n,
                    m.release.statement
                )
            })
        }
    }
}

/// Parse `i/N`.
pub fn parse_shard(s: &str) -> Result<(u32, u32)> {
    let bad = || {
        Error::param(
            "--shard",
            format!("'{s}' is not i/N (shard i of N, 0 ≤ i < N, e.g. 3/16)"),
        )
    };
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (u32, u32) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}
