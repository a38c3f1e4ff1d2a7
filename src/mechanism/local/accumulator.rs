//! The server side of private mean estimation: accumulate privatised rows, merge accumulators
//! from other threads or machines, finish with the mean and its expected error.
//!
//! A [`MeanAccumulator`] holds one running sum of decoded rows (`d` values, whatever the number of
//! rows), the row count, and the row ids it has seen (as ranges, so that memory does not grow
//! with `n` when rows come in order). Two accumulators merge when they belong to the same
//! mechanism configuration (same mechanism, ε, dimensions, constants and public seed) and have
//! seen disjoint row ids: rows with the same id under one seed share their public map, which
//! would break the independence the error formula relies on.
//!
//! ```
//! use dprp::mechanism::local::accumulator::MeanAccumulator;
//! use dprp::mechanism::{self, MechanismKind, MechanismParams};
//! use rand::SeedableRng;
//!
//! # fn main() -> dprp::Result<()> {
//! let params = MechanismParams {
//!     p: 8,
//!     ..MechanismParams::of(MechanismKind::Privunitg, 4.0)
//! };
//! let mech = mechanism::build(&params)?;
//! let client = mech.local().expect("a local mechanism");
//! // Each user, on their own device (noise from the OS in production):
//! let mut rng = rand_chacha::ChaCha20Rng::from_seed([7; 32]);
//! let mut server = MeanAccumulator::new(mech.as_ref())?;
//! let mut other_thread = MeanAccumulator::new(mech.as_ref())?;
//! for user in 0..100u64 {
//!     let v = [0.6, 0.8, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
//!     let message: Vec<f32> = client.client(user, &v, &mut rng)?.iter().map(|&x| x as f32).collect();
//!     let acc = if user % 2 == 0 { &mut server } else { &mut other_thread };
//!     acc.add(user, &message)?;
//! }
//! server.merge(&other_thread)?;
//! let estimate = server.finish()?;
//! assert_eq!(estimate.n, 100);
//! assert_eq!(estimate.mean.len(), 8);
//! // E‖mean − true mean‖² = per-user error / n, from the closed form:
//! assert!((estimate.expected_sq_error - estimate.mse_per_user / 100.0).abs() < 1e-12);
//! # Ok(())
//! # }
//! ```

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::mechanism::local::release::ErrorKind;
use crate::mechanism::{LocalDecoder, Mechanism};

/// Rows per parallel task in [`MeanAccumulator::add_rows`].
const TASK_ROWS: usize = 1024;

/// The portable state of an accumulator (to send to another machine and merge there).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccumulatorState {
    /// The mechanism configuration (its record without the first row id), as JSON.
    pub config: String,
    /// Running sum of decoded rows.
    pub sum: Vec<f64>,
    /// Rows added.
    pub n: u64,
    /// Row ids seen, as sorted disjoint half-open ranges.
    pub ranges: Vec<(u64, u64)>,
}

/// A streaming, mergeable mean accumulator for one local mechanism.
pub struct MeanAccumulator<'m> {
    decoder: &'m dyn LocalDecoder,
    first_row: u64,
    state: AccumulatorState,
}

/// The finished mean and its error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeanEstimate {
    /// The unbiased estimate of the mean of the inputs.
    pub mean: Vec<f64>,
    /// Rows averaged.
    pub n: u64,
    /// Closed-form per-user `E‖Z − v‖²` at the domain's boundary.
    pub mse_per_user: f64,
    /// `E‖mean − true mean‖² = mse_per_user / n` (users independent).
    pub expected_sq_error: f64,
    /// How exact the error figures are.
    pub error_kind: ErrorKind,
    /// For which inputs they hold.
    pub error_note: String,
}

/// The configuration identity of a local mechanism: its record with the first row id zeroed.
fn config_of(mech: &dyn Mechanism) -> Result<(String, u64)> {
    let mut rec = mech.record();
    let first = rec.local.as_ref().map(|l| l.first_row).unwrap_or(0);
    if let Some(l) = rec.local.as_mut() {
        l.first_row = 0;
    }
    let g = mech.guarantee();
    let json = serde_json::to_string(&(rec, g))
        .map_err(|e| Error::param("mechanism", format!("cannot describe it: {e}")))?;
    Ok((json, first))
}

/// The first global id of `rows` rows starting at release row `row` of a release whose ids start
/// at `first`; an error when the last id does not fit in 64 bits (wrapped ids would alias rows
/// of other releases, and escape the overlap check).
fn global_ids(first: u64, row: u64, rows: u64) -> Result<u64> {
    first
        .checked_add(row)
        .filter(|g| g.checked_add(rows).is_some())
        .ok_or_else(|| {
            Error::param(
                "rows",
                format!(
                    "row ids {first} + {row} + {rows} rows overflow 64 bits: the release's first \
                     row id is out of range"
                ),
            )
        })
}

