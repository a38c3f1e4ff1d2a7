//! The set-up of a publish, before the first row is privatised: the input's scaling (with the
//! column pre-pass of `--scale max-abs`), the mechanism's parameters completed from the input,
//! and the chunk size with the warnings about memory and free space.

use std::path::Path;

use super::{
    chunk_cap, chunk_rows, human_bytes, pipeline_row_bytes, PublishOptions, PublishRequest,
    Warnings, CHUNK_ROWS, NORMALISED_MIN_NORM,
};
use crate::data::scale::{check_finite, column_max_abs, Scaler};
use crate::data::{RowReader, Scaling};
use crate::error::{Error, Result};
use crate::mechanism::{MechanismParams, Payload};

/// Opens the input again (the column pre-pass reads it twice).
pub(super) type Open<'o, 'r> = dyn FnMut() -> Result<Box<dyn RowReader + 'r>> + 'o;

/// Explicit ids are for a release in one file; the ids of the rows must fit in 64 bits.
pub(super) fn check_ids(
    reader: &dyn RowReader,
    opts: &PublishOptions,
    first_row: u64,
) -> Result<()> {
    if reader.has_ids() && opts.part.is_some() {
        return Err(Error::param(
            "‹id_column›",
            "a sharded release numbers its rows globally (shard first row + position); explicit \
             ids are stored only in a release in one file",
        ));
    }
    if let Some(n) = reader.rows_hint() {
        if first_row.checked_add(n).is_none() {
            return Err(Error::param(
                "‹first_row›",
                format!("{first_row} + {n} rows: the row ids overflow 64 bits"),
            ));
        }
    }
    Ok(())
}

/// The public scaling of the rows: what the input records, then the request's steps. With
/// `--scale max-abs` the input is read once for its column maxima (their factors are not covered
/// by the guarantee: a warning says so) and opened again. Returns the scaling recorded in the
/// release, the scaler to apply and the reader to publish from.
pub(super) fn scaling<'r>(
    req: &PublishRequest,
    mut reader: Box<dyn RowReader + 'r>,
    open: &mut Open<'_, 'r>,
    first_row: u64,
    warnings: &mut Warnings,
) -> Result<(Scaling, Scaler, Box<dyn RowReader + 'r>)> {
    let p = reader.dim();
    let mut scaling: Scaling = reader.scaling();
    let col_max = if req.scaling.needs_column_stats() {
        warnings.push(
            "‹scale max-abs› derives per-column factors from the data itself; those factors are not \
             covered by the privacy guarantee (prefer a public bound such as ‹scale 255› or ‹clip›)"
                .to_string(),
        );
        let mut acc = vec![0f32; p];
        let mut buf = Vec::new();
        let mut lab = Vec::new();
        let mut row0 = first_row;
        loop {
            buf.clear();
            lab.clear();
            let got = reader.read_chunk(CHUNK_ROWS, &mut buf, &mut lab)?;
            if got == 0 {
                break;
            }
            check_finite(&buf, p, row0, &req.input)?;
            column_max_abs(&buf, p, &mut acc);
            row0 += got as u64;
        }
        reader = open()?;
        Some(acc)
    } else {
        None
    };
    let scaler = Scaler::new(&req.scaling, col_max.as_deref())?;
    scaling.0.extend(scaler.steps.iter().cloned());
    if scaling.data_dependent() && col_max.is_none() {
        warnings.push(format!(
            "{}: the input was scaled with data-dependent factors (max-abs) when it was converted; \
             those factors are not covered by the privacy guarantee",
            req.input.display()
        ));
    }
    Ok((scaling, scaler, reader))
}

