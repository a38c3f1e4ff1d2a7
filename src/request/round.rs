//! One secure-aggregation round from options as a user gives them (`dprp aggregate`): the
//! encoder named and validated, its parameters planned for the clients' number and dimension,
//! the round run ([`crate::mechanism::distributed::round`]), and its outcome as one report that
//! renders itself as text or JSON.

use std::path::Path;
use std::time::Instant;

use crate::data::RowReader;
use crate::error::Result;
use crate::mechanism::distributed::accountant::params::{
    BinomialPlan, DdgPlan, DistributedRequest,
};
use crate::mechanism::distributed::round::{run_round, RoundReport};

/// Refuse a round whose dimension needs more memory than a round may take (before any row is
/// read).
pub use crate::mechanism::distributed::round::check_round_memory;
use crate::mechanism::distributed::secagg::SecAggRound;
use crate::mechanism::distributed::sketch_ddg::SKETCH_CLIP_FACTOR;
use crate::mechanism::distributed::{
    plan_encoder, DistributedGuarantee, DistributedKind, PlanDetail,
};
use crate::privacy::guarantee::fmt_param;
use crate::privacy::samplers::noise::NoiseSource;
use crate::projection::Seed;

/// The options of a round; `None` where the user gave nothing.
#[derive(Debug, Clone)]
pub struct RoundOptions {
    /// `ddg`, `sketch-ddg` or `binomial` (any case).
    pub mechanism: String,
    /// sketch-ddg: the most bits per input parameter a client may send.
    pub bits_per_parameter: Option<f64>,
    /// ε of the sum's guarantee.
    pub epsilon: f64,
    /// δ of the sum's guarantee.
    pub delta: f64,
    /// ℓ₂ clip norm of each client's vector.
    pub clip: f64,
    /// Bits per transmitted coordinate (the sum is taken mod `2^bits`).
    pub bits: u32,
    /// Largest acceptable bound on the probability that the modular sum wraps.
    pub max_wrap: f64,
    /// Public seed of the rotation and sketch (default: fresh from the OS, reported).
    pub seed: Option<Seed>,
    /// Keep what only a simulation can see: the error of the private mean and the wraps.
    pub check: bool,
}

/// What a round did: its plan, guarantee and report.
#[derive(Debug)]
pub struct RoundOutcome {
    /// The planner's choice.
    pub plan: PlanDetail,
    /// The guarantee of the sum.
    pub guarantee: DistributedGuarantee,
    /// What the round produced (the mean, the clients, the diagnostics).
    pub report: RoundReport,
    /// The public seed used.
    pub seed: Seed,
    /// Bits per transmitted coordinate.
    pub bits: u32,
    /// The clip norm.
    pub clip: f64,
    /// Input dimension.
    pub d: usize,
    /// Wall-clock seconds of the round.
    pub seconds: f64,
}

impl RoundOptions {
    /// The encoder the options name, checked against the options that apply to it only.
    pub fn kind(&self) -> Result<DistributedKind> {
        super::encoder::encoder_kind(&self.mechanism, self.bits_per_parameter)
    }

