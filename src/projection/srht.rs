//! Subsampled randomised Hadamard transform (SRHT), `W = √(d'/k)·S·H·D ∈ R^{k×d}` (Asi et al.
//! 2023, FastProjUnit; MECHANISMS-LDP.md §B).
//!
//! `d' = ` the next power of two `≥ d` (inputs are zero-padded), `D` a Rademacher diagonal on
//! `d'` coordinates, `H` the *normalised* Hadamard matrix (orthogonal, symmetric) and `S` the
//! `k×d'` selection of `k` distinct rows drawn uniformly without replacement. Then
//! `WWᵀ = (d'/k)·S·H·D·D·H·Sᵀ = (d'/k)·I_k` exactly and `E[WᵀW] = I_d` over `S`.
//! `Wv` and `Wᵀy` cost `O(d' log d')`. Regenerated bit for bit from the public seed
//! (layout in [`crate::projection`]: stream 3 for `D`, stream 4 for `S`).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::hadamard::{fwht_normalized, next_pow2};
use super::oporp::uniform_below;
use super::Seed;
use crate::error::{Error, Result};

/// A public SRHT, stored as its signs and sampled rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Srht {
    d: usize,
    d_pad: usize,
    k: usize,
    seed: Seed,
    /// `D`, packed: bit `i mod 64` of word `i / 64` is 1 for `D_ii = +1`, 0 for `−1` (the
    /// stream-3 words themselves; 1/64 of the memory of a ±1.0 vector, so a client at
    /// d = 10⁶ does not allocate and fault in another 8 MB).
    sign_bits: Vec<u64>,
    /// `S`: the `k` distinct sampled rows of `H`, in sampling order.
    rows: Vec<usize>,
}

impl Srht {
    /// Regenerate the SRHT `R^d → R^k` from the public seed; needs `1 ≤ k ≤ d'`.
    pub fn generate(d: usize, k: usize, seed: Seed) -> Result<Srht> {
        let d_pad = next_pow2(d)?;
        if k == 0 || k > d_pad {
            return Err(Error::param(
                "‹k›",
                format!("SRHT needs 1 ≤ k ≤ d' = {d_pad} (d = {d} padded), got k = {k}"),
            ));
        }
        // The diagonal's sign bits (d'/8 bytes) and the k sampled rows (8 bytes each).
        super::check_map_bytes(
            &format!("an SRHT of d = {d}, k = {k}"),
            d_pad as u128 / 8 + 8 * k as u128,
        )?;
        let mut srng = ChaCha20Rng::from_seed(seed.0);
        srng.set_stream(3);
        let mut sign_bits: Vec<u64> = (0..d_pad.div_ceil(64)).map(|_| srng.next_u64()).collect();
        if d_pad % 64 != 0 {
            // d' < 64: keep only the bits of real coordinates (the rest of the word is unused).
            sign_bits[0] &= (1u64 << d_pad) - 1;
        }
        let mut rrng = ChaCha20Rng::from_seed(seed.0);
        rrng.set_stream(4);
        // Partial Fisher–Yates; a sparse map of displaced entries keeps it O(k) in memory.
        let mut moved = std::collections::HashMap::<usize, usize>::new();
        let mut rows = Vec::with_capacity(k);
        for i in 0..k {
            let j = i + uniform_below(&mut rrng, (d_pad - i) as u64) as usize;
            let at_j = *moved.get(&j).unwrap_or(&j);
            let at_i = *moved.get(&i).unwrap_or(&i);
            moved.insert(j, at_i);
            rows.push(at_j);
        }
        Ok(Srht {
            d,
            d_pad,
            k,
            seed,
            sign_bits,
            rows,
        })
    }

    /// Input dimension `d`.
    pub fn d(&self) -> usize {
        self.d
    }
    /// Padded dimension `d'` (a power of two).
    pub fn d_pad(&self) -> usize {
        self.d_pad
    }
    /// Output dimension `k`.
    pub fn k(&self) -> usize {
        self.k
    }
    /// Public seed.
    pub fn seed(&self) -> Seed {
        self.seed
    }
    /// The diagonal `D` (±1 per padded coordinate), expanded from the packed bits.
    pub fn signs(&self) -> Vec<f64> {
        (0..self.d_pad)
            .map(|i| if self.sign_positive(i) { 1.0 } else { -1.0 })
            .collect()
    }

