//! OPORP: one permutation + one random projection (DESIGN.md §3; Li & Li, Algorithm 10).
//!
//! A uniform permutation `π` of the `p` coordinates, Rademacher signs `r ∈ {±1}^p` and `k`
//! contiguous bins over the permuted positions (position `i` goes to bin `⌊i·k/p⌋`, so bin sizes
//! differ by at most one): `x_j = Σ_{i ∈ bin j} r_i·u_{π(i)}`, no scaling, `E⟨x,y⟩ = ⟨u,v⟩`.
//! Each input coordinate lands in exactly one bin with weight ±1, so changing it by β moves exactly
//! one output by β: `Δ₂ = β`. Cost O(p) per row.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::Seed;
use crate::error::{Error, Result};

/// The public OPORP structure, stored per input coordinate.
#[derive(Debug, Clone)]
pub struct Oporp {
    p: usize,
    k: usize,
    seed: Seed,
    /// `perm[i] = π(i)`: the input coordinate at permuted position `i`.
    perm: Vec<u32>,
    /// Bin of each input coordinate.
    bin_of: Vec<u32>,
    /// Sign (±1) of each input coordinate.
    sign_of: Vec<f32>,
}

/// Uniform integer in `[0, n)` from 64-bit words (Lemire's multiply-and-reject; documented as
/// part of the layout, so it is implemented here rather than borrowed from `rand`).
pub(crate) fn uniform_below(rng: &mut ChaCha20Rng, n: u64) -> u64 {
    let mut m = (rng.next_u64() as u128) * (n as u128);
    if (m as u64) < n {
        let t = n.wrapping_neg() % n;
        while (m as u64) < t {
            m = (rng.next_u64() as u128) * (n as u128);
        }
    }
    (m >> 64) as u64
}

impl Oporp {
    /// Regenerate the permutation and signs from the public seed.
    pub fn generate(p: usize, k: usize, seed: Seed) -> Result<Oporp> {
        if p == 0 || k == 0 {
            return Err(Error::param("‹k›", "p and k must both be at least 1"));
        }
        if k > p {
            return Err(Error::param(
                "‹k›",
                format!(
                    "OPORP needs k ≤ p: k = {k} bins cannot be filled from p = {p} coordinates"
                ),
            ));
        }
        if p > u32::MAX as usize {
            return Err(Error::param("dimension", "p is too large for OPORP"));
        }
        // A permutation, a sign, a bin and a signed weight per input coordinate (4 bytes each).
        super::check_map_bytes(&format!("OPORP of p = {p}"), 16 * p as u128)?;
        let mut perm: Vec<u32> = (0..p as u32).collect();
        let mut rng = ChaCha20Rng::from_seed(seed.0);
        rng.set_stream(1);
        for i in (1..p).rev() {
            let j = uniform_below(&mut rng, i as u64 + 1) as usize;
            perm.swap(i, j);
        }
        let mut srng = ChaCha20Rng::from_seed(seed.0);
        srng.set_stream(2);
        let mut signs = vec![0f32; p];
        for chunk in signs.chunks_mut(64) {
            let bits = srng.next_u64();
            for (b, e) in chunk.iter_mut().enumerate() {
                *e = if (bits >> b) & 1 == 1 { 1.0 } else { -1.0 };
            }
        }
        let mut bin_of = vec![0u32; p];
        let mut sign_of = vec![0f32; p];
        for (i, &c) in perm.iter().enumerate() {
            bin_of[c as usize] = ((i as u128 * k as u128) / p as u128) as u32;
            sign_of[c as usize] = signs[i];
        }
        Ok(Oporp {
            p,
            k,
            seed,
            perm,
            bin_of,
            sign_of,
        })
    }

    /// Input dimension.
    pub fn p(&self) -> usize {
        self.p
    }
    /// Number of bins.
    pub fn k(&self) -> usize {
        self.k
    }
    /// Public seed.
    pub fn seed(&self) -> Seed {
        self.seed
    }
    /// `π(i)` for each permuted position `i`.
    pub fn permutation(&self) -> &[u32] {
        &self.perm
    }
    /// Bin of each input coordinate.
    pub fn bins(&self) -> &[u32] {
        &self.bin_of
    }
    /// Sign of each input coordinate.
    pub fn signs(&self) -> &[f32] {
        &self.sign_of
    }

    /// ℓ₂-sensitivity under β-adjacency, from the actual structure: a coordinate changed by β
    /// moves only its own bin, by `β·|r|`, so `Δ₂ = β·max_c |r_c|` (= β).
    pub fn sensitivity(&self, beta: f64) -> f64 {
        beta * self
            .sign_of
            .iter()
            .map(|s| s.abs() as f64)
            .fold(0.0, f64::max)
    }

