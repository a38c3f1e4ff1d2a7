//! The sign estimator (Theorem 4.5): agreements of packed sign sketches debiased into an angle
//! and a cosine, with the exact Clopper–Pearson interval of the agreement count.

use super::{QueryMode, INTERVAL_LEVEL};
use crate::privacy::rr::rr_flip_probability;

/// A cosine estimated from sign agreements, with standard errors (Theorem 4.5) and a
/// [`INTERVAL_LEVEL`] confidence interval that holds its level at small `k`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SignEstimate {
    /// Fraction of agreeing signs, `P̂`.
    pub agreement: f64,
    /// Debiased collision probability of the unperturbed signs, `P̂_SRP` (clamped to \[0,1\]).
    pub p_srp: f64,
    /// Estimated angle `θ̂ = π(1 − P̂_SRP)`.
    pub theta: f64,
    /// Standard error of `θ̂`.
    pub se_theta: f64,
    /// `cos θ̂`.
    pub cosine: f64,
    /// Standard error of `cos θ̂` (delta method: `|sin θ̂|·se(θ̂)`). A normal interval
    /// `cos θ̂ ± 1.96·se` under-covers badly at small `k` (it collapses to a point when all signs
    /// agree); use [`cosine_lo`](SignEstimate::cosine_lo)..[`cosine_hi`](SignEstimate::cosine_hi).
    pub se_cosine: f64,
    /// Lower end of the angle interval, `π(1 − P_SRP(P_hi))`.
    pub theta_lo: f64,
    /// Upper end of the angle interval, `π(1 − P_SRP(P_lo))`.
    pub theta_hi: f64,
    /// Lower end of the cosine interval, `cos θ_hi`.
    pub cosine_lo: f64,
    /// Upper end of the cosine interval, `cos θ_lo`.
    pub cosine_hi: f64,
}

/// The agreement probability's affine map `P = c + s·P_SRP` (Theorem 4.5) as `(c, s)`: both sides
/// flipped with probability `q = 1/(1+e^{ε'})` give `c = 2q(1−q)` (`= 2e/(e+1)²`, `e = e^{ε'}`) and
/// `s = (1−2q)²` (`= ((e−1)/(e+1))²`); one side flipped (raw query) gives `c = q`, `s = 1−2q`; no
/// flips give `(0, 1)`. `q` comes from [`rr_flip_probability`], which never forms `e^{ε'}`: the
/// map stays finite for every ε' (at ε' = 10³⁰⁸ it is `(0, 1)`; `e^{ε'}` overflowed to ∞ there and
/// `(e−1)/(e+1)` was NaN).
fn flip_map(eps_prime: Option<f64>, mode: QueryMode) -> (f64, f64) {
    match eps_prime {
        None => (0.0, 1.0),
        Some(e1) => {
            let q = rr_flip_probability(e1);
            match mode {
                QueryMode::BothPrivate => (2.0 * q * (1.0 - q), (1.0 - 2.0 * q).powi(2)),
                QueryMode::RawQuery => (q, 1.0 - 2.0 * q),
            }
        }
    }
}

/// The two-sided Clopper–Pearson interval at `level` for a binomial probability from `successes`
/// out of `trials`: `lo` solves `P(X ≥ x | lo) = α/2` (0 when `x = 0`), `hi` solves
/// `P(X ≤ x | hi) = α/2` (1 when `x = n`), `α = 1 − level`. It inverts two exact one-sided tests,
/// so its coverage is at least `level` for every true probability and every `n` — unlike the
/// normal (Wald) interval, or Wilson's, whose coverage dips below the level at small `n`.
///
/// `level` is in (0, 1). The binomial tails are summed exactly in log space (`O(n)` per
/// evaluation) and each end is found by bisection to 1e-12 (40 halvings); `trials = 0` gives
/// `(0, 1)`.
pub fn clopper_pearson(successes: u32, trials: usize, level: f64) -> (f64, f64) {
    let n = trials;
    let x = (successes as usize).min(n);
    if n == 0 {
        return (0.0, 1.0);
    }
    let half_alpha = (1.0 - level) / 2.0;
    // ln C(n, j) for j = 0..=n
    let mut ln_choose = Vec::with_capacity(n + 1);
    ln_choose.push(0.0f64);
    for j in 1..=n {
        let prev = ln_choose[j - 1];
        ln_choose.push(prev + ((n - j + 1) as f64).ln() - (j as f64).ln());
    }
    // P(X ∈ range | p), by log-sum-exp over the pmf
    let tail = |range: std::ops::RangeInclusive<usize>, p: f64| -> f64 {
        let (lp, lq) = (p.ln(), (-p).ln_1p());
        let terms = range.map(|j| ln_choose[j] + j as f64 * lp + (n - j) as f64 * lq);
        let m = terms.clone().fold(f64::NEG_INFINITY, f64::max);
        if m == f64::NEG_INFINITY {
            return 0.0;
        }
        m.exp() * terms.map(|t| (t - m).exp()).sum::<f64>()
    };
    // bisection for the p where an increasing function of p crosses `target`
    let solve = |f: &dyn Fn(f64) -> f64, target: f64| -> f64 {
        let (mut a, mut b) = (0.0f64, 1.0f64);
        while b - a > 1e-12 {
            let mid = 0.5 * (a + b);
            if f(mid) < target {
                a = mid;
            } else {
                b = mid;
            }
        }
        0.5 * (a + b)
    };
    // P(X ≥ x | p) increases with p; P(X ≤ x | p) decreases, so solve for 1 − it
    let lo = if x == 0 {
        0.0
    } else {
        solve(&|p| tail(x..=n, p), half_alpha)
    };
    let hi = if x == n {
        1.0
    } else {
        solve(&|p| 1.0 - tail(0..=x, p), 1.0 - half_alpha)
    };
    (lo, hi)
}

