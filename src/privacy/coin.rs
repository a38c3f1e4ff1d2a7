//! Exact coins for the local-DP mechanisms: a Bernoulli(`T/2¹²⁸`) decided by comparing uniform
//! bits with the 128-bit integer `T`, computed from the privacy budget with the rigorous
//! fixed-point bounds of `e^{−x}` of [`super::rr`] and rounded in the direction the privacy
//! argument needs. No `uniform_f64 < p`. A toss draws one 64-bit word `w` and compares it with
//! the top half `T_hi` of `T`; only on a tie (probability 2⁻⁶⁴) does it draw a second word and
//! compare it with the low half — exactly `P(heads) = T/2¹²⁸`. 128 bits (not the 64 of the sign
//! flips' [`super::rr::Flip`]) keep the coin faithful to the nominal probability far into the
//! tails: PrivUnitInf's brute-force probes need `p ≈ 10⁻¹⁸` to 2% in odds.
//!
//! * [`Coin::odds_at_most`]`(ε₀)` — the branch coin of PrivUnit2 (Bhowmick et al. 2018,
//!   Algorithm 1), PrivUnitInf (Algorithm 2) and PrivUnitG (Asi et al. 2023, Algorithm 8):
//!   `P = T/2¹²⁸` with **odds `P/(1−P) ≤ e^{ε₀}`**, the only property of `p` their proofs use
//!   (the largest density ratio is `[p/P₊]/[(1−p)/P₋] = e^{ε₀}·e^{ε_cap}`). For `ε₀ ≥ 0`,
//!   `T = 2¹²⁸ − ⌈2¹²⁸·U/(1+U)⌉` with a rigorous upper bound `U ≥ e^{−ε₀}` (so the tails
//!   probability is at least `1/(1+e^{ε₀})`); for `ε₀ < 0`, `T = ⌊2¹²⁸·L/(1+L)⌋` with a rigorous
//!   lower bound `L ≤ e^{−|ε₀|}` (`σ(ε₀) = e^{−|ε₀|}/(1 + e^{−|ε₀|})` increases with it).
//! * [`Coin::k_ary_keep`]`(ε, k)` — the (k+1)-ary randomised response of ScalarDP (Algorithm 3,
//!   Lemma 4.3): keep the true level with `P = T/2¹²⁸ ≤ e^ε/(e^ε + k)`, i.e. **`P/((1−P)/k) ≤
//!   e^ε`**: `T = ⌊2¹²⁸/(1 + kU)⌋` with `U ≥ e^{−ε}` (the product `kU` is formed exactly in 256
//!   bits and, when it exceeds 2¹²⁶ in the fixed point, shifted right rounding up — which only
//!   lowers `T`).
//!
//! **Why it matters beyond the low bits.** With `p` an `f64` and a 53-bit uniform, `p` rounds to
//! 1.0 once `ε₀ ≳ 37`: the complement branch was then never drawn, and two inputs whose caps are
//! disjoint had an infinite density ratio. Here the tails probability is at least
//! `1/(1+e^{ε₀})` rounded up (and at least 2⁻¹²⁶) whenever the budget is finite, so the odds
//! bound holds exactly.
//!
//! The mechanisms use the coin's own probability (`T/2¹²⁸`, not the nominal `σ(ε₀)`) in their
//! debiasing constants, so the estimators are unbiased for the coin actually tossed.
//! tests/calibration_exact.rs checks both inequalities in exact rational arithmetic and that
//! `T + 2²⁸` (ScalarDP: `T + 2⁸k`) violates them — the rounding, including the 126-bit
//! fixed-point bound's own error, costs less than 2⁻¹⁰⁰ (`k·2⁻¹²⁰`) in probability.

use super::rr::{decompose, div_2_128, exp_neg_lower, exp_neg_upper, ONE};
use super::samplers::coin::mul_u128_u64;
pub use super::samplers::coin::Coin;
use crate::error::{Error, Result};

