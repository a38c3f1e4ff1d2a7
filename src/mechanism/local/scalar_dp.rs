//! ScalarDP (Bhowmick et al. 2018, Algorithm 3; MECHANISMS-LDP.md §C): an unbiased ε-LDP release
//! of a magnitude `r ∈ [0, r_max]`.
//!
//! 1. `J ∈ {0, …, k}`: unbiased randomised rounding of `k·r/r_max` (`⌊·⌋` or `⌈·⌉`,
//!    `E[J] = k·r/r_max`);
//! 2. (k+1)-ary randomised response: `Ĵ = J` with probability `e^ε/(e^ε + k)`, else uniform on the
//!    other `k` values;
//! 3. `Z = a·(Ĵ − b)`, `a = ((e^ε + k)/(e^ε − 1))·r_max/k`, `b = k(k+1)/(2(e^ε + k))`, so that
//!    `E[Ĵ | J] = J·(e^ε−1)/(e^ε+k) + b` and `E[Z] = r_max·E[J]/k = r`.
//!
//! **Privacy (Lemma 4.3).** For any `r, r'` and any output `j`,
//! `P(Ĵ = j | r) ≤ e^ε/(e^ε+k)` and `P(Ĵ = j | r') ≥ 1/(e^ε+k)`: the ratio is at most `e^ε`.
//! The keep decision is an exact coin ([`Coin::k_ary_keep`]): 128 uniform bits below `T`, with
//! `P(keep) = T/2¹²⁸ ≤ e^ε/(e^ε + k)` checked in exact arithmetic — which is all the ratio needs
//! (`P(keep)/(P(move)/k) ≤ e^ε`) — and the other level uniform among `k` by an exact integer
//! draw. `a` and `b` are computed for `T/2¹²⁸` (so `Z` is unbiased for the coin actually tossed);
//! the closed-form MSE keeps the nominal `e^ε/(e^ε+k)` (they differ by less than 2⁻¹⁰⁰). An `f64`
//! `p_keep` rounded to 1.0 once `k·e^{−ε} < 2⁻⁵³` (ε ≳ 60 at the capped k), leaving the level
//! unrandomised — an unbounded loss; the coin keeps the move probability faithful.
//!
//! **Choice of k.** Lemma 4.4's `k = ⌈e^{ε/3}⌉`, capped at [`MAX_LEVELS`] (`2^32`, reached at
//! ε ≈ 66.5): beyond that the rounding variance `r_max²/(4k²)` is below 10⁻¹⁹·r_max² and a larger
//! k buys nothing; privacy holds for every k. All constants are formed with `e^{−ε}` so ε = 500
//! does not overflow.

use rand::Rng;
use rand::RngExt;

use super::algorithm::{constant, ErrorKind, LocalAlgorithm};
use super::{check_epsilon, unit_closed0};
use crate::error::{Error, Result};
use crate::privacy::coin::Coin;
use crate::privacy::guarantee::InputDomain;
use rand_chacha::ChaCha20Rng;

/// Citation recorded with releases.
pub const ALGORITHM: &str = "ScalarDP (Bhowmick et al. 2018, Algorithm 3), k = ⌈e^(ε/3)⌉";

/// Largest number of levels `k` chosen by [`ScalarDp::new`].
pub const MAX_LEVELS: u64 = 1 << 32;

/// Parameters of ScalarDP; every constant is public.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScalarDp {
    /// ε-LDP for any two magnitudes in `[0, r_max]`.
    pub epsilon: f64,
    /// Number of rounding steps (`k + 1` levels).
    pub k: u64,
    /// Public upper bound of the magnitude.
    pub r_max: f64,
    /// Probability of reporting the true level: the exact coin's `T/2¹²⁸ ≤ e^ε/(e^ε + k)`.
    pub p_keep: f64,
    /// The keep coin ([`Coin::k_ary_keep`]).
    pub keep: Coin,
    /// Debiasing scale `a = ((e^ε+k)/(e^ε−1))·r_max/k`.
    pub a: f64,
    /// Debiasing shift `b = k(k+1)/(2(e^ε+k))`.
    pub b: f64,
}

impl ScalarDp {
    /// ScalarDP with Lemma 4.4's `k = ⌈e^{ε/3}⌉` (capped at [`MAX_LEVELS`]).
    pub fn new(epsilon: f64, r_max: f64) -> Result<ScalarDp> {
        check_epsilon("‹epsilon›", epsilon)?;
        let k = (epsilon / 3.0).exp().ceil().min(MAX_LEVELS as f64) as u64;
        Self::with_k(epsilon, k, r_max)
    }

