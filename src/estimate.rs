//! Inner-product estimators and their variances (DESIGN.md §6; Li & Li, Theorems C.1–C.3).
//!
//! For released real sketches `x̃ = x + n₁`, `ỹ = y + n₂` (noise `N(0,σ²)` per coordinate), the
//! estimator of `ρ = ⟨u,v⟩` is `⟨x̃,ỹ⟩`, unbiased because the projections satisfy
//! `E⟨x,y⟩ = ⟨u,v⟩` and the noises are independent and centred. Its variance is the projection
//! variance plus the noise terms:
//!
//! * raw (C.1): `σ²(‖u‖²+‖v‖²) + pσ⁴`
//! * dense RP, entry fourth moment `s` (C.2):
//!   `σ²(‖u‖²+‖v‖²) + kσ⁴ + (1/k)[‖u‖²‖v‖² + ρ² + (s−3)Σu_i²v_i²]`
//! * OPORP (C.3): `σ²(‖u‖²+‖v‖²) + kσ⁴ + (1/k)[‖u‖²‖v‖² + ρ² − 2Σu_i²v_i²]·(p−k)/(p−1)`
//!   (exact when k divides p; bins then all have p/k coordinates)
//! * a raw (non-privatised) query `u` against a released `v`: the noise terms become `σ²‖u‖²`.

use serde::{Deserialize, Serialize};

/// The projection family, for the variance formula.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Family {
    /// No projection (raw coordinates), dimension p.
    Raw {
        /// Dimension.
        p: usize,
    },
    /// Dense i.i.d. projection with entry fourth moment `s = E[w⁴]`.
    Dense {
        /// `E[w⁴]`.
        fourth_moment: f64,
    },
    /// OPORP over p coordinates.
    Oporp {
        /// Input dimension.
        p: usize,
    },
}

/// Second-order statistics of a pair of original rows, which the variance depends on.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PairStats {
    /// `‖u‖²`.
    pub norm_u_sq: f64,
    /// `‖v‖²`.
    pub norm_v_sq: f64,
    /// `ρ = ⟨u,v⟩`.
    pub ip: f64,
    /// `Σ u_i² v_i²`.
    pub sum_u2v2: f64,
}

impl PairStats {
    /// Compute from two rows.
    pub fn of(u: &[f32], v: &[f32]) -> PairStats {
        let mut s = PairStats::default();
        for (&a, &b) in u.iter().zip(v) {
            let (a, b) = (a as f64, b as f64);
            s.norm_u_sq += a * a;
            s.norm_v_sq += b * b;
            s.ip += a * b;
            s.sum_u2v2 += a * a * b * b;
        }
        s
    }
}

/// Which sides of a pair were privatised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryMode {
    /// Both `u` and `v` are released sketches (independent noise).
    BothPrivate,
    /// `u` is a raw query projected with the public map; only `v` carries noise.
    RawQuery,
}

/// The estimator attached to a mechanism.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Estimator {
    /// Inner product of real sketches with Gaussian noise.
    Gaussian {
        /// Projection family.
        family: Family,
        /// Output dimension.
        k: usize,
        /// Noise σ per coordinate.
        sigma: f64,
    },
    /// Agreement of packed sign sketches; with a uniform flip probability `1/(1+e^{ε'})` the
    /// agreement rate is debiased into an angle and a cosine (Theorem 4.5).
    Sign {
        /// Number of signs.
        k: usize,
        /// ε' of a uniform randomised response (None: data-dependent flips, agreements only).
        eps_prime: Option<f64>,
    },
}

impl Estimator {
    /// The estimate of `⟨u,v⟩` from two sketch rows.
    pub fn inner_product(&self, x: &[f32], y: &[f32]) -> f64 {
        x.iter().zip(y).map(|(&a, &b)| a as f64 * b as f64).sum()
    }

    /// Variance of [`inner_product`](Estimator::inner_product) for a pair with statistics `s`
    /// (real sketches; NaN for sign sketches, whose estimator is [`sign_cosine`]).
    pub fn variance(&self, s: &PairStats, mode: QueryMode) -> f64 {
        match *self {
            Estimator::Gaussian { family, k, sigma } => ip_variance(family, k, sigma, s, mode),
            // sign sketches estimate cosines: see `sign_cosine`
            Estimator::Sign { .. } => f64::NAN,
        }
    }
}

