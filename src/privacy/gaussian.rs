//! Gaussian-mechanism calibration (DESIGN.md §4).
//!
//! * [`classical_sigma`] — Theorem 3.1 of Li & Li (Dwork & Roth, Theorem A.1):
//!   `σ = Δ₂·√(2 ln(1.25/δ)) / ε`. Proven only for ε < 1; reported for any ε, marked as such.
//! * [`analytic_sigma`] — Theorem 3.2 (Balle & Wang 2018, Theorem 8): the Gaussian mechanism with
//!   noise `N(0, σ²I)` and ℓ₂-sensitivity `Δ` is (ε,δ)-DP **iff**
//!   `Φ(Δ/(2σ) − εσ/Δ) − e^ε·Φ(−Δ/(2σ) − εσ/Δ) ≤ δ`. The left side, [`gaussian_delta`], is
//!   strictly decreasing in σ, so the smallest admissible σ is found by doubling/halving to a
//!   bracket and bisection, returning the bracket's *upper* end: the returned σ always satisfies the
//!   inequality (it is checked once more before returning).
//!
//! **Rounding in the safe direction.** Both σ's are rounded *up* past the floating-point error of
//! their evaluation. The classical σ is a product/quotient of six correctly rounded or
//! faithfully rounded operations (the logarithm's argument is ≥ 1.25, so its relative error stays
//! below 3 ulps): at most ≈ 6·2⁻⁵³ relative, and the result is multiplied by
//! `1 + 16·2⁻⁵²` ([`CLASSICAL_MARGIN`]). The analytic σ is the smallest σ whose *computed*
//! [`gaussian_delta`] plus an error bound is at most δ ([`gaussian_delta_with_error`]). The error
//! model: each log-space term `l = ln Φ(·)` comes from `erfc`/`log`/`log1p` (a few ulps each) or,
//! beyond `z = 26`, from an asymptotic series truncated below 2·10⁻¹³ relative, so it is off by at
//! most `2⁻⁴⁰·(1 + |l|)` absolute ([`ERROR_PER_UNIT`], ≈ 9·10⁻¹³: over 10³ ulps per unit); the
//! exponentials turn that into a relative error of the two terms, and the difference into an
//! absolute one of at most `2⁻⁴⁰·(2 + |l₁| + |l₂|)·Φ(a−b)`. The ratio `Φ(a−b)/δ` is what the
//! subtraction amplifies: about 1.5–60 for ε ≥ 1, but 4·10⁴ at ε = 0.001, δ = 10⁻¹⁵ — which is why
//! the margin is an error bound, not a fixed fraction of δ. `tests/calibration_exact.rs`
//! re-evaluates both defining inequalities at the returned σ in 400-bit interval / exact rational
//! arithmetic, and shows that σ rounded down by 10⁻⁷ (analytic) or 10⁻¹² (classical) fails them.
//!
//! Numerics: `Φ` of large negative arguments goes through `ln erfc` with an asymptotic expansion
//! beyond the range where `erfc` is representable, and `e^ε·Φ(·)` is formed in log space, so
//! nothing underflows or overflows for ε up to 1000 and δ down to 1e-300.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

const LN_SQRT_PI: f64 = 0.572_364_942_924_700_1;

/// Relative amount by which [`classical_sigma`] is raised above its floating-point value
/// (module documentation: 16·2⁻⁵² against an evaluation error of at most ≈ 6·2⁻⁵³).
pub const CLASSICAL_MARGIN: f64 = 16.0 * f64::EPSILON;

/// Absolute error of one log-space term `ln Φ(·)` per unit of its magnitude, `2⁻⁴⁰` (module
/// documentation); [`analytic_sigma`] keeps the computed δ(σ) that far below δ.
pub const ERROR_PER_UNIT: f64 = 1.0 / (1u64 << 40) as f64;

/// `ln erfc(z)`, accurate for all finite `z` (no underflow for large `z`).
pub fn ln_erfc(z: f64) -> f64 {
    if z < 26.0 {
        libm::log(libm::erfc(z))
    } else {
        // erfc(z) = exp(-z²)/(z√π) · (1 − 1/(2z²) + 3/(4z⁴) − 15/(8z⁶) + 105/(16z⁸) − …);
        // at z ≥ 26 the truncation error is below 1e-13 relative.
        let w = 1.0 / (2.0 * z * z);
        let series = 1.0 - w + 3.0 * w * w - 15.0 * w * w * w + 105.0 * w * w * w * w;
        -z * z - libm::log(z) - LN_SQRT_PI + libm::log(series)
    }
}

