//! Lattice noise as a sampler: `γ·(round(y/γ) + Z)` with `Z ~ N_ℤ(0, s²)` drawn by the exact
//! table sampler ([`TableGaussian`]) in integer arithmetic, for a recorded `γ = 2^-g` and `s²`.
//! Why this is (ε, δ)-DP and how `g` and `s²` are chosen is the accountant's part,
//! [`crate::privacy::lattice`].

use rand_chacha::ChaCha20Rng;

use crate::error::{Error, Result};
use crate::privacy::exact::TableGaussian;

/// `|y|·2^g` must stay below this (so `r + Z` and `γ(r + Z)` are exact in f64).
pub const LATTICE_LIMIT: f64 = 4_503_599_627_370_496.0; // 2^52

/// Lattice noise ready to draw: `γ = 2^-g` and the sampler for `N_ℤ(0, s²)`.
#[derive(Debug, Clone)]
pub struct LatticeNoise {
    g: i32,
    sampler: TableGaussian,
}

impl LatticeNoise {
    /// From a recorded `g` and `s²`.
    pub fn new(g: i32, s_squared: u64) -> Result<LatticeNoise> {
        Ok(LatticeNoise {
            g,
            sampler: TableGaussian::new(s_squared)?,
        })
    }

    /// `g`.
    pub fn g(&self) -> i32 {
        self.g
    }

    /// The sampler.
    pub fn sampler(&self) -> &TableGaussian {
        &self.sampler
    }

    /// `out_j = γ·(round(y_j/γ) + Z_j)`, rounded once to f32, for the computed values `y` (f64:
    /// rounding them to f32 first would add `2⁻²⁴|y_j|` of error). Errors (naming the value) if
    /// `|y|·2^g ≥ 2^52`; `out` may then be partly noised and must be discarded (the publisher
    /// removes the output file on any error).
    pub fn add(&self, y: &[f64], out: &mut [f32], rng: &mut ChaCha20Rng) -> Result<()> {
        let up = libm::ldexp(1.0, self.g);
        let down = libm::ldexp(1.0, -self.g);
        let mut z = [0i64; 512];
        // the same keystream words as `rng`, computed eight blocks at a time
        let mut fast = crate::rng::chacha::BufferedChaCha::new(rng);
        for (chunk, ys) in out.chunks_mut(z.len()).zip(y.chunks(z.len())) {
            let z = &mut z[..chunk.len()];
            self.sampler.fill(&mut fast, z);
            for ((v, &yv), &zi) in chunk.iter_mut().zip(ys).zip(z.iter()) {
                let t = yv * up;
                if t.is_nan() || t.abs() >= LATTICE_LIMIT {
                    return Err(Error::param(
                        "lattice noise",
                        format!(
                            "the projected value {yv} times 2^{} does not fit the lattice's \
                             integers (|y|·2^g < 2^52); use a larger --beta or --noise float",
                            self.g
                        ),
                    ));
                }
                // |round(t)| < 2^52 and |Z| < 2^40 (s < 2^31, far tails aside: the sum stays
                // exact below 2^53 unless Z exceeds 2^52, probability e^{-2^40})
                *v = ((t.round() + zi as f64) * down) as f32;
            }
        }
        Ok(())
    }
}
