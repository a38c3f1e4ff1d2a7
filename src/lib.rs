//! # dprp — differentially private random-projection sketches
//!
//! Publish feature vectors as private sketches (random projections with calibrated Gaussian
//! noise, or sign bits with randomised response) and still use them: nearest-neighbour search,
//! inner-product estimates with standard errors, linear classifiers, and utility evaluation.
//!
//! The pipeline flows one way, and so do the modules. The floors, bottom up — a module imports
//! from its own floor and the ones below, never from above, and no import circle crosses a
//! folder (`tests/layers.rs` reads every `crate::` and `super::` path and checks both, against
//! its `FLOORS`, which this table must show):
//!
//! ```text
//!      (front ends, in their own crates: cli/ the `dprp` command, python/ the Python module;
//!       they parse options, call the request layer and print or convert its reports)
//!  10 audit, eval, request     measure a mechanism (empirical ε, utility experiments); requests:
//!                              options as users give them → validated objects, for every front end
//!   9 publish, learn           the streaming publish pipeline; linear SVM on sketches
//!   8 ledger, search, export   the privacy budget ledger; exact and HNSW search of releases,
//!                              re-ranking with error bars; releases loaded into PostgreSQL
//!   7 release                  the sketch file: format, writer, memory-mapped reader, shards
//!   6 mechanism                the three families, one room each:
//!       central/                 sketches a data holder publishes (Gaussian, sign + RR)
//!       local/                   each user privatises their own vector; decoder, accumulator
//!       distributed/             client encoders, accountants, secure aggregation, the round
//!   5 estimate                 inner-product estimators and their variances
//!   4 privacy                  calibration, accountants, the guarantee; samplers (exact/, coin)
//!   3 projection               public maps regenerated from a seed
//!   2 data                     readers, validation, scaling, the input domain
//!   1 rng                      seeds, ChaCha20 keystream, normal sampler
//!   0 error, atomic            errors; whole-or-nothing outputs
//! ```
//!
//! Where is DP-OPORP calibrated? [`mechanism::central::dp_oporp`]. Where is the analytic Gaussian σ
//! computed? [`privacy::gaussian::analytic_sigma`]. The privacy model is stated in
//! [`privacy::guarantee`].
//!
//! The library mirrors the commands: publish, open a release, search it, estimate with error bars.
//! Local-DP mean estimation (each user privatises their own vector; a server averages) is in
//! [`mechanism::local`] (the mechanisms) and [`mechanism::local::accumulator`] (the streaming,
//! mergeable mean); distributed DP (clients add small integer noise, a secure sum reveals only
//! the total) in [`mechanism::distributed`], whose round is [`mechanism::distributed::round`].
//!
//! ```
//! use dprp::data::{native, sample};
//! use dprp::estimate::estimate_ip;
//! use dprp::mechanism::{from_record, MechanismKind, MechanismParams};
//! use dprp::privacy::samplers::noise::NoiseSource;
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
//!     // β = 1, one-coordinate neighbours, p from the input, a fresh public seed: the defaults
//!     params: MechanismParams {
//!         delta: Some(1e-6),
//!         k: Some(32),
//!         ..MechanismParams::of(MechanismKind::DpOporp, 10.0)
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
//! let e = estimate_ip(&mechanism.as_sketch()?.estimator(), release.row(0)?, release.row(1)?, None)
//!     .expect("a Gaussian release has an inner-product estimator");
//! println!("⟨u0,u1⟩ ≈ {:.2} ± {:.2} ({})", e.inner_product, e.se, e.formula);
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod atomic;
pub mod audit;
pub mod data;
pub mod error;
pub mod estimate;
pub mod eval;
pub mod export;
pub mod learn;
pub mod ledger;
pub mod mechanism;
pub mod privacy;
pub mod projection;
pub mod publish;
pub mod release;
pub mod request;
pub mod rng;
pub mod search;

pub use error::{Error, Result};
