//! The distributed discrete Gaussian (DDG) accountant: Theorem E.1 of Chen, Choquette-Choo,
//! Kairouz & Suresh 2022 (restating Kairouz, Liu & Steinke 2021), as written in MECHANISMS-LDP.md
//! §E.
//!
//! `n` clients each clip to ℓ₂ norm `c`, scale by `1/γ`, rotate, round conditionally (the norm of
//! the rounded vector is bounded, the retry probability is at most β) and add discrete Gaussian
//! noise `N_Z(0, σ²/γ²)` per coordinate; the server sees only the sum. With
//!
//! ```text
//! Δ₂² = min{ c² + γ²d/4 + √(2 ln(1/β))·γ·(c + (γ/2)√d),  (c + γ√d)² }
//! τ   = 10 · Σ_{k=1}^{n−1} exp(−2π² (σ/γ)² · k/(k+1))
//! ε   = min{ √(Δ₂²/(nσ²) + τd/2),  Δ₂/(√n·σ) + τ√d }
//! ```
//!
//! the sum is ½ε²-zCDP. (The extracted text of Chen et al. prints the second branch as
//! `Δ₂/√(nσ)`, a typesetting slip: the term is `Δ₂/(√n σ)`, the continuous-Gaussian value, and
//! both branches then agree as τ → 0.) The (ε, δ)-DP guarantee follows by the tight conversion of
//! [`crate::privacy::zcdp`].
//!
//! β only enters the sensitivity: the rounding is *conditional* (Algorithm 6 retries until the
//! norm bound holds), so it never fails silently and costs no δ. β = 0 means no probabilistic
//! bound; then Δ₂ = c + γ√d (the deterministic bound).
//!
//! Monotonicity: Δ₂ does not depend on σ and τ decreases in σ, so ε decreases in σ; [`smallest_sigma`]
//! bisects on σ and returns the upper end of its bracket (always meets the target).

use crate::error::{Error, Result};
use crate::privacy::zcdp;

/// The public parameters of a DDG aggregation round that the accountant needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DdgSetting {
    /// Number of clients `n ≥ 1` whose noisy vectors are summed.
    pub n: u64,
    /// Dimension `d ≥ 1` of the vectors (after padding, if the rotation pads).
    pub d: u64,
    /// ℓ₂ clip norm `c > 0`.
    pub clip: f64,
    /// Quantisation granularity `γ > 0` (one integer step is worth γ).
    pub gamma: f64,
    /// Conditional-rounding bias `β ∈ [0, 1)`.
    pub beta: f64,
}

/// Terms in τ's series summed one by one; beyond this blocks of terms are bounded above.
const TAU_EXACT_TERMS: u64 = 4096;

impl DdgSetting {
    fn check(&self) -> Result<()> {
        if self.n == 0 {
            return Err(Error::param("clients n", "n must be at least 1"));
        }
        if self.d == 0 {
            return Err(Error::param("dimension d", "d must be at least 1"));
        }
        if !(self.clip.is_finite() && self.clip > 0.0) {
            return Err(Error::param(
                "‹clip›",
                format!(
                    "the clip norm c must be a positive finite number, got {}",
                    self.clip
                ),
            ));
        }
        if !(self.gamma.is_finite() && self.gamma > 0.0) {
            return Err(Error::param(
                "granularity γ",
                format!("γ must be a positive finite number, got {}", self.gamma),
            ));
        }
        if !(self.beta >= 0.0 && self.beta < 1.0) {
            return Err(Error::param(
                "rounding bias β",
                format!("β must lie in [0, 1), got {}", self.beta),
            ));
        }
        Ok(())
    }

    /// `Δ₂²` of Theorem E.1: the squared ℓ₂ sensitivity of the rounded, rescaled sum.
    pub fn sensitivity_sq(&self) -> f64 {
        let (c, g, d) = (self.clip, self.gamma, self.d as f64);
        let det = (c + g * d.sqrt()).powi(2);
        if self.beta == 0.0 {
            return det;
        }
        let prob = c * c
            + g * g * d / 4.0
            + (2.0 * (1.0 / self.beta).ln()).sqrt() * g * (c + g / 2.0 * d.sqrt());
        prob.min(det)
    }

