//! The Binomial mechanism's accountant (Agarwal et al. 2018, *cpSGD*, Theorem 1, as restated in
//! MECHANISMS-LDP.md §D from the proof in the paper's Appendix B).
//!
//! The mechanism releases `s·(Z − Np) + f(D)` with `Z_j ~ Bin(N, p)` i.i.d. over the `d`
//! coordinates. With `p' = min(p, 1 − p)` (the guarantee is symmetric in `p ↔ 1 − p`; the constants
//! below are evaluated at `p'`, which is the conservative choice since `b_p` is larger there) and
//! `q = N·p(1 − p)`, it is (ε, δ)-DP for
//!
//! ```text
//! ε = Δ₂√(2 ln(1.25/δ)) / (s√q)
//!   + [Δ₂ c_p √(ln(10/δ)) + Δ₁ b_p] / [s·q·(1 − δ/10)]
//!   + [(2/3)Δ∞ ln(1.25/δ) + Δ∞ d_p ln(20d/δ) ln(10/δ)] / [s·q]
//! c_p = √2·(3p³ + 3(1−p)³ + 2p² + 2(1−p)²),  d_p = (4/3)(p² + (1−p)²),
//! b_p = 2(p² + (1−p)²)/3 + (1 − 2p)
//! ```
//!
//! provided `q ≥ max(23 ln(10d/δ), 2Δ∞/s)` — outside that range the theorem says nothing, and
//! [`epsilon`] returns an error naming the failing condition instead of a number.
//!
//! Every term decreases in `q` (hence in `N`) and the validity condition is an up-set in `N`, so
//! "ε(N) ≤ target and valid" is monotone in `N`: [`smallest_n`] finds the exact smallest integer
//! `N` by doubling and bisection.

use crate::error::{Error, Result};

/// The sensitivities of the query the Binomial mechanism protects (in the query's units, before
/// the scale `s`): ℓ₁, ℓ₂ and ℓ∞ norms of the largest change one client can make.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sensitivities {
    /// ℓ₁ sensitivity Δ₁.
    pub l1: f64,
    /// ℓ₂ sensitivity Δ₂.
    pub l2: f64,
    /// ℓ∞ sensitivity Δ∞.
    pub linf: f64,
}

impl Sensitivities {
    /// All three equal to `v` (a scalar query of sensitivity `v`).
    pub fn all(v: f64) -> Sensitivities {
        Sensitivities {
            l1: v,
            l2: v,
            linf: v,
        }
    }

    fn check(&self) -> Result<()> {
        for (name, v) in [("Δ₁", self.l1), ("Δ₂", self.l2), ("Δ∞", self.linf)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::param(
                    "binomial sensitivity",
                    format!("{name} must be a positive finite number, got {v}"),
                ));
            }
        }
        Ok(())
    }
}

/// The public parameters of one Binomial-mechanism release, apart from `N`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BinomialSetting {
    /// Success probability `p ∈ (0, 1)` of each Bernoulli trial.
    pub p: f64,
    /// Scale `s > 0`: one unit of `Z` is worth `s` in the query's units.
    pub s: f64,
    /// Target δ ∈ (0, 1).
    pub delta: f64,
    /// Dimension `d ≥ 1` (number of coordinates noised).
    pub d: u64,
    /// Sensitivities of the query.
    pub sens: Sensitivities,
}

impl BinomialSetting {
    fn check(&self) -> Result<()> {
        if !(self.p > 0.0 && self.p < 1.0) {
            return Err(Error::param(
                "binomial p",
                format!("p must lie strictly between 0 and 1, got {}", self.p),
            ));
        }
        if !(self.s.is_finite() && self.s > 0.0) {
            return Err(Error::param(
                "binomial scale s",
                format!("s must be a positive finite number, got {}", self.s),
            ));
        }
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(Error::param(
                "‹delta›",
                format!("δ must lie strictly between 0 and 1, got {}", self.delta),
            ));
        }
        if self.d == 0 {
            return Err(Error::param("dimension d", "d must be at least 1"));
        }
        self.sens.check()
    }

    /// The smallest `N·p(1−p)` for which Theorem 1 holds: `max(23 ln(10d/δ), 2Δ∞/s)`, with which of
    /// the two it is.
    fn validity_threshold(&self) -> (f64, f64) {
        let a = 23.0 * (10.0 * self.d as f64 / self.delta).ln();
        let b = 2.0 * self.sens.linf / self.s;
        (a, b)
    }
}

