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
    ///
    /// Per 512 values: one branch-free pass scales and checks them (the compiler vectorises
    /// it), the sampler fills their `Z` (its tables stay in cache while it runs), and a second
    /// branch-free pass rounds, adds and converts.
    pub fn add(&self, y: &[f64], out: &mut [f32], rng: &mut ChaCha20Rng) -> Result<()> {
        const CHUNK: usize = 512;
        let up = libm::ldexp(1.0, self.g);
        let down = libm::ldexp(1.0, -self.g);
        let mut z = [0i64; CHUNK];
        let mut t = [0f64; CHUNK];
        // the same keystream words as `rng`, computed eight blocks at a time
        let mut fast = crate::rng::chacha::BufferedChaCha::new(rng);
        for (chunk, ys) in out.chunks_mut(CHUNK).zip(y.chunks(CHUNK)) {
            let (z, t) = (&mut z[..chunk.len()], &mut t[..chunk.len()]);
            let mut outside = false;
            for (ti, &yv) in t.iter_mut().zip(ys) {
                *ti = yv * up;
                outside |= off_lattice(*ti);
            }
            if outside {
                let yv = ys
                    .iter()
                    .find(|&&yv| off_lattice(yv * up))
                    .copied()
                    .unwrap_or(f64::NAN);
                return Err(Error::param(
                    "lattice noise",
                    format!(
                        "the projected value {yv} times 2^{} does not fit the lattice's \
                         integers (|y|·2^g < 2^52); use a larger ‹beta› or ‹noise float›",
                        self.g
                    ),
                ));
            }
            self.sampler.fill(&mut fast, z);
            for ((v, &ti), &zi) in chunk.iter_mut().zip(t.iter()).zip(z.iter()) {
                // |round(t)| ≤ 2^52 and |Z| < 2^40 (s < 2^31, far tails aside: the sum stays
                // exact below 2^53 unless Z exceeds 2^52, probability e^{-2^40})
                *v = ((round_below_2_52(ti) + zi as f64) * down) as f32;
            }
        }
        Ok(())
    }
}

/// Whether `t = y·2^g` is NaN or too large for the lattice's integers (`|t| ≥ 2^52`), without
/// a branch (`|`, not `||`: the scaling pass stays vectorised).
#[inline]
fn off_lattice(t: f64) -> bool {
    t.is_nan() | (t.abs() >= LATTICE_LIMIT)
}

/// `t.round()` (to nearest, ties away from zero) without the library call `round` that the
/// baseline x86-64 target compiles it to (2–3% of a publish at k = 1024), branch-free for
/// `|t| < 2^52` ([`round_below_2_52`]); larger values (and NaN) take `round` itself.
#[inline]
pub fn round_half_away(t: f64) -> f64 {
    if t.abs() < 4_503_599_627_370_496.0 {
        // 2^52 (NaN compares false)
        round_below_2_52(t)
    } else {
        t.round()
    }
}

/// `t.round()` for `|t| < 2^52`, in branch-free arithmetic the compiler vectorises: with
/// `a = |t|`, `a + 2^52` lies in `[2^52, 2^53)` where the spacing is 1, so `(a + 2^52) − 2^52`
/// is `a` rounded to nearest with ties to even, exactly; `a − r` is then exact (both within
/// one of each other), and a tie (`a − r = ½`, rounded down to even) is moved up, away from
/// zero; the sign is `t`'s, so `−0.3` gives `−0`, as `round` does. Outside that range the
/// result is meaningless (callers check the range first).
#[inline]
pub fn round_below_2_52(t: f64) -> f64 {
    const TWO_52: f64 = 4_503_599_627_370_496.0;
    let a = t.abs();
    let r = (a + TWO_52) - TWO_52;
    let r = r + if a - r == 0.5 { 1.0 } else { 0.0 };
    r.copysign(t)
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
