//! Privacy accounting: calibration of noise to a guarantee, the guarantee itself, and the noise
//! source.
//!
//! - [`exact`]: exact integer samplers (discrete Gaussian and Laplace, Bernoulli(exp(−γ)),
//!   binomials) with rational parameters and no floating point, for distributed DP.
//! - [`coin`]: exact Bernoulli coins for the local-DP mechanisms' branch and keep decisions,
//!   rounded toward privacy.
//! - [`gaussian`]: the normal CDF in log space, the classical (Theorem 3.1) and analytic
//!   (Theorem 3.2, Balle & Wang 2018) Gaussian mechanisms.
//! - [`lattice`]: the default noise of the Gaussian mechanisms — a discrete Gaussian on the
//!   lattice `γℤ`, sampled with integer arithmetic, and its privacy argument.
//! - [`guarantee`]: the privacy model (neighbour relation, guarantee kinds) and its plain-language
//!   statement.
//! - [`noise`]: the CSPRNG that draws secret noise (OS-seeded ChaCha20).
//! - [`nplus`]: `N₊` (Proposition 4.4), the high-probability bound on how many signs one neighbour
//!   can flip, for DP-SignRP-RR.
//! - [`rr`]: randomised response and smooth flipping on signs.
//! - [`special`]: log-space special functions (normal tail and quantile, incomplete beta) for the
//!   local-DP mechanisms.
//! - [`zcdp`]: ρ-zCDP → (ε, δ)-DP, the tight conversion of Canonne, Kamath & Steinke 2020.

/// The multi-block ChaCha20 keystream, in [`crate::rng`] since issue 27 (re-exported here).
pub use crate::rng::chacha;
pub mod coin;
pub mod exact;
pub mod gaussian;
pub mod guarantee;
pub mod lattice;
pub mod noise;
pub mod nplus;
pub mod rr;
pub mod special;
pub mod zcdp;
