//! The publishing pipeline: read → scale → validate → privatise → write, streamed in chunks.
//!
//! Memory stays bounded by a few chunks whatever the number of rows (plus 4–12 bytes per row for
//! labels and ids, which are written after the payload), and chunks are sized from a memory budget
//! ([`PublishOptions::memory_budget`], 256 MiB by default): wide sketches (large k) get fewer rows
//! per chunk. The public projection matrix (p·k·4 bytes for dense maps) comes on top. A reader thread decodes the input, the
//! calling thread privatises each chunk in parallel with rayon, and a writer thread hashes and
//! writes the payload.
//!
//! **A row's output depends on its content and its absolute row id only.** Row `r` draws its
//! secret noise from its own ChaCha20 stream ([`NoiseSource::row_rng`]`(r)`) and a mechanism with
//! per-row public maps uses the map of id `r`; the pipeline counts ids from the first row of the
//! release (or shard) whatever the sizes of the chunks a reader hands it, so chunking, the
//! memory budget, the thread count, shard boundaries and Parquet row groups cannot change which
//! stream a row reads (`tests/pipeline_noise.rs` checks every reader at odd chunk sizes).

use std::path::PathBuf;
use std::sync::mpsc::sync_channel;

use rayon::prelude::*;

use crate::data::scale::{
    check_finite, check_input_domain, column_max_abs, Scaler, ScalingRequest,
};
use crate::data::{open_reader, Dataset, InputOptions, RowReader, Scaling};
use crate::error::{Error, Result};
use crate::mechanism::{self, Mechanism, MechanismParams, Payload, SketchMut};
use crate::privacy::guarantee::GuaranteeKind;
use crate::privacy::noise::NoiseSource;
use crate::release::{now_rfc3339, NoiseRecord, ReleaseMeta, ReleaseWriter, VERSION};

/// Rows per unit of parallel work (and the granularity of chunk sizes). Only the work split
/// depends on it: the noise of a row is that of its id ([`NoiseSource::row_rng`]).
pub const BLOCK_ROWS: usize = 256;

/// Most rows per pipeline chunk (a multiple of [`BLOCK_ROWS`]); fewer when the memory budget
/// asks for it ([`chunk_rows`]), or when [`CHUNK_ROWS_ENV`] caps it for a test.
pub const CHUNK_ROWS: usize = 32 * BLOCK_ROWS;

/// Default memory budget of the publishing pipeline's row buffers: 256 MiB.
pub const DEFAULT_MEMORY_BUDGET: usize = 256 << 20;

/// Chunks alive at once on each side of the pipeline: two queued in each channel, one being read
/// or written, one being privatised.
const CHUNKS_IN_FLIGHT: usize = 4;

/// How a publish run uses the machine.
#[derive(Debug, Clone, Copy)]
pub struct PublishOptions {
    /// Bytes the pipeline's row buffers may take (input rows, privatised rows and per-row
    /// scratch, for every chunk in flight).
    pub memory_budget: usize,
    /// Where warnings go as soon as they arise (e.g. printed before a long run, rather than
    /// after it); `None` collects them in [`PublishOutcome::warnings`].
    pub on_warning: Option<fn(&str)>,
    /// The noise of the Gaussian mechanisms: lattice (default) or float (`--noise`).
    pub noise: crate::privacy::lattice::NoiseChoice,
    /// Publish only part of the input as one shard of a sharded release (`None`: all of it, one
    /// file).
    pub part: Option<Part>,
    /// The release's file format (`--output-format`): native (default) or Parquet.
    pub container: crate::release::Container,
    /// Most rows each read of the input asks for (`None`: as many as a chunk holds, or what
    /// [`CHUNK_ROWS_ENV`] says). A test hook: chunks of any size give the same release.
    pub read_cap: Option<usize>,
    /// Rows whose space the free-space check counts (`None`: this run's rows). The first shard
    /// of `publish --shards` counts every shard's rows, so the warning comes before the run.
    pub space_rows: Option<u64>,
}

/// The rows of one shard (see [`crate::release::shards`]): skip `skip` rows of the input, take
/// at most `take`, and give them the global ids `first_row, first_row + 1, …` — their noise
/// blocks and public per-row maps are those of these ids, so a shard's rows are privatised
/// exactly as in the one-file release of the whole input (same bytes under one noise key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// The shard's position and count.
    pub shard: crate::release::ShardRecord,
    /// Input rows to skip first.
    pub skip: u64,
    /// Most input rows to take (`None`: to the end).
    pub take: Option<u64>,
}

impl Default for PublishOptions {
    fn default() -> Self {
        PublishOptions {
            memory_budget: DEFAULT_MEMORY_BUDGET,
            on_warning: None,
            noise: crate::privacy::lattice::NoiseChoice::default(),
            part: None,
            container: crate::release::Container::Native,
            read_cap: None,
            space_rows: None,
        }
    }
}

