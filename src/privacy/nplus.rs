//! `N₊`: a high-probability bound on how many of the `k` signs of a sign random projection one
//! β-neighbour can flip (Li & Li, DP-SignRP-RR, Algorithm 3 and Proposition 4.4; DESIGN.md §4).
//!
//! # The chain of reasoning, and what is exact, bounded or approximate
//!
//! For one projection column `w ∈ R^p` and a neighbour `u'` with `‖u − u'‖₁ ≤ β`,
//! `|wᵀ(u − u')| ≤ β·max_i|w_i|`, so the sign of `wᵀu` can change only if
//! `β·max_i|w_i| > |wᵀu|`. Let
//!
//! ```text
//! P = Pr(β·max_i|w_i| > |wᵀu|)                                      (eq. (9))
//! ```
//!
//! The indicators of this event over the `k` independent columns are i.i.d., so the number `N` of
//! signs a neighbour can flip is dominated by `Binomial(k, P)`.
//!
//! * **Gaussian `w`, eq. (5)** — [`f_gaussian`] computes
//!   `F_{r,p} = ∫₀^∞ 2p·[2Φ(t)−1]^{p−1}·[2Φ(rt)−1]·φ(t) dt` (eq. (5) / (11) / (21)),
//!   `r = β/‖u‖`. `F_{r,p}` is **exactly** `Pr(r·M > |Z|)` for `M = max_i|w_i|` and a standard
//!   normal `Z` **independent** of `M` (the density of `M` is `2p[2Φ(t)−1]^{p−1}φ(t)` and
//!   `Pr(|Z| < rt) = 2Φ(rt)−1`). The real `Y = wᵀu/‖u‖` is standard normal but correlated with
//!   `M`, and Lemma 4.2 / E.1 claims that the correlation can only decrease the probability, so
//!   that `P ≤ F_{r,p}` for `r < 1`. **That claim is false in general**: for `p = 2` and
//!   `u ∝ (1, 1)`, writing `a = (w₁+w₂)/√2`, `b = (w₁−w₂)/√2` (i.i.d. N(0,1)) gives
//!   `max|w_i| = (|a|+|b|)/√2`, hence exactly `P = 1 − (2/π)·atan(√2/r − 1)`, which exceeds
//!   `F_{r,2}` for `r ≥ 0.8` (`r = 1`: `P = 3/4 > F_{1,2} = 2/3`). Simulation (tests/nplus.rs)
//!   shows `P > F_{r,p}` also for `p = 10, 100` and spread-out `u` from `r ≈ 0.5` on (e.g.
//!   `p = 100`, `u` constant, `r = 0.7`: `P ≈ 0.940` against `F = 0.937`). At `r ≤ 0.3` no
//!   violation was seen (`p` from 2 to 784, five shapes of `u`), but there is no proof either.
//!   [`f_gaussian`] still computes eq. (5) exactly as the paper states it.
//! * **Gaussian `w`, the bound [`compute`] uses** (derived here, checked by simulation): write
//!   `w = Y·û + w⊥` with `û = u/‖u‖` and `w⊥ = (I − ûûᵀ)w` independent of `Y`. Then
//!   `M ≤ |Y|·a + M⊥` with `a ≥ max_i|û_i|` and `M⊥ = max_i|w⊥_i|`, so the event implies
//!   `r'·M⊥ > |Y|` with **`r' = r/(1 − r·a)`** (if `r·a < 1`). `Cov(w⊥) = I − ûûᵀ ≼ I`, so by
//!   Anderson's inequality (T. W. Anderson 1955: a centred Gaussian with the smaller covariance
//!   puts more mass on every symmetric convex set, here the cube `max_i|x_i| ≤ t`)
//!   `Pr(M⊥ ≤ t) ≥ Pr(M ≤ t)` for every `t`: `M⊥` is stochastically
//!   smaller than the maximum of `p` i.i.d. half-normals, and since `M⊥` is independent of `Y`,
//!   **`P ≤ F_{r',p}` rigorously**. With rows in `[-1,1]^p` and `‖u‖ ≥ ν`,
//!   `max_i|û_i| ≤ 1/ν`, so [`compute`] takes `a = min(1, 1/ν)` ([`gaussian_r_bound`]); for the
//!   paper's MNIST-like setting (`β = 1`, `ν = 10`, `p = 784`) that is `r' = 0.10101` and
//!   `F = 0.26618` instead of `0.26362`. When `r·a ≥ 1` (e.g. `β = ν = 1`) nothing better than
//!   the trivial `P ≤ 1` (`N₊ = k`) is available, and it is attained for `r > 1`: with
//!   `u = ‖u‖·e₁`, `β·max_i|w_i| ≥ β|w₁| > ‖u‖·|w₁|` almost surely.
//! * **Rademacher `w`** — `max_i|w_i| = 1` and `P = Pr(β > |wᵀu|)`; by the central limit theorem
//!   `wᵀu ≈ N(0, ‖u‖²)` and **`P ≈ 2Φ(r) − 1`** (eq. (10), [`p_rademacher`]). This is an
//!   **approximation, not a bound**: it is good when `u` is spread over many coordinates with
//!   unequal magnitudes, but it can be far too small for sparse `u` (for
//!   `u = (ν/√2)(e₁ + e₂)`, `wᵀu = 0` with probability ½ for every `r > 0`) and is off by the
//!   lattice effect when all `|u_i|` are equal (for `p = 784`, `r = 0.1`, `u_i = c`: exact
//!   `P = 0.0853` against `2Φ(0.1) − 1 = 0.0797`). [`NPlus::approximate`] records it.
//! * **Chernoff step** (Lemma 4.3, Proposition 4.4) — with `μ = P·k` (or any `μ ≥ E[N]`),
//!   `Pr(N ≥ (1+η)μ) ≤ exp(−η²μ/(2+η))`. Setting the right side to `δ`, `L = ln(1/δ)`, gives
//!   `μη² − Lη − 2L = 0`, i.e. `η = (L + √(L² + 8μL)) / (2μ)` ([`chernoff_eta`]), and
//!   `N₊ = min(k, ⌈(1+η)μ⌉)` ([`n_plus`]) satisfies **`Pr(N > N₊) ≤ δ` rigorously** given `P`
//!   (an upper bound; it is as good as the `P` that went in, so it is approximate for
//!   Rademacher). It is not tight: for `k = 512`, `P = 0.26`, `δ = 1e-6` it gives 202 where the
//!   exact binomial quantile is 182. Because `N` is an integer,
//!   `⌊(1+η)μ⌋` would already suffice; the paper's ceiling is kept (it is at most one larger).
//!
//! # Quadrature for eq. (5)
//!
//! `F_{r,p} = E[erf(rM/√2)]` where `M = max_i|w_i|` has CDF `G(t) = erf(t/√2)^p`. The integrand
//! `2p·exp((p−1)·ln erf(t/√2))·erf(rt/√2)·φ(t)` is formed in log space, with
//! `ln erf(x) = ln1p(−erfc(x))` for `x ≥ ½` (accurate where `erf(x) → 1`, which is where the mass
//! of `M` sits for large `p`) and `ln(erf(x))` below; `2Φ(rt) − 1 = erf(rt/√2)` keeps full
//! relative accuracy for tiny `r`.
//!
//! The mass of `M` sits near `t ≈ √(2 ln p)` with a width shrinking like `1/√(ln p)`, so the panels
//! follow `M`'s distribution instead of a fixed grid: panel ends are the quantiles of `M` at
//! `G = 1e-20, 1e-12, 1e-7, 1e-4, 1e-2, 0.1, 0.3` and at survival `1 − G` equal to the same levels
//! (found by bisection on `ln G` and `ln(1 − G)`), plus the points `t = s·√2/r`,
//! `s ∈ {¼, ½, 1, 2, 4}`, where `erf(rt/√2)` bends (these matter only for large `r` and small `p`).
//! Each panel gets a 20-point Gauss–Legendre rule. The mass of `M` outside the outer quantiles
//! (at most `2·10⁻²⁰`) is dropped, which changes `F` by at most `2·10⁻²⁰` absolute; as
//! `F_{r,p} ≥ F_{r,1} = (2/π)·atan r`, that is below `10⁻¹⁹/r` relative.
//!
//! Measured (tests): against the closed forms `F_{1,p} = p/(p+1)` and `F_{r,1} = (2/π)·atan r`,
//! against a brute-force 400 001-point Simpson rule on `[0, 40]`, and against the same rule with
//! every panel split in four ([`f_gaussian_refined`]), the relative differences are at most
//! `1e-13` (closed forms, Simpson) and `1e-15` (refinement) for `p ∈ [1, 10⁸]`,
//! `r ∈ [1e-6, 1]`, and `r` up to `10⁴` for small `p`. One evaluation costs 0.1–0.2 ms (release).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::projection::DenseKind;

