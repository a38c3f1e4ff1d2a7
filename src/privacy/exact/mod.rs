//! Exact integer samplers for distributed DP: the discrete Gaussian and discrete Laplace
//! (Canonne, Kamath, Steinke 2020), `Bernoulli(exp(−γ))`, and binomials — with no floating point
//! anywhere on the sampling path.
//!
//! The Binomial mechanism (cpSGD) and the distributed discrete Gaussian (Chen et al. 2022) add
//! *integer* noise that is summed under secure aggregation; their privacy theorems are about the
//! exact laws `Bin(N, p)` and `N_ℤ(0, σ²)`. A floating-point approximation of those laws is not
//! covered by the theorems, and floating-point samplers are attackable: Mironov 2012 ("On
//! significance of the least significant bits for differential privacy", CCS) recovers the
//! secret from which doubles a Laplace sampler can and cannot output. So here every parameter
//! is an exact [`Rational`] and every sampler works on integers only: uniform integers drawn
//! without modulo bias, Bernoulli trials decided by comparing random bits with the binary
//! expansion of a rational, counters and popcounts. A test cannot prove the absence of floats;
//! the code keeps them out by construction (integer types throughout; the only `f64` in this
//! module is in the conversions [`Rational::from_f64`], [`Rational::from_f64_up`] and
//! [`Rational::to_f64`], which run before sampling or for display).
//!
//! | sampler | law | method |
//! |---|---|---|
//! | [`Bernoulli`], [`bernoulli`] | `Bernoulli(n/d)` | uniform integer below `d` (Lemire), `< n` |
//! | [`BernoulliExpNeg`], [`bernoulli_exp_neg`] | `Bernoulli(e^{−γ})`, rational `γ ≥ 0` | CKS Algorithm 1 |
//! | [`Geometric`] | `P(k) ∝ e^{−k/τ}` on `ℕ` | CKS Algorithm 2 (first steps) |
//! | [`DiscreteLaplace`], [`fill_discrete_laplace`] | `P(y) ∝ e^{−\|y\|/τ}` on `ℤ` | CKS Algorithm 2 |
//! | [`DiscreteGaussian`], [`discrete_gaussian`], [`fill_discrete_gaussian`] | `P(x) ∝ e^{−x²/(2σ²)}` on `ℤ` | CKS Algorithm 3 |
//! | [`TableGaussian`] | `N_ℤ(0, s²)`, integer `s² ∈ [2^12, 2^62]` | guide-table histogram envelope + exact rejection and exact weight correction (lattice noise, DDG) |
//! | [`binomial_half`], [`fill_binomial_half`] | `Bin(N, ½)` | popcount of CSPRNG words |
//! | [`Binomial`], [`binomial`] | `Bin(N, p)`, rational `p` | all trials at once, digit by digit of `p` |
//! | [`uniform_below`] | uniform on `{0, …, n−1}` | Lemire's multiply-and-reject |
//!
//! **Randomness.** Every sampler is generic over `R: rand::CryptoRng` (a cryptographically
//! secure generator, enforced by the trait bound); dprp draws its secret noise from ChaCha20
//! through [`NoiseSource::row_rng`](crate::privacy::samplers::noise::NoiseSource::row_rng). The
//! results are exact given independent uniform bits; they are as good as the generator.
//!
//! **Parameters and errors.** Constructors (`new`) validate once and return
//! [`Error::Param`] naming the parameter and the supported range; sampling
//! itself cannot fail. Sampler structs hold the precomputed constants; their `fill` methods draw
//! a whole slice with one bit buffer (the fastest way to draw many samples). Integer widths:
//! parameters are `u128` rationals, which cover `σ²` from about `2^-12` to `2^62` converted
//! exactly from `f64` (see [`DiscreteGaussian`] for the precise condition); the one quantity
//! wider than 128 bits, the square in the Gaussian's acceptance test, is a 256-bit product that
//! is only compared and subtracted, never divided.
//!
//! ```
//! use dprp::privacy::exact::{fill_discrete_gaussian, Binomial, Rational};
//! use dprp::privacy::samplers::noise::NoiseSource;
//!
//! # fn main() -> dprp::Result<()> {
//! let mut rng = NoiseSource::from_os()?.row_rng(0);
//! // Distributed discrete Gaussian: σ/γ from an accountant, as an exact rational σ²/γ².
//! let sigma_over_gamma: f64 = 317.2;
//! let sigma2 = Rational::from_f64_up(sigma_over_gamma * sigma_over_gamma, 20)?;
//! let mut noise = vec![0i64; 1000];
//! fill_discrete_gaussian(&mut rng, sigma2, &mut noise)?;
//! // Binomial mechanism: Bin(N, p) per coordinate.
//! let bin = Binomial::new(2000, Rational::new(1, 2)?)?;
//! let z = bin.sample(&mut rng);
//! assert!(z <= 2000);
//! # Ok(())
//! # }
//! ```

mod bernoulli;
mod binomial;
mod bits;
mod gaussian;
mod laplace;
mod near_one;
mod rational;
mod table_gaussian;

pub use bernoulli::{bernoulli, bernoulli_exp_neg, Bernoulli, BernoulliExpNeg};
pub use binomial::{binomial, binomial_half, fill_binomial_half, Binomial};
pub use gaussian::{discrete_gaussian, fill_discrete_gaussian, DiscreteGaussian};
pub use laplace::{fill_discrete_laplace, DiscreteLaplace, Geometric, MAX_MAGNITUDE};
pub use rational::Rational;
pub use table_gaussian::{
    TableGaussian, MAX_S2 as TABLE_GAUSSIAN_MAX_S2, MIN_S2 as TABLE_GAUSSIAN_MIN_S2, WEIGHT_ERROR,
};

use rand::CryptoRng;

use crate::error::{Error, Result};

/// A uniform integer in `{0, …, n−1}`, without modulo bias (Lemire's multiply-and-reject for
/// `n ≤ 2^64`; above, rejection of the smallest covering number of bits). Errors if `n = 0`.
///
/// ```
/// use dprp::privacy::exact::uniform_below;
/// use rand::SeedableRng;
/// let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(9);
/// assert!(uniform_below(&mut rng, 6)? < 6);
/// assert!(uniform_below(&mut rng, 0).is_err());
/// # Ok::<(), dprp::Error>(())
/// ```
pub fn uniform_below<R: CryptoRng + ?Sized>(rng: &mut R, n: u128) -> Result<u128> {
    if n == 0 {
        return Err(Error::param(
            "uniform bound",
            "there is no integer in [0, 0); the bound must be at least 1",
        ));
    }
    Ok(bits::Bits::new(rng).below_u128(n))
}
