//! The randomised Hadamard rotation `U = (H/√d')·D` that flattens a vector before integer
//! rounding (Kairouz et al. 2021, "The Distributed Discrete Gaussian Mechanism for Federated
//! Learning with Secure Aggregation", §4: after `U` every coordinate of `Ux` is of order
//! `‖x‖/√d'` with high probability, so rounding and modular wrap-around treat all coordinates
//! alike; the same rotation is cpSGD's `R = H·D` in π_sk).
//!
//! `x ∈ R^d` is zero-padded to `d' = 2^⌈log₂ d⌉`; `D` is a Rademacher diagonal regenerated from the
//! public seed (stream [`FLATTEN_STREAM`], one bit per padded coordinate, bit `i mod 64` of 64-bit
//! word `i / 64`, 1 → +1, as the other sign streams of [`crate::projection`]). `U` is orthogonal,
//! so the server inverts it with `Uᵀ = D·(H/√d')` and drops the padding.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::hadamard::{fwht_normalized, next_pow2};
use super::Seed;
use crate::error::{Error, Result};

/// The ChaCha20 stream of the flattening signs.
pub const FLATTEN_STREAM: u64 = 9;

/// `U = (H/√d')·D` on `R^{d'}`, regenerated from a public seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Flatten {
    d: usize,
    d_pad: usize,
    sign_bits: Vec<u64>,
}

impl Flatten {
    /// The rotation of `R^d` (padded to `d'`) for `seed`.
    pub fn new(d: usize, seed: Seed) -> Result<Flatten> {
        if d == 0 {
            return Err(Error::param("dimension", "a rotation needs d ≥ 1"));
        }
        let d_pad = next_pow2(d)?;
        super::check_map_bytes(&format!("a rotation of d = {d}"), d_pad as u128 / 8)?;
        let mut rng = ChaCha20Rng::from_seed(seed.0);
        rng.set_stream(FLATTEN_STREAM);
        let sign_bits = (0..d_pad.div_ceil(64)).map(|_| rng.next_u64()).collect();
        Ok(Flatten {
            d,
            d_pad,
            sign_bits,
        })
    }
    /// Input dimension `d`.
    pub fn d(&self) -> usize {
        self.d
    }
    /// Padded (rotated) dimension `d'`.
    pub fn d_pad(&self) -> usize {
        self.d_pad
    }

    fn apply_signs(&self, x: &mut [f64]) {
        for (i, v) in x.iter_mut().enumerate() {
            if (self.sign_bits[i / 64] >> (i % 64)) & 1 == 0 {
                *v = -*v;
            }
        }
    }

    /// `U·(x, 0…0)` scaled by `s` (length `d'`).
    pub fn rotate_scaled(&self, x: &[f64], s: f64) -> Result<Vec<f64>> {
        if x.len() != self.d {
            return Err(Error::param(
                "vector",
                format!(
                    "a vector of {} values given to a rotation of R^{}",
                    x.len(),
                    self.d
                ),
            ));
        }
        let mut v = vec![0.0; self.d_pad];
        for (o, &a) in v.iter_mut().zip(x) {
            *o = a * s;
        }
        self.apply_signs(&mut v);
        fwht_normalized(&mut v)?;
        Ok(v)
    }

    /// `Uᵀ·y` with the padding dropped (length `d`); `y` has length `d'` and is overwritten.
    pub fn unrotate(&self, y: &mut [f64]) -> Result<Vec<f64>> {
        if y.len() != self.d_pad {
            return Err(Error::param(
                "vector",
                format!(
                    "{} values given to the inverse of a rotation of R^{}",
                    y.len(),
                    self.d_pad
                ),
            ));
        }
        fwht_normalized(y)?;
        self.apply_signs(y);
        Ok(y[..self.d].to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_is_orthogonal_and_inverted() {
        let f = Flatten::new(100, Seed([4; 32])).unwrap();
        assert_eq!(f.d_pad(), 128);
        let x: Vec<f64> = (0..100).map(|i| (i as f64 * 0.37).sin()).collect();
        let mut y = f.rotate_scaled(&x, 2.0).unwrap();
        let nx: f64 = x.iter().map(|v| v * v).sum();
        let ny: f64 = y.iter().map(|v| v * v).sum();
        assert!((ny - 4.0 * nx).abs() < 1e-9 * nx);
        let back = f.unrotate(&mut y).unwrap();
        for (a, b) in back.iter().zip(&x) {
            assert!((a - 2.0 * b).abs() < 1e-12);
        }
        // flattening: a spike is spread evenly
        let mut e = vec![0.0; 100];
        e[3] = 1.0;
        let y = f.rotate_scaled(&e, 1.0).unwrap();
        for v in y {
            assert!((v.abs() - 1.0 / 128f64.sqrt()).abs() < 1e-12);
        }
        // the signs come from the seed: another seed gives another rotation
        let g = Flatten::new(100, Seed([5; 32])).unwrap();
        assert_ne!(
            g.rotate_scaled(&x, 1.0).unwrap(),
            f.rotate_scaled(&x, 1.0).unwrap()
        );
        assert!(f.rotate_scaled(&x[..99], 1.0).is_err());
        assert!(Flatten::new(0, Seed([4; 32])).is_err());
    }
}
