//! Sharded publishing (`publish --shards N`, `publish --shard i/N`) and `dprp shards finish`:
//! thin wrappers over [`crate::publish`] and [`crate::release::shards`].

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use crate::atomic::StagingDir;
use crate::data::open_reader;
use crate::error::{Error, Result};
use crate::ledger::Gate;
use crate::privacy::noise::NoiseSource;
use crate::publish::{
    publish_gated, publish_with, Part, PublishOptions, PublishOutcome, PublishRequest,
};
use crate::release::shards::{finish, shard_file_name_as};
use crate::release::DatasetRecord;
use crate::release::ShardRecord;

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
            outln!(
                "wrote {}: {} shards, {} rows; guarantee: {}",
                dir.join(crate::release::shards::MANIFEST).display(),
                m.count,
                m.n,
                m.release.statement
            )?;
            Ok(())
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

/// Rows of the input: the format's count, else one pass over it.
/// The input's rows, counted (from the header when the format states it), and with a ledger,
/// the fingerprint of all of them as read (the shards each see only their own rows, but all must
/// record the whole dataset's fingerprint).
fn count_rows(req: &PublishRequest, gate: Option<&Gate>) -> Result<(u64, Option<DatasetRecord>)> {
    let mut r = open_reader(&req.input, &req.input_opts)?;
    let mut fp = gate.map(|g| g.key().fingerprinter(r.dim()));
    if let (Some(n), None) = (r.rows_hint(), &fp) {
        return Ok((n, None));
    }
    let (mut v, mut l, mut n) = (Vec::new(), Vec::new(), 0u64);
    loop {
        v.clear();
        l.clear();
        let got = r.read_chunk(4096, &mut v, &mut l)?;
        if got == 0 {
            return Ok((n, fp.map(|f| f.finish())));
        }
        if let Some(f) = fp.as_mut() {
            f.update(&v)?;
        }
        n += got as u64;
    }
}

/// `publish --shards N`: the rows split into N contiguous ranges as even as possible (shard i gets
/// rows `⌊in/N⌋..⌊(i+1)n/N⌋`), each published as a shard with the global ids of its rows (a row's
/// noise stream and public map are those of its id, so the shards hold exactly the rows of the
/// one-file release), then the manifest; all written into a staging directory that becomes
/// `req.output` only when everything succeeded.
pub fn publish_all(
    req: &PublishRequest,
    noise: &NoiseSource,
    opts: &PublishOptions,
    count: u32,
    mut gate: Option<&mut Gate>,
) -> Result<(PublishOutcome, String)> {
    if count == 0 {
        return Err(Error::param("--shards", "at least one shard"));
    }
    check_output_dir(&req.output)?;
    if !std::fs::metadata(&req.input).is_ok_and(|m| m.is_file()) {
        return Err(Error::param(
            "--shards",
            format!(
                "{} is not a regular file: --shards reads its input once to count the rows and \
                 once per shard (save a pipe's rows to a file first)",
                req.input.display()
            ),
        ));
    }
    let (n, whole) = count_rows(req, gate.as_deref())?;
    if count as u64 > n {
        return Err(Error::param(
            "--shards",
            format!(
                "{count} shards of {n} rows would leave a shard empty: use at most {}",
                n.max(1)
            ),
        ));
    }
    // n < 2⁶⁴ rows and count < 2³², so i·n fits in 128 bits
    let start = |i: u64| (i as u128 * n as u128 / count as u128) as u64;
    let per = start(1);
    // One public seed for every shard: drawn here once when none was given (each publish would
    // otherwise draw its own, and the shards would not be one release).
    let mut req = req.clone();
    if req.params.seed.is_none() {
        req.params.seed = Some(crate::projection::Seed::random()?);
    }
    let req = &req;
    let staging = StagingDir::create(&req.output)?;
    let mut timings = crate::publish::StageTimes::default();
    let mut warnings = Vec::new();
    for i in 0..count {
        let mut r = req.clone();
        r.output = staging
            .path()
            .join(shard_file_name_as(i, count, opts.container));
        let mut o = *opts;
        let (lo, hi) = (start(i as u64), start(i as u64 + 1));
        o.part = Some(Part {
            shard: ShardRecord {
                index: i,
                count,
                first_row: lo,
            },
            skip: lo,
            take: Some(hi - lo),
        });
        if i == 0 {
            // the free-space check counts the whole release, before the first shard is written
            o.space_rows = Some(n);
        } else {
            // warnings are the same for every shard: say them once
            o.on_warning = None;
        }
        if let (Some(g), Some(w)) = (gate.as_deref_mut(), &whole) {
            g.begin_shards(w.clone());
        }
        let out = publish_gated(&r, noise, &o, gate.as_deref_mut())?;
        add_times(&mut timings, &out.timings);
        if i == 0 {
            warnings = out.warnings;
        }
    }
    let manifest = finish(staging.path())?;
    if let Some(g) = gate {
        // The directory is one release of the dataset: checked against the budget and recorded
        // once, before it is moved into place (as a single file is).
        g.end_shards();
        let set = crate::release::ReleaseSet::open_with(staging.path(), false)?;
        g.admit(&req.output, &manifest.release, &set.checksum())?;
    }
    staging.commit()?;
    let line = format!(
        "shards: {count} files of about {per} rows in {}, with {} (the one-file release split \
         into files: the guarantee above is the whole release's)",
        req.output.display(),
        crate::release::shards::MANIFEST
    );
    Ok((
        PublishOutcome {
            meta: manifest.release,
            warnings,
            timings,
        },
        line,
    ))
}

