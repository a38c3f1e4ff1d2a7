//! `dp-signrp-rr` and `dp-signoporp-rr`: sign random projections with randomised response
//! (Li & Li, Algorithm 3 with Proposition 4.4; on OPORP, N₊ = 1).
//!
//! Dense (`dp-signrp-rr`):
//! 1. `s = sign(Wᵀu)` with a public Gaussian or Rademacher `W`.
//! 2. One β-neighbour can flip sign `j` only if `β·max_i|w_ij| > |w_jᵀu|`; for one column this has
//!    probability `P ≤ F_{r,p}` (Gaussian, eq. (5)) or `P ≈ 2Φ(r)−1` (Rademacher, eq. (10), a
//!    central-limit approximation), with `r = β/ν` for the public norm lower bound `ν ≤ ‖u‖`
//!    (`--min-norm`; rows below it are refused). The number of flippable signs is
//!    `N ~ Binomial(k, P)`, and `N₊ = min(k, ⌈(1+η)Pk⌉)` bounds it except with probability δ
//!    (Chernoff; [`crate::privacy::nplus`]). The values are computed in f64, within `E_j` of the
//!    exact ones, so `r` is taken for `β·(1 + g)` ([`super::sign_sketch::fp_guard`], `g ≤ 10⁻⁶`).
//! 3. Flip each sign with probability `1/(1+e^{ε'})`, `ε' = ε/N₊` rounded down: the at most N₊
//!    signs that differ between neighbours cost `ε'` each, so the release is ε-DP except with
//!    probability δ over the projection: (ε, δ)-DP. The coin is exact: probability `Q/2⁶⁴`
//!    rounded toward ½, decided by comparing a uniform 64-bit word with `Q`
//!    ([`crate::privacy::rr`]); the release records `Q`.
//!
//! OPORP (`dp-signoporp-rr`): a coordinate enters exactly one bin, so a β-neighbour changes at most
//! one sign (N₊ = 1, no δ): flip each sign with `1/(1+e^{ε})` for pure ε-DP. This needs the
//! single-coordinate neighbour relation; under ℓ₁ adjacency several bins can move, so it is refused.

use super::arithmetic::Arithmetic;
use super::gaussian_sketch::PublicMap;
use super::sign_sketch::{fp_guard, FlipRule, SignRecord, SignSketch};
use crate::error::{Error, Result};
use crate::mechanism::{MechanismKind, MechanismParams};
use crate::privacy::guarantee::{Guarantee, GuaranteeKind, Neighbour};
use crate::privacy::nplus;
use crate::privacy::rr::{split_epsilon, Flip};
use crate::projection::{DenseKind, DenseProjection, Oporp, Seed};

/// Citation recorded in releases.
pub const ALGORITHM: &str =
    "DP-SignRP-RR (Li & Li, Algorithm 3, N+ from Proposition 4.4); on OPORP bins N+ = 1";

/// Refuse per-bin budgets under ℓ₁ adjacency (a change spread over coordinates moves many bins).
pub fn require_coordinate_neighbours(params: &MechanismParams) -> Result<()> {
    if params.neighbour != Neighbour::Coordinate {
        return Err(Error::param(
            "--neighbour",
            format!(
                "{} spends ε on each OPORP bin because a single-coordinate change moves one bin; \
                 under ℓ₁ adjacency a change can move several bins, so only --neighbour coordinate \
                 is supported",
                params.kind.name()
            ),
        ));
    }
    Ok(())
}

/// Build `dp-signrp-rr` or `dp-signoporp-rr`.
pub fn build(params: &MechanismParams, k: usize, seed: Seed) -> Result<SignSketch> {
    if params.kind == MechanismKind::DpSignoporpRr {
        require_coordinate_neighbours(params)?;
        let map = PublicMap::Oporp(Oporp::generate(params.p, k, seed)?);
        let record = SignRecord {
            rule: FlipRule::RandomisedResponse {
                eps_prime: params.epsilon,
                flip_probability: Flip::randomised_response(params.epsilon)?.probability(),
            },
            beta: params.beta,
            n_plus: None,
            min_norm: None,
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
        return SignSketch::new(params.kind, ALGORITHM, map, record, guarantee);
    }
    let kind = params.projection.unwrap_or(DenseKind::Rademacher);
    let nu = params.min_norm.ok_or_else(|| {
        Error::param(
            "--min-norm",
            "dp-signrp-rr needs a public lower bound ν on every row's ℓ₂ norm to bound how many \
             signs a neighbour can flip (N₊, Proposition 4.4); with --normalize l2 it is 1",
        )
    })?;
    let delta = params
        .delta
        .ok_or_else(|| Error::missing("--delta", "dp-signrp-rr gives (ε,δ)-DP and needs δ"))?;
    let map = PublicMap::Dense(DenseProjection::generate(kind, params.p, k, seed)?);
    // the signs are of values computed in f64, each within E_j of its exact value: a neighbour
    // can flip sign j only if |w_jᵀu|/√k < c_j + 2E_j = c_j·(1 + g), so N₊ is bounded for
    // β·(1 + g) (g ≤ 10⁻⁶ at p ≤ 65 536; module documentation of sign_sketch, "Floating point")
    let g = fp_guard(&map, Arithmetic::Float64, params.beta, 1);
    let np = nplus::compute(kind, params.beta * (1.0 + g), nu, params.p, k, delta)?;
    // ε/N₊ rounded down: N₊·ε' ≤ ε exactly
    let eps_prime = split_epsilon(params.epsilon, np.n_plus as u64);
    let record = SignRecord {
        rule: FlipRule::RandomisedResponse {
            eps_prime,
            flip_probability: Flip::randomised_response(eps_prime)?.probability(),
        },
        beta: params.beta,
        n_plus: Some(np),
        min_norm: Some(nu),
        noise_set: None,
        flip_threshold: None,
    };
    let guarantee = Guarantee {
        kind: GuaranteeKind::ApproxDp,
        epsilon: params.epsilon,
        delta: Some(delta),
        beta: params.beta,
        neighbour: params.neighbour,
        local: None,
    };
    SignSketch::new(params.kind, ALGORITHM, map, record, guarantee)
}
