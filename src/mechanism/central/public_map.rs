//! The public map of a central sketch: the row itself, a dense random projection or OPORP,
//! regenerated from the seed a release records. What every central mechanism needs of it (its
//! dimensions, its ℓ₂-sensitivity under β-adjacency, its record, the sign mechanisms' step sizes)
//! is here, so that the Gaussian sketch, the sign sketch and the arithmetic all read it from one
//! place below them.

use crate::error::{Error, Result};
use crate::estimate::Family;
use crate::mechanism::ProjectionRecord;
use crate::projection::{DenseProjection, Oporp};

/// Randomness layout version recorded in releases.
pub const LAYOUT: u32 = 1;

/// The public map of a real-valued mechanism.
#[derive(Debug, Clone)]
pub enum PublicMap {
    /// The row itself (`p` outputs).
    Identity {
        /// Dimension.
        p: usize,
    },
    /// Dense random projection.
    Dense(DenseProjection),
    /// OPORP.
    Oporp(Oporp),
}

impl PublicMap {
    /// Input dimension.
    pub fn p(&self) -> usize {
        match self {
            PublicMap::Identity { p } => *p,
            PublicMap::Dense(d) => d.p(),
            PublicMap::Oporp(o) => o.p(),
        }
    }
    /// Output dimension.
    pub fn k(&self) -> usize {
        match self {
            PublicMap::Identity { p } => *p,
            PublicMap::Dense(d) => d.k(),
            PublicMap::Oporp(o) => o.k(),
        }
    }
    /// ℓ₂-sensitivity of the map under β-adjacency, computed from the actual map.
    pub fn sensitivity(&self, beta: f64) -> f64 {
        match self {
            // Changing one coordinate by β changes the row by β in ℓ₂ (and the ℓ₁ ball of radius β
            // lies inside the ℓ₂ ball of radius β).
            PublicMap::Identity { .. } => beta,
            PublicMap::Dense(d) => d.sensitivity(beta),
            PublicMap::Oporp(o) => o.sensitivity(beta),
        }
    }
    /// Apply to `m` rows.
    pub fn apply(&self, rows: &[f32], out: &mut [f32]) {
        match self {
            PublicMap::Identity { .. } => out.copy_from_slice(rows),
            PublicMap::Dense(d) => d.project(rows, out),
            PublicMap::Oporp(o) => o.project(rows, out),
        }
    }
    /// The estimator family of §6.
    pub fn family(&self) -> Family {
        match self {
            PublicMap::Identity { p } => Family::Raw { p: *p },
            PublicMap::Dense(d) => Family::Dense {
                fourth_moment: d.kind().fourth_moment(),
            },
            PublicMap::Oporp(o) => Family::Oporp { p: o.p() },
        }
    }
    /// The record stored in a release.
    pub fn record(&self) -> ProjectionRecord {
        match self {
            PublicMap::Identity { .. } => ProjectionRecord::Identity,
            PublicMap::Dense(d) => ProjectionRecord::Dense {
                entries: d.kind(),
                seed: d.seed(),
                layout: LAYOUT,
            },
            PublicMap::Oporp(o) => ProjectionRecord::Oporp {
                seed: o.seed(),
                layout: LAYOUT,
            },
        }
    }
    /// Regenerate from a record.
    pub fn from_record(rec: &ProjectionRecord, p: usize, k: usize) -> Result<PublicMap> {
        let check_layout = |layout: u32| {
            if layout == LAYOUT {
                Ok(())
            } else {
                Err(Error::param(
                    "release",
                    format!(
                        "projection layout version {layout} is not supported (this dprp: {LAYOUT})"
                    ),
                ))
            }
        };
        Ok(match rec {
            ProjectionRecord::Identity => {
                if p != k {
                    return Err(Error::param("release", "identity map with k ≠ p"));
                }
                PublicMap::Identity { p }
            }
            ProjectionRecord::Dense {
                entries,
                seed,
                layout,
            } => {
                check_layout(*layout)?;
                PublicMap::Dense(DenseProjection::generate(*entries, p, k, *seed)?)
            }
            ProjectionRecord::Oporp { seed, layout } => {
                check_layout(*layout)?;
                PublicMap::Oporp(Oporp::generate(p, k, *seed)?)
            }
            ProjectionRecord::PerRow { .. } | ProjectionRecord::Correlated { .. } => {
                return Err(Error::param(
                    "release",
                    "a sketch mechanism recorded with per-row maps (a damaged header)",
                ))
            }
        })
    }
}

/// The step sizes `c_j` of the sign mechanisms for a public map and β: `β·max_i|w_ij|/√k`
/// (dense), the largest `|s_i|·β` among the coordinates of bin `j` (OPORP), β (identity); see
/// [`super::sign_sketch`] for what they decide.
pub fn step_sizes(map: &PublicMap, beta: f64) -> Vec<f64> {
    match map {
        PublicMap::Dense(d) => {
            // rounded up: β·max|w_ij|/√k in f64, inflated by a relative 2⁻⁵⁰
            let s = beta / (d.k() as f64).sqrt() * (1.0 + crate::privacy::lattice::pow2(-50));
            d.column_max_abs().into_iter().map(|v| v * s).collect()
        }
        PublicMap::Oporp(o) => {
            let mut m = vec![0f64; o.k()];
            for (&b, &s) in o.bins().iter().zip(o.signs()) {
                let j = b as usize;
                m[j] = m[j].max((s as f64).abs() * beta);
            }
            m
        }
        PublicMap::Identity { p } => vec![beta; *p],
    }
}
