//! `raw-g-opt`: the baseline. Add `N(0, σ²I_p)` to the raw row.
//!
//! Li & Li, Theorem C.1 setting; Gaussian mechanism with the analytic σ of Theorem 3.2 (Balle &
//! Wang 2018). Privacy argument: under β-adjacency one coordinate of one row changes by at most β,
//! so the row changes by at most β in ℓ₂: `Δ₂ = β`; the analytic Gaussian mechanism with that Δ₂
//! is (ε,δ)-DP for the row, and rows use independent noise.

use super::gaussian_sketch::{GaussianSketch, SigmaRule};
use super::public_map::PublicMap;
use crate::error::Result;
use crate::mechanism::{MechanismKind, MechanismParams, MechanismRecord, NoiseChoice};
use crate::privacy::guarantee::Guarantee;

/// Citation recorded in releases.
pub const ALGORITHM: &str =
    "raw data + Gaussian noise, analytic sigma (Li & Li, Theorem C.1 baseline; Balle & Wang 2018)";

/// Build `raw-g-opt` for `params.p` coordinates with the chosen noise.
pub fn build(params: &MechanismParams, noise: NoiseChoice) -> Result<GaussianSketch> {
    let map = PublicMap::Identity { p: params.p };
    let rule = (SigmaRule::Analytic, noise);
    GaussianSketch::build(MechanismKind::RawGOpt, ALGORITHM, map, params, rule)
}

/// Rebuild `raw-g-opt` from a release's record.
pub fn from_record(record: &MechanismRecord, guarantee: &Guarantee) -> Result<GaussianSketch> {
    GaussianSketch::from_record(record, guarantee, ALGORITHM)
}
