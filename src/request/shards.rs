//! Sharded publishing, for every front end: `--shards N` (one machine splits the rows into N
//! files) and one worker's shard (`--shard i/N`, `dprp.publish(..., shard=(i, N))`), over
//! [`crate::publish`] and [`crate::release::shards`]. The refusals that protect the budget — a
//! shard already written, a finished release, workers without one public seed — live here, so
//! that the command and the Python module refuse the same things.

use crate::error::field;
use std::path::Path;

use crate::atomic::StagingDir;
use crate::data::open_reader;
use crate::error::{Error, Result};
use crate::ledger::Gate;
use crate::privacy::samplers::noise::NoiseSource;
use crate::publish::{publish_gated, Part, PublishOptions, PublishOutcome, PublishRequest};
use crate::release::shards::{finish, shard_file_name_as, LEGACY_MANIFEST, MANIFEST};
use crate::release::{DatasetRecord, ShardRecord};

/// One worker's shard of a sharded release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerShard {
    /// `i` of `i/N`.
    pub index: u32,
    /// `N`.
    pub count: u32,
    /// The global id of the shard's first row.
    pub first_row: u64,
    /// Only the input rows `lo..hi` (a worker reading its part of a shared input file).
    pub rows: Option<(u64, u64)>,
}

/// What a worker's publish needs beside the caller's: the shard file to write and the options
/// that make the run a part of the release.
#[derive(Debug, Clone)]
pub struct WorkerPlan {
    /// The request with its output set to the shard file in the shard directory.
    pub request: PublishRequest,
    /// The options with the part set.
    pub options: PublishOptions,
}

impl WorkerShard {
    /// Check the shard against the request and the shard directory (`req.output`), create the
    /// directory when missing (its parent must exist, as for every output), and plan the run. A
    /// shard that is already written, or a finished release, is never replaced: privatising the
    /// same rows again would spend their budget twice, and the first version may have been seen.
    pub fn plan(&self, req: &PublishRequest, opts: &PublishOptions) -> Result<WorkerPlan> {
        let (index, count) = (self.index, self.count);
        if count == 0 || index >= count {
            return Err(Error::param(
                field("shard"),
                format!("shard {index} of {count}: give i/N with 0 ≤ i < N"),
            ));
        }
        if let Some((lo, hi)) = self.rows {
            if hi <= lo {
                return Err(Error::param(
                    field("rows"),
                    format!("({lo}, {hi}) is not (lo, hi) with lo < hi"),
                ));
            }
        }
        if req.params.seed.is_none() {
            return Err(Error::missing(
                field("projection_seed"),
                format!(
                    "the shards of one release share its public seed: give every worker the same \
                     {} (e.g. one drawn by whoever starts them)",
                    field("projection_seed")
                ),
            ));
        }
        let dir = &req.output;
        crate::atomic::check_dir_output(dir)?;
        if dir.exists() && !dir.is_dir() {
            return Err(Error::param(
                field("output"),
                format!(
                    "{} is a file; with {} the output is the shard directory",
                    dir.display(),
                    field("shard")
                ),
            ));
        }
        for m in [MANIFEST, LEGACY_MANIFEST] {
            if dir.join(m).exists() {
                return Err(Error::param(
                    field("shard"),
                    format!(
                        "{} is a finished sharded release (it has {m}): writing shard {index} \
                         again would privatise its rows a second time with fresh noise (their \
                         budget spent twice, the first version possibly already shared); publish \
                         into a new directory",
                        dir.display()
                    ),
                ));
            }
        }
        let file = dir.join(shard_file_name_as(index, count, opts.container));
        if file.exists() {
            return Err(Error::param(
                field("shard"),
                format!(
                    "shard {index} of {count} is already written ({}): publishing it again would \
                     privatise its rows a second time with fresh noise (their budget spent \
                     twice); if the first version was never shared, delete it first",
                    file.display()
                ),
            ));
        }
        if !dir.is_dir() {
            match std::fs::create_dir(dir) {
                Ok(()) => {}
                // another worker made it first
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(Error::param(
                        field("output"),
                        format!(
                            "the parent of {} does not exist (the shard directory is created, \
                             not its parents)",
                            dir.display()
                        ),
                    ))
                }
                Err(e) => return Err(Error::io(dir, e)),
            }
        }
        let mut request = req.clone();
        request.output = file;
        // the rows' ids come from the shard record; a local mechanism's per-row maps follow them
        request.params.local.first_row = 0;
        let mut options = *opts;
        options.part = Some(Part {
            shard: ShardRecord {
                index,
                count,
                first_row: self.first_row,
            },
            skip: self.rows.map_or(0, |r| r.0),
            take: self.rows.map(|(lo, hi)| hi - lo),
        });
        Ok(WorkerPlan { request, options })
    }

    /// The line that reports a written shard.
    pub fn report(&self, plan: &WorkerPlan, dir: &Path, rows: u64) -> String {
        format!(
            "shard {} of {}: wrote {} (rows {}..{}); when every shard is written, run `dprp \
             shards finish {}`",
            self.index,
            self.count,
            plan.request.output.display(),
            self.first_row,
            self.first_row + rows,
            dir.display()
        )
    }
}

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

/// Refuse a sharded release's directory that is a file or not empty.
fn check_output_dir(out: &Path) -> Result<()> {
    crate::atomic::check_dir_output(out)?;
    if out.is_file() {
        return Err(Error::param(
            field("output"),
            format!(
                "{} is a file; with {} the output is a directory",
                out.display(),
                field("shards")
            ),
        ));
    }
    if out.is_dir() {
        let mut entries = std::fs::read_dir(out).map_err(|e| Error::io(out, e))?;
        if entries.next().is_some() {
            return Err(Error::param(
                field("output"),
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

/// `publish --shards N`: the rows split into N contiguous ranges as even as possible (shard i gets
/// rows `⌊in/N⌋..⌊(i+1)n/N⌋`), each published as a shard with the global ids of its rows (a row's
/// noise stream and public map are those of its id, so the shards hold exactly the rows of the
/// one-file release), then the manifest; all written into a staging directory that becomes
/// `req.output` only when everything succeeded. Returns the outcome and the report line.
pub fn publish_split(
    req: &PublishRequest,
    noise: &NoiseSource,
    opts: &PublishOptions,
    count: u32,
    mut gate: Option<&mut Gate>,
) -> Result<(PublishOutcome, String)> {
    if count == 0 {
        return Err(Error::param(field("shards"), "at least one shard"));
    }
    check_output_dir(&req.output)?;
    if !std::fs::metadata(&req.input).is_ok_and(|m| m.is_file()) {
        return Err(Error::param(
            field("shards"),
            format!(
                "{} is not a regular file: {} reads its input once to count the rows and once \
                 per shard (save a pipe's rows to a file first)",
                req.input.display(),
                field("shards")
            ),
        ));
    }
    let (n, whole) = count_rows(req, gate.as_deref())?;
    if count as u64 > n {
        return Err(Error::param(
            field("shards"),
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
    let staging = StagingDir::create(&req.output, crate::atomic::Existing::Refuse)?;
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
        timings.add(&out.timings);
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
        "shards: {} of about {} in {}, with {MANIFEST} (the one-file release \
         split into files: the guarantee above is the whole release's)",
        super::count(count as u64, "file", "files"),
        super::count(per, "row", "rows"),
        req.output.display(),
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