    /// Whether `D_ii = +1`.
    #[inline]
    fn sign_positive(&self, i: usize) -> bool {
        (self.sign_bits[i / 64] >> (i % 64)) & 1 == 1
    }

    /// `x_i ← D_ii·x_i·s` in place for `i < x.len()` (a sign flip is an XOR of the sign bit).
    fn apply_signs(&self, x: &mut [f64], s: f64) {
        for (xc, &bits) in x.chunks_mut(64).zip(&self.sign_bits) {
            for (b, xi) in xc.iter_mut().enumerate() {
                let flip = ((!bits >> b) & 1) << 63;
                *xi = f64::from_bits((*xi * s).to_bits() ^ flip);
            }
        }
    }

    /// The sampled rows of `H` (distinct, in `[0, d')`).
    pub fn rows(&self) -> &[usize] {
        &self.rows
    }
    /// `√(d'/k)`.
    pub fn scale(&self) -> f64 {
        (self.d_pad as f64 / self.k as f64).sqrt()
    }

    /// `Wv = √(d'/k)·S·H·D·pad(v)`.
    pub fn apply(&self, v: &[f64]) -> Result<Vec<f64>> {
        if v.len() != self.d {
            return Err(Error::param(
                "SRHT input",
                format!(
                    "has {} coordinates, the transform has d = {}",
                    v.len(),
                    self.d
                ),
            ));
        }
        // D·pad(v) in one pass: a sign flip is an XOR of the sign bit.
        let mut x = Vec::with_capacity(self.d_pad);
        x.extend(v.iter().enumerate().map(|(i, vi)| {
            let flip = ((!self.sign_bits[i / 64] >> (i % 64)) & 1) << 63;
            f64::from_bits(vi.to_bits() ^ flip)
        }));
        x.resize(self.d_pad, 0.0);
        fwht_normalized(&mut x)?;
        let s = self.scale();
        Ok(self.rows.iter().map(|&r| s * x[r]).collect())
    }

