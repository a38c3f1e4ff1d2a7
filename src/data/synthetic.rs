//! Synthetic clients for mean estimation, streamed: `v_i = normalise(μ + N(0, I/d))` with `μ` a
//! uniformly random unit vector (the ProjUnit paper's synthetic data, Asi et al. 2023 §6), drawn
//! row by row from a public seed so a round over `n = 1000` clients at `d = 10⁶` never holds more
//! than the rows it is working on. Not private data: everything here is regenerable from the seed.
//!
//! **Generator.** Public test data needs a reproducible stream with the right distribution, not
//! an unpredictable one, so the normals come from the ziggurat ([`crate::rng::normal`]) on
//! [`Xoshiro256pp`] words (about 1 ns per word) rather than on ChaCha20 keystream (8 bytes of
//! cipher per normal, which made the row the largest part of a round's client cost): stream `s`
//! of the seed is xoshiro256++ started from the first 32 bytes of ChaCha20 stream `s` keyed by
//! the seed ([`Xoshiro256pp::from_seed_stream`]). The seed stays the one thing to record.

use rayon::prelude::*;

use crate::rng::normal::{fill_standard_normal, fill_standard_normal_dot};
use crate::rng::Xoshiro256pp;

use super::{RowReader, Scaling};
use crate::error::{Error, Result};
use crate::rng::Seed;

/// A [`RowReader`] over `n` synthetic rows of dimension `d`.
pub struct SyntheticRows {
    n: u64,
    d: usize,
    mu: Vec<f64>,
    seed: Seed,
    emitted: u64,
}

impl SyntheticRows {
    /// `n` rows of dimension `d` from `seed`: stream 0 draws `μ`, stream `1 + i` row `i` (so rows
    /// are drawn in parallel and do not depend on how they are read), normals from the bulk
    /// ziggurat on xoshiro256++ (see the module documentation).
    pub fn new(n: u64, d: usize, seed: Seed) -> Result<SyntheticRows> {
        if n == 0 || d == 0 {
            return Err(Error::param(
                "‹synthetic›",
                format!("needs at least one client and one dimension, got n = {n}, d = {d}"),
            ));
        }
        let mut rng = Xoshiro256pp::from_seed_stream(seed.0, 0);
        let mut mu = vec![0.0; d];
        fill_standard_normal(&mut rng, &mut mu);
        normalise(&mut mu);
        Ok(SyntheticRows {
            n,
            d,
            mu,
            seed,
            emitted: 0,
        })
    }

    /// The common direction `μ`.
    pub fn mu(&self) -> &[f64] {
        &self.mu
    }
}

fn normalise(v: &mut [f64]) {
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

impl RowReader for SyntheticRows {
    fn has_ids(&self) -> bool {
        false // row i has id i
    }
    fn format(&self) -> String {
        "synthetic".into()
    }
    fn dim(&self) -> usize {
        self.d
    }
    fn rows_hint(&self) -> Option<u64> {
        Some(self.n)
    }
    fn has_labels(&self) -> bool {
        false
    }
    fn scaling(&self) -> Scaling {
        Scaling::default()
    }
    fn read_chunk(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f32>,
        _labels: &mut Vec<f32>,
    ) -> Result<usize> {
        let rows = (self.n - self.emitted).min(max_rows as u64) as usize;
        let (d, first) = (self.d, self.emitted);
        let s = 1.0 / (d as f64).sqrt();
        let start = values.len();
        values.resize(start + rows * d, 0.0);
        // ‖μ + s·z‖² = ‖μ‖² + 2s·⟨z, μ⟩ + s²·‖z‖², the two sums taken while the normals are
        // drawn: one pass to draw, one to write the normalised row (and one row buffer per
        // rayon split, not per row).
        let mu_sq: f64 = self.mu.iter().map(|m| m * m).sum();
        values[start..].par_chunks_mut(d).enumerate().for_each_init(
            || vec![0.0f64; d],
            |row, (r, out)| {
                let mut rng = Xoshiro256pp::from_seed_stream(self.seed.0, 1 + first + r as u64);
                let (dot, sq) = fill_standard_normal_dot(&mut rng, row, &self.mu);
                let norm = (mu_sq + 2.0 * s * dot + s * s * sq).max(0.0).sqrt();
                let k = if norm > 0.0 { 1.0 / norm } else { 1.0 };
                for ((o, z), m) in out.iter_mut().zip(row.iter()).zip(&self.mu) {
                    *o = ((m + s * z) * k) as f32;
                }
            },
        );
        self.emitted += rows as u64;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_unit_vectors_near_mu_and_regenerable() {
        let mut a = SyntheticRows::new(300, 64, Seed([1; 32])).unwrap();
        let mut v = Vec::new();
        let mut l = Vec::new();
        assert_eq!(a.read_chunk(200, &mut v, &mut l).unwrap(), 200);
        assert_eq!(a.read_chunk(200, &mut v, &mut l).unwrap(), 100);
        assert_eq!(a.read_chunk(200, &mut v, &mut l).unwrap(), 0);
        assert_eq!(v.len(), 300 * 64);
        let mut mean = vec![0.0f64; 64];
        for r in v.chunks(64) {
            let n: f64 = r.iter().map(|&x| (x as f64).powi(2)).sum();
            assert!((n - 1.0).abs() < 1e-5);
            mean.iter_mut()
                .zip(r)
                .for_each(|(m, &x)| *m += x as f64 / 300.0);
        }
        // E⟨v, μ⟩ ≈ 1/√2 (‖μ‖ = 1 against noise of norm ≈ 1)
        let dot: f64 = mean.iter().zip(a.mu()).map(|(m, u)| m * u).sum();
        assert!((dot - 0.5f64.sqrt()).abs() < 0.05, "{dot}");
        // the same rows whatever the chunking
        let mut b = SyntheticRows::new(300, 64, Seed([1; 32])).unwrap();
        let mut w = Vec::new();
        b.read_chunk(7, &mut w, &mut l).unwrap();
        b.read_chunk(300, &mut w, &mut l).unwrap();
        assert_eq!(v, w);
        assert!(SyntheticRows::new(0, 3, Seed([1; 32])).is_err());
    }
}