    /// ScalarDP with a given number of steps `k ≥ 1`.
    pub fn with_k(epsilon: f64, k: u64, r_max: f64) -> Result<ScalarDp> {
        check_epsilon("‹epsilon›", epsilon)?;
        if !(r_max.is_finite() && r_max > 0.0) {
            return Err(Error::param(
                "r_max",
                format!("the magnitude bound must be positive and finite, got {r_max}"),
            ));
        }
        if k == 0 || k > MAX_LEVELS {
            return Err(Error::param(
                "k",
                format!("ScalarDP needs 1 ≤ k ≤ 2^32 rounding steps, got {k}"),
            ));
        }
        // the exact keep coin: P(keep) = T/2^128 ≤ e^ε/(e^ε + k); the constants are those of the
        // coin actually tossed: with q = 1 − T/2^128, E[Ĵ | J] = J·(1 − q − q/k) + q(k+1)/2, so
        // a = r_max/(k·(1 − q − q/k)) and b = q(k+1)/2, both from exact integers:
        // k·(1 − q − q/k)·2^128 = (k+1)·T − 2^128 and q(k+1)·2^128 = (2^128 − T)(k+1)
        let keep = Coin::k_ary_keep(epsilon, k)?;
        let slope = keep.heads_times_minus_one(k + 1);
        if slope <= 0.0 {
            return Err(Error::param(
                "‹epsilon›",
                format!(
                    "ε = {epsilon} is too small for ScalarDP with k = {k}: at the coin's \
                     precision the report carries no information about the level"
                ),
            ));
        }
        const TWO128: f64 = 340_282_366_920_938_463_463_374_607_431_768_211_456.0;
        let a = r_max * TWO128 / slope;
        let b = keep.tails_times(k + 1) / (2.0 * TWO128);
        let p_keep = keep.probability();
        Ok(ScalarDp {
            epsilon,
            k,
            r_max,
            p_keep,
            keep,
            a,
            b,
        })
    }

    /// Validate a magnitude: finite, in `[0, r_max]` (an excess of 1e-9 relative, from rounding of
    /// a norm, is clamped).
    pub fn check(&self, r: f64) -> Result<f64> {
        if !(r.is_finite() && r >= 0.0 && r <= self.r_max * (1.0 + 1e-9)) {
            return Err(Error::param(
                "magnitude",
                format!("{r} is outside [0, r_max] = [0, {}]", self.r_max),
            ));
        }
        Ok(r.min(self.r_max))
    }

    /// Step 1: `(⌊f⌋, f − ⌊f⌋)` for `f = k·r/r_max`, so `J = ⌊f⌋ + 1` with probability `f − ⌊f⌋`.
    fn rounding(&self, r: f64) -> (u64, f64) {
        let f = (self.k as f64 * r / self.r_max).clamp(0.0, self.k as f64);
        let l = f.floor();
        (l as u64, f - l)
    }

    /// Privatise a magnitude `r ∈ [0, r_max]`: returns the unbiased estimate `Z`.
    pub fn privatize<R: Rng + ?Sized>(&self, r: f64, rng: &mut R) -> Result<f64> {
        let r = self.check(r)?;
        let (l, frac) = self.rounding(r);
        let j = if unit_closed0(rng) < frac { l + 1 } else { l };
        let jhat = if self.keep.sample(rng) {
            j
        } else {
            let o = rng.random_range(0..self.k);
            if o >= j {
                o + 1
            } else {
                o
            }
        };
        Ok(self.a * (jhat as f64 - self.b))
    }

