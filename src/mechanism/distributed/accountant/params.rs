//! Parameter choice for `dprp calibrate --mechanism ddg | sketch-ddg | binomial`: given `n`
//! clients, dimension `d`, a target (ε, δ), the clip norm `c` and `b` bits per transmitted
//! coordinate (SecAgg modulus `M = 2^b`), choose the mechanism's parameters and report the
//! expected squared error of the mean, the bits per parameter and the probability that the
//! modular sum wraps.
//!
//! # DDG ([`plan_ddg`])
//!
//! The rotation `H·D` needs a power of two: the noised dimension is `d' = next_pow2(d)`. For a
//! rounding bias β (chosen from a small candidate set, see below) and a granularity γ:
//! σ is the smallest noise meeting the target by Theorem E.1 and the tight zCDP conversion
//! ([`ddg::smallest_sigma_for_rho`]), and
//!
//! * **MSE of the mean** (data units), as the sum of
//!   - noise `d·σ²/n`: each client's `N_Z(0, σ²/γ²)` has variance at most `σ²/γ²` (Canonne,
//!     Kamath & Steinke 2020: the discrete Gaussian's variance is below its parameter); the sum
//!     of `n` is scaled by `γ/n`; the noise is i.i.d. over the `d'` rotated coordinates, and the
//!     inverse rotation (orthogonal) followed by truncation to `d` keeps `d` of them on average;
//!   - rounding `d'·γ²/(4n(1−β))`: unbiased randomised rounding has variance `f(1−f) ≤ ¼` per
//!     coordinate; conditioning on the norm check (probability ≥ 1 − β) inflates a second
//!     moment by at most `1/(1−β)`; truncation only removes error;
//!   - rounding bias `γ²·d'·(β/(1−β))²`: derived — the accepted rounding `x̃` has
//!     `E[x̃|A] − x'' = −E[(x̃ − x'')·1_{Aᶜ}]/P(A)`, and `‖x̃ − x''‖∞ ≤ 1` gives
//!     `‖E[x̃|A] − x''‖₂ ≤ √d'·β/(1−β)` for every client, hence for their mean.
//!
//!   (Clipping error — the distance between the clipped and the raw mean — depends on the data and
//!   is not included.)
//! * **Wrap probability** (derived; Hoeffding + sub-Gaussian tails + union bound). Coordinate `j`
//!   of the summed integer vector is `S_j = (H·D·Σ_i x'_i)_j + Σ_i r_ij + Σ_i z_ij` with
//!   `x'_i = x_i/γ` clipped (`‖Σ x'_i‖ ≤ nc/γ`), rounding errors `r_ij ∈ [−f, 1−f]` (mean zero,
//!   range 1) and noise `z_ij ~ N_Z(0, σ²/γ²)`. Over the public Rademacher `D` the first term is
//!   sub-Gaussian with variance proxy `‖Σ x'_i‖²/d' ≤ (nc/γ)²/d'` (`H_jk² = 1/d'`); by Hoeffding's
//!   lemma each `r_ij` is ¼-sub-Gaussian; each `z_ij` is `(σ/γ)²`-sub-Gaussian (Canonne, Kamath &
//!   Steinke 2020). With `V = (nc/γ)²/d' + n/4 + n(σ/γ)²`, `P(S_j ∉ [−M/2, M/2)) ≤
//!   2 exp(−(M/2)²/(2V))`; a union bound over the `d'` coordinates, and the factor `(1−β)^{−n}`
//!   for conditioning every client's rounding on its acceptance event, give
//!   `P(wrap) ≤ min{1, (1−β)^{−n}·2d'·exp(−M²/(8V))}`.
//! * **Choice.** The MSE increases with γ (the rounding terms are `∝ γ²`; Δ₂ and hence σ grow with
//!   γ) and the wrap bound decreases with γ (`V` falls: `(nc/γ)²` and `σ/γ` both shrink), so for
//!   each β the best γ is the *smallest* one whose wrap bound meets `max_wrap_probability`, found
//!   by bisection on `ln γ`. β is the best of `{e^{−½}, 1/n, 1/n², 10⁻⁹}` (clamped below 1).
//! * **Bits per parameter**: `b·d'/d`.
//!
//! # Sketch + DDG ([`plan_sketch_ddg`])
//!
//! Each client sends `DDG(S·x_i)` with a count sketch `S ∈ R^{m×d}` (`m` a power of two so the
//! rotation does not pad; `t = 1`: the sketch variance does not depend on `t`). The error is the
//! sketch's `(d−1)‖μ‖²/m ≤ (d−1)c²/m` (worst case `‖μ‖ = c`; [`crate::projection::count_sketch::CountSketch`]) plus the DDG error
//! in `m` dimensions mapped back by `Sᵀ`: for noise i.i.d. over coordinates and independent of
//! `S`, `E‖Sᵀe‖² = v·tr(SᵀS) = d·v`, so the noise term stays `d·σ²/n`; the rounding and bias
//! terms are multiplied by `d/m` the same way (an approximation: the rounding error depends on
//! `S` through the data). The sketched vectors are clipped to `c` again before DDG (as Chen et
//! al. do); the rare clipping of `S·x` is not in the error. Candidates `m = 2^j ≤ d'` are
//! evaluated; the plan is the one with the smallest MSE among those within
//! `max_bits_per_parameter` (bits per parameter `b·m/d`). Without a bit cap larger `m` nearly
//! always wins; the cap is what makes the sketch useful ("about 1.2 bits per parameter").
//!
//! # Binomial, protocol π_sk
//!
//! In [`super::binomial_plan`] (re-exported here): [`plan_binomial`].

