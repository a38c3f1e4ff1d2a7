//! PrivUnitInf (Bhowmick, Duchi, Freudiger, Kapoor, Rogers 2018, Algorithm 2; MECHANISMS-LDP.md
//! §C): ε-LDP for vectors of the hypercube `[-1, 1]^d`.
//!
//! 1. Round `u ∈ [-1,1]^d` to a corner: `Û_j = +1` with probability `(1 + u_j)/2`, else `−1`
//!    (`E[Û] = u`).
//! 2. With probability `p` draw `V` uniform on the cap `{v ∈ {±1}^d : ⟨v, Û⟩ > κ}`, else uniform
//!    on its complement. With `ℓ` the number of coordinates where `V` agrees with `Û`,
//!    `⟨V, Û⟩ = 2ℓ − d`, so the cap is `ℓ ≥ L` with `L = dτ = ⌈(d + κ + 1)/2⌉ = ⌊(d + κ)/2⌋ + 1`.
//!    Sampling: `ℓ` from its law on the branch's range (`P(ℓ) ∝ C(d, ℓ)`), then a uniform
//!    `ℓ`-subset of coordinates where `V = Û` (`V = −Û` elsewhere).
//! 3. Return `Z = V/m`, `m = p·κ₊ + (1−p)·κ₋` with `κ₊ = C(d−1, L−1)/N₊`,
//!    `κ₋ = −C(d−1, L−1)/N₋`, `N₊ = Σ_{ℓ≥L} C(d, ℓ)`, `N₋ = 2^d − N₊` (Lemma 4.2: `E[V | Û] =
//!    m·Û` by a telescoping sum), so `E[Z] = u`, `‖Z‖² = d/m²` and
//!    **`E‖Z − u‖² = d/m² − ‖u‖²`** exactly.
//!
//! **Privacy (Theorem 2 with the exact cap cost).** Given `Û`, `V` has probability `p/N₊` on the
//! cap and `(1−p)/N₋` off it. For `L > d/2` (i.e. `κ ≥ 0`) `N₊ ≤ N₋`, and with `p ≥ ½` the largest
//! ratio between two corners is `[p/N₊]/[(1−p)/N₋] = e^{ε₀ + ε_cap}`, `ε₀ = logit p`,
//! `ε_cap = ln N₋ − ln N₊` (condition (17)), attained at `u' = −u` (a `v` agreeing with `Û` in
//! `ℓ ≥ L` places agrees with `−Û` in `d − ℓ < L`). In general the largest ratio is
//! `e^{|logit p + ε_cap|}`, so the argument only needs `−ε − ε_cap ≤ logit p ≤ ε − ε_cap`
//! (with `ε = ε₀ + ε_cap ≥ 0`), not `p ≥ ½`: for even `d` the smallest cap
//! (`L = d/2 + 1`, κ = 0) already costs `ε_cap = ln((1+b)/(1−b))`, `b = C(d, d/2)/2^d` (0.50 at
//! d = 10), and a smaller ε is reached with `ε₀ = ε − ε_cap < 0` (`p < ½`) — an extension of the
//! paper's range (which would refuse such ε); Lemma 4.2 (unbiasedness) holds for any `p`. The rounding makes the output law a mixture
//! over corners, which keeps the bound for any `u, u' ∈ [-1,1]^d`. Tested by enumerating all `2^d`
//! outputs at `d ≤ 10`. The cap coin is exact ([`Coin::odds_at_most`]`(ε₀)`: 128 uniform bits
//! below `T`, odds `p/(1−p) ≤ e^{ε₀}` in exact arithmetic, `p = T/2¹²⁸` used in `m`); for `ε₀ < 0` the
//! rounding is down, and the constructor checks that `logit p ≥ −ε − ε_cap` still holds (slack
//! `2ε` in logit against the coin's rounding of at most `2⁻¹²⁸/p`).
//!
//! **Choice of κ and split.** As for PrivUnit2, with `ε₀ = ε − ε_cap(L)`:
//! `m = κ₊·(p − (1−p)e^{−ε_cap}) = κ₊·σ(ε − ε_cap(L))·(1 − e^{−ε})`, so the variance `d/m²` is
//! minimised by maximising `ln κ₊(L) + ln σ(ε − ε_cap(L))` over the integers
//! `L ∈ [⌊d/2⌋ + 1, L_max]`, `L_max` the largest `L` with `ε_cap(L) ≤ ε` (bisection; `ε_cap` is
//! increasing in `L`). [`PrivUnitInf::new`] does an integer ternary search followed by a local scan
//! (the objective is unimodal; tested against brute force). `κ = max(0, 2L − d − 2)` is recorded
//! (the smallest κ of the paper's range giving this `L`).
//!
//! **Numerics** (d up to 10⁷, ε up to 500). Binomial probabilities `b(ℓ; n, ½) = C(n, ℓ)/2^n` are
//! computed in log space by Loader's (2000) saddle-point form (Stirling remainders and the
//! deviance `bd0`, no cancellation of large `ln Γ`); tails `P₊ = Σ_{ℓ≥L} b(ℓ; d, ½)` as
//! `b(L)·Σ_t r_t` with the term ratios `r_{t+1}/r_t = (d − ℓ)/(ℓ + 1)`, summed until the geometric
//! bound on the remainder is below 10⁻¹⁷ relative; `ln P₋ = ln(1 − P₊)`.
//!
//! **Sampler.** Cap branch: the inverse CDF of `ℓ` walking up from `L` over the same ratio terms
//! (expected `O(E[ℓ − L] + 1)` steps). Complement branch: `Binomial(d, ½)` (exact BTPE sampler of
//! `rand_distr`) rejected unless `ℓ < L` (acceptance `P₋ ≥ ½`). The subset: a partial
//! Fisher–Yates over the smaller of the agreeing and disagreeing sets.

