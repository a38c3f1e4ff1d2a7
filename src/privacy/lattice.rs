//! Lattice noise: the default noise of every Gaussian mechanism. The projected row is rounded
//! onto the lattice `γℤ` (`γ = 2^-g`), a discrete Gaussian `N_ℤ(0, s²)` drawn with integer
//! arithmetic is added in units of `γ`, and only then is the value converted to `f32`. No
//! floating-point sample ever meets the data, so the low-bit attacks on floating-point samplers
//! (Mironov 2012; Jin et al. 2022, "Are we there yet?") have nothing to read: every output is a
//! multiple of `γ` whose law is the one the accounting below assumes.
//!
//! # The mechanism
//!
//! For a row, `y ∈ ℝ^k` is the *computed* projection (f64, in the arithmetic of
//! [`crate::mechanism::central::arithmetic`]), `Δ` the ℓ₂ sensitivity of the exact map on the
//! arithmetic's inputs (`Δ_q`, the grid's `Δ₂·(1 + 2^-q/β)`), `E` the arithmetic's bound on
//! `‖ŷ − y‖₂` between the computed and the exact projection over the input domain, and
//!
//! `ỹ = γ·(r + Z)`, `r_i = round(y_i/γ)`, `Z_i ~ N_ℤ(0, s²)` i.i.d., `s² ≥ s₁² + s₂²`, `s₁ = σ_c/γ`,
//!
//! with `σ_c` the σ the usual calibration (Theorem 3.2, Balle & Wang 2018, or Theorem 3.1) gives
//! for `(Δ_r, ε₀, δ₀)`, `Δ_r = Δ + 2E + γ√k`, and `s₂ =` [`S2`] `= 2`. `y_i·2^g` is exact in f64
//! (a power-of-two scaling) and is rounded to an integer (error ≤ ½); a value whose `|y_i|·2^g`
//! reaches 2^52 is an error, never wrapped. The conversion of `γ(r + Z)` to f32 is
//! post-processing.
//!
//! # Why it is (ε, δ)-DP
//!
//! 1. *Sensitivity of `r`.* For neighbours `x, x'` the exact projections differ by at most `Δ` in
//!    ℓ₂, each computed projection is within `E` of its exact value, and each coordinate's
//!    rounding moves it by at most ½ lattice step: `‖r(x) − r(x')‖₂ ≤ (Δ + 2E)/γ + √k = Δ_r/γ`.
//!    (The `2E` term is not in the textbook argument: it is there because the map is evaluated in
//!    floating point. Without it the argument would be about numbers the code does not compute.
//!    In f32 it was large — `Δ_r = 3Δ` at p = 4096, dprp 0.2.0 — so the map is now evaluated
//!    exactly or in f64, where `E ≤ 5·10⁻⁷·Δ` for every p ≤ 65 536.)
//! 2. *A continuous twin.* `M'(x) = K(r(x) + N(0, s₁²I))`, `K` mapping each real `u` to a draw
//!    from `N_ℤ(u, s₂²)` (the discrete Gaussian centred at `u`), is post-processing of the
//!    Gaussian mechanism with σ = `s₁` on a query of sensitivity `Δ_r/γ` — equivalently σ_c on
//!    sensitivity `Δ_r` — hence (ε₀, δ₀)-DP by the same theorem as float noise.
//! 3. *Poisson summation.* `Θ(u) = Σ_{j∈ℤ} e^{−(j−u)²/(2s₂²)} = √(2π)s₂·(1 + 2Σ_{m≥1}
//!    e^{−2π²s₂²m²} cos 2πmu)`, so `Θ(u) ∈ √(2π)s₂·[1−η, 1+η]` with `η = 2Σ_{m≥1}
//!    e^{−2π²s₂²m²}`. `M'` outputs `z` with probability `∫φ_{s₁}(u − r)e^{−(z−u)²/(2s₂²)}/Θ(u)du`,
//!    within `[1/(1+η), 1/(1−η)]` of `φ_s(z − r)` (`s² = s₁² + s₂²`, the convolution of the two
//!    Gaussian densities); the discrete Gaussian `N_ℤ(r, s²)` is `φ_s(z − r)·√(2π)s/Θ_s(0)`, in
//!    the same range (its own η is smaller since `s ≥ s₂`). So the laws of `M'` and of the
//!    lattice mechanism differ pointwise by a factor in `[1/c, c]`, `c = (1+η)/(1−η)`, per
//!    coordinate, `c^k` per row. The sampler
//!    ([`TableGaussian`](crate::privacy::exact::TableGaussian)) was within a factor `(1+e)/(1−e)`
//!    of `N_ℤ(0, s²)` pointwise (`e` = [`WEIGHT_ERROR`]) until it gained an exact correction of
//!    its envelope weights (session 17); the accounting still multiplies `c` by that factor — a charge of about 10⁻⁹ in ε that is now conservative, kept so that recorded
//!    calibrations do not change.
//!    Rounding `s²` up to an integer only adds continuous noise (a larger `s₁`), so the same
//!    argument holds with the larger `s₁`.
//! 4. *Accounting.* For any event `S`: `P(x ∈ S) ≤ c^k P'(x ∈ S) ≤ c^k(e^{ε₀}P'(x' ∈ S) + δ₀) ≤
//!    e^{ε₀ + 2k ln c}P(x' ∈ S) + c^kδ₀`. dprp takes `ε₀` the largest double `≤ ε − 2k ln c` and
//!    `δ₀` the largest double `≤ δ/c^k` ([`account`]), so the release states the requested
//!    (ε, δ) unchanged. With `s₂ = 2`, `η ≤ 2e^{−8π²}/(1 − e^{−24π²}) ≈ 1.1·10⁻³⁴` (a geometric
//!    bound on the tail, [`eta_bound`]) and `e = 2⁻⁴⁰`: `ln c ≈ 1.8·10⁻¹²`, i.e. ε₀ = ε − 3.7·10⁻⁹
//!    at k = 1024 — computed and applied, not assumed.
//! 5. *γ and σ.* `γ` is data-independent: the largest power of two with `γ√k ≤ (Δ + 2E)·2^-12` and
//!    `γ·s₂ ≤ σ_min·2^-12` (σ_min the σ for `Δ + 2E`), so the lattice adds a relative `≤ 2^-12`
//!    to the sensitivity and `≤ 2^-25` to σ². The σ every estimator uses is
//!    `σ = γ·s`: the variance of `N_ℤ(0, s²)` is at most `s²` (Canonne, Kamath, Steinke 2020,
//!    "The Discrete Gaussian for Differential Privacy", Corollary 9) and for `s ≥ 1` equals it up
//!    to a relative `≈ 8π²s²e^{−2π²s²}` — nothing at `s ≥ 2^13`.
//!
//! iDP-Gaussian (`idp-signrp-g`, `idp-signoporp-g`) applies the same construction to the noise
//! set `A` of each row (`k` replaced by `|A| ≤ k` in step 1 and the data-independent `k` in the
//! accounting of step 4) and releases the signs of `γ(r + Z)`.