    /// Closed-form `E[(Z − r)²]` of Lemma 4.3:
    /// `r_max²(k+1)/(e^ε−1)²·((2k+1)(e^ε+k)/(6k) − (k+1)/4) − r_max·r(k+1)/(e^ε−1)
    ///  + (r_max²/k²)·E\[J²\]·(e^ε+k)/(e^ε−1) − r²`, written with `t = e^{−ε}`.
    pub fn mse(&self, r: f64) -> Result<f64> {
        let r = self.check(r)?;
        let (l, frac) = self.rounding(r);
        let (lf, kf, rm) = (l as f64, self.k as f64, self.r_max);
        let e_j2 = (1.0 - frac) * lf * lf + frac * (lf + 1.0) * (lf + 1.0);
        let t = (-self.epsilon).exp();
        let omt = -(-self.epsilon).exp_m1();
        let inv_em1 = t / omt; // 1/(e^ε − 1)
        let ratio = (1.0 + kf * t) / omt; // (e^ε + k)/(e^ε − 1)
        let term1 = rm
            * rm
            * (kf + 1.0)
            * inv_em1
            * ((2.0 * kf + 1.0) * ratio / (6.0 * kf) - (kf + 1.0) * inv_em1 / 4.0);
        let term2 = -rm * r * (kf + 1.0) * inv_em1;
        // term3 − r² = (r_max²/k²)·[(E[J²] − f²) + E[J²]·(ratio − 1)] with f = k·r/r_max,
        // E[J²] − f² = frac·(1 − frac) and ratio − 1 = (k+1)/(e^ε − 1): no cancellation at large ε.
        let term3_m_r2 = rm * rm / (kf * kf) * (frac * (1.0 - frac) + e_j2 * (kf + 1.0) * inv_em1);
        Ok(term1 + term2 + term3_m_r2)
    }

    /// `P(Ĵ = j | r)` for every `j ∈ {0, …, k}` (small k only; for the privacy tests).
    pub fn output_probabilities(&self, r: f64) -> Result<Vec<f64>> {
        let r = self.check(r)?;
        if self.k > 1 << 20 {
            return Err(Error::param("k", "output_probabilities needs k ≤ 2^20"));
        }
        let (l, frac) = self.rounding(r);
        let other = self.keep.complement() / self.k as f64;
        let mut probs = vec![0.0; self.k as usize + 1];
        for (j, w) in [(l, 1.0 - frac), (l + 1, frac)] {
            if w == 0.0 || j > self.k {
                continue;
            }
            for (i, pr) in probs.iter_mut().enumerate() {
                *pr += w * if i as u64 == j {
                    self.keep.probability()
                } else {
                    other
                };
            }
        }
        Ok(probs)
    }

    /// The estimate `Z` reported for level `j`.
    pub fn value(&self, j: u64) -> f64 {
        self.a * (j as f64 - self.b)
    }
}

