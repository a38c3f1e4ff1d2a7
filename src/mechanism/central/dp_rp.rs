//! `dp-rp-g` and `dp-rp-g-opt`: DP random projections (Li & Li, Algorithm 1).
//!
//! 1. Project with a public dense `W ∈ R^{p×k}` (i.i.d. entries, regenerated from the seed):
//!    `x = Wᵀu/√k`.
//! 2. Compute the ℓ₂-sensitivity from the actual matrix: `Δ₂ = (β/√k)·max_i‖W[i,:]‖₂`
//!    (Rademacher: exactly β; Gaussian: larger, ≈1.2–1.3·β at p ≈ 800, k = 256, Figure 7).
//! 3. Release `x + N(0, σ²I_k)` with σ from Theorem 3.1 (classical, `dp-rp-g`) or Theorem 3.2
//!    (analytic, `dp-rp-g-opt`; with Rademacher entries this is DP-RP-G-OPT-B, Algorithm 9).
//!
//! Privacy argument: a β-neighbour changes `u` by `β·e_i` (or any `d` with `‖d‖₁ ≤ β`), so `x`
//! changes by `Wᵀd/√k`, whose ℓ₂ norm is at most `Δ₂`; the Gaussian mechanism calibrated to `Δ₂`
//! is (ε,δ)-DP. `W` is public, so releasing its seed costs nothing. The map is computed in the
//! arithmetic of [`super::arithmetic`] (Rademacher and sparse maps: inputs on the grid `2^-q`,
//! exact sums, `Δ_q = Δ₂·(1 + 2^-q/β)`; Gaussian and uniform: f64), and σ is calibrated for the
//! computed values' sensitivity: `Δ_q + 2E` (float noise) or `Δ_q + 2E + γ√k` (lattice).

use super::gaussian_sketch::{GaussianSketch, SigmaRule};
use super::public_map::PublicMap;
use crate::error::Result;
use crate::mechanism::{MechanismKind, MechanismParams, MechanismRecord, NoiseChoice};
use crate::privacy::guarantee::Guarantee;
use crate::projection::{DenseKind, DenseProjection, Seed};

/// Citation recorded in releases.
pub const ALGORITHM: &str =
    "DP-RP (Li & Li, Algorithm 1; Rademacher + analytic sigma = Algorithm 9)";

/// Build `dp-rp-g` (classical σ) or `dp-rp-g-opt` (analytic σ) with the chosen noise.
pub fn build(
    params: &MechanismParams,
    k: usize,
    seed: Seed,
    noise: NoiseChoice,
) -> Result<GaussianSketch> {
    let kind = params.projection.unwrap_or(DenseKind::Rademacher);
    let map = PublicMap::Dense(DenseProjection::generate(kind, params.p, k, seed)?);
    let rule = if params.kind == MechanismKind::DpRpG {
        SigmaRule::Classical
    } else {
        SigmaRule::Analytic
    };
    GaussianSketch::build(params.kind, ALGORITHM, map, params, (rule, noise))
}

/// Rebuild `dp-rp-g` or `dp-rp-g-opt` from a release's record.
pub fn from_record(record: &MechanismRecord, guarantee: &Guarantee) -> Result<GaussianSketch> {
    GaussianSketch::from_record(record, guarantee, ALGORITHM)
}