/// The constants `(c_p, d_p, b_p)` of Theorem 1, at `p' = min(p, 1 − p)`.
pub fn constants(p: f64) -> (f64, f64, f64) {
    let p = p.min(1.0 - p);
    let q = 1.0 - p;
    let sq = p * p + q * q;
    let c_p = std::f64::consts::SQRT_2 * (3.0 * p * p * p + 3.0 * q * q * q + 2.0 * sq);
    let d_p = 4.0 / 3.0 * sq;
    let b_p = 2.0 * sq / 3.0 + (1.0 - 2.0 * p);
    (c_p, d_p, b_p)
}

/// ε of Theorem 1 for `n_trials` Bernoulli trials per coordinate, or an error naming the
/// validity condition `N·p(1−p) ≥ max(23 ln(10d/δ), 2Δ∞/s)` that fails.
pub fn epsilon(n_trials: u64, setting: &BinomialSetting) -> Result<f64> {
    setting.check()?;
    let p = setting.p;
    let q = n_trials as f64 * p * (1.0 - p);
    let (a, b) = setting.validity_threshold();
    if q < a {
        return Err(Error::param(
            "binomial trials N",
            format!(
                "Theorem 1 of cpSGD needs N·p(1−p) ≥ 23·ln(10d/δ) = {a:.6}, but N = {n_trials}, \
                 p = {p} give N·p(1−p) = {q:.6}"
            ),
        ));
    }
    if q < b {
        return Err(Error::param(
            "binomial trials N",
            format!(
                "Theorem 1 of cpSGD needs N·p(1−p) ≥ 2Δ∞/s = {b:.6}, but N = {n_trials}, p = {p} \
                 give N·p(1−p) = {q:.6}"
            ),
        ));
    }
    Ok(epsilon_unchecked(q, setting))
}

/// The formula alone, for `q = N·p(1−p)` (no validity check).
fn epsilon_unchecked(q: f64, st: &BinomialSetting) -> f64 {
    let (c_p, d_p, b_p) = constants(st.p);
    let Sensitivities { l1, l2, linf } = st.sens;
    let (s, delta, d) = (st.s, st.delta, st.d as f64);
    let ln125 = (1.25 / delta).ln();
    let ln10 = (10.0 / delta).ln();
    let t1 = l2 * (2.0 * ln125).sqrt() / (s * q.sqrt());
    let t2 = (l2 * c_p * ln10.sqrt() + l1 * b_p) / (s * q * (1.0 - delta / 10.0));
    let t3 = (2.0 / 3.0 * linf * ln125 + linf * d_p * (20.0 * d / delta).ln() * ln10) / (s * q);
    t1 + t2 + t3
}

/// Largest `N` the search considers: `N·p(1−p)` stays exactly representable in an `f64`.
const MAX_TRIALS: u64 = 1 << 53;