use serde::{Deserialize, Serialize};

pub use super::samplers::lattice::LatticeNoise;
use super::samplers::lattice::LATTICE_LIMIT;
use crate::error::{Error, Result};
use crate::privacy::exact::WEIGHT_ERROR;
use crate::privacy::gaussian::{calibrate, GaussianCalibration, SigmaRule};

/// `s₂`, the width of the discrete Gaussian that absorbs the lattice (step 3).
pub const S2: f64 = 2.0;

/// `γ` is at most `2^-MARGIN_BITS` of the sensitivity (per √k) and of σ (per s₂).
pub const MARGIN_BITS: i32 = 12;

/// Which noise a Gaussian mechanism draws (`--noise`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NoiseChoice {
    /// Discrete Gaussian on the lattice `γℤ` (the default).
    #[default]
    Lattice,
    /// The floating-point sampler (ziggurat in f64), on request.
    Float,
}

impl NoiseChoice {
    /// Parse `--noise`.
    pub fn parse(s: &str) -> Result<NoiseChoice> {
        match s.to_ascii_lowercase().as_str() {
            "lattice" => Ok(NoiseChoice::Lattice),
            "float" => Ok(NoiseChoice::Float),
            _ => Err(Error::param(
                "‹noise›",
                format!(
                    "unknown noise '{s}' (expected lattice — the default, a discrete Gaussian on \
                     a lattice sampled with integers — or float, the floating-point sampler)"
                ),
            )),
        }
    }
}