use rand::Rng;
use rand::RngExt;
use rand_distr::Binomial;

use super::algorithm::{constant, ErrorKind, LocalAlgorithm};
use super::WordRng;
use super::{check_dim, check_epsilon, unit_closed0, unit_open0, UNIT_NORM_TOL};
use crate::error::{Error, Result};
use crate::privacy::coin::Coin;
use crate::privacy::guarantee::InputDomain;
use crate::privacy::special::{ln_1m_exp, ln_gamma, log1p_exp};
use rand_chacha::ChaCha20Rng;

/// Citation recorded with releases.
pub const ALGORITHM: &str =
    "PrivUnitInf (Bhowmick et al. 2018, Algorithm 2), exact cap cost, variance-optimal kappa";

const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// Smallest coin budget ε₀ accepted by [`PrivUnitInf::from_threshold`]: `p = σ(−60) ≈ 10⁻²⁶`
/// still has about 40 significant bits in the exact 128-bit coin (deeper, its rounding would
/// become a visible part of `p`). [`PrivUnitInf::new`] never goes there: its ε₀ is below 0
/// only at the smallest cap.
pub const MIN_EPS0: f64 = -60.0;

/// Parameters of PrivUnitInf; every constant is public.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrivUnitInf {
    /// Dimension.
    pub d: usize,
    /// The guarantee: ε-LDP (replace-one) on `[-1,1]^d`, `ε = eps_cap + eps0`.
    pub epsilon: f64,
    /// The paper's κ (`⟨V, Û⟩ > κ` is the cap); `max(0, 2L − d − 2)`.
    pub kappa: usize,
    /// `L = dτ`: `V` is in the cap iff it agrees with `Û` in at least `L` coordinates.
    pub threshold: usize,
    /// Probability of sampling from the cap: the exact coin's `T/2¹²⁸`.
    pub p: f64,
    /// The cap coin ([`Coin::odds_at_most`] of `ε₀`): heads = cap.
    pub coin: Coin,
    /// Budget spent by the cap: `ln N₋ − ln N₊` (condition (17)).
    pub eps_cap: f64,
    /// Budget spent by the coin: `ln(p/(1−p))`.
    pub eps0: f64,
    /// `ln(N₊/2^d)`.
    pub ln_p_cap: f64,
    /// `ln(N₋/2^d)`.
    pub ln_p_comp: f64,
    /// `κ₊ = C(d−1, L−1)/N₊ = E[V₁ Û₁ | cap]`.
    pub kappa_plus: f64,
    /// `κ₋ = −C(d−1, L−1)/N₋ = E[V₁ Û₁ | complement]`.
    pub kappa_minus: f64,
    /// Debiasing constant: `Z = V/m`.
    pub m: f64,
    /// `Σ_{ℓ≥L} C(d, ℓ)/C(d, L)` (the cap sampler's normaliser).
    cap_sum: f64,
}

/// Loader's Stirling remainder `ln n! − [(n + ½) ln n − n + ½ ln 2π]` for `n ≥ 1`.
fn stirlerr(n: f64) -> f64 {
    if n < 16.0 {
        ln_gamma(n + 1.0) - (n + 0.5) * n.ln() + n - 0.5 * LN_2PI
    } else {
        let r = 1.0 / n;
        let r2 = r * r;
        r * (1.0 / 12.0
            - r2 * (1.0 / 360.0 - r2 * (1.0 / 1260.0 - r2 * (1.0 / 1680.0 - r2 / 1188.0))))
    }
}