/// Standard normal CDF `Φ(x)`.
pub fn norm_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// `ln Φ(x)`, accurate for very negative `x`.
pub fn ln_norm_cdf(x: f64) -> f64 {
    if x > -1.0 {
        libm::log1p(-0.5 * libm::erfc(x / std::f64::consts::SQRT_2))
    } else {
        std::f64::consts::LN_2.mul_add(-1.0, ln_erfc(-x / std::f64::consts::SQRT_2))
    }
}

/// Standard normal density `φ(x)`.
pub fn norm_pdf(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// The smallest δ for which `N(0,σ²)` noise on a query of ℓ₂-sensitivity `sensitivity` is
/// (ε,δ)-DP: `Φ(Δ/(2σ) − εσ/Δ) − e^ε·Φ(−Δ/(2σ) − εσ/Δ)` (Balle & Wang 2018, Theorem 8).
pub fn gaussian_delta(sigma: f64, sensitivity: f64, epsilon: f64) -> f64 {
    gaussian_delta_with_error(sigma, sensitivity, epsilon).0
}

/// [`gaussian_delta`] and a bound on its floating-point error (module documentation): with
/// `l₁ = ln Φ(a−b)` and `l₂ = ε + ln Φ(−a−b)` each off by at most `2⁻⁴⁰·(1 + |l|)` absolute
/// ([`ERROR_PER_UNIT`]), `e^{l₁} − e^{l₂}` is off by at most
/// `2⁻⁴⁰·(2 + |l₁| + |l₂|)·e^{l₁}` plus the roundings of the last two operations.
pub fn gaussian_delta_with_error(sigma: f64, sensitivity: f64, epsilon: f64) -> (f64, f64) {
    let a = sensitivity / (2.0 * sigma);
    let b = epsilon * sigma / sensitivity;
    let l1 = ln_norm_cdf(a - b);
    let l2 = epsilon + ln_norm_cdf(-a - b);
    if l1.exp() == 0.0 {
        // Φ(a − b) underflows to 0 (and e^ε·Φ(−a−b) ≤ it): δ(σ) is below the smallest f64; the
        // error bound's `|l|·e^l` would be ∞·0 = NaN where |l₁| + |l₂| overflows
        return (0.0, 0.0);
    }
    let err = ERROR_PER_UNIT * (2.0 + l1.abs() + l2.abs()) * l1.exp();
    if l2 >= l1 {
        // Only possible through rounding when both terms are equal: the true value is ≥ 0.
        return (0.0, err);
    }
    // exp(l1) − exp(l2) = exp(l1)·(1 − exp(l2 − l1))
    (l1.exp() * -(l2 - l1).exp_m1(), err)
}

fn check_eps_delta(epsilon: f64, delta: f64) -> Result<()> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(Error::param(
            "‹epsilon›",
            format!("ε must be a positive finite number, got {epsilon}"),
        ));
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(Error::param(
            "‹delta›",
            format!("δ must lie strictly between 0 and 1, got {delta}"),
        ));
    }
    Ok(())
}

fn check_sensitivity(sensitivity: f64) -> Result<()> {
    if !(sensitivity.is_finite() && sensitivity > 0.0) {
        return Err(Error::param(
            "‹sensitivity›",
            format!("the sensitivity must be a positive finite number, got {sensitivity}"),
        ));
    }
    Ok(())
}

/// Classical Gaussian mechanism σ (Theorem 3.1): `Δ·√(2 ln(1.25/δ))/ε`. The theorem is proven for
/// ε < 1 only; [`classical_is_proven`] says whether it applies.
pub fn classical_sigma(sensitivity: f64, epsilon: f64, delta: f64) -> Result<f64> {
    check_eps_delta(epsilon, delta)?;
    check_sensitivity(sensitivity)?;
    Ok(sensitivity * (2.0 * (1.25 / delta).ln()).sqrt() / epsilon * (1.0 + CLASSICAL_MARGIN))
}

/// Whether the classical bound is backed by its theorem (ε < 1).
pub fn classical_is_proven(epsilon: f64) -> bool {
    epsilon < 1.0
}

