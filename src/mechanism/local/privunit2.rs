//! PrivUnit2 (Bhowmick, Duchi, Freudiger, Kapoor, Rogers 2018, Algorithm 1; MECHANISMS-LDP.md §C)
//! and the Duchi et al. hemisphere baseline (PrivUnit2 with γ = 0).
//!
//! For a unit vector `u ∈ R^d`, with `α = (d−1)/2`:
//! 1. with probability `p` draw `V` uniform on the cap `{⟨V,u⟩ ≥ γ}`, else uniform on its
//!    complement `{⟨V,u⟩ < γ}`;
//! 2. return `Z = V/m`, `m = p·γ₊ + (1−p)·γ₋`, where `γ₊ = E[U₁ | U₁ ≥ γ]`,
//!    `γ₋ = E[U₁ | U₁ < γ] = −γ₊·P(U₁ ≥ γ)/P(U₁ < γ)` for `U` uniform on the sphere (`E[U₁] = 0`).
//!    Then `E[Z] = u` and `‖Z‖ = 1/m`, so `E‖Z − u‖² = 1/m² − 1` exactly.
//!
//! **The cap in Beta coordinates.** `B = (1 + U₁)/2 ~ Beta(α, α)`. Writing `x = (1 − γ)/2`, the
//! cap is `B' := 1 − B ≤ x` and `P(U₁ ≥ γ) = I_x(α, α)`. With the incomplete-beta continued
//! fraction `I_x(α,α) = (x(1−x))^α·CF/(α·B(α,α))` and `E[U₁·1{U₁ ≥ γ}] = (x(1−x))^α/(α·B(α,α))`,
//! `γ₊ = 1/CF` — so `m` needs no `2^{d−2}`, `B(α,α)` or `(1−γ²)^α` (the printed eq. (13) forms
//! all three; at d = 10⁷ each overflows). Everything is in [`crate::privacy::special`].
//! Internally the cap is parametrised by `x` (not γ) so that caps with `x` far below the double
//! resolution of `1 − γ` (small d, huge ε) are represented exactly; `gamma = 1 − 2x` is stored for
//! reporting.
//!
//! **Privacy (Theorem 1 with the exact cap cost).** `V` has density, with respect to the uniform
//! measure on the sphere, `p/P₊` on the cap of `u` and `(1−p)/P₋` off it (`P₊ = P(U₁ ≥ γ)`,
//! `P₋ = 1 − P₊`). For `γ ≥ 0` and `p ≥ ½` the largest ratio between two inputs is
//! `[p/P₊]/[(1−p)/P₋] = e^{ε₀ + ε_cap}` with `ε₀ = logit p` and `ε_cap = ln P₋ − ln P₊`, attained at
//! `u' = −u` for `V` in the cap of `u`. Both logs are computed exactly (up to float rounding)
//! from `x`, so `ε = ε_cap + ε₀` is the exact guarantee; the paper's sufficient conditions (14a),
//! (14b) are only used by [`PrivUnit2::paper`] for comparison. The coin is exact
//! ([`Coin::odds_at_most`]): heads iff 128 uniform bits are below `T`, `p = T/2¹²⁸` with odds
//! `p/(1−p) ≤ e^{ε₀}` checked in exact arithmetic, and the complement as likely as `1/(1+e^{ε₀})`
//! or more — an `f64` `p` rounded to 1.0 at `ε₀ ≳ 37`, which left the complement undrawn and the
//! loss unbounded.
//! `m` uses this `p`, so `Z` is unbiased for the coin actually tossed.
//!
//! **The split of ε.** With `ε₀ = ε − ε_cap` and `p = σ(ε₀)`, one finds
//! `m = γ₊·(p − (1−p)e^{−ε_cap}) = (1 − e^{−ε})·σ(ε − ε_cap)·γ₊`, so the variance `1/m² − 1` is
//! minimised by maximising `ln σ(ε − ε_cap(x)) + ln γ₊(x)` over the cap. Differentiating in γ
//! (`dε_cap/dγ = f/(P₊P₋)`, `dγ₊/dγ = f·(γ₊ − γ)/P₊`, `f` the density of `U₁`) the stationarity
//! condition is `γ = γ₊·(1 − (1−p)/P₋)`, which is exactly `m`: **at the optimum `m = γ`** (tested;
//! PrivUnitG's optimum satisfies the analogue `1/scale = γ`, visible in the §A table).
//! [`PrivUnit2::new`] does
//! this 1-D search over `y = −ln(2x) = −ln(1 − γ)` (so both γ ≈ 10⁻⁵ and `x` ≈ 10⁻²⁸⁰ are
//! resolved) on `[0, y_max]`, `ε_cap(y_max) = ε` found by bisection; caps are not made smaller than
//! `x = 10⁻²⁸⁰` ([`MIN_CAP_X`]), the rest of the budget then goes to the coin.
//!
//! **Sampling.** Cap: `B' ~ Beta(α, α) | B' ≤ x` by the inverse CDF in log space
//! ([`sym_beta_lower_inv`]: `I_{B'} = U·I_x`, Newton on `ln I` safeguarded by bisection, the
//! result clamped to `(0, x]` so the support is exact; `B'` accurate to ~1e-14 relative, the only
//! approximation, a deterministic perturbation of the sample far below the f32 output resolution);
//! then `⟨V,u⟩ = 1 − 2B'`, `√(1−⟨V,u⟩²) = 2√(B'(1−B'))` (no cancellation near the pole). This works
//! for `α = 5·10⁶` and `x` near ½ (Gaussian-like regime) as well as far in the tail. Complement:
//! `B' = Y/(X+Y)` with `X, Y ~ Gamma(α)` (an exact Beta(α, α) draw, `rand_distr`), rejected unless
//! `B' > x` (acceptance `P₋ ≥ ½`). The orthogonal part is a uniform unit vector of `u^⊥`
//! (`g − ⟨g,u⟩u` normalised, `g` a bulk draw of standard normals, [`super::normal`]).

