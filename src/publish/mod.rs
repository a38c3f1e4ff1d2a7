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
//! stream a row reads (`cli/tests/pipeline_noise.rs` checks every reader at odd chunk sizes).

mod chunks;
mod meta;
mod pipeline;
mod setup;

use std::path::PathBuf;

use crate::data::scale::{column_max_abs, Scaler, ScalingRequest};
use crate::data::{open_reader, Dataset, InputOptions, RowReader};
use crate::error::{Error, Result};
use crate::mechanism::{self, MechanismParams, Payload};
use crate::privacy::samplers::noise::NoiseSource;
use crate::release::{ReleaseMeta, ReleaseWriter};

pub use chunks::{
    first_row_after, privatise_dataset, privatise_dataset_at, privatise_real, Sketches,
    GROUP_BLOCKS, NORMALISED_MIN_NORM,
};

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
    /// Whether an existing regular file at the output is replaced (`--overwrite`); never a link,
    /// device, pipe, socket or directory.
    pub existing: crate::atomic::Existing,
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
            existing: crate::atomic::Existing::Refuse,
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
    // saturating: p and k come from the input and the options
    let scratch = match payload {
        Payload::F32 => 0,
        Payload::Bits => k.saturating_mul(4),
    };
    p.saturating_mul(4)
        .saturating_add(crate::release::row_bytes(payload, k))
        .saturating_mul(CHUNKS_IN_FLIGHT)
        .saturating_add(scratch)
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

/// Rows per chunk under `budget`: the most that fit, at most [`CHUNK_ROWS`], a multiple of
/// [`BLOCK_ROWS`] when a block fits (any count otherwise: each row draws from its own noise
/// stream, so a chunk of any size gives the same release), and at least one (a row that alone
/// exceeds the budget is refused before this is used: `setup::chunk_size`).
pub fn chunk_rows(p: usize, k: usize, payload: Payload, budget: usize) -> usize {
    let per_row = pipeline_row_bytes(p, k, payload).max(1);
    let fit = budget / per_row;
    if fit >= BLOCK_ROWS {
        (fit / BLOCK_ROWS * BLOCK_ROWS).min(CHUNK_ROWS)
    } else {
        fit.max(1)
    }
}

/// Description of the noise generator recorded in releases of Gaussian (real-valued) mechanisms.
pub const NOISE_GENERATOR: &str =
    "ChaCha20 (rand_chacha), one stream per row (stream id = row id); N(0,1) by ziggurat (rand_distr StandardNormal, f64)";

/// How the releases of dprp ≥ 0.2.0 describe their streams; the releases of the versions before
/// said "one stream per 256-row block" (see [`crate::release::advisory`]).
pub const ROW_STREAMS: &str = "ChaCha20 (rand_chacha), one stream per row (stream id = row id)";

/// The noise generator and sampler a mechanism actually uses with the floating-point sampler, as
/// recorded in its release ([`noise_generator_for`] with [`NoiseChoice::Float`]).
///
/// [`NoiseChoice::Float`]: crate::privacy::lattice::NoiseChoice::Float
pub fn noise_generator(kind: mechanism::MechanismKind) -> String {
    noise_generator_for(kind, crate::privacy::lattice::NoiseChoice::Float)
}