/// Number of Gauss–Legendre nodes per panel.
const GL_ORDER: usize = 20;

/// Probability levels of `M`'s CDF (and, mirrored, of its survival function) used as panel ends.
const LEVELS: [f64; 7] = [1e-20, 1e-12, 1e-7, 1e-4, 1e-2, 0.1, 0.3];

/// Multiples `s` of `√2/r` added as panel ends (where `erf(rt/√2)` bends).
const R_SCALES: [f64; 5] = [0.25, 0.5, 1.0, 2.0, 4.0];

/// Upper end of the search for panel ends; `erfc(40/√2)` underflows, so `M`'s survival is 0 there
/// for any `p < 10³⁰⁰`.
const T_MAX: f64 = 40.0;

const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// Nodes and weights of the `GL_ORDER`-point Gauss–Legendre rule on `[-1, 1]` (Newton iteration
/// on the Legendre polynomial, accurate to rounding).
fn gauss_legendre() -> &'static ([f64; GL_ORDER], [f64; GL_ORDER]) {
    static RULE: OnceLock<([f64; GL_ORDER], [f64; GL_ORDER])> = OnceLock::new();
    RULE.get_or_init(|| {
        let n = GL_ORDER;
        let mut x = [0.0; GL_ORDER];
        let mut w = [0.0; GL_ORDER];
        for i in 0..n {
            let mut z = (std::f64::consts::PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
            let mut dp = 1.0;
            for _ in 0..100 {
                let (mut p0, mut p1) = (1.0, z);
                for j in 2..=n {
                    let jf = j as f64;
                    let p2 = ((2.0 * jf - 1.0) * z * p1 - (jf - 1.0) * p0) / jf;
                    p0 = p1;
                    p1 = p2;
                }
                dp = n as f64 * (z * p1 - p0) / (z * z - 1.0);
                let step = p1 / dp;
                z -= step;
                if step.abs() < 1e-16 {
                    break;
                }
            }
            x[i] = z;
            w[i] = 2.0 / ((1.0 - z * z) * dp * dp);
        }
        (x, w)
    })
}