/// The noise method recorded in a release. Releases written before dprp recorded it read as
/// [`NoiseMethod::Float`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "method", rename_all = "kebab-case")]
pub enum NoiseMethod {
    /// f64 ziggurat normals scaled by σ and rounded to f32.
    #[default]
    Float,
    /// The lattice mechanism of this module.
    Lattice(LatticeRecord),
}

impl NoiseMethod {
    /// One line for `info` and `publish`.
    pub fn describe(&self) -> String {
        match self {
            NoiseMethod::Float => {
                "float (floating-point sampler, not protected against low-bit attacks)".into()
            }
            NoiseMethod::Lattice(l) => {
                let mut s = format!(
                    "lattice: discrete Gaussian on γℤ, γ = 2^-{} (integer sampler), s₂ = {}, \
                     η ≤ {:.2e}, sampler error ≤ {:.2e}; ε₀ = {} and δ₀ = {:e} before the \
                     lattice's factor c^k (k = {}, ln c = {:.3e}); projection rounding E = {:.3e}",
                    l.g,
                    l.s2,
                    l.eta,
                    l.sampler_error,
                    l.epsilon0,
                    l.delta0,
                    l.coordinates,
                    l.log_c,
                    l.fp_error
                );
                if let Some(u) = l.sigma_unit {
                    s.push_str(&format!(
                        "; per row σ_c = (Δ₂(A) + 2E + γ√|A|)·{u:.6}, exact CKS sampler"
                    ));
                }
                if let (Some(dr), Some(sc), Some(ss)) = (l.sensitivity_r, l.sigma_c, l.s_squared) {
                    s.push_str(&format!(
                        "; Δ_r = {dr:.6}, σ_c = {sc:.6}, s² = {ss}, σ = γ·s = {:.6}",
                        l.sigma.unwrap_or(f64::NAN)
                    ));
                }
                s
            }
        }
    }
}

/// The parameters of lattice noise, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatticeRecord {
    /// `γ = 2^-g`.
    pub g: i32,
    /// `s₂`.
    pub s2: f64,
    /// Upper bound on `η(s₂)` ([`eta_bound`]).
    pub eta: f64,
    /// The sampler's pointwise relative error bound `e` ([`WEIGHT_ERROR`]).
    pub sampler_error: f64,
    /// Upper bound on `ln c` per coordinate, `c = (1+η)/(1−η)·(1+e)/(1−e)`.
    pub log_c: f64,
    /// `k` of the accounting (coordinates that receive noise, at most).
    pub coordinates: usize,
    /// `ε₀ ≤ ε − 2k·ln c`.
    pub epsilon0: f64,
    /// `δ₀ ≤ δ·c^{−k}`.
    pub delta0: f64,
    /// `E`: bound on the ℓ₂ distance between the computed and the exact projection.
    pub fp_error: f64,
    /// `Δ_r = Δ + 2E + γ√k` (fixed-σ mechanisms; per row for iDP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sensitivity_r: Option<f64>,
    /// σ_c for `(Δ_r, ε₀, δ₀)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma_c: Option<f64>,
    /// The integer `s² ≥ (σ_c/γ)² + s₂²` actually sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s_squared: Option<u64>,
    /// `σ = γ·s`, the noise σ estimators use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma: Option<f64>,
    /// iDP: σ for sensitivity 1 at `(ε₀, δ₀)`; a row's `σ_c` is `Δ_r(A)` times it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma_unit: Option<f64>,
}

/// `2^e`, exactly.
pub fn pow2(e: i32) -> f64 {
    libm::ldexp(1.0, e)
}

/// The largest double strictly below a positive finite `x`.
fn next_down(x: f64) -> f64 {
    if x > 0.0 {
        f64::from_bits(x.to_bits() - 1)
    } else {
        x
    }
}

/// The smallest double strictly above a positive finite `x`.
fn next_up(x: f64) -> f64 {
    if x >= 0.0 {
        f64::from_bits(x.to_bits() + 1)
    } else {
        x
    }
}