use rand::Rng;
use rand::RngExt;
use rand_distr::Gamma;

use super::algorithm::{constant, ErrorKind, LocalAlgorithm};
use super::normal::fill_standard_normal_dot;
use super::privunitg::golden_min;
use super::WordRng;
use super::{check_dim, check_epsilon, check_in_ball, dot, effective_norm2, round_to_sphere};
use super::{unit_open0, UNIT_NORM_TOL};
use crate::error::{Error, Result};
use crate::privacy::coin::Coin;
use crate::privacy::special::{
    ln_1m_exp, ln_gamma_half_ratio, ln_sym_beta_lower, log1p_exp, sym_beta_lower_inv,
};
use rand_chacha::ChaCha20Rng;

/// Citation recorded with releases.
pub const ALGORITHM: &str =
    "PrivUnit2 (Bhowmick et al. 2018, Algorithm 1), exact cap cost, variance-optimal split";

/// Smallest cap parameter `x = (1 − γ)/2` the optimiser uses (keeps `ln x` and the sampler's
/// `B' ≤ x` far from subnormal numbers).
pub const MIN_CAP_X: f64 = 1e-280;

/// Parameters of PrivUnit2; every constant is public.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrivUnit2 {
    /// Dimension of the input vectors.
    pub d: usize,
    /// The guarantee: ε-LDP (replace-one), `ε = eps_cap + eps0`.
    pub epsilon: f64,
    /// Cap threshold on `⟨V, u⟩` (`= 1 − 2·cap_x`, for reporting).
    pub gamma: f64,
    /// The cap in Beta coordinates: `V` is in the cap iff `(1 − ⟨V,u⟩)/2 ≤ cap_x`.
    pub cap_x: f64,
    /// Probability of sampling from the cap: the exact coin's `T/2¹²⁸`, odds at most `e^{ε₀}`
    /// ([`Coin::odds_at_most`]).
    pub p: f64,
    /// The cap coin: heads = cap.
    pub coin: Coin,
    /// Budget spent by the cap: `ln P(U₁ < γ) − ln P(U₁ ≥ γ)`.
    pub eps_cap: f64,
    /// Budget spent by the coin: `ln(p/(1−p))`.
    pub eps0: f64,
    /// `ln P(U₁ ≥ γ) = ln I_x(α, α)`.
    pub ln_p_cap: f64,
    /// `ln P(U₁ < γ)`.
    pub ln_p_comp: f64,
    /// `ln CF(x; α, α)` (`γ₊ = e^{−ln_cf}`).
    pub ln_cf: f64,
    /// `E[U₁ | U₁ ≥ γ]`.
    pub gamma_plus: f64,
    /// `E[U₁ | U₁ < γ]` (≤ 0).
    pub gamma_minus: f64,
    /// Debiasing constant: `Z = V/m`.
    pub m: f64,
}