/// The noise generator and sampler a mechanism uses with the chosen noise, as recorded in its
/// release. Read from the kind's row of [`mechanism::kind::KIND_TABLE`] (local, signs, Gaussian
/// noise), not from a list of kinds: a new kind gets the description its properties imply, and
/// lattice noise replaces the normal sampler wherever the kind draws Gaussian noise.
pub fn noise_generator_for(
    kind: mechanism::MechanismKind,
    noise: crate::privacy::lattice::NoiseChoice,
) -> String {
    let stream = ROW_STREAMS;
    let props = kind.properties();
    let lattice = noise == crate::privacy::lattice::NoiseChoice::Lattice;
    if props.local {
        format!(
            "{stream}; N(0,1) by ziggurat (rand_distr \
             StandardNormal, f64), uniforms from 53-bit words, truncated normals and Beta cap \
             draws by inversion in log space"
        )
    } else if props.gaussian && props.signs {
        // individual DP with Gaussian noise on the noise set, then signs
        if lattice {
            format!(
                "{stream}; values in the noise set rounded onto γℤ, N_ℤ(0, s²) by the exact CKS sampler (integers only)"
            )
        } else {
            format!(
                "{stream}; N(0,1) by ziggurat (rand_distr StandardNormal, f64) on the noise set, a fair \
                 coin bit for values exactly 0"
            )
        }
    } else if props.gaussian {
        if lattice {
            format!(
                "{stream}; values rounded onto γℤ, N_ℤ(0, s²) by an integer guide-table sampler (no floating point on the sampling path)"
            )
        } else {
            NOISE_GENERATOR.to_string()
        }
    } else {
        // every other central kind publishes signs through exact coins
        format!(
            "{stream}; each flip is a uniform 64-bit word u < Q: probability exactly Q/2⁶⁴, Q computed \
             from ε' in exact integer arithmetic and rounded toward ½ (no floating point); Q in \
             the sign record"
        )
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
    publish_from_as(req, open, noise, opts, gate, None)
}

/// [`publish_from`] recording `dataset` as the release's dataset fingerprint instead of
/// fingerprinting its rows: a shard written by one task of a job whose driver fingerprinted the
/// whole dataset and reserved its budget ([`provisional_entry`]; `dprp.spark.publish`).
pub fn publish_from_as<'r>(
    req: &PublishRequest,
    open: &mut dyn FnMut() -> Result<Box<dyn RowReader + 'r>>,
    noise: &NoiseSource,
    opts: &PublishOptions,
    gate: Option<&mut crate::ledger::Gate>,
    dataset: Option<&crate::release::DatasetRecord>,
) -> Result<PublishOutcome> {
    let t_start = std::time::Instant::now();
    let mut times = StageTimes::default();
    let mut warnings = Warnings {
        sink: opts.on_warning,
        list: Vec::new(),
    };
    if noise.is_seeded() {
        warnings
            .push("‹noise_seed› makes the release reproducible and therefore NOT private".into());
    }
    crate::atomic::check_not_input(&req.input, &req.output)?;
    // before anything is read: an output that will not be written is refused now
    crate::atomic::check_file_output(&req.output, opts.existing)?;
    let first_row = opts.part.map_or(0, |part| part.shard.first_row);
    let mut open = || -> Result<Box<dyn RowReader + 'r>> {
        let r = open()?;
        Ok(match opts.part {
            Some(part) => Box::new(crate::data::source::Window::new(r, part.skip, part.take)),
            None => r,
        })
    };
    let reader = open()?;
    let (has_ids, input_format) = (reader.has_ids(), reader.format());
    // the ids the rows' noise streams and public maps come from: the shard's first row plus,
    // for a local mechanism's per-row maps, its own first row
    let id0 = first_row
        .checked_add(req.params.local.first_row)
        .ok_or_else(|| {
            Error::param(
                "‹first_row›",
                format!(
                    "{first_row} + {}: the row ids overflow 64 bits",
                    req.params.local.first_row
                ),
            )
        })?;
    setup::check_ids(reader.as_ref(), opts, id0)?;
    let p = reader.dim();
    // a first check of the rows' size before the map is made (k as asked; again with the
    // mechanism's own output width below)
    let payload = if req.params.kind.is_sign() {
        Payload::Bits
    } else {
        Payload::F32
    };
    setup::check_row_budget(p, req.params.k.unwrap_or(p), payload, opts.memory_budget)?;
    let (scaling, scaler, reader) =
        setup::scaling(req, reader, &mut open, first_row, &mut warnings)?;
    let params = setup::params(req, p, &scaling, &mut warnings)?;
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
    let preset = gate
        .as_deref()
        .and_then(|g| g.preset_dataset().cloned())
        .or_else(|| dataset.cloned());
    let fingerprint = gate
        .as_deref()
        .filter(|_| preset.is_none())
        .map(|g| g.key().fingerprinter(p));
    let (payload, k, has_labels) = (mech.payload(), mech.output_dim(), reader.has_labels());
    let shape = setup::Shape {
        p,
        k,
        payload,
        has_labels,
        rows: reader.rows_hint(),
    };
    let chunk = setup::chunk_size(&shape, opts, &req.output, &mut warnings)?;
    let writer = ReleaseWriter::create_as(
        &req.output,
        (opts.container, opts.existing),
        payload,
        k,
        has_labels,
        has_ids,
        first_row,
    )?;
    times.setup = t_start.elapsed().as_secs_f64();
    let pipeline = pipeline::Pipeline {
        mech: mech.as_ref(),
        scaler: (!scaler.steps.is_empty()).then_some(&scaler),
        noise,
        input: &req.input,
        chunk,
        first_row,
        has_ids,
    };
    let streamed = pipeline.run(reader, writer, fingerprint, &mut times)?;
    let t_finish = std::time::Instant::now();
    let writer = streamed.writer;
    if writer.rows() == 0 {
        return Err(Error::format(
            &req.input,
            "the input has no rows: nothing to publish",
        ));
    }
    writer.check_unique_ids(&req.input)?;
    let input = meta::InputFacts {
        p,
        scaling,
        labels: has_labels,
        ids: has_ids,
        dataset: streamed.dataset.or(preset),
        format: input_format,
    };
    let meta = meta::release_meta(
        mech.as_ref(),
        noise,
        opts,
        input,
        &streamed.histogram,
        &mut warnings,
    );
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