/// Warnings of a run: passed on at once, or collected.
struct Warnings {
    sink: Option<fn(&str)>,
    list: Vec<String>,
}

impl Warnings {
    fn push(&mut self, w: String) {
        match self.sink {
            Some(f) => f(&w),
            None => self.list.push(w),
        }
    }
}

/// Bytes one row costs in the pipeline: its input values and its privatised output in every
/// chunk in flight, plus scratch (sign mechanisms project into f32 values before taking signs).
pub fn pipeline_row_bytes(p: usize, k: usize, payload: Payload) -> usize {
    let scratch = match payload {
        Payload::F32 => 0,
        Payload::Bits => 4 * k,
    };
    CHUNKS_IN_FLIGHT * (4 * p + crate::release::row_bytes(payload, k)) + scratch
}

/// Environment variable that caps the rows each pipeline read asks for (a test hook: it makes
/// every reader hand the pipeline chunks of an odd size, which must not change a single output
/// bit; unset in normal use).
pub const CHUNK_ROWS_ENV: &str = "DPRP_CHUNK_ROWS";

/// The cap [`CHUNK_ROWS_ENV`] sets, `usize::MAX` when unset.
fn chunk_cap() -> Result<usize> {
    match std::env::var(CHUNK_ROWS_ENV) {
        Err(_) => Ok(usize::MAX),
        Ok(v) => v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|&c| c > 0)
            .ok_or_else(|| {
                Error::param(
                    CHUNK_ROWS_ENV,
                    format!("must be a positive number of rows, got {v:?}"),
                )
            }),
    }
}

/// Rows per chunk under `budget`: the most that fit, a multiple of [`BLOCK_ROWS`], between one
/// block and [`CHUNK_ROWS`].
pub fn chunk_rows(p: usize, k: usize, payload: Payload, budget: usize) -> usize {
    let per_row = pipeline_row_bytes(p, k, payload).max(1);
    let fit = budget / per_row / BLOCK_ROWS * BLOCK_ROWS;
    fit.clamp(BLOCK_ROWS, CHUNK_ROWS)
}

/// Description of the noise generator recorded in releases of Gaussian (real-valued) mechanisms.
pub const NOISE_GENERATOR: &str =
    "ChaCha20 (rand_chacha), one stream per row (stream id = row id); N(0,1) by ziggurat (rand_distr StandardNormal, f64)";

/// How the releases of dprp ≥ 0.2.0 describe their streams; the releases of the versions before
/// said "one stream per 256-row block" (see [`crate::release::advisory`]).
pub const ROW_STREAMS: &str = "ChaCha20 (rand_chacha), one stream per row (stream id = row id)";

/// The noise generator and sampler a mechanism actually uses, as recorded in its release.
pub fn noise_generator(kind: mechanism::MechanismKind) -> String {
    use mechanism::MechanismKind as K;
    let stream = ROW_STREAMS;
    let flips = "each flip is a uniform 64-bit word u < Q: probability exactly Q/2⁶⁴, Q computed \
                 from ε' in exact integer arithmetic and rounded toward ½ (no floating point); Q in \
                 the sign record";
    match kind {
        K::IdpSignrpG | K::IdpSignoporpG => format!(
            "{stream}; N(0,1) by ziggurat (rand_distr StandardNormal, f64) on the noise set, a fair \
             coin bit for values exactly 0"
        ),
        k if k.is_sign() => format!("{stream}; {flips}"),
        k if k.is_local() => format!(
            "{stream}; N(0,1) by ziggurat (rand_distr \
             StandardNormal, f64), uniforms from 53-bit words, truncated normals and Beta cap \
             draws by inversion in log space"
        ),
        _ => NOISE_GENERATOR.to_string(),
    }
}

/// [`noise_generator`] for the chosen noise: lattice noise replaces the normal sampler of the
/// Gaussian mechanisms by the integer discrete Gaussian.
pub fn noise_generator_for(
    kind: mechanism::MechanismKind,
    noise: crate::privacy::lattice::NoiseChoice,
) -> String {
    use mechanism::MechanismKind as K;
    let stream = ROW_STREAMS;
    match (kind, noise) {
        (K::RawGOpt | K::DpRpG | K::DpRpGOpt | K::DpOporp, crate::privacy::lattice::NoiseChoice::Lattice) => format!(
            "{stream}; values rounded onto γℤ, N_ℤ(0, s²) by an integer guide-table sampler (no floating point on the sampling path)"
        ),
        (K::IdpSignrpG | K::IdpSignoporpG, crate::privacy::lattice::NoiseChoice::Lattice) => format!(
            "{stream}; values in the noise set rounded onto γℤ, N_ℤ(0, s²) by the exact CKS sampler (integers only)"
        ),
        _ => noise_generator(kind),
    }
}

