//! Two-stage search, second stage: candidates found by any first stage (a database's ANN index,
//! its exact scan, dprp's HNSW) re-ranked by dprp's debiased estimates, each with its standard
//! error — the numbers `dprp estimate --query-vector` prints, for many rows at once.
//!
//! A database ranks noisy sketches by their raw scores. For the inner product of real sketches
//! that ranking is already the debiased one (the estimator is the scaled inner product of the
//! projections, DESIGN.md §6), but the cosine is not: a released row's norm carries the noise,
//! `‖ỹ‖² ≈ ‖y‖² + kσ²`, so the database's cosine divides by an inflated norm that differs from
//! row to row, while the debiased cosine divides by `√(‖ỹ‖² − kσ²)` (Theorems C.1–C.3). For sign
//! sketches with randomised response the Hamming ranking and the debiased cosine (Theorem 4.5)
//! agree in order; the re-ranking adds the standard errors and, after an approximate first
//! stage, restores the exact order among the candidates.
//!
//! The queries are the querier's own raw vectors (no noise on their side: `QueryMode::RawQuery`),
//! projected with the release's public map; re-ranking reads only released rows, so it is
//! post-processing and costs no privacy.
//!
//! **What the standard errors mean after selection.** Each standard error is that of a pair
//! fixed in advance, over independent releases (fresh projection and noise). The candidates kept
//! here are *selected because their estimates are the largest*: among many rows with similar
//! true scores, the ones whose noise happened to push them up rank first, so the top estimates
//! are biased upward and `estimate ± 2·se` covers their true scores less often than 95% (at
//! OPORP, k = 768 ≈ p, the re-ranking work found 0% for the re-ranked top pairs). No interval
//! here is adjusted for that selection; `tests/coverage.rs` measures the effect and
//! docs/error-bars.md reports it. For an error bar on a pair that holds, choose the pair first
//! (or estimate it again from another release) — `dprp estimate` on a pair named in advance.
//! A zero query has no cosine: its estimates are NaN and rank last, as an undefined cosine does.

use crate::error::{Error, Result};
use crate::estimate::{
    agreements, estimate_ip_point, known_row_norm_sq, sign_cosine, Estimator, QueryMode,
};
use crate::mechanism::{central::sign_sketch::pack_signs, Mechanism};
use crate::release::ReleaseSet;
use crate::search::Measure;

/// The padding id of a slot with no candidate (fewer candidates than `top`).
pub const NO_ID: u64 = u64::MAX;

/// Re-ranked candidates, `queries × top` each, best first; slots without a candidate hold
/// [`NO_ID`] and NaN.
#[derive(Debug, Clone, PartialEq)]
pub struct Reranked {
    /// Row ids.
    pub ids: Vec<u64>,
    /// The debiased estimate (inner product or cosine) of each.
    pub estimates: Vec<f64>,
    /// Its standard error.
    pub se: Vec<f64>,
}

/// One candidate scored: the estimate and its standard error (NaN when undefined: a cosine whose
/// estimated norm is not positive, ranked after every defined one), and the raw score it came
/// from (the sketches' inner product, or the sign agreements) that breaks ties — a sign cosine
/// clamped at 1 keeps the Hamming order among the clamped.
#[derive(Debug, Clone, Copy)]
struct Scored {
    id: u64,
    estimate: f64,
    se: f64,
    raw: f64,
}

/// What scoring needs of one query: its projection, packed signs and squared norm, and the
/// sign estimates already computed by agreement count (they depend on nothing else).
struct QueryCtx<'a> {
    x: &'a [f32],
    bits: &'a [u64],
    norm_sq: f64,
    /// Every released row's squared norm when the release's scaling fixes it (the same for all
    /// candidates: looked up once).
    row_norm_sq: Option<f64>,
    by_agreement: &'a mut Vec<Option<(f64, f64)>>,
}

fn score(
    set: &ReleaseSet,
    est: &Estimator,
    by: Measure,
    q: &mut QueryCtx<'_>,
    id: u64,
) -> Result<Scored> {
    let (part, row) = set
        .locate(id)
        .map_err(|e| Error::param("candidates", format!("candidate {id}: {}", e.detail())))?;
    let r = &set.parts()[part];
    let k = set.k();
    let (estimate, se, raw) = match est {
        // one rule for undefined cosines: a zero query's signs are all sign(0), no direction
        Estimator::Sign { .. } if q.norm_sq == 0.0 => (f64::NAN, f64::NAN, f64::NAN),
        Estimator::Sign { eps_prime, .. } => {
            let w = k.div_ceil(64);
            let bits = &r.bits()?[row * w..(row + 1) * w];
            let agree = agreements(q.bits, bits, k);
            let memo = &mut q.by_agreement[agree as usize];
            let (c, s) = *memo.get_or_insert_with(|| {
                let s = sign_cosine(agree, k, *eps_prime, QueryMode::RawQuery);
                (s.cosine, s.se_cosine)
            });
            (c, s, agree as f64)
        }
        _ => {
            let e = estimate_ip_point(est, q.x, r.row(row)?, Some(q.norm_sq), q.row_norm_sq)
                .ok_or_else(|| Error::param("release", "no estimator for this release"))?;
            match by {
                Measure::Ip => (e.inner_product, e.se, e.inner_product),
                _ => (
                    e.cosine.unwrap_or(f64::NAN),
                    e.se_cosine.unwrap_or(f64::NAN),
                    e.inner_product,
                ),
            }
        }
    };
    Ok(Scored {
        id,
        estimate,
        se,
        raw,
    })
}

