//! Local differential privacy: each user privatises their own vector on their own device, and a
//! server averages the privatised vectors into an unbiased estimate of the mean.
//!
//! **Neighbour relation (replace-one).** A local randomiser `M` is ε-LDP when for *any two inputs*
//! `v, v'` in its domain (here the unit ball, or the ball of a public radius `R` for
//! [`privunit2_norm`]) and every set of outputs `S`, `P(M(v) ∈ S) ≤ e^ε·P(M(v') ∈ S)`. This is much
//! stronger than the β-adjacency of the sketch mechanisms in [`crate::mechanism`]: the two inputs
//! may be as far apart as `v` and `−v`.
//!
//! **Ball inputs.** The direction mechanisms are defined on the sphere. A vector strictly inside
//! the unit ball is first mapped to the sphere by the randomised rounding of Duchi, Jordan &
//! Wainwright (2018): `u = v/‖v‖` with probability `(1 + ‖v‖)/2`, else `u = −v/‖v‖` (a uniform
//! random direction for `v = 0`), so `E[u] = v`. The output is a mixture of sphere outputs, hence
//! still ε-LDP, and stays unbiased: `E[Z] = v`, with `E‖Z − v‖² = E‖Z‖² − ‖v‖²`. Norms within
//! [`UNIT_NORM_TOL`] of 1 are treated as unit vectors (normalised, no rounding).
//!
//! **Debiasing convention.** Every client function returns the *already debiased* vector `Z`
//! (`E[Z | v] = v`); the server's mean estimate is the plain average `(1/n)·Σ Z_i`, whose expected
//! squared error is `(1/n²)·Σ mse(v_i)` with each mechanism's closed-form `mse`.
//!
//! | mechanism | file | algorithm | ε-LDP argument |
//! |---|---|---|---|
//! | PrivUnitG | [`privunitg`] | Asi et al. 2023, Algorithm 8 | density ratio of the two half-spaces |
//! | PrivUnit2 | [`privunit2`] | Bhowmick et al. 2018, Algorithm 1 | density ratio cap/complement (exact cap cost) |
//! | Duchi et al. hemisphere | [`privunit2`] (`PrivUnit2::duchi`) | PrivUnit2 with γ = 0 | as PrivUnit2 |
//! | ProjUnit (rotation, Gaussian, SRHT) | [`projunit`] ([`rotation`]: Householder, O(dk)) | Asi et al. 2023, Algorithms 1, 2, 5 | PrivUnitG in R^k; W public, independent of v |
//! | Correlated FastProjUnit | [`projunit_correlated`] | Asi et al. 2023, Algorithms 3–4 (with √(d'/k)) | PrivUnitG in R^k; shared D and per-user S_i public |
//! | PrivUnitInf (hypercube `[-1,1]^d`) | [`privunit_inf`] | Bhowmick et al., Algorithm 2 | density ratio cap/complement of the cube (exact cap cost, condition (17)) |
//! | ScalarDP | [`scalar_dp`] | Bhowmick et al., Algorithm 3 | (k+1)-ary randomised response |
//! | PrivUnit2 × ScalarDP | [`privunit2_norm`] | Bhowmick et al., eq. (22) | (ε₁, ε₂)-separated, (ε₁+ε₂)-LDP |
//!
//! All calibrations are computed from (ε, d) in log space ([`crate::privacy::special`]); every
//! chosen constant is a public field of the mechanism's parameter struct.

pub mod accumulator;
pub mod algorithm;
pub mod decoder;
pub use crate::rng::normal;
pub mod privunit2;
pub mod privunit2_norm;
pub mod privunit_inf;
pub mod privunitg;
pub mod projunit;
pub mod projunit_correlated;
pub mod release;
pub mod rotation;
pub mod scalar_dp;

use std::sync::Arc;

use rand::Rng;

pub use normal::WordRng;

use crate::error::{Error, Result};
use crate::mechanism::kind::LocalFile;
use algorithm::LocalMap;
use release::LocalSpec;
use rotation::ReflectionDraw;

