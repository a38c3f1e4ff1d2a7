//! # dprp — differentially private random-projection sketches
//!
//! Publish feature vectors as private sketches (random projections with calibrated Gaussian
//! noise, or sign bits with randomised response) and still use them: nearest-neighbour search,
//! inner-product estimates with standard errors, linear classifiers, and utility evaluation.
//!
//! The pipeline flows one way, and so do the modules:
//!
//! ```text
//! data (load, validate, scale) → projection (public, seeded) → privacy (calibration)
//!      → mechanism (privatise rows) → release (sketch file) → estimate / query / eval
//! ```
//!
//! The lower floors import nothing from above (`tests/layers.rs` reads the `crate::` paths):
//! `error`, `atomic` → [`rng`] (seeds, generators, the ChaCha20 keystream) → [`data`] (readers,
//! scaling, the input domain) → [`projection`] (public maps) → [`privacy`] (calibration,
//! samplers, accountants, the guarantee). Above them the families and front ends are being given
//! rooms of their own (issue 27).
//!
//! Where is DP-OPORP calibrated? [`mechanism::dp_oporp`]. Where is the analytic Gaussian σ
//! computed? [`privacy::gaussian::analytic_sigma`]. The privacy model is stated in
//! [`privacy::guarantee`].

//!
//! The library mirrors the commands: publish, open a release, search it, estimate with error bars.
//! Local-DP mean estimation (each user privatises their own vector; a server averages) is in
//! [`mechanism::local`] (the mechanisms) and [`aggregate`] (the streaming, mergeable mean).
//!
//! ```
//! use dprp::data::{native, sample};
//! use dprp::estimate::estimate_ip;
//! use dprp::mechanism::{from_record, MechanismKind, MechanismParams};
//! use dprp::privacy::{guarantee::Neighbour, noise::NoiseSource};
//! use dprp::publish::{publish, PublishRequest};
//! use dprp::release::Release;
//! use dprp::search::{exact, Measure, Sketch};
//!
//! # fn main() -> dprp::Result<()> {
//! let dir = tempfile::tempdir().map_err(|e| dprp::Error::io("tmp", e))?;
//! let input = dir.path().join("sample.bin");
//! native::write(&input, &sample::generate())?; // 2000 rows × 64 features in [0,1]
//! let request = PublishRequest {
//!     input,
//!     input_opts: Default::default(),
//!     scaling: Default::default(),
//!     params: MechanismParams {
//!         kind: MechanismKind::DpOporp,
//!         epsilon: 10.0,
//!         delta: Some(1e-6),
//!         beta: 1.0,
//!         neighbour: Neighbour::Coordinate,
//!         p: 0, // taken from the input
//!         k: Some(32),
//!         projection: None,
//!         seed: None,
//!         min_norm: None,
//!         individual_dp: false,
//!         local: Default::default(),
//!     },
//!     output: dir.path().join("sample.dprp"),
//! };
//! publish(&request, &NoiseSource::from_os()?)?;
//!
//! // Anyone holding the release: open (checksum verified, memory-mapped), search, estimate.
//! let release = Release::open(&dir.path().join("sample.dprp"))?;
//! let db = Sketch::Real { data: release.values()?, k: release.k() };
//! let hits = exact::search(&db, &db, Measure::Cosine, 5, None)?;
//! assert_eq!(hits.len(), 2000);
//! let mechanism = from_record(&release.meta().mechanism, &release.meta().guarantee)?;
//! let e = estimate_ip(&mechanism.estimator()?, release.row(0)?, release.row(1)?, None)
//!     .expect("a Gaussian release has an inner-product estimator");
//! println!("⟨u0,u1⟩ ≈ {:.2} ± {:.2} ({})", e.inner_product, e.se, e.formula);
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod aggregate;
pub mod atomic;
pub mod audit;
pub mod cli;
pub mod data;
pub mod error;
pub mod estimate;
pub mod eval;
pub mod learn;
pub mod ledger;
pub mod mechanism;
pub mod privacy;
pub mod projection;
pub mod publish;
pub mod release;
pub mod rng;
pub mod search;

pub use error::{Error, Result};
