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

use crate::error::{Error, Result};
use crate::estimate::{agreements, estimate_ip, sign_cosine, Estimator, QueryMode};
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

/// One candidate's estimate and standard error; NaN when undefined (a cosine whose estimated
/// norm is not positive), which ranks after every defined one.
fn score(
    set: &ReleaseSet,
    est: &Estimator,
    by: Measure,
    x: &[f32],
    q_bits: &[u64],
    nsq: f64,
    id: u64,
) -> Result<(f64, f64)> {
    let (part, row) = set
        .locate(id)
        .map_err(|e| Error::param("candidates", format!("candidate {id}: {}", e.detail())))?;
    let r = &set.parts()[part];
    let k = set.k();
    Ok(match est {
        Estimator::Sign { eps_prime, .. } => {
            let w = k.div_ceil(64);
            let bits = &r.bits()?[row * w..(row + 1) * w];
            let s = sign_cosine(
                agreements(q_bits, bits, k),
                k,
                *eps_prime,
                QueryMode::RawQuery,
            );
            (s.cosine, s.se_cosine)
        }
        _ => {
            let e = estimate_ip(est, x, r.row(row)?, Some(nsq))
                .ok_or_else(|| Error::param("release", "no estimator for this release"))?;
            match by {
                Measure::Ip => (e.inner_product, e.se),
                _ => (
                    e.cosine.unwrap_or(f64::NAN),
                    e.se_cosine.unwrap_or(f64::NAN),
                ),
            }
        }
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
    let mut out = Reranked {
        ids: Vec::with_capacity(nq * top),
        estimates: Vec::with_capacity(nq * top),
        se: Vec::with_capacity(nq * top),
    };
    let (mut x, mut q_bits) = (vec![0f32; k], vec![0u64; k.div_ceil(64)]);
    for (u, cands) in queries.chunks(p.max(1)).zip(candidates.chunks(c.max(1))) {
        sk.project(u, &mut x)?;
        pack_signs(&x, &mut q_bits);
        let nsq = u.iter().map(|&a| a as f64 * a as f64).sum::<f64>();
        let mut seen: Vec<u64> = cands.iter().copied().filter(|&i| i != NO_ID).collect();
        seen.sort_unstable();
        seen.dedup();
        let mut scored = seen
            .into_iter()
            .map(|id| Ok((id, score(set, &est, by, &x, &q_bits, nsq, id)?)))
            .collect::<Result<Vec<_>>>()?;
        // best first; undefined (NaN) last; ties by id
        scored.sort_by(|a, b| {
            let (sa, sb) = (a.1 .0, b.1 .0);
            sa.is_nan()
                .cmp(&sb.is_nan())
                .then(sb.partial_cmp(&sa).unwrap_or(std::cmp::Ordering::Equal))
                .then(a.0.cmp(&b.0))
        });
        for j in 0..top {
            let (id, (e, s)) = scored
                .get(j)
                .copied()
                .unwrap_or((NO_ID, (f64::NAN, f64::NAN)));
            out.ids.push(id);
            out.estimates.push(e);
            out.se.push(s);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanism::{from_record, MechanismKind};
    use crate::search::{exact, Sketch};

    fn release(dir: &std::path::Path, kind: MechanismKind, eps: f64) -> ReleaseSet {
        let data = crate::data::sample::generate();
        let input = dir.join("s.bin");
        crate::data::native::write(&input, &data).unwrap();
        let output = dir.join(format!("{kind:?}-{eps}.dprp"));
        let req = crate::publish::PublishRequest {
            input,
            input_opts: Default::default(),
            // a sign release needs a norm floor: --normalize l2 gives every row norm 1
            scaling: crate::data::scale::ScalingRequest {
                normalize_l2: kind != MechanismKind::DpOporp,
                ..Default::default()
            },
            params: crate::mechanism::MechanismParams {
                kind,
                epsilon: eps,
                delta: Some(1e-6),
                beta: 1.0,
                neighbour: crate::privacy::guarantee::Neighbour::Coordinate,
                p: 0,
                k: Some(64),
                projection: None,
                seed: None,
                min_norm: None,
                individual_dp: false,
                local: Default::default(),
            },
            output: output.clone(),
        };
        let noise = crate::privacy::samplers::noise::NoiseSource::from_os().unwrap();
        crate::publish::publish(&req, &noise).unwrap();
        ReleaseSet::open(&output).unwrap()
    }

    /// Released rows 0..3 used as raw queries (the sample is on the release's scale).
    fn queries(set: &ReleaseSet) -> Vec<f32> {
        let data = crate::data::sample::generate();
        data.values[..3 * set.meta().p].to_vec()
    }

    #[test]
    fn re_ranking_every_row_by_ip_is_the_exact_search_with_the_estimates_of_dprp_estimate() {
        let d = tempfile::tempdir().unwrap();
        let set = release(d.path(), MechanismKind::DpOporp, 4.0);
        let meta = set.meta();
        let m = from_record(&meta.mechanism, &meta.guarantee).unwrap();
        let q = queries(&set);
        let n = set.n();
        let all: Vec<u64> = (0..3).flat_map(|_| 0..n as u64).collect();
        let r = rerank(&set, m.as_ref(), &q, &all, n, 10, Some(Measure::Ip)).unwrap();
        let crate::search::queries::QuerySketches::Real(x) =
            crate::search::queries::sketch_queries(m.as_ref(), meta.payload, &q).unwrap()
        else {
            panic!("a real release")
        };
        let db = Sketch::Real {
            data: set.parts()[0].values().unwrap(),
            k: set.k(),
        };
        let qs = Sketch::Real {
            data: &x,
            k: set.k(),
        };
        let hits = exact::search(&db, &qs, Measure::Ip, 10, None).unwrap();
        let est = m.as_sketch().unwrap().estimator();
        for (qi, h) in hits.iter().enumerate() {
            let ids: Vec<u64> = h.iter().map(|h| h.row as u64).collect();
            assert_eq!(&r.ids[qi * 10..(qi + 1) * 10], &ids[..]);
            let u = &q[qi * meta.p..(qi + 1) * meta.p];
            let nsq = u.iter().map(|&a| a as f64 * a as f64).sum::<f64>();
            let row = set.parts()[0].row(ids[0] as usize).unwrap();
            let e = estimate_ip(&est, &x[qi * 64..(qi + 1) * 64], row, Some(nsq)).unwrap();
            assert_eq!(
                (r.estimates[qi * 10], r.se[qi * 10]),
                (e.inner_product, e.se)
            );
            assert!(r.se[qi * 10] > 0.0);
        }
        // the cosine is the debiased one, and scores descend (undefined ones last)
        let c = rerank(&set, m.as_ref(), &q, &all, n, 10, None).unwrap();
        for qi in 0..3 {
            let s = &c.estimates[qi * 10..(qi + 1) * 10];
            assert!(s.windows(2).all(|w| w[0] >= w[1] || w[1].is_nan()), "{s:?}");
        }
    }

    #[test]
    fn padding_repeats_and_bad_candidates() {
        let d = tempfile::tempdir().unwrap();
        let set = release(d.path(), MechanismKind::DpSignrpRr, 3.0);
        let meta = set.meta();
        let m = from_record(&meta.mechanism, &meta.guarantee).unwrap();
        let q = &queries(&set)[..meta.p];
        let r = rerank(&set, m.as_ref(), q, &[5, NO_ID, 5, 7], 4, 3, None).unwrap();
        assert_eq!(r.ids.iter().filter(|&&i| i == NO_ID).count(), 1);
        assert!(r.ids[..2].contains(&5) && r.ids[..2].contains(&7));
        assert!(r.estimates[2].is_nan() && r.se[2].is_nan());
        // the sign estimate is the debiased cosine of dprp estimate, in the raw-query mode
        let est = m.as_sketch().unwrap().estimator();
        let Estimator::Sign { eps_prime, .. } = est else {
            panic!("a sign release")
        };
        let mut x = vec![0f32; 64];
        m.as_sketch().unwrap().project(q, &mut x).unwrap();
        let mut qb = vec![0u64; 1];
        pack_signs(&x, &mut qb);
        let row = set.parts()[0].bits().unwrap()[r.ids[0] as usize];
        let s = sign_cosine(
            agreements(&qb, &[row], 64),
            64,
            eps_prime,
            QueryMode::RawQuery,
        );
        assert_eq!((r.estimates[0], r.se[0]), (s.cosine, s.se_cosine));
        let e = rerank(&set, m.as_ref(), q, &[set.n() as u64 + 3], 1, 1, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("candidate") && e.contains(&(set.n() + 3).to_string()),
            "{e}"
        );
        let e = rerank(&set, m.as_ref(), q, &[1], 1, 1, Some(Measure::Ip)).unwrap_err();
        assert!(e.to_string().contains("cosine"), "{e}");
        let e = rerank(&set, m.as_ref(), q, &[1, 2, 3], 2, 1, None).unwrap_err();
        assert!(e.to_string().contains("candidate"), "{e}");
    }
}
