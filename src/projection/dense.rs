//! Dense random projections `x = Wᵀu/√k` with i.i.d. entries (DESIGN.md §3).

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::{unit_f64, DenseKind, Seed};
use crate::error::{Error, Result};

/// Largest `p·k` we are willing to materialise ([`MAX_MAP_BYTES`](super::MAX_MAP_BYTES) of f32:
/// 2^30 entries).
pub const MAX_ENTRIES: usize = (super::MAX_MAP_BYTES / 4) as usize;

/// A dense projection matrix `W ∈ R^{p×k}` (stored unscaled, row-major: input coordinate `i`,
/// output `j`), applied as `x = Wᵀu/√k`.
#[derive(Debug, Clone)]
pub struct DenseProjection {
    kind: DenseKind,
    p: usize,
    k: usize,
    seed: Seed,
    w: Vec<f32>,
}

impl DenseProjection {
    /// Regenerate `W` from the public seed (layout documented in [`crate::projection`]).
    pub fn generate(kind: DenseKind, p: usize, k: usize, seed: Seed) -> Result<DenseProjection> {
        if p == 0 || k == 0 {
            return Err(Error::param("--k", "p and k must both be at least 1"));
        }
        let total = p
            .checked_mul(k)
            .filter(|&t| t <= MAX_ENTRIES)
            .ok_or_else(|| {
                Error::param(
                    "--k",
                    format!("a {p}×{k} dense projection is too large to hold in memory"),
                )
            })?;
        let mut rng = ChaCha20Rng::from_seed(seed.0);
        rng.set_stream(0);
        let mut w = super::alloc_map(&format!("a {p}×{k} dense projection"), total, 0f32)?;
        match kind {
            DenseKind::Rademacher => {
                for chunk in w.chunks_mut(64) {
                    let bits = rng.next_u64();
                    for (b, e) in chunk.iter_mut().enumerate() {
                        *e = if (bits >> b) & 1 == 1 { 1.0 } else { -1.0 };
                    }
                }
            }
            DenseKind::Gaussian => {
                for pair in w.chunks_mut(2) {
                    let u1 = 1.0 - unit_f64(rng.next_u64()); // (0, 1]
                    let u2 = unit_f64(rng.next_u64());
                    let r = libm::sqrt(-2.0 * libm::log(u1));
                    let a = 2.0 * std::f64::consts::PI * u2;
                    pair[0] = (r * libm::cos(a)) as f32;
                    if pair.len() > 1 {
                        pair[1] = (r * libm::sin(a)) as f32;
                    }
                }
            }
            DenseKind::Uniform => {
                let c = 3f64.sqrt();
                for e in w.iter_mut() {
                    *e = (c * (2.0 * unit_f64(rng.next_u64()) - 1.0)) as f32;
                }
            }
            DenseKind::Sparse { s } => {
                let v = s.sqrt() as f32;
                let half = 1.0 / (2.0 * s);
                for e in w.iter_mut() {
                    let u = unit_f64(rng.next_u64());
                    *e = if u < half {
                        -v
                    } else if u < 2.0 * half {
                        v
                    } else {
                        0.0
                    };
                }
            }
        }
        Ok(DenseProjection {
            kind,
            p,
            k,
            seed,
            w,
        })
    }

    /// Entry distribution.
    pub fn kind(&self) -> DenseKind {
        self.kind
    }
    /// Input dimension.
    pub fn p(&self) -> usize {
        self.p
    }
    /// Output dimension.
    pub fn k(&self) -> usize {
        self.k
    }
    /// Public seed.
    pub fn seed(&self) -> Seed {
        self.seed
    }
    /// The unscaled entries, row-major `p×k`.
    pub fn entries(&self) -> &[f32] {
        &self.w
    }

    /// `max_i ‖W[i,:]‖₂` over input coordinates, computed from the actual matrix.
    pub fn max_row_norm(&self) -> f64 {
        self.w
            .chunks(self.k)
            .map(|row| {
                row.iter()
                    .map(|&x| (x as f64) * (x as f64))
                    .sum::<f64>()
                    .sqrt()
            })
            .fold(0.0, f64::max)
    }

    /// ℓ₂-sensitivity of `u ↦ Wᵀu/√k` under β-adjacency (one coordinate changes by ≤ β, or the ℓ₁
    /// generalisation): `Δ₂ = (β/√k)·max_i ‖W[i,:]‖₂` (DESIGN.md §4).
    pub fn sensitivity(&self, beta: f64) -> f64 {
        beta / (self.k as f64).sqrt() * self.max_row_norm()
    }

    /// `out (m×k) = rows (m×p) · W / √k`. `rows.len()` must be `m·p` and `out.len()` `m·k`.
    pub fn project(&self, rows: &[f32], out: &mut [f32]) {
        let m = rows.len() / self.p;
        debug_assert_eq!(m * self.p, rows.len());
        debug_assert_eq!(m * self.k, out.len());
        if m == 0 {
            return;
        }
        let Ok(b) = ArrayView2::from_shape((self.p, self.k), &self.w) else {
            return;
        };
        // The matrix product is taken over fixed tiles of rows: its floating-point result for a
        // row can depend on how many rows are multiplied together, and a release must not depend
        // on how the publisher happened to batch its rows (memory budget, threads).
        for (r, o) in rows
            .chunks(PROJECT_TILE_ROWS * self.p)
            .zip(out.chunks_mut(PROJECT_TILE_ROWS * self.k))
        {
            let t = r.len() / self.p;
            let (Ok(a), Ok(mut c)) = (
                ArrayView2::from_shape((t, self.p), r),
                ArrayViewMut2::from_shape((t, self.k), o),
            ) else {
                // Shapes are checked by callers; an inconsistent call leaves `out` untouched.
                return;
            };
            general_mat_mul(1.0 / (self.k as f32).sqrt(), &a, &b, 0.0, &mut c);
        }
    }
}

