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
    if k % 64 != 0 {
        let mask = (1u64 << (k % 64)) - 1;
        diff += ((a[full] ^ b[full]) & mask).count_ones();
    }
    k as u32 - diff
}

/// A cosine estimated from sign agreements, with standard errors (Theorem 4.5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SignEstimate {
    /// Fraction of agreeing signs, `P̂`.
    pub agreement: f64,
    /// Debiased collision probability of the unperturbed signs, `P̂_SRP` (clamped to [0,1]).
    pub p_srp: f64,
    /// Estimated angle `θ̂ = π(1 − P̂_SRP)`.
    pub theta: f64,
    /// Standard error of `θ̂`.
    pub se_theta: f64,
    /// `cos θ̂`.
    pub cosine: f64,
    /// Standard error of `cos θ̂` (delta method: `|sin θ̂|·se(θ̂)`).
    pub se_cosine: f64,
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
pub fn sign_cosine(agree: u32, k: usize, eps_prime: Option<f64>, mode: QueryMode) -> SignEstimate {
    let kf = k as f64;
    let p_hat = agree as f64 / kf;
    let (p_srp, slope) = match eps_prime {
        None => (p_hat, 1.0),
        Some(e1) => {
            let e = e1.exp();
            match mode {
                QueryMode::BothPrivate => {
                    let s = ((e - 1.0) / (e + 1.0)).powi(2);
                    ((p_hat - 2.0 * e / ((e + 1.0) * (e + 1.0))) / s, s)
                }
                QueryMode::RawQuery => {
                    let s = (e - 1.0) / (e + 1.0);
                    ((p_hat - 1.0 / (e + 1.0)) / s, s)
                }
            }
        }
    };
    let p_srp = p_srp.clamp(0.0, 1.0);
    let theta = std::f64::consts::PI * (1.0 - p_srp);
    // P at the estimate, for the plug-in standard error
    let p_model = match eps_prime {
        None => p_srp,
        Some(e1) => {
            let e = e1.exp();
            match mode {
                QueryMode::BothPrivate => p_srp * slope + 2.0 * e / ((e + 1.0) * (e + 1.0)),
                QueryMode::RawQuery => p_srp * slope + 1.0 / (e + 1.0),
            }
        }
    };
    let se_theta = std::f64::consts::PI / slope * (p_model * (1.0 - p_model) / kf).sqrt();
    SignEstimate {
        agreement: p_hat,
        p_srp,
        theta,
        se_theta,
        cosine: theta.cos(),
        se_cosine: theta.sin().abs() * se_theta,
    }
}

/// An inner-product estimate between two sketch rows with its plug-in standard error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IpEstimate {
    /// `⟨x̃, ỹ⟩`.
    pub inner_product: f64,
    /// Plug-in standard error of the inner product.
    pub se: f64,
    /// Estimated `‖u‖²` (exact for a raw query, `‖x̃‖² − kσ²` for a released row).
    pub norm_u_sq: f64,
    /// Estimated `‖v‖²`.
    pub norm_v_sq: f64,
    /// `⟨x̃,ỹ⟩ / (‖u‖‖v‖)` with the estimated norms (NaN when a norm estimate is not positive).
    pub cosine: f64,
    /// Approximate standard error of the cosine (`se / (‖u‖‖v‖)`, ignoring the norms' error).
    pub se_cosine: f64,
    /// Which formula gave the standard error.
    pub formula: &'static str,
}

/// Estimate `⟨u, v⟩` from a sketch row `x` of `u` and a released row `y` of `v`, with the
/// DESIGN.md §6 variance evaluated at plug-in values (Theorems C.1–C.3):
///
/// * norms: a released row's `‖x̃‖² − kσ²` (unbiased, clamped at 0), or for a raw query the exact
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
    let Estimator::Gaussian { family, k, sigma } = *est else {
        return None;
    };
    let sq = |v: &[f32]| v.iter().map(|&a| a as f64 * a as f64).sum::<f64>();
    let noise = match family {
        Family::Raw { p } => p as f64 * sigma * sigma,
        _ => k as f64 * sigma * sigma,
    };
    let ip = est.inner_product(x, y);
    let (nu, mode) = match raw_query_norm_sq {
        Some(n) => (n, QueryMode::RawQuery),
        None => ((sq(x) - noise).max(0.0), QueryMode::BothPrivate),
    };
    let nv = (sq(y) - noise).max(0.0);
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
    let formula = match family {
        Family::Raw { .. } => "Theorem C.1 (raw data + Gaussian noise)",
        Family::Dense { .. } => "Theorem C.2 (dense random projection + Gaussian noise)",
        Family::Oporp { .. } => "Theorem C.3 (OPORP + Gaussian noise)",
    };
    Some(IpEstimate {
        inner_product: ip,
        se,
        norm_u_sq: nu,
        norm_v_sq: nv,
        cosine: if denom > 0.0 { ip / denom } else { f64::NAN },
        se_cosine: if denom > 0.0 { se / denom } else { f64::NAN },
        formula,
    })
}
