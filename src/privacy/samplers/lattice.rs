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
                *v = ((round_half_away(t) + zi as f64) * down) as f32;
            }
        }
        Ok(())
    }
}

/// `t.round()` (to nearest, ties away from zero) without the library call `round` that the
/// baseline x86-64 target compiles it to (2–3% of a publish at k = 1024): for `|t| < 2^51`,
/// adding and subtracting `1.5·2^52` rounds to nearest with ties to even exactly, a tie (the
/// difference is exactly ½) is moved away from zero, and the sign of a zero result is `t`'s, as
/// `round` gives it. Larger values (and NaN) take `round` itself.
#[inline]
pub fn round_half_away(t: f64) -> f64 {
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5·2^52
    if t.is_nan() || t.abs() >= 2_251_799_813_685_248.0 {
        // 2^51
        return t.round();
    }
    let r = (t + MAGIC) - MAGIC;
    if (t - r).abs() == 0.5 {
        t + 0.5f64.copysign(t)
    } else {
        r.copysign(t)
    }
}

#[cfg(test)]
mod tests {
    use super::round_half_away;

    #[test]
    fn round_half_away_is_round_bit_for_bit() {
        let mut cases = vec![
            0.0,
            -0.0,
            0.3,
            -0.3,
            0.5,
            -0.5,
            1.5,
            2.5,
            -2.5,
            3.5,
            -3.5,
            0.49999999999999994,
            -0.49999999999999994,
            4_503_599_627_370_495.5,
            2_251_799_813_685_247.5,
            -2_251_799_813_685_247.5,
            2_251_799_813_685_248.0,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        // a deterministic spread of magnitudes and fractions, ties included
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mant = (x >> 12) as f64 / (1u64 << 52) as f64;
            let scale = 2f64.powi((x % 60) as i32);
            let v = mant * scale * if x & 1 == 1 { -1.0 } else { 1.0 };
            cases.push(v);
            cases.push((v * 2.0).round() / 2.0); // integers and halves
        }
        for t in cases {
            assert_eq!(round_half_away(t).to_bits(), t.round().to_bits(), "{t:e}");
        }
        assert!(round_half_away(f64::NAN).is_nan());
    }
}