/// Analytic ("optimal") Gaussian mechanism σ (Theorem 3.2): the smallest σ with
/// [`gaussian_delta`]`(σ) + error(σ) ≤ δ` ([`gaussian_delta_with_error`], so that the true
/// `δ(σ) ≤ δ` despite floating-point error), to a relative precision of about 1e-13, rounded up.
pub fn analytic_sigma(sensitivity: f64, epsilon: f64, delta: f64) -> Result<f64> {
    check_eps_delta(epsilon, delta)?;
    check_sensitivity(sensitivity)?;
    // the computed δ(σ) plus its error bound: non-increasing in σ like δ(σ) itself
    // (NaN — never expected — counts as "above δ", so it can only make σ larger)
    let f = |s: f64| {
        let (d, err) = gaussian_delta_with_error(s, sensitivity, epsilon);
        let v = d + err;
        if v.is_nan() {
            f64::INFINITY
        } else {
            v
        }
    };
    // Bracket [lo, hi] with f(lo) > δ ≥ f(hi). f → 1 as σ → 0 and → 0 as σ → ∞.
    let mut hi = sensitivity;
    let mut lo;
    let mut steps = 0;
    if f(hi) <= delta {
        lo = hi / 2.0;
        while f(lo) <= delta {
            hi = lo;
            lo /= 2.0;
            steps += 1;
            if steps > 2000 || lo == 0.0 {
                return Err(Error::param("‹epsilon›", "calibration failed to bracket σ"));
            }
        }
    } else {
        lo = hi;
        hi *= 2.0;
        while f(hi) > delta {
            lo = hi;
            hi *= 2.0;
            steps += 1;
            if steps > 2000 || !hi.is_finite() {
                return Err(Error::param("‹delta›", "calibration failed to bracket σ"));
            }
        }
    }
    for _ in 0..200 {
        if hi - lo <= hi * 1e-13 {
            break;
        }
        let mid = 0.5 * (lo + hi);
        if f(mid) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    debug_assert!(f(hi) <= delta);
    if f(hi) > delta || !hi.is_finite() {
        return Err(Error::param("‹epsilon›", "calibration did not converge"));
    }
    Ok(hi)
}

/// How σ was calibrated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GaussianCalibration {
    /// ℓ₂-sensitivity Δ₂ of the (projected) row under the neighbour relation.
    pub sensitivity: f64,
    /// The σ actually used.
    pub sigma: f64,
    /// `analytic` (Theorem 3.2) or `classical` (Theorem 3.1).
    pub method: String,
    /// Analytic σ for the same Δ₂, ε, δ.
    pub sigma_analytic: f64,
    /// Classical σ for the same Δ₂, ε, δ.
    pub sigma_classical: f64,
    /// Whether the classical bound is backed by its theorem (ε < 1).
    pub classical_proven: bool,
    /// The exact δ of the σ used at this ε (Balle & Wang's iff condition): the guarantee's δ is
    /// the larger of this and the requested δ.
    pub delta_exact: f64,
}

/// Which σ formula a mechanism uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigmaRule {
    /// Theorem 3.2 (Balle & Wang): smallest σ.
    Analytic,
    /// Theorem 3.1: `Δ√(2 ln(1.25/δ))/ε`.
    Classical,
}

impl GaussianCalibration {
    /// The rule this σ was computed with. The record keeps it as the sentence [`calibrate`] wrote
    /// (releases store that text); this is the one place that reads it back.
    pub fn rule(&self) -> SigmaRule {
        if self.method.starts_with("classical") {
            SigmaRule::Classical
        } else {
            SigmaRule::Analytic
        }
    }
}