/// The variance formulas of DESIGN.md §6 (Theorems C.1–C.3).
pub fn ip_variance(family: Family, k: usize, sigma: f64, s: &PairStats, mode: QueryMode) -> f64 {
    let s2 = sigma * sigma;
    let (noise_lin, dim_for_s4) = match mode {
        QueryMode::BothPrivate => (s2 * (s.norm_u_sq + s.norm_v_sq), 1.0),
        QueryMode::RawQuery => (s2 * s.norm_u_sq, 0.0),
    };
    let kf = k as f64;
    match family {
        Family::Raw { p } => noise_lin + dim_for_s4 * p as f64 * s2 * s2,
        Family::Dense { fourth_moment } => {
            noise_lin
                + dim_for_s4 * kf * s2 * s2
                + (s.norm_u_sq * s.norm_v_sq + s.ip * s.ip + (fourth_moment - 3.0) * s.sum_u2v2)
                    / kf
        }
        Family::Oporp { p } => {
            let pf = p as f64;
            let shrink = if p > 1 { (pf - kf) / (pf - 1.0) } else { 0.0 };
            noise_lin
                + dim_for_s4 * kf * s2 * s2
                + (s.norm_u_sq * s.norm_v_sq + s.ip * s.ip - 2.0 * s.sum_u2v2) / kf * shrink
        }
    }
}

/// Number of agreeing signs between two packed sign rows of `k` bits: `k − popcount(a XOR b)`.
pub fn agreements(a: &[u64], b: &[u64], k: usize) -> u32 {
    let full = k / 64;
    let mut diff: u32 = a[..full]
        .iter()
        .zip(&b[..full])
        .map(|(x, y)| (x ^ y).count_ones())
        .sum();
    if !k.is_multiple_of(64) {
        let mask = (1u64 << (k % 64)) - 1;
        diff += ((a[full] ^ b[full]) & mask).count_ones();
    }
    k as u32 - diff
}

