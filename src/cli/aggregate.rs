//! `dprp aggregate`: run one secure-aggregation round over client vectors — each client encodes
//! its vector with the distributed discrete Gaussian, masks it with pairwise one-time pads in
//! `Z_M`, the server sums mod `M`, unmasks by cancellation and decodes the private mean.

use std::path::PathBuf;

use clap::Args;

use super::mean::{out_kind, write_mean};
use super::InputArgs;
use crate::atomic::check_not_input;
use crate::data::synthetic::SyntheticRows;
use crate::data::{open_reader, RowReader};
use crate::error::{Error, Result};
use crate::mechanism::distributed::accountant::params::{DdgPlan, DistributedRequest};
use crate::mechanism::distributed::round::{run_round, RoundReport};
use crate::mechanism::distributed::secagg::SecAggRound;
use crate::mechanism::distributed::{
    plan_encoder, DistributedGuarantee, DistributedKind, PlanDetail,
};
use crate::privacy::noise::NoiseSource;
use crate::projection::Seed;

#[derive(Debug, Args)]
pub struct AggregateArgs {
    /// Client vectors, one row per client, in any supported input format.
    input: Option<PathBuf>,
    #[command(flatten)]
    input_args: InputArgs,
    /// Synthetic clients instead of a file: `N,D` (v_i = normalise(μ + N(0, I/D)), μ random).
    #[arg(long, value_name = "N,D")]
    synthetic: Option<String>,
    /// The encoder: ddg (the distributed discrete Gaussian), sketch-ddg (a count sketch to m
    /// dimensions, then ddg) or binomial (cpSGD's π_sk).
    #[arg(long, short = 'm', default_value = "ddg")]
    mechanism: String,
    /// sketch-ddg: the most bits per input parameter a client may send (chooses the sketch size
    /// m; default: the m with the least expected error).
    #[arg(long)]
    bits_per_parameter: Option<f64>,
    /// ε of the (ε, δ)-DP guarantee of the sum.
    #[arg(long, short = 'e', allow_negative_numbers = true)]
    epsilon: f64,
    /// δ of the guarantee.
    #[arg(long, allow_negative_numbers = true)]
    delta: f64,
    /// ℓ₂ clip norm c of each client's vector.
    #[arg(long, allow_negative_numbers = true)]
    clip: f64,
    /// Bits per transmitted coordinate b (the sum is taken mod M = 2^b).
    #[arg(long, default_value_t = 16)]
    bits: u32,
    /// Largest acceptable bound on the probability that the modular sum wraps.
    #[arg(long, default_value_t = 1e-6)]
    max_wrap: f64,
    /// Public seed (hex) of the rotation (default: fresh from the OS; printed).
    #[arg(long)]
    seed: Option<String>,
    /// Write the private mean: .npy (float64) or .csv.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Also compute, from the raw vectors (not private), the error of the private mean and
    /// whether the modular sum wrapped.
    #[arg(long)]
    check: bool,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

/// `(n, d)` of `--synthetic N,D`.
fn parse_synthetic(s: &str) -> Result<(u64, usize)> {
    let bad = || {
        Error::param(
            "--synthetic",
            format!("'{s}' is not N,D (the number of clients and the dimension, e.g. 1000,100000)"),
        )
    };
    let (a, b) = s.split_once(',').ok_or_else(bad)?;
    let n: u64 = a.trim().parse().map_err(|_| bad())?;
    let d: usize = b.trim().parse().map_err(|_| bad())?;
    if n == 0 || d == 0 {
        return Err(Error::param(
            "--synthetic",
            format!("needs at least one client and one dimension, got {s}"),
        ));
    }
    Ok((n, d))
}

/// Clients of a file: the reader and their number (counted in a first pass when the format does
/// not say).
fn open_clients(path: &std::path::Path, args: &InputArgs) -> Result<(Box<dyn RowReader>, u64)> {
    let opts = args.options()?;
    let mut r = open_reader(path, &opts)?;
    let n = match r.rows_hint() {
        Some(n) => n,
        None => {
            let (mut v, mut l) = (Vec::new(), Vec::new());
            let mut n = 0u64;
            loop {
                v.clear();
                l.clear();
                let got = r.read_chunk(4096, &mut v, &mut l)?;
                if got == 0 {
                    break;
                }
                n += got as u64;
            }
            r = open_reader(path, &opts)?;
            n
        }
    };
    if n == 0 {
        return Err(Error::format(path, "no client vectors (0 rows)"));
    }
    Ok((r, n))
}

pub fn run(a: AggregateArgs) -> Result<()> {
    let (sketch, binomial) = match a.mechanism.to_ascii_lowercase().as_str() {
        "ddg" => (false, false),
        "sketch-ddg" => (true, false),
        "binomial" => (false, true),
        o => {
            return Err(Error::param(
                "--mechanism",
                format!(
                    "'{o}' is not an aggregation encoder (expected ddg, sketch-ddg or binomial)"
                ),
            ))
        }
    };
    if a.bits_per_parameter.is_some() && !sketch {
        return Err(Error::param(
            "--bits-per-parameter",
            "applies to sketch-ddg only (ddg and binomial send b bits per rotated coordinate)",
        ));
    }
    let kind = a.output.as_deref().map(out_kind).transpose()?;
    let (mut reader, n): (Box<dyn RowReader>, u64) = match (&a.input, &a.synthetic) {
        (Some(_), Some(_)) => {
            return Err(Error::param(
                "--synthetic",
                "give either an input file or --synthetic N,D, not both",
            ))
        }
        (None, None) => {
            return Err(Error::missing(
                "input",
                "give the client vectors (a file, one row per client) or --synthetic N,D",
            ))
        }
        (None, Some(s)) => {
            let (n, d) = parse_synthetic(s)?;
            crate::mechanism::distributed::round::check_round_memory(d, "--synthetic")?;
            let data_seed = Seed::random()?;
            (Box::new(SyntheticRows::new(n, d, data_seed)?), n)
        }
        (Some(p), None) => {
            if let Some(out) = &a.output {
                check_not_input(p, out)?;
            }
            open_clients(p, &a.input_args)?
        }
    };
    let d = reader.dim();
    crate::mechanism::distributed::round::check_round_memory(d, "input")?;
    if binomial {
        return run_binomial(&a, reader.as_mut(), n, kind);
    }
    let req = DistributedRequest {
        n,
        d: d as u64,
        epsilon: a.epsilon,
        delta: a.delta,
        clip: a.clip,
        bits: a.bits,
        max_wrap_probability: a.max_wrap,
    };
    let seed = match &a.seed {
        Some(s) => Seed::parse_hex(s)?,
        None => Seed::random()?,
    };
    let dk = if sketch {
        DistributedKind::SketchDdg
    } else {
        DistributedKind::Ddg
    };
    let planned = plan_encoder(dk, &req, a.bits_per_parameter, seed)?;
    let (plan, sketch_m) = match planned.plan {
        PlanDetail::SketchDdg(sp) => (sp.ddg, Some(sp.m)),
        PlanDetail::Ddg(p) => (p, None),
        PlanDetail::Binomial(_) => {
            return Err(Error::param("--mechanism", "a DDG plan was expected"))
        }
    };
    let encoder = planned.encoder;
    let secagg = SecAggRound::with_os_secret(n, encoder.message_len(), encoder.modulus())?;
    let noise = NoiseSource::from_os()?;
    let started = std::time::Instant::now();
    let rep = run_round(encoder.as_ref(), reader.as_mut(), &secagg, &noise, a.check)?;
    let seconds = started.elapsed().as_secs_f64();
    if let (Some(path), Some(kind)) = (&a.output, kind) {
        write_mean(path, kind, &rep.mean)?;
    }
    if a.json {
        print_json(&a, &plan, sketch_m, &rep, seed, seconds)
    } else {
        print_text(&a, &plan, sketch_m, &rep, seed, seconds, d)
    }
}

fn print_text(
    a: &AggregateArgs,
    plan: &DdgPlan,
    sketch_m: Option<u64>,
    rep: &RoundReport,
    seed: Seed,
    seconds: f64,
    d: usize,
) -> Result<()> {
    match sketch_m {
        None => outln!(
            "secure aggregation round: {} clients, d = {d} (rotated to d' = {}), ddg, M = 2^{}",
            rep.clients,
            plan.d_rot,
            a.bits
        )?,
        Some(m) => outln!(
            "secure aggregation round: {} clients, d = {d} sketched to m = {m} (count sketch, \
             t = 1), sketch-ddg, M = 2^{}",
            rep.clients,
            a.bits
        )?,
    }
    outln!(
        "guarantee: {}",
        DistributedGuarantee::of_ddg(plan).statement(rep.clients)
    )?;
    outln!(
        "parameters: γ = {:.6e}, σ = {:.6e} per client (integer noise N_Z(0, {})), β = {:.4e}, \
         public seed {} (rotation, sketch)",
        plan.gamma,
        plan.sigma,
        crate::privacy::guarantee::fmt_param((plan.sigma / plan.gamma).powi(2)),
        plan.beta,
        seed.to_hex()
    )?;
    outln!(
        "communication: {} bits per client ({:.3} bits per parameter)",
        rep.bits_per_client,
        plan.bits_per_parameter
    )?;
    outln!(
        "expected squared error E‖μ̂ − μ‖² ≈ {:.6e} (noise {:.3e}, rounding {:.3e}, rounding bias \
         ≤ {:.3e}{}; clipping bias below); P(the modular sum wraps) ≤ {:.3e}",
        plan.mse.total(),
        plan.mse.noise,
        plan.mse.rounding,
        plan.mse.rounding_bias,
        if sketch_m.is_some() {
            format!(", sketch ≤ {:.3e} (at ‖μ‖ = c)", plan.mse.sketch)
        } else {
            String::new()
        },
        plan.wrap_probability
    )?;
    outln!(
        "{}; rounding draws: {} in all, at most {} for one client; {:.2} s",
        clipping_line(rep, a.clip, sketch_m.is_some()),
        rep.rounding_tries.0,
        rep.rounding_tries.1,
        seconds
    )?;
    print_check_and_output(a, rep)
}

fn print_json(
    a: &AggregateArgs,
    plan: &DdgPlan,
    sketch_m: Option<u64>,
    rep: &RoundReport,
    seed: Seed,
    seconds: f64,
) -> Result<()> {
    let check = check_json(rep);
    let v = serde_json::json!({
        "mechanism": if sketch_m.is_some() { "sketch-ddg" } else { "ddg" },
        "sketch_m": sketch_m,
        "clients": rep.clients,
        "d": rep.mean.len(),
        "d_rotated": plan.d_rot,
        "bits": a.bits,
        "epsilon": plan.epsilon,
        "delta": plan.delta,
        "rho": plan.rho,
        "guarantee": DistributedGuarantee::of_ddg(plan).statement(rep.clients),
        "gamma": plan.gamma,
        "sigma": plan.sigma,
        "beta": plan.beta,
        "public_seed": seed.to_hex(),
        "bits_per_client": rep.bits_per_client,
        "bits_per_parameter": plan.bits_per_parameter,
        "expected_squared_error": plan.mse.total(),
        "wrap_probability_bound": plan.wrap_probability,
        "clipped_clients": rep.clipped,
        "clip_bias_bound": rep.clip_bias_bound,
        "rounding_draws": rep.rounding_tries.0,
        "seconds": seconds,
        "check": check,
        "output": a.output.as_ref().map(|p| p.display().to_string()),
        "mean": rep.mean,
    });
    super::output::print_str(&format!("{v}\n"))
}

/// `-m binomial`: the round with cpSGD's π_sk ([`BinomialEncoder`]), `k`, `m` and `X` from
/// [`plan_binomial`]; no wrap by construction (`n(k−1+m) < M`).
fn run_binomial(
    a: &AggregateArgs,
    reader: &mut dyn RowReader,
    n: u64,
    kind: Option<super::mean::OutKind>,
) -> Result<()> {
    let d = reader.dim();
    let req = DistributedRequest {
        n,
        d: d as u64,
        epsilon: a.epsilon,
        delta: a.delta,
        clip: a.clip,
        bits: a.bits,
        max_wrap_probability: a.max_wrap,
    };
    let seed = match &a.seed {
        Some(s) => Seed::parse_hex(s)?,
        None => Seed::random()?,
    };
    let planned = plan_encoder(DistributedKind::Binomial, &req, None, seed)?;
    let PlanDetail::Binomial(plan) = planned.plan else {
        return Err(Error::param("--mechanism", "a binomial plan was expected"));
    };
    let enc = planned.encoder;
    let secagg = SecAggRound::with_os_secret(n, enc.message_len(), enc.modulus())?;
    let noise = NoiseSource::from_os()?;
    let started = std::time::Instant::now();
    let rep = run_round(enc.as_ref(), reader, &secagg, &noise, a.check)?;
    let seconds = started.elapsed().as_secs_f64();
    if let (Some(path), Some(kind)) = (&a.output, kind) {
        write_mean(path, kind, &rep.mean)?;
    }
    let guarantee = DistributedGuarantee::of_binomial(&plan).statement(rep.clients);
    if a.json {
        let check = check_json(&rep);
        let v = serde_json::json!({
            "mechanism": "binomial",
            "clients": rep.clients,
            "d": rep.mean.len(),
            "d_rotated": plan.d_rot,
            "bits": a.bits,
            "epsilon": plan.epsilon,
            "delta": plan.delta,
            "guarantee": guarantee,
            "k": plan.k,
            "m": plan.m,
            "n_trials": plan.n_trials,
            "x_max": plan.x_max,
            "level_spacing": plan.s,
            "rotation_seed": seed.to_hex(),
            "bits_per_coordinate": plan.bits_per_coordinate,
            "bits_per_client": rep.bits_per_client,
            "expected_squared_error": plan.mse.total(),
            "expected_noise_error": plan.mse.noise,
            "expected_quantisation_error_bound": plan.mse.rounding,
            "clipped_clients": rep.clipped,
            "clip_bias_bound": rep.clip_bias_bound,
            "seconds": seconds,
            "check": check,
            "output": a.output.as_ref().map(|p| p.display().to_string()),
            "mean": rep.mean,
        });
        return super::output::print_str(&format!("{v}\n"));
    }
    outln!(
        "secure aggregation round: {} clients, d = {d} (rotated to d' = {}), binomial (π_sk), \
         M = 2^{}",
        rep.clients,
        plan.d_rot,
        a.bits
    )?;
    outln!("guarantee: {guarantee}")?;
    outln!(
        "parameters: k = {} levels {:.6e} apart on [−X, X], X = {:.6e}; m = {} trials of \
         Bin(m, ½) per client and coordinate; rotation seed {}",
        plan.k,
        plan.s,
        plan.x_max,
        plan.m,
        seed.to_hex()
    )?;
    outln!(
        "communication: log₂(k+m) = {:.3} bits per coordinate of information, sent as b = {} \
         bits under secure aggregation ({} bits per client)",
        plan.bits_per_coordinate,
        a.bits,
        rep.bits_per_client
    )?;
    outln!(
        "expected squared error E‖μ̂ − μ‖² ≤ {:.6e} (noise {:.3e}, quantisation ≤ {:.3e}; \
         clipping bias below); the sum cannot wrap: n·(k−1+m) = {} < M",
        plan.mse.total(),
        plan.mse.noise,
        plan.mse.rounding,
        plan.modulus_needed - 1
    )?;
    outln!("{}; {seconds:.2} s", clipping_line(&rep, a.clip, false))?;
    print_check_and_output(a, &rep)
}

/// What clipping did: how many vectors it shortened and the bound on the bias it put into the
/// mean (the expected error above is for the clipped vectors' mean).
fn clipping_line(rep: &RoundReport, clip: f64, sketched: bool) -> String {
    let what = if sketched {
        format!(
            "sketched vectors clipped to {}·c = {}",
            crate::mechanism::distributed::sketch_ddg::SKETCH_CLIP_FACTOR,
            clip * crate::mechanism::distributed::sketch_ddg::SKETCH_CLIP_FACTOR
        )
    } else {
        format!("clients clipped to c = {clip}")
    };
    format!(
        "{what}: {} of {}; clipping bias ‖E[μ̂] − μ‖ ≤ {:.3e} (from the clients' vectors, not \
         private: add its square to the error above when it matters)",
        rep.clipped, rep.clients, rep.clip_bias_bound
    )
}

/// The `--check` results as JSON (`null` without `--check`).
fn check_json(rep: &RoundReport) -> Option<serde_json::Value> {
    rep.check_error()
        .map(|e| serde_json::json!({ "squared_error": e, "wrapped_coordinates": rep.wrapped }))
}

/// The `--check` line (and a warning when the sum wrapped), then where the mean went.
fn print_check_and_output(a: &AggregateArgs, rep: &RoundReport) -> Result<()> {
    if let (Some(err), Some(w)) = (rep.check_error(), rep.wrapped) {
        outln!(
            "check (from the raw vectors, not private): ‖μ̂ − μ‖² = {err:.6e}; coordinates of \
             the sum that wrapped: {w}"
        )?;
        if w > 0 {
            super::output::warn(format_args!(
                "{w} coordinates of the sum wrapped around M = 2^{}: raise --bits",
                a.bits
            ));
        }
    }
    match &a.output {
        Some(p) => outln!("wrote {} ({} values)", p.display(), rep.mean.len()),
        None => Ok(()),
    }
}
