//! `dp-oporp`: DP-OPORP (Li & Li, Algorithm 10). **This is where DP-OPORP is calibrated.**
//!
//! 1. Regenerate the public OPORP structure from the seed: permutation `π`, signs `r`, `k`
//!    contiguous bins (k ≤ p).
//! 2. `x_j = Σ_{i ∈ bin j} r_i·u_{π(i)}` — O(p) per row, no scaling.
//! 3. Sensitivity from the structure: every coordinate lands in exactly one bin with `|r_i| = 1`,
//!    so a β-neighbour moves one bin by at most β: `Δ₂ = β` (verified from the actual signs).
//! 4. Release `x + N(0, σ²I_k)` with the analytic σ of Theorem 3.2 for `Δ₂`.
//!
//! Privacy: Gaussian mechanism on a query of ℓ₂-sensitivity Δ₂ ⇒ (ε,δ)-DP per row.

use super::gaussian_sketch::{GaussianSketch, SigmaRule};
use super::public_map::PublicMap;
use crate::error::Result;
use crate::mechanism::{MechanismParams, MechanismRecord, NoiseChoice};
use crate::privacy::guarantee::Guarantee;
use crate::projection::{Oporp, Seed};

/// Citation recorded in releases.
pub const ALGORITHM: &str = "DP-OPORP (Li & Li, Algorithm 10), analytic sigma (Theorem 3.2)";

/// Build `dp-oporp` with `k ≤ p` bins and the chosen noise.
pub fn build(
    params: &MechanismParams,
    k: usize,
    seed: Seed,
    noise: NoiseChoice,
) -> Result<GaussianSketch> {
    let map = PublicMap::Oporp(Oporp::generate(params.p, k, seed)?);
    let rule = (SigmaRule::Analytic, noise);
    GaussianSketch::build(params.kind, ALGORITHM, map, params, rule)
}

/// Rebuild `dp-oporp` from a release's record.
pub fn from_record(record: &MechanismRecord, guarantee: &Guarantee) -> Result<GaussianSketch> {
    GaussianSketch::from_record(record, guarantee, ALGORITHM)
}