use crate::error::{Error, Result};
use crate::mechanism::distributed::accountant::ddg::{self, DdgSetting};
use crate::privacy::zcdp;
use crate::projection::hadamard::next_pow2;

pub use super::binomial_plan::{
    pi_sk_sensitivities, plan_binomial, BinomialPlan, MAX_BINOMIAL_WORDS,
};
pub use super::sketch_plan::{plan_sketch_ddg, plan_sketch_ddg_for, SketchDdgPlan};

/// The clip norm of the sketched vectors relative to the input's `c`: 1 (Chen et al. 2022's
/// Algorithm 2 uses 1.1; [`crate::mechanism::distributed::sketch_ddg`] says why dprp does not).
pub const SKETCH_CLIP_FACTOR: f64 = 1.0;

/// What the caller wants: `n` clients of dimension `d`, (ε, δ), clip `c`, `b` bits per
/// coordinate, and the largest acceptable probability that the modular sum wraps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DistributedRequest {
    /// Number of clients, `n ≥ 2` (secure aggregation hides a message only among others).
    pub n: u64,
    /// Dimension of each client's vector, `d ≥ 1`.
    pub d: u64,
    /// Target ε > 0.
    pub epsilon: f64,
    /// Target δ ∈ (0, 1).
    pub delta: f64,
    /// ℓ₂ clip norm `c > 0`.
    pub clip: f64,
    /// Bits per transmitted coordinate, `2 ≤ b ≤ 62` (`M = 2^b`; sums are held in 64-bit words).
    pub bits: u32,
    /// Largest acceptable bound on the probability that the modular sum wraps (DDG), in (0, 1).
    pub max_wrap_probability: f64,
}

/// Largest supported `b`: the server sums `n` residues mod `2^b` in `u64` wrapping arithmetic
/// and lifts to `[−M/2, M/2)` in `i64`.
pub const MAX_BITS: u32 = 62;

