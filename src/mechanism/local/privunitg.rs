//! PrivUnitG (Asi, Feldman, Nelson, Nguyen, Talwar 2023, Algorithm 8; MECHANISMS-LDP.md §A).
//!
//! For a unit vector `v ∈ R^d`, in standard-normal units:
//! 1. `z ~ Bernoulli(p)`; `γ = Φ̄⁻¹(q)` a threshold with tail mass `q = P(N(0,1) ≥ γ)`;
//! 2. if `z = 1`, `α ~ N(0,1) | α ≥ γ`, else `α ~ N(0,1) | α < γ`;
//! 3. `g⊥ ~ N(0, I − vvᵀ)`;
//! 4. return `Z = scale·(α·v + g⊥)` with `scale = 1/(φ(γ)·(p/q − (1−p)/(1−q)))`, so `E[Z] = v`
//!    (`E[α] = p·φ(γ)/q − (1−p)·φ(γ)/(1−q)`).
//!
//! (The paper works with `σ² = 1/d`; the factor `σ` cancels between `V` and `m`, so `scale` and
//! the whole parameter set depend on ε only.)
//!
//! **Privacy.** `Y = α·v + g⊥` has density `φ_d(y)·w_v(y)` with `w_v(y) = p/q` if `⟨y,v⟩ ≥ γ` and
//! `(1−p)/(1−q)` otherwise: conditioning the `v`-component of an isotropic normal and leaving the
//! orthogonal part alone. `φ_d` is the same for every input, so for any `v, v'` the density ratio
//! is `w_v(y)/w_{v'}(y) ≤ [p/q]/[(1−p)/(1−q)] = e^{logit p + logit(1−q)}` (attained at `v' = −v`,
//! `y` in the upper half-space of `v`). With `ln(p/(1−p)) + ln((1−q)/q) = ε` the randomiser is
//! ε-LDP for any two unit vectors; ball inputs are rounded to the sphere first (see
//! [`super`]).
//!
//! **Calibration.** For a split `ε = ε_p + ε_q` (`p = σ(ε_p)`, `q = σ(−ε_q)`), `scale` is minimised
//! over `ε_p ∈ [0, ε]` (a grid scan, then golden-section search): `(p, γ, scale)` depend on ε
//! only. Every step is in log space (`ln q`, `ln(1−q)`, `γ = Φ̄⁻¹` of a log argument via
//! [`norm_isf_ln`], the inverse Mills ratio for `φ(γ)/q`), so ε = 500 works. After γ is found,
//! `q` and `1 − q` are recomputed *from γ* and `p` is re-derived so the spent budget
//! `logit p + ln((1−q)/q)` is ε for the γ actually used by the sampler. The branch coin is
//! exact ([`Coin::odds_at_most`]`(ε_p)`: 128 uniform bits below `T`, odds `p/(1−p) ≤ e^{ε_p}`
//! in exact arithmetic); `p` is the coin's `T/2¹²⁸` and `scale`
//! and `E[α²]` are computed for it, so `Z` is unbiased for the coin actually tossed.
//!
//! **Sampling.** The upper branch is the inverse CDF in log space: `α = Φ̄⁻¹(r)`,
//! `ln r = ln U + ln Φ̄(γ)`, `U ~ U(0, 1]` — exact for any γ (the reference Python code rejects and
//! falls back to an *unconditioned* sample after 25 failures; this one has no fallback). The lower
//! branch is `α = Φ⁻¹(U·Φ(γ))`, also through [`norm_isf_ln`].

use rand::Rng;

use super::algorithm::{constant, ErrorKind, LocalAlgorithm};
use super::normal::fill_standard_normal_dot;
use super::WordRng;
use super::{check_dim, check_epsilon, check_in_ball, dot, round_to_sphere};
use super::{effective_norm2, unit_open0, UNIT_NORM_TOL};
use crate::error::{Error, Result};
use crate::privacy::coin::Coin;
use crate::privacy::special::{inv_mills, ln_norm_pdf, ln_norm_sf, log1p_exp, norm_isf_ln};
use rand_chacha::ChaCha20Rng;