/// `ln erf(x)` for `x ≥ 0`, accurate both near 0 and where `erf(x) → 1`.
fn ln_erf(x: f64) -> f64 {
    if x < 0.5 {
        libm::log(libm::erf(x))
    } else {
        libm::log1p(-libm::erfc(x))
    }
}

/// `ln G(t) = p·ln erf(t/√2)`: log-CDF of `M = max` of `p` half-normals.
fn ln_cdf_max(t: f64, p: f64) -> f64 {
    p * ln_erf(t / std::f64::consts::SQRT_2)
}

/// `ln(1 − G(t))`: log-survival of `M`.
fn ln_sf_max(t: f64, p: f64) -> f64 {
    libm::log(-libm::expm1(ln_cdf_max(t, p)))
}

/// Bisection for the `t ∈ [0, T_MAX]` where the monotone `f` crosses `target`
/// (`increasing` says which way `f` goes).
fn solve(f: impl Fn(f64) -> f64, target: f64, increasing: bool) -> f64 {
    let (mut lo, mut hi) = (0.0, T_MAX);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        let below = f(mid) < target;
        if below == increasing {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The integrand of eq. (5): `2p·[2Φ(t)−1]^{p−1}·[2Φ(rt)−1]·φ(t)`.
fn integrand(t: f64, r: f64, p: f64) -> f64 {
    let mut ln = (2.0 * p).ln() - 0.5 * t * t - LN_SQRT_2PI;
    if p > 1.0 {
        ln += (p - 1.0) * ln_erf(t / std::f64::consts::SQRT_2);
    }
    ln.exp() * libm::erf(r * t / std::f64::consts::SQRT_2)
}

fn check_r_p(r: f64, p: usize) -> Result<()> {
    if r.is_nan() || r < 0.0 {
        return Err(Error::param(
            "r",
            format!("r = β/‖u‖ must be a non-negative number, got {r}"),
        ));
    }
    if p == 0 {
        return Err(Error::param("‹dim›", "the dimension p must be at least 1"));
    }
    Ok(())
}

/// `F_{r,p} = ∫₀^∞ 2p·[2Φ(t)−1]^{p−1}·[2Φ(rt)−1]·φ(t) dt` (eq. (5)), which Lemma 4.2 /
/// Proposition 4.4 state to be an upper bound on `P = Pr(β·max_i|w_i| > |wᵀu|)` for a Gaussian
/// projection vector `w`, with `r = β/‖u‖`.
///
/// *Exactly* `Pr(β·max_i|w_i| > ‖u‖·|Z|)` for `Z ~ N(0,1)` independent of `w`. **Not** an upper
/// bound on the true `P` in general (counterexamples from `r ≈ 0.5` on, module documentation);
/// `F_{r',p}` with `r'` from [`gaussian_r_bound`] is. Computed by panelled Gauss–Legendre
/// quadrature to about `1e-13` relative. `r = +∞` gives 1, `r = 0` gives 0.
///
/// # Errors
/// `r` negative or NaN (named `r`), `p = 0` (named `--dim`).
pub fn f_gaussian(r: f64, p: usize) -> Result<f64> {
    f_gaussian_refined(r, p, 1)
}

/// [`f_gaussian`] with every quadrature panel split into `refine` equal parts (`refine = 1` is
/// [`f_gaussian`]; `0` is treated as 1). Exposed so that tests can check convergence by comparing
/// resolutions.
///
/// # Errors
/// As [`f_gaussian`].
pub fn f_gaussian_refined(r: f64, p: usize, refine: usize) -> Result<f64> {
    check_r_p(r, p)?;
    if r == 0.0 {
        return Ok(0.0);
    }
    if r == f64::INFINITY {
        return Ok(1.0);
    }
    let refine = refine.max(1);
    let pf = p as f64;

    // Panel ends: quantiles of M, then the bends of erf(rt/√2).
    let mut ends: Vec<f64> = Vec::with_capacity(2 * LEVELS.len() + R_SCALES.len());
    for &q in &LEVELS {
        let lq = q.ln();
        ends.push(solve(|t| ln_cdf_max(t, pf), lq, true));
        ends.push(solve(|t| ln_sf_max(t, pf), lq, false));
    }
    ends.sort_by(f64::total_cmp);
    let (a, b) = (ends[0], ends[ends.len() - 1]);
    for &s in &R_SCALES {
        let t = s * std::f64::consts::SQRT_2 / r;
        if t > a && t < b {
            ends.push(t);
        }
    }
    ends.sort_by(f64::total_cmp);
    ends.dedup();

    let (nodes, weights) = gauss_legendre();
    let mut total = 0.0;
    for pair in ends.windows(2) {
        let (lo, hi) = (pair[0], pair[1]);
        let h = (hi - lo) / refine as f64;
        for j in 0..refine {
            let left = lo + j as f64 * h;
            let (mid, half) = (left + 0.5 * h, 0.5 * h);
            let mut s = 0.0;
            for (x, w) in nodes.iter().zip(weights.iter()) {
                s += w * integrand(mid + half * x, r, pf);
            }
            total += half * s;
        }
    }
    Ok(total.clamp(0.0, 1.0))
}

/// The `r'` of the rigorous Gaussian bound `P ≤ F_{r',p}` (module documentation):
/// `r' = r/(1 − r·a)` where `a ≥ max_i|u_i|/‖u‖`, or `None` when `r·a ≥ 1` (or an input is NaN or
/// negative), where only the trivial bound `P ≤ 1` is available. With rows in `[-1,1]^p` and
/// `‖u‖ ≥ ν`, `a = min(1, 1/ν)`; without a domain bound, `a = 1`.
pub fn gaussian_r_bound(r: f64, a: f64) -> Option<f64> {
    if !(r >= 0.0 && a >= 0.0) {
        return None;
    }
    let ra = r * a;
    if ra < 1.0 {
        let rp = r / (1.0 - ra);
        rp.is_finite().then_some(rp)
    } else {
        None
    }
}

/// `2Φ(r) − 1 = erf(r/√2)`: the central-limit *approximation* (eq. (10)) of
/// `P = Pr(β > |wᵀu|)` for a Rademacher `w` (where `max_i|w_i| = 1`), `r = β/‖u‖`.
///
/// Not a bound: accurate for `u` spread over many coordinates, too small for sparse `u` (module
/// documentation). Returns NaN for NaN, 0 for `r ≤ 0`, 1 for `r = +∞`.
pub fn p_rademacher(r: f64) -> f64 {
    if r <= 0.0 {
        return 0.0;
    }
    libm::erf(r / std::f64::consts::SQRT_2)
}

/// Chernoff `η = (L + √(L² + 8μL)) / (2μ)` with `L = ln(1/δ)` and `μ = P·k`: the positive root of
/// `μη² − Lη − 2L = 0`, so that `exp(−η²μ/(2+η)) = δ` (Lemma 4.3, proof of Proposition 4.4).
///
/// `μ ≤ 0` gives `+∞` (no finite η works; [`n_plus`] handles that case without η), `δ ≥ 1` gives
/// `L = 0` and `η = 0`, `δ ≤ 0` gives `+∞`; NaN inputs give NaN.
pub fn chernoff_eta(mu: f64, delta: f64) -> f64 {
    if mu.is_nan() || delta.is_nan() {
        return f64::NAN;
    }
    let l = ln_inv_delta(delta);
    if l == 0.0 {
        return 0.0;
    }
    if mu <= 0.0 || l == f64::INFINITY {
        return f64::INFINITY;
    }
    (l + (l * l + 8.0 * mu * l).sqrt()) / (2.0 * mu)
}

/// `L = ln(1/δ)`, clamped to `[0, ∞]`.
fn ln_inv_delta(delta: f64) -> f64 {
    if delta <= 0.0 {
        f64::INFINITY
    } else {
        (-delta.ln()).max(0.0)
    }
}

/// `N₊ = min(k, ⌈(1+η)·μ⌉)` with `μ = P·k` and `η` from [`chernoff_eta`] (Proposition 4.4),
/// rounded up past floating-point error (the Chernoff inequality is verified at the result with a
/// margin, stepping up if needed): if
/// `N ~ Binomial(k, P')` with `P' ≤ prob`, then `Pr(N > N₊) ≤ δ`. Never below 1 (it divides ε
/// in Algorithm 3), so `k = 0` also gives 1.
///
/// `(1+η)μ` is evaluated as `μ + (L + √(L² + 8μL))/2`, which has no division and tends to `L` as
/// `μ → 0`. Edge cases, all finite and never NaN:
/// * `prob = 0` (`μ = 0`): `N = 0` surely, so every `n ≥ 0` has `Pr(N > n) = 0 ≤ δ`; the smallest
///   admissible value that is at least 1 is returned, i.e. **1**. (For tiny positive `μ` the
///   formula gives `⌈≈L⌉`; the step at 0 keeps `N₊` non-decreasing in `prob`.)
/// * `prob ≥ 1` or `δ ≤ 0`: `k`. `δ ≥ 1` (`L = 0`): `⌈μ⌉`.
/// * `prob` or `δ` NaN: `k` (the always-valid answer). `prob < 0` is treated as 0.
pub fn n_plus(k: usize, prob: f64, delta: f64) -> usize {
    let k1 = k.max(1);
    if prob.is_nan() || delta.is_nan() {
        return k1;
    }
    let prob = prob.min(1.0);
    if prob <= 0.0 {
        return 1;
    }
    let l = ln_inv_delta(delta);
    if l == f64::INFINITY {
        return k1;
    }
    let mu = prob * k as f64;
    let bound = mu + 0.5 * (l + (l * l + 8.0 * mu * l).sqrt());
    // `bound` is finite and positive here (μ ≥ 0, L finite).
    if bound >= k as f64 {
        return k1;
    }
    // 0 < bound < k here, so the cast is exact and in range.
    let mut c = bound.ceil();
    // Safe direction: `bound` carries f64 error, and a true bound just above an integer could
    // have been rounded onto it. Verify the defining inequality at c — with η = c/μ − 1 the
    // Chernoff exponent η²μ/(2+η) is (c − μ)²/(c + μ), which must reach L — against μ rounded
    // up (the exponent falls as μ grows) and L raised by 2⁻⁴⁰ relative, far above the few
    // roundings of either side; step up until it holds. (tests/calibration_exact.rs re-checks
    // the inequality exactly, and that c − 1 fails it.)
    let mu_up = f64::from_bits(mu.to_bits() + 1);
    let target = l * (1.0 + 1.0 / (1u64 << 40) as f64);
    // (δ ≥ 1, L = 0: nothing to verify; otherwise the inequality needs c > μ, η > 0.)
    while l > 0.0
        && c < k as f64
        && (c <= mu_up || (c - mu_up) * (c - mu_up) < target * (c + mu_up))
    {
        c += 1.0;
    }
    if c >= k as f64 {
        return k1;
    }
    (c as usize).clamp(1, k1)
}

/// `N₊` and every quantity that went into it, as recorded in a sketch header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NPlus {
    /// How `prob` was obtained (quadrature of eq. (5), the approximation (10), or a trivial bound).
    pub method: String,
    /// Whether `prob` is an approximation (Rademacher, eq. (10)) rather than a proven upper bound.
    pub approximate: bool,
    /// The neighbour distance β.
    pub beta: f64,
    /// The public lower bound ν on `‖u‖` (`--min-norm`).
    pub min_norm: f64,
    /// `r = β/ν`.
    pub r: f64,
    /// Input dimension.
    pub p: usize,
    /// Number of projections.
    pub k: usize,
    /// Failure probability of the bound.
    pub delta: f64,
    /// `P` (or its upper bound / approximation) for one projection.
    pub prob: f64,
    /// `μ = P·k`.
    pub mu: f64,
    /// Chernoff `η`. Infinite only when `μ = 0`, and then stored as `f64::MAX` so that the value
    /// survives JSON (which has no infinity).
    pub eta: f64,
    /// The bound `N₊ ∈ [1, k]`.
    pub n_plus: usize,
}

/// Method label for the Gaussian quadrature (eq. (5) evaluated at the corrected `r'`).
pub const METHOD_GAUSSIAN: &str =
    "gaussian-quadrature, eq. (5) at r' = r/(1 - r*min(1, 1/min-norm)), upper bound";
/// Method label for a Gaussian projection with `r·min(1, 1/ν) ≥ 1`, where no bound below 1 holds.
pub const METHOD_GAUSSIAN_TRIVIAL: &str =
    "gaussian, trivial bound P <= 1 (r*min(1, 1/min-norm) >= 1)";
/// Method label for the Rademacher approximation.
pub const METHOD_RADEMACHER: &str = "rademacher central-limit approximation, eq. (10)";
/// Method label for the rigorous Rademacher bound.
pub const METHOD_RADEMACHER_BE: &str =
    "rademacher Berry-Esseen bound: 2*Phi(r) - 1 + 2*0.56*min(1, 1/min-norm), upper bound";

/// The Berry–Esseen constant for sums of independent, non-identically distributed terms
/// (Shevtsova 2010: `C₀ ≤ 0.5600`).
pub const BERRY_ESSEEN_C0: f64 = 0.56;

/// A proven upper bound on `P = Pr(β > |wᵀu|)` for Rademacher `w` and rows in `[-1,1]^p` with
/// `‖u‖ ≥ ν`: `S = wᵀu` is a sum of independent terms `w_i·u_i` with variance `‖u‖²` and third
/// absolute moments `|u_i|³`, so by Berry–Esseen
/// `|Pr(S/‖u‖ ≤ x) − Φ(x)| ≤ C₀·Σ|u_i|³/‖u‖³ ≤ C₀·max_i|u_i|/‖u‖ ≤ C₀·min(1, 1/ν)` for every x,
/// and `Pr(|S| < β) ≤ 2Φ(r) − 1 + 2C₀·min(1, 1/ν)` with `r = β/ν` (capped at 1). Unlike eq. (10)
/// this holds for sparse rows too (where the central-limit value can be far too small).
pub fn p_rademacher_bound(r: f64, min_norm: f64) -> f64 {
    (p_rademacher(r) + 2.0 * BERRY_ESSEEN_C0 * (1.0 / min_norm).min(1.0)).min(1.0)
}

/// Everything above for a dense projection kind, with `r = β/ν` (`ν` = `min_norm`, a public lower
/// bound on `‖u‖`; since `F_{r,p}` and `2Φ(r)−1` grow with `r`, using `ν ≤ ‖u‖` keeps the bound).
/// Rows are assumed to lie in `[-1,1]^p` (DESIGN.md §2), so `max_i|u_i|/‖u‖ ≤ a = min(1, 1/ν)`.
///
/// * Gaussian, `r·a < 1`: `prob = F_{r',p}` with `r' = r/(1 − r·a)` ([`gaussian_r_bound`],
///   [`f_gaussian`]), method [`METHOD_GAUSSIAN`], `approximate = false`: a proven upper bound
///   (Anderson's inequality, module documentation). The paper's `F_{r,p}` itself is **not** used:
///   it is not a bound in general.
/// * Gaussian, `r·a ≥ 1`: `prob = 1`, `N₊ = k`, method [`METHOD_GAUSSIAN_TRIVIAL`],
///   `approximate = false`.
/// * Rademacher: `prob = 2Φ(r) − 1 + 2·0.56·min(1, 1/ν)` ([`p_rademacher_bound`], Berry–Esseen),
///   method [`METHOD_RADEMACHER_BE`], `approximate = false`; or, only with [`compute_with`]`(…,
///   clt = true)`, the paper's `2Φ(r) − 1` ([`p_rademacher`], [`METHOD_RADEMACHER`],
///   `approximate = true`: a central-limit approximation, not a bound).
///
/// # Errors
/// Uniform and sparse projections (`--projection`: no `N₊` is available; use the smooth-flipping
/// mechanism), and invalid `β` (`--beta`), `ν` (`--min-norm`, also when `β/ν` overflows), `δ`
/// (`--delta`), `k` (`--k`) or `p` (`--dim`), including NaN.
pub fn compute(
    kind: DenseKind,
    beta: f64,
    min_norm: f64,
    p: usize,
    k: usize,
    delta: f64,
) -> Result<NPlus> {
    compute_with(kind, beta, min_norm, p, k, delta, false)
}

/// [`compute`], choosing for Rademacher projections between the proven Berry–Esseen bound
/// ([`p_rademacher_bound`], `clt = false`, the default everywhere in dprp) and the paper's
/// central-limit approximation eq. (10) (`clt = true`: `approximate = true`, not a bound; only on
/// explicit request, `--clt-approximation`).
pub fn compute_with(
    kind: DenseKind,
    beta: f64,
    min_norm: f64,
    p: usize,
    k: usize,
    delta: f64,
    clt: bool,
) -> Result<NPlus> {
    if !(beta.is_finite() && beta > 0.0) {
        return Err(Error::param(
            "‹beta›",
            format!("β must be a positive finite number, got {beta}"),
        ));
    }
    if !(min_norm.is_finite() && min_norm > 0.0) {
        return Err(Error::param(
            "‹min_norm›",
            format!("the lower bound on ‖u‖ must be a positive finite number, got {min_norm}"),
        ));
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(Error::param(
            "‹delta›",
            format!("δ must lie strictly between 0 and 1, got {delta}"),
        ));
    }
    if k == 0 {
        return Err(Error::param(
            "‹k›",
            "the number of projections k must be at least 1",
        ));
    }
    if p == 0 {
        return Err(Error::param("‹dim›", "the dimension p must be at least 1"));
    }
    // May underflow to 0 for extreme inputs (then P = 0 and N₊ = 1); overflow is rejected.
    let r = beta / min_norm;
    if !r.is_finite() {
        return Err(Error::param(
            "‹min_norm›",
            format!("β/min-norm overflows (β = {beta}, min-norm = {min_norm})"),
        ));
    }
    let a = (1.0 / min_norm).min(1.0);
    let (method, approximate, prob) = match kind {
        DenseKind::Gaussian => match gaussian_r_bound(r, a) {
            Some(rp) => (METHOD_GAUSSIAN, false, f_gaussian(rp, p)?),
            None => (METHOD_GAUSSIAN_TRIVIAL, false, 1.0),
        },
        DenseKind::Rademacher if clt => (METHOD_RADEMACHER, true, p_rademacher(r)),
        DenseKind::Rademacher => (METHOD_RADEMACHER_BE, false, p_rademacher_bound(r, min_norm)),
        DenseKind::Uniform | DenseKind::Sparse { .. } => {
            return Err(Error::param(
                "‹projection›",
                "N₊ (DP-SignRP-RR) is only available for gaussian and rademacher projections; \
                 use the smooth-flipping mechanism (dp-signrp-rr-smooth) instead",
            ))
        }
    };
    let mu = prob * k as f64;
    let eta = chernoff_eta(mu, delta);
    Ok(NPlus {
        method: method.to_string(),
        approximate,
        beta,
        min_norm,
        r,
        p,
        k,
        delta,
        prob,
        mu,
        eta: if eta.is_finite() { eta } else { f64::MAX },
        n_plus: n_plus(k, prob, delta),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauss_legendre_rule_integrates_polynomials() {
        let (x, w) = gauss_legendre();
        let sum: f64 = w.iter().sum();
        assert!((sum - 2.0).abs() < 1e-14);
        // ∫ x^38 over [-1,1] = 2/39 (degree 2n−2 = 38 is integrated exactly).
        let m: f64 = x.iter().zip(w).map(|(x, w)| w * x.powi(38)).sum();
        assert!((m - 2.0 / 39.0).abs() < 1e-14, "{m}");
    }

    #[test]
    fn mu_zero() {
        assert_eq!(n_plus(512, 0.0, 1e-6), 1);
        assert_eq!(n_plus(512, -0.5, 1e-6), 1);
        assert_eq!(chernoff_eta(0.0, 1e-6), f64::INFINITY);
        // Tiny μ: finite, ⌈≈L⌉, and ≥ the μ = 0 value.
        let l = (1e6f64).ln();
        assert_eq!(n_plus(512, 1e-300, 1e-6), l.ceil() as usize);
        assert_eq!(n_plus(512, f64::MIN_POSITIVE, 1e-6), l.ceil() as usize);
        // compute() with r underflowing to 0.
        let np = compute_with(DenseKind::Rademacher, 1e-300, 1e300, 10, 64, 1e-6, true).unwrap();
        assert_eq!((np.prob, np.mu, np.n_plus), (0.0, 0.0, 1));
        assert_eq!(np.eta, f64::MAX);
        let json = serde_json::to_string(&np).unwrap();
        let back: NPlus = serde_json::from_str(&json).unwrap();
        assert_eq!(back, np);
        let np = compute(DenseKind::Gaussian, 1e-300, 1e300, 10, 64, 1e-6).unwrap();
        assert_eq!((np.prob, np.n_plus), (0.0, 1));
    }

    #[test]
    fn prob_one_and_k_one() {
        for k in [1, 2, 7, 512, 100_000] {
            assert_eq!(n_plus(k, 1.0, 1e-6), k);
            assert_eq!(n_plus(k, 2.0, 1e-6), k);
            assert_eq!(n_plus(k, 0.999, 1e-6), k);
        }
        for prob in [0.0, 1e-9, 0.01, 0.5, 1.0] {
            for delta in [1e-300, 1e-6, 0.5] {
                assert_eq!(n_plus(1, prob, delta), 1);
            }
        }
        assert_eq!(n_plus(0, 0.5, 1e-6), 1);
        let np = compute(DenseKind::Gaussian, 1.0, 1.0, 1000, 1, 1e-6).unwrap();
        assert_eq!(np.n_plus, 1);
    }

    #[test]
    fn degenerate_delta_and_nan() {
        assert_eq!(n_plus(100, 0.1, 0.0), 100);
        assert_eq!(n_plus(100, 0.1, -1.0), 100);
        assert_eq!(n_plus(100, 0.1, 1.0), 10);
        assert_eq!(n_plus(100, 0.1, 5.0), 10);
        assert_eq!(n_plus(100, f64::NAN, 1e-6), 100);
        assert_eq!(n_plus(100, 0.1, f64::NAN), 100);
        assert_eq!(n_plus(100, f64::INFINITY, 1e-6), 100);
        assert!(chernoff_eta(f64::NAN, 0.1).is_nan());
        assert_eq!(chernoff_eta(5.0, 1.0), 0.0);
        assert_eq!(chernoff_eta(5.0, 0.0), f64::INFINITY);
        assert_eq!(p_rademacher(0.0), 0.0);
        assert_eq!(p_rademacher(-1.0), 0.0);
        assert_eq!(p_rademacher(f64::INFINITY), 1.0);
        assert!(p_rademacher(f64::NAN).is_nan());
        assert_eq!(f_gaussian(0.0, 10).unwrap(), 0.0);
        assert_eq!(f_gaussian(f64::INFINITY, 10).unwrap(), 1.0);
        assert!(f_gaussian(f64::NAN, 10).is_err());
        assert!(f_gaussian(-0.1, 10).is_err());
        assert!(f_gaussian(0.1, 0).is_err());
    }

    fn param_name(e: Error) -> String {
        match e {
            Error::Param { name, .. } => crate::error::Front::Cli.render_name(&name),
            other => panic!("expected a parameter error, got {other}"),
        }
    }

    #[test]
    fn compute_rejects_invalid_input() {
        let g = DenseKind::Gaussian;
        let cases: Vec<(DenseKind, f64, f64, usize, usize, f64, &str)> = vec![
            (g, 0.0, 1.0, 10, 10, 1e-6, "--beta"),
            (g, -1.0, 1.0, 10, 10, 1e-6, "--beta"),
            (g, f64::NAN, 1.0, 10, 10, 1e-6, "--beta"),
            (g, f64::INFINITY, 1.0, 10, 10, 1e-6, "--beta"),
            (g, 1.0, 0.0, 10, 10, 1e-6, "--min-norm"),
            (g, 1.0, -2.0, 10, 10, 1e-6, "--min-norm"),
            (g, 1.0, f64::NAN, 10, 10, 1e-6, "--min-norm"),
            (g, 1.0, f64::INFINITY, 10, 10, 1e-6, "--min-norm"),
            (g, 1.0, 1.0, 10, 10, 0.0, "--delta"),
            (g, 1.0, 1.0, 10, 10, 1.0, "--delta"),
            (g, 1.0, 1.0, 10, 10, f64::NAN, "--delta"),
            (g, 1.0, 1.0, 10, 10, -0.5, "--delta"),
            (g, 1.0, 1.0, 10, 0, 1e-6, "--k"),
            (g, 1.0, 1.0, 0, 10, 1e-6, "--dim"),
            (DenseKind::Uniform, 1.0, 1.0, 10, 10, 1e-6, "--projection"),
            (
                DenseKind::Sparse { s: 3.0 },
                1.0,
                1.0,
                10,
                10,
                1e-6,
                "--projection",
            ),
        ];
        for (kind, beta, nu, p, k, delta, name) in cases {
            let e = compute(kind, beta, nu, p, k, delta).unwrap_err();
            let msg = e.to_string();
            assert_eq!(
                param_name(e),
                name,
                "{kind:?} {beta} {nu} {p} {k} {delta}: {msg}"
            );
        }
        let msg = compute(DenseKind::Uniform, 1.0, 1.0, 10, 10, 1e-6)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("gaussian") && msg.contains("rademacher"),
            "{msg}"
        );
        assert!(msg.contains("smooth"), "{msg}");
    }

    #[test]
    fn compute_fields() {
        // β = 1, ν = 10: r = 0.1, a = 0.1, r' = 0.1/0.99.
        let np = compute(DenseKind::Gaussian, 1.0, 10.0, 784, 512, 1e-6).unwrap();
        assert_eq!(np.method, METHOD_GAUSSIAN);
        assert!(!np.approximate);
        assert!((np.r - 0.1).abs() < 1e-15);
        let want = f_gaussian(0.1 / 0.99, 784).unwrap();
        assert!((np.prob - want).abs() < 1e-14, "{} vs {want}", np.prob);
        assert!((np.prob - 0.26618).abs() < 5e-6, "{}", np.prob);
        assert!((np.mu - np.prob * 512.0).abs() < 1e-12);
        assert_eq!(np.n_plus, n_plus(512, np.prob, 1e-6));
        assert!(np.n_plus >= 1 && np.n_plus <= 512);
        // ν < 1: a = 1, r' = r/(1 − r).
        let np = compute(DenseKind::Gaussian, 0.1, 0.5, 100, 64, 1e-6).unwrap();
        assert!((np.prob - f_gaussian(0.2 / 0.8, 100).unwrap()).abs() < 1e-14);

        let np = compute_with(DenseKind::Rademacher, 0.3, 1.0, 784, 512, 1e-6, true).unwrap();
        assert_eq!(np.method, METHOD_RADEMACHER);
        assert!(np.approximate);
        assert!((np.prob - 0.23582).abs() < 5e-6);
        let np = compute(DenseKind::Rademacher, 0.3, 1.0, 784, 512, 1e-6).unwrap();
        assert_eq!(np.method, METHOD_RADEMACHER_BE);
        assert!(!np.approximate);
        assert_eq!(np.prob, 1.0); // 0.2358 + 1.12, capped
        let np = compute(DenseKind::Rademacher, 1.0, 10.0, 784, 512, 1e-6).unwrap();
        assert!((np.prob - (0.079_656 + 0.112)).abs() < 1e-5, "{}", np.prob);

        // r·a ≥ 1 with a Gaussian projection: the trivial bound (β = ν = 1, and r > 1).
        for (beta, nu) in [(1.0, 1.0), (2.0, 1.0), (0.6, 0.5), (200.0, 10.0)] {
            let np = compute(DenseKind::Gaussian, beta, nu, 100, 64, 1e-6).unwrap();
            assert_eq!(np.method, METHOD_GAUSSIAN_TRIVIAL);
            assert_eq!((np.prob, np.n_plus), (1.0, 64));
        }
        // r > 1 but r·a < 1 (β = 2, ν = 1.5): r' = (4/3)/(1 − 8/9) = 12.
        let np = compute(DenseKind::Gaussian, 2.0, 1.5, 10, 64, 1e-6).unwrap();
        assert_eq!(np.method, METHOD_GAUSSIAN);
        assert!((np.prob - f_gaussian(12.0, 10).unwrap()).abs() < 1e-12);
        // Large r with a Rademacher projection; r overflowing to +∞ is an error.
        let np = compute(DenseKind::Rademacher, 1e3, 1e-3, 100, 64, 1e-6).unwrap();
        assert_eq!((np.prob, np.n_plus), (1.0, 64));
        let json = serde_json::to_string(&np).unwrap();
        assert_eq!(serde_json::from_str::<NPlus>(&json).unwrap(), np);
        let e = compute(DenseKind::Rademacher, 1e300, 1e-300, 100, 64, 1e-6).unwrap_err();
        assert_eq!(param_name(e), "--min-norm");
    }

    #[test]
    fn r_bound() {
        assert_eq!(gaussian_r_bound(0.1, 0.0), Some(0.1));
        assert!((gaussian_r_bound(0.1, 0.1).unwrap() - 0.1 / 0.99).abs() < 1e-15);
        assert_eq!(gaussian_r_bound(1.0, 1.0), None);
        assert_eq!(gaussian_r_bound(0.5, 3.0), None);
        assert_eq!(gaussian_r_bound(f64::NAN, 0.1), None);
        assert_eq!(gaussian_r_bound(0.1, f64::NAN), None);
        assert_eq!(gaussian_r_bound(-0.1, 0.1), None);
    }

    /// The exact counterexample to Lemma 4.2's claim (module documentation): p = 2, u ∝ (1, 1).
    #[test]
    fn eq5_is_not_a_bound_for_p2() {
        let exact = |r: f64| {
            1.0 - std::f64::consts::FRAC_2_PI * (std::f64::consts::SQRT_2 / r - 1.0).atan()
        };
        assert!((exact(1.0) - 0.75).abs() < 1e-15);
        assert!((f_gaussian(1.0, 2).unwrap() - 2.0 / 3.0).abs() < 1e-13);
        for r in [0.8, 0.9, 1.0] {
            assert!(exact(r) > f_gaussian(r, 2).unwrap(), "r = {r}");
        }
        for r in [0.1, 0.3, 0.5, 0.7] {
            assert!(exact(r) < f_gaussian(r, 2).unwrap(), "r = {r}");
        }
        // The corrected bound covers it: a = max|û_i| = 1/√2.
        for r in [0.1, 0.3, 0.5, 0.7, 0.9, 1.0, 1.4] {
            let rp = gaussian_r_bound(r, std::f64::consts::FRAC_1_SQRT_2).unwrap();
            assert!(exact(r) <= f_gaussian(rp, 2).unwrap(), "r = {r}");
        }
    }
}