/// The ledger entry a publish of `req` over rows of `p` values would record, before any row is
/// read: its mechanism, guarantee and calibration as [`publish_from`] builds them (the input's
/// own recorded scaling taken as none, as an in-memory or Parquet input has). What a job of many
/// processes reserves in a ledger before its tasks run ([`crate::ledger::Gate::reserve`]); the
/// finished release is compared with it. Refused for `--scale max-abs`, whose factors come from
/// the rows.
pub fn provisional_entry(
    req: &PublishRequest,
    p: usize,
    noise: &NoiseSource,
    opts: &PublishOptions,
) -> Result<crate::ledger::Entry> {
    if req.scaling.needs_column_stats() {
        return Err(Error::param(
            "scale",
            "max-abs scales by the data's own column maxima, which a budget cannot be reserved \
             for before the rows are read: give a public scale (a number) or clip",
        ));
    }
    let scaler = Scaler::new(&req.scaling, None)?;
    let scaling = crate::data::scale::Scaling(scaler.steps.clone());
    let mut warnings = Warnings {
        sink: None,
        list: Vec::new(),
    };
    let params = setup::params(req, p, &scaling, &mut warnings)?;
    let mech = mechanism::build_with(&params, opts.noise)?;
    let mut e =
        crate::ledger::Entry::provisional(&mech.record(), &mech.guarantee(), !noise.is_seeded());
    e.scaling = scaling.describe();
    Ok(e)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanism::MechanismKind;
    use crate::privacy::lattice::NoiseChoice;

    /// Every kind's recorded noise description follows its table row, for both noise choices
    /// (the goldens hold the lattice default of all 20 kinds; this checks the float sampler too).
    #[test]
    fn each_kind_records_the_sampler_its_table_row_implies() {
        for kind in MechanismKind::all() {
            let p = kind.properties();
            let float = noise_generator_for(kind, NoiseChoice::Float);
            let lattice = noise_generator_for(kind, NoiseChoice::Lattice);
            assert_eq!(noise_generator(kind), float);
            let (f, l) = if p.local {
                ("truncated normals", "truncated normals")
            } else if p.gaussian && p.signs {
                ("on the noise set", "exact CKS sampler")
            } else if p.gaussian {
                ("ziggurat", "guide-table sampler")
            } else {
                (
                    "each flip is a uniform 64-bit word",
                    "each flip is a uniform 64-bit word",
                )
            };
            assert!(float.contains(f), "{}: {float}", kind.name());
            assert!(lattice.contains(l), "{}: {lattice}", kind.name());
            assert!(float.starts_with(ROW_STREAMS) && lattice.starts_with(ROW_STREAMS));
        }
        // power: the four descriptions differ, so a kind given another's would be caught
        let d: std::collections::BTreeSet<String> = MechanismKind::all()
            .map(|k| noise_generator_for(k, NoiseChoice::Float))
            .collect();
        assert_eq!(d.len(), 4);
        assert_eq!(NOISE_GENERATOR, noise_generator(MechanismKind::DpOporp));
    }
}