/// Citation recorded with releases.
pub const ALGORITHM: &str = "PrivUnitG (Asi et al. 2023, Algorithm 8), optimised p";

/// Parameters of PrivUnitG at privacy level ε in dimension `d`; every constant is public.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrivUnitG {
    /// Dimension of the input vectors.
    pub d: usize,
    /// The target ε (ε-LDP, replace-one).
    pub epsilon: f64,
    /// Probability of the upper branch (`α ≥ γ`): the exact coin's `T/2¹²⁸`.
    pub p: f64,
    /// The branch coin ([`Coin::odds_at_most`] of `ε_p`): heads = upper branch.
    pub coin: Coin,
    /// Threshold in standard-normal units.
    pub gamma: f64,
    /// `ln q`, `q = Φ̄(γ)` (recomputed from γ).
    pub ln_q: f64,
    /// `ln(1 − q) = ln Φ(γ)`.
    pub ln_1mq: f64,
    /// Debiasing factor: `Z = scale·(α·v + g⊥)`.
    pub scale: f64,
    /// `E[α²] = p(1 + γφ(γ)/Φ̄(γ)) + (1−p)(1 − γφ(γ)/Φ(γ))`.
    pub e_alpha2: f64,
}

/// `(p, γ, ln q, ln(1−q), scale, ε_p)` for the split `ε_p` of ε, with the nominal `p = σ(ε_p)`
/// (the optimiser's objective; [`PrivUnitG::from_split`] replaces `p` by the exact coin's).
fn params_for_split(epsilon: f64, eps_p: f64) -> (f64, f64, f64, f64, f64, f64) {
    // Target q: ln((1−q)/q) = ε − ε_p.
    let gamma = norm_isf_ln(-log1p_exp(epsilon - eps_p));
    let ln_q = ln_norm_sf(gamma);
    let ln_1mq = ln_norm_sf(-gamma);
    // Re-derive ε_p from the γ actually used: logit p = ε − ln((1−q)/q).
    let eps_p = epsilon - (ln_1mq - ln_q);
    let p = 1.0 / (1.0 + (-eps_p).exp());
    let one_m_p = 1.0 / (1.0 + eps_p.exp());
    let scale = scale_for(p, one_m_p, gamma, ln_q, ln_1mq);
    (p, gamma, ln_q, ln_1mq, scale, eps_p)
}

/// `scale = 1/(φ(γ)·(p/q − (1−p)/(1−q)))`, in log space.
fn scale_for(p: f64, one_m_p: f64, gamma: f64, ln_q: f64, ln_1mq: f64) -> f64 {
    let lpdf = ln_norm_pdf(gamma);
    1.0 / (p * (lpdf - ln_q).exp() - one_m_p * (lpdf - ln_1mq).exp())
}

impl PrivUnitG {
    /// The optimised PrivUnitG for ε-LDP in dimension `d` (MECHANISMS-LDP.md §A, step 6).
    pub fn new(epsilon: f64, d: usize) -> Result<PrivUnitG> {
        check_epsilon("‹epsilon›", epsilon)?;
        check_dim(d)?;
        let eps_p = optimal_split(epsilon);
        Self::from_split(epsilon, d, eps_p)
    }

    /// PrivUnitG with a given split: `ε_p = logit p` for the coin and `ε − ε_p` for the threshold
    /// (`0 ≤ ε_p ≤ ε`). For comparisons and tests; [`PrivUnitG::new`] chooses the best split.
    pub fn from_split(epsilon: f64, d: usize, eps_p: f64) -> Result<PrivUnitG> {
        check_epsilon("‹epsilon›", epsilon)?;
        check_dim(d)?;
        if !(eps_p >= 0.0 && eps_p <= epsilon) {
            return Err(Error::param(
                "PrivUnitG split",
                format!("ε_p must lie in [0, ε] = [0, {epsilon}], got {eps_p}"),
            ));
        }
        let (_, gamma, ln_q, ln_1mq, _, eps_p) = params_for_split(epsilon, eps_p);
        // the exact coin (odds ≤ e^{ε_p}) and the constants for its own probability
        let coin = Coin::odds_at_most(eps_p)?;
        let (p, one_m_p) = (coin.probability(), coin.complement());
        let scale = scale_for(p, one_m_p, gamma, ln_q, ln_1mq);
        let e_alpha2 =
            p * (1.0 + gamma * inv_mills(gamma)) + one_m_p * (1.0 - gamma * inv_mills(-gamma));
        if !(scale.is_finite() && scale > 0.0 && gamma.is_finite() && e_alpha2.is_finite()) {
            return Err(Error::param(
                "‹epsilon›",
                format!("PrivUnitG calibration failed numerically at ε = {epsilon}"),
            ));
        }
        Ok(PrivUnitG {
            d,
            epsilon,
            p,
            coin,
            gamma,
            ln_q,
            ln_1mq,
            scale,
            e_alpha2,
        })
    }