impl DistributedRequest {
    pub(super) fn check(&self) -> Result<()> {
        if self.n < 2 {
            return Err(Error::param(
                "clients n",
                format!(
                    "n = {}: secure aggregation needs at least two clients — with one, the \
                     server would see that client's masked message unmasked (no other client's \
                     masks cancel against it), protected only by its own noise share",
                    self.n
                ),
            ));
        }
        if self.d == 0 {
            return Err(Error::param("dimension d", "d must be at least 1"));
        }
        crate::privacy::guarantee::check_epsilon(self.epsilon)?;
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(Error::param(
                "‹delta›",
                format!("δ must lie strictly between 0 and 1, got {}", self.delta),
            ));
        }
        if self.clip.is_finite() && !(1e-30..=1e30).contains(&self.clip) && self.clip > 0.0 {
            return Err(Error::param(
                "‹clip›",
                format!(
                    "c = {:e} is outside [1e-30, 1e30], where the noise and its accounting stay \
                     within floating point: rescale the vectors (the mean's error scales with c²)",
                    self.clip
                ),
            ));
        }
        if !(self.clip.is_finite() && self.clip > 0.0) {
            return Err(Error::param(
                "‹clip›",
                format!(
                    "the clip norm must be a positive finite number, got {}",
                    self.clip
                ),
            ));
        }
        if !(2..=MAX_BITS).contains(&self.bits) {
            return Err(Error::param(
                "‹bits›",
                format!(
                    "b must be between 2 and {MAX_BITS} bits per coordinate, got {}",
                    self.bits
                ),
            ));
        }
        if !(self.max_wrap_probability > 0.0 && self.max_wrap_probability < 1.0) {
            return Err(Error::param(
                "wrap probability",
                format!(
                    "the acceptable wrap probability must lie strictly between 0 and 1, got {}",
                    self.max_wrap_probability
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn modulus(&self) -> u64 {
        1u64 << self.bits
    }
}

/// The expected squared error of the mean estimate, term by term (data units).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MseTerms {
    /// Privacy noise.
    pub noise: f64,
    /// Quantisation / randomised rounding variance.
    pub rounding: f64,
    /// Squared bias bound of conditional rounding (DDG); 0 for unbiased schemes.
    pub rounding_bias: f64,
    /// Count-sketch compression error (sketch-DDG); 0 otherwise.
    pub sketch: f64,
}

impl MseTerms {
    /// The sum of the terms.
    pub fn total(&self) -> f64 {
        self.noise + self.rounding + self.rounding_bias + self.sketch
    }
}

/// A DDG parameter choice and what it costs.
#[derive(Debug, Clone, PartialEq)]
pub struct DdgPlan {
    /// Dimension noised and transmitted: `next_pow2` of the input dimension (`d'`, or `m` for
    /// sketch-DDG).
    pub d_rot: u64,
    /// SecAgg modulus `M = 2^b`.
    pub modulus: u64,
    /// Granularity γ.
    pub gamma: f64,
    /// Conditional-rounding bias β.
    pub beta: f64,
    /// Per-client noise σ (data units); each client adds `N_Z(0, (σ/γ)²)`.
    pub sigma: f64,
    /// ρ of the summed round (Theorem E.1: ½ε²).
    pub rho: f64,
    /// The (ε, δ) achieved (ε ≤ the target).
    pub epsilon: f64,
    /// δ of the guarantee.
    pub delta: f64,
    /// Expected squared error of the mean.
    pub mse: MseTerms,
    /// Bits each client sends per input parameter.
    pub bits_per_parameter: f64,
    /// Upper bound on the probability that any coordinate of the modular sum wraps.
    pub wrap_probability: f64,
}

/// The wrap bound of the module documentation.
pub fn ddg_wrap_probability(
    n: u64,
    d_rot: u64,
    clip: f64,
    gamma: f64,
    sigma: f64,
    beta: f64,
    modulus: u64,
) -> f64 {
    let nf = n as f64;
    let s = sigma / gamma;
    let v = (nf * clip / gamma).powi(2) / d_rot as f64 + nf / 4.0 + nf * s * s;
    let half = modulus as f64 / 2.0;
    let ln_p = -nf * (-beta).ln_1p() + (2.0 * d_rot as f64).ln() - half * half / (2.0 * v);
    ln_p.exp().min(1.0)
}

/// The DDG MSE terms for the mean in `d` output dimensions after noising `d_rot` coordinates;
/// `spread = d/m` for sketch-DDG (1 otherwise) multiplies the rounding terms (module docs).
fn ddg_mse(n: u64, d: u64, d_rot: u64, gamma: f64, sigma: f64, beta: f64, spread: f64) -> MseTerms {
    let nf = n as f64;
    let dr = d_rot as f64;
    let ratio = beta / (1.0 - beta);
    MseTerms {
        noise: d as f64 * sigma * sigma / nf,
        rounding: spread * dr * gamma * gamma / (4.0 * nf * (1.0 - beta)),
        rounding_bias: spread * gamma * gamma * dr * ratio * ratio,
        sketch: 0.0,
    }
}

/// The largest per-client integer noise variance `(σ/γ)²` a plan may ask for: 2⁶⁰, inside the
/// range of the exact discrete Gaussian samplers (`s² ≤ 2⁶²`, [`crate::privacy::exact`]). Wide
/// moduli (`--bits` ≥ 38 or so) would otherwise choose a γ so fine that `(σ/γ)²` leaves it.
pub const MAX_NOISE_VARIANCE: f64 = (1u64 << 60) as f64;

/// The best DDG plan noising `d_rot` coordinates for output dimension `d` (`spread` as in
/// [`ddg_mse`]): the noise for `req.n` shares, the wrap bound for sums of `sum_clients ≥ req.n`
/// messages.
pub(super) fn best_ddg(
    req: &DistributedRequest,
    d: u64,
    d_rot: u64,
    spread: f64,
    rho_target: f64,
    sum_clients: u64,
) -> Result<DdgPlan> {
    let modulus = req.modulus();
    let n = req.n;
    let wrap_n = sum_clients.max(n);
    let mut betas = vec![
        (-0.5f64).exp(),
        1.0 / n as f64,
        1.0 / (n as f64).powi(2),
        1e-9,
    ];
    betas.retain(|b| *b > 0.0 && *b < 1.0);
    let mut best: Option<DdgPlan> = None;
    for &beta in &betas {
        let sigma_at = |gamma: f64| -> Result<f64> {
            let st = DdgSetting {
                n,
                d: d_rot,
                clip: req.clip,
                gamma,
                beta,
            };
            ddg::smallest_sigma_for_rho(&st, rho_target)
        };
        // γ is feasible when the wrap bound holds and each client's integer noise variance
        // (σ/γ)² stays within the exact samplers' range (MAX_NOISE_VARIANCE): past it a finer γ
        // buys nothing (the rounding terms ∝ γ² are already 2⁻⁶⁰ of the noise), and a coarser γ
        // only lowers the wrap bound. Both conditions hold for every γ above the smallest one
        // (the wrap bound falls with γ, and so does σ/γ), so the bisection below still applies.
        let wrap_at = |gamma: f64| -> Result<f64> {
            let sigma = sigma_at(gamma)?;
            if (sigma / gamma).powi(2) > MAX_NOISE_VARIANCE {
                return Ok(f64::INFINITY);
            }
            Ok(ddg_wrap_probability(
                wrap_n, d_rot, req.clip, gamma, sigma, beta, modulus,
            ))
        };
        let Some(gamma) = finest_gamma(&wrap_at, req.clip, req.max_wrap_probability)? else {
            continue; // this β cannot meet the wrap target
        };
        let sigma = sigma_at(gamma)?;
        let st = DdgSetting {
            n,
            d: d_rot,
            clip: req.clip,
            gamma,
            beta,
        };
        let rho = ddg::rho(&st, sigma)?;
        let plan = DdgPlan {
            d_rot,
            modulus,
            gamma,
            beta,
            sigma,
            rho,
            epsilon: zcdp::epsilon(rho, req.delta)?,
            delta: req.delta,
            mse: ddg_mse(n, d, d_rot, gamma, sigma, beta, spread),
            bits_per_parameter: req.bits as f64 * d_rot as f64 / req.d as f64,
            wrap_probability: ddg_wrap_probability(
                wrap_n, d_rot, req.clip, gamma, sigma, beta, modulus,
            ),
        };
        if best
            .as_ref()
            .is_none_or(|b| plan.mse.total() < b.mse.total())
        {
            best = Some(plan);
        }
    }
    best.ok_or_else(|| {
        Error::param(
            "‹bits›",
            format!(
                "b = {} bits per coordinate is too few: for every granularity γ the modular sum of \
                 n = {wrap_n} clients would wrap with probability above {}",
                req.bits, req.max_wrap_probability
            ),
        )
    })
}

/// The finest granularity γ whose wrap bound `wrap_at(γ)` meets `max_wrap` (to a relative 10⁻⁶),
/// by bracketing from `start` and bisecting on a log scale; `None` when no γ up to `start·4⁴⁰`
/// meets it. The bound falls as γ grows, so the feasible γ form an interval `[γ*, ∞)`.
fn finest_gamma(
    wrap_at: &dyn Fn(f64) -> Result<f64>,
    start: f64,
    max_wrap: f64,
) -> Result<Option<f64>> {
    let mut hi = start;
    // Bracket: hi meets the wrap target, lo does not.
    let mut steps = 0;
    while wrap_at(hi)? > max_wrap {
        hi *= 4.0;
        steps += 1;
        if steps > 40 {
            break;
        }
    }
    if wrap_at(hi)? > max_wrap {
        return Ok(None);
    }
    let mut lo = hi / 4.0;
    let mut steps = 0;
    while wrap_at(lo)? <= max_wrap {
        hi = lo;
        lo /= 4.0;
        steps += 1;
        if steps > 60 {
            break;
        }
    }
    for _ in 0..60 {
        let mid = (lo * hi).sqrt();
        if wrap_at(mid)? <= max_wrap {
            hi = mid;
        } else {
            lo = mid;
        }
        if hi / lo < 1.0 + 1e-6 {
            break;
        }
    }
    Ok(Some(hi))
}

/// Choose γ, β, σ for DDG (module documentation).
pub fn plan_ddg(req: &DistributedRequest) -> Result<DdgPlan> {
    plan_ddg_for(req, req.n)
}

/// [`plan_ddg`] with noise for `req.n` shares and the wrap bound for sums of up to
/// `sum_clients` messages (federated rounds that tolerate dropouts: the noise is calibrated for
/// the fewest clients a round accepts, the modulus sized for all it samples).
pub fn plan_ddg_for(req: &DistributedRequest, sum_clients: u64) -> Result<DdgPlan> {
    req.check()?;
    let d_rot = next_pow2(
        usize::try_from(req.d)
            .map_err(|_| Error::param("dimension d", format!("d = {} is too large", req.d)))?,
    )? as u64;
    let rho_target = zcdp::rho_for_epsilon(req.epsilon, req.delta)?;
    best_ddg(req, req.d, d_rot, 1.0, rho_target, sum_clients)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::projection::hadamard::fwht_normalized;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha20Rng;
    use rand_distr::{Distribution, StandardNormal};

    /// A request for `n` clients of dimension `d` with `bits` bits, ε = 1, δ = 10⁻⁵, c = 1.
    pub(in crate::mechanism::distributed::accountant) fn request(
        n: u64,
        d: u64,
        bits: u32,
    ) -> DistributedRequest {
        DistributedRequest {
            n,
            d,
            epsilon: 1.0,
            delta: 1e-5,
            clip: 1.0,
            bits,
            max_wrap_probability: 1e-6,
        }
    }

    #[test]
    fn wide_moduli_keep_the_noise_variance_in_the_samplers_range() {
        // up to b = 62 (the documented range), every plan's (σ/γ)² is at most 2⁶⁰, its ε and wrap
        // bound meet the request, and its error is the noise's (rounding negligible): the same
        // as at b = 37, the widest modulus the uncapped planner reached
        let at = |b| plan_ddg(&request(100, 64, b)).unwrap();
        let narrow = at(37);
        for b in [38, 45, 52, 62] {
            let plan = at(b);
            let s2 = (plan.sigma / plan.gamma).powi(2);
            assert!(s2 <= MAX_NOISE_VARIANCE, "b = {b}: (σ/γ)² = {s2:e}");
            assert!(
                plan.epsilon <= 1.0 && plan.wrap_probability <= 1e-6,
                "b = {b}"
            );
            let rel = plan.mse.total() / narrow.mse.total() - 1.0;
            assert!(rel.abs() < 1e-6, "b = {b}: error {rel:e} off b = 37's");
            let exact = crate::privacy::exact::Rational::from_f64_up(s2, 20)
                .and_then(crate::privacy::exact::DiscreteGaussian::new);
            assert!(
                exact.is_ok(),
                "b = {b}: the exact sampler refuses s² = {s2:e}"
            );
        }
        // power: the variance at b = 62 without the cap would be far outside the range
        let uncapped = narrow.gamma / 2f64.powi(62 - 37);
        assert!((narrow.sigma / uncapped).powi(2) > 1e30);
    }

    #[test]
    fn ddg_plan_meets_targets_and_gamma_is_smallest() {
        let req = request(1000, 1000, 16);
        let plan = plan_ddg(&req).unwrap();
        assert_eq!(plan.d_rot, 1024);
        assert!(plan.epsilon <= req.epsilon, "{}", plan.epsilon);
        assert!(plan.wrap_probability <= req.max_wrap_probability);
        assert!((plan.bits_per_parameter - 16.0 * 1024.0 / 1000.0).abs() < 1e-12);
        // A slightly smaller γ (with its own σ) would break the wrap target.
        let gamma = plan.gamma * (1.0 - 1e-3);
        let st = DdgSetting {
            n: 1000,
            d: 1024,
            clip: 1.0,
            gamma,
            beta: plan.beta,
        };
        let rho = zcdp::rho_for_epsilon(1.0, 1e-5).unwrap();
        let sigma = ddg::smallest_sigma_for_rho(&st, rho).unwrap();
        let w = ddg_wrap_probability(1000, 1024, 1.0, gamma, sigma, plan.beta, 1 << 16);
        assert!(w > req.max_wrap_probability, "{w}");
        // With enough bits DDG approaches the central Gaussian: σ near Δ/√(2nρ) with Δ = c.
        let rich = plan_ddg(&request(1000, 1000, 24)).unwrap();
        let central = 1.0 / (2.0 * 1000.0 * rho).sqrt();
        assert!(rich.sigma / central < 1.05, "{} vs {central}", rich.sigma);
        assert!(rich.mse.total() < plan.mse.total());
    }

    #[test]
    fn wrap_bound_is_conservative_in_simulation() {
        // Simulated (continuous stand-ins): the fraction of trials in which some coordinate of the
        // summed integer vector leaves [−M/2, M/2) is below the bound. With M chosen so that the
        // bound is ~0.5 the event must be rare-ish, and with M/4 it must be frequent (power: a
        // bound off by a factor 4 in M is distinguishable).
        let (n, d) = (50usize, 16usize);
        let (gamma, sigma) = (0.02, 0.05);
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let trials = 400;
        let mut max_abs = Vec::with_capacity(trials);
        for _ in 0..trials {
            let sum = simulate_sum(&mut rng, n, d, gamma, sigma / gamma, true);
            max_abs.push(sum.iter().fold(0.0f64, |a, v| a.max(v.abs())));
        }
        let mut m = 2u64;
        while ddg_wrap_probability(n as u64, d as u64, 1.0, gamma, sigma, 0.0, m) > 0.5 {
            m *= 2;
        }
        let bound = ddg_wrap_probability(n as u64, d as u64, 1.0, gamma, sigma, 0.0, m);
        let freq = |m: u64| {
            max_abs.iter().filter(|&&a| a >= m as f64 / 2.0).count() as f64 / trials as f64
        };
        assert!(freq(m) <= bound, "simulated {} > bound {bound}", freq(m));
        assert!(freq(m / 4) > 0.5, "M/4 wraps only {}", freq(m / 4));
    }

    /// One round with continuous stand-ins: `n` unit vectors (worst case ‖x‖ = c = 1, all equal
    /// up to sign patterns so the sum is large), scaled by 1/γ, rotated by H·D (D random per
    /// round), unbiased randomised rounding, plus N(0, s²) noise per client; returns the summed
    /// vector (integer part + noise) in the rotated domain.
    fn simulate_sum(
        rng: &mut ChaCha20Rng,
        n: usize,
        d: usize,
        gamma: f64,
        s: f64,
        aligned: bool,
    ) -> Vec<f64> {
        let signs: Vec<f64> = (0..d)
            .map(|_| if rng.random_bool(0.5) { 1.0 } else { -1.0 })
            .collect();
        let mut sum = vec![0.0; d];
        for i in 0..n {
            let mut x: Vec<f64> = (0..d)
                .map(|j| {
                    if aligned {
                        1.0
                    } else {
                        ((i * d + j) as f64 * 0.77).sin()
                    }
                })
                .collect();
            let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
            for (v, sg) in x.iter_mut().zip(&signs) {
                *v = *v / norm / gamma * sg;
            }
            fwht_normalized(&mut x).unwrap();
            for (acc, v) in sum.iter_mut().zip(&x) {
                let fl = v.floor();
                let r = if rng.random::<f64>() < v - fl {
                    fl + 1.0
                } else {
                    fl
                };
                let z: f64 = StandardNormal.sample(rng);
                *acc += r + s * z;
            }
        }
        sum
    }

    /// Monte Carlo MSE of the decoded mean (continuous stand-ins, β = 0), vs the clipped mean.
    fn monte_carlo_mse(
        n: usize,
        d: usize,
        gamma: f64,
        sigma: f64,
        trials: usize,
        seed: u64,
    ) -> (f64, f64) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let xs: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                let v: Vec<f64> = (0..d).map(|j| ((i * d + j) as f64 * 0.77).sin()).collect();
                let norm = v.iter().map(|a| a * a).sum::<f64>().sqrt();
                v.iter().map(|a| a / norm).collect()
            })
            .collect();
        let mean: Vec<f64> = (0..d)
            .map(|j| xs.iter().map(|x| x[j]).sum::<f64>() / n as f64)
            .collect();
        let mut errs = Vec::with_capacity(trials);
        for _ in 0..trials {
            let signs: Vec<f64> = (0..d)
                .map(|_| if rng.random_bool(0.5) { 1.0 } else { -1.0 })
                .collect();
            let mut sum = vec![0.0; d];
            for x in &xs {
                let mut y: Vec<f64> = x.iter().zip(&signs).map(|(a, s)| a / gamma * s).collect();
                fwht_normalized(&mut y).unwrap();
                for (acc, v) in sum.iter_mut().zip(&y) {
                    let fl = v.floor();
                    let r = if rng.random::<f64>() < v - fl {
                        fl + 1.0
                    } else {
                        fl
                    };
                    let z: f64 = StandardNormal.sample(&mut rng);
                    *acc += r + sigma / gamma * z;
                }
            }
            fwht_normalized(&mut sum).unwrap();
            let err: f64 = sum
                .iter()
                .zip(&signs)
                .zip(&mean)
                .map(|((v, s), m)| (v * s * gamma / n as f64 - m).powi(2))
                .sum();
            errs.push(err);
        }
        let mse = errs.iter().sum::<f64>() / trials as f64;
        let var = errs.iter().map(|e| (e - mse).powi(2)).sum::<f64>() / (trials - 1) as f64;
        (mse, (var / trials as f64).sqrt())
    }

