//! The tables `dprp calibrate` reports, as values: every number a line prints is a field, and
//! each table renders its own lines ([`CalibrationReport::to_text`]) or serialises as JSON.

use serde::Serialize;

use crate::mechanism::local::release::describe_constants;
use crate::privacy::guarantee::fmt_param;
use crate::privacy::nplus::NPlus;

use super::SigmaReport;

/// What `dprp calibrate` reports, built whole before anything is printed.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "table", rename_all = "snake_case")]
pub enum CalibrationReport {
    /// The Gaussian σ for a sensitivity (no mechanism given).
    Sigma(SigmaReport),
    /// A Gaussian sketch's σ for each k and the error it implies.
    Gaussian(GaussianTable),
    /// A sign sketch's flip rules for each k.
    Sign(SignTable),
    /// A local mechanism's constants and error.
    Local(LocalTable),
    /// A distributed round's plan.
    Distributed(DistributedTable),
}

impl CalibrationReport {
    /// The report as the lines the command prints.
    pub fn to_text(&self) -> Vec<String> {
        match self {
            CalibrationReport::Sigma(s) => s.to_text(),
            CalibrationReport::Gaussian(t) => t.to_text(),
            CalibrationReport::Sign(t) => t.to_text(),
            CalibrationReport::Local(t) => t.to_text(),
            CalibrationReport::Distributed(t) => t.to_text(),
        }
    }
}

/// A Gaussian sketch's σ table for a typical pair of rows.
#[derive(Debug, Clone, Serialize)]
pub struct GaussianTable {
    /// The mechanism's name.
    pub mechanism: &'static str,
    /// ε.
    pub epsilon: f64,
    /// δ.
    pub delta: Option<f64>,
    /// β.
    pub beta: f64,
    /// Input dimension.
    pub p: usize,
    /// The Gaussian sampler: `lattice` or `float`.
    pub noise: &'static str,
    /// ‖u‖ of the pair.
    pub norm_u: f64,
    /// ‖v‖ of the pair.
    pub norm_v: f64,
    /// The pair's cosine.
    pub cosine: f64,
    /// Their inner product ρ.
    pub ip: f64,
    /// One row per k.
    pub rows: Vec<GaussianRow>,
}

/// One k of a [`GaussianTable`].
#[derive(Debug, Clone, Serialize)]
pub struct GaussianRow {
    /// Sketch width.
    pub k: usize,
    /// Δ₂ of the exact map (none without an arithmetic record).
    pub sensitivity: Option<f64>,
    /// Δ_r/Δ₂ − 1: what the rounding adds to the sensitivity the noise is calibrated for.
    pub sensitivity_excess: Option<f64>,
    /// σ of the release.
    pub sigma: f64,
    /// σ the same rule gives for Δ₂ itself.
    pub sigma_textbook: Option<f64>,
    /// σ of the classical rule.
    pub sigma_classical: f64,
    /// Variance of the inner-product estimate, both rows released.
    pub var_both: f64,
    /// Variance of the inner-product estimate, a raw query against a released row.
    pub var_raw_query: f64,
}

impl GaussianTable {
    fn to_text(&self) -> Vec<String> {
        let mut out = vec![
            format!(
                "{} at ε = {}, δ = {:e}, β = {}, p = {}, {} noise; pair with ‖u‖ = {}, ‖v‖ = {}, \
                 cos = {} (ρ = {:.4})",
                self.mechanism,
                self.epsilon,
                self.delta.unwrap_or(0.0),
                self.beta,
                self.p,
                self.noise,
                self.norm_u,
                self.norm_v,
                self.cosine,
                self.ip
            ),
            "(Σu²v² taken as ‖u‖²‖v‖²/p; variance and standard deviation of the inner-product \
             estimate ⟨x̃,ỹ⟩ (Theorems C.1–C.3, docs/commands.md#query-and-estimate-what-they-print): \
             both rows released, or a raw query against a released row)"
                .to_string(),
            "(rounding: Δ_r is the sensitivity the noise is calibrated for — Δ₂ of the exact map \
             plus the input grid, the arithmetic's error bound and the lattice step; \"σ cost\" is \
             σ against the σ for Δ₂ itself)"
                .to_string(),
            format!(
                "{:>6} {:>10} {:>10} {:>10} {:>9} {:>12} {:>13} {:>10} {:>13} {:>10}",
                "k",
                "Δ₂",
                "Δ_r/Δ₂−1",
                "σ",
                "σ cost",
                "σ classical",
                "var both",
                "sd both",
                "var raw-q",
                "sd raw-q"
            ),
        ];
        for r in &self.rows {
            let excess = r
                .sensitivity_excess
                .map_or_else(|| "-".into(), |e| format!("{e:.2e}"));
            let sigma_cost = match (r.sensitivity, r.sigma_textbook) {
                (Some(_), Some(t)) => format!("{:+.3}%", (r.sigma / t - 1.0) * 100.0),
                _ => "-".into(),
            };
            out.push(format!(
                "{:>6} {:>10.6} {:>10} {:>10.6} {:>9} {:>12.6} {:>13.6} {:>10.6} {:>13.6} {:>10.6}",
                r.k,
                r.sensitivity.unwrap_or(f64::NAN),
                excess,
                r.sigma,
                sigma_cost,
                r.sigma_classical,
                r.var_both,
                r.var_both.sqrt(),
                r.var_raw_query,
                r.var_raw_query.sqrt()
            ));
        }
        out
    }
}

