//! Privacy: the accountants (calibration of noise to a guarantee, the guarantee itself) and,
//! apart from them, the samplers that draw the noise.
//!
//! - [`samplers`]: given calibrated parameters, draw — the noise CSPRNG, the sign flips' and the
//!   local mechanisms' exact coins, lattice noise. Nothing there names an accountant.
//! - [`exact`]: exact integer samplers (discrete Gaussian and Laplace, Bernoulli(exp(−γ)),
//!   binomials) with rational parameters and no floating point, for distributed DP.
//! - [`coin`]: the local-DP mechanisms' branch and keep coins, their thresholds computed from
//!   the budget and rounded toward privacy.
//! - [`gaussian`]: the normal CDF in log space, the classical (Theorem 3.1) and analytic
//!   (Theorem 3.2, Balle & Wang 2018) Gaussian mechanisms.
//! - [`lattice`]: the default noise of the Gaussian mechanisms — a discrete Gaussian on the
//!   lattice `γℤ` — its privacy argument, γ and s² (the sampler is [`samplers::lattice`]).
//! - [`guarantee`]: the privacy model (neighbour relation, guarantee kinds) and its plain-language
//!   statement.
//! - [`nplus`]: `N₊` (Proposition 4.4), the high-probability bound on how many signs one neighbour
//!   can flip, for DP-SignRP-RR.
//! - [`rounds`]: composition over the rounds of federated training, against a budget given
//!   up front (zCDP for the DDG family, basic composition for the Binomial and local DP).
//! - [`rr`]: randomised response and smooth flipping on signs: the flip thresholds from ε'.
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
pub mod nplus;
pub mod rounds;
pub mod rr;
pub mod samplers;
pub mod special;
pub mod zcdp;