impl Coin {
    /// The coin with odds at most `e^{x}`: `P = T/2¹²⁸ ≤ σ(x) = 1/(1+e^{−x})`, for any finite
    /// `x` (module documentation).
    ///
    /// # Errors
    /// `x` NaN or infinite.
    pub fn odds_at_most(x: f64) -> Result<Coin> {
        if !x.is_finite() {
            return Err(Error::param(
                "coin budget",
                format!("the coin's budget ε₀ must be finite, got {x}"),
            ));
        }
        let (m, e) = decompose(x.abs()).expect("|x| is finite");
        let threshold = if x >= 0.0 {
            // tails ⌈2^128·U/(1+U)⌉ ∈ [1, 2^127], so T = 2^128 − tails fits
            let u = exp_neg_upper(m, e);
            let tails = div_2_128(u, ONE + u, true);
            (u128::MAX - tails) + 1
        } else {
            let l = exp_neg_lower(m, e);
            div_2_128(l, ONE + l, false)
        };
        Ok(Coin { threshold })
    }

    /// The keep coin of (k+1)-ary randomised response at `ε`: `P = T/2¹²⁸ ≤ e^ε/(e^ε + k)`
    /// (module documentation).
    ///
    /// # Errors
    /// `ε` NaN, negative or infinite; `k = 0`.
    pub fn k_ary_keep(epsilon: f64, k: u64) -> Result<Coin> {
        let (m, e) = decompose(epsilon).ok_or_else(|| {
            Error::param(
                "ε (k-ary randomised response)",
                format!("must be a finite non-negative number, got {epsilon}"),
            )
        })?;
        if k == 0 {
            return Err(Error::param(
                "k (k-ary randomised response)",
                "needs at least one other value, got k = 0".to_string(),
            ));
        }
        let u = exp_neg_upper(m, e); // ≥ 1
        let (hi, lo) = mul_u128_u64(u, k);
        // v = ⌈k·U/2^s⌉ ≤ 2^126 and one = 2^{126−s}: v/one ≥ k·U/2^126 ≥ k·e^{−ε}
        let bits = if hi == 0 {
            128 - lo.leading_zeros()
        } else {
            256 - hi.leading_zeros()
        };
        let s = bits.saturating_sub(126);
        let v = if s == 0 {
            lo
        } else {
            let kept = (lo >> s) | (hi << (128 - s)); // s ≤ 64 < 128
            let lost = lo & ((1u128 << s) - 1) != 0;
            kept + lost as u128
        };
        let one = ONE >> s;
        Ok(Coin {
            threshold: div_2_128(one, one + v, false),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::samplers::coin::TWO128;
    use rand::SeedableRng;

    #[test]
    fn product_is_exact() {
        assert_eq!(mul_u128_u64(1, 1), (0, 1));
        assert_eq!(mul_u128_u64(u128::MAX, 1), (0, u128::MAX));
        assert_eq!(mul_u128_u64(u128::MAX, 2), (1, u128::MAX - 1));
        assert_eq!(mul_u128_u64(1 << 127, 1 << 63), (1 << 62, 0));
        let (h, l) = mul_u128_u64(ONE + 12345, 1 << 40);
        assert_eq!((h, l), (1 << 38, 12345u128 << 40));
    }

    /// Nominal values: the coins sit within 2⁻¹⁰⁰ of the float probabilities, on the safe side.
    #[test]
    fn coins_are_next_to_the_nominal_probability_on_the_safe_side() {
        let tiny = 2f64.powi(-100);
        for &x in &[
            -80.0f64, -40.0, -3.0, -0.5, -1e-9, 0.0, 1e-9, 0.5, 3.0, 20.0, 40.0, 80.0,
        ] {
            let c = Coin::odds_at_most(x).unwrap();
            let nominal = 1.0 / (1.0 + (-x).exp());
            assert!(c.probability() <= nominal * (1.0 + 4e-16), "x {x}");
            assert!(c.probability() >= nominal * (1.0 - 4e-16) - tiny, "x {x}");
            // the tails probability is faithful far into the tail too
            let tails = 1.0 / (1.0 + x.exp());
            assert!(c.complement() >= tails * (1.0 - 4e-16), "x {x}");
            assert!(c.complement() <= tails * (1.0 + 1e-12) + tiny, "x {x}");
        }
        assert_eq!(Coin::odds_at_most(0.0).unwrap().threshold(), 1 << 127);
        // huge budgets: the tails keep probability ≥ 2^-126, never 0
        assert_eq!(
            Coin::odds_at_most(500.0).unwrap().threshold(),
            u128::MAX - 3
        );
        assert_eq!(Coin::odds_at_most(-500.0).unwrap().threshold(), 0);
        assert!(Coin::odds_at_most(f64::NAN).is_err());
        assert!(Coin::odds_at_most(f64::INFINITY).is_err());
        for &(e, k) in &[
            (0.0f64, 1u64),
            (1.0, 2),
            (3.0, 3),
            (20.0, 786),
            (66.6, 1 << 32),
        ] {
            let c = Coin::k_ary_keep(e, k).unwrap();
            let nominal = 1.0 / (1.0 + k as f64 * (-e).exp());
            assert!(c.probability() <= nominal * (1.0 + 4e-16), "ε {e} k {k}");
            assert!(c.probability() >= nominal * (1.0 - 4e-16) - tiny);
        }
        assert_eq!(Coin::k_ary_keep(0.0, 1).unwrap().threshold(), 1 << 127);
        let top = Coin::k_ary_keep(500.0, 1 << 32).unwrap();
        assert!(top.threshold() < u128::MAX && top.complement() < 2f64.powi(-90));
        assert!(Coin::k_ary_keep(-1.0, 2).is_err());
        assert!(Coin::k_ary_keep(1.0, 0).is_err());
        let c = Coin::odds_at_most(-2.0).unwrap();
        assert_eq!(c.probability() + c.complement(), 1.0);
        assert!((c.ln_complement() - c.complement().ln()).abs() < 1e-15);
        let c = Coin::odds_at_most(2.0).unwrap();
        assert!((c.ln_complement() / c.complement().ln() - 1.0).abs() < 1e-14);
        // the exact integer helpers
        let half = Coin::odds_at_most(0.0).unwrap();
        assert_eq!(half.tails_times(3), 1.5 * TWO128);
        assert_eq!(half.heads_times_minus_one(3), 0.5 * TWO128);
        assert_eq!(half.heads_times_minus_one(1), -0.5 * TWO128);
        assert_eq!(half.heads_times_minus_one(2), 0.0);
    }

    /// A toss is decided by the first word unless it ties with `T`'s top half: a tie draws a
    /// second word (so the probability is exactly `T/2¹²⁸`).
    #[test]
    fn ties_draw_a_second_word() {
        struct Words(Vec<u64>);
        impl rand::TryRng for Words {
            type Error = core::convert::Infallible;
            fn try_next_u32(&mut self) -> core::result::Result<u32, Self::Error> {
                unreachable!()
            }
            fn try_next_u64(&mut self) -> core::result::Result<u64, Self::Error> {
                Ok(self.0.remove(0))
            }
            fn try_fill_bytes(&mut self, _: &mut [u8]) -> core::result::Result<(), Self::Error> {
                unreachable!()
            }
        }
        let c = Coin {
            threshold: (5u128 << 64) | 7,
        };
        assert!(c.sample(&mut Words(vec![4])));
        assert!(!c.sample(&mut Words(vec![6])));
        assert!(c.sample(&mut Words(vec![5, 6])));
        assert!(!c.sample(&mut Words(vec![5, 7])));
        let mut w = Words(vec![5, 0, 9]);
        assert!(c.sample(&mut w));
        assert_eq!(w.0, vec![9]);
    }

    /// The toss rate matches `T/2¹²⁸` within 5 standard errors of 10⁶ draws, and the same count
    /// rejects a probability 2% off (power: 2% of 2.7·10⁵ is 12 standard errors).
    #[test]
    fn toss_rate_matches_its_dyadic_probability() {
        let c = Coin::odds_at_most(-1.0).unwrap();
        let p = c.probability();
        let n = 1_000_000u64;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(14);
        let count = (0..n).filter(|_| c.sample(&mut rng)).count() as f64;
        let ok = |p: f64| (count - n as f64 * p).abs() <= 5.0 * (n as f64 * p * (1.0 - p)).sqrt();
        assert!(ok(p), "{count} heads of {n}, P = {p}");
        assert!(!ok(p * 1.02), "no power");
    }
}