/// A sign sketch's flip rules (DESIGN.md §4).
#[derive(Debug, Clone, Serialize)]
pub struct SignTable {
    /// The mechanism's name.
    pub mechanism: &'static str,
    /// ε.
    pub epsilon: f64,
    /// δ.
    pub delta: Option<f64>,
    /// β.
    pub beta: f64,
    /// Input dimension.
    pub p: usize,
    /// One row per k.
    pub rows: Vec<SignRow>,
    /// Some flip probability is ≥ 0.499: the release would carry almost no signal.
    pub weak: bool,
}

/// One k of a [`SignTable`].
#[derive(Debug, Clone, Serialize)]
pub struct SignRow {
    /// Sketch width.
    pub k: usize,
    /// How the signs are flipped.
    pub flips: SignFlips,
}

/// The flip rule of one k.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum SignFlips {
    /// Randomised response with ε' = ε/N₊ per sign.
    RandomisedResponse {
        /// ε per sign.
        eps_prime: f64,
        /// The flip probability 1/(1 + e^ε').
        flip_probability: f64,
        /// N₊ and what went into it (none when one bin moves).
        n_plus: Option<NPlus>,
        /// What the paper's eq. (5)/(10) would give, `(P, N₊)`: not a proven bound, not used.
        paper: Option<(f64, usize)>,
    },
    /// Smooth flipping: the flip probability of a sign depends on its distance L to a flip.
    SmoothFlipping {
        /// ε per unit of distance.
        eps_prime: f64,
        /// `(L, q(L))` at a few distances.
        by_distance: Vec<(u64, f64)>,
    },
    /// Individual DP with Gaussian noise: σ per unit of the set's Δ₂.
    IdpGaussian {
        /// σ for Δ₂(A) = 1.
        sigma_unit: f64,
        /// σ at |A| = k/10 with a Rademacher map.
        sigma_at_a_tenth: f64,
    },
    /// Individual DP with randomised response on the bins in A.
    IdpRandomisedResponse {
        /// ε is split over the |A| bins (else each bin gets ε).
        split: bool,
        /// The flip probability (at |A| = k/10 when split).
        flip_probability: f64,
    },
}

impl SignTable {
    fn to_text(&self) -> Vec<String> {
        let mut out = vec![format!(
            "{} at ε = {}{}, β = {}, p = {}",
            self.mechanism,
            self.epsilon,
            self.delta
                .map(|d| format!(", δ = {d:e}"))
                .unwrap_or_default(),
            self.beta,
            self.p
        )];
        out.extend(self.rows.iter().map(SignRow::to_text));
        if self.weak {
            out.push(
                "warning: flip probabilities are ≥ 0.499: such a release carries almost no \
                 signal (raise ε or lower k)"
                    .into(),
            );
        }
        out
    }
}