pub use algorithm::{LocalAlgorithm, WithMaps};
pub use privunit2::{Duchi, PrivUnit2};
pub use privunit2_norm::PrivUnit2Norm;
pub use privunit_inf::PrivUnitInf;
pub use privunitg::PrivUnitG;
pub use projunit::{NearlyUnbiasedSrht, ProjKind, ProjMatrix, ProjUnit};
pub use projunit_correlated::{CorrelatedProjUnit, CorrelatedPublic};
pub use rotation::HaarRows;
pub use scalar_dp::ScalarDp;

pub use crate::data::scale::UNIT_NORM_TOL;

/// The randomiser of a local kind with its constants computed from (ε, d, k) and its public maps
/// from the spec's seed, a rotation's reflections drawn as `draw` says: the one dispatch over the
/// local files (a new local mechanism adds its arm here and its row in
/// [`crate::mechanism::KIND_TABLE`]).
pub(crate) fn algorithm(
    file: LocalFile,
    spec: &LocalSpec,
    draw: ReflectionDraw,
) -> Result<Arc<dyn LocalAlgorithm>> {
    let (eps, d) = (spec.epsilon, spec.d);
    Ok(match file {
        LocalFile::PrivUnit2 => Arc::new(PrivUnit2::new(eps, d)?),
        LocalFile::Duchi => Arc::new(Duchi(PrivUnit2::duchi(eps, d)?)),
        LocalFile::PrivUnitG => Arc::new(PrivUnitG::new(eps, d)?),
        LocalFile::ProjUnit => {
            let (k, public) = (spec.k()?, spec.seed()?);
            match spec.options.map.unwrap_or(LocalMap::Srht) {
                LocalMap::SrhtNearlyUnbiased => Arc::new(WithMaps {
                    mechanism: NearlyUnbiasedSrht::exact(eps, d, k)?,
                    public,
                }),
                map => Arc::new(WithMaps {
                    mechanism: ProjUnit::new(eps, d, k, proj_kind(map))?.with_rotation_draw(draw),
                    public,
                }),
            }
        }
        LocalFile::ProjUnitCorrelated => {
            let k = spec.k()?;
            if k < 2 {
                return Err(Error::param(
                    "‹k›",
                    "projunit-correlated needs k ≥ 2 (PrivUnitG in k dimensions)",
                ));
            }
            let m = CorrelatedProjUnit::new(eps, d, k)?;
            let public = m.public(spec.seed()?)?;
            Arc::new(WithMaps {
                mechanism: m,
                public,
            })
        }
        LocalFile::PrivUnitInf => Arc::new(PrivUnitInf::new(eps, d)?),
        LocalFile::ScalarDp => spec.scalar()?,
        LocalFile::PrivUnit2Norm => spec.norm()?,
    })
}

fn proj_kind(map: LocalMap) -> ProjKind {
    match map {
        LocalMap::Rotation => ProjKind::Rotation,
        LocalMap::Gaussian => ProjKind::Gaussian,
        LocalMap::Srht | LocalMap::SrhtNearlyUnbiased => ProjKind::Srht,
    }
}

/// Validate ε for a local mechanism: positive, finite and at most
/// [`crate::privacy::guarantee::MAX_EPSILON`].
pub fn check_epsilon(name: &str, epsilon: f64) -> Result<()> {
    crate::privacy::guarantee::check_epsilon_named(name, epsilon)
}

/// Validate the dimension: at least 2 (on the circle a cap is an arc; in one dimension the sphere
/// has two points and these mechanisms are not defined).
pub fn check_dim(d: usize) -> Result<()> {
    if d < 2 {
        Err(Error::param(
            "dimension",
            format!("local mechanisms need d ≥ 2, got d = {d}"),
        ))
    } else if d > MAX_D {
        Err(Error::param(
            "dimension",
            format!("local mechanisms take d ≤ 2^32, got d = {d}"),
        ))
    } else {
        Ok(())
    }
}

/// The largest dimension a local mechanism accepts, 2^32 (one row of it is 16 GiB of f32). A
/// bound is needed because a release's metadata states d and a reader rebuilds the mechanism's
/// constants from it (PrivUnitInf's threshold search takes time growing with √d).
pub const MAX_D: usize = 1 << 32;

