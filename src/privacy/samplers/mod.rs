//! Samplers: given exact, already calibrated parameters, draw — and nothing else. How the
//! parameters follow from a privacy budget (the accountants: [`super::gaussian`],
//! [`super::lattice`], [`super::rr`], [`super::coin`], [`super::nplus`], [`super::zcdp`]) lives
//! beside this folder, never in it; OpenDP keeps its samplers apart from its measurements in the
//! same way. `tests/layers.rs` checks that nothing here names an accountant.
//!
//! - [`noise`]: the CSPRNG that draws secret noise (OS-seeded ChaCha20, one stream per row).
//! - [`flip`]: the sign flips' Bernoulli(`Q/2⁶⁴`) coin.
//! - [`coin`]: the local-DP mechanisms' Bernoulli(`T/2¹²⁸`) coin.
//! - [`lattice`]: lattice noise `γ·(round(y/γ) + Z)`, `Z` a discrete Gaussian.
//!
//! The integer samplers with rational parameters (discrete Gaussian and Laplace,
//! Bernoulli(e^{−γ}), binomials) are [`super::exact`].

pub mod coin;
pub mod flip;
pub mod lattice;
pub mod noise;