    /// The conditional-rounding norm bound in the scaled (integer) domain that the encoder must
    /// enforce (Algorithm 6's retry condition): `min{c/γ + √d, √(c²/γ² + d/4 + √(2 ln(1/β))·(c/γ
    /// + √d/2))}`. Equals `√(Δ₂²)/γ`.
    pub fn rounding_norm_bound(&self) -> f64 {
        self.sensitivity_sq().sqrt() / self.gamma
    }
}

/// τ of Theorem E.1 for `n` clients and per-client noise `σ/γ = scaled_sigma` integer units:
/// `10·Σ_{k=1}^{n−1} exp(−2π² s² k/(k+1))`.
///
/// The terms *decrease* with `k` (from `exp(−π²s²)` at `k = 1` towards `exp(−2π²s²)`). The first
/// 4096 terms are summed exactly; beyond them the series is cut into blocks `[k, ⌈k·65/64⌉)` and
/// each block is bounded by its length times its first (largest) term. So for `n > 4097` the
/// value is an upper bound, within a relative `2π²s²/(64·4096)` of the series — larger τ, larger
/// ε: safe — at a cost of a few thousand terms for any `n`.
pub fn tau(n: u64, scaled_sigma: f64) -> f64 {
    let a = -2.0 * std::f64::consts::PI * std::f64::consts::PI * scaled_sigma * scaled_sigma;
    let last = n.saturating_sub(1);
    let term = |k: u64| {
        let kf = k as f64;
        (a * kf / (kf + 1.0)).exp()
    };
    let exact = last.min(TAU_EXACT_TERMS);
    let mut sum = 0.0;
    for k in 1..=exact {
        sum += term(k);
    }
    let mut k = exact + 1;
    while k <= last {
        let end = (k + k.div_ceil(64)).min(last + 1);
        sum += (end - k) as f64 * term(k);
        k = end;
    }
    10.0 * sum
}

/// The ε of Theorem E.1 at noise `σ` (in the data's units; each client adds `N_Z(0, σ²/γ²)`):
/// the sum is ½ε²-zCDP.
pub fn zcdp_epsilon(setting: &DdgSetting, sigma: f64) -> Result<f64> {
    setting.check()?;
    check_sigma(sigma)?;
    let n = setting.n as f64;
    let d = setting.d as f64;
    let s2 = setting.sensitivity_sq();
    let t = tau(setting.n, sigma / setting.gamma);
    let a = (s2 / (n * sigma * sigma) + t * d / 2.0).sqrt();
    let b = s2.sqrt() / (n.sqrt() * sigma) + t * d.sqrt();
    Ok(a.min(b))
}

/// ρ = ½ε² of Theorem E.1.
pub fn rho(setting: &DdgSetting, sigma: f64) -> Result<f64> {
    let e = zcdp_epsilon(setting, sigma)?;
    Ok(0.5 * e * e)
}

/// The (ε, δ)-DP guarantee of the summed round at noise σ: Theorem E.1, then the tight zCDP
/// conversion ([`zcdp::epsilon`]).
pub fn dp_epsilon(setting: &DdgSetting, sigma: f64, delta: f64) -> Result<f64> {
    zcdp::epsilon(rho(setting, sigma)?, delta)
}

fn check_sigma(sigma: f64) -> Result<()> {
    if !(sigma.is_finite() && sigma > 0.0) {
        return Err(Error::param(
            "noise σ",
            format!("σ must be a positive finite number, got {sigma}"),
        ));
    }
    Ok(())
}

/// The smallest per-client noise σ (data units) for which the round is (ε, δ)-DP by Theorem E.1
/// and the tight conversion, to a relative precision of about 1e-10, rounded up (the returned σ
/// always meets the target; checked once more before returning).
pub fn smallest_sigma(setting: &DdgSetting, epsilon: f64, delta: f64) -> Result<f64> {
    setting.check()?;
    crate::privacy::guarantee::check_epsilon(epsilon)?;
    // Work in ρ: ε_DP ≤ target ⇔ ρ ≤ ρ* (the conversion is increasing in ρ).
    let rho_target = zcdp::rho_for_epsilon(epsilon, delta)?;
    smallest_sigma_for_rho(setting, rho_target)
}