/// `publish --shard i/N --first-row R`: one worker's shard, all of its input, written as
/// `DIR/shard-i-of-N.dprp` (DIR created if missing, its parent must exist as for every output);
/// `dprp shards finish DIR` completes the release once every worker is done. A shard that is
/// already written, or a finished release, is never replaced: privatising the same rows again
/// would spend their budget twice, and the first version may have been seen.
pub fn publish_one(
    req: &PublishRequest,
    noise: &NoiseSource,
    opts: &PublishOptions,
    spec: &str,
    first_row: u64,
) -> Result<(PublishOutcome, String)> {
    let (index, count) = parse_shard(spec)?;
    if req.params.seed.is_none() {
        return Err(Error::missing(
            "--projection-seed",
            "the shards of one release share its public seed: give every worker the same \
             --projection-seed (e.g. one drawn by whoever starts them)",
        ));
    }
    crate::atomic::check_not_dangling(&req.output)?;
    if req.output.exists() && !req.output.is_dir() {
        return Err(Error::param(
            "--output",
            format!(
                "{} is a file; with --shard the output is the shard directory",
                req.output.display()
            ),
        ));
    }
    for m in [
        crate::release::shards::MANIFEST,
        crate::release::shards::LEGACY_MANIFEST,
    ] {
        if req.output.join(m).exists() {
            return Err(Error::param(
                "--shard",
                format!(
                    "{} is a finished sharded release (it has {m}): writing shard {index} again \
                     would privatise its rows a second time with fresh noise (their budget spent \
                     twice, the first version possibly already shared); publish into a new \
                     directory",
                    req.output.display()
                ),
            ));
        }
    }
    if !req.output.is_dir() {
        match std::fs::create_dir(&req.output) {
            Ok(()) => {}
            // another worker made it first
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::param(
                    "--output",
                    format!(
                        "the parent of {} does not exist (the shard directory is created, not \
                         its parents)",
                        req.output.display()
                    ),
                ))
            }
            Err(e) => return Err(Error::io(&req.output, e)),
        }
    }
    let mut r = req.clone();
    r.output = req
        .output
        .join(shard_file_name_as(index, count, opts.container));
    if r.output.exists() {
        return Err(Error::param(
            "--shard",
            format!(
                "shard {index} of {count} is already written ({}): publishing it again would \
                 privatise its rows a second time with fresh noise (their budget spent twice); if \
                 the first version was never shared, delete it first",
                r.output.display()
            ),
        ));
    }
    let mut o = *opts;
    o.part = Some(Part {
        shard: ShardRecord {
            index,
            count,
            first_row,
        },
        skip: 0,
        take: None,
    });
    let out = publish_with(&r, noise, &o)?;
    let line = format!(
        "shard {index} of {count}: wrote {} (rows {first_row}..{}); when every shard is written, \
         run `dprp shards finish {}`",
        r.output.display(),
        first_row + out.meta.n,
        req.output.display()
    );
    Ok((out, line))
}

fn check_output_dir(out: &Path) -> Result<()> {
    if out.is_file() {
        return Err(Error::param(
            "--output",
            format!(
                "{} is a file; with --shards the output is a directory",
                out.display()
            ),
        ));
    }
    if out.is_dir() {
        let mut entries = std::fs::read_dir(out).map_err(|e| Error::io(out, e))?;
        if entries.next().is_some() {
            return Err(Error::param(
                "--output",
                format!(
                    "{} is a directory that is not empty; a sharded release needs a new or empty \
                     one",
                    out.display()
                ),
            ));
        }
    }
    Ok(())
}

fn add_times(t: &mut crate::publish::StageTimes, o: &crate::publish::StageTimes) {
    t.setup += o.setup;
    t.read += o.read;
    t.privatise += o.privatise;
    t.wait_read += o.wait_read;
    t.wait_write += o.wait_write;
    t.write += o.write;
    t.finish += o.finish;
    t.total += o.total;
    t.chunks += o.chunks;
}
