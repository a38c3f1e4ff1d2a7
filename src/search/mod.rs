//! Searching released sketches (DESIGN.md §8): one interface, several index types.
//!
//! * [`exact`]: exact top-K by blocked matrix–matrix products (real sketches) or XOR + popcount over
//!   packed words (sign sketches), parallel over query batches, a bounded heap per query.
//! * [`hnsw`]: approximate search with an HNSW graph (built by dprp), with its recall against the exact
//!   scan reported on request.
//! * [`queries`]: raw query vectors turned into sketches comparable to a release's rows.
//! * [`rerank`]: candidates from any first stage (a database, HNSW) re-ranked by the debiased
//!   estimates with their standard errors.
//!
//! Scores are "larger is better": the inner product, the cosine, or for signs the number of
//! agreeing bits `k − popcount(a XOR b)`. Ties are broken by the smaller row index.

pub mod exact;
pub mod hnsw;
mod huge;
mod kernels;
mod quant;
pub mod queries;
pub mod rerank;
pub mod sharded;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How neighbours are ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    /// Inner product of real sketches.
    Ip,
    /// Cosine of real sketches (rows normalised).
    Cosine,
    /// Agreements between sign sketches (`k − Hamming distance`).
    Hamming,
}

impl Measure {
    /// The measure asked for, or the default of the sketch's kind: Hamming for packed signs,
    /// cosine for real values.
    pub fn or_default(given: Option<&str>, bits: bool) -> Result<Measure> {
        match given {
            Some(s) => Measure::parse(s),
            None if bits => Ok(Measure::Hamming),
            None => Ok(Measure::Cosine),
        }
    }

    /// Parse `ip`, `cosine` or `hamming`.
    pub fn parse(s: &str) -> Result<Measure> {
        match s.to_ascii_lowercase().as_str() {
            "ip" | "inner-product" | "dot" => Ok(Measure::Ip),
            "cosine" | "cos" => Ok(Measure::Cosine),
            "hamming" => Ok(Measure::Hamming),
            o => Err(Error::param(
                "‹measure›",
                format!("unknown measure '{o}' (expected ip, cosine or hamming)"),
            )),
        }
    }
    /// Name as accepted by [`parse`](Measure::parse).
    pub fn name(&self) -> &'static str {
        match self {
            Measure::Ip => "ip",
            Measure::Cosine => "cosine",
            Measure::Hamming => "hamming",
        }
    }
}

/// Rows of sketches, borrowed (e.g. from a memory-mapped release).
#[derive(Debug, Clone, Copy)]
pub enum Sketch<'a> {
    /// `n×k` values, row-major.
    Real {
        /// The values.
        data: &'a [f32],
        /// Values per row.
        k: usize,
    },
    /// `n×⌈k/64⌉` packed sign words.
    Bits {
        /// The words.
        data: &'a [u64],
        /// Signs per row.
        k: usize,
    },
}

impl<'a> Sketch<'a> {
    /// Rows `start..end` as a sketch of their own (clamped to the rows there are).
    pub fn rows_range(&self, start: usize, end: usize) -> Sketch<'a> {
        match *self {
            Sketch::Real { data, k } => {
                let (s, e) = (start * k, (end * k).min(data.len()));
                Sketch::Real {
                    data: &data[s.min(e)..e],
                    k,
                }
            }
            Sketch::Bits { data, k } => {
                let w = k.div_ceil(64);
                let (s, e) = (start * w, (end * w).min(data.len()));
                Sketch::Bits {
                    data: &data[s.min(e)..e],
                    k,
                }
            }
        }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        match *self {
            Sketch::Real { data, k } => data.len() / k.max(1),
            Sketch::Bits { data, k } => data.len() / k.div_ceil(64).max(1),
        }
    }
    /// Values (or signs) per row.
    pub fn k(&self) -> usize {
        match *self {
            Sketch::Real { k, .. } | Sketch::Bits { k, .. } => k,
        }
    }
    /// Whether these are sign sketches.
    pub fn is_bits(&self) -> bool {
        matches!(self, Sketch::Bits { .. })
    }
}

/// One search result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// Row index in the searched sketch (map to the release's row id with `Release::id`).
    pub row: usize,
    /// Score, larger is better.
    pub score: f32,
}

/// Check that a measure fits the sketch kind and that `top` is in range.
pub fn check_request(
    db: &Sketch<'_>,
    queries: &Sketch<'_>,
    measure: Measure,
    top: usize,
) -> Result<()> {
    if db.is_bits() != queries.is_bits() {
        return Err(Error::param(
            "‹queries›",
            "queries and database must both be real sketches or both be sign sketches",
        ));
    }
    if db.k() != queries.k() {
        return Err(Error::param(
            "‹queries›",
            format!(
                "queries have k = {}, the release has k = {}",
                queries.k(),
                db.k()
            ),
        ));
    }
    match (db.is_bits(), measure) {
        (true, Measure::Hamming) | (false, Measure::Ip | Measure::Cosine) => {}
        (true, m) => {
            return Err(Error::param(
                "‹measure›",
                format!("{} does not apply to sign sketches; use hamming", m.name()),
            ))
        }
        (false, _) => {
            return Err(Error::param(
                "‹measure›",
                "hamming applies to sign sketches; use ip or cosine for real sketches",
            ))
        }
    }
    if top == 0 {
        return Err(Error::param("‹top›", "K must be at least 1"));
    }
    if top > db.rows() {
        return Err(Error::param(
            "‹top›",
            format!("K = {top} exceeds the {} rows of the release", db.rows()),
        ));
    }
    Ok(())
}

/// Fraction of the exact top-K rows that the approximate search returned, counting a returned
/// row whose score ties the K-th exact score as correct.
pub fn recall(found: &[Vec<Hit>], truth: &[Vec<Hit>]) -> f64 {
    let (mut good, mut total) = (0usize, 0usize);
    for (f, t) in found.iter().zip(truth) {
        let kth = t.last().map(|h| h.score).unwrap_or(f32::MIN);
        let set: std::collections::HashSet<usize> = t.iter().map(|h| h.row).collect();
        good += f
            .iter()
            .filter(|h| set.contains(&h.row) || h.score >= kth)
            .count()
            .min(t.len());
        total += t.len();
    }
    if total == 0 {
        1.0
    } else {
        good as f64 / total as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(v: &[(usize, f32)]) -> Vec<Hit> {
        v.iter().map(|&(row, score)| Hit { row, score }).collect()
    }

    #[test]
    fn recall_counts_found_rows_and_ties_at_the_kth_score() {
        let truth = vec![
            hits(&[(1, 0.9), (2, 0.8), (3, 0.5)]),
            hits(&[(7, 3.0), (8, 2.0)]),
        ];
        // query 0: rows 1 and 2 found, row 9 ties the 3rd score 0.5 (counted); query 1: row 4
        // scores below the 2nd exact score (not counted).
        let found = vec![
            hits(&[(1, 0.9), (9, 0.5), (2, 0.8)]),
            hits(&[(7, 3.0), (4, 1.0)]),
        ];
        assert_eq!(recall(&found, &truth), 4.0 / 5.0);
        assert_eq!(recall(&truth, &truth), 1.0);
        assert_eq!(recall(&[], &[]), 1.0);
    }
}