/// Loader's deviance `bd0(x, M) = x ln(x/M) + M − x`, by its series when `x ≈ M`.
fn bd0(x: f64, mean: f64) -> f64 {
    if (x - mean).abs() < 0.1 * (x + mean) {
        let v = (x - mean) / (x + mean);
        let mut s = (x - mean) * v;
        let mut ej = 2.0 * x * v;
        let v2 = v * v;
        for j in 1..1000 {
            ej *= v2;
            let s1 = s + ej / (2 * j + 1) as f64;
            if s1 == s {
                break;
            }
            s = s1;
        }
        s
    } else {
        x * (x / mean).ln() + mean - x
    }
}

/// `ln b(x; n, ½) = ln(C(n, x)/2^n)` for integers `0 ≤ x ≤ n` (Loader 2000), accurate to a few
/// ulps of the probability even at `n = 10⁷`. `x > n` is clamped to `n`.
pub fn ln_binom_half(x: usize, n: usize) -> f64 {
    let x = x.min(n);
    // Symmetric in x ↔ n − x bit for bit.
    let x = x.min(n - x);
    let (xf, nf) = (x as f64, n as f64);
    if x == 0 {
        return -nf * std::f64::consts::LN_2;
    }
    let y = nf - xf;
    let half = 0.5 * nf;
    stirlerr(nf) - stirlerr(xf) - stirlerr(y) - bd0(xf, half) - bd0(y, half)
        + 0.5 * (nf / (xf * y)).ln()
        - 0.5 * LN_2PI
}

/// `Σ_{ℓ≥L} C(d, ℓ)/C(d, L)` for `L > d/2` (terms decreasing), summed until the geometric bound
/// on the remainder is below 10⁻¹⁷ of the sum.
fn upper_ratio_sum(d: usize, l: usize) -> f64 {
    let (mut term, mut sum) = (1.0f64, 1.0f64);
    for ell in l..d {
        let r = (d - ell) as f64 / (ell + 1) as f64;
        term *= r;
        sum += term;
        if term * r < 1e-17 * sum * (1.0 - r) {
            break;
        }
    }
    sum
}

/// `(ln P₊, ln P₋, ε_cap, cap_sum)` for the threshold `L` (`⌊d/2⌋ < L ≤ d`).
fn cap_terms(d: usize, l: usize) -> (f64, f64, f64, f64) {
    let cap_sum = upper_ratio_sum(d, l);
    let ln_p = if 2 * l == d + 1 {
        -std::f64::consts::LN_2 // odd d, L = (d+1)/2: exactly half the cube by symmetry
    } else {
        (ln_binom_half(l, d) + cap_sum.ln()).min(-std::f64::consts::LN_2)
    };
    let ln_q = ln_1m_exp(ln_p);
    (ln_p, ln_q, ln_q - ln_p, cap_sum)
}

/// `ln κ₊ = ln C(d−1, L−1) − ln N₊ = ln b(L−1; d−1, ½) − ln 2 − ln P₊`.
fn ln_kappa_plus(d: usize, l: usize, ln_p: f64) -> f64 {
    ln_binom_half(l - 1, d - 1) - std::f64::consts::LN_2 - ln_p
}

impl PrivUnitInf {
    /// PrivUnitInf for ε-LDP on `[-1,1]^d` with the variance-optimal threshold and split.
    pub fn new(epsilon: f64, d: usize) -> Result<PrivUnitInf> {
        check_epsilon("‹epsilon›", epsilon)?;
        check_dim(d)?;
        let lo = d / 2 + 1;
        // L_max: the largest threshold whose cap cost fits in ε (bisection, ε_cap increasing in
        // L); L = lo when even the smallest cap costs more than ε (even d, tiny ε: then p < ½).
        let fits = |l: usize| cap_terms(d, l).2 <= epsilon;
        let (mut a, mut b) = (lo, d); // fits(a) or a = lo
        if fits(b) {
            a = b;
        }
        while b - a > 1 {
            let mid = a + (b - a) / 2;
            if fits(mid) {
                a = mid;
            } else {
                b = mid;
            }
        }
        let l_max = a;
        let objective = |l: usize| {
            let (ln_p, _, ec, _) = cap_terms(d, l);
            ln_kappa_plus(d, l, ln_p) - log1p_exp(ec - epsilon)
        };
        let (mut x, mut y) = (lo, l_max);
        while y - x > 4 {
            let m1 = x + (y - x) / 3;
            let m2 = y - (y - x) / 3;
            if objective(m1) < objective(m2) {
                x = m1 + 1;
            } else {
                y = m2;
            }
        }
        let scan_lo = x.saturating_sub(3).max(lo);
        let scan_hi = (y + 3).min(l_max);
        let best = (scan_lo..=scan_hi)
            .map(|l| (l, objective(l)))
            .fold((scan_lo, f64::NEG_INFINITY), |acc, t| {
                if t.1 > acc.1 {
                    t
                } else {
                    acc
                }
            })
            .0;
        let ec = cap_terms(d, best).2;
        Self::from_threshold(d, best, epsilon - ec)
    }

