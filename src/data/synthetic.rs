//! Synthetic clients for mean estimation, streamed: `v_i = normalise(μ + N(0, I/d))` with `μ` a
//! uniformly random unit vector (the ProjUnit paper's synthetic data, Asi et al. 2023 §6), drawn
//! row by row from a public seed so a round over `n = 1000` clients at `d = 10⁶` never holds more
//! than the rows it is working on. Not private data: everything here is regenerable from the seed.

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rand_distr::{Distribution, StandardNormal};

use super::{RowReader, Scaling};
use crate::error::{Error, Result};
use crate::projection::Seed;

/// A [`RowReader`] over `n` synthetic rows of dimension `d`.
pub struct SyntheticRows {
    n: u64,
    d: usize,
    mu: Vec<f64>,
    rng: ChaCha20Rng,
    emitted: u64,
}

impl SyntheticRows {
    /// `n` rows of dimension `d` from `seed` (stream 0 draws `μ`, stream 1 the rows).
    pub fn new(n: u64, d: usize, seed: Seed) -> Result<SyntheticRows> {
        if n == 0 || d == 0 {
            return Err(Error::param(
                "--synthetic",
                format!("needs at least one client and one dimension, got n = {n}, d = {d}"),
            ));
        }
        let mut rng = ChaCha20Rng::from_seed(seed.0);
        let mut mu: Vec<f64> = (0..d).map(|_| StandardNormal.sample(&mut rng)).collect();
        normalise(&mut mu);
        let mut rows = ChaCha20Rng::from_seed(seed.0);
        rows.set_stream(1);
        Ok(SyntheticRows {
            n,
            d,
            mu,
            rng: rows,
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
        let s = 1.0 / (self.d as f64).sqrt();
        let mut row = vec![0.0f64; self.d];
        for _ in 0..rows {
            for (r, m) in row.iter_mut().zip(&self.mu) {
                let z: f64 = StandardNormal.sample(&mut self.rng);
                *r = m + s * z;
            }
            normalise(&mut row);
            values.extend(row.iter().map(|&v| v as f32));
        }
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
        let mut b = SyntheticRows::new(300, 64, Seed([1; 32])).unwrap();
        let mut w = Vec::new();
        b.read_chunk(300, &mut w, &mut l).unwrap();
        assert_eq!(v, w);
        assert!(SyntheticRows::new(0, 3, Seed([1; 32])).is_err());
    }
}