/// A publish run.
#[derive(Debug, Clone)]
pub struct PublishRequest {
    /// Input file (any supported format).
    pub input: PathBuf,
    /// How to read it.
    pub input_opts: InputOptions,
    /// Explicit scaling to apply before publishing.
    pub scaling: ScalingRequest,
    /// Mechanism parameters (`p` is taken from the input).
    pub params: MechanismParams,
    /// Output release path.
    pub output: PathBuf,
}

/// What a publish run produced.
#[derive(Debug, Clone)]
pub struct PublishOutcome {
    /// The release's metadata.
    pub meta: ReleaseMeta,
    /// Warnings the user should see.
    pub warnings: Vec<String>,
    /// Where the time went, stage by stage (`publish --timings`).
    pub timings: StageTimes,
}

/// Wall-clock seconds each stage of the pipeline spent working or waiting, to find the stage
/// that limits a run (`publish --timings`; docs/performance.md, "Publishing on many cores"). The reader, the
/// privatisation and the writer overlap; `total` is the whole call.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StageTimes {
    /// Set-up before the first row: opening the input, the scaling pre-pass (`--scale max-abs`),
    /// building the mechanism (its public map) and creating the output.
    pub setup: f64,
    /// Reader thread: reading and decoding rows (one thread; includes decompression).
    pub read: f64,
    /// Privatisation thread pool: validating, scaling and privatising chunks (all threads).
    pub privatise: f64,
    /// The privatisation side waiting for rows from the reader (starved by the reader).
    pub wait_read: f64,
    /// The privatisation side waiting for the writer to take a chunk (held back by the writer).
    pub wait_write: f64,
    /// Writer thread: hashing and writing rows, including the write-behind to the device.
    pub write: f64,
    /// Finishing: ids, labels, metadata, header, the final `fsync` and the rename.
    pub finish: f64,
    /// The whole run.
    pub total: f64,
    /// Pipeline chunks.
    pub chunks: usize,
}

impl StageTimes {
    /// Add another run's times (the shards of one release).
    pub fn add(&mut self, o: &StageTimes) {
        self.setup += o.setup;
        self.read += o.read;
        self.privatise += o.privatise;
        self.wait_read += o.wait_read;
        self.wait_write += o.wait_write;
        self.write += o.write;
        self.finish += o.finish;
        self.total += o.total;
        self.chunks += o.chunks;
    }
}

/// Most blocks per parallel task: each task privatises up to `GROUP_BLOCKS·BLOCK_ROWS` rows
/// at once (fewer for small chunks, see `group_rows`).
pub const GROUP_BLOCKS: usize = 4;

/// Privatise real-valued rows whose first row has global id `first_row` into `out`
/// (`rows × output_dim`), in parallel, without validation (the caller has checked the domain).
/// Used by benchmarks to time the privatisation alone.
pub fn privatise_real(
    mech: &dyn Mechanism,
    rows: &[f32],
    first_row: u64,
    noise: &NoiseSource,
    out: &mut [f32],
) -> Result<()> {
    let (p, k) = (mech.input_dim(), mech.output_dim());
    let group = GROUP_BLOCKS * BLOCK_ROWS;
    rows.par_chunks(group * p)
        .zip(out.par_chunks_mut(group * k))
        .enumerate()
        .map(|(g, (r, o))| {
            let first = mechanism::row_id(first_row, g * group)?;
            mech.privatise_rows(r, SketchMut::Real(o), first, noise)
        })
        .collect::<Vec<Result<()>>>()
        .into_iter()
        .collect()
}

/// Rows per parallel task for a chunk of `rows` rows: [`GROUP_BLOCKS`] blocks, fewer when the
/// chunk is small (wide sketches) so that every thread still gets work. The output does not
/// depend on it: each row draws from its own stream, and each row's projection is computed on
/// its own.
fn group_rows(rows: usize) -> usize {
    let blocks = rows.div_ceil(BLOCK_ROWS);
    let per_thread = blocks / rayon::current_num_threads().max(1);
    per_thread.clamp(1, GROUP_BLOCKS) * BLOCK_ROWS
}

/// Privatised rows held in memory.
#[derive(Debug, Clone, PartialEq)]
pub enum Sketches {
    /// `n×k` values, row-major.
    Real(Vec<f32>),
    /// `n×⌈k/64⌉` words of packed signs.
    Bits(Vec<u64>),
}

/// A pipeline output buffer.
enum OutBuf {
    F32(Vec<f32>),
    Bits(Vec<u64>),
}