    /// The ε this parameter set spends, recomputed from `(p, γ)`:
    /// `ln(p/(1−p)) + ln Φ(γ) − ln Φ̄(γ)`.
    pub fn epsilon_spent(&self) -> f64 {
        self.p.ln() - self.coin.ln_complement() + ln_norm_sf(-self.gamma) - ln_norm_sf(self.gamma)
    }

    /// Closed-form `E‖Z − v‖²` for a unit vector: `scale²·(E[α²] + d − 1) − 1`.
    pub fn mse_unit(&self) -> f64 {
        self.mse(1.0)
    }

    /// Closed-form `E‖Z − v‖²` for an input of norm `norm ≤ 1` (`E‖Z‖² − ‖v‖²`, see [`super`]).
    pub fn mse(&self, norm: f64) -> f64 {
        self.scale * self.scale * (self.e_alpha2 + (self.d - 1) as f64) - effective_norm2(norm)
    }

    /// Draw `α` (step 2): the upper branch with probability `p`, else the lower.
    pub fn sample_alpha<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        if self.coin.sample(rng) {
            sample_upper(self.gamma, self.ln_q, rng)
        } else {
            sample_lower(self.gamma, self.ln_1mq, rng)
        }
    }

    /// Privatise a unit vector `u` (`|‖u‖ − 1| ≤` [`UNIT_NORM_TOL`]).
    pub fn privatize_unit<R: WordRng + ?Sized>(&self, u: &[f64], rng: &mut R) -> Result<Vec<f64>> {
        let norm = check_in_ball(u, self.d, 1.0)?;
        if norm < 1.0 - UNIT_NORM_TOL {
            return Err(Error::param(
                "input vector",
                format!("PrivUnitG::privatize_unit needs a unit vector, got norm {norm}"),
            ));
        }
        Ok(self.sample_scaled(u, 1.0 / norm, rng))
    }

    /// Privatise a vector of the unit ball (rounded to the sphere first, see [`super`]).
    pub fn privatize<R: WordRng + ?Sized>(&self, v: &[f64], rng: &mut R) -> Result<Vec<f64>> {
        let norm = check_in_ball(v, self.d, 1.0)?;
        if norm >= 1.0 - UNIT_NORM_TOL {
            // A unit row is its own sphere point: the normalisation folded in, no copy.
            return Ok(self.sample_scaled(v, 1.0 / norm, rng));
        }
        let u = round_to_sphere(v, norm, rng);
        Ok(self.sample_scaled(&u, 1.0, rng))
    }

    /// Steps 1–4 for the unit vector `û = inv_norm·u` (the normalisation folded into the
    /// arithmetic, no copy): with `g ~ N(0, I_d)` drawn in bulk ([`fill_standard_normal_dot`],
    /// which also returns `⟨g, u⟩`), `Z = scale·(g + (α − ⟨g,û⟩)·û)` — `g` with its component
    /// along `û` replaced by `α`, i.e. `α·û + g⊥` with `g⊥ ~ N(0, I − ûûᵀ)`.
    fn sample_scaled<R: WordRng + ?Sized>(
        &self,
        u: &[f64],
        inv_norm: f64,
        rng: &mut R,
    ) -> Vec<f64> {
        let alpha = self.sample_alpha(rng);
        let mut z = vec![0f64; u.len()];
        let (gu, _) = fill_standard_normal_dot(rng, &mut z, u);
        let c = self.scale * (alpha - gu * inv_norm) * inv_norm;
        for (zi, ui) in z.iter_mut().zip(u) {
            *zi = self.scale * *zi + c * ui;
        }
        z
    }

    /// Log-density of the output `z` for the input `u` (unit vector), relative to the density of
    /// `scale·N(0, I_d)`: `ln(p/q)` if `⟨z,u⟩/scale ≥ γ`, else `ln((1−p)/(1−q))`. The privacy loss
    /// between inputs `u, u'` at `z` is the difference of two of these.
    pub fn ln_density(&self, z: &[f64], u: &[f64]) -> f64 {
        if dot(z, u) / self.scale >= self.gamma {
            self.p.ln() - self.ln_q
        } else {
            self.coin.ln_complement() - self.ln_1mq
        }
    }
}

