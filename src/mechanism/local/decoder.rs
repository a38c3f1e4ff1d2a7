//! The server side of the local mechanisms: decoding a release's rows (each user's message) into
//! the mean, the closed-form error of the mean, and the client function a device runs. The
//! accumulator that uses it is [`crate::mechanism::local::accumulator::MeanAccumulator`].

use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

use super::release::{Algo, LocalSketch};
use super::ProjKind;
use crate::error::{Error, Result};
use crate::mechanism::Mechanism;
use crate::projection::hadamard::next_pow2;

/// How exact a recorded error figure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// The closed form is exact.
    Exact,
    /// The closed form neglects a small bias (SRHT).
    Approximate,
    /// The closed form bounds the error from above.
    UpperBound,
}

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
        match &self.algo {
            Algo::PrivUnit2(m) => m.privatize(v, rng),
            Algo::PrivUnitG(m) => m.privatize(v, rng),
            Algo::ProjUnit(m, seed) => {
                let w = m.matrix(self.row_seed(*seed, row))?;
                m.encode(&w, v, rng)
            }
            Algo::Nearly(m, seed) => {
                let w = m.matrix(self.row_seed(*seed, row))?;
                m.encode(&w, v, rng)
            }
            Algo::Scalar(m) => {
                if v.len() != 1 {
                    return Err(Error::param(
                        "input vector",
                        format!("scalar-dp takes one value, got {}", v.len()),
                    ));
                }
                Ok(vec![m.privatize(v[0], rng)?])
            }
            Algo::Norm(m) => m.privatize(v, rng),
            Algo::Correlated(m, public) => {
                m.encode(public, self.first_row.wrapping_add(row), v, rng)
            }
            Algo::Inf(m) => m.privatize(v, rng),
        }
    }
    fn accumulator_len(&self) -> usize {
        match &self.algo {
            Algo::Correlated(m, _) => m.d_pad,
            _ => self.d,
        }
    }
    fn accumulate_rows(&self, first_row: u64, messages: &[f32], acc: &mut [f64]) -> Result<()> {
        let k = self.output_dim();
        let Algo::Correlated(m, public) = &self.algo else {
            for (i, msg) in messages.chunks_exact(k).enumerate() {
                self.accumulate(first_row + i as u64, msg, acc)?;
            }
            return Ok(());
        };
        let mut scratch = m.scratch();
        let mut z = vec![0f64; k];
        for (i, msg) in messages.chunks_exact(k).enumerate() {
            z.iter_mut().zip(msg).for_each(|(a, &b)| *a = b as f64);
            let row = self.first_row.wrapping_add(first_row + i as u64);
            m.scatter_with(public, row, &z, acc, &mut scratch)?;
        }
        Ok(())
    }
    fn finish(&self, acc: &[f64], n: u64) -> Result<Vec<f64>> {
        match &self.algo {
            Algo::Correlated(m, public) => m.finish(public, acc, n.max(1)),
            _ => {
                let inv = 1.0 / n.max(1) as f64;
                Ok(acc.iter().map(|x| x * inv).collect())
            }
        }
    }
    fn accumulate(&self, row: u64, message: &[f32], acc: &mut [f64]) -> Result<()> {
        self.check_message(message)?;
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
        let z: Vec<f64> = message.iter().map(|&x| x as f64).collect();
        let x = match &self.algo {
            Algo::Correlated(m, public) => {
                return m.scatter(public, self.first_row.wrapping_add(row), &z, acc);
            }
            Algo::ProjUnit(m, seed) => {
                let w = m.matrix(self.row_seed(*seed, row))?;
                m.decode(&w, &z)?
            }
            Algo::Nearly(m, seed) => {
                let w = m.matrix(self.row_seed(*seed, row))?;
                m.decode(&w, &z)?
            }
            _ => z,
        };
        acc.iter_mut().zip(&x).for_each(|(a, b)| *a += b);
        Ok(())
    }
    fn mse_per_user(&self) -> (f64, ErrorKind) {
        match &self.algo {
            Algo::PrivUnit2(m) => (m.mse_unit(), ErrorKind::Exact),
            Algo::PrivUnitG(m) => (m.mse_unit(), ErrorKind::Exact),
            Algo::ProjUnit(m, _) => match m.mse(1.0) {
                Some(e) => (e, ErrorKind::Exact),
                None => {
                    // SRHT: ‖Wᵀẑ‖² = (d'/k)‖ẑ‖² before truncation to d, E‖ẑ‖² = scale²(E[α²] +
                    // k − 1). The decoder keeps the first d of the d' padded coordinates, which
                    // hold about d/d' of the mass (each row of H spreads ‖·‖² evenly), so
                    // E‖X‖² ≈ c²·(d/k)·E‖ẑ‖², exact when d = d'. The error E‖X‖² − 1 neglects
                    // the small bias of the normalised SRHT estimator. (Using d' here overstated
                    // the error by d'/d, found by `dprp eval mean`'s closed-form check.)
                    let s2 = m.inner.scale * m.inner.scale;
                    let ez2 = s2 * (m.inner.e_alpha2 + (m.k - 1) as f64);
                    (
                        m.c * m.c * m.d as f64 / m.k as f64 * ez2 - 1.0,
                        ErrorKind::Approximate,
                    )
                }
            },
            Algo::Nearly(m, _) => {
                // ‖X‖² = C·(d'/k)·‖ẑ[1..k]‖² ≤ C·(d'/k)·‖ẑ‖², E‖ẑ‖² = scale²(E[α²] + k).
                let dp = next_pow2(m.d).unwrap_or(m.d) as f64;
                let s2 = m.inner.scale * m.inner.scale;
                let ez2 = s2 * (m.inner.e_alpha2 + m.k as f64);
                (
                    m.c_norm * dp / m.k as f64 * ez2 - 1.0,
                    ErrorKind::UpperBound,
                )
            }
            Algo::Correlated(m, _) => (m.mse_unit(), ErrorKind::Approximate),
            Algo::Inf(m) => (m.mse_corner(), ErrorKind::Exact),
            Algo::Scalar(m) => (m.mse(m.r_max).unwrap_or(f64::NAN), ErrorKind::Exact),
            Algo::Norm(m) => (m.mse(m.radius()).unwrap_or(f64::NAN), ErrorKind::Exact),
        }
    }
    fn mse_note(&self) -> String {
        let ball = "for unit-norm inputs; an input of norm r < 1 adds 1 − r² (it is first \
                    rounded to the sphere)";
        match &self.algo {
            Algo::ProjUnit(m, _) if m.kind == ProjKind::Srht => format!(
                "approximate (neglects the small bias of the normalised SRHT estimator), {ball}"
            ),
            Algo::Nearly(..) => format!("an upper bound, {ball}"),
            Algo::Correlated(..) => format!(
                "approximate: the per-user SRHT error, {ball}; the shared diagonal D adds a small \
                 bias term to the error of the mean that does not shrink with n (not in closed form)"
            ),
            Algo::Inf(m) => format!(
                "exact for inputs at a corner of the cube (every |u_j| = 1); an input u has \
                 d/m² − ‖u‖² = {:.6} − ‖u‖²",
                m.d as f64 / (m.m * m.m)
            ),
            Algo::Scalar(m) => format!(
                "exact for the input value R = {} (the error depends on the value)",
                m.r_max
            ),
            Algo::Norm(m) => format!(
                "exact for inputs of norm R = {} (the error depends on the norm)",
                m.radius()
            ),
            _ => format!("exact {ball}"),
        }
    }
}