    #[test]
    fn ddg_mse_terms_match_monte_carlo() {
        let (n, d) = (20usize, 16usize);
        // Noise-dominated: γ tiny, the noise term d·σ²/n is exact for the continuous stand-in.
        let (gamma, sigma) = (1e-5, 0.5);
        let (mse, se) = monte_carlo_mse(n, d, gamma, sigma, 400, 1);
        let pred = ddg_mse(n as u64, d as u64, d as u64, gamma, sigma, 0.0, 1.0);
        assert!(pred.rounding < 1e-6 * pred.noise);
        let z = (mse - pred.total()) / se;
        assert!(z.abs() < 4.5, "noise: MC {mse} ± {se} vs {}", pred.total());
        // Power: the noise term without the 1/n (or with 1/n²) is far outside.
        assert!((mse - pred.noise * n as f64).abs() / se > 4.5);
        assert!((mse - pred.noise / n as f64).abs() / se > 4.5);
        // Rounding-dominated: σ negligible; the bound d·γ²/(4n) holds and is within a factor 2
        // (uniform fractional parts give f(1−f) = 1/6 on average, ⅔ of the bound).
        let (gamma, sigma) = (0.05, 1e-9);
        let (mse, se) = monte_carlo_mse(n, d, gamma, sigma, 400, 2);
        let pred = ddg_mse(n as u64, d as u64, d as u64, gamma, sigma, 0.0, 1.0);
        assert!(
            mse - 4.5 * se <= pred.total(),
            "rounding: MC {mse} ± {se} > {}",
            pred.total()
        );
        assert!(
            mse >= 0.5 * pred.total(),
            "rounding: MC {mse} ≪ {}",
            pred.total()
        );
        // Power: a rounding term missing a factor n (γ²d/(4n²)) is exceeded by the simulation.
        assert!(mse - 4.5 * se > pred.rounding / n as f64);
    }