/// The smallest number of trials `N` for which Theorem 1 is valid and gives ε ≤ `target_epsilon`
/// (exact: `N − 1` fails one of the two). Errors if ε is not a positive finite number or no
/// `N ≤ 2^53` reaches it.
pub fn smallest_n(target_epsilon: f64, setting: &BinomialSetting) -> Result<u64> {
    setting.check()?;
    crate::privacy::guarantee::check_epsilon(target_epsilon)?;
    let ok = |n: u64| matches!(epsilon(n, setting), Ok(e) if e <= target_epsilon);
    let mut hi = 1u64;
    while !ok(hi) {
        if hi >= MAX_TRIALS {
            return Err(Error::param(
                "‹epsilon›",
                format!(
                    "the Binomial mechanism needs more than 2^53 trials to reach ε = \
                     {target_epsilon} at δ = {}",
                    setting.delta
                ),
            ));
        }
        hi = (hi * 2).min(MAX_TRIALS);
    }
    // Invariant: ok(hi); lo < hi and (lo == 0 or !ok(lo)).
    let mut lo = hi / 2;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(p: f64, delta: f64, d: u64, sens: Sensitivities) -> BinomialSetting {
        BinomialSetting {
            p,
            s: 1.0,
            delta,
            d,
            sens,
        }
    }

    #[test]
    fn reference_epsilon_at_n_2000() {
        // MECHANISMS-LDP.md §D: ε(N=2000, p=½, δ=1e-6, d=1, s=1, all Δ=1) = 0.6375134.
        let e = epsilon(2000, &setting(0.5, 1e-6, 1, Sensitivities::all(1.0))).unwrap();
        assert!((e - 0.637_513_4).abs() < 5e-8, "{e}");
    }

    #[test]
    fn reference_smallest_n() {
        let one = Sensitivities::all(1.0);
        // MECHANISMS-LDP.md §D, every reference value.
        assert_eq!(smallest_n(1.0, &setting(0.5, 1e-6, 1, one)).unwrap(), 1483);
        assert_eq!(smallest_n(1.0, &setting(0.25, 1e-6, 1, one)).unwrap(), 1978);
        assert_eq!(smallest_n(1.0, &setting(0.75, 1e-6, 1, one)).unwrap(), 1978);
        assert_eq!(smallest_n(0.5, &setting(0.5, 1e-6, 1, one)).unwrap(), 2705);
        assert_eq!(smallest_n(0.25, &setting(0.5, 1e-6, 1, one)).unwrap(), 6666);
        let sens = Sensitivities {
            l1: 10.0,
            l2: 3.0,
            linf: 1.0,
        };
        assert_eq!(
            smallest_n(1.0, &setting(0.5, 1e-5, 1000, sens)).unwrap(),
            2355
        );
    }

    #[test]
    fn smallest_n_is_exact_and_monotone() {
        let st = setting(0.5, 1e-6, 1, Sensitivities::all(1.0));
        let n = smallest_n(1.0, &st).unwrap();
        assert!(epsilon(n, &st).unwrap() <= 1.0);
        // N − 1 = 1482 fails through the validity condition: 1483 (p = ½) and 1978 (p = ¼) are
        // the smallest *valid* N (ε there is 0.8154 and 0.9509, already below 1).
        assert!(epsilon(n - 1, &st).is_err());
        let st4 = BinomialSetting { p: 0.25, ..st };
        assert!(epsilon(1977, &st4).is_err());
        assert!((epsilon(1978, &st4).unwrap() - 0.950_924_6).abs() < 1e-7);
        assert!((epsilon(1483, &st).unwrap() - 0.815_373_2).abs() < 1e-7);
        // 2705 (ε ≤ ½) is set by ε itself: N − 1 is valid but misses the target.
        let e = epsilon(2704, &st).unwrap();
        assert!(e > 0.5 && e < 0.500_061, "{e}");
        assert!(epsilon(2705, &st).unwrap() <= 0.5);
        let mut prev = f64::INFINITY;
        for n in (1483..20_000).step_by(97) {
            let e = epsilon(n, &st).unwrap();
            assert!(e < prev);
            prev = e;
        }
    }

    #[test]
    fn p_prime_makes_the_bound_symmetric() {
        // Evaluated at p' = min(p, 1 − p): p and 1 − p give the same ε, and it is the larger
        // (conservative) of the two readings of b_p.
        let one = Sensitivities::all(1.0);
        let a = epsilon(3000, &setting(0.25, 1e-6, 1, one)).unwrap();
        let b = epsilon(3000, &setting(0.75, 1e-6, 1, one)).unwrap();
        assert_eq!(a, b);
        let (_, _, bp_low) = constants(0.25);
        assert!(bp_low > 2.0 * (0.75f64 * 0.75 + 0.0625) / 3.0 + (1.0 - 1.5));
    }

    #[test]
    fn validity_conditions_are_named() {
        let st = setting(0.5, 1e-6, 1, Sensitivities::all(1.0));
        // 23 ln(1e7) = 370.7…, so N·¼ must reach it: N = 1483 is the smallest valid N.
        let err = epsilon(1482, &st).unwrap_err().to_string();
        assert!(err.contains("23·ln(10d/δ)"), "{err}");
        assert!(epsilon(1483, &st).is_ok());
        // A large Δ∞/s makes the second condition bind.
        let st2 = BinomialSetting {
            s: 0.001,
            ..setting(0.5, 1e-6, 1, Sensitivities::all(1.0))
        };
        let err = epsilon(1483, &st2).unwrap_err().to_string();
        assert!(err.contains("2Δ∞/s"), "{err}");
    }

    #[test]
    fn bad_parameters_are_errors() {
        let one = Sensitivities::all(1.0);
        assert!(epsilon(2000, &setting(0.0, 1e-6, 1, one)).is_err());
        assert!(epsilon(2000, &setting(1.0, 1e-6, 1, one)).is_err());
        assert!(epsilon(2000, &setting(0.5, 0.0, 1, one)).is_err());
        assert!(epsilon(2000, &setting(0.5, 1e-6, 0, one)).is_err());
        assert!(epsilon(2000, &setting(0.5, 1e-6, 1, Sensitivities::all(f64::NAN))).is_err());
        assert!(epsilon(2000, &setting(0.5, 1e-6, 1, Sensitivities::all(-1.0))).is_err());
        assert!(smallest_n(0.0, &setting(0.5, 1e-6, 1, one)).is_err());
        assert!(smallest_n(f64::INFINITY, &setting(0.5, 1e-6, 1, one)).is_err());
        // Unreachable target: refused, not looped on.
        assert!(smallest_n(1e-9, &setting(0.5, 1e-6, 1, one)).is_err());
    }
}
