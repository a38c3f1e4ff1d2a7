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

pub mod interval;
mod sign;

pub use sign::{clopper_pearson, sign_cosine, SignEstimate};

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

/// The confidence level of every interval dprp reports: the sign cosine's Clopper–Pearson
/// interval ([`sign_cosine`]) and the real sketches' score intervals ([`interval`]), printed by
/// `dprp estimate`, `Release.estimate` and `dprp demo`. Its meaning: over independent releases
/// (a fresh public projection and fresh noise each) the interval of a pair fixed in advance covers
/// the truth with about this probability — not conditionally on one public projection, and not
/// for pairs chosen because their estimates are large (docs/error-bars.md).
pub const INTERVAL_LEVEL: f64 = 0.95;

/// How a real sketch's intervals are computed (printed with them).
pub const REAL_INTERVAL_METHOD: &str =
    "score intervals: the inner product's with the variance of Theorems C.1–C.3 evaluated at the \
     hypothesised value (norms plugged in), the cosine's with the unknown norms profiled out; \
     level over releases with fresh projections and noise";

/// An inner-product estimate between two sketch rows, with its standard error and its
/// [`INTERVAL_LEVEL`] intervals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IpEstimate {
    /// `⟨x̃, ỹ⟩`.
    pub inner_product: f64,
    /// Plug-in standard error of the inner product (DESIGN.md §6 at the estimates).
    pub se: f64,
    /// The inner product's score interval ([`interval::ip_interval`]).
    pub ip_lo: f64,
    /// Its upper end.
    pub ip_hi: f64,
    /// Estimated `‖u‖²`: exact for a raw query, the unbiased `‖x̃‖² − kσ²` (`pσ²` without a
    /// projection) for a released row — which is negative when the noise outweighs the row.
    pub norm_u_sq: f64,
    /// Estimated `‖v‖²` (`‖ỹ‖² − kσ²`; may be ≤ 0 likewise).
    pub norm_v_sq: f64,
    /// The noise's share of a released row's squared norm, `kσ²` (`pσ²` without a projection).
    pub noise_norm_sq: f64,
    /// `⟨x̃,ỹ⟩ / (‖u‖‖v‖)` with the estimated (or known) norms; `None` when a norm is not positive
    /// (a zero query, or a released row whose norm estimate the noise pushed to or below 0: the
    /// cosine is then undefined; see [`norm_u_sq`](IpEstimate::norm_u_sq) and
    /// [`norm_v_sq`](IpEstimate::norm_v_sq) for which).
    pub cosine: Option<f64>,
    /// Delta-method standard error of the cosine (the norms' error and their covariance with the
    /// inner product included); `None` with the cosine.
    pub se_cosine: Option<f64>,
    /// The cosine's interval within [−1, 1] ([`interval::cosine_interval`], the norms profiled
    /// out; with known norms the inner product's divided by them). Given also where the point
    /// estimate is undefined because a norm estimate is not positive (then often [−1, 1]);
    /// `None` for a zero query, and from [`estimate_ip_point`].
    pub cosine_lo: Option<f64>,
    /// Its upper end.
    pub cosine_hi: Option<f64>,
    /// Which formula gave the standard error.
    pub formula: &'static str,
}

/// Estimate `⟨u, v⟩` from a sketch row `x` of `u` and a released row `y` of `v`, with the
/// DESIGN.md §6 variance evaluated at plug-in values (Theorems C.1–C.3) and the score intervals of
/// [`interval`]:
///
/// * norms: a released row's unbiased `‖x̃‖² − kσ²`, or for a raw query the exact `‖u‖²` the
///   querier passes in `raw_query_norm_sq`;
/// * `ρ` by the estimate itself (the standard error) or by the hypothesis (the interval);
/// * `Σu_i²v_i²`, which is unknown, at its worst case: 0 where its coefficient is negative
///   (Rademacher, uniform, OPORP), `min(‖u‖², ‖v‖²)` where it is positive (`sparse:s`, s > 3; rows
///   lie in `[-1,1]^p`), so the standard error errs on the large side.
///
/// `x` and `y` must be different rows (or a raw query and a row): a row with itself shares its
/// noise, and its squared norm is [`estimate_sq_norm`]'s. Returns `None` for estimators other
/// than the Gaussian one.
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

fn formula(family: Family) -> &'static str {
    match family {
        Family::Raw { .. } => "Theorem C.1 (raw data + Gaussian noise)",
        Family::Dense { .. } => "Theorem C.2 (dense random projection + Gaussian noise)",
        Family::Oporp { .. } => "Theorem C.3 (OPORP + Gaussian noise)",
    }
}

/// The noise's share of a released row's squared norm: `kσ²`, or `pσ²` without a projection.
fn noise_energy(family: Family, k: usize, sigma: f64) -> f64 {
    match family {
        Family::Raw { p } => p as f64 * sigma * sigma,
        _ => k as f64 * sigma * sigma,
    }
}

fn sq(v: &[f32]) -> f64 {
    v.iter().map(|&a| a as f64 * a as f64).sum::<f64>()
}

/// [`estimate_ip`] when every released row's squared norm is known exactly, `row_norm_sq` (`y`'s,
/// and `x`'s when it is a released row rather than a raw query): a
/// release whose recorded scaling made every row unit-norm ([`crate::data::Scaling::unit_norm`],
/// `--normalize l2`) has `‖v‖² = 1` for every row, public knowledge that the noisy
/// `‖ỹ‖² − kσ²` only approximates. The cosine then divides by the known norm — unbiased, and
/// stable where the norm estimate is near zero (dividing by it made the cosine of a row whose
/// noise nearly cancelled its signal arbitrarily large) — and its interval is the inner
/// product's divided by the known norms. (An all-zero input row, which normalising leaves zero,
/// is then taken as unit-norm: its estimate is noise around 0, as its inner product is.)
pub fn estimate_ip_known(
    est: &Estimator,
    x: &[f32],
    y: &[f32],
    raw_query_norm_sq: Option<f64>,
    row_norm_sq: Option<f64>,
) -> Option<IpEstimate> {
    estimate_ip_with(est, x, y, raw_query_norm_sq, row_norm_sq, true)
}