    #[test]
    fn sketch_plan_respects_the_bit_cap() {
        let req = request(200, 4096, 16);
        let full = plan_sketch_ddg(&req, None).unwrap();
        let capped = plan_sketch_ddg(&req, Some(1.2)).unwrap();
        assert!(capped.ddg.bits_per_parameter <= 1.2);
        assert!(capped.m <= 256 && capped.m.is_power_of_two());
        assert!(capped.ddg.mse.total() >= full.ddg.mse.total());
        let c2 = 1.0;
        assert!(
            (capped.ddg.mse.sketch - 4095.0 * c2 / capped.m as f64).abs() < 1e-12,
            "{}",
            capped.ddg.mse.sketch
        );
        assert!(capped.ddg.epsilon <= 1.0);
        assert!(capped.candidates.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn bad_requests_are_errors() {
        let good = request(100, 100, 16);
        for bad in [
            DistributedRequest { n: 0, ..good },
            DistributedRequest { d: 0, ..good },
            DistributedRequest {
                epsilon: 0.0,
                ..good
            },
            DistributedRequest {
                epsilon: f64::NAN,
                ..good
            },
            DistributedRequest { delta: 1.0, ..good },
            DistributedRequest { clip: 0.0, ..good },
            DistributedRequest { bits: 1, ..good },
            DistributedRequest { bits: 63, ..good },
            DistributedRequest {
                max_wrap_probability: 0.0,
                ..good
            },
        ] {
            assert!(plan_ddg(&bad).is_err(), "{bad:?}");
            assert!(plan_binomial(&bad).is_err(), "{bad:?}");
            assert!(plan_sketch_ddg(&bad, None).is_err(), "{bad:?}");
        }
        assert!(plan_sketch_ddg(&good, Some(-1.0)).is_err());
        // Too few bits for the sum of many clients: a clear error, not a plan that wraps.
        let e = plan_ddg(&DistributedRequest {
            bits: 4,
            n: 100_000,
            ..good
        })
        .unwrap_err();
        assert!(e.to_string().contains("too few"), "{e}");
    }
}
