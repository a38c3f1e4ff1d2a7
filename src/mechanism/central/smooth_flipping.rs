//! `dp-signrp-rr-smooth` and `dp-signoporp-rr-smooth`: smooth flipping probabilities (Li & Li,
//! Algorithm 4, Theorem 4.6).
//!
//! 1. `x = Wᵀu/√k` (dense, any projection kind) or the OPORP of `u`.
//! 2. For each value, `L_j = ⌈|x_j|/c_j⌉`, the number of β-steps needed to change its sign
//!    (`c_j = β·max_i|w_ij|/√k` dense, `β` OPORP).
//! 3. Flip sign `j` with `q_j = 1/(1+e^{ε'·L_j})`, as an exact coin `Q_L/2⁶⁴` rounded toward ½
//!    with neighbouring levels' ratios kept exactly within `e^{ε'}`
//!    ([`crate::privacy::rr::smooth_flip_table`]).
//!
//! Privacy: a β-neighbour changes `x_j` by at most `c_j`, hence `L_j` by at most one, and can
//! change the sign only when `L_j ≤ 1`; every output-probability ratio of one sign is then at most
//! `e^{ε'}` (checked exhaustively in [`crate::privacy::rr`]). Dense: all k values can move, so
//! `ε' = ε/k` (rounded down, so `k·ε' ≤ ε` exactly) and the k signs compose to ε. OPORP: one bin moves, so `ε' = ε` (single-coordinate
//! neighbours only). Pure ε-DP, no δ, no norm bound.

use super::public_map::PublicMap;
use super::sign_rr::require_coordinate_neighbours;
use super::sign_sketch::{FlipRule, SignRecord, SignSketch};
use crate::error::Result;
use crate::mechanism::{MechanismKind, MechanismParams, MechanismRecord};
use crate::privacy::guarantee::{Guarantee, GuaranteeKind};
use crate::privacy::rr::split_epsilon;
use crate::projection::{DenseKind, DenseProjection, Oporp, Seed};

/// Citation recorded in releases.
pub const ALGORITHM: &str =
    "smooth flipping (Li & Li, Algorithm 4, Theorem 4.6); eps' = eps/k dense, eps on OPORP bins";

/// Build `dp-signrp-rr-smooth` or `dp-signoporp-rr-smooth`.
pub fn build(params: &MechanismParams, k: usize, seed: Seed) -> Result<SignSketch> {
    let (map, eps_prime) = if params.kind == MechanismKind::DpSignoporpRrSmooth {
        require_coordinate_neighbours(params)?;
        (
            PublicMap::Oporp(Oporp::generate(params.p, k, seed)?),
            params.epsilon,
        )
    } else {
        let kind = params.projection.unwrap_or(DenseKind::Rademacher);
        (
            PublicMap::Dense(DenseProjection::generate(kind, params.p, k, seed)?),
            // ε/k rounded down: k·ε' ≤ ε exactly
            split_epsilon(params.epsilon, k as u64),
        )
    };
    let record = SignRecord {
        rule: FlipRule::SmoothFlipping { eps_prime },
        beta: params.beta,
        n_plus: None,
        min_norm: None,
        grid_min_norm: None,
        noise_set: None,
        flip_threshold: None,
    };
    let guarantee = Guarantee {
        kind: GuaranteeKind::PureDp,
        epsilon: params.epsilon,
        delta: None,
        beta: params.beta,
        neighbour: params.neighbour,
        local: None,
    };
    SignSketch::new(params.kind, ALGORITHM, map, record, guarantee)
}

/// Rebuild `dp-signrp-rr-smooth` or `dp-signoporp-rr-smooth` from a release's record.
pub fn from_record(record: &MechanismRecord, guarantee: &Guarantee) -> Result<SignSketch> {
    SignSketch::from_record(record, guarantee, ALGORITHM)
}