/// An upper bound on `η(s₂) = 2Σ_{m≥1} e^{−2π²s₂²m²}`: with `q = e^{−2π²s₂²}`, `m² ≥ 1 + 3(m−1)`
/// gives `η ≤ 2q·Σ_{j≥0} q^{3j} = 2q/(1 − q³)`; computed in f64 and inflated by `2^-40` to cover
/// the roundings. Errors for `s₂ < 1` (where the bound is no longer tiny).
pub fn eta_bound(s2: f64) -> Result<f64> {
    if !(s2.is_finite() && s2 >= 1.0) {
        return Err(Error::param(
            "lattice s₂",
            format!("s₂ = {s2} must be at least 1"),
        ));
    }
    let q = (-2.0 * std::f64::consts::PI * std::f64::consts::PI * s2 * s2).exp();
    Ok(2.0 * q / (1.0 - q * q * q) * (1.0 + pow2(-40)))
}

/// The per-coordinate log factor `ln c` (upper bound) for `η` and the sampler error `e`.
pub fn log_c(eta: f64, e: f64) -> f64 {
    let raw = (eta.ln_1p() - (-eta).ln_1p()) + (e.ln_1p() - (-e).ln_1p());
    raw * (1.0 + pow2(-40))
}

/// `(ε₀, δ₀)` with `ε₀ + 2k·ln c ≤ ε` and `c^k·δ₀ ≤ δ` (step 4), rounded in the safe direction.
pub fn account(epsilon: f64, delta: f64, k: usize, log_c: f64) -> Result<(f64, f64)> {
    let corr = next_up(2.0 * k as f64 * log_c);
    let eps0 = next_down(epsilon - corr);
    let del0 = next_down(delta * (-(k as f64) * log_c).exp() * (1.0 - pow2(-50)));
    if !(eps0 > 0.0 && del0 > 0.0) {
        return Err(Error::param(
            "‹epsilon›",
            format!(
                "ε = {epsilon} leaves nothing after the lattice's correction 2k·ln c = {corr:e}; \
                 use ‹noise float›"
            ),
        ));
    }
    Ok((eps0, del0))
}

/// The smallest `g` with `2^-g ≤ bound` (bound > 0, finite).
fn g_for(bound: f64) -> i32 {
    let mut g = (-bound.log2()).ceil() as i32;
    while pow2(-g) > bound {
        g += 1;
    }
    while pow2(-(g - 1)) <= bound {
        g -= 1;
    }
    g
}

/// Choose `γ` (step 5) for sensitivity `sens`, `k` noisy coordinates and the σ for `sens` (any
/// σ the calibration could return is at least that).
pub fn choose_g(sens: f64, k: usize, sigma_min: f64) -> i32 {
    let by_sens = sens * pow2(-MARGIN_BITS) / (k as f64).sqrt();
    let by_sigma = sigma_min * pow2(-MARGIN_BITS) / S2;
    g_for(by_sens.min(by_sigma))
}

/// Plan lattice noise for a fixed-σ Gaussian mechanism: sensitivity `sens` of the exact map,
/// projection error `fp_error`, `k` outputs, the requested (ε, δ) and the σ rule. Returns the
/// record and the calibration (whose `sigma` is `γ·s`, the σ estimators use).
pub fn plan(
    sens: f64,
    fp_error: f64,
    k: usize,
    epsilon: f64,
    delta: f64,
    rule: SigmaRule,
) -> Result<(LatticeRecord, GaussianCalibration)> {
    let eta = eta_bound(S2)?;
    let lc = log_c(eta, WEIGHT_ERROR);
    let (eps0, del0) = account(epsilon, delta, k, lc)?;
    let base = next_up(sens + 2.0 * fp_error);
    let cal0 = calibrate(base, eps0, del0, rule)?;
    let g = choose_g(base, k, cal0.sigma);
    let gamma = pow2(-g);
    let sens_r = next_up(base + gamma * next_up((k as f64).sqrt()));
    let mut cal = calibrate(sens_r, eps0, del0, rule)?;
    let s1 = cal.sigma * pow2(g); // exact
    let s_sq = (s1 * s1 * (1.0 + pow2(-50))).ceil() + (S2 * S2).ceil();
    if !(s_sq.is_finite() && s_sq <= crate::privacy::exact::TABLE_GAUSSIAN_MAX_S2 as f64) {
        return Err(Error::param(
            "lattice noise",
            format!(
                "s² = (σ_c/γ)² + s₂² = {s_sq:e} exceeds the sampler's range 2^62 (σ is too \
                 large against the lattice step at k = {k}); use ‹noise float›"
            ),
        ));
    }
    let s_sq = s_sq as u64;
    let sigma = gamma * (s_sq as f64).sqrt();
    let sigma_c = cal.sigma;
    // δ the lattice mechanism achieves at ε: c^k times the continuous twin's exact δ at ε₀
    let twin_delta = cal.delta_exact;
    cal.delta_exact = next_up(twin_delta * (k as f64 * lc).exp() * (1.0 + pow2(-50)));
    cal.sensitivity = sens;
    cal.sigma = sigma;
    cal.method = format!("{} on the lattice γℤ", cal.method);
    let rec = LatticeRecord {
        g,
        s2: S2,
        eta,
        sampler_error: WEIGHT_ERROR,
        log_c: lc,
        coordinates: k,
        epsilon0: eps0,
        delta0: del0,
        fp_error,
        sensitivity_r: Some(sens_r),
        sigma_c: Some(sigma_c),
        s_squared: Some(s_sq),
        sigma: Some(sigma),
        sigma_unit: None,
    };
    Ok((rec, cal))
}

