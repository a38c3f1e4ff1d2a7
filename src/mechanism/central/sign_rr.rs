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
//!    (Chernoff; [`crate::privacy::nplus`]). The values are computed in the map's arithmetic,
//!    within `E_j` of the exact ones, so `r` is taken for `β_q·(1 + g)`
//!    ([`super::sign_sketch::fp_guard`], `g ≤ 10⁻⁶`; `β_q = β + 2^-q` on the grid, β in f64).
//!
//!    **On the grid** (Rademacher maps, coordinate neighbours; [`rr_arithmetic`]) the signs are
//!    those of `Wᵀũ` for the rounded row `ũ` (`ũ_i = round(u_i·2^q)·2^-q`, a public,
//!    data-independent, per-coordinate map, so `ũ` is a fixed row independent of `W` and the
//!    probability above is taken over `W` for `ũ`). Proposition 4.4 (and the Berry–Esseen bound
//!    of [`crate::privacy::nplus::p_rademacher_bound`]) then applies to `ũ` with: neighbours
//!    `ũ, ũ'` differing in one coordinate by at most `β_q = β + 2^-q`; `|ũ_i| ≤ 1` (±1 are on
//!    the grid); and `‖ũ‖ ≥ ‖u‖ − ‖ũ − u‖ ≥ ν − √p·2^-(q+1) = ν_q` (triangle inequality, each
//!    coordinate moved by at most half a step), so N₊ is computed for `r = β_q(1 + g)/ν_q`
//!    ([`grid_min_norm`]). `q` is the finest of the map's grid (`2^-q ≤ β·2^-12`) and the
//!    smallest with `√p·2^-(q+1) ≤ ν·2^-11`, so `r` grows by at most
//!    `(1 + 2^-12)/(1 − 2^-11) − 1 ≈ 7.3·10⁻⁴` over the f64 path's (the utility cost: N₊ is
//!    computed for an `r` at most 0.073% larger); where that needs `q > 18` the values are
//!    computed in f64 as before.
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
pub use super::arithmetic::{grid_min_norm, rr_arithmetic};
use super::public_map::PublicMap;
use super::sign_sketch::{fp_guard, FlipRule, SignRecord, SignSketch};
use crate::error::{Error, Result};
use crate::mechanism::{MechanismKind, MechanismParams, MechanismRecord};
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
            "‹neighbour›",
            format!(
                "{} spends ε on each OPORP bin because a single-coordinate change moves one bin; \
                 under ℓ₁ adjacency a change can move several bins, so only ‹neighbour coordinate› \
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
        return SignSketch::new(params.kind, ALGORITHM, map, record, guarantee);
    }
    let kind = params.projection.unwrap_or(DenseKind::Rademacher);
    let nu = params.min_norm.ok_or_else(|| {
        Error::param(
            "‹min_norm›",
            "dp-signrp-rr needs a public lower bound ν on every row's ℓ₂ norm to bound how many \
             signs a neighbour can flip (N₊, Proposition 4.4); with ‹normalize l2› it is 1",
        )
    })?;
    let delta = params
        .delta
        .ok_or_else(|| Error::missing("‹delta›", "dp-signrp-rr gives (ε,δ)-DP and needs δ"))?;
    let map = PublicMap::Dense(DenseProjection::generate(kind, params.p, k, seed)?);
    // the signs are of values computed in the map's arithmetic, each within E_j of its exact
    // value: a neighbour can flip sign j only if |w_jᵀũ|/√k < c_j + 2E_j = c_j·(1 + g) (c_j for
    // β_q), so N₊ is bounded for β_q·(1 + g) and the rounded rows' norm bound ν_q (module
    // documentation; g ≤ 10⁻⁶ at p ≤ 65 536, sign_sketch's "Floating point")
    let arithmetic = rr_arithmetic(&map, params.beta, nu, params.neighbour);
    let nu_q = match arithmetic {
        Arithmetic::Grid { q } => grid_min_norm(nu, params.p, q),
        Arithmetic::Float64 => nu,
    };
    let g = fp_guard(&map, arithmetic, params.beta, 1);
    let beta_q = arithmetic.effective_beta(params.beta) * (1.0 + g) * (1.0 + f64::EPSILON);
    let np = nplus::compute(kind, beta_q, nu_q, params.p, k, delta)?;
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
        grid_min_norm: matches!(arithmetic, Arithmetic::Grid { .. }).then_some(nu_q),
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

/// Rebuild `dp-signrp-rr` or `dp-signoporp-rr` from a release's record.
pub fn from_record(record: &MechanismRecord, guarantee: &Guarantee) -> Result<SignSketch> {
    SignSketch::from_record(record, guarantee, ALGORITHM)
}