impl LocalAlgorithm for ScalarDp {
    fn algorithm(&self) -> &'static str {
        ALGORITHM
    }
    fn epsilon(&self) -> f64 {
        self.epsilon
    }
    fn domain(&self) -> InputDomain {
        InputDomain::Interval { max: self.r_max }
    }
    fn constants(&self) -> Vec<(String, f64)> {
        vec![
            constant("levels_k", self.k as f64),
            constant("p_keep", self.p_keep),
            constant("a", self.a),
            constant("b", self.b),
        ]
    }
    fn decoder(&self) -> &'static str {
        "mean of the rows (each a(Ĵ − b) is unbiased)"
    }
    fn client(&self, _id: u64, v: &[f64], rng: &mut ChaCha20Rng) -> Result<Vec<f64>> {
        if v.len() != 1 {
            return Err(Error::param(
                "input vector",
                format!("scalar-dp takes one value, got {}", v.len()),
            ));
        }
        Ok(vec![self.privatize(v[0], rng)?])
    }
    fn mse_per_user(&self) -> (f64, ErrorKind) {
        (self.mse(self.r_max).unwrap_or(f64::NAN), ErrorKind::Exact)
    }
    fn mse_note(&self) -> String {
        format!(
            "exact for the input value R = {} (the error depends on the value)",
            self.r_max
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn lemma_4_3_check_values() {
        let s = ScalarDp::with_k(10.0, 29, 5.0).unwrap();
        assert!((s.mse(2.2).unwrap() - 0.0085895).abs() < 0.5e-7);
        let s = ScalarDp::with_k(1.0, 3, 1.0).unwrap();
        assert!((s.mse(0.3).unwrap() - 1.2023755).abs() < 0.5e-7);
    }

    #[test]
    fn mse_matches_exact_enumeration() {
        // E[(Z − r)²] summed over the exact output distribution, for several (ε, k, r).
        for &(eps, k, rmax, r) in &[(10.0, 29, 5.0, 2.2), (1.0, 3, 1.0, 0.3), (0.3, 7, 2.0, 2.0)] {
            let s = ScalarDp::with_k(eps, k, rmax).unwrap();
            let probs = s.output_probabilities(r).unwrap();
            let mean: f64 = probs
                .iter()
                .enumerate()
                .map(|(j, p)| p * s.value(j as u64))
                .sum();
            let mse: f64 = probs
                .iter()
                .enumerate()
                .map(|(j, p)| p * (s.value(j as u64) - r).powi(2))
                .sum();
            assert!((mean - r).abs() < 1e-12 * rmax, "bias at {eps}, {k}, {r}");
            assert!((mse - s.mse(r).unwrap()).abs() < 1e-10 * mse, "{mse}");
        }
    }

    #[test]
    fn output_ratio_never_exceeds_e_eps() {
        for &(eps, k) in &[(0.5, 1u64), (1.0, 3), (4.0, 5), (10.0, 29)] {
            let s = ScalarDp::with_k(eps, k, 1.0).unwrap();
            let grid: Vec<f64> = (0..=50).map(|i| i as f64 / 50.0).collect();
            let mut worst = f64::NEG_INFINITY;
            for &r in &grid {
                let pr = s.output_probabilities(r).unwrap();
                for &r2 in &grid {
                    let p2 = s.output_probabilities(r2).unwrap();
                    for (a, b) in pr.iter().zip(&p2) {
                        worst = worst.max(a.ln() - b.ln());
                    }
                }
            }
            assert!(worst <= eps + 1e-12, "ε = {eps}: {worst}");
            assert!(
                worst >= eps - 1e-9,
                "ε = {eps}: the bound is attained, {worst}"
            );
            // A mis-calibrated keep probability (for 1.2ε) is caught by the same check.
            let mut bad = s;
            bad.keep = Coin::k_ary_keep(1.2 * eps, k).unwrap();
            let a = bad.output_probabilities(1.0).unwrap();
            let b = bad.output_probabilities(0.0).unwrap();
            assert!(a[k as usize].ln() - b[k as usize].ln() > eps + 0.1 * eps);
        }
    }

    #[test]
    fn empirical_mean_and_mse() {
        let s = ScalarDp::new(4.0, 2.0).unwrap();
        let r = 1.3;
        let n = 200_000;
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let z: Vec<f64> = (0..n).map(|_| s.privatize(r, &mut rng).unwrap()).collect();
        let mean = z.iter().sum::<f64>() / n as f64;
        let sq: Vec<f64> = z.iter().map(|x| (x - r).powi(2)).collect();
        let mse = sq.iter().sum::<f64>() / n as f64;
        let sd_sq = (sq.iter().map(|x| (x - mse).powi(2)).sum::<f64>() / n as f64).sqrt();
        let target = s.mse(r).unwrap();
        let se_mean = target.sqrt() / (n as f64).sqrt();
        let se_mse = sd_sq / (n as f64).sqrt();
        assert!((mean - r).abs() < 4.0 * se_mean, "mean {mean}");
        assert!((mse - target).abs() < 4.0 * se_mse, "mse {mse} vs {target}");
        // Power: a 10% wrong scale a moves the mean by 0.13 ≫ 4 SE and the MSE by far more.
        assert!((1.1 * mean - r).abs() > 4.0 * se_mean);
        let mse_bad = z.iter().map(|x| (1.1 * x - r).powi(2)).sum::<f64>() / n as f64;
        assert!((mse_bad - target).abs() > 4.0 * se_mse);
    }

    #[test]
    fn huge_epsilon_and_bad_input() {
        let s = ScalarDp::new(500.0, 1.0).unwrap();
        assert_eq!(s.k, MAX_LEVELS);
        assert!(s.a.is_finite() && s.b.is_finite() && s.b >= 0.0);
        let m = s.mse(0.37).unwrap();
        assert!(m.is_finite() && (0.0..1e-18).contains(&m), "{m}");
        for eps in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(ScalarDp::new(eps, 1.0).is_err());
        }
        assert!(ScalarDp::new(1.0, 0.0).is_err());
        assert!(ScalarDp::new(1.0, f64::NAN).is_err());
        assert!(ScalarDp::with_k(1.0, 0, 1.0).is_err());
        let s = ScalarDp::new(1.0, 1.0).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for r in [-0.1, 1.5, f64::NAN, f64::INFINITY] {
            assert!(s.privatize(r, &mut rng).is_err());
            assert!(s.mse(r).is_err());
        }
    }
}
