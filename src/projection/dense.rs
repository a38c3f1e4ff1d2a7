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

/// A dense projection matrix `W ∈ R^{p×k}` (row-major: input coordinate `i`, output `j`),
/// applied as `x = Wᵀu/√k`. Entry `w_ij` is `units[i·k + j]·unit`: for Rademacher and sparse maps
/// the units are ±1 (and 0) and `unit` is 1 or `√s` rounded to f32, so that the exact integer
/// arithmetic of [`DenseProjection::grid_sums`] applies; for the other kinds `unit` is 1 and the
/// units are the entries.
#[derive(Debug, Clone)]
pub struct DenseProjection {
    kind: DenseKind,
    p: usize,
    k: usize,
    seed: Seed,
    w: Vec<f32>,
    unit: f32,
}

impl DenseProjection {
    /// Regenerate `W` from the public seed (layout documented in [`crate::projection`]).
    pub fn generate(kind: DenseKind, p: usize, k: usize, seed: Seed) -> Result<DenseProjection> {
        if p == 0 || k == 0 {
            return Err(Error::param("‹k›", "p and k must both be at least 1"));
        }
        let total = p
            .checked_mul(k)
            .filter(|&t| t <= MAX_ENTRIES)
            .ok_or_else(|| {
                Error::param(
                    "‹k›",
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
                let half = 1.0 / (2.0 * s);
                for e in w.iter_mut() {
                    let u = unit_f64(rng.next_u64());
                    *e = if u < half {
                        -1.0
                    } else if u < 2.0 * half {
                        1.0
                    } else {
                        0.0
                    };
                }
            }
        }
        let unit = match kind {
            DenseKind::Sparse { s } => s.sqrt() as f32,
            _ => 1.0,
        };
        Ok(DenseProjection {
            kind,
            p,
            k,
            seed,
            w,
            unit,
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
    /// The units, row-major `p×k`: entry `w_ij` is `units()[i·k + j]·unit()`.
    pub fn units(&self) -> &[f32] {
        &self.w
    }

    /// The common factor of the entries (1, or `√s` in f32 for `sparse:s`).
    pub fn unit(&self) -> f32 {
        self.unit
    }

    /// Whether every unit is −1, 0 or +1 (Rademacher and sparse kinds): the maps whose products
    /// with grid inputs are exact integers ([`DenseProjection::grid_sums`]).
    pub fn has_sign_units(&self) -> bool {
        matches!(self.kind, DenseKind::Rademacher | DenseKind::Sparse { .. })
    }

    /// Entry `w_ij`.
    pub fn entry(&self, i: usize, j: usize) -> f64 {
        self.w[i * self.k + j] as f64 * self.unit as f64
    }

    /// `‖w_j‖₁` of every output column `j` (f64 sums of `p` non-negative terms, inflated by
    /// [`round_up`]`(p)` so that they bound the exact sums).
    pub fn column_l1(&self) -> Vec<f64> {
        let mut l1 = vec![0f64; self.k];
        for row in self.w.chunks(self.k) {
            for (a, &w) in l1.iter_mut().zip(row) {
                *a += (w as f64).abs();
            }
        }
        let unit = self.unit as f64 * round_up(self.p);
        l1.iter_mut().for_each(|a| *a *= unit);
        l1
    }

    /// `max_i |w_ij|` of every output column `j`.
    pub fn column_max_abs(&self) -> Vec<f64> {
        let mut m = vec![0f64; self.k];
        for row in self.w.chunks(self.k) {
            for (mj, &w) in m.iter_mut().zip(row) {
                *mj = mj.max((w as f64).abs());
            }
        }
        m.iter_mut().for_each(|v| *v *= self.unit as f64);
        m
    }

    /// `max_i ‖W[i,:]‖₂` over input coordinates, computed from the actual matrix (an upper bound:
    /// the f64 sum of `k` squares, its square root and the unit are inflated by
    /// [`round_up`]`(k + 3)`).
    pub fn max_row_norm(&self) -> f64 {
        let sq = self
            .w
            .chunks(self.k)
            .map(|row| row.iter().map(|&x| (x as f64) * (x as f64)).sum::<f64>())
            .fold(0.0, f64::max);
        sq.sqrt() * self.unit as f64 * round_up(self.k + 3)
    }

    /// ℓ₂-sensitivity of `u ↦ Wᵀu/√k` under β-adjacency (one coordinate changes by ≤ β, or the ℓ₁
    /// generalisation): `Δ₂ = (β/√k)·max_i ‖W[i,:]‖₂` (DESIGN.md §4), rounded up.
    pub fn sensitivity(&self, beta: f64) -> f64 {
        beta / (self.k as f64).sqrt() * self.max_row_norm() * round_up(4)
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
            general_mat_mul(self.unit / (self.k as f32).sqrt(), &a, &b, 0.0, &mut c);
        }
    }

    /// Exact integer sums over grid inputs (the `grid` arithmetic of
    /// [`crate::mechanism::central::arithmetic`]): `out[r·k + j] = Σ_i n_ri·units_ij` with
    /// `n_ri = round(u_ri·2^q)` (to nearest, ties to even), for sign units (±1, 0) and `0 ≤ q ≤`
    /// [`MAX_GRID_BITS`].
    ///
    /// **Why the sums are exact.** `u·2^q` is exact in f32 (a power-of-two scaling) and its rounding
    /// is an integer `|n| ≤ 2^q` (every `|u| ≤ 1`, checked here). The products `n·(±1)` are exact,
    /// and the input coordinates are taken in blocks of `2^(24−q)`: within a block every partial
    /// sum, in whatever order and grouping the matrix product forms it, with or without fused
    /// multiply-adds, is an integer of magnitude at most `2^(24−q)·2^q = 2^24`, so every f32
    /// operation is exact. The block sums (integers below `2^24`) are added in f64, exactly while
    /// `p·2^q < 2^53` (`p ≤ 2^32` by the map size limit, `q ≤ 18`).
    ///
    /// Errors naming the row and coordinate if a value is NaN or outside [−1, 1]; `out` is then
    /// unspecified. `rows.len()` must be `m·p` and `out.len()` `m·k`.
    pub fn grid_sums(&self, rows: &[f32], q: i32, out: &mut [f64]) -> Result<()> {
        if !self.has_sign_units() || !(0..=MAX_GRID_BITS).contains(&q) {
            return Err(Error::param(
                "projection",
                format!(
                    "exact grid sums need a ±1 map and 0 ≤ q ≤ {MAX_GRID_BITS} ({} map, q = {q})",
                    self.kind.name()
                ),
            ));
        }
        let (p, k) = (self.p, self.k);
        let m = self.rows_in(rows, out.len())?;
        let block = 1usize << (24 - q);
        let up = (q as f32).exp2();
        let mut ints = vec![0f32; PROJECT_TILE_ROWS.min(m) * p];
        let mut part = vec![0f32; PROJECT_TILE_ROWS.min(m) * k];
        for (tile, (r, o)) in rows
            .chunks(PROJECT_TILE_ROWS * p)
            .zip(out.chunks_mut(PROJECT_TILE_ROWS * k))
            .enumerate()
        {
            let t = r.len() / p;
            let ints = &mut ints[..t * p];
            // round to nearest, ties to even, by the classic addition of 1.5·2²³ (exact for
            // |u·2^q| ≤ 2^18 < 2^22, and vectorisable, unlike a call to `roundf`); a value
            // outside [−1, 1] or NaN is reported after the pass
            let mut inside = true;
            for (n, &u) in ints.iter_mut().zip(r) {
                inside &= u.abs() <= 1.0;
                *n = (u * up + ROUND_MAGIC) - ROUND_MAGIC;
            }
            if !inside {
                let idx = r
                    .iter()
                    .position(|u| u.is_nan() || u.abs() > 1.0)
                    .unwrap_or(0);
                return Err(Error::param(
                    "rows",
                    format!(
                        "value {} of row {} (coordinate {}) of this block is outside [−1, 1]",
                        r[idx],
                        tile * PROJECT_TILE_ROWS + idx / p,
                        idx % p
                    ),
                ));
            }
            let part = &mut part[..t * k];
            let a_all = ArrayView2::from_shape((t, p), &ints[..])
                .map_err(|e| Error::param("rows", e.to_string()))?;
            for (bi, c0) in (0..p).step_by(block).enumerate() {
                let c1 = (c0 + block).min(p);
                let a = a_all.slice(ndarray::s![.., c0..c1]);
                let b = ArrayView2::from_shape((c1 - c0, k), &self.w[c0 * k..c1 * k])
                    .map_err(|e| Error::param("projection", e.to_string()))?;
                let mut c = ArrayViewMut2::from_shape((t, k), &mut part[..])
                    .map_err(|e| Error::param("rows", e.to_string()))?;
                general_mat_mul(1.0, &a, &b, 0.0, &mut c);
                if bi == 0 {
                    o.iter_mut()
                        .zip(part.iter())
                        .for_each(|(o, &v)| *o = v as f64);
                } else {
                    o.iter_mut()
                        .zip(part.iter())
                        .for_each(|(o, &v)| *o += v as f64);
                }
            }
        }
        Ok(())
    }

    /// `out (m×k) = rows (m×p) · W · (unit/√k)` in f64 (the `float64` arithmetic of
    /// [`crate::mechanism::central::arithmetic`]): inputs and entries are read exactly as f64, the products
    /// and sums are f64 (the matrix product takes the input coordinates in blocks of
    /// [`F64_BLOCK`], converted on the fly so that no f64 copy of `W` is kept), and the scale is
    /// applied last. `rows.len()` must be `m·p` and `out.len()` `m·k`.
    pub fn project_f64(&self, rows: &[f32], out: &mut [f64]) -> Result<()> {
        let (p, k) = (self.p, self.k);
        let m = self.rows_in(rows, out.len())?;
        let scale = self.unit as f64 / (k as f64).sqrt();
        let mut a64 = vec![0f64; PROJECT_TILE_ROWS.min(m) * p];
        let mut b64 = vec![0f64; F64_BLOCK.min(p) * k];
        for (r, o) in rows
            .chunks(PROJECT_TILE_ROWS * p)
            .zip(out.chunks_mut(PROJECT_TILE_ROWS * k))
        {
            let t = r.len() / p;
            let a64 = &mut a64[..t * p];
            a64.iter_mut().zip(r).for_each(|(a, &u)| *a = u as f64);
            let a_all = ArrayView2::from_shape((t, p), &a64[..])
                .map_err(|e| Error::param("rows", e.to_string()))?;
            let mut c = ArrayViewMut2::from_shape((t, k), &mut o[..])
                .map_err(|e| Error::param("rows", e.to_string()))?;
            for c0 in (0..p).step_by(F64_BLOCK) {
                let c1 = (c0 + F64_BLOCK).min(p);
                let b64 = &mut b64[..(c1 - c0) * k];
                b64.iter_mut()
                    .zip(&self.w[c0 * k..c1 * k])
                    .for_each(|(b, &w)| *b = w as f64);
                let b = ArrayView2::from_shape((c1 - c0, k), &b64[..])
                    .map_err(|e| Error::param("projection", e.to_string()))?;
                let a = a_all.slice(ndarray::s![.., c0..c1]);
                let beta = if c0 == 0 { 0.0 } else { 1.0 };
                general_mat_mul(1.0, &a, &b, beta, &mut c);
            }
            o.iter_mut().for_each(|v| *v *= scale);
        }
        Ok(())
    }
}

impl DenseProjection {
    /// The number of rows in `rows`, checking that `rows` holds whole rows and the output `m·k`
    /// values.
    fn rows_in(&self, rows: &[f32], out_len: usize) -> Result<usize> {
        let m = rows.len() / self.p;
        if m * self.p != rows.len() || out_len != m * self.k {
            return Err(Error::param(
                "rows",
                "block shape does not match the projection",
            ));
        }
        Ok(m)
    }
}

/// The largest grid exponent `q` of [`DenseProjection::grid_sums`]: blocks of at least
/// `2^(24−18)` = 64 input coordinates (a finer grid is computed in f64 instead).
pub const MAX_GRID_BITS: i32 = 18;

/// `1 + (n + 2)·2⁻⁵²`: a factor that lifts an f64 result of `n` roundings of non-negative
/// terms (a sum of `n` terms errs by at most `(n − 1)·2⁻⁵³` relative, Higham Lemma 3.1) above the
/// exact value, with a factor two to spare.
pub fn round_up(n: usize) -> f64 {
    1.0 + (n as f64 + 2.0) * f64::EPSILON
}

/// `1.5·2²³`: adding and subtracting it rounds an f32 of magnitude below `2^22` to the nearest
/// integer, ties to even.
const ROUND_MAGIC: f32 = 12_582_912.0;

/// Input coordinates per f64 matrix product in [`DenseProjection::project_f64`].
pub const F64_BLOCK: usize = 512;

/// Rows per matrix product in [`DenseProjection::project`]; divides the publisher's 256-row work
/// block, so group boundaries fall on tile boundaries (the result does not depend on them).
pub const PROJECT_TILE_ROWS: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;

    fn seed() -> Seed {
        Seed::parse_hex("0123456789abcdef").unwrap()
    }

    /// The entries `w_ij`, row-major.
    fn entries(w: &DenseProjection) -> Vec<f64> {
        w.units()
            .iter()
            .map(|&x| x as f64 * w.unit() as f64)
            .collect()
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
            assert_eq!(entries(&a), entries(&b), "{kind:?}");
            assert_ne!(entries(&a), entries(&c), "{kind:?}");
        }
    }

    /// Golden values pin the documented randomness layout: if this fails, old releases can no
    /// longer be regenerated.
    #[test]
    fn golden_values_pin_the_layout() {
        let r = DenseProjection::generate(DenseKind::Rademacher, 4, 16, seed()).unwrap();
        let bits: String = r.units()[..16]
            .iter()
            .map(|&x| if x > 0.0 { '1' } else { '0' })
            .collect();
        let g = DenseProjection::generate(DenseKind::Gaussian, 2, 2, seed()).unwrap();
        let golden = (bits, g.units().to_vec());
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
            let e = entries(&w);
            let m1 = e.iter().sum::<f64>() / n;
            let m2 = e.iter().map(|x| x.powi(2)).sum::<f64>() / n;
            let e4 = e.iter().map(|x| x.powi(4)).sum::<f64>() / n;
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
            // an upper bound on the exact β, within a relative 10⁻¹¹ of it
            assert!(w.sensitivity(1.0) >= 1.0 && w.sensitivity(1.0) - 1.0 < 1e-11);
            assert!(w.sensitivity(0.3) >= 0.3 && w.sensitivity(0.3) - 0.3 < 1e-11);
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
                    s += rows[r * 13 + i] as f64 * w.entry(i, j);
                }
                s /= 5f64.sqrt();
                assert!((out[r * 5 + j] as f64 - s).abs() < 1e-5);
            }
        }
    }
}