    /// `Wᵀy = √(d'/k)·D·H·Sᵀy`, truncated to the first `d` coordinates (the transpose of `W`
    /// restricted to the unpadded columns).
    pub fn apply_transpose(&self, y: &[f64]) -> Result<Vec<f64>> {
        if y.len() != self.k {
            return Err(Error::param(
                "SRHT transpose input",
                format!(
                    "has {} coordinates, the transform has k = {}",
                    y.len(),
                    self.k
                ),
            ));
        }
        let mut x = vec![0f64; self.d_pad];
        for (&r, yi) in self.rows.iter().zip(y) {
            x[r] = *yi;
        }
        fwht_normalized(&mut x)?;
        x.truncate(self.d);
        self.apply_signs(&mut x, self.scale());
        Ok(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(b: u8) -> Seed {
        Seed([b; 32])
    }

    /// The explicit `k×d` matrix, column by column through `apply`.
    fn matrix(w: &Srht) -> Vec<Vec<f64>> {
        let mut m = vec![vec![0.0; w.d()]; w.k()];
        for i in 0..w.d() {
            let mut e = vec![0.0; w.d()];
            e[i] = 1.0;
            for (j, x) in w.apply(&e).unwrap().into_iter().enumerate() {
                m[j][i] = x;
            }
        }
        m
    }

    #[test]
    fn rows_are_orthogonal_with_norm_d_pad_over_k() {
        for &(d, k) in &[(16, 4), (16, 16), (13, 5), (100, 30), (1, 1)] {
            let w = Srht::generate(d, k, seed(7)).unwrap();
            let m = matrix(&w);
            let target = w.d_pad() as f64 / k as f64;
            let mut worst_pad: f64 = 0.0;
            for a in 0..k {
                for b in 0..k {
                    let g: f64 = m[a].iter().zip(&m[b]).map(|(x, y)| x * y).sum();
                    if d == w.d_pad() {
                        let want = if a == b { target } else { 0.0 };
                        assert!(
                            (g - want).abs() < 1e-10,
                            "d = {d}, k = {k}: ({a},{b}) = {g}"
                        );
                    } else {
                        worst_pad = worst_pad.max((g - if a == b { target } else { 0.0 }).abs());
                    }
                }
            }
            // With padding WWᵀ = (d'/k)I only for the padded matrix: check it on d'.
            if d != w.d_pad() {
                let wp = Srht {
                    d: w.d_pad(),
                    ..w.clone()
                };
                let mp = matrix(&wp);
                for a in 0..k {
                    for b in 0..k {
                        let g: f64 = mp[a].iter().zip(&mp[b]).map(|(x, y)| x * y).sum();
                        let want = if a == b { target } else { 0.0 };
                        assert!((g - want).abs() < 1e-10);
                    }
                }
                // The truncated matrix is not: padding columns carry mass.
                assert!(worst_pad > 1e-3, "d = {d}: {worst_pad}");
            }
            // Every entry is ±1/√k (|H_ij| = 1/√d', times √(d'/k)).
            for row in &m {
                for x in row {
                    assert!((x.abs() - 1.0 / (k as f64).sqrt()).abs() < 1e-12);
                }
            }
        }
    }

    #[test]
    fn sampled_rows_are_distinct_and_uniform() {
        let mut rows = w_rows(64, 64, 1);
        rows.sort_unstable();
        assert_eq!(rows, (0..64).collect::<Vec<_>>());
        // Uniformity of the first sampled row over 8 values (chi-square, 7 df, p = 1e-4 ≈ 29.9).
        let n = 4000;
        let mut c = [0f64; 8];
        for s in 0..n {
            let mut b = [0u8; 32];
            b[..8].copy_from_slice(&(s as u64).to_le_bytes());
            c[Srht::generate(8, 3, Seed(b)).unwrap().rows()[0]] += 1.0;
        }
        let e = n as f64 / 8.0;
        let chi: f64 = c.iter().map(|x| (x - e).powi(2) / e).sum();
        assert!(chi < 29.9, "χ² = {chi}");
    }

    fn w_rows(d: usize, k: usize, b: u8) -> Vec<usize> {
        Srht::generate(d, k, seed(b)).unwrap().rows().to_vec()
    }

    #[test]
    fn regenerated_bit_for_bit_and_seed_dependent() {
        let a = Srht::generate(300, 40, seed(3)).unwrap();
        let b = Srht::generate(300, 40, seed(3)).unwrap();
        assert_eq!(a, b);
        let v: Vec<f64> = (0..300).map(|i| (i as f64 * 0.37).sin()).collect();
        let (x, y) = (a.apply(&v).unwrap(), b.apply(&v).unwrap());
        assert!(x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits()));
        let c = Srht::generate(300, 40, seed(4)).unwrap();
        assert_ne!(a.rows(), c.rows());
        assert_ne!(a.signs(), c.signs());
        // Golden values pin the layout (streams 3 and 4).
        let g = Srht::generate(16, 4, seed(0)).unwrap();
        let signs: String = g
            .signs()
            .iter()
            .map(|s| if *s > 0.0 { '+' } else { '-' })
            .collect();
        assert_eq!((signs.as_str(), g.rows()), GOLDEN);
    }

    /// Recorded from the first run of this layout; a change here changes every SRHT release.
    const GOLDEN: (&str, &[usize]) = ("-+------++++-+--", &[5, 12, 11, 8]);

    #[test]
    fn transpose_is_consistent() {
        for &(d, k) in &[(16, 5), (37, 12), (64, 64)] {
            let w = Srht::generate(d, k, seed(9)).unwrap();
            let v: Vec<f64> = (0..d).map(|i| ((i * 7 % 11) as f64) - 5.0).collect();
            let y: Vec<f64> = (0..k).map(|j| ((j * 3 % 5) as f64) - 2.0).collect();
            let wv = w.apply(&v).unwrap();
            let wty = w.apply_transpose(&y).unwrap();
            let l: f64 = wv.iter().zip(&y).map(|(a, b)| a * b).sum();
            let r: f64 = v.iter().zip(&wty).map(|(a, b)| a * b).sum();
            assert!((l - r).abs() < 1e-9 * l.abs().max(1.0), "{l} vs {r}");
            // Against the explicit matrix.
            let m = matrix(&w);
            for i in 0..d {
                let want: f64 = (0..k).map(|j| m[j][i] * y[j]).sum();
                assert!((wty[i] - want).abs() < 1e-10);
            }
        }
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(Srht::generate(0, 1, seed(1)).is_err());
        assert!(Srht::generate(5, 9, seed(1)).is_err());
        assert!(Srht::generate(5, 0, seed(1)).is_err());
        assert!(Srht::generate(5, 8, seed(1)).is_ok());
        let w = Srht::generate(5, 3, seed(1)).unwrap();
        assert!(w.apply(&[1.0; 4]).is_err());
        assert!(w.apply_transpose(&[1.0; 4]).is_err());
    }
}