/// `α ~ N(0,1) | α ≥ γ` by the inverse CDF in log space: `α = Φ̄⁻¹(U·Φ̄(γ))` with `U ~ U(0, 1]`,
/// given `ln_sf_gamma = ln Φ̄(γ)`. Exact for any γ (no rejection, no fallback).
pub fn sample_upper<R: Rng + ?Sized>(gamma: f64, ln_sf_gamma: f64, rng: &mut R) -> f64 {
    let ln_u = unit_open0(rng).ln();
    norm_isf_ln(ln_u + ln_sf_gamma).max(gamma)
}

/// `α ~ N(0,1) | α < γ`: `α = Φ⁻¹(U·Φ(γ)) = −Φ̄⁻¹(U·Φ(γ))`, given `ln_cdf_gamma = ln Φ(γ)`.
pub fn sample_lower<R: Rng + ?Sized>(gamma: f64, ln_cdf_gamma: f64, rng: &mut R) -> f64 {
    let ln_u = unit_open0(rng).ln();
    (-norm_isf_ln(ln_u + ln_cdf_gamma)).min(gamma)
}

/// The split `ε_p = logit p ∈ [0, ε]` minimising `scale`: a 64-point scan, then golden-section
/// search on the bracket around the best grid point (to 1e-12 relative).
pub fn optimal_split(epsilon: f64) -> f64 {
    let f = |e: f64| params_for_split(epsilon, e).4;
    golden_min(f, 0.0, epsilon)
}

/// Minimise a function on `[lo, hi]`: scan 64 points, then golden-section search in the bracket of
/// the best point. Used for the 1-D calibrations (PrivUnitG's `p`, PrivUnit2's cap).
pub fn golden_min<F: Fn(f64) -> f64>(f: F, lo: f64, hi: f64) -> f64 {
    const GRID: usize = 64;
    let h = (hi - lo) / GRID as f64;
    let mut best = (lo, f(lo));
    for i in 1..=GRID {
        let x = if i == GRID { hi } else { lo + h * i as f64 };
        let v = f(x);
        if v < best.1 {
            best = (x, v);
        }
    }
    let (mut a, mut b) = ((best.0 - h).max(lo), (best.0 + h).min(hi));
    let r = 0.5 * (5f64.sqrt() - 1.0);
    let mut c = b - r * (b - a);
    let mut d = a + r * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..200 {
        if (b - a) <= 1e-12 * (a.abs() + b.abs()).max(1e-300) {
            break;
        }
        if fc < fd {
            b = d;
            d = c;
            fd = fc;
            c = b - r * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + r * (b - a);
            fd = f(d);
        }
    }
    let mid = 0.5 * (a + b);
    if f(mid) <= best.1 {
        mid
    } else {
        best.0
    }
}