/// Check that `v` has `d` finite coordinates and `‖v‖ ≤ radius` (up to [`UNIT_NORM_TOL`]
/// relative); returns `‖v‖`.
pub fn check_in_ball(v: &[f64], d: usize, radius: f64) -> Result<f64> {
    if v.len() != d {
        return Err(Error::param(
            "input vector",
            format!("has {} coordinates, the mechanism has d = {d}", v.len()),
        ));
    }
    // One pass: a non-finite coordinate makes the sum of squares non-finite; only then look
    // for it (for the message).
    let norm = norm2(v);
    if !norm.is_finite() {
        if let Some((j, x)) = v.iter().enumerate().find(|(_, x)| !x.is_finite()) {
            return Err(Error::param(
                "input vector",
                format!("coordinate {j} is {x} (not finite)"),
            ));
        }
    }
    if norm.is_nan() || norm > radius * (1.0 + UNIT_NORM_TOL) {
        return Err(Error::param(
            "input vector",
            format!(
                "norm {norm} exceeds the ball of radius {radius}: normalise or clip the input \
                 first"
            ),
        ));
    }
    Ok(norm)
}

/// Euclidean norm.
pub fn norm2(v: &[f64]) -> f64 {
    dot(v, v).sqrt()
}

/// Inner product (four partial sums, so the loop vectorises instead of waiting on one chain of
/// additions).
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f64; 4];
    let (ac, bc) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = ac
        .remainder()
        .iter()
        .zip(bc.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ac.zip(bc) {
        for l in 0..4 {
            acc[l] += x[l] * y[l];
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// A uniform draw from `(0, 1]` with 53 random bits (never 0, so its log is finite).
pub fn unit_open0<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A uniform draw from `[0, 1)` with 53 random bits.
pub fn unit_closed0<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A uniform random unit vector in `R^d` (a normalised standard normal vector).
pub fn uniform_unit<R: WordRng + ?Sized>(d: usize, rng: &mut R) -> Vec<f64> {
    loop {
        let mut g = vec![0f64; d];
        normal::fill_standard_normal(rng, &mut g);
        let n = norm2(&g);
        if n > 0.0 {
            return g.into_iter().map(|x| x / n).collect();
        }
    }
}

/// A uniform random unit vector orthogonal to the unit vector `u`: `g − ⟨g,u⟩u`, normalised, for
/// `g ~ N(0, I_d)` (the projection of an isotropic normal onto `u^⊥` is isotropic in `u^⊥`).
pub fn uniform_orthogonal<R: WordRng + ?Sized>(u: &[f64], rng: &mut R) -> Vec<f64> {
    loop {
        let mut g = vec![0f64; u.len()];
        let (c, _) = normal::fill_standard_normal_dot(rng, &mut g, u);
        for (gi, ui) in g.iter_mut().zip(u) {
            *gi -= c * ui;
        }
        let n = norm2(&g);
        if n > 0.0 {
            g.iter_mut().for_each(|x| *x /= n);
            return g;
        }
    }
}

/// The sphere point a ball input `v` (with `‖v‖ = norm ≤ 1`) is privatised through: `v/‖v‖` when
/// `‖v‖` is 1 within [`UNIT_NORM_TOL`], otherwise the randomised rounding `±v/‖v‖` with
/// `P(+) = (1 + ‖v‖)/2` (a uniform direction if `v = 0`), so that `E[u] = v`.
pub fn round_to_sphere<R: WordRng + ?Sized>(v: &[f64], norm: f64, rng: &mut R) -> Vec<f64> {
    if norm >= 1.0 - UNIT_NORM_TOL {
        return v.iter().map(|x| x / norm).collect();
    }
    if norm == 0.0 {
        return uniform_unit(v.len(), rng);
    }
    let keep = unit_closed0(rng) < 0.5 * (1.0 + norm);
    let s = if keep { 1.0 / norm } else { -1.0 / norm };
    v.iter().map(|x| x * s).collect()
}

/// `E‖u‖²` bookkeeping for ball inputs: the squared norm the closed-form MSE subtracts
/// (`E‖Z − v‖² = E‖Z‖² − ‖v‖²`), with unit-norm inputs counted as exactly 1.
pub fn effective_norm2(norm: f64) -> f64 {
    if norm >= 1.0 - UNIT_NORM_TOL {
        1.0
    } else {
        norm * norm
    }
}
