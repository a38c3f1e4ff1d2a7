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
}

impl Estimator {
    /// The estimate of `⟨u,v⟩` from two sketch rows.
    pub fn inner_product(&self, x: &[f32], y: &[f32]) -> f64 {
        x.iter().zip(y).map(|(&a, &b)| a as f64 * b as f64).sum()
    }

    /// Variance of [`inner_product`](Estimator::inner_product) for a pair with statistics `s`.
    pub fn variance(&self, s: &PairStats, mode: QueryMode) -> f64 {
        match *self {
            Estimator::Gaussian { family, k, sigma } => ip_variance(family, k, sigma, s, mode),
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