impl LocalAlgorithm for PrivUnitG {
    fn algorithm(&self) -> &'static str {
        ALGORITHM
    }
    fn epsilon(&self) -> f64 {
        self.epsilon
    }
    fn constants(&self) -> Vec<(String, f64)> {
        vec![
            constant("p", self.p),
            constant("gamma", self.gamma),
            constant("scale", self.scale),
        ]
    }
    fn decoder(&self) -> &'static str {
        "mean of the rows (each Z is unbiased)"
    }
    fn client(&self, _id: u64, v: &[f64], rng: &mut ChaCha20Rng) -> Result<Vec<f64>> {
        self.privatize(v, rng)
    }
    fn mse_per_user(&self) -> (f64, ErrorKind) {
        (self.mse_unit(), ErrorKind::Exact)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MECHANISMS-LDP.md §A table: ε, p*, γ*, scale, ε·scale².
    const TABLE: [(f64, f64, f64, f64, f64); 6] = [
        (1.0, 0.5893, 0.3975, 2.51596, 6.330),
        (2.0, 0.6703, 0.7865, 1.27149, 3.233),
        (4.0, 0.7909, 1.5156, 0.65979, 1.741),
        (8.0, 0.9010, 2.7429, 0.36457, 1.063),
        (10.0, 0.9247, 3.2601, 0.30674, 0.941),
        (16.0, 0.9576, 4.5613, 0.21923, 0.769),
    ];

    #[test]
    fn reproduces_the_table_of_section_a() {
        for &(eps, p, gamma, scale, es2) in &TABLE {
            let m = PrivUnitG::new(eps, 100).unwrap();
            assert!((m.p - p).abs() <= 0.5e-4, "ε = {eps}: p = {}", m.p);
            assert!(
                (m.gamma - gamma).abs() <= 0.5e-4,
                "ε = {eps}: γ = {}",
                m.gamma
            );
            assert!(
                (m.scale - scale).abs() <= 0.5e-5,
                "ε = {eps}: scale = {}",
                m.scale
            );
            let v = eps * m.scale * m.scale;
            assert!((v - es2).abs() <= 0.5e-3, "ε = {eps}: ε·scale² = {v}");
            assert!((m.epsilon_spent() - eps).abs() < 1e-12 * eps.max(1.0));
        }
    }

    #[test]
    fn optimum_is_a_minimum() {
        // A wrong objective (or a broken search) would land elsewhere: neighbours are worse.
        for &eps in &[0.5, 3.0, 12.0, 100.0] {
            let best = PrivUnitG::new(eps, 10).unwrap();
            let e_p = (best.p / (1.0 - best.p)).ln();
            for delta in [-0.05, 0.05] {
                let e = (e_p + delta).clamp(0.0, eps);
                let other = PrivUnitG::from_split(eps, 10, e).unwrap();
                assert!(other.scale >= best.scale * (1.0 - 1e-12), "ε = {eps}");
            }
        }
    }

    #[test]
    fn optimum_satisfies_scale_times_gamma_equals_one() {
        // Stationarity of scale(p) (with γ tied to p by the privacy equality) reduces to
        // 1/scale = γ: the same identity as m = γ for PrivUnit2. Independent of the search.
        for &eps in &[0.3, 1.0, 4.0, 16.0, 100.0, 500.0] {
            let m = PrivUnitG::new(eps, 10).unwrap();
            assert!(
                (m.scale * m.gamma - 1.0).abs() < 1e-6,
                "ε = {eps}: {}",
                m.scale * m.gamma
            );
        }
    }

    #[test]
    fn huge_epsilon_is_finite() {
        let m = PrivUnitG::new(500.0, 10_000_000).unwrap();
        assert!(m.gamma.is_finite() && m.gamma > 25.0, "{m:?}");
        assert!(m.scale.is_finite() && m.scale > 0.0 && m.scale < 0.05);
        assert!((m.epsilon_spent() - 500.0).abs() < 1e-9);
        assert!(m.mse_unit().is_finite() && m.mse_unit() > 0.0);
    }

    #[test]
    fn bad_parameters_are_errors() {
        for eps in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(PrivUnitG::new(eps, 10).is_err());
        }
        assert!(PrivUnitG::new(1.0, 1).is_err());
        assert!(PrivUnitG::new(1.0, 0).is_err());
        assert!(PrivUnitG::from_split(1.0, 10, 2.0).is_err());
        assert!(PrivUnitG::from_split(1.0, 10, f64::NAN).is_err());
    }
}