impl OutBuf {
    fn resize(&mut self, len: usize) {
        match self {
            OutBuf::F32(v) => v.resize(len, 0.0),
            OutBuf::Bits(v) => v.resize(len, 0),
        }
    }
}

/// Norm lower bound used when rows are l2-normalised and no --min-norm is given: 1 less a margin
/// for f32 rounding of the normalised rows.
pub const NORMALISED_MIN_NORM: f64 = 1.0 - 1e-5;

/// Refuse rows whose ℓ₂ norm is below the mechanism's public bound.
fn check_min_norm(
    values: &[f32],
    p: usize,
    first_row: u64,
    nu: f64,
    path: &std::path::Path,
) -> Result<()> {
    for (r, row) in values.chunks(p).enumerate() {
        let norm = row
            .iter()
            .map(|&v| (v as f64) * (v as f64))
            .sum::<f64>()
            .sqrt();
        if norm < nu {
            return Err(Error::Row {
                path: path.to_path_buf(),
                row: first_row + r as u64,
                msg: format!(
                    "its ℓ₂ norm {norm:.6} is below the public bound --min-norm {nu}; the N₊ \
                     calibration is valid only for rows at or above it (filter or rescale such rows, \
                     or lower --min-norm)"
                ),
            });
        }
    }
    Ok(())
}

/// Validate (scaling first when asked), then privatise one pipeline chunk, all in parallel groups,
/// recording per row how many outputs could be perturbed. The error reported is the first bad cell
/// in row order, whichever thread found it.
#[allow(clippy::too_many_arguments)]
fn process_chunk(
    mech: &dyn Mechanism,
    scaler: Option<&Scaler>,
    values: &mut [f32],
    first_row: u64,
    noise: &NoiseSource,
    out: &mut OutBuf,
    perturbed: &mut [u32],
    path: &std::path::Path,
) -> Result<()> {
    let p = mech.input_dim();
    let group = group_rows(values.len() / p.max(1));
    let per_row = match out {
        OutBuf::F32(_) => mech.output_dim(),
        OutBuf::Bits(_) => mech.output_dim().div_ceil(64),
    };
    let nu = mech.min_norm();
    let work = |g: usize, v: &mut [f32], o: SketchMut<'_>, c: &mut [u32]| -> Result<()> {
        // The group's first id: the chunk's first id plus the rows before it, whatever the
        // chunk's size or alignment (each row's noise and public map follow from its id).
        let r0 = mechanism::row_id(first_row, g * group)?;
        if let Some(s) = scaler {
            // Non-finite input is refused before any scaling (--clip must not turn inf into 1).
            check_finite(v, p, r0, path)?;
            s.apply(v, p);
        }
        check_input_domain(mech.input_domain(), v, p, r0, path)?;
        if let Some(nu) = nu {
            check_min_norm(v, p, r0, nu, path)?;
        }
        mech.privatise_rows_counted(v, o, r0, noise, c)
    };
    let results: Vec<Result<()>> = match out {
        OutBuf::F32(o) => values
            .par_chunks_mut(group * p)
            .zip(o.par_chunks_mut(group * per_row))
            .zip(perturbed.par_chunks_mut(group))
            .enumerate()
            .map(|(g, ((v, o), c))| work(g, v, SketchMut::Real(o), c))
            .collect(),
        OutBuf::Bits(o) => values
            .par_chunks_mut(group * p)
            .zip(o.par_chunks_mut(group * per_row))
            .zip(perturbed.par_chunks_mut(group))
            .enumerate()
            .map(|(g, ((v, o), c))| work(g, v, SketchMut::Bits(o), c))
            .collect(),
    };
    results.into_iter().collect()
}

fn payload_elem(p: Payload) -> usize {
    match p {
        Payload::F32 => 4,
        Payload::Bits => 8,
    }
}

/// Privatise a whole in-memory dataset with `mech` (used by evaluation and tests): exactly what
/// [`publish`] writes for the same noise key.
pub fn privatise_dataset(
    mech: &dyn Mechanism,
    data: &Dataset,
    noise: &NoiseSource,
) -> Result<Sketches> {
    privatise_dataset_at(mech, data, noise, 0)
}

