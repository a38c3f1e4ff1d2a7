use clap::Args;

use dprp::error::Result;
use dprp::request::calibrate::{report, CalibrateOptions};

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Privacy parameter ε > 0.
    #[arg(short, long, allow_negative_numbers = true)]
    epsilon: f64,
    /// Privacy parameter δ in (0, 1) (Gaussian mechanisms, dp-signrp-rr, idp-*-g).
    #[arg(short, long, allow_negative_numbers = true)]
    delta: Option<f64>,
    /// ℓ₂-sensitivity Δ₂ of the released vector (alternative to --mechanism).
    #[arg(long, allow_negative_numbers = true, conflicts_with = "mechanism")]
    sensitivity: Option<f64>,
    /// Mechanism whose sensitivity to compute (with --dim and optionally --k).
    #[arg(short, long, requires = "dim")]
    mechanism: Option<String>,
    /// Sketch width k (default: a table over 64..1024).
    #[arg(short, long)]
    k: Option<usize>,
    /// Input dimension p.
    #[arg(long)]
    dim: Option<usize>,
    /// Neighbour distance β.
    #[arg(short, long, default_value_t = 1.0, allow_negative_numbers = true)]
    beta: f64,
    /// Dense projection kind for dp-rp-g / dp-rp-g-opt.
    #[arg(long)]
    projection: Option<String>,
    /// Projection seed (Δ₂ of Gaussian projections depends on the draw).
    #[arg(long)]
    projection_seed: Option<String>,
    /// ‖u‖ of a typical pair, for the error estimate.
    #[arg(long, default_value_t = 1.0)]
    norm_u: f64,
    /// ‖v‖ of a typical pair.
    #[arg(long, default_value_t = 1.0)]
    norm_v: f64,
    /// Cosine of the pair.
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    cosine: f64,
    /// Public lower bound ν on row norms (dp-signrp-rr).
    #[arg(long, allow_negative_numbers = true)]
    min_norm: Option<f64>,
    /// Local mechanisms: number of users n, for the error of the mean (default: a table).
    #[arg(long)]
    users: Option<u64>,
    /// privunit2-norm: the norm's budget ε₂.
    #[arg(long, allow_negative_numbers = true)]
    epsilon_norm: Option<f64>,
    /// privunit2-norm: radius R of the input ball; scalar-dp: upper bound R of the values.
    #[arg(long, allow_negative_numbers = true)]
    radius: Option<f64>,
    /// Distributed mechanisms (ddg, sketch-ddg, binomial): ℓ₂ clip norm c of each client's vector.
    #[arg(long, allow_negative_numbers = true)]
    clip: Option<f64>,
    /// Distributed mechanisms: bits b per transmitted coordinate (M = 2^b).
    #[arg(long)]
    bits: Option<u32>,
    /// Distributed mechanisms: the largest acceptable bound on P(the modular sum wraps).
    #[arg(long, default_value_t = 1e-6)]
    max_wrap: f64,
    /// sketch-ddg: the most bits per input parameter (chooses the sketch size).
    #[arg(long)]
    bits_per_parameter: Option<f64>,
    /// Gaussian mechanisms: the noise to calibrate for, lattice (default; σ includes the
    /// lattice's rounding terms) or float, as `publish --noise`.
    #[arg(long, value_name = "lattice|float")]
    noise: Option<String>,
}

pub fn run(a: CalibrateArgs) -> Result<()> {
    let opts = CalibrateOptions {
        epsilon: a.epsilon,
        delta: a.delta,
        sensitivity: a.sensitivity,
        mechanism: a.mechanism,
        k: a.k,
        dim: a.dim,
        beta: a.beta,
        projection: a.projection,
        projection_seed: a.projection_seed,
        norm_u: a.norm_u,
        norm_v: a.norm_v,
        cosine: a.cosine,
        min_norm: a.min_norm,
        users: a.users,
        epsilon_norm: a.epsilon_norm,
        radius: a.radius,
        clip: a.clip,
        bits: a.bits,
        max_wrap: a.max_wrap,
        bits_per_parameter: a.bits_per_parameter,
        noise: a.noise,
    };
    for line in report(&opts)?.to_text() {
        outln!("{line}")?;
    }
    Ok(())
}