/// The confidence level of the intervals reported by [`sign_cosine`] (and printed by `dprp
/// estimate` and `dprp demo`).
pub const INTERVAL_LEVEL: f64 = 0.95;

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
/// flipped with probability `1/(1+e)`, `e = e^{ε'}`, give `c = 2e/(e+1)²`, `s = ((e−1)/(e+1))²`; one
/// side flipped (raw query) gives `c = 1/(e+1)`, `s = (e−1)/(e+1)`; no flips give `(0, 1)`.
fn flip_map(eps_prime: Option<f64>, mode: QueryMode) -> (f64, f64) {
    match eps_prime {
        None => (0.0, 1.0),
        Some(e1) => {
            let e = e1.exp();
            match mode {
                QueryMode::BothPrivate => (
                    2.0 * e / ((e + 1.0) * (e + 1.0)),
                    ((e - 1.0) / (e + 1.0)).powi(2),
                ),
                QueryMode::RawQuery => (1.0 / (e + 1.0), (e - 1.0) / (e + 1.0)),
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

/// An inner-product estimate between two sketch rows with its plug-in standard error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IpEstimate {
    /// `⟨x̃, ỹ⟩`.
    pub inner_product: f64,
    /// Plug-in standard error of the inner product.
    pub se: f64,
    /// Estimated `‖u‖²`: exact for a raw query, the unbiased `‖x̃‖² − kσ²` (`pσ²` without a
    /// projection) for a released row — which is negative when the noise outweighs the row (the
    /// standard error then plugs in 0).
    pub norm_u_sq: f64,
    /// Estimated `‖v‖²` (`‖ỹ‖² − kσ²`; may be ≤ 0 likewise).
    pub norm_v_sq: f64,
    /// The noise's share of a released row's squared norm, `kσ²` (`pσ²` without a projection).
    pub noise_norm_sq: f64,
    /// `⟨x̃,ỹ⟩ / (‖u‖‖v‖)` with the estimated norms; `None` when a norm estimate is not positive
    /// (the cosine is then undefined for this pair at this noise level; see
    /// [`norm_u_sq`](IpEstimate::norm_u_sq) and [`norm_v_sq`](IpEstimate::norm_v_sq) for which).
    pub cosine: Option<f64>,
    /// Approximate standard error of the cosine (`se / (‖u‖‖v‖)`, ignoring the norms' error);
    /// `None` with the cosine.
    pub se_cosine: Option<f64>,
    /// Which formula gave the standard error.
    pub formula: &'static str,
}

/// Estimate `⟨u, v⟩` from a sketch row `x` of `u` and a released row `y` of `v`, with the
/// DESIGN.md §6 variance evaluated at plug-in values (Theorems C.1–C.3):
///
/// * norms: a released row's `‖x̃‖² − kσ²` (unbiased; clamped at 0 here), or for a raw query the exact
///   `‖u‖²` the querier passes in `raw_query_norm_sq`;
/// * `ρ` by the estimate itself;
/// * `Σu_i²v_i²`, which is unknown, at its worst case: 0 where its coefficient is negative
///   (Rademacher, uniform, OPORP), `min(‖u‖², ‖v‖²)` where it is positive (`sparse:s`, s > 3; rows
///   lie in `[-1,1]^p`), so the standard error errs on the large side.
///
/// Returns `None` for estimators other than the Gaussian one.
pub fn estimate_ip(
    est: &Estimator,
    x: &[f32],
    y: &[f32],
    raw_query_norm_sq: Option<f64>,
) -> Option<IpEstimate> {
    estimate_ip_known(est, x, y, raw_query_norm_sq, None)
}

/// The squared norm every released row has when the release's recorded `scaling` fixes it:
/// 1 after `--normalize l2` ([`crate::data::Scaling::unit_norm`]); `None` otherwise.
pub fn known_row_norm_sq(scaling: &crate::data::Scaling) -> Option<f64> {
    scaling.unit_norm().then_some(1.0)
}

/// [`estimate_ip`] when every released row's squared norm is known exactly, `row_norm_sq` (`y`'s,
/// and `x`'s when it is a released row rather than a raw query): a
/// release whose recorded scaling made every row unit-norm ([`crate::data::Scaling::unit_norm`],
/// `--normalize l2`) has `‖v‖² = 1` for every row, public knowledge that the noisy
/// `‖ỹ‖² − kσ²` only approximates. The cosine then divides by the known norm — unbiased, and
/// stable where the norm estimate is near zero (dividing by it made the cosine of a row whose
/// noise nearly cancelled its signal arbitrarily large) — and the standard error plugs it in.
/// (An all-zero input row, which normalising leaves zero, is then taken as unit-norm: its
/// estimate is noise around 0, as its inner product is.)
pub fn estimate_ip_known(
    est: &Estimator,
    x: &[f32],
    y: &[f32],
    raw_query_norm_sq: Option<f64>,
    row_norm_sq: Option<f64>,
) -> Option<IpEstimate> {
    let Estimator::Gaussian { family, k, sigma } = *est else {
        return None;
    };
    let sq = |v: &[f32]| v.iter().map(|&a| a as f64 * a as f64).sum::<f64>();
    let noise = match family {
        Family::Raw { p } => p as f64 * sigma * sigma,
        _ => k as f64 * sigma * sigma,
    };
    let ip = est.inner_product(x, y);
    let (nu_est, mode) = match raw_query_norm_sq {
        Some(n) => (n, QueryMode::RawQuery),
        None => (
            row_norm_sq.unwrap_or_else(|| sq(x) - noise),
            QueryMode::BothPrivate,
        ),
    };
    let nv_est = row_norm_sq.unwrap_or_else(|| sq(y) - noise);
    let (nu, nv) = (nu_est.max(0.0), nv_est.max(0.0));
    let coef = match family {
        Family::Raw { .. } => 0.0,
        Family::Dense { fourth_moment } => fourth_moment - 3.0,
        Family::Oporp { .. } => -2.0,
    };
    let stats = PairStats {
        norm_u_sq: nu,
        norm_v_sq: nv,
        ip,
        sum_u2v2: if coef > 0.0 { nu.min(nv) } else { 0.0 },
    };
    let se = ip_variance(family, k, sigma, &stats, mode).sqrt();
    let denom = (nu * nv).sqrt();
    let cosine_defined = nu_est > 0.0 && nv_est > 0.0 && denom > 0.0;
    let formula = match family {
        Family::Raw { .. } => "Theorem C.1 (raw data + Gaussian noise)",
        Family::Dense { .. } => "Theorem C.2 (dense random projection + Gaussian noise)",
        Family::Oporp { .. } => "Theorem C.3 (OPORP + Gaussian noise)",
    };
    Some(IpEstimate {
        inner_product: ip,
        se,
        norm_u_sq: nu_est,
        norm_v_sq: nv_est,
        noise_norm_sq: noise,
        cosine: cosine_defined.then(|| ip / denom),
        se_cosine: cosine_defined.then(|| se / denom),
        formula,
    })
}