/// [`privatise_dataset`] for rows whose global ids start at `first_row` (each row draws its noise
/// from the stream of its id and a local mechanism derives each row's public map from it, so rows
/// of another batch of users — e.g. the queries of a retrieval evaluation — get streams and maps
/// of their own when their ids follow the first batch's). Use [`first_row_after`] for the first id
/// after `n` rows.
pub fn privatise_dataset_at(
    mech: &dyn Mechanism,
    data: &Dataset,
    noise: &NoiseSource,
    first_row: u64,
) -> Result<Sketches> {
    if data.p != mech.input_dim() {
        return Err(Error::param(
            "input",
            format!(
                "data has {} features, the mechanism expects {}",
                data.p,
                mech.input_dim()
            ),
        ));
    }
    let mut values = data.values.clone();
    let mut out = match mech.payload() {
        Payload::F32 => OutBuf::F32(vec![0.0; data.n * mech.output_dim()]),
        Payload::Bits => OutBuf::Bits(vec![0; data.n * mech.output_dim().div_ceil(64)]),
    };
    let mut perturbed = vec![0u32; data.n];
    let path = std::path::Path::new("<in-memory dataset>");
    process_chunk(
        mech,
        None,
        &mut values,
        first_row,
        noise,
        &mut out,
        &mut perturbed,
        path,
    )?;
    Ok(match out {
        OutBuf::F32(v) => Sketches::Real(v),
        OutBuf::Bits(v) => Sketches::Bits(v),
    })
}

/// The first block boundary at or after `n` rows: where a second batch of rows starts (see
/// [`privatise_dataset_at`]; any id at or after `n` would do, a round one reads better).
pub fn first_row_after(n: usize) -> u64 {
    n.div_ceil(BLOCK_ROWS) as u64 * BLOCK_ROWS as u64
}

/// Rows, their labels and their explicit ids (empty unless the input has ids).
type Chunk = (Vec<f32>, Vec<f32>, Vec<u64>);

/// Run a publish request with noise from `noise` and the default [`PublishOptions`].
pub fn publish(req: &PublishRequest, noise: &NoiseSource) -> Result<PublishOutcome> {
    publish_with(req, noise, &PublishOptions::default())
}

/// Run a publish request with noise from `noise`.
pub fn publish_with(
    req: &PublishRequest,
    noise: &NoiseSource,
    opts: &PublishOptions,
) -> Result<PublishOutcome> {
    publish_gated(req, noise, opts, None)
}

/// [`publish_with`] under a privacy budget ledger ([`crate::ledger`]): the rows are fingerprinted
/// as they are read (before scaling) with the ledger's key, the fingerprint is recorded in the
/// release, and `gate` checks the budget before any data is read (the release alone) and again,
/// with the dataset's earlier releases, before the finished release is moved into place — a
/// refusal leaves no output file.
pub fn publish_gated(
    req: &PublishRequest,
    noise: &NoiseSource,
    opts: &PublishOptions,
    gate: Option<&mut crate::ledger::Gate>,
) -> Result<PublishOutcome> {
    let mut open = || open_reader(&req.input, &req.input_opts);
    publish_from(req, &mut open, noise, opts, gate)
}

