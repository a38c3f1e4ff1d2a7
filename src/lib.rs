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
//! Where is DP-OPORP calibrated? [`mechanism::dp_oporp`]. Where is the analytic Gaussian σ
//! computed? [`privacy::gaussian::analytic_sigma`]. The privacy model is stated in
//! [`privacy::guarantee`].

#![warn(missing_docs)]

pub mod atomic;
pub mod cli;
pub mod data;
pub mod error;
pub mod estimate;
pub mod mechanism;
pub mod privacy;
pub mod projection;
pub mod publish;
pub mod release;
pub mod search;

pub use error::{Error, Result};