impl SignRow {
    fn to_text(&self) -> String {
        let k = self.k;
        match &self.flips {
            SignFlips::RandomisedResponse {
                eps_prime,
                flip_probability,
                n_plus: Some(n),
                paper,
            } => {
                let (paper_p, paper_n) = paper.unwrap_or((f64::NAN, 0));
                format!(
                    "k = {k:>5}: r = β/ν = {:.4}, P = {:.6} ({}), μ = {:.3}, η = {:.4}, N₊ = {}, \
                     ε' = ε/N₊ = {:.6}, flip probability {:.6}\n          (the paper's eq. \
                     (5)/(10) value P = {:.6}, N₊ = {}, is not a proven bound and is not used)",
                    n.r,
                    n.prob,
                    n.method,
                    n.mu,
                    n.eta,
                    n.n_plus,
                    eps_prime,
                    flip_probability,
                    paper_p,
                    paper_n
                )
            }
            SignFlips::RandomisedResponse {
                eps_prime,
                flip_probability,
                n_plus: None,
                ..
            } => format!(
                "k = {k:>5}: N₊ = 1 (one bin moves), ε' = {eps_prime}, flip probability \
                 {flip_probability:.6}"
            ),
            SignFlips::SmoothFlipping {
                eps_prime,
                by_distance,
            } => {
                let qs: Vec<String> = by_distance
                    .iter()
                    .map(|(l, q)| format!("q(L={l}) = {q:.6}"))
                    .collect();
                format!("k = {k:>5}: ε' = {eps_prime:.6}; {}", qs.join(", "))
            }
            SignFlips::IdpGaussian {
                sigma_unit,
                sigma_at_a_tenth,
            } => format!(
                "k = {k:>5}: σ = Δ₂(A)·{sigma_unit:.6}; Rademacher Δ₂(A) = β·√(|A|/k), e.g. \
                 |A| = k/10: σ = {sigma_at_a_tenth:.6}"
            ),
            SignFlips::IdpRandomisedResponse {
                split: true,
                flip_probability,
            } => format!(
                "k = {k:>5}: flip probability 1/(1+e^(ε/|A|)); |A| = k/10: {flip_probability:.6}"
            ),
            SignFlips::IdpRandomisedResponse {
                split: false,
                flip_probability,
            } => format!("k = {k:>5}: flip probability {flip_probability:.6} per bin in A"),
        }
    }
}

/// A local mechanism's guarantee, constants and error, per user and of the mean over n users.
#[derive(Debug, Clone, Serialize)]
pub struct LocalTable {
    /// The mechanism's name.
    pub mechanism: &'static str,
    /// The users' dimension.
    pub d: usize,
    /// The guarantee's label (`3-LDP`).
    pub label: String,
    /// The guarantee, as a release states it.
    pub guarantee: String,
    /// What the per-user error assumes of the input.
    pub mse_note: String,
    /// The numbers of users the error of the mean is given for.
    pub users: Vec<u64>,
    /// One row per projected dimension k (one row without k).
    pub rows: Vec<LocalRow>,
}

/// One k of a [`LocalTable`].
#[derive(Debug, Clone, Serialize)]
pub struct LocalRow {
    /// The projected dimension (projunit), or none.
    pub k: Option<usize>,
    /// The mechanism's constants, by name, in the order the algorithm uses them.
    pub constants: Vec<(String, f64)>,
    /// E‖Z − v‖² per user.
    pub mse_per_user: f64,
}

impl LocalTable {
    fn to_text(&self) -> Vec<String> {
        if self.rows.is_empty() {
            return Vec::new();
        }
        let mut out = vec![
            format!("{} at d = {}: {}", self.mechanism, self.d, self.label),
            format!("guarantee: {}", self.guarantee),
            format!("per-user error: {}", self.mse_note),
        ];
        for r in &self.rows {
            let errs: Vec<String> = self
                .users
                .iter()
                .map(|&n| format!("n = {n}: {:.4e}", r.mse_per_user / n as f64))
                .collect();
            out.push(format!(
                "{}constants: {}\n  E‖Z − v‖² per user = {:.6}; E‖mean − μ‖² = per user / n: {}",
                r.k.map(|k| format!("k = {k}: ")).unwrap_or_default(),
                describe_constants(&r.constants),
                r.mse_per_user,
                errs.join(", ")
            ));
        }
        out
    }
}

/// The plan of a distributed round for `n` clients.
#[derive(Debug, Clone, Serialize)]
pub struct DistributedTable {
    /// `ddg`, `sketch-ddg` or `binomial`.
    pub mechanism: String,
    /// Clients.
    pub n: u64,
    /// Their dimension.
    pub d: usize,
    /// ε.
    pub epsilon: f64,
    /// δ.
    pub delta: f64,
    /// ℓ₂ clip norm.
    pub clip: f64,
    /// Bits per transmitted coordinate (M = 2^bits).
    pub bits: u32,
    /// The guarantee's summary.
    pub guarantee: String,
    /// The planner's choice.
    pub plan: DistributedPlan,
}