    /// PrivUnitInf with the paper's parameters: `κ ∈ {0, …, d−1}` and coin budget `ε₀ ≥ 0`; the
    /// guarantee `ε = ε_cap(κ) + ε₀` is computed exactly.
    pub fn from_kappa(d: usize, kappa: usize, eps0: f64) -> Result<PrivUnitInf> {
        check_dim(d)?;
        if kappa >= d {
            return Err(Error::param(
                "κ",
                format!(
                    "must lie in {{0, …, d − 1}} = {{0, …, {}}}, got {kappa}",
                    d - 1
                ),
            ));
        }
        Self::from_threshold(d, (d + kappa) / 2 + 1, eps0)
    }

    /// PrivUnitInf with the cap `ℓ ≥ L` for `⌊d/2⌋ < L ≤ d` and coin budget `ε₀ = logit p`,
    /// which may be negative down to (excluding) `−ε_cap(L)` (see the module documentation).
    pub fn from_threshold(d: usize, threshold: usize, eps0: f64) -> Result<PrivUnitInf> {
        check_dim(d)?;
        if threshold <= d / 2 || threshold > d {
            return Err(Error::param(
                "PrivUnitInf threshold",
                format!("L must lie in ({}, {d}], got {threshold}", d / 2),
            ));
        }
        let l = threshold;
        let (ln_p_cap, ln_p_comp, eps_cap, cap_sum) = cap_terms(d, l);
        if !(eps0.is_finite() && eps0 + eps_cap > 0.0) {
            return Err(Error::param(
                "ε₀",
                format!(
                    "the coin's budget must be finite with ε₀ + ε_cap > 0 (ε_cap = {eps_cap}), \
                     got {eps0}"
                ),
            ));
        }
        if eps0 < MIN_EPS0 {
            return Err(Error::param(
                "ε₀",
                format!(
                    "the coin's budget ε₀ = {eps0} is below {MIN_EPS0}: a cap probability under \
                     e^{MIN_EPS0} is beneath the exact coin's resolution (and spending that much \
                     of ε on the cap never lowers the error)"
                ),
            ));
        }
        // the exact cap coin: P(cap) = T/2^128 with odds ≤ e^{ε₀}, so logit p + ε_cap ≤ ε; the
        // other ratio, e^{−logit p − ε_cap}, must stay ≤ e^ε after the rounding down (slack 2ε)
        let coin = Coin::odds_at_most(eps0)?;
        let p = coin.probability();
        let ln_1mp = coin.ln_complement();
        if coin.threshold() == 0 || p.ln() - ln_1mp < -eps0 - 2.0 * eps_cap {
            return Err(Error::param(
                "ε₀",
                format!(
                    "the coin's budget ε₀ = {eps0} is too close to −ε_cap = {} for a 64-bit \
                     coin (ε₀ + ε_cap is the guarantee and must exceed the coin's resolution)",
                    -eps_cap
                ),
            ));
        }
        let ln_kp = ln_kappa_plus(d, l, ln_p_cap);
        let kappa_plus = ln_kp.exp();
        let kappa_minus = -(ln_kp + ln_p_cap - ln_p_comp).exp();
        let m = kappa_plus * (p - (ln_1mp - eps_cap).exp());
        if !(m.is_finite() && m > 0.0 && eps_cap.is_finite() && cap_sum.is_finite()) {
            return Err(Error::param(
                "PrivUnitInf",
                format!("calibration failed numerically at d = {d}, L = {l}, ε₀ = {eps0}"),
            ));
        }
        Ok(PrivUnitInf {
            d,
            epsilon: eps_cap + eps0,
            kappa: (2 * l).saturating_sub(d + 2),
            threshold: l,
            p,
            coin,
            eps_cap,
            eps0,
            ln_p_cap,
            ln_p_comp,
            kappa_plus,
            kappa_minus,
            m,
            cap_sum,
        })
    }