/// The measure re-ranking uses: `ip` or `cosine` (default) for real sketches; the debiased cosine
/// for signs (given as `cosine`, `hamming` or nothing), refused when the flips depend on the data.
pub fn rerank_measure(est: &Estimator, given: Option<Measure>) -> Result<Measure> {
    match est {
        Estimator::Sign { eps_prime, .. } => {
            if eps_prime.is_none() {
                return Err(Error::param(
                    "release",
                    "its sign flips depend on the data (smooth flipping or iDP), so the agreement \
                     rate cannot be debiased into a cosine to re-rank by",
                ));
            }
            match given {
                None | Some(Measure::Cosine | Measure::Hamming) => Ok(Measure::Cosine),
                Some(Measure::Ip) => Err(Error::param(
                    "measure",
                    "a sign release estimates cosines, not inner products: re-rank by cosine",
                )),
            }
        }
        _ => match given {
            None | Some(Measure::Cosine) => Ok(Measure::Cosine),
            Some(Measure::Ip) => Ok(Measure::Ip),
            Some(Measure::Hamming) => Err(Error::param(
                "measure",
                "hamming is for sign releases; re-rank a real-valued release by ip or cosine",
            )),
        },
    }
}

/// Re-rank `candidates` (`queries × c` row ids, [`NO_ID`] for none; repeats counted once) for the
/// raw `queries` (`queries × p`, already on the release's scale), keeping the best `top` by the
/// debiased estimate of `by` ([`rerank_measure`]).
pub fn rerank(
    set: &ReleaseSet,
    m: &dyn Mechanism,
    queries: &[f32],
    candidates: &[u64],
    c: usize,
    top: usize,
    by: Option<Measure>,
) -> Result<Reranked> {
    let sk = m.as_sketch()?;
    let est = sk.estimator();
    let by = rerank_measure(&est, by)?;
    let (p, k) = (m.input_dim(), set.k());
    let nq = queries.len().checked_div(p).unwrap_or(0);
    if nq * p != queries.len() || candidates.len() != nq * c {
        return Err(Error::param(
            "candidates",
            format!(
                "{} candidate ids for {nq} queries are not {c} per query",
                candidates.len()
            ),
        ));
    }
    if top > set.n() {
        return Err(Error::param(
            "top",
            format!("K = {top} exceeds the {} rows of the release", set.n()),
        ));
    }
    let row_norm_sq = known_row_norm_sq(&set.meta().scaling);
    let mut out = Reranked {
        ids: Vec::with_capacity(nq * top),
        estimates: Vec::with_capacity(nq * top),
        se: Vec::with_capacity(nq * top),
    };
    let (mut x, mut q_bits) = (vec![0f32; k], vec![0u64; k.div_ceil(64)]);
    let mut by_agreement = vec![None; k + 1];
    for (qi, u) in queries.chunks(p.max(1)).take(nq).enumerate() {
        let cands = &candidates[qi * c..(qi + 1) * c];
        sk.project(u, &mut x)?;
        pack_signs(&x, &mut q_bits);
        let mut q = QueryCtx {
            x: &x,
            bits: &q_bits,
            norm_sq: u.iter().map(|&a| a as f64 * a as f64).sum::<f64>(),
            row_norm_sq,
            by_agreement: &mut by_agreement,
        };
        let mut seen: Vec<u64> = cands.iter().copied().filter(|&i| i != NO_ID).collect();
        seen.sort_unstable();
        seen.dedup();
        let mut scored = seen
            .into_iter()
            .map(|id| score(set, &est, by, &mut q, id))
            .collect::<Result<Vec<_>>>()?;
        // best first; undefined (NaN) last; ties by the raw score, then by id
        scored.sort_by(|a, b| {
            a.estimate
                .is_nan()
                .cmp(&b.estimate.is_nan())
                .then(
                    b.estimate
                        .partial_cmp(&a.estimate)
                        .unwrap_or(std::cmp::Ordering::Equal),
                )
                .then(
                    b.raw
                        .partial_cmp(&a.raw)
                        .unwrap_or(std::cmp::Ordering::Equal),
                )
                .then(a.id.cmp(&b.id))
        });
        for j in 0..top {
            match scored.get(j) {
                Some(s) => {
                    out.ids.push(s.id);
                    out.estimates.push(s.estimate);
                    out.se.push(s.se);
                }
                None => {
                    out.ids.push(NO_ID);
                    out.estimates.push(f64::NAN);
                    out.se.push(f64::NAN);
                }
            }
        }
    }
    Ok(out)
}