    /// `out (m×k)` = OPORP of each row of `rows (m×p)`.
    pub fn project(&self, rows: &[f32], out: &mut [f32]) {
        for (row, x) in rows.chunks_exact(self.p).zip(out.chunks_exact_mut(self.k)) {
            x.iter_mut().for_each(|v| *v = 0.0);
            for ((&u, &b), &s) in row.iter().zip(&self.bin_of).zip(&self.sign_of) {
                x[b as usize] += s * u;
            }
        }
    }

    /// [`project`](Self::project) in f64 (the `float64` arithmetic of
    /// [`crate::mechanism::central::arithmetic`]): each bin sums its `n_b` values `±u_i` (exact in f64) in
    /// coordinate order, `n_b − 1` roundings.
    pub fn project_f64(&self, rows: &[f32], out: &mut [f64]) {
        for (row, x) in rows.chunks_exact(self.p).zip(out.chunks_exact_mut(self.k)) {
            x.iter_mut().for_each(|v| *v = 0.0);
            for ((&u, &b), &s) in row.iter().zip(&self.bin_of).zip(&self.sign_of) {
                x[b as usize] += s as f64 * u as f64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed() -> Seed {
        Seed::parse_hex("0123456789abcdef").unwrap()
    }

    #[test]
    fn permutation_is_a_permutation_and_bins_balanced() {
        for (p, k) in [(784, 256), (784, 512), (10, 10), (10, 3), (1, 1), (1000, 7)] {
            let o = Oporp::generate(p, k, seed()).unwrap();
            let mut seen = vec![false; p];
            for &c in o.permutation() {
                assert!(!seen[c as usize]);
                seen[c as usize] = true;
            }
            let mut sizes = vec![0usize; k];
            for &b in o.bins() {
                sizes[b as usize] += 1;
            }
            let (mn, mx) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(mx - mn <= 1 && *mn >= 1, "{p} {k}: {mn}..{mx}");
            assert!(o.signs().iter().all(|&s| s == 1.0 || s == -1.0));
            assert_eq!(o.sensitivity(1.0), 1.0);
        }
    }

    #[test]
    fn regenerable_and_seed_dependent() {
        let a = Oporp::generate(784, 256, seed()).unwrap();
        let b = Oporp::generate(784, 256, seed()).unwrap();
        let c = Oporp::generate(784, 256, Seed::parse_hex("2").unwrap()).unwrap();
        assert_eq!(a.permutation(), b.permutation());
        assert_eq!(a.signs(), b.signs());
        assert_ne!(a.permutation(), c.permutation());
    }

    #[test]
    fn one_coordinate_moves_one_bin_by_beta() {
        let o = Oporp::generate(100, 30, seed()).unwrap();
        let u: Vec<f32> = (0..100).map(|i| (i as f32 / 100.0) - 0.5).collect();
        let mut x = vec![0f32; 30];
        o.project(&u, &mut x);
        for c in 0..100 {
            let mut v = u.clone();
            v[c] += 0.75;
            let mut y = vec![0f32; 30];
            o.project(&v, &mut y);
            let moved: Vec<usize> = (0..30).filter(|&j| (x[j] - y[j]).abs() > 1e-6).collect();
            assert_eq!(moved.len(), 1);
            assert!(((x[moved[0]] - y[moved[0]]).abs() - 0.75).abs() < 1e-5);
        }
    }

    /// The shuffle is uniform: over 24 000 seeds, the 24 permutations of 4 coordinates are equally
    /// frequent (χ² with 23 degrees of freedom; 70 is beyond its 0.99999 quantile, ≈ 58).
    #[test]
    fn permutation_is_uniform() {
        let mut counts = std::collections::HashMap::new();
        let trials = 24_000;
        for s in 0..trials {
            let seed = Seed::parse_hex(&format!("{:x}", s + 1)).unwrap();
            let o = Oporp::generate(4, 2, seed).unwrap();
            *counts.entry(o.permutation().to_vec()).or_insert(0usize) += 1;
        }
        assert_eq!(counts.len(), 24);
        let e = trials as f64 / 24.0;
        let chi2: f64 = counts.values().map(|&c| (c as f64 - e).powi(2) / e).sum();
        assert!(chi2 < 70.0, "χ² = {chi2}");
    }

    /// Pins the documented randomness layout of the permutation and signs.
    #[test]
    fn golden_values_pin_the_layout() {
        let o = Oporp::generate(10, 3, seed()).unwrap();
        let signs: Vec<i8> = o.signs().iter().map(|&s| s as i8).collect();
        assert_eq!(o.permutation(), GOLDEN_PERM);
        assert_eq!(signs, GOLDEN_SIGNS);
    }
    const GOLDEN_PERM: &[u32] = &[3, 0, 6, 4, 1, 2, 7, 8, 9, 5];
    const GOLDEN_SIGNS: &[i8] = &[1, -1, -1, 1, 1, 1, -1, 1, 1, -1];

    #[test]
    fn k_larger_than_p_rejected() {
        let e = Oporp::generate(10, 11, seed()).unwrap_err().to_string();
        assert!(e.contains("k ≤ p"), "{e}");
    }
}