/// The parameters a distributed plan chose.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DistributedPlan {
    /// DDG, after a rotation to `d'` dimensions (or a count sketch to `m` rows).
    Ddg(DdgRow),
    /// Binomial (cpSGD's π_sk).
    Binomial(BinomialRow),
}

/// A DDG plan's numbers.
#[derive(Debug, Clone, Serialize)]
pub struct DdgRow {
    /// Rotated dimension d' (DDG).
    pub d_rot: Option<u64>,
    /// Count sketch rows m and blocks t (sketch-DDG).
    pub sketch: Option<(u64, u64)>,
    /// Granularity γ.
    pub gamma: f64,
    /// Per-client σ (data units).
    pub sigma: f64,
    /// Conditional-rounding bias β.
    pub beta: f64,
    /// Expected squared error of the mean: total, noise, rounding, rounding bias, sketch.
    pub mse: [f64; 5],
    /// Bits each client sends per input parameter.
    pub bits_per_parameter: f64,
    /// Bound on P(the modular sum wraps).
    pub wrap_probability: f64,
}

/// A Binomial plan's numbers.
#[derive(Debug, Clone, Serialize)]
pub struct BinomialRow {
    /// Rotated dimension d'.
    pub d_rot: u64,
    /// Clamp X after the rotation.
    pub x_max: f64,
    /// Quantisation levels k.
    pub k: u64,
    /// Data units per level.
    pub s: f64,
    /// Binomial trials per client and coordinate.
    pub m: u64,
    /// Trials in the sum.
    pub n_trials: u64,
    /// Expected squared error of the mean: total, noise, quantisation.
    pub mse: [f64; 3],
    /// log₂(k + m).
    pub bits_per_coordinate: f64,
    /// The smallest modulus holding the sum.
    pub modulus_needed: u64,
}

impl DistributedTable {
    fn to_text(&self) -> Vec<String> {
        let mut out = vec![
            format!(
                "{}: n = {} clients, d = {}, ε = {}, δ = {:e}, c = {}",
                self.mechanism, self.n, self.d, self.epsilon, self.delta, self.clip
            ),
            format!("guarantee: {}", self.guarantee),
        ];
        match &self.plan {
            DistributedPlan::Ddg(p) => {
                let dims = match (p.d_rot, p.sketch) {
                    (_, Some((m, t))) => format!("count sketch to m = {m} rows (t = {t})"),
                    (d_rot, None) => format!("rotated dimension d' = {}", d_rot.unwrap_or(0)),
                };
                out.push(format!(
                    "{dims}; γ = {:.6e}, σ = {:.6e} per client (integer noise N_Z(0, {})), β = \
                     {:.4e}",
                    p.gamma,
                    p.sigma,
                    fmt_param((p.sigma / p.gamma).powi(2)),
                    p.beta
                ));
                out.push(format!(
                    "expected squared error of the mean: {:.6e} (noise {:.3e}, rounding {:.3e}, \
                     rounding bias ≤ {:.3e}, sketch ≤ {:.3e})",
                    p.mse[0], p.mse[1], p.mse[2], p.mse[3], p.mse[4]
                ));
                out.push(format!(
                    "bits per parameter: {:.4} (M = 2^{}); P(the modular sum wraps) ≤ {:.3e}",
                    p.bits_per_parameter, self.bits, p.wrap_probability
                ));
            }
            DistributedPlan::Binomial(p) => {
                out.push(format!(
                    "rotated dimension d' = {}; clamp X = {:.6e}, k = {} levels ({:.6e} apart), \
                     Bin(m = {}, ½) per client and coordinate (N = {} in the sum)",
                    p.d_rot, p.x_max, p.k, p.s, p.m, p.n_trials
                ));
                out.push(format!(
                    "expected squared error of the mean: {:.6e} (noise {:.3e}, quantisation \
                     {:.3e})",
                    p.mse[0], p.mse[1], p.mse[2]
                ));
                out.push(format!(
                    "bits per coordinate: log₂(k + m) = {:.3} (cpSGD's count; {} under SecAgg \
                     with M = 2^{}); the sum never wraps (it needs M ≥ {})",
                    p.bits_per_coordinate, self.bits, self.bits, p.modulus_needed
                ));
            }
        }
        out
    }
}