/// Debias an agreement count between two sign sketches of `k` signs whose signs were flipped
/// independently with probability `1/(1+e^{ε'})` — on both sides ([`QueryMode::BothPrivate`],
/// Theorem 4.5) or on the released side only ([`QueryMode::RawQuery`]). `eps_prime = None` means no
/// flips (a non-private sketch). Angles follow sign random projections: `P_SRP = 1 − θ/π` (exact
/// for Gaussian projections, approximate for Rademacher and OPORP).
///
/// Both private, with `e = e^{ε'}`: `P = (1−θ/π)(e−1)²/(e+1)² + 2e/(e+1)²`, so
/// `P̂_SRP = (P̂(e+1)² − 2e)/(e−1)²` and `Var(θ̂) = π²(e+1)⁴/(e−1)⁴·P(1−P)/k`.
/// Raw query: `P = (1−θ/π)(e−1)/(e+1) + 1/(e+1)`, `P̂_SRP = (P̂(e+1) − 1)/(e−1)`,
/// `Var(θ̂) = π²(e+1)²/(e−1)²·P(1−P)/k`.
///
/// The interval: for a fixed pair and a fresh dense random projection, the `k` sign agreements
/// are i.i.d. Bernoulli(P) (independent projection columns, independent flips), so the count is
/// Binomial(k, P) (OPORP's bins partition the coordinates, so there it is approximately so). The [`clopper_pearson`] interval `[P_lo, P_hi]` for `P` at [`INTERVAL_LEVEL`]
/// is mapped through the increasing `P → P_SRP = (P − c)/s` (clamped to \[0,1\]) and the decreasing
/// `P_SRP → θ = π(1 − P_SRP)`, then the decreasing `θ → cos θ` on [0, π]; monotone maps carry the
/// interval's coverage over unchanged (clamping only widens it). Its level is "over releases with
/// fresh projections": for one fixed projection the agreements of a given pair are not binomial.
pub fn sign_cosine(agree: u32, k: usize, eps_prime: Option<f64>, mode: QueryMode) -> SignEstimate {
    let kf = k as f64;
    let p_hat = agree as f64 / kf;
    let (c, slope) = flip_map(eps_prime, mode);
    let debias = |p: f64| ((p - c) / slope).clamp(0.0, 1.0);
    let pi = std::f64::consts::PI;
    let p_srp = debias(p_hat);
    let theta = pi * (1.0 - p_srp);
    // P at the estimate, for the plug-in standard error
    let p_model = p_srp * slope + c;
    let se_theta = pi / slope * (p_model * (1.0 - p_model) / kf).sqrt();
    let (p_lo, p_hi) = clopper_pearson(agree, k, INTERVAL_LEVEL);
    let (theta_lo, theta_hi) = (pi * (1.0 - debias(p_hi)), pi * (1.0 - debias(p_lo)));
    SignEstimate {
        agreement: p_hat,
        p_srp,
        theta,
        se_theta,
        cosine: theta.cos(),
        se_cosine: theta.sin().abs() * se_theta,
        theta_lo,
        theta_hi,
        cosine_lo: theta_hi.cos(),
        cosine_hi: theta_lo.cos(),
    }
}
