//! Privacy accounting: calibration of noise to a guarantee, the guarantee itself, and the noise
//! source.
//!
//! - [`gaussian`]: the normal CDF in log space, the classical (Theorem 3.1) and analytic
//!   (Theorem 3.2, Balle & Wang 2018) Gaussian mechanisms.
//! - [`guarantee`]: the privacy model (neighbour relation, guarantee kinds) and its plain-language
//!   statement.
//! - [`noise`]: the CSPRNG that draws secret noise (OS-seeded ChaCha20).
//! - [`nplus`]: `N₊` (Proposition 4.4), the high-probability bound on how many signs one neighbour
//!   can flip, for DP-SignRP-RR.
//! - [`rr`]: randomised response and smooth flipping on signs.
//! - [`special`]: log-space special functions (normal tail and quantile, incomplete beta) for the
//!   local-DP mechanisms.

pub mod chacha;
pub mod gaussian;
pub mod guarantee;
pub mod noise;
pub mod nplus;
pub mod rr;
pub mod special;
