use std::path::PathBuf;

use clap::Args;

use super::{InputArgs, ScaleArgs};
use crate::error::{Error, Result};
use crate::ledger::{Budget, Gate};
use crate::privacy::noise::NoiseSource;
use crate::projection::Seed;
use crate::publish::{publish_gated, publish_with, PublishOptions, PublishRequest};
use crate::request::{shards, Front, MechanismOptions};

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
    /// The id of the first row. With --shard: the global id of the shard's first row (a multiple
    /// of 256). Otherwise, for local mechanisms with per-row maps (projunit): so shards of users
    /// published under one seed get disjoint maps (default 0).
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
    /// Output release file.
    #[arg(short, long)]
    output: PathBuf,
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

pub fn run(a: PublishArgs) -> Result<()> {
    let plan = MechanismOptions {
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
    }
    .resolve(Front::Cli)?;
    let params = plan.params;
    let noise = match &a.noise_seed {
        Some(s) => NoiseSource::from_seed(s),
        None => NoiseSource::from_os()?,
    };
    let req = PublishRequest {
        input: a.input,
        input_opts: a.input_args.options()?,
        scaling: a.scale.request()?,
        params,
        output: a.output.clone(),
    };
    if a.memory == 0 {
        return Err(Error::param(
            "--memory",
            "the memory budget must be at least 1 MiB",
        ));
    }
    let opts = PublishOptions {
        memory_budget: a.memory.saturating_mul(1 << 20),
        on_warning: Some(|w| super::output::warn(w)),
        part: None,
        read_cap: None,
        space_rows: None,
        container: match &a.output_format {
            Some(f) => crate::release::Container::parse(f)?,
            None => crate::release::Container::from_path(&a.output),
        },
        noise: plan.noise,
    };
    let budget = a.budget.as_deref().map(Budget::parse).transpose()?;
    let mut gate = match (&a.ledger, budget) {
        (None, Some(_)) => {
            return Err(Error::missing(
                "--ledger",
                "--budget needs the ledger directory whose releases it counts (--ledger DIR)",
            ))
        }
        (None, None) => None,
        (Some(dir), budget) => Some(Gate::new(dir, budget, || {
            super::output::note(format_args!(
                "waiting for another publish on the ledger {} to finish…",
                dir.display()
            ))
        })?),
    };
    if gate.is_some() && a.shard.is_some() {
        return Err(Error::param(
            "--ledger",
            "a worker's shard (--shard i/N) cannot be recorded in a ledger: the worker sees only \
             its rows, while the ledger fingerprints the whole dataset and checks the budget under \
             one lock; publish with --shards N on one machine to record a sharded release, or \
             without --ledger",
        ));
    }
    let (out, shard_line) = match (a.shards, &a.shard) {
        (Some(n), _) => {
            let (o, l) = shards::publish_split(&req, &noise, &opts, n, gate.as_mut(), Front::Cli)?;
            (o, Some(l))
        }
        (None, Some(spec)) => {
            let (index, count) = super::shards::parse_shard(spec)?;
            let worker = shards::WorkerShard {
                index,
                count,
                first_row: a.first_row,
                rows: None,
            };
            let plan = worker.plan(&req, &opts, Front::Cli)?;
            let o = publish_with(&plan.request, &noise, &plan.options)?;
            let line = worker.report(&plan, &req.output, o.meta.n);
            (o, Some(line))
        }
        (None, None) => (publish_gated(&req, &noise, &opts, gate.as_mut())?, None),
    };
    let m = &out.meta;
    outln!(
        "published {}: {} rows, {} → {} {} per row with {}",
        a.output.display(),
        m.n,
        m.p,
        m.k,
        match m.payload {
            crate::mechanism::Payload::F32 => "values",
            crate::mechanism::Payload::Bits => "signs",
        },
        m.mechanism.name.name()
    )?;
    if let Some(s) = &m.mechanism.sign {
        outln!("signs: {}", s.describe())?;
    }
    if let Some(g) = &m.mechanism.gaussian {
        outln!(
            "noise: σ = {:.6} (Δ₂ = {:.6}, {})",
            g.sigma,
            g.sensitivity,
            g.method
        )?;
    }
    if let Some(method) = m.mechanism.noise_method() {
        outln!("noise method: {}", method.describe())?;
    }
    if let Some(l) = &m.mechanism.local {
        outln!(
            "constants: {}",
            super::info::describe_constants(&l.constants)
        )?;
        outln!(
            "expected squared error: E‖Z − v‖² = {:.6} per user ({}); dprp mean divides it by n",
            l.mse_per_user,
            l.mse_note
        )?;
    }
    outln!("guarantee: {}", m.statement)?;
    if let Some(line) = shard_line {
        outln!("{line}")?;
    }
    if a.timings {
        let t = &out.timings;
        outln!(
            "timings ({} thread(s), {} chunk(s)): set-up {:.3} s; reading {:.3} s (one thread); \
             privatising {:.3} s (all threads), waiting for rows {:.3} s, waiting for the writer \
             {:.3} s; writing {:.3} s (one thread); finishing {:.3} s; total {:.3} s",
            rayon::current_num_threads(),
            t.chunks,
            t.setup,
            t.read,
            t.privatise,
            t.wait_read,
            t.wait_write,
            t.write,
            t.finish,
            t.total
        )?;
    }
    if let (Some(g), Some(dir)) = (gate.as_ref(), &a.ledger) {
        if let Some(ad) = &g.admitted {
            let short = &ad.dataset.fingerprint[..16.min(ad.dataset.fingerprint.len())];
            outln!(
                "ledger: recorded in {} as a release of dataset {short}",
                dir.display()
            )?;
            if let (Some(t), Some(met), Some(b)) = (&ad.totals, &ad.met_by, budget) {
                outln!(
                    "budget: {} release(s) of this dataset, within {} by {met}",
                    t.releases,
                    b.label()
                )?;
            }
        }
    }
    Ok(())
}
