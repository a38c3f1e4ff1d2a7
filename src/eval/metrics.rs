//! Retrieval metrics and ground truth (DESIGN.md §9).
//!
//! Ground truth: the top-10 database rows of each query by cosine on the original vectors (ties
//! broken by the smaller row index, as in [`crate::search::exact`]). With `T` the true top-10 of a
//! query and `R_m` the first `m` rows retrieved from the sketches:
//!
//! - precision@10 = |R₁₀ ∩ T| / 10,
//! - recall@100 = |R₁₀₀ ∩ T| / 10,
//!
//! each averaged over the queries. (With |T| = 10 both divide by 10; in general by |T|.)

use crate::error::Result;
use crate::search::{exact, Hit, Measure, Sketch};

/// Size of the true neighbour set.
pub const TRUE_TOP: usize = 10;
/// Cut-off of precision@10.
pub const PRECISION_AT: usize = 10;
/// Cut-off of recall@100.
pub const RECALL_AT: usize = 100;

/// The true top-`top` neighbours (row indices, best first) of each query among the database rows,
/// by cosine on the original `p`-dimensional vectors.
pub fn ground_truth(
    database: &[f32],
    queries: &[f32],
    p: usize,
    top: usize,
) -> Result<Vec<Vec<usize>>> {
    let db = Sketch::Real {
        data: database,
        k: p,
    };
    let q = Sketch::Real {
        data: queries,
        k: p,
    };
    let hits = exact::search(&db, &q, Measure::Cosine, top, None)?;
    Ok(rows_of(&hits))
}

/// Row indices of search hits.
pub fn rows_of(hits: &[Vec<Hit>]) -> Vec<Vec<usize>> {
    hits.iter()
        .map(|h| h.iter().map(|x| x.row).collect())
        .collect()
}

/// |first `at` of `retrieved` ∩ `truth`| / |truth| for one query (0 for an empty truth set).
pub fn overlap_at(retrieved: &[usize], truth: &[usize], at: usize) -> f64 {
    if truth.is_empty() {
        return 0.0;
    }
    let hits = retrieved
        .iter()
        .take(at)
        .filter(|r| truth.contains(r))
        .count();
    hits as f64 / truth.len() as f64
}

/// Mean of [`overlap_at`] over queries (`retrieved[q]` against `truth[q]`); NaN for no queries.
pub fn mean_overlap_at(retrieved: &[Vec<usize>], truth: &[Vec<usize>], at: usize) -> f64 {
    let n = retrieved.len().min(truth.len());
    if n == 0 {
        return f64::NAN;
    }
    retrieved
        .iter()
        .zip(truth)
        .map(|(r, t)| overlap_at(r, t, at))
        .sum::<f64>()
        / n as f64
}

/// precision@10 of retrieved lists against true top-10 lists.
pub fn precision_at_10(retrieved: &[Vec<usize>], truth: &[Vec<usize>]) -> f64 {
    mean_overlap_at(retrieved, truth, PRECISION_AT)
}

/// recall@100 of retrieved lists against true top-10 lists.
pub fn recall_at_100(retrieved: &[Vec<usize>], truth: &[Vec<usize>]) -> f64 {
    mean_overlap_at(retrieved, truth, RECALL_AT)
}

/// Fraction of predictions equal to the labels (NaN when empty).
pub fn accuracy<T: PartialEq>(predicted: &[T], labels: &[T]) -> f64 {
    let n = predicted.len().min(labels.len());
    if n == 0 {
        return f64::NAN;
    }
    predicted.iter().zip(labels).filter(|(a, b)| a == b).count() as f64 / n as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_made_precision_and_recall() {
        let truth = vec![(0..10).collect::<Vec<usize>>()];
        // 7 of the first 10 right, the other 3 at ranks 11, 50, 101
        let mut r: Vec<usize> = vec![0, 1, 2, 100, 3, 4, 101, 5, 6, 102];
        r.extend(200..300);
        r[10] = 7;
        r[49] = 8;
        r.push(9); // rank 111: outside the top 100
        let retrieved = vec![r];
        assert_eq!(precision_at_10(&retrieved, &truth), 0.7);
        assert_eq!(recall_at_100(&retrieved, &truth), 0.9);
        // two queries average
        let t2 = vec![truth[0].clone(), (10..20).collect()];
        let r2 = vec![retrieved[0].clone(), (0..100).collect()];
        assert!((precision_at_10(&r2, &t2) - 0.35).abs() < 1e-12);
        assert!((recall_at_100(&r2, &t2) - 0.95).abs() < 1e-12);
        assert!(mean_overlap_at(&[], &[], 10).is_nan());
        assert_eq!(overlap_at(&[1, 2], &[], 10), 0.0);
        assert_eq!(accuracy(&[1, 2, 3, 4], &[1, 0, 3, 0]), 0.5);
    }

    #[test]
    fn ground_truth_equals_brute_force() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(9);
        let (n, nq, p) = (300, 20, 17);
        let mut v = |m: usize| -> Vec<f32> {
            (0..m * p)
                .map(|_| (rng.next_u64() % 1000) as f32 / 1000.0 - 0.3)
                .collect()
        };
        let (db, q) = (v(n), v(nq));
        let truth = ground_truth(&db, &q, p, 10).unwrap();
        for (qi, t) in truth.iter().enumerate() {
            let qv = &q[qi * p..(qi + 1) * p];
            let qn = qv.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt();
            let mut scored: Vec<(f64, usize)> = (0..n)
                .map(|i| {
                    let r = &db[i * p..(i + 1) * p];
                    let dot: f64 = r.iter().zip(qv).map(|(&a, &b)| a as f64 * b as f64).sum();
                    let rn = r.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt();
                    (dot / (rn * qn), i)
                })
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let brute: Vec<usize> = scored.iter().take(10).map(|s| s.1).collect();
            assert_eq!(t, &brute, "query {qi}");
        }
    }
}