    /// Closed-form `E‖Z − u‖² = d/m² − ‖u‖²`.
    pub fn mse(&self, u: &[f64]) -> f64 {
        self.d as f64 / (self.m * self.m) - u.iter().map(|x| x * x).sum::<f64>()
    }

    /// [`mse`](Self::mse) at a corner of the cube (every `|u_j| = 1`): `d/m² − d`.
    pub fn mse_corner(&self) -> f64 {
        self.d as f64 / (self.m * self.m) - self.d as f64
    }

    /// The number of agreements `ℓ` of `V` with `Û`: from the cap (`ℓ ≥ L`) or its complement.
    pub fn sample_agreements<R: Rng + ?Sized>(&self, cap: bool, rng: &mut R) -> Result<usize> {
        let (d, l) = (self.d, self.threshold);
        if cap {
            let target = unit_open0(rng) * self.cap_sum;
            let (mut term, mut acc) = (1.0f64, 1.0f64);
            let mut ell = l;
            while acc < target && ell < d {
                term *= (d - ell) as f64 / (ell + 1) as f64;
                ell += 1;
                acc += term;
                if term == 0.0 {
                    break;
                }
            }
            Ok(ell)
        } else {
            // P₋ ≥ ½: expected fewer than two draws.
            let bin = Binomial::new(d as u64, 0.5)
                .map_err(|e| Error::param("PrivUnitInf", format!("binomial sampler: {e}")))?;
            loop {
                let ell = rng.sample(bin) as usize;
                if ell < l {
                    return Ok(ell);
                }
            }
        }
    }

    /// Privatise `u ∈ [-1,1]^d` (coordinates within [`UNIT_NORM_TOL`] of ±1 are clamped).
    pub fn privatize<R: WordRng + ?Sized>(&self, u: &[f64], rng: &mut R) -> Result<Vec<f64>> {
        if u.len() != self.d {
            return Err(Error::param(
                "input vector",
                format!(
                    "has {} coordinates, the mechanism has d = {}",
                    u.len(),
                    self.d
                ),
            ));
        }
        if let Some((j, x)) = u
            .iter()
            .enumerate()
            .find(|(_, x)| !(x.is_finite() && x.abs() <= 1.0 + UNIT_NORM_TOL))
        {
            return Err(Error::param(
                "input vector",
                format!("coordinate {j} is {x}: PrivUnitInf needs every coordinate in [-1, 1]"),
            ));
        }
        // Step 1: the corner Û (as signs).
        let mut v: Vec<f64> = u
            .iter()
            .map(|&x| {
                if unit_closed0(rng) < 0.5 * (1.0 + x.clamp(-1.0, 1.0)) {
                    1.0
                } else {
                    -1.0
                }
            })
            .collect();
        // Step 2: ℓ, then a uniform set of d − ℓ coordinates to flip.
        let cap = self.coin.sample(rng);
        let ell = self.sample_agreements(cap, rng)?;
        let flips = self.d - ell;
        let pick = flips.min(ell);
        let mut idx: Vec<usize> = (0..self.d).collect();
        for i in 0..pick {
            let j = rng.random_range(i..self.d);
            idx.swap(i, j);
        }
        let inv_m = 1.0 / self.m;
        if pick == flips {
            for &j in &idx[..pick] {
                v[j] = -v[j];
            }
        } else {
            // The `pick = ℓ` chosen coordinates agree; all the others flip.
            for &j in &idx[pick..] {
                v[j] = -v[j];
            }
        }
        v.iter_mut().for_each(|x| *x *= inv_m);
        Ok(v)
    }
}

impl LocalAlgorithm for PrivUnitInf {
    fn algorithm(&self) -> &'static str {
        ALGORITHM
    }
    fn epsilon(&self) -> f64 {
        self.epsilon
    }
    fn domain(&self) -> InputDomain {
        InputDomain::Cube
    }
    fn constants(&self) -> Vec<(String, f64)> {
        vec![
            constant("kappa", self.kappa as f64),
            constant("threshold_L", self.threshold as f64),
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
        (self.mse_corner(), ErrorKind::Exact)
    }
    fn mse_note(&self) -> String {
        format!(
            "exact for inputs at a corner of the cube (every |u_j| = 1); an input u has \
             d/m² − ‖u‖² = {:.6} − ‖u‖²",
            self.d as f64 / (self.m * self.m)
        )
    }
}
