//! Privatising chunks of rows: the parallel split of a chunk into blocks (a row's noise is that
//! of its id, whatever the split), the checks every row passes first (domain, public norm bound),
//! and the in-memory variants used by evaluation and benchmarks.

use rayon::prelude::*;

use super::BLOCK_ROWS;
use crate::data::scale::{check_finite, check_input_domain, Scaler};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::mechanism::{self, Mechanism, Payload, SketchMut};
use crate::privacy::samplers::noise::NoiseSource;

/// Most blocks per parallel task: each task privatises up to `GROUP_BLOCKS·BLOCK_ROWS` rows
/// at once (fewer for small chunks, see `group_rows`).
pub const GROUP_BLOCKS: usize = 4;

/// Privatise real-valued rows whose first row has global id `first_row` into `out`
/// (`rows × output_dim`), in parallel, without validation (the caller has checked the domain).
/// Used by benchmarks to time the privatisation alone.
pub fn privatise_real(
    mech: &dyn Mechanism,
    rows: &[f32],
    first_row: u64,
    noise: &NoiseSource,
    out: &mut [f32],
) -> Result<()> {
    let (p, k) = (mech.input_dim(), mech.output_dim());
    let group = GROUP_BLOCKS * BLOCK_ROWS;
    rows.par_chunks(group * p)
        .zip(out.par_chunks_mut(group * k))
        .enumerate()
        .map(|(g, (r, o))| {
            let first = mechanism::row_id(first_row, g * group)?;
            mech.privatise_rows(r, SketchMut::Real(o), first, noise)
        })
        .collect::<Vec<Result<()>>>()
        .into_iter()
        .collect()
}

/// Rows per parallel task for a chunk of `rows` rows: [`GROUP_BLOCKS`] blocks, fewer when the
/// chunk is small (wide sketches) so that every thread still gets work. The output does not
/// depend on it: each row draws from its own stream, and each row's projection is computed on
/// its own.
fn group_rows(rows: usize) -> usize {
    let blocks = rows.div_ceil(BLOCK_ROWS);
    let per_thread = blocks / rayon::current_num_threads().max(1);
    per_thread.clamp(1, GROUP_BLOCKS) * BLOCK_ROWS
}

/// Privatised rows held in memory.
#[derive(Debug, Clone, PartialEq)]
pub enum Sketches {
    /// `n×k` values, row-major.
    Real(Vec<f32>),
    /// `n×⌈k/64⌉` words of packed signs.
    Bits(Vec<u64>),
}

/// A pipeline output buffer.
pub(super) enum OutBuf {
    F32(Vec<f32>),
    Bits(Vec<u64>),
}

impl OutBuf {
    pub(super) fn resize(&mut self, len: usize) {
        match self {
            OutBuf::F32(v) => v.resize(len, 0.0),
            OutBuf::Bits(v) => v.resize(len, 0),
        }
    }
}

/// Norm lower bound used when rows are l2-normalised and no --min-norm is given: 1 less a margin
/// for f32 rounding of the normalised rows.
pub const NORMALISED_MIN_NORM: f64 = 1.0 - 1e-5;

/// Refuse rows whose ℓ₂ norm is below the mechanism's public bound.
fn check_min_norm(
    values: &[f32],
    p: usize,
    first_row: u64,
    nu: f64,
    path: &std::path::Path,
) -> Result<()> {
    for (r, row) in values.chunks(p).enumerate() {
        let norm = row
            .iter()
            .map(|&v| (v as f64) * (v as f64))
            .sum::<f64>()
            .sqrt();
        if norm < nu {
            return Err(Error::Row {
                path: path.to_path_buf(),
                row: first_row + r as u64,
                msg: format!(
                    "its ℓ₂ norm {norm:.6} is below the public bound ‹min_norm {nu}›; the N₊ \
                     calibration is valid only for rows at or above it (filter or rescale such rows, \
                     or lower ‹min_norm›)"
                ),
            });
        }
    }
    Ok(())
}

