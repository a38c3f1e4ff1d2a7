use std::path::PathBuf;

use clap::Args;

use super::{InputArgs, ScaleArgs};
use dprp::error::Result;
use dprp::request::publish::{
    Layout, LedgerOptions, PublishJob, PublishReport, PublishRequest, RunOptions,
};
use dprp::request::{shards, MechanismOptions, Seed};

#[derive(Debug, Args)]
pub struct PublishArgs {
    /// Input dataset (native .bin or any supported format).
    input: PathBuf,
    /// Mechanism. Sketches: raw-g-opt, dp-rp-g, dp-rp-g-opt, dp-oporp, dp-signrp-rr,
    /// dp-signrp-rr-smooth, dp-signoporp-rr, dp-signoporp-rr-smooth, idp-signrp-g, idp-signrp-rr,
    /// idp-signoporp-g, idp-signoporp-rr. Local DP (mean estimation): privunit2, duchi,
    /// privunitg, projunit, projunit-correlated, scalar-dp, privunit2-norm, privunit-inf.
    #[arg(short, long)]
    mechanism: String,
    /// Privacy parameter ε > 0.
    #[arg(short, long, allow_negative_numbers = true)]
    epsilon: f64,
    /// Privacy parameter δ in (0, 1) (Gaussian mechanisms).
    #[arg(short, long, allow_negative_numbers = true)]
    delta: Option<f64>,
    /// Neighbour distance β > 0 (sketch mechanisms; default 1).
    #[arg(short, long, allow_negative_numbers = true)]
    beta: Option<f64>,
    /// Neighbour relation of the sketch mechanisms: coordinate (one coordinate of one row changes
    /// by ≤ β; the default) or l1. Local mechanisms are always replace-one.
    #[arg(long)]
    neighbour: Option<String>,
    /// Number of projections (sketch width).
    #[arg(short, long)]
    k: Option<usize>,
    /// Dense projection: rademacher (default), gaussian, uniform or sparse:S. For projunit:
    /// srht (default), rotation, gaussian or srht-nearly-unbiased.
    #[arg(long)]
    projection: Option<String>,
    /// privunit2-norm: the norm's budget ε₂ (--epsilon is then the direction's ε₁).
    #[arg(long, allow_negative_numbers = true)]
    epsilon_norm: Option<f64>,
    /// privunit2-norm: public radius R of the input ball; scalar-dp: public upper bound R of the
    /// values (inputs in [0, R]).
    #[arg(long, allow_negative_numbers = true)]
    radius: Option<f64>,
    /// The id of the first row. With --shard: the global id of the shard's first row (any id:
    /// each row draws its noise from the stream of its own id, so the shard's rows are privatised
    /// as in the one-file release). Otherwise, for the local mechanisms (their rows' ids, and the
    /// per-row maps of projunit): so shards of users published under one seed get disjoint ids
    /// (default 0). Refused for the other mechanisms without --shard, and when the last row's id
    /// would pass 2^64 − 1.
    #[arg(long, default_value_t = 0)]
    first_row: u64,
    /// Write a sharded release: a directory (the --output) of N shard files and a manifest, the
    /// rows split into N contiguous ranges: the one-file release split into files, with its
    /// guarantee.
    #[arg(long, value_name = "N", conflicts_with = "shard")]
    shards: Option<u32>,
    /// Write shard i of N of a sharded release from this input alone (a worker), as
    /// OUTPUT/shard-i-of-N.dprp, its rows starting at global id --first-row; `dprp shards finish
    /// OUTPUT` writes the manifest once every shard is there.
    #[arg(long, value_name = "i/N")]
    shard: Option<String>,
    /// Public projection seed, up to 64 hex digits (default: fresh from the OS, recorded).
    #[arg(long)]
    projection_seed: Option<String>,
    /// Public lower bound ν on every row's ℓ₂ norm (dp-signrp-rr; rows below it are refused).
    /// With --normalize l2 it defaults to 1.
    #[arg(long, allow_negative_numbers = true)]
    min_norm: Option<f64>,
    /// Accept individual DP (idp-* mechanisms): it protects only the neighbours of this dataset.
    #[arg(long)]
    individual_dp: bool,
    /// Noise of the Gaussian mechanisms: lattice (default; a discrete Gaussian on a lattice,
    /// sampled with integers, safe against floating-point attacks) or float (the f64 sampler).
    #[arg(long, value_name = "lattice|float")]
    noise: Option<String>,
    /// Reproducible noise for experiments. THE RELEASE IS THEN NOT PRIVATE.
    #[arg(long)]
    noise_seed: Option<String>,
    /// Output release file (with --shards or --shard: the shard directory). An existing file is
    /// refused unless --overwrite; links, devices, pipes, sockets and directories always are.
    #[arg(short, long)]
    output: PathBuf,
    /// Replace an existing regular file at --output. The release that was there is then gone
    /// (if it was shared, its copies remain, and its budget stays spent in a --ledger). A shard
    /// directory is never replaced: publish into a new one.
    #[arg(long)]
    overwrite: bool,
    /// The release's file format: native (dprp's own, memory-mapped by readers) or parquet (the
    /// same release as columns id, label, sketch, with the metadata in the file's key-value
    /// metadata, for DuckDB, Spark, pandas). Default: parquet when --output ends in .parquet.
    #[arg(long, value_name = "native|parquet")]
    output_format: Option<String>,
    /// Memory budget for the pipeline's row buffers, in MiB (chunks of rows are sized to fit; the
    /// public projection matrix, p·k·4 bytes for dense maps, comes on top).
    #[arg(long, value_name = "MiB", default_value_t = 256)]
    memory: usize,
    /// Privacy budget ledger directory: fingerprint the dataset with the ledger's secret key
    /// (created in DIR/.dprp-ledger on first use), record the release there, and with --budget
    /// refuse to publish past the budget.
    #[arg(long, value_name = "DIR")]
    ledger: Option<PathBuf>,
    /// Total budget `ε` or `ε,δ` for all releases of this dataset in the --ledger (basic
    /// composition, or zCDP where every release is Gaussian or pure ε); needs --ledger.
    #[arg(long, value_name = "ε[,δ]", allow_negative_numbers = true)]
    budget: Option<String>,
    /// Print where the time went: set-up, reading, privatising, writing (with the waits between
    /// them) and finishing, to see which stage limits the run.
    #[arg(long)]
    timings: bool,
    #[command(flatten)]
    input_args: InputArgs,
    #[command(flatten)]
    scale: ScaleArgs,
}

