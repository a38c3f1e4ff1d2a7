//! The server side of the local mechanisms: decoding a release's rows (each user's message) into
//! the mean, the closed-form error of the mean, and the client function a device runs. The
//! accumulator that uses it is [`crate::mechanism::local::accumulator::MeanAccumulator`].

use rand_chacha::ChaCha20Rng;

pub use super::algorithm::ErrorKind;
use super::release::LocalSketch;
use crate::error::{Error, Result};
use crate::mechanism::Mechanism;

/// The server side of a local mechanism. `row` arguments count release rows from 0 (the
/// mechanism adds its [`LocalOptions::first_row`](crate::mechanism::LocalOptions::first_row) for per-row maps).
pub trait LocalDecoder: Send + Sync {
    /// Dimension `d` of the inputs and of the mean.
    fn dim(&self) -> usize;
    /// Values each row (each user's message) holds.
    fn message_len(&self) -> usize;
    /// Length of the server's accumulator (`d`, or `d'` for correlated ProjUnit).
    fn accumulator_len(&self) -> usize {
        self.dim()
    }
    /// The client: privatise one input (`d` values in the domain) as row `row`, drawing secret
    /// noise from `rng`; returns the message.
    fn client(&self, row: u64, v: &[f64], rng: &mut ChaCha20Rng) -> Result<Vec<f64>>;
    /// Add row `row`'s decoded contribution into `acc`.
    fn accumulate(&self, row: u64, message: &[f32], acc: &mut [f64]) -> Result<()>;
    /// Add consecutive rows `first_row..` (row-major messages) into `acc`; mechanisms override
    /// it to reuse scratch space across rows.
    fn accumulate_rows(&self, first_row: u64, messages: &[f32], acc: &mut [f64]) -> Result<()> {
        let k = self.message_len().max(1);
        for (i, m) in messages.chunks_exact(k).enumerate() {
            self.accumulate(first_row + i as u64, m, acc)?;
        }
        Ok(())
    }
    /// The mean estimate of `n ≥ 1` rows accumulated in `acc` (`d` values).
    fn finish(&self, acc: &[f64], n: u64) -> Result<Vec<f64>> {
        let inv = 1.0 / n.max(1) as f64;
        Ok(acc.iter().map(|x| x * inv).collect())
    }
    /// One row's estimate of its own input (`d` values).
    fn decode_row(&self, row: u64, message: &[f32]) -> Result<Vec<f64>> {
        let mut acc = vec![0f64; self.accumulator_len()];
        self.accumulate(row, message, &mut acc)?;
        self.finish(&acc, 1)
    }
    /// Per-user `E‖Z − v‖²` on the domain's boundary and how exact it is.
    fn mse_per_user(&self) -> (f64, ErrorKind);
    /// For which inputs [`mse_per_user`](LocalDecoder::mse_per_user) holds, in one sentence.
    fn mse_note(&self) -> String;
}

impl LocalDecoder for LocalSketch {
    fn dim(&self) -> usize {
        self.d
    }
    fn message_len(&self) -> usize {
        self.output_dim()
    }
    fn client(&self, row: u64, v: &[f64], rng: &mut ChaCha20Rng) -> Result<Vec<f64>> {
        self.algo.client(self.id(row), v, rng)
    }
    fn accumulator_len(&self) -> usize {
        self.algo.accumulator_len(self.d)
    }
    fn accumulate_rows(&self, first_row: u64, messages: &[f32], acc: &mut [f64]) -> Result<()> {
        self.check_accumulator(acc)?;
        let k = self.output_dim();
        self.algo
            .accumulate_rows(self.id(first_row), k, messages, acc)
    }
    fn finish(&self, acc: &[f64], n: u64) -> Result<Vec<f64>> {
        self.algo.finish(acc, n)
    }
    fn accumulate(&self, row: u64, message: &[f32], acc: &mut [f64]) -> Result<()> {
        self.check_message(message)?;
        self.check_accumulator(acc)?;
        let z: Vec<f64> = message.iter().map(|&x| x as f64).collect();
        self.algo.accumulate(self.id(row), &z, acc)
    }
    fn mse_per_user(&self) -> (f64, ErrorKind) {
        self.algo.mse_per_user()
    }
    fn mse_note(&self) -> String {
        self.algo.mse_note()
    }
}

impl LocalSketch {
    fn check_accumulator(&self, acc: &[f64]) -> Result<()> {
        if acc.len() != self.accumulator_len() {
            return Err(Error::param(
                "accumulator",
                format!(
                    "has {} entries, the mechanism needs {}",
                    acc.len(),
                    self.accumulator_len()
                ),
            ));
        }
        Ok(())
    }
}