/// `α = (d − 1)/2`.
fn alpha_of(d: usize) -> f64 {
    (d as f64 - 1.0) / 2.0
}

/// `(ln P₊, ln CF, ε_cap)` for the cap `x` in dimension `d`.
fn cap_terms(d: usize, x: f64) -> Result<(f64, f64, f64)> {
    let (ln_p, ln_cf) = ln_sym_beta_lower(x, alpha_of(d))?;
    let ln_p = if x == 0.5 {
        -std::f64::consts::LN_2 // exact by symmetry
    } else {
        ln_p
    };
    Ok((ln_p, ln_cf, ln_1m_exp(ln_p) - ln_p))
}

impl PrivUnit2 {
    /// PrivUnit2 for ε-LDP in dimension `d` with the variance-optimal split of ε between cap and
    /// coin (exact cap cost).
    pub fn new(epsilon: f64, d: usize) -> Result<PrivUnit2> {
        check_epsilon("‹epsilon›", epsilon)?;
        check_dim(d)?;
        let x_of = |y: f64| 0.5 * (-y).exp();
        let eps_cap = |y: f64| cap_terms(d, x_of(y)).map(|t| t.2);
        // y_max: the largest cap parameter whose cost fits in ε (bisection; ε_cap increases in y).
        let y_floor = (0.5 / MIN_CAP_X).ln();
        let y_max = if eps_cap(y_floor)? <= epsilon {
            y_floor
        } else {
            let (mut lo, mut hi) = (0.0f64, y_floor);
            for _ in 0..200 {
                let mid = 0.5 * (lo + hi);
                if mid <= lo || mid >= hi {
                    break;
                }
                if eps_cap(mid)? <= epsilon {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        // Maximise ln σ(ε − ε_cap) + ln γ₊ = −log1p_exp(ε_cap − ε) − ln CF.
        let objective = |y: f64| match cap_terms(d, x_of(y)) {
            Ok((_, ln_cf, ec)) if ec <= epsilon => log1p_exp(ec - epsilon) + ln_cf,
            _ => f64::INFINITY,
        };
        let y = golden_min(objective, 0.0, y_max);
        let x = x_of(y);
        let (_, _, ec) = cap_terms(d, x)?;
        Self::from_cap_x(d, x, (epsilon - ec).max(0.0))
    }

    /// PrivUnit2 with a given cap threshold `γ ∈ [0, 1)` and coin budget `ε₀ ≥ 0`
    /// (`p = e^{ε₀}/(1+e^{ε₀})`); the guarantee is `ε = ε_cap(γ) + ε₀`, computed exactly.
    pub fn from_gamma(d: usize, gamma: f64, eps0: f64) -> Result<PrivUnit2> {
        if !(0.0..1.0).contains(&gamma) {
            return Err(Error::param(
                "γ",
                format!("the cap threshold must lie in [0, 1), got {gamma}"),
            ));
        }
        Self::from_cap_x(d, 0.5 * (1.0 - gamma), eps0)
    }

    /// PrivUnit2 with the cap given in Beta coordinates, `x = (1 − γ)/2 ∈ (0, ½]`.
    pub fn from_cap_x(d: usize, cap_x: f64, eps0: f64) -> Result<PrivUnit2> {
        check_dim(d)?;
        if !(cap_x > 0.0 && cap_x <= 0.5) {
            return Err(Error::param(
                "cap",
                format!("x = (1 − γ)/2 must lie in (0, ½], got {cap_x}"),
            ));
        }
        if !(eps0 >= 0.0 && eps0.is_finite()) {
            return Err(Error::param(
                "ε₀",
                format!("the coin's budget must be finite and ≥ 0, got {eps0}"),
            ));
        }
        let (ln_p_cap, ln_cf, eps_cap) = cap_terms(d, cap_x)?;
        let ln_p_comp = ln_1m_exp(ln_p_cap);
        let coin = Coin::odds_at_most(eps0)?;
        let p = coin.probability();
        let ln_1mp = coin.ln_complement();
        let gamma_plus = (-ln_cf).exp();
        let gamma_minus = -(ln_p_cap - ln_p_comp - ln_cf).exp();
        let m = gamma_plus * (p - (ln_1mp - eps_cap).exp());
        if !(m.is_finite() && m > 0.0 && eps_cap.is_finite()) {
            return Err(Error::param(
                "PrivUnit2",
                format!("calibration failed numerically at d = {d}, x = {cap_x}, ε₀ = {eps0}"),
            ));
        }
        Ok(PrivUnit2 {
            d,
            epsilon: eps_cap + eps0,
            gamma: 1.0 - 2.0 * cap_x,
            cap_x,
            p,
            coin,
            eps_cap,
            eps0,
            ln_p_cap,
            ln_p_comp,
            ln_cf,
            gamma_plus,
            gamma_minus,
            m,
        })
    }

    /// The paper's split (Section 5, eq. (23)): the cap gets `0.99ε` through the largest γ
    /// satisfying (14a) or (14b), the coin `p = p(0.01ε)`. The recorded `epsilon` is the exact
    /// cost `ε_cap(γ) + 0.01ε` (at most ε when (14) is a valid sufficient condition).
    pub fn paper(epsilon: f64, d: usize) -> Result<PrivUnit2> {
        check_epsilon("‹epsilon›", epsilon)?;
        check_dim(d)?;
        let e_cap = 0.99 * epsilon;
        let g = gamma_14a(e_cap, d).max(gamma_14b(e_cap, d).unwrap_or(0.0));
        let g = g.min(1.0 - 1e-15);
        Self::from_gamma(d, g, 0.01 * epsilon)
    }

    /// The Duchi et al. hemisphere mechanism: PrivUnit2 with `γ = 0` and `p = e^ε/(1+e^ε)`;
    /// `1/m = ((e^ε+1)/(e^ε−1))·√π·Γ((d+1)/2)/Γ(d/2)` (MECHANISMS-LDP.md §C: half the printed
    /// constant).
    pub fn duchi(epsilon: f64, d: usize) -> Result<PrivUnit2> {
        check_epsilon("‹epsilon›", epsilon)?;
        Self::from_cap_x(d, 0.5, epsilon)
    }

    /// Closed-form `E‖Z − u‖² = 1/m² − 1` for a unit vector.
    pub fn mse_unit(&self) -> f64 {
        self.mse(1.0)
    }

    /// Closed-form `E‖Z − v‖² = 1/m² − ‖v‖²` for an input of norm `norm ≤ 1` (see [`super`]).
    pub fn mse(&self, norm: f64) -> f64 {
        1.0 / (self.m * self.m) - effective_norm2(norm)
    }

    /// Privatise a unit vector `u` (`|‖u‖ − 1| ≤` [`UNIT_NORM_TOL`]).
    pub fn privatize_unit<R: WordRng + ?Sized>(&self, u: &[f64], rng: &mut R) -> Result<Vec<f64>> {
        let norm = check_in_ball(u, self.d, 1.0)?;
        if norm < 1.0 - UNIT_NORM_TOL {
            return Err(Error::param(
                "input vector",
                format!("PrivUnit2::privatize_unit needs a unit vector, got norm {norm}"),
            ));
        }
        self.sample_scaled(u, 1.0 / norm, rng)
    }

    /// Privatise a vector of the unit ball (rounded to the sphere first, see [`super`]).
    pub fn privatize<R: WordRng + ?Sized>(&self, v: &[f64], rng: &mut R) -> Result<Vec<f64>> {
        let norm = check_in_ball(v, self.d, 1.0)?;
        if norm >= 1.0 - UNIT_NORM_TOL {
            // A unit row is its own sphere point: the normalisation folded in, no copy.
            return self.sample_scaled(v, 1.0 / norm, rng);
        }
        let u = round_to_sphere(v, norm, rng);
        self.sample_on_sphere(&u, rng)
    }

    /// Draw `(⟨V,u⟩, √(1 − ⟨V,u⟩²))` for step 1: the cap with probability `p`, else the
    /// complement.
    pub fn sample_cos<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<(f64, f64)> {
        let alpha = alpha_of(self.d);
        if self.coin.sample(rng) {
            let b = sym_beta_lower_inv(self.cap_x, alpha, unit_open0(rng).ln(), self.ln_cf)?;
            return Ok((1.0 - 2.0 * b, 2.0 * (b * (1.0 - b)).sqrt()));
        }
        let gamma = Gamma::new(alpha, 1.0)
            .map_err(|e| Error::param("PrivUnit2", format!("Gamma({alpha}): {e}")))?;
        // Acceptance is P₋ ≥ ½; 2000 failures in a row have probability ≤ 2^-2000.
        for _ in 0..2000 {
            let gx: f64 = rng.sample(gamma);
            let gy: f64 = rng.sample(gamma);
            let s = gx + gy;
            if s > 0.0 && gy > self.cap_x * s {
                return Ok(((gx - gy) / s, 2.0 * (gx * gy).sqrt() / s));
            }
        }
        Err(Error::param(
            "PrivUnit2",
            "complement sampler failed 2000 times (acceptance ≥ ½): broken random source",
        ))
    }

    /// Steps 1–2 for an exact unit vector `u`.
    pub(crate) fn sample_on_sphere<R: WordRng + ?Sized>(
        &self,
        u: &[f64],
        rng: &mut R,
    ) -> Result<Vec<f64>> {
        self.sample_scaled(u, 1.0, rng)
    }

    /// Steps 1–2 for the unit vector `û = inv_norm·u` (normalisation folded in, no copy).
    ///
    /// `V = t·û + s·w` with `(t, s)` from [`PrivUnit2::sample_cos`] and `w` uniform on the unit
    /// sphere of `û^⊥`: `w = r/‖r‖`, `r = g − ⟨g,û⟩û` for `g ~ N(0, I_d)` drawn in bulk
    /// ([`fill_standard_normal_dot`] also returns `⟨g,u⟩` and `‖g‖²`). `‖r‖² = ‖g‖² − ⟨g,û⟩²`
    /// is used when it keeps at least a thousandth of `‖g‖²` (relative rounding error below
    /// ~1e-13); otherwise `r` is formed and its norm summed exactly. `r = 0` (probability zero)
    /// redraws `g`. Returns `Z = V/m`.
    fn sample_scaled<R: WordRng + ?Sized>(
        &self,
        u: &[f64],
        inv_norm: f64,
        rng: &mut R,
    ) -> Result<Vec<f64>> {
        let (t, s) = self.sample_cos(rng)?;
        let inv_m = 1.0 / self.m;
        let mut z = vec![0f64; u.len()];
        // 2^-1000 chance of needing more than a handful of draws even at d = 2.
        for _ in 0..64 {
            let (gu, gg) = fill_standard_normal_dot(rng, &mut z, u);
            let c = gu * inv_norm; // ⟨g, û⟩
            let r2 = gg - c * c;
            let r2 = if r2 > 1e-3 * gg {
                r2
            } else {
                let mut acc = 0.0;
                for (zi, ui) in z.iter_mut().zip(u) {
                    *zi -= c * inv_norm * ui;
                    acc += *zi * *zi;
                }
                if acc.is_nan() || acc <= 0.0 {
                    continue;
                }
                // z now holds r: V = t·û + s·r/‖r‖.
                let b = s * inv_m / acc.sqrt();
                let a = t * inv_m * inv_norm;
                for (zi, ui) in z.iter_mut().zip(u) {
                    *zi = a * ui + b * *zi;
                }
                return Ok(z);
            };
            let b = s * inv_m / r2.sqrt();
            let a = t * inv_m * inv_norm - b * c * inv_norm;
            for (zi, ui) in z.iter_mut().zip(u) {
                *zi = b * *zi + a * ui;
            }
            return Ok(z);
        }
        Err(Error::param(
            "PrivUnit2",
            "the orthogonal direction was degenerate 64 times: broken random source",
        ))
    }

    /// Log-density of the direction `v = m·Z` (a unit vector) for the input `u`, relative to the
    /// uniform measure on the sphere: `ln(p/P₊)` on the cap of `u`, `ln((1−p)/P₋)` off it.
    pub fn ln_density(&self, v: &[f64], u: &[f64]) -> f64 {
        if 0.5 * (1.0 - dot(v, u)) <= self.cap_x {
            self.p.ln() - self.ln_p_cap
        } else {
            self.coin.ln_complement() - self.ln_p_comp
        }
    }
}

/// The largest γ allowed by the sufficient condition (14a) of Theorem 1:
/// `γ = ((e^ε − 1)/(e^ε + 1))·√(π/(2(d−1)))`.
pub fn gamma_14a(epsilon: f64, d: usize) -> f64 {
    (0.5 * epsilon).tanh() * (std::f64::consts::PI / (2.0 * (d as f64 - 1.0))).sqrt()
}

/// The largest γ allowed by the sufficient condition (14b) of Theorem 1, i.e. the root of
/// `½ ln d + ln 6 − ((d−1)/2)·ln(1−γ²) + ln γ = ε` on `[√(2/d), 1)` (the left side increases in γ);
/// `None` when even `γ = √(2/d)` costs more than ε.
pub fn gamma_14b(epsilon: f64, d: usize) -> Option<f64> {
    let df = d as f64;
    let f = |g: f64| 0.5 * df.ln() + 6f64.ln() - alpha_of(d) * (-g * g).ln_1p() + g.ln();
    let lo0 = (2.0 / df).sqrt();
    if lo0 >= 1.0 || f(lo0) > epsilon {
        return None;
    }
    let (mut lo, mut hi) = (lo0, 1.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid) <= epsilon {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// `E[U₁ | U₁ ≥ 0] = Γ(d/2)/(√π·Γ((d+1)/2))` for `U` uniform on `S^{d−1}` (closed form, used to
/// check the continued fraction at `x = ½`).
pub fn hemisphere_mean(d: usize) -> f64 {
    (-ln_gamma_half_ratio(d as f64 / 2.0)).exp() / std::f64::consts::PI.sqrt()
}

impl LocalAlgorithm for PrivUnit2 {
    fn algorithm(&self) -> &'static str {
        ALGORITHM
    }
    fn epsilon(&self) -> f64 {
        self.epsilon
    }
    fn constants(&self) -> Vec<(String, f64)> {
        vec![
            constant("gamma", self.gamma),
            constant("p", self.p),
            constant("eps_cap", self.eps_cap),
            constant("eps_coin", self.eps0),
            constant("m", self.m),
        ]
    }
    fn decoder(&self) -> &'static str {
        "mean of the rows (each Z = V/m is unbiased)"
    }
    fn client(&self, _id: u64, v: &[f64], rng: &mut ChaCha20Rng) -> Result<Vec<f64>> {
        self.privatize(v, rng)
    }
    fn mse_per_user(&self) -> (f64, ErrorKind) {
        (self.mse_unit(), ErrorKind::Exact)
    }
}

/// The Duchi, Jordan & Wainwright hemisphere mechanism as a release records it: a
/// [`PrivUnit2::duchi`] under its own name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Duchi(pub PrivUnit2);

/// Citation recorded in releases of [`Duchi`].
pub const DUCHI_ALGORITHM: &str = "Duchi, Jordan & Wainwright hemisphere mechanism = PrivUnit2 \
                                   with γ = 0 (Bhowmick et al. 2018, Algorithm 1), corrected \
                                   constant";

impl LocalAlgorithm for Duchi {
    fn algorithm(&self) -> &'static str {
        DUCHI_ALGORITHM
    }
    fn epsilon(&self) -> f64 {
        self.0.epsilon
    }
    fn constants(&self) -> Vec<(String, f64)> {
        self.0.constants()
    }
    fn decoder(&self) -> &'static str {
        self.0.decoder()
    }
    fn client(&self, id: u64, v: &[f64], rng: &mut ChaCha20Rng) -> Result<Vec<f64>> {
        self.0.client(id, v, rng)
    }
    fn mse_per_user(&self) -> (f64, ErrorKind) {
        self.0.mse_per_user()
    }
}