/// [`publish_gated`] from rows that `open` supplies instead of the file `req.input` (which then
/// only names the input in messages and is checked not to be the output): an in-memory array (the
/// Python module's numpy input), or a reader that can be cancelled. `open` is called once, or
/// twice when the scaling needs column statistics (`--scale max-abs`), and must yield the same
/// rows each time. An error from the reader stops the run and leaves no output file.
pub fn publish_from<'r>(
    req: &PublishRequest,
    open: &mut dyn FnMut() -> Result<Box<dyn RowReader + 'r>>,
    noise: &NoiseSource,
    opts: &PublishOptions,
    gate: Option<&mut crate::ledger::Gate>,
) -> Result<PublishOutcome> {
    let t_start = std::time::Instant::now();
    let mut times = StageTimes::default();
    let mut warnings = Warnings {
        sink: opts.on_warning,
        list: Vec::new(),
    };
    if noise.is_seeded() {
        warnings
            .push("--noise-seed makes the release reproducible and therefore NOT private".into());
    }
    crate::atomic::check_not_input(&req.input, &req.output)?;
    let first_row = opts.part.map_or(0, |part| part.shard.first_row);
    let mut open = || -> Result<Box<dyn RowReader + 'r>> {
        let r = open()?;
        Ok(match opts.part {
            Some(part) => Box::new(crate::data::source::Window::new(r, part.skip, part.take)),
            None => r,
        })
    };
    let mut reader = open()?;
    let has_ids = reader.has_ids();
    let input_format = reader.format();
    if has_ids && opts.part.is_some() {
        return Err(Error::param(
            "--id-column",
            "a sharded release numbers its rows globally (shard first row + position); explicit \
             ids are stored only in a release in one file",
        ));
    }
    if let Some(n) = reader.rows_hint() {
        if first_row.checked_add(n).is_none() {
            return Err(Error::param(
                "--first-row",
                format!("{first_row} + {n} rows: the row ids overflow 64 bits"),
            ));
        }
    }
    let p = reader.dim();
    let mut scaling: Scaling = reader.scaling();
    let col_max = if req.scaling.needs_column_stats() {
        warnings.push(
            "--scale max-abs derives per-column factors from the data itself; those factors are not \
             covered by the privacy guarantee (prefer a public bound such as --scale 255 or --clip)"
                .to_string(),
        );
        let mut acc = vec![0f32; p];
        let mut buf = Vec::new();
        let mut lab = Vec::new();
        let mut row0 = first_row;
        loop {
            buf.clear();
            lab.clear();
            let got = reader.read_chunk(CHUNK_ROWS, &mut buf, &mut lab)?;
            if got == 0 {
                break;
            }
            check_finite(&buf, p, row0, &req.input)?;
            column_max_abs(&buf, p, &mut acc);
            row0 += got as u64;
        }
        reader = open()?;
        Some(acc)
    } else {
        None
    };
    let scaler = Scaler::new(&req.scaling, col_max.as_deref())?;
    scaling.0.extend(scaler.steps.iter().cloned());
    if scaling.data_dependent() && col_max.is_none() {
        warnings.push(format!(
            "{}: the input was scaled with data-dependent factors (max-abs) when it was converted; \
             those factors are not covered by the privacy guarantee",
            req.input.display()
        ));
    }

    let mut params = req.params.clone();
    params.p = p;
    if params.delta.is_some() && !params.kind.needs_delta() {
        warnings.push(format!(
            "{} gives pure ε-{}: --delta is not used",
            params.kind.name(),
            params.kind.guarantee_kind().short()
        ));
    }
    if params.kind.needs_min_norm() && scaling.unit_norm() {
        // l2-normalised rows have norm 1 up to f32 rounding (each value is rounded once, a
        // relative error of at most 2⁻²⁴ in the norm), so a bound "within rounding of 1" is
        // taken as NORMALISED_MIN_NORM: rows are accepted, and the calibration uses the smaller
        // bound, which only makes N₊ larger (more noise).
        match params.min_norm {
            None => params.min_norm = Some(NORMALISED_MIN_NORM),
            Some(nu) if nu > NORMALISED_MIN_NORM && nu <= 1.0 => {
                warnings.push(format!(
                    "the rows are l2-normalised, so their computed norms are 1 only up to \
                     f32 rounding; --min-norm {nu} is taken as {NORMALISED_MIN_NORM} (the \
                     calibration uses that bound: slightly more noise, the same guarantee)"
                ));
                params.min_norm = Some(NORMALISED_MIN_NORM);
            }
            Some(nu) if nu > 1.0 => {
                return Err(Error::param(
                    "--min-norm",
                    format!(
                        "{nu} is above 1, but --normalize l2 gives every row norm 1: every row \
                         would be refused"
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    let mech = mechanism::build_with(&params, opts.noise)?;
    if let Some(g) = gate.as_deref() {
        g.precheck(&crate::ledger::Entry::provisional(
            &mech.record(),
            &mech.guarantee(),
            !noise.is_seeded(),
        ))?;
    }
    // A shard of `publish --shards N --ledger` records the whole dataset's fingerprint, made
    // beforehand; otherwise the rows are fingerprinted as they are read.
    let preset = gate.as_deref().and_then(|g| g.preset_dataset().cloned());
    let mut fingerprint = gate
        .as_deref()
        .filter(|_| preset.is_none())
        .map(|g| g.key().fingerprinter(p));
    let payload = mech.payload();
    let k = mech.output_dim();
    let has_labels = reader.has_labels();
    let cap = match opts.read_cap {
        Some(c) => c.max(1),
        None => chunk_cap()?,
    };
    let chunk = chunk_rows(p, k, payload, opts.memory_budget).min(cap);
    let in_flight = chunk * pipeline_row_bytes(p, k, payload);
    if in_flight > opts.memory_budget {
        warnings.push(format!(
            "at p = {p}, k = {k} one {BLOCK_ROWS}-row chunk needs about {} MiB of buffers \
             in flight, above the memory budget of {} MiB; publishing with that",
            in_flight >> 20,
            opts.memory_budget >> 20
        ));
    }
    if let Some(n) = opts.space_rows.or(reader.rows_hint()) {
        let size = crate::release::HEADER_LEN as u64
            + n * (crate::release::row_bytes(payload, k) as u64 + if has_labels { 4 } else { 0 });
        if let Some(free) = crate::atomic::free_space(&req.output) {
            if size > free {
                warnings.push(format!(
                    "the release will take about {} and the file system of {} has {} free; \
                     publishing may fail for lack of space",
                    human_bytes(size),
                    req.output.display(),
                    human_bytes(free)
                ));
            }
        }
    }
    let mut writer = ReleaseWriter::create_as(
        &req.output,
        opts.container,
        payload,
        k,
        has_labels,
        has_ids,
        first_row,
    )?;
    let mut histogram = vec![0u64; k + 1];
    times.setup = t_start.elapsed().as_secs_f64();

    let input_path = req.input.clone();
    let mech_ref: &dyn Mechanism = mech.as_ref();
    let scaler_opt = (!scaler.steps.is_empty()).then_some(&scaler);
    let result: Result<(ReleaseWriter, _)> = std::thread::scope(|s| {
        // Buffers travel reader → main → writer and back, so steady state allocates nothing.
        let (tx, rx) = sync_channel::<Result<Chunk>>(2);
        let (in_pool_tx, in_pool_rx) = std::sync::mpsc::channel::<Vec<f32>>();
        let (out_pool_tx, out_pool_rx) = std::sync::mpsc::channel::<OutBuf>();
        let mut reader = reader;
        let mut fp = fingerprint.take();
        let rh = s.spawn(move || {
            let mut busy = 0.0;
            loop {
                let t = std::time::Instant::now();
                let mut v = in_pool_rx
                    .try_recv()
                    .unwrap_or_else(|_| Vec::with_capacity(chunk * p));
                v.clear();
                let mut l = Vec::new();
                let mut ids = Vec::new();
                // The fingerprint hashes the rows as read, before any scaling.
                let read = reader
                    .read_rows(chunk, &mut v, &mut l, &mut ids)
                    .and_then(|got| {
                        // A reader (or a wrapper) that says it has ids must give one per row.
                        if has_ids && ids.len() != got {
                            return Err(Error::param(
                                "input",
                                format!("the reader gave {} ids for {got} rows", ids.len()),
                            ));
                        }
                        Ok(got)
                    })
                    .and_then(|got| match fp.as_mut() {
                        Some(f) if got > 0 => f.update(&v).map(|()| got),
                        _ => Ok(got),
                    });
                busy += t.elapsed().as_secs_f64();
                match read {
                    Ok(0) => break,
                    Ok(_) => {
                        if tx.send(Ok((v, l, ids))).is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        break;
                    }
                }
            }
            (fp.map(|f| f.finish()), busy)
        });
        let (wtx, wrx) = sync_channel::<(OutBuf, Vec<f32>, Vec<u64>)>(2);
        let wh = s.spawn(move || -> Result<(ReleaseWriter, f64)> {
            let mut busy = 0.0;
            for (out, labels, ids) in wrx {
                let t = std::time::Instant::now();
                match &out {
                    OutBuf::F32(v) => writer.write_f32(v, &labels, &ids)?,
                    OutBuf::Bits(v) => writer.write_bits(v, &labels, &ids)?,
                }
                busy += t.elapsed().as_secs_f64();
                let _ = out_pool_tx.send(out);
            }
            Ok((writer, busy))
        });
        let mut perturbed = Vec::new();
        let hist = &mut histogram;
        let mut row0 = first_row;
        let mut failure = None;
        let (mut busy, mut wait_read, mut wait_write, mut chunks) = (0.0, 0.0, 0.0, 0);
        let mut t = std::time::Instant::now();
        for msg in rx {
            wait_read += t.elapsed().as_secs_f64();
            t = std::time::Instant::now();
            let (mut v, l, ids) = match msg {
                Ok(c) => c,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            };
            let rows = v.len() / p;
            let mut out = out_pool_rx.try_recv().unwrap_or_else(|_| match payload {
                Payload::F32 => OutBuf::F32(Vec::new()),
                Payload::Bits => OutBuf::Bits(Vec::new()),
            });
            out.resize(rows * crate::release::row_bytes(payload, k) / payload_elem(payload));
            perturbed.resize(rows, 0);
            if let Err(e) = process_chunk(
                mech_ref,
                scaler_opt,
                &mut v,
                row0,
                noise,
                &mut out,
                &mut perturbed,
                &input_path,
            ) {
                failure = Some(e);
                break;
            }
            for &c in &perturbed {
                hist[(c as usize).min(k)] += 1;
            }
            let _ = in_pool_tx.send(v);
            row0 = match mechanism::row_id(row0, rows) {
                Ok(r) => r,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            };
            chunks += 1;
            busy += t.elapsed().as_secs_f64();
            t = std::time::Instant::now();
            if wtx.send((out, l, ids)).is_err() {
                break; // the writer failed; its error is reported below
            }
            wait_write += t.elapsed().as_secs_f64();
            t = std::time::Instant::now();
        }
        drop(wtx);
        let w = wh
            .join()
            .map_err(|_| Error::param("output", "the writer thread panicked"))?;
        let (dataset, read_busy) = rh
            .join()
            .map_err(|_| Error::param("input", "the reader thread panicked"))?;
        times.read = read_busy;
        times.privatise = busy;
        times.wait_read = wait_read;
        times.wait_write = wait_write;
        times.chunks = chunks;
        match failure {
            Some(e) => Err(e),
            None => w.map(|(w, write_busy)| {
                times.write = write_busy;
                (w, dataset)
            }),
        }
    });
    let (writer, dataset) = result?;
    let dataset = dataset.or(preset);
    let t_finish = std::time::Instant::now();
    if writer.rows() == 0 {
        return Err(Error::format(
            &req.input,
            "the input has no rows: nothing to publish",
        ));
    }
    writer.check_unique_ids(&req.input)?;
    let guarantee = mech.guarantee();
    let private = !noise.is_seeded();
    let mut statement = guarantee.sentence();
    if !private {
        statement = format!(
            "NOT PRIVATE: the noise was drawn from a user-supplied --noise-seed and can be \
             reproduced by anyone who knows it. Had it come from the OS, the guarantee would be: {statement}"
        );
    }
    if let (GuaranteeKind::ApproxDp, Some(cal)) = (guarantee.kind, mech.record().gaussian.as_ref())
    {
        if cal.method.starts_with("classical") && !cal.classical_proven {
            warnings.push(format!(
                "the classical Gaussian σ (Theorem 3.1) is proven only for ε < 1; at ε = {} it \
                 achieves δ = {:e} (exact, Balle & Wang), which is what the release states; prefer \
                 dp-rp-g-opt (analytic σ = {:.4} vs classical {:.4})",
                guarantee.epsilon,
                guarantee.delta.unwrap_or(0.0),
                cal.sigma_analytic,
                cal.sigma_classical
            ));
        }
    }
    let mut record = mech.record();
    if let Some(sign) = record.sign.as_mut() {
        use crate::mechanism::central::sign_sketch::{FlipRule, SetSummary};
        match sign.rule {
            FlipRule::RandomisedResponse {
                flip_probability, ..
            } if flip_probability >= 0.499 => warnings.push(format!(
                "every sign is flipped with probability {flip_probability:.4} ≥ 0.499: the release \
                 carries almost no signal (raise ε or lower k)"
            )),
            FlipRule::SmoothFlipping { eps_prime }
                if crate::privacy::rr::rr_flip_probability(eps_prime) >= 0.499 =>
            {
                warnings.push(format!(
                    "ε' = {eps_prime:.2e} per sign: signs one step from zero are flipped with \
                     probability ≥ 0.499, so only rows far from every hyperplane keep signal"
                ))
            }
            _ => {}
        }
        if params.kind.is_idp() {
            sign.noise_set = SetSummary::from_histogram(&histogram);
        }
    }
    let meta = ReleaseMeta {
        format_version: VERSION,
        tool: format!("dprp {}", env!("CARGO_PKG_VERSION")),
        created: now_rfc3339(),
        n: 0,
        p,
        k,
        payload,
        mechanism: record,
        guarantee,
        private,
        statement,
        noise: NoiseRecord {
            source: if private {
                "os-csprng".into()
            } else {
                "user-seed (NOT PRIVATE)".into()
            },
            generator: noise_generator_for(params.kind, opts.noise),
        },
        scaling,
        labels: has_labels,
        ids: has_ids,
        dataset,
        shard: opts.part.map(|p| p.shard),
        input_format: Some(input_format),
    };
    let meta = match gate {
        Some(g) => writer.finish_gated(meta, |m, sum| g.admit(&req.output, m, sum))?,
        None => writer.finish(meta)?,
    };
    times.finish = t_finish.elapsed().as_secs_f64();
    times.total = t_start.elapsed().as_secs_f64();
    Ok(PublishOutcome {
        meta,
        warnings: warnings.list,
        timings: times,
    })
}

/// `1.5 GiB`, `300 MiB`, `12 KiB`.
pub fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.0} MiB", b / (1u64 << 20) as f64)
    } else {
        format!("{:.0} KiB", b / 1024.0)
    }
}

/// Convenience: read, scale and validate a whole input into memory (for `convert`, evaluation).
pub fn load_scaled(
    path: &std::path::Path,
    opts: &InputOptions,
    req: &ScalingRequest,
) -> Result<Dataset> {
    let mut data = crate::data::read_all(path, opts)?;
    let col = if req.needs_column_stats() {
        let mut acc = vec![0f32; data.p];
        column_max_abs(&data.values, data.p, &mut acc);
        Some(acc)
    } else {
        None
    };
    let scaler = Scaler::new(req, col.as_deref())?;
    scaler.apply(&mut data.values, data.p);
    data.scaling.0.extend(scaler.steps.iter().cloned());
    Ok(data)
}

#[allow(dead_code)]
fn _assert_reader_send(r: Box<dyn RowReader>) -> Box<dyn RowReader + Send> {
    r
}