/// The request's parameters completed from the input: its dimension `p`, and for the mechanisms
/// with a public norm bound on l2-normalised rows, the bound f32 rounding allows.
pub(super) fn params(
    req: &PublishRequest,
    p: usize,
    scaling: &Scaling,
    warnings: &mut Warnings,
) -> Result<MechanismParams> {
    let mut params = req.params.clone();
    params.p = p;
    if params.delta.is_some() && !params.kind.needs_delta() {
        warnings.push(format!(
            "{} gives pure ε-{}: ‹delta› is not used",
            params.kind.name(),
            params.kind.guarantee_kind().short()
        ));
    }
    if params.kind.needs_min_norm() && scaling.unit_norm() {
        // l2-normalised rows have norm 1 up to f32 rounding (each value is rounded once, a
        // relative error of at most 2⁻²⁴ in the norm), so a bound "within rounding of 1" is
        // taken as NORMALISED_MIN_NORM: rows are accepted, and the calibration uses the smaller
        // bound, which only makes N₊ larger (more noise).
        match params.min_norm {
            None => params.min_norm = Some(NORMALISED_MIN_NORM),
            Some(nu) if nu > NORMALISED_MIN_NORM && nu <= 1.0 => {
                warnings.push(format!(
                    "the rows are l2-normalised, so their computed norms are 1 only up to \
                     f32 rounding; ‹min_norm {nu}› is taken as {NORMALISED_MIN_NORM} (the \
                     calibration uses that bound: slightly more noise, the same guarantee)"
                ));
                params.min_norm = Some(NORMALISED_MIN_NORM);
            }
            Some(nu) if nu > 1.0 => {
                return Err(Error::param(
                    "‹min_norm›",
                    format!(
                        "{nu} is above 1, but ‹normalize l2› gives every row norm 1: every row \
                         would be refused"
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    Ok(params)
}

/// The shape of the run, for sizing it.
pub(super) struct Shape {
    /// Input dimension.
    pub p: usize,
    /// Output dimension.
    pub k: usize,
    /// The payload.
    pub payload: Payload,
    /// Whether rows carry labels.
    pub has_labels: bool,
    /// The rows, when known beforehand.
    pub rows: Option<u64>,
}

/// Refuse rows of which a single one needs more than the memory budget in the pipeline's
/// buffers: before the public map is made and before anything is allocated for the rows.
pub(super) fn check_row_budget(p: usize, k: usize, payload: Payload, budget: usize) -> Result<()> {
    let per_row = pipeline_row_bytes(p, k, payload);
    if per_row > budget {
        // the sketch's width is to blame when its output outweighs the input row
        let (name, advice) = if crate::release::row_bytes(payload, k) > p.saturating_mul(4) {
            ("‹k›", "use a smaller ‹k›, or raise ‹memory› (in MiB)")
        } else {
            ("‹memory›", "raise ‹memory› (in MiB)")
        };
        return Err(Error::param(
            name,
            format!(
                "one row at p = {p}, k = {k} needs {} of buffers in flight ({per_row} bytes), \
                 above the memory budget of {} ({budget} bytes): {advice} if the machine has the \
                 memory",
                human_bytes(per_row as u64),
                human_bytes(budget as u64)
            ),
        ));
    }
    Ok(())
}

/// Rows per chunk, from the memory budget (a row that alone exceeds it is refused; a short input
/// gets a chunk of its own size); a warning when the release may not fit in the output's file
/// system.
pub(super) fn chunk_size(
    shape: &Shape,
    opts: &PublishOptions,
    output: &Path,
    warnings: &mut Warnings,
) -> Result<usize> {
    let Shape {
        p,
        k,
        payload,
        has_labels,
        rows,
    } = *shape;
    let cap = match opts.read_cap {
        Some(c) => c.max(1),
        None => chunk_cap()?,
    };
    check_row_budget(p, k, payload, opts.memory_budget)?;
    // (a short input is read in one chunk of its own size)
    let chunk =
        chunk_rows(p, k, payload, opts.memory_budget)
            .min(cap)
            .min(rows.map_or(usize::MAX, |n| {
                usize::try_from(n.max(1)).unwrap_or(usize::MAX)
            }));
    if let Some(n) = opts.space_rows.or(rows) {
        let size = crate::release::HEADER_LEN as u64
            + n * (crate::release::row_bytes(payload, k) as u64 + if has_labels { 4 } else { 0 });
        if let Some(free) = crate::atomic::free_space(output) {
            if size > free {
                warnings.push(format!(
                    "the release will take about {} and the file system of {} has {} free; \
                     publishing may fail for lack of space",
                    human_bytes(size),
                    output.display(),
                    human_bytes(free)
                ));
            }
        }
    }
    Ok(chunk)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::publish::BLOCK_ROWS;

    /// Near the limits: a row is refused exactly when it alone exceeds the budget; otherwise the
    /// chunk holds at least one row, at most what fits, a whole number of blocks once one fits.
    #[test]
    fn chunks_fit_the_budget_at_its_edges() {
        for payload in [Payload::F32, Payload::Bits] {
            for budget in [1usize << 20, 3 << 20, 256 << 20] {
                for k in [1usize, 8, 64, 1000] {
                    let per = |p: usize| pipeline_row_bytes(p, k, payload);
                    // the widest p whose row fits (search on the exact formula)
                    let (mut lo, mut hi) = (1usize, budget);
                    while lo < hi {
                        let mid = (lo + hi).div_ceil(2);
                        if per(mid) <= budget {
                            lo = mid
                        } else {
                            hi = mid - 1
                        }
                    }
                    let edge = lo;
                    for p in [edge.saturating_sub(1).max(1), edge, edge + 1, 1, 784, 4096] {
                        let fits = per(p) <= budget;
                        assert_eq!(check_row_budget(p, k, payload, budget).is_ok(), fits);
                        if !fits {
                            continue;
                        }
                        let c = chunk_rows(p, k, payload, budget);
                        assert!(c >= 1 && c * per(p) <= budget, "p {p} k {k}: {c}");
                        assert!(c <= CHUNK_ROWS);
                        if budget / per(p) >= BLOCK_ROWS {
                            assert_eq!(c % BLOCK_ROWS, 0, "p {p} k {k}: {c}");
                        }
                    }
                }
            }
        }
        // sizes that overflow the arithmetic are refused, not wrapped
        assert!(check_row_budget(usize::MAX, 8, Payload::F32, 256 << 20).is_err());
        assert!(check_row_budget(4, usize::MAX / 2, Payload::Bits, 256 << 20).is_err());
    }
}