/// Rows per matrix product in [`DenseProjection::project`]; divides the publisher's 256-row work
/// block, so group boundaries fall on tile boundaries (the result does not depend on them).
pub const PROJECT_TILE_ROWS: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;

    fn seed() -> Seed {
        Seed::parse_hex("0123456789abcdef").unwrap()
    }

    #[test]
    fn same_seed_same_matrix_different_seed_different() {
        for kind in [
            DenseKind::Rademacher,
            DenseKind::Gaussian,
            DenseKind::Uniform,
            DenseKind::Sparse { s: 3.0 },
        ] {
            let a = DenseProjection::generate(kind, 50, 33, seed()).unwrap();
            let b = DenseProjection::generate(kind, 50, 33, seed()).unwrap();
            let c = DenseProjection::generate(kind, 50, 33, Seed::parse_hex("1").unwrap()).unwrap();
            assert_eq!(a.entries(), b.entries(), "{kind:?}");
            assert_ne!(a.entries(), c.entries(), "{kind:?}");
        }
    }

    /// Golden values pin the documented randomness layout: if this fails, old releases can no
    /// longer be regenerated.
    #[test]
    fn golden_values_pin_the_layout() {
        let r = DenseProjection::generate(DenseKind::Rademacher, 4, 16, seed()).unwrap();
        let bits: String = r.entries()[..16]
            .iter()
            .map(|&x| if x > 0.0 { '1' } else { '0' })
            .collect();
        let g = DenseProjection::generate(DenseKind::Gaussian, 2, 2, seed()).unwrap();
        let golden = (bits, g.entries().to_vec());
        assert_eq!(golden.0, GOLDEN_BITS);
        for (a, b) in golden.1.iter().zip(GOLDEN_GAUSS) {
            assert_eq!(a.to_bits(), b.to_bits(), "{:?}", golden.1);
        }
    }
    const GOLDEN_BITS: &str = "1111001101010101";
    const GOLDEN_GAUSS: [f32; 4] = [-0.069_588_61, -0.852_608_44, 0.046_922_617, -0.383_045_5];

    #[test]
    fn entry_moments() {
        let n = 200_000f64;
        for (kind, m4) in [
            (DenseKind::Rademacher, 1.0),
            (DenseKind::Gaussian, 3.0),
            (DenseKind::Uniform, 1.8),
            (DenseKind::Sparse { s: 3.0 }, 3.0),
        ] {
            let w = DenseProjection::generate(kind, 400, 500, seed()).unwrap();
            let m1 = w.entries().iter().map(|&x| x as f64).sum::<f64>() / n;
            let m2 = w.entries().iter().map(|&x| (x as f64).powi(2)).sum::<f64>() / n;
            let e4 = w.entries().iter().map(|&x| (x as f64).powi(4)).sum::<f64>() / n;
            // sd of the mean of n unit-variance draws is 1/sqrt(n) = 0.0022: 5 sd = 0.011
            assert!(m1.abs() < 0.011, "{kind:?} mean {m1}");
            // Var(w²) = m4 - 1 ≤ 2 for these kinds (gaussian): sd of mean ≤ 0.0032, 5 sd
            assert!(
                (m2 - 1.0).abs() < 5.0 * ((m4 - 1.0f64).max(1e-9) / n).sqrt() + 1e-9,
                "{kind:?} {m2}"
            );
            assert!((e4 - m4).abs() < 0.1 * m4, "{kind:?} {e4}");
            assert!((kind.fourth_moment() - m4).abs() < 1e-12);
        }
    }

    #[test]
    fn rademacher_sensitivity_is_exactly_beta() {
        for k in [1, 7, 256, 1024] {
            let w = DenseProjection::generate(DenseKind::Rademacher, 784, k, seed()).unwrap();
            assert!((w.sensitivity(1.0) - 1.0).abs() < 1e-12);
            assert!((w.sensitivity(0.3) - 0.3).abs() < 1e-12);
        }
    }

    #[test]
    fn project_matches_naive() {
        let w = DenseProjection::generate(DenseKind::Gaussian, 13, 5, seed()).unwrap();
        let rows: Vec<f32> = (0..3 * 13)
            .map(|i| ((i * 7) % 11) as f32 / 11.0 - 0.5)
            .collect();
        let mut out = vec![0f32; 15];
        w.project(&rows, &mut out);
        for r in 0..3 {
            for j in 0..5 {
                let mut s = 0f64;
                for i in 0..13 {
                    s += rows[r * 13 + i] as f64 * w.entries()[i * 5 + j] as f64;
                }
                s /= 5f64.sqrt();
                assert!((out[r * 5 + j] as f64 - s).abs() < 1e-5);
            }
        }
    }
}
