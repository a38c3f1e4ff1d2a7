//! The separated composite of Bhowmick et al. eq. (22): a vector `w` in the ball of public radius
//! `R` is released as `M(w) = PrivUnit2(w/‖w‖; ε₁) · ScalarDP(‖w‖; ε₂, k = ⌈e^{ε₂/3}⌉, r_max = R)`.
//!
//! The two factors use independent randomness, so `E[M(w)] = E[PrivUnit2]·E[ScalarDP] =
//! (w/‖w‖)·‖w‖ = w`; for `w = 0` the direction is a uniform random unit vector and
//! `E[ScalarDP(0)] = 0`, so the estimate is still unbiased.
//!
//! **Privacy.** The direction is ε₁-LDP and the magnitude ε₂-LDP (each for any two inputs), so
//! `M` is `(ε₁, ε₂)`-separated DP (an adversary learns the direction only up to ε₁ and the norm only
//! up to ε₂) and, by basic composition, `(ε₁ + ε₂)`-LDP for any two vectors of the ball.
//!
//! **MSE.** `E‖M − w‖² = E‖P‖²·E[S²] − ‖w‖² = (1/m²)·(mse_S(‖w‖) + ‖w‖²) − ‖w‖²`, with `‖P‖ = 1/m`.
//!
//! The direction uses [`PrivUnit2::new`] (the variance-optimal split of ε₁ with the exact cap
//! cost) rather than eq. (22)'s `p = ½` or eq. (23)'s 0.99/0.01 split; any other PrivUnit2 can be
//! passed to [`PrivUnit2Norm::from_parts`].

use super::algorithm::{ErrorKind, LocalAlgorithm};
use super::privunit2::PrivUnit2;
use super::scalar_dp::ScalarDp;
use super::WordRng;
use super::{check_epsilon, check_in_ball, uniform_unit};
use crate::error::{Error, Result};
use crate::privacy::guarantee::InputDomain;
use rand_chacha::ChaCha20Rng;

/// Citation recorded with releases.
pub const ALGORITHM: &str =
    "PrivUnit2 × ScalarDP (Bhowmick et al. 2018, eq. (22)); (ε₁, ε₂)-separated, (ε₁+ε₂)-LDP";

/// The composite mechanism; both parts are public.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrivUnit2Norm {
    /// The direction mechanism (ε₁ = `direction.epsilon`).
    pub direction: PrivUnit2,
    /// The magnitude mechanism (ε₂ = `magnitude.epsilon`, `r_max = R`).
    pub magnitude: ScalarDp,
}

impl PrivUnit2Norm {
    /// The composite for vectors of norm at most `radius` in `R^d`, with ε₁ for the direction and
    /// ε₂ for the magnitude.
    pub fn new(epsilon1: f64, epsilon2: f64, d: usize, radius: f64) -> Result<PrivUnit2Norm> {
        check_epsilon("epsilon1", epsilon1)?;
        check_epsilon("epsilon2", epsilon2)?;
        Ok(PrivUnit2Norm {
            direction: PrivUnit2::new(epsilon1, d)?,
            magnitude: ScalarDp::new(epsilon2, radius)?,
        })
    }

    /// The composite from given parts.
    pub fn from_parts(direction: PrivUnit2, magnitude: ScalarDp) -> PrivUnit2Norm {
        PrivUnit2Norm {
            direction,
            magnitude,
        }
    }

    /// The public radius `R`.
    pub fn radius(&self) -> f64 {
        self.magnitude.r_max
    }

    /// The total guarantee `ε₁ + ε₂` (LDP, replace-one).
    pub fn epsilon(&self) -> f64 {
        self.direction.epsilon + self.magnitude.epsilon
    }

    /// Closed-form `E‖M(w) − w‖²` for `‖w‖ = norm ≤ R`.
    pub fn mse(&self, norm: f64) -> Result<f64> {
        let r = self.magnitude.check(norm)?;
        let inv_m2 = 1.0 / (self.direction.m * self.direction.m);
        Ok(inv_m2 * (self.magnitude.mse(r)? + r * r) - r * r)
    }

    /// Privatise `w` (`‖w‖ ≤ R`, finite coordinates).
    pub fn privatize<R: WordRng + ?Sized>(&self, w: &[f64], rng: &mut R) -> Result<Vec<f64>> {
        let d = self.direction.d;
        let norm = check_in_ball(w, d, self.radius())?;
        let u = if norm > 0.0 {
            w.iter().map(|x| x / norm).collect()
        } else {
            uniform_unit(d, rng)
        };
        let s = self.magnitude.privatize(norm.min(self.radius()), rng)?;
        let mut z = self.direction.sample_on_sphere(&u, rng)?;
        z.iter_mut().for_each(|x| *x *= s);
        if z.iter().any(|x| !x.is_finite()) {
            return Err(Error::param("PrivUnit2Norm", "non-finite output"));
        }
        Ok(z)
    }
}

impl LocalAlgorithm for PrivUnit2Norm {
    fn algorithm(&self) -> &'static str {
        ALGORITHM
    }
    fn epsilon(&self) -> f64 {
        PrivUnit2Norm::epsilon(self)
    }
    fn separated(&self) -> Option<(f64, f64)> {
        Some((self.direction.epsilon, self.magnitude.epsilon))
    }
    fn domain(&self) -> InputDomain {
        InputDomain::Ball {
            radius: self.radius(),
        }
    }
    fn constants(&self) -> Vec<(String, f64)> {
        let mut v = self.direction.constants();
        v.extend(self.magnitude.constants());
        v
    }
    fn decoder(&self) -> &'static str {
        "mean of the rows (direction and norm estimates independent, unbiased)"
    }
    fn client(&self, _id: u64, v: &[f64], rng: &mut ChaCha20Rng) -> Result<Vec<f64>> {
        self.privatize(v, rng)
    }
    fn mse_per_user(&self) -> (f64, ErrorKind) {
        (
            self.mse(self.radius()).unwrap_or(f64::NAN),
            ErrorKind::Exact,
        )
    }
    fn mse_note(&self) -> String {
        format!(
            "exact for inputs of norm R = {} (the error depends on the norm)",
            self.radius()
        )
    }
}
