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