/// Calibrate σ for sensitivity `sens` at (ε, δ) with `rule`, recording both σ's and the exact δ
/// the chosen σ achieves at ε.
pub fn calibrate(
    sens: f64,
    epsilon: f64,
    delta: f64,
    rule: SigmaRule,
) -> Result<GaussianCalibration> {
    let sa = analytic_sigma(sens, epsilon, delta)?;
    let sc = classical_sigma(sens, epsilon, delta)?;
    let sigma = match rule {
        SigmaRule::Analytic => sa,
        SigmaRule::Classical => sc,
    };
    Ok(GaussianCalibration {
        sensitivity: sens,
        sigma,
        delta_exact: gaussian_delta(sigma, sens, epsilon),
        method: match rule {
            SigmaRule::Analytic => "analytic (Theorem 3.2, Balle & Wang 2018)".into(),
            SigmaRule::Classical => "classical (Theorem 3.1)".into(),
        },
        sigma_analytic: sa,
        sigma_classical: sc,
        classical_proven: classical_is_proven(epsilon),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// DESIGN.md §4 reference values (Δ = 1), to 4 significant digits.
    const TABLE: [(f64, f64, f64, f64); 6] = [
        (0.5, 8.0576, 10.5976, 7.0318),
        (1.0, 4.2247, 5.2988, 3.7306),
        (2.0, 2.2305, 2.6494, 1.9938),
        (5.0, 0.9800, 1.0598, 0.8919),
        (10.0, 0.5411, 0.5299, 0.4999),
        (20.0, 0.3091, 0.2649, 0.2900),
    ];

    fn sig4(a: f64, b: f64) -> bool {
        ((a - b) / b).abs() < 5e-5 || (a - b).abs() < 5.1e-5
    }

    #[test]
    fn analytic_matches_design_table() {
        for &(eps, s6, c6, s5) in &TABLE {
            let a6 = analytic_sigma(1.0, eps, 1e-6).unwrap();
            let a5 = analytic_sigma(1.0, eps, 1e-5).unwrap();
            let cl = classical_sigma(1.0, eps, 1e-6).unwrap();
            assert!(sig4(a6, s6), "eps {eps}: {a6} vs {s6}");
            assert!(sig4(a5, s5), "eps {eps}: {a5} vs {s5}");
            assert!(sig4(cl, c6), "eps {eps}: {cl} vs {c6}");
        }
    }

    #[test]
    fn returned_sigma_satisfies_and_is_tight() {
        for &eps in &[0.01, 0.1, 0.5, 1.0, 3.0, 10.0, 50.0, 100.0, 300.0, 1000.0] {
            for &delta in &[1e-12, 1e-9, 1e-6, 1e-3, 0.1] {
                for &sens in &[0.5, 1.0, 2.0] {
                    let s = analytic_sigma(sens, eps, delta).unwrap();
                    assert!(s.is_finite() && s > 0.0);
                    let d = gaussian_delta(s, sens, eps);
                    assert!(d <= delta, "eps {eps} delta {delta}: {d}");
                    // 1e-9 below, the inequality must fail: σ is the smallest.
                    let d2 = gaussian_delta(s * (1.0 - 1e-9), sens, eps);
                    assert!(
                        d2 > delta * (1.0 - 1e-6),
                        "eps {eps} delta {delta}: not tight"
                    );
                    // scaling: σ is linear in Δ
                    let s1 = analytic_sigma(1.0, eps, delta).unwrap();
                    assert!(((s / sens) / s1 - 1.0).abs() < 1e-9);
                }
            }
        }
    }

    /// The rule read back from a record is the rule σ was computed with (releases keep only the
    /// sentence; the lattice rounding and the classical warning act on the rule).
    #[test]
    fn the_recorded_method_gives_back_its_rule() {
        for rule in [SigmaRule::Analytic, SigmaRule::Classical] {
            let cal = calibrate(1.0, 0.5, 1e-6, rule).unwrap();
            assert_eq!(cal.rule(), rule);
        }
        // power: the two rules give two σ, and a record is not read as the other rule
        let a = calibrate(1.0, 0.5, 1e-6, SigmaRule::Analytic).unwrap();
        let c = calibrate(1.0, 0.5, 1e-6, SigmaRule::Classical).unwrap();
        assert!(a.sigma < c.sigma && a.rule() != c.rule());
    }

    #[test]
    fn analytic_beats_classical_below_one() {
        for &eps in &[0.01, 0.1, 0.5, 0.9] {
            let a = analytic_sigma(1.0, eps, 1e-6).unwrap();
            let c = classical_sigma(1.0, eps, 1e-6).unwrap();
            assert!(a < c);
            // and the classical σ, where proven, is indeed (ε,δ)-DP
            assert!(gaussian_delta(c, 1.0, eps) <= 1e-6);
        }
    }

    #[test]
    fn log_cdf_is_accurate_in_the_tails() {
        // ln Φ(-40) = -804.6084420137538 (from the asymptotic series, cross-checked with mpmath)
        assert!((ln_norm_cdf(-40.0) - (-804.608_442_013_753_8)).abs() < 1e-9);
        // Continuity at the switch points
        for &x in &[-1.0f64, -36.769_552_621_700_47] {
            let l = ln_norm_cdf(x - 1e-9);
            let r = ln_norm_cdf(x + 1e-9);
            assert!((l - r).abs() < 1e-6, "{x}: {l} {r}");
        }
        assert!((norm_cdf(1.0) - 0.841_344_746_068_542_9).abs() < 1e-15);
        assert!((ln_norm_cdf(-5.0) - (2.866_515_718_791_939e-7f64).ln()).abs() < 1e-12);
    }

    #[test]
    fn bad_parameters_rejected() {
        assert!(analytic_sigma(1.0, 0.0, 1e-6).is_err());
        assert!(analytic_sigma(1.0, -1.0, 1e-6).is_err());
        assert!(analytic_sigma(1.0, f64::NAN, 1e-6).is_err());
        assert!(analytic_sigma(1.0, f64::INFINITY, 1e-6).is_err());
        assert!(analytic_sigma(1.0, 1.0, 0.0).is_err());
        assert!(analytic_sigma(1.0, 1.0, 1.0).is_err());
        assert!(analytic_sigma(0.0, 1.0, 1e-6).is_err());
        assert!(classical_sigma(1.0, 1.0, 1.5).is_err());
    }
}