/// The mechanism options as the flags give them (a worker's shard counts its rows from the
/// shard record, so its per-row maps start at 0).
fn mechanism_options(a: &PublishArgs) -> Result<MechanismOptions> {
    Ok(MechanismOptions {
        mechanism: a.mechanism.clone(),
        epsilon: a.epsilon,
        delta: a.delta,
        beta: a.beta,
        neighbour: a.neighbour.clone(),
        k: a.k,
        projection: a.projection.clone(),
        seed: a
            .projection_seed
            .as_deref()
            .map(Seed::parse_hex)
            .transpose()?,
        min_norm: a.min_norm,
        individual_dp: a.individual_dp,
        epsilon_norm: a.epsilon_norm,
        radius: a.radius,
        first_row: if a.shard.is_some() { 0 } else { a.first_row },
        noise: a.noise.clone(),
    })
}

pub fn run(a: PublishArgs) -> Result<()> {
    let plan = mechanism_options(&a)?.resolve()?;
    let (options, noise) = RunOptions {
        memory_mib: a.memory,
        output_format: a.output_format.clone(),
        noise_seed: a.noise_seed.clone(),
        overwrite: a.overwrite,
    }
    .resolve(&a.output, plan.noise, Some(|w| super::output::warn(w)))?;
    let layout = match (a.shards, &a.shard) {
        (Some(n), _) => Layout::Split(n),
        (None, Some(spec)) => {
            let (index, count) = super::shards::parse_shard(spec)?;
            Layout::Worker(shards::WorkerShard {
                index,
                count,
                first_row: a.first_row,
                rows: None,
            })
        }
        (None, None) => Layout::Whole,
    };
    let job = PublishJob {
        request: PublishRequest {
            input: a.input.clone(),
            input_opts: a.input_args.options()?,
            scaling: a.scale.request()?,
            params: plan.params,
            output: a.output.clone(),
        },
        noise,
        options,
        layout,
        ledger: LedgerOptions {
            dir: a.ledger.clone(),
            budget: a.budget.clone(),
        },
        dataset: None,
    };
    let on_wait = |dir: &std::path::Path| {
        super::output::note(format_args!(
            "waiting for another publish on the ledger {} to finish…",
            dir.display()
        ))
    };
    let done = job.run(None, on_wait)?;
    let report = PublishReport {
        outcome: &done.outcome,
        output: &a.output,
        shards: done.shards.clone(),
        timings: a.timings,
        ledger: match (&done.ledger, &a.ledger) {
            (Some((g, budget)), Some(dir)) => Some((g, dir.as_path(), *budget)),
            _ => None,
        },
    };
    super::output::report_written(&[&a.output], || {
        for line in report.to_text() {
            outln!("{line}")?;
        }
        Ok(())
    })
}