/// Validate (scaling first when asked), then privatise one pipeline chunk, all in parallel groups,
/// recording per row how many outputs could be perturbed. The error reported is the first bad cell
/// in row order, whichever thread found it.
#[allow(clippy::too_many_arguments)]
pub(super) fn process_chunk(
    mech: &dyn Mechanism,
    scaler: Option<&Scaler>,
    values: &mut [f32],
    first_row: u64,
    noise: &NoiseSource,
    out: &mut OutBuf,
    perturbed: &mut [u32],
    path: &std::path::Path,
) -> Result<()> {
    let p = mech.input_dim();
    let group = group_rows(values.len() / p.max(1));
    let per_row = match out {
        OutBuf::F32(_) => mech.output_dim(),
        OutBuf::Bits(_) => mech.output_dim().div_ceil(64),
    };
    let nu = mech.sketch().and_then(|s| s.min_norm());
    let work = |g: usize, v: &mut [f32], o: SketchMut<'_>, c: &mut [u32]| -> Result<()> {
        // The group's first id: the chunk's first id plus the rows before it, whatever the
        // chunk's size or alignment (each row's noise and public map follow from its id).
        let r0 = mechanism::row_id(first_row, g * group)?;
        if let Some(s) = scaler {
            // Non-finite input is refused before any scaling (--clip must not turn inf into 1).
            check_finite(v, p, r0, path)?;
            s.apply(v, p);
        }
        check_input_domain(mech.input_domain(), v, p, r0, path)?;
        if let Some(nu) = nu {
            check_min_norm(v, p, r0, nu, path)?;
        }
        mech.privatise_rows_counted(v, o, r0, noise, c)
    };
    let results: Vec<Result<()>> = match out {
        OutBuf::F32(o) => values
            .par_chunks_mut(group * p)
            .zip(o.par_chunks_mut(group * per_row))
            .zip(perturbed.par_chunks_mut(group))
            .enumerate()
            .map(|(g, ((v, o), c))| work(g, v, SketchMut::Real(o), c))
            .collect(),
        OutBuf::Bits(o) => values
            .par_chunks_mut(group * p)
            .zip(o.par_chunks_mut(group * per_row))
            .zip(perturbed.par_chunks_mut(group))
            .enumerate()
            .map(|(g, ((v, o), c))| work(g, v, SketchMut::Bits(o), c))
            .collect(),
    };
    results.into_iter().collect()
}

pub(super) fn payload_elem(p: Payload) -> usize {
    match p {
        Payload::F32 => 4,
        Payload::Bits => 8,
    }
}

/// Privatise a whole in-memory dataset with `mech` (used by evaluation and tests): exactly what
/// [`publish`](super::publish) writes for the same noise key.
pub fn privatise_dataset(
    mech: &dyn Mechanism,
    data: &Dataset,
    noise: &NoiseSource,
) -> Result<Sketches> {
    privatise_dataset_at(mech, data, noise, 0)
}

/// [`privatise_dataset`] for rows whose global ids start at `first_row` (each row draws its noise
/// from the stream of its id and a local mechanism derives each row's public map from it, so rows
/// of another batch of users — e.g. the queries of a retrieval evaluation — get streams and maps
/// of their own when their ids follow the first batch's). Use [`first_row_after`] for the first id
/// after `n` rows.
pub fn privatise_dataset_at(
    mech: &dyn Mechanism,
    data: &Dataset,
    noise: &NoiseSource,
    first_row: u64,
) -> Result<Sketches> {
    if data.p != mech.input_dim() {
        return Err(Error::param(
            "input",
            format!(
                "data has {} features, the mechanism expects {}",
                data.p,
                mech.input_dim()
            ),
        ));
    }
    let mut values = data.values.clone();
    let mut out = match mech.payload() {
        Payload::F32 => OutBuf::F32(vec![0.0; data.n * mech.output_dim()]),
        Payload::Bits => OutBuf::Bits(vec![0; data.n * mech.output_dim().div_ceil(64)]),
    };
    let mut perturbed = vec![0u32; data.n];
    let path = std::path::Path::new("<in-memory dataset>");
    process_chunk(
        mech,
        None,
        &mut values,
        first_row,
        noise,
        &mut out,
        &mut perturbed,
        path,
    )?;
    Ok(match out {
        OutBuf::F32(v) => Sketches::Real(v),
        OutBuf::Bits(v) => Sketches::Bits(v),
    })
}

/// The first block boundary at or after `n` rows: where a second batch of rows starts (see
/// [`privatise_dataset_at`]; any id at or after `n` would do, a round one reads better).
pub fn first_row_after(n: usize) -> u64 {
    n.div_ceil(BLOCK_ROWS) as u64 * BLOCK_ROWS as u64
}

/// Rows, their labels and their explicit ids (empty unless the input has ids).
pub(super) type Chunk = (Vec<f32>, Vec<f32>, Vec<u64>);
