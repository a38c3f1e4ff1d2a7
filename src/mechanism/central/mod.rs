//! Central sketches (Li & Li; DESIGN.md §5): the data holder projects every row with one public
//! map and privatises the result (Gaussian noise, or sign bits with randomised response), and
//! publishes the rows as a release. One file per algorithm; the shared machinery (the Gaussian
//! sketch, the sign sketch, the arithmetic of the projection) beside them.
//!
//! | name | file | algorithm |
//! |---|---|---|
//! | `raw-g-opt` | [`raw_gaussian`] | Gaussian noise on the raw row (Theorem C.1 baseline) |
//! | `dp-rp-g` | [`dp_rp`] | Algorithm 1, classical σ (Theorem 3.1) |
//! | `dp-rp-g-opt` | [`dp_rp`] | Algorithm 1 with analytic σ (Theorem 3.2); Rademacher = Algorithm 9 |
//! | `dp-oporp` | [`dp_oporp`] | Algorithm 10 |
//! | `dp-signrp-rr`, `dp-signoporp-rr` | [`sign_rr`] | Algorithm 3 with N₊ (Proposition 4.4); on OPORP N₊ = 1 |
//! | `dp-signrp-rr-smooth`, `dp-signoporp-rr-smooth` | [`smooth_flipping`] | Algorithm 4 (Theorem 4.6) |
//! | `idp-signrp-g`, `idp-signrp-rr`, `idp-signoporp-g`, `idp-signoporp-rr` | [`idp_sign`] | Algorithms 6–8, appendix A.3 (individual DP) |
//!
//! Shared by them, below them (no file here imports a mechanism's file): [`public_map`] (the
//! identity, dense or OPORP map, its sensitivity, record and step sizes), [`arithmetic`] (how the
//! projection is computed, and the proof that its rounding is covered by the calibration),
//! [`gaussian_sketch`] (projection + calibrated Gaussian or lattice noise, the inner-product
//! estimator), [`sign_sketch`] (projection, packing of signs 64 per `u64`, the flip rules; what a
//! release records of them in [`sign_record`]) and [`idp_lattice`] (the iDP Gaussian rules'
//! lattice noise). Each mechanism's file builds it (`build`) and rebuilds it from a release
//! (`from_record`) with its own citation.

pub mod arithmetic;
pub mod dp_oporp;
pub mod dp_rp;
pub mod gaussian_sketch;
pub mod idp_lattice;
pub mod idp_sign;
pub mod public_map;
pub mod raw_gaussian;
pub mod sign_record;
pub mod sign_rr;
pub mod sign_sketch;
pub mod smooth_flipping;

use super::{Mechanism, MechanismParams, MechanismRecord, NoiseChoice};
use crate::error::Result;
use crate::mechanism::kind::CentralFile;
use crate::privacy::guarantee::Guarantee;
use crate::projection::Seed;

/// The sketch of `params` (checked by [`super::build_with`]: ε, δ, β, `k` of width `k`, the
/// public seed drawn) by the file that implements its kind: the one dispatch over the central
/// files (a new file adds its arm here and its row in [`super::kind::KIND_TABLE`]).
pub(crate) fn build(
    file: CentralFile,
    params: &MechanismParams,
    k: usize,
    seed: Seed,
    noise: NoiseChoice,
) -> Result<Box<dyn Mechanism>> {
    Ok(match file {
        CentralFile::RawGaussian => Box::new(raw_gaussian::build(params, noise)?),
        CentralFile::DpRp => Box::new(dp_rp::build(params, k, seed, noise)?),
        CentralFile::DpOporp => Box::new(dp_oporp::build(params, k, seed, noise)?),
        CentralFile::SignRr => Box::new(sign_rr::build(params, k, seed)?),
        CentralFile::SmoothFlipping => Box::new(smooth_flipping::build(params, k, seed)?),
        CentralFile::IdpSign => Box::new(idp_sign::build(params, k, seed, noise)?),
    })
}

/// The sketch a release's record describes, rebuilt by the file that implements its kind (with
/// its public map regenerated from the seed).
pub(crate) fn from_record(
    file: CentralFile,
    r: &MechanismRecord,
    g: &Guarantee,
) -> Result<Box<dyn Mechanism>> {
    Ok(match file {
        CentralFile::RawGaussian => Box::new(raw_gaussian::from_record(r, g)?),
        CentralFile::DpRp => Box::new(dp_rp::from_record(r, g)?),
        CentralFile::DpOporp => Box::new(dp_oporp::from_record(r, g)?),
        CentralFile::SignRr => Box::new(sign_rr::from_record(r, g)?),
        CentralFile::SmoothFlipping => Box::new(smooth_flipping::from_record(r, g)?),
        CentralFile::IdpSign => Box::new(idp_sign::from_record(r, g)?),
    })
}
