use std::path::PathBuf;

use clap::Args;

use super::{InputArgs, ScaleArgs};
use crate::error::Result;
use crate::mechanism::{MechanismKind, MechanismParams};
use crate::privacy::guarantee::Neighbour;
use crate::privacy::noise::NoiseSource;
use crate::projection::{DenseKind, Seed};
use crate::publish::{publish_with, PublishOptions, PublishRequest};

#[derive(Debug, Args)]
pub struct PublishArgs {
    /// Input dataset (native .bin or any supported format).
    input: PathBuf,
    /// Mechanism: raw-g-opt, dp-rp-g, dp-rp-g-opt, dp-oporp, dp-signrp-rr, dp-signrp-rr-smooth,
    /// dp-signoporp-rr, dp-signoporp-rr-smooth, idp-signrp-g, idp-signrp-rr, idp-signoporp-g,
    /// idp-signoporp-rr.
    #[arg(short, long)]
    mechanism: String,
    /// Privacy parameter ε > 0.
    #[arg(short, long, allow_negative_numbers = true)]
    epsilon: f64,
    /// Privacy parameter δ in (0, 1) (Gaussian mechanisms).
    #[arg(short, long, allow_negative_numbers = true)]
    delta: Option<f64>,
    /// Neighbour distance β > 0.
    #[arg(short, long, default_value_t = 1.0, allow_negative_numbers = true)]
    beta: f64,
    /// Neighbour relation: coordinate (one coordinate of one row changes by ≤ β) or l1.
    #[arg(long, default_value = "coordinate")]
    neighbour: String,
    /// Number of projections (sketch width).
    #[arg(short, long)]
    k: Option<usize>,
    /// Dense projection: rademacher (default), gaussian, uniform or sparse:S.
    #[arg(long)]
    projection: Option<String>,
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
    /// Reproducible noise for experiments. THE RELEASE IS THEN NOT PRIVATE.
    #[arg(long)]
    noise_seed: Option<String>,
    /// Output release file.
    #[arg(short, long)]
    output: PathBuf,
    /// Memory budget for the pipeline's row buffers, in MiB (chunks of rows are sized to fit; the
    /// public projection matrix, p·k·4 bytes for dense maps, comes on top).
    #[arg(long, value_name = "MiB", default_value_t = 256)]
    memory: usize,
    #[command(flatten)]
    input_args: InputArgs,
    #[command(flatten)]
    scale: ScaleArgs,
}

pub fn run(a: PublishArgs) -> Result<()> {
    let params = MechanismParams {
        kind: MechanismKind::parse(&a.mechanism)?,
        epsilon: a.epsilon,
        delta: a.delta,
        beta: a.beta,
        neighbour: Neighbour::parse(&a.neighbour)?,
        p: 0,
        k: a.k,
        projection: a.projection.as_deref().map(DenseKind::parse).transpose()?,
        seed: a
            .projection_seed
            .as_deref()
            .map(Seed::parse_hex)
            .transpose()?,
        min_norm: a.min_norm,
        individual_dp: a.individual_dp,
    };
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
        return Err(crate::error::Error::param(
            "--memory",
            "the memory budget must be at least 1 MiB",
        ));
    }
    let opts = PublishOptions {
        memory_budget: a.memory.saturating_mul(1 << 20),
        on_warning: Some(|w| super::output::warn(w)),
    };
    let out = publish_with(&req, &noise, &opts)?;
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
    outln!("guarantee: {}", m.statement)?;
    Ok(())
}