/// The smallest σ for which Theorem E.1 gives ρ = ½ε² ≤ `rho_target` (relative precision about
/// 1e-10, rounded up).
pub fn smallest_sigma_for_rho(setting: &DdgSetting, rho_target: f64) -> Result<f64> {
    setting.check()?;
    if !(rho_target.is_finite() && rho_target > 0.0) {
        return Err(Error::param(
            "ρ (zCDP)",
            format!("the target ρ must be a positive finite number, got {rho_target}"),
        ));
    }
    let ok = |sigma: f64| rho(setting, sigma).map(|r| r <= rho_target);
    // Start at the continuous-Gaussian value σ₀ = Δ₂/√(2nρ) (τ ≥ 0 only ever needs more).
    let s2 = setting.sensitivity_sq();
    let mut lo = (s2 / (2.0 * setting.n as f64 * rho_target)).sqrt();
    if !(lo.is_finite() && lo > 0.0) {
        return Err(Error::param(
            "ρ (zCDP)",
            format!("no finite σ reaches ρ = {rho_target}"),
        ));
    }
    let mut hi = lo;
    if ok(lo)? {
        // Only possible through rounding: τ underflows to 0 and the bound is the continuous one.
        return Ok(lo);
    }
    let mut steps = 0;
    while !ok(hi)? {
        lo = hi;
        hi *= 2.0;
        steps += 1;
        if steps > 2000 || !hi.is_finite() {
            return Err(Error::param("‹epsilon›", "calibration failed to bracket σ"));
        }
    }
    while hi - lo > 1e-10 * hi {
        let mid = 0.5 * (lo + hi);
        if ok(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    debug_assert!(ok(hi)?);
    Ok(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(n: u64, d: u64, gamma: f64, beta: f64) -> DdgSetting {
        DdgSetting {
            n,
            d,
            clip: 1.0,
            gamma,
            beta,
        }
    }

    // --- Independent check: the Rényi divergence of a sum of n discrete Gaussians -------------

    fn log_sum_exp(v: &[f64]) -> f64 {
        let m = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        m + v.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
    }

    /// log pmf of N_Z(0, s²) on [−L, L].
    fn log_dgauss(s: f64, l: i64) -> Vec<f64> {
        let w: Vec<f64> = (-l..=l)
            .map(|x| -((x * x) as f64) / (2.0 * s * s))
            .collect();
        let z = log_sum_exp(&w);
        w.iter().map(|v| v - z).collect()
    }

    /// log-domain convolution.
    fn log_conv(a: &[f64], b: &[f64]) -> Vec<f64> {
        let n = a.len() + b.len() - 1;
        (0..n)
            .map(|k| {
                let lo = k.saturating_sub(b.len() - 1);
                let hi = k.min(a.len() - 1);
                let t: Vec<f64> = (lo..=hi).map(|i| a[i] + b[k - i]).collect();
                log_sum_exp(&t)
            })
            .collect()
    }

    /// `sup_α D_α(P ‖ P shifted by `shift`)/α` over a grid of α, for P the sum of `n` i.i.d.
    /// N_Z(0, s²) — a lower bound on the true zCDP ρ of one coordinate with integer sensitivity
    /// `shift`.
    fn numerical_rho(n: usize, s: f64, shift: usize) -> f64 {
        let l = (10.0 * s) as i64 + 25;
        let p = log_dgauss(s, l);
        let mut q = p.clone();
        for _ in 1..n {
            q = log_conv(&q, &p);
        }
        [1.5, 2.0, 3.0, 5.0, 8.0]
            .iter()
            .map(|&al| {
                let t: Vec<f64> = (shift..q.len())
                    .map(|i| al * q[i] + (1.0 - al) * q[i - shift])
                    .collect();
                log_sum_exp(&t) / (al - 1.0) / al
            })
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// The E.1 ρ for one coordinate with integer sensitivity `shift` (γ = 1, no rounding: the
    /// sensitivity is given directly), with τ's constant `ten` (10 in the theorem).
    fn e1_rho(n: u64, s: f64, shift: f64, ten: f64) -> f64 {
        let t = tau(n, s) / 10.0 * ten;
        let nf = n as f64;
        let e = (shift * shift / (nf * s * s) + t / 2.0)
            .sqrt()
            .min(shift / (nf.sqrt() * s) + t);
        0.5 * e * e
    }

    #[test]
    fn theorem_e1_bounds_the_numerical_renyi_divergence() {
        // Small per-client noise, where the sum is far from a discrete Gaussian and τ matters.
        for &n in &[2usize, 3, 5] {
            for &s in &[0.3, 0.4, 0.5, 0.7, 1.0] {
                let num = numerical_rho(n, s, 1);
                let bound = e1_rho(n as u64, s, 1.0, 10.0);
                assert!(
                    num <= bound,
                    "n={n} s={s}: numerical ρ {num} > E.1 ρ {bound}"
                );
                // The continuous value Δ²/(2nσ²) is a lower bound on the truth (to rounding).
                let cont = 1.0 / (2.0 * n as f64 * s * s);
                assert!(num >= cont * (1.0 - 1e-9), "n={n} s={s}: {num} < {cont}");
            }
        }
    }

    #[test]
    fn power_dropping_or_shrinking_tau_is_caught() {
        // At s = 0.3..0.5 the sum's true divergence exceeds the τ-free (continuous) value and the
        // value with τ's constant 1 instead of 10: an accountant with either error would be caught
        // by the check above.
        let mut caught_zero = 0;
        let mut caught_one = 0;
        for &n in &[2usize, 3, 5] {
            for &s in &[0.3, 0.4, 0.5] {
                let num = numerical_rho(n, s, 1);
                if num > e1_rho(n as u64, s, 1.0, 0.0) {
                    caught_zero += 1;
                }
                if num > e1_rho(n as u64, s, 1.0, 1.0) {
                    caught_one += 1;
                }
            }
        }
        assert_eq!(caught_zero, 9);
        assert!(caught_one >= 3, "{caught_one}");
    }

    #[test]
    fn two_coordinates_add_up() {
        // A shift of (1, 1) in d = 2: the product distribution's divergence is twice the 1-D one,
        // and E.1 with Δ₂² = 2 and d = 2 bounds it.
        let (n, s) = (3usize, 0.4);
        let num = 2.0 * numerical_rho(n, s, 1);
        let t = tau(n as u64, s);
        let nf = n as f64;
        let e = (2.0 / (nf * s * s) + t)
            .sqrt()
            .min(2f64.sqrt() / (nf.sqrt() * s) + t * 2f64.sqrt());
        assert!(num <= 0.5 * e * e, "{num} > {}", 0.5 * e * e);
    }

    #[test]
    fn tau_summed_two_ways() {
        // Direct sum vs the same series summed in descending order with Kahan compensation.
        for &(n, s) in &[(2u64, 0.5), (10, 0.3), (1000, 0.8), (100_000, 1.5)] {
            let a = -2.0 * std::f64::consts::PI.powi(2) * s * s;
            let (mut sum, mut comp) = (0.0f64, 0.0f64);
            for k in (1..n).rev() {
                let y = (a * k as f64 / (k as f64 + 1.0)).exp() - comp;
                let t = sum + y;
                comp = (t - sum) - y;
                sum = t;
            }
            let t = tau(n, s);
            // Up to 4097 clients exact; beyond, an upper bound within |a|/(64·4096) relative.
            let slack = if n <= 4097 {
                1e-10
            } else {
                -a / (64.0 * 4096.0)
            };
            assert!(
                t >= 10.0 * sum * (1.0 - 1e-10) && t <= 10.0 * sum * (1.0 + slack),
                "n={n}: {t} vs {}",
                10.0 * sum
            );
        }
        assert_eq!(tau(1, 0.5), 0.0);
        // Beyond 4096 terms: an upper bound, and a close one.
        let n = 3_000_001u64;
        let s = 0.6;
        let a = -2.0 * std::f64::consts::PI.powi(2) * s * s;
        let exact: f64 = (1..n)
            .map(|k| (a * k as f64 / (k as f64 + 1.0)).exp())
            .sum::<f64>()
            * 10.0;
        let t = tau(n, s);
        assert!(t >= exact && t <= exact * (1.0 + 1e-4), "{t} vs {exact}");
    }

    #[test]
    fn sensitivity_matches_the_theorem() {
        // c = 1, γ = 0.01, d = 100, β = e^{-2}: √(2 ln(1/β)) = 2.
        let st = DdgSetting {
            n: 10,
            d: 100,
            clip: 1.0,
            gamma: 0.01,
            beta: (-2.0f64).exp(),
        };
        let prob: f64 = 1.0 + 1e-4 * 100.0 / 4.0 + 2.0 * 0.01 * (1.0 + 0.005 * 10.0);
        let det = (1.0 + 0.01 * 10.0f64).powi(2);
        assert!((st.sensitivity_sq() - prob.min(det)).abs() < 1e-12);
        assert!(prob < det);
        // β = 0: the deterministic bound.
        let st0 = DdgSetting { beta: 0.0, ..st };
        assert!((st0.sensitivity_sq() - det).abs() < 1e-12);
        assert!((st.rounding_norm_bound() - prob.sqrt() / 0.01).abs() < 1e-9);
    }

    #[test]
    fn continuous_limit_and_monotonicity() {
        // γ → 0: τ → 0 and Δ₂ → c, so ε → c/(√n σ).
        let sigma = 0.05;
        let n = 100;
        let st = setting(n, 1000, 1e-7, 1e-3);
        let e = zcdp_epsilon(&st, sigma).unwrap();
        let cont = 1.0 / ((n as f64).sqrt() * sigma);
        assert!((e / cont - 1.0).abs() < 1e-3, "{e} vs {cont}");
        // Decreasing in σ and in n.
        let st = setting(50, 1000, 1e-3, 1e-4);
        let mut prev = f64::INFINITY;
        for i in 1..60 {
            let e = zcdp_epsilon(&st, 1e-4 * 1.2f64.powi(i)).unwrap();
            assert!(e < prev);
            prev = e;
        }
        let mut prev = f64::INFINITY;
        for n in [2u64, 5, 10, 100, 1000, 100_000] {
            let e = zcdp_epsilon(&DdgSetting { n, ..st }, 0.005).unwrap();
            assert!(e < prev);
            prev = e;
        }
    }

    #[test]
    fn smallest_sigma_is_tight() {
        for &(n, d, gamma, eps, delta) in &[
            (100u64, 1000u64, 1e-3, 1.0, 1e-5),
            (1000, 100_000, 1e-4, 0.5, 1e-6),
            (10, 10, 0.05, 4.0, 1e-3),
        ] {
            let st = setting(n, d, gamma, 1.0 / n as f64);
            let sigma = smallest_sigma(&st, eps, delta).unwrap();
            assert!(dp_epsilon(&st, sigma, delta).unwrap() <= eps);
            assert!(dp_epsilon(&st, sigma * (1.0 - 1e-8), delta).unwrap() > eps * (1.0 - 1e-6));
        }
        // Matches the continuous Gaussian calibration (Δ = c, zCDP) when γ is tiny.
        let st = setting(100, 100, 1e-8, 0.0);
        let sigma = smallest_sigma(&st, 1.0, 1e-5).unwrap();
        let rho = zcdp::rho_for_epsilon(1.0, 1e-5).unwrap();
        let cont = 1.0 / (2.0 * 100.0 * rho).sqrt();
        assert!((sigma / cont - 1.0).abs() < 1e-4, "{sigma} vs {cont}");
    }

    #[test]
    fn bad_parameters_are_errors() {
        let good = setting(10, 10, 0.1, 0.01);
        assert!(zcdp_epsilon(&good, 0.0).is_err());
        assert!(zcdp_epsilon(&good, f64::NAN).is_err());
        assert!(zcdp_epsilon(&DdgSetting { n: 0, ..good }, 1.0).is_err());
        assert!(zcdp_epsilon(&DdgSetting { d: 0, ..good }, 1.0).is_err());
        assert!(zcdp_epsilon(&DdgSetting { clip: -1.0, ..good }, 1.0).is_err());
        assert!(zcdp_epsilon(&DdgSetting { gamma: 0.0, ..good }, 1.0).is_err());
        assert!(zcdp_epsilon(&DdgSetting { beta: 1.0, ..good }, 1.0).is_err());
        assert!(smallest_sigma(&good, 0.0, 1e-5).is_err());
        assert!(smallest_sigma(&good, 1.0, 1.5).is_err());
    }
}