    /// Plan the encoder for the `n` clients `reader` holds and run the round: every client's
    /// noise from its own ChaCha20 stream of a key from the operating system, the pads' pair keys
    /// from a separate round secret, neither written anywhere.
    pub fn run(&self, reader: &mut dyn RowReader, n: u64) -> Result<RoundOutcome> {
        let kind = self.kind()?;
        let d = reader.dim();
        check_round_memory(d, "input")?;
        let req = DistributedRequest {
            n,
            d: d as u64,
            epsilon: self.epsilon,
            delta: self.delta,
            clip: self.clip,
            bits: self.bits,
            max_wrap_probability: self.max_wrap,
        };
        let seed = match self.seed {
            Some(s) => s,
            None => Seed::random()?,
        };
        let planned = plan_encoder(kind, &req, self.bits_per_parameter, seed)?;
        let encoder = planned.encoder;
        let secagg = SecAggRound::with_os_secret(n, encoder.message_len(), encoder.modulus())?;
        let noise = NoiseSource::from_os()?;
        let started = Instant::now();
        let report = run_round(encoder.as_ref(), reader, &secagg, &noise, self.check)?;
        Ok(RoundOutcome {
            plan: planned.plan,
            guarantee: planned.guarantee,
            report,
            seed,
            bits: self.bits,
            clip: self.clip,
            d,
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}

impl RoundOutcome {
    /// The `--check` results as JSON (`null` without the check).
    fn check_json(&self) -> Option<serde_json::Value> {
        let rep = &self.report;
        rep.check_error()
            .map(|e| serde_json::json!({ "squared_error": e, "wrapped_coordinates": rep.wrapped }))
    }

    /// The outcome as one JSON object; `output` is where the caller wrote the mean.
    pub fn to_json(&self, output: Option<&Path>) -> serde_json::Value {
        let mut v = match &self.plan {
            PlanDetail::Ddg(p) => self.ddg_json(p, None),
            PlanDetail::SketchDdg(sp) => self.ddg_json(&sp.ddg, Some(sp.m)),
            PlanDetail::Binomial(p) => self.binomial_json(p),
        };
        let o = v.as_object_mut().expect("a JSON object");
        o.insert("check".into(), self.check_json().into());
        o.insert(
            "output".into(),
            output.map(|p| p.display().to_string()).into(),
        );
        o.insert("mean".into(), self.report.mean.clone().into());
        v
    }

    fn ddg_json(&self, plan: &DdgPlan, sketch_m: Option<u64>) -> serde_json::Value {
        let rep = &self.report;
        serde_json::json!({
            "mechanism": if sketch_m.is_some() { "sketch-ddg" } else { "ddg" },
            "sketch_m": sketch_m,
            "clients": rep.clients,
            "d": rep.mean.len(),
            "d_rotated": plan.d_rot,
            "bits": self.bits,
            "epsilon": plan.epsilon,
            "delta": plan.delta,
            "rho": plan.rho,
            "guarantee": self.guarantee.statement(rep.clients),
            "gamma": plan.gamma,
            "sigma": plan.sigma,
            "beta": plan.beta,
            "public_seed": self.seed.to_hex(),
            "bits_per_client": rep.bits_per_client,
            "bits_per_parameter": plan.bits_per_parameter,
            "expected_squared_error": plan.mse.total(),
            "wrap_probability_bound": plan.wrap_probability,
            "clipped_clients": rep.clipped,
            "clip_bias_bound": rep.clip_bias_bound,
            "rounding_draws": rep.rounding_tries.0,
            "seconds": self.seconds,
        })
    }

    fn binomial_json(&self, plan: &BinomialPlan) -> serde_json::Value {
        let rep = &self.report;
        serde_json::json!({
            "mechanism": "binomial",
            "clients": rep.clients,
            "d": rep.mean.len(),
            "d_rotated": plan.d_rot,
            "bits": self.bits,
            "epsilon": plan.epsilon,
            "delta": plan.delta,
            "guarantee": self.guarantee.statement(rep.clients),
            "k": plan.k,
            "m": plan.m,
            "n_trials": plan.n_trials,
            "x_max": plan.x_max,
            "level_spacing": plan.s,
            "rotation_seed": self.seed.to_hex(),
            "bits_per_coordinate": plan.bits_per_coordinate,
            "bits_per_client": rep.bits_per_client,
            "expected_squared_error": plan.mse.total(),
            "expected_noise_error": plan.mse.noise,
            "expected_quantisation_error_bound": plan.mse.rounding,
            "clipped_clients": rep.clipped,
            "clip_bias_bound": rep.clip_bias_bound,
            "seconds": self.seconds,
        })
    }

    /// The outcome as text lines: the round, its guarantee, parameters, communication, expected
    /// error, clipping, and with the check its result.
    pub fn to_text(&self) -> Vec<String> {
        let mut lines = match &self.plan {
            PlanDetail::Ddg(p) => self.ddg_text(p, None),
            PlanDetail::SketchDdg(sp) => self.ddg_text(&sp.ddg, Some(sp.m)),
            PlanDetail::Binomial(p) => self.binomial_text(p),
        };
        if let (Some(err), Some(w)) = (self.report.check_error(), self.report.wrapped) {
            lines.push(format!(
                "check (from the raw vectors, not private): ‖μ̂ − μ‖² = {err:.6e}; coordinates of \
                 the sum that wrapped: {w}"
            ));
        }
        lines
    }

    /// How many coordinates of the sum wrapped (with the check).
    pub fn wrapped(&self) -> Option<u64> {
        self.report.wrapped
    }

    fn ddg_text(&self, plan: &DdgPlan, sketch_m: Option<u64>) -> Vec<String> {
        let (rep, d, bits) = (&self.report, self.d, self.bits);
        vec![
            match sketch_m {
                None => format!(
                    "secure aggregation round: {} clients, d = {d} (rotated to d' = {}), ddg, \
                     M = 2^{bits}",
                    rep.clients, plan.d_rot
                ),
                Some(m) => format!(
                    "secure aggregation round: {} clients, d = {d} sketched to m = {m} (count \
                     sketch, t = 1), sketch-ddg, M = 2^{bits}",
                    rep.clients
                ),
            },
            format!("guarantee: {}", self.guarantee.statement(rep.clients)),
            format!(
                "parameters: γ = {:.6e}, σ = {:.6e} per client (integer noise N_Z(0, {})), β = \
                 {:.4e}, public seed {} (rotation, sketch)",
                plan.gamma,
                plan.sigma,
                fmt_param((plan.sigma / plan.gamma).powi(2)),
                plan.beta,
                self.seed.to_hex()
            ),
            format!(
                "communication: {} bits per client ({:.3} bits per parameter)",
                rep.bits_per_client, plan.bits_per_parameter
            ),
            format!(
                "expected squared error E‖μ̂ − μ‖² ≈ {:.6e} (noise {:.3e}, rounding {:.3e}, \
                 rounding bias ≤ {:.3e}{}; clipping bias below); P(the modular sum wraps) ≤ \
                 {:.3e}",
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
            ),
            format!(
                "{}; rounding draws: {} in all, at most {} for one client; {:.2} s",
                self.clipping_line(sketch_m.is_some()),
                rep.rounding_tries.0,
                rep.rounding_tries.1,
                self.seconds
            ),
        ]
    }

    fn binomial_text(&self, plan: &BinomialPlan) -> Vec<String> {
        let (rep, d, bits) = (&self.report, self.d, self.bits);
        vec![
            format!(
                "secure aggregation round: {} clients, d = {d} (rotated to d' = {}), binomial \
                 (π_sk), M = 2^{bits}",
                rep.clients, plan.d_rot
            ),
            format!("guarantee: {}", self.guarantee.statement(rep.clients)),
            format!(
                "parameters: k = {} levels {:.6e} apart on [−X, X], X = {:.6e}; m = {} trials of \
                 Bin(m, ½) per client and coordinate; rotation seed {}",
                plan.k,
                plan.s,
                plan.x_max,
                plan.m,
                self.seed.to_hex()
            ),
            format!(
                "communication: log₂(k+m) = {:.3} bits per coordinate of information, sent as b = \
                 {bits} bits under secure aggregation ({} bits per client)",
                plan.bits_per_coordinate, rep.bits_per_client
            ),
            format!(
                "expected squared error E‖μ̂ − μ‖² ≤ {:.6e} (noise {:.3e}, quantisation ≤ {:.3e}; \
                 clipping bias below); the sum cannot wrap: n·(k−1+m) = {} < M",
                plan.mse.total(),
                plan.mse.noise,
                plan.mse.rounding,
                plan.modulus_needed - 1
            ),
            format!("{}; {:.2} s", self.clipping_line(false), self.seconds),
        ]
    }

    /// What clipping did: how many vectors it shortened and the bound on the bias it put into the
    /// mean (the expected error above is for the clipped vectors' mean).
    fn clipping_line(&self, sketched: bool) -> String {
        let (rep, clip) = (&self.report, self.clip);
        let what = if sketched {
            format!(
                "sketched vectors clipped to {SKETCH_CLIP_FACTOR}·c = {}",
                clip * SKETCH_CLIP_FACTOR
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
}
