//! The outcome of one repeat of `dprp eval mean`, local ([`super::mean`]) or distributed
//! ([`super::mean_distributed`]), before the repeats are summarised.

use crate::mechanism::local::algorithm::ErrorKind;

/// The outcome of one repeat.
pub(super) struct Repeat {
    pub(super) sq_error: f64,
    pub(super) expected: f64,
    pub(super) error_kind: ErrorKind,
    pub(super) per_user: Vec<f64>,
    pub(super) client_per_user: Option<f64>,
    pub(super) server: f64,
    pub(super) seeds: String,
    /// Distributed mechanisms: what the plan chose and whether the sum wrapped.
    pub(super) distributed: Option<DistributedOutcome>,
}

/// What a distributed repeat adds to a [`Repeat`].
pub(super) struct DistributedOutcome {
    pub(super) bits_per_parameter: f64,
    pub(super) sketch_m: Option<u64>,
    pub(super) wrapped: u64,
}