/// Check before reading data that no row of the domain can overflow the lattice at `g`:
/// `max_abs` bounds every computed value of a row of the domain (with its rounding; the map's
/// arithmetic computes it, [`crate::mechanism::central::arithmetic::Arithmetic::max_abs_output`]).
pub fn check_range(max_abs: f64, g: i32) -> Result<()> {
    let m = max_abs * pow2(g);
    if m < LATTICE_LIMIT {
        Ok(())
    } else {
        Err(Error::param(
            "lattice noise",
            format!(
                "projected values up to {max_abs:e} on a lattice of step 2^-{g} need integers up \
                 to {m:e}, beyond 2^52 (β, and with it the lattice step, is very small); use a \
                 larger ‹beta› or ‹noise float›"
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// A value beyond the lattice's integer range is an error naming the lattice, never wrapped;
    /// values inside come out as multiples of γ.
    #[test]
    fn out_of_range_values_are_refused_and_outputs_lie_on_the_lattice() {
        let noise = LatticeNoise::new(20, 1 << 30).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let mut out = [0f32; 4];
        let e = noise
            .add(&[0.5, 1e20], &mut out[..2], &mut rng)
            .unwrap_err()
            .to_string();
        assert!(e.contains("lattice") && e.contains("2^52"), "{e}");
        let mut ok = [0f32; 4];
        noise
            .add(&[0.123_456_79, -3.5, 0.0, 7e-7], &mut ok, &mut rng)
            .unwrap();
        for v in ok {
            let t = v as f64 * pow2(20);
            assert_eq!(t, t.round(), "{v}");
        }
    }

    /// η: the geometric bound is above the series summed directly and within a factor 1 + 10⁻⁹
    /// of it at s₂ = 2 (a bound that forgot the factor 2, or summed from m = 2, would be below);
    /// s₂ < 1 is refused.
    #[test]
    fn eta_bound_is_a_tight_upper_bound() {
        for s2 in [1.0, 1.5, 2.0, 3.0] {
            let pi2 = std::f64::consts::PI.powi(2);
            let series: f64 = (1..6)
                .map(|m| 2.0 * (-2.0 * pi2 * s2 * s2 * (m * m) as f64).exp())
                .sum();
            let b = eta_bound(s2).unwrap();
            assert!(
                b >= series && b <= series * (1.0 + 1e-9),
                "{s2}: {b} vs {series}"
            );
            assert!(series / 2.0 < b / 1.5);
        }
        assert!(eta_bound(0.5).is_err());
    }

    /// The accounting leaves exactly room for the correction: ε₀ + 2k·ln c ≤ ε and
    /// c^k·δ₀ ≤ δ, and ε₀ is not lower than needed by more than a few ulps.
    #[test]
    fn account_rounds_in_the_safe_direction() {
        for (eps, k, lc) in [(1.0, 1024, 1.8e-12), (5.0, 1, 1e-20), (0.01, 100_000, 1e-9)] {
            let (e0, d0) = account(eps, 1e-6, k, lc).unwrap();
            assert!(e0 + 2.0 * k as f64 * lc <= eps);
            assert!(e0 < eps);
            assert!(eps - e0 - 2.0 * k as f64 * lc < 1e-14 * eps.max(1.0) + 1e-15);
            assert!(d0 * (k as f64 * lc).exp() <= 1e-6);
        }
        assert!(account(1e-12, 1e-6, 1024, 1e-12).is_err());
    }
}
