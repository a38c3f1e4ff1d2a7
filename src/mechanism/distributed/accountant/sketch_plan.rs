//! Sketch-DDG's plan (Chen et al. 2022, Algorithm 2): the count-sketch size `m` and the DDG
//! parameters in `m` dimensions that minimise the expected squared error of the mean within a
//! cap on the bits each client sends per input parameter. The DDG part is
//! [`super::params`]'s planner run on the sketched vectors; the error terms and the wrap bound are
//! documented there.

use super::params::{best_ddg, DdgPlan, DistributedRequest, SKETCH_CLIP_FACTOR};
use crate::error::{Error, Result};
use crate::privacy::zcdp;
use crate::projection::count_sketch::CountSketch;
use crate::projection::hadamard::next_pow2;

/// A sketch-DDG plan: the sketch size and the DDG plan in `m` dimensions, with every candidate
/// evaluated.
#[derive(Debug, Clone, PartialEq)]
pub struct SketchDdgPlan {
    /// Sketch rows `m` (a power of two).
    pub m: u64,
    /// Sketch blocks `t` (1: the sketch variance does not depend on `t`).
    pub t: u64,
    /// The DDG plan in `m` dimensions; its `mse.sketch` holds the compression term and its
    /// `bits_per_parameter` is `b·m/d`.
    pub ddg: DdgPlan,
    /// Every `(m, total MSE, bits per parameter)` evaluated, `m` ascending.
    pub candidates: Vec<(u64, f64, f64)>,
}

/// Choose the sketch size `m` (and DDG parameters in `m` dimensions) minimising the expected MSE
/// within `max_bits_per_parameter` (the module documentation of [`super::params`]).
pub fn plan_sketch_ddg(
    req: &DistributedRequest,
    max_bits_per_parameter: Option<f64>,
) -> Result<SketchDdgPlan> {
    plan_sketch_ddg_for(req, max_bits_per_parameter, req.n)
}

/// [`plan_sketch_ddg`] with the wrap bound for sums of up to `sum_clients` messages (as
/// [`super::params::plan_ddg_for`]).
pub fn plan_sketch_ddg_for(
    req: &DistributedRequest,
    max_bits_per_parameter: Option<f64>,
    sum_clients: u64,
) -> Result<SketchDdgPlan> {
    req.check()?;
    if let Some(b) = max_bits_per_parameter {
        if !(b.is_finite() && b > 0.0) {
            return Err(Error::param(
                "bits per parameter",
                format!("the cap must be a positive finite number, got {b}"),
            ));
        }
    }
    let d_rot = next_pow2(
        usize::try_from(req.d)
            .map_err(|_| Error::param("dimension d", format!("d = {} is too large", req.d)))?,
    )? as u64;
    let rho_target = zcdp::rho_for_epsilon(req.epsilon, req.delta)?;
    let mut candidates = Vec::new();
    let mut best: Option<(u64, DdgPlan)> = None;
    let mut m = 1u64;
    while m <= d_rot {
        let bpp = req.bits as f64 * m as f64 / req.d as f64;
        if max_bits_per_parameter.is_some_and(|cap| bpp > cap) {
            break;
        }
        let spread = req.d as f64 / m as f64;
        // the DDG sees the sketched vectors, clipped at SKETCH_CLIP_FACTOR·c: its sensitivity
        let sketched = DistributedRequest {
            clip: req.clip * SKETCH_CLIP_FACTOR,
            ..*req
        };
        if let Ok(mut plan) = best_ddg(&sketched, req.d, m, spread, rho_target, sum_clients) {
            plan.mse.sketch =
                CountSketch::expected_error_sq(req.d as usize, m as usize, req.clip * req.clip);
            plan.bits_per_parameter = bpp;
            candidates.push((m, plan.mse.total(), bpp));
            if best
                .as_ref()
                .is_none_or(|(_, b)| plan.mse.total() < b.mse.total())
            {
                best = Some((m, plan));
            }
        }
        m *= 2;
    }
    if let Some(cap) = max_bits_per_parameter {
        let least = req.bits as f64 / req.d as f64;
        if least > cap {
            return Err(Error::param(
                "‹bits_per_parameter›",
                format!(
                    "{cap} is below what the smallest sketch sends: m = 1 row of b = {} bits for \
                     d = {} parameters is {least:.4} bits per parameter (raise it, or lower ‹bits›)",
                    req.bits, req.d
                ),
            ));
        }
    }
    let (m, ddg) = best.ok_or_else(|| {
        Error::param(
            "‹bits›",
            format!(
                "no sketch size m meets the wrap target {} with b = {} bits{}",
                req.max_wrap_probability,
                req.bits,
                max_bits_per_parameter
                    .map(|c| format!(" within {c} bits per parameter"))
                    .unwrap_or_default()
            ),
        )
    })?;
    Ok(SketchDdgPlan {
        m,
        t: 1,
        ddg,
        candidates,
    })
}