impl<'m> MeanAccumulator<'m> {
    /// An empty accumulator for `mech`; an error if it has no mean decoder.
    pub fn new(mech: &'m dyn Mechanism) -> Result<MeanAccumulator<'m>> {
        let decoder = mech.local().ok_or_else(|| {
            Error::param(
                "release",
                format!(
                    "{} releases sketches, not per-user messages: it has no mean decoder (the \
                     local mechanisms do: {})",
                    mech.kind().name(),
                    crate::mechanism::MechanismKind::local_names()
                ),
            )
        })?;
        let (config, first_row) = config_of(mech)?;
        Ok(MeanAccumulator {
            decoder,
            first_row,
            state: AccumulatorState {
                config,
                sum: vec![0.0; decoder.accumulator_len()],
                n: 0,
                ranges: Vec::new(),
            },
        })
    }

    /// Rebuild an accumulator from a state produced by [`state`](Self::state) (possibly on
    /// another machine) for the same mechanism configuration.
    pub fn from_state(
        mech: &'m dyn Mechanism,
        state: AccumulatorState,
    ) -> Result<MeanAccumulator<'m>> {
        let mut acc = MeanAccumulator::new(mech)?;
        if state.config != acc.state.config {
            return Err(mismatch());
        }
        if state.sum.len() != acc.state.sum.len() {
            return Err(Error::param(
                "accumulator",
                format!(
                    "holds {} values, the mechanism needs {}",
                    state.sum.len(),
                    acc.state.sum.len()
                ),
            ));
        }
        acc.state = state;
        Ok(acc)
    }

    /// The portable state.
    pub fn state(&self) -> &AccumulatorState {
        &self.state
    }

    /// Rows added so far.
    pub fn n(&self) -> u64 {
        self.state.n
    }

    /// Record that global row ids `[start, end)` were added; an error if any was seen before.
    fn claim(&mut self, start: u64, end: u64) -> Result<()> {
        let ranges = &mut self.state.ranges;
        if let Some(last) = ranges.last_mut() {
            if last.1 == start {
                last.1 = end;
                return Ok(());
            }
        }
        if let Some(&(a, b)) = ranges.iter().find(|&&(a, b)| start < b && a < end) {
            return Err(Error::param(
                "rows",
                format!(
                    "row ids {start}..{end} overlap row ids {a}..{b} already added; rows with one \
                     id share their public map (publish shards with disjoint ‹first_row› ranges)"
                ),
            ));
        }
        ranges.push((start, end));
        ranges.sort_unstable();
        Ok(())
    }

    /// Add release row `row` (its message, `message_len` values).
    pub fn add(&mut self, row: u64, message: &[f32]) -> Result<()> {
        let g = global_ids(self.first_row, row, 1)?;
        self.claim(g, g + 1)?;
        self.decoder.accumulate(row, message, &mut self.state.sum)?;
        self.state.n += 1;
        Ok(())
    }

    /// Add consecutive release rows `first_row..` (row-major messages), in parallel.
    pub fn add_rows(&mut self, first_row: u64, messages: &[f32]) -> Result<()> {
        let k = self.decoder.message_len().max(1);
        if !messages.len().is_multiple_of(k) {
            return Err(Error::param(
                "rows",
                format!("{} values are not whole {k}-value rows", messages.len()),
            ));
        }
        let rows = (messages.len() / k) as u64;
        let g = global_ids(self.first_row, first_row, rows)?;
        self.claim(g, g + rows)?;
        let len = self.state.sum.len();
        let decoder = self.decoder;
        let partial = messages
            .par_chunks(TASK_ROWS * k)
            .enumerate()
            .map(|(t, chunk)| -> Result<Vec<f64>> {
                let mut acc = vec![0f64; len];
                decoder.accumulate_rows(first_row + (t * TASK_ROWS) as u64, chunk, &mut acc)?;
                Ok(acc)
            })
            .try_reduce(
                || vec![0f64; len],
                |mut a, b| {
                    a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                    Ok(a)
                },
            )?;
        self.state
            .sum
            .iter_mut()
            .zip(&partial)
            .for_each(|(x, y)| *x += y);
        self.state.n += rows;
        Ok(())
    }

    /// Add another accumulator's rows (same configuration, disjoint row ids).
    pub fn merge(&mut self, other: &MeanAccumulator<'_>) -> Result<()> {
        self.merge_state(&other.state)
    }

    /// [`merge`](Self::merge) with a portable state.
    pub fn merge_state(&mut self, other: &AccumulatorState) -> Result<()> {
        if other.config != self.state.config {
            return Err(mismatch());
        }
        for &(a, b) in &other.ranges {
            self.claim(a, b)?;
        }
        self.state
            .sum
            .iter_mut()
            .zip(&other.sum)
            .for_each(|(x, y)| *x += y);
        self.state.n += other.n;
        Ok(())
    }

    /// The mean of the rows added and its expected squared error; an error when no row was
    /// added.
    pub fn finish(&self) -> Result<MeanEstimate> {
        if self.state.n == 0 {
            return Err(Error::param(
                "release",
                "no rows: the mean of an empty set of users is undefined",
            ));
        }
        let (mse, kind) = self.decoder.mse_per_user();
        Ok(MeanEstimate {
            mean: self.decoder.finish(&self.state.sum, self.state.n)?,
            n: self.state.n,
            mse_per_user: mse,
            expected_sq_error: mse / self.state.n as f64,
            error_kind: kind,
            error_note: self.decoder.mse_note(),
        })
    }
}

fn mismatch() -> Error {
    Error::param(
        "releases",
        "made with a different mechanism configuration (mechanism, ε, dimensions, constants or \
         public seed differ), so their rows cannot be averaged into one estimate with one \
         error formula (publish every shard with the same parameters and ‹projection_seed›)",
    )
}