/// [`estimate_ip_known`] without the cosine's interval (its profile search costs about a
/// millisecond): the estimates and standard errors re-ranking needs for many candidates.
pub fn estimate_ip_point(
    est: &Estimator,
    x: &[f32],
    y: &[f32],
    raw_query_norm_sq: Option<f64>,
    row_norm_sq: Option<f64>,
) -> Option<IpEstimate> {
    estimate_ip_with(est, x, y, raw_query_norm_sq, row_norm_sq, false)
}

fn estimate_ip_with(
    est: &Estimator,
    x: &[f32],
    y: &[f32],
    raw_query_norm_sq: Option<f64>,
    row_norm_sq: Option<f64>,
    intervals: bool,
) -> Option<IpEstimate> {
    let Estimator::Gaussian { family, k, sigma } = *est else {
        return None;
    };
    let noise = noise_energy(family, k, sigma);
    let ip = est.inner_product(x, y);
    let (nu, both) = match raw_query_norm_sq {
        Some(n) => (n, false),
        None => (row_norm_sq.unwrap_or_else(|| sq(x) - noise), true),
    };
    let nv = row_norm_sq.unwrap_or_else(|| sq(y) - noise);
    let model = interval::Model::new(family, k, sigma, both);
    let z = interval::z_level();
    let se = model.ip_variance(ip, nu, nv).sqrt();
    let (ip_lo, ip_hi) = interval::ip_interval(&model, ip, nu, nv, z);
    let d = (nu * nv).sqrt();
    let defined = nu > 0.0 && nv > 0.0 && d > 0.0;
    let cos = defined.then(|| match row_norm_sq {
        Some(_) => (ip / d, se / d),
        None => (ip / d, interval::cosine_se(&model, ip, nu, nv)),
    });
    let (cosine_lo, cosine_hi) = match row_norm_sq {
        // known norms (and a raw query's exact one): the inner product's interval, rescaled
        Some(_) if defined => {
            let c = |v: f64| (v / d).clamp(-1.0, 1.0);
            (Some(c(ip_lo)), Some(c(ip_hi)))
        }
        // a zero raw query: no cosine, and nothing to bound
        Some(_) => (None, None),
        None if !both && nu <= 0.0 => (None, None),
        None if intervals => {
            let data = interval::CosineData { rho: ip, nu, nv };
            let (lo, hi) = interval::cosine_interval(&model, &data, z);
            (Some(lo), Some(hi))
        }
        None => (None, None),
    };
    Some(IpEstimate {
        inner_product: ip,
        se,
        ip_lo,
        ip_hi,
        norm_u_sq: nu,
        norm_v_sq: nv,
        noise_norm_sq: noise,
        cosine: cos.map(|c| c.0),
        se_cosine: cos.map(|c| c.1),
        cosine_lo,
        cosine_hi,
        formula: formula(family),
    })
}

/// A released row's squared norm `‖u‖²`, estimated from the row alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NormEstimate {
    /// `‖x̃‖² − kσ²` (unbiased; may be ≤ 0 when the noise outweighs the row), or the known value.
    pub sq_norm: f64,
    /// Its standard error (0 when known).
    pub se: f64,
    /// Its score interval ([`interval::sq_norm_interval`]), within `[0, ∞)`.
    pub lo: f64,
    /// Its upper end.
    pub hi: f64,
    /// `kσ²` (`pσ²` without a projection), the noise energy removed.
    pub noise_norm_sq: f64,
    /// The release's scaling fixes every row's norm (`--normalize l2`).
    pub known: bool,
    /// Which formula gave the standard error.
    pub formula: &'static str,
}

/// The squared norm of the row behind the released row `x` — what `⟨u, u⟩` is when a row is
/// paired with itself. `⟨x̃, x̃⟩` would count the row's noise energy `kσ²` as signal (the two
/// sides share one noise draw, so the inner-product estimator's unbiasedness does not apply):
/// `‖x̃‖² − kσ²` removes it. Its variance over the projection and the noise is
/// `4σ²‖u‖² + 2kσ⁴ + (g/k)(2‖u‖⁴ + κΣu_i⁴)` ([`interval::Model::sq_norm_variance`]). With a
/// known row norm (`row_norm_sq`) that value is returned exactly. `None` for sign estimators.
pub fn estimate_sq_norm(
    est: &Estimator,
    x: &[f32],
    row_norm_sq: Option<f64>,
) -> Option<NormEstimate> {
    let Estimator::Gaussian { family, k, sigma } = *est else {
        return None;
    };
    let noise = noise_energy(family, k, sigma);
    let model = interval::Model::new(family, k, sigma, true);
    Some(match row_norm_sq {
        Some(n) => NormEstimate {
            sq_norm: n,
            se: 0.0,
            lo: n,
            hi: n,
            noise_norm_sq: noise,
            known: true,
            formula: formula(family),
        },
        None => {
            let n = sq(x) - noise;
            let (lo, hi) = interval::sq_norm_interval(&model, n, interval::z_level());
            NormEstimate {
                sq_norm: n,
                se: model.sq_norm_variance(n).sqrt(),
                lo,
                hi,
                noise_norm_sq: noise,
                known: false,
                formula: formula(family),
            }
        }
    })
}
