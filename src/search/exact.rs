//! Exact top-K search over released sketches.
//!
//! * Real sketches: scores come from blocked matrix–matrix products, a batch of queries against a
//!   block of database rows at a time (`ndarray`'s `general_mat_mul`, f32), so the score block
//!   stays in cache; Cosine scales the products by both rows' inverse norms (a zero row scores 0).
//! * Sign sketches: agreements `k − popcount(a XOR b)` over the packed words, [`GROUP`] queries
//!   against each database row at once so every loaded database word is used several times. Bits
//!   beyond `k` in the last word are masked off. On x86-64 the kernel is compiled a second time
//!   with the `popcnt` instruction enabled and chosen at run time when the CPU has it (the default
//!   x86-64 target lacks it, and `count_ones` then compiles to a much slower bit-twiddling
//!   sequence), so no target flags are needed.
//!
//! Work is split over query batches with rayon; every query keeps a bounded min-heap of its best
//! `top` rows, updated block by block. Database rows are scanned in increasing order, so a row that
//! ties with the current worst of a full heap never displaces it: ties go to the smaller row index.
//! A NaN score ranks as −∞ (it is reported as NaN in [`Hit::score`]).
//!
//! [`naive`] computes the same by brute force, one pair at a time in f64; the tests compare the two.

use std::sync::Mutex;

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2};
use rayon::prelude::*;

use super::{check_request, Hit, Measure, Sketch};
use crate::error::{Error, Result};

/// Largest number of queries per parallel task (real sketches).
pub const REAL_QUERY_BATCH: usize = 512;
/// Database rows per score block (real sketches): the block of `batch × block` f32 scores
/// (at most 2 MiB) is produced by one matrix product and scanned while it is in cache.
pub const REAL_DB_BLOCK: usize = 1024;
/// Largest number of queries per parallel task (sign sketches).
pub const BITS_QUERY_BATCH: usize = 256;
/// Database rows per block (sign sketches): 2048 rows of k = 1024 bits are 256 KiB, which stay
/// in the L2 cache while every query group of the batch passes over them.
pub const BITS_DB_BLOCK: usize = 2048;
/// Queries compared with each database row at once (sign sketches).
pub const GROUP: usize = 4;

/// A progress callback: called with the number of queries finished so far.
pub type Progress<'a> = Option<&'a (dyn Fn(usize) + Sync)>;

/// Exact top-`top` neighbours of every query row among the database rows, best first; ties broken
/// by the smaller row index.
///
/// Real sketches are scored by blocked matrix–matrix products (f32), sign sketches by
/// `k − popcount(a XOR b)`. `progress`, when given, is called after each finished batch of queries
/// (from whichever worker thread finished it) with the number of queries finished so far; calls
/// are serialised and the counts strictly increase, the last one being the number of queries.
///
/// Errors (see [`check_request`]): `--queries` when the kinds or `k` differ, `--measure` when the
/// measure does not fit the kind, `--top` when `top` is 0 or exceeds the database rows. An empty
/// query set gives an empty result. With `k = 0` every score is 0.
///
/// ```
/// use dprp::search::{exact, Measure, Sketch};
///
/// # fn main() -> dprp::Result<()> {
/// // three 2-dimensional real sketches and one query
/// let db = [1.0f32, 0.0, 0.0, 1.0, 0.7, 0.7];
/// let q = [0.9f32, 0.1];
/// let hits = exact::search(
///     &Sketch::Real { data: &db, k: 2 },
///     &Sketch::Real { data: &q, k: 2 },
///     Measure::Cosine,
///     2,
///     None,
/// )?;
/// assert_eq!(hits[0][0].row, 0); // (1, 0) is closest in angle
/// assert_eq!(hits[0][1].row, 2);
/// # Ok(())
/// # }
/// ```
pub fn search(
    db: &Sketch<'_>,
    queries: &Sketch<'_>,
    measure: Measure,
    top: usize,
    progress: Progress<'_>,
) -> Result<Vec<Vec<Hit>>> {
    check_request(db, queries, measure, top)?;
    let (n, nq, k) = (db.rows(), queries.rows(), db.k());
    if nq == 0 {
        return Ok(Vec::new());
    }
    if k == 0 {
        // Empty rows: every inner product, cosine and agreement count is 0.
        let hits: Vec<Hit> = (0..top).map(|row| Hit { row, score: 0.0 }).collect();
        if let Some(p) = progress {
            p(nq);
        }
        return Ok(vec![hits; nq]);
    }
    let counter = Counter::new(progress);
    match (*db, *queries) {
        (Sketch::Real { data: d, .. }, Sketch::Real { data: q, .. }) => search_real(
            &d[..n * k],
            &q[..nq * k],
            k,
            measure == Measure::Cosine,
            top,
            &counter,
        ),
        (Sketch::Bits { data: d, .. }, Sketch::Bits { data: q, .. }) => {
            let w = k.div_ceil(64);
            Ok(search_bits(&d[..n * w], &q[..nq * w], k, top, &counter))
        }
        // check_request refuses mixed kinds already
        _ => Err(mixed_kinds()),
    }
}

/// The same as [`search`] by brute force: every pair on its own, scores in f64 (the inner
/// product, the cosine with norms in f64, or [`crate::estimate::agreements`]), a full sort per
/// query. The reference the tests compare [`search`] against; scores are reported as f32.
pub fn naive(
    db: &Sketch<'_>,
    queries: &Sketch<'_>,
    measure: Measure,
    top: usize,
) -> Result<Vec<Vec<Hit>>> {
    check_request(db, queries, measure, top)?;
    let (n, nq, k) = (db.rows(), queries.rows(), db.k());
    let score: Box<dyn Fn(usize, usize) -> f64 + '_> = match (*db, *queries) {
        (Sketch::Real { data: d, .. }, Sketch::Real { data: q, .. }) => {
            let dot = move |a: &[f32], b: &[f32]| -> f64 {
                a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum()
            };
            let row_d = move |j: usize| &d[j * k..(j + 1) * k];
            let row_q = move |i: usize| &q[i * k..(i + 1) * k];
            if measure == Measure::Cosine {
                Box::new(move |i, j| {
                    let (a, b) = (row_q(i), row_d(j));
                    let (na, nb) = (dot(a, a).sqrt(), dot(b, b).sqrt());
                    if na == 0.0 || nb == 0.0 {
                        0.0
                    } else {
                        dot(a, b) / (na * nb)
                    }
                })
            } else {
                Box::new(move |i, j| dot(row_q(i), row_d(j)))
            }
        }
        (Sketch::Bits { data: d, .. }, Sketch::Bits { data: q, .. }) => {
            let w = k.div_ceil(64);
            Box::new(move |i, j| {
                crate::estimate::agreements(&q[i * w..(i + 1) * w], &d[j * w..(j + 1) * w], k)
                    as f64
            })
        }
        _ => return Err(mixed_kinds()),
    };
    Ok((0..nq)
        .map(|i| {
            let mut all: Vec<(f64, usize)> = (0..n).map(|j| (score(i, j), j)).collect();
            let rank = |s: f64| if s.is_nan() { f64::NEG_INFINITY } else { s };
            all.sort_by(|a, b| {
                rank(b.0)
                    .partial_cmp(&rank(a.0))
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(a.1.cmp(&b.1))
            });
            all.truncate(top);
            all.into_iter()
                .map(|(s, row)| Hit {
                    row,
                    score: s as f32,
                })
                .collect()
        })
        .collect())
}

fn mixed_kinds() -> Error {
    Error::param(
        "‹queries›",
        "queries and database must both be real sketches or both be sign sketches",
    )
}

/// Serialised progress reporting.
struct Counter<'a> {
    progress: Progress<'a>,
    done: Mutex<usize>,
}

impl<'a> Counter<'a> {
    fn new(progress: Progress<'a>) -> Counter<'a> {
        Counter {
            progress,
            done: Mutex::new(0),
        }
    }
    fn add(&self, queries: usize) {
        if let Some(p) = self.progress {
            // A poisoned lock only means another callback panicked; keep counting.
            let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
            *done += queries;
            p(*done);
        }
    }
}

/// Queries per parallel task: at most `max`, small enough that every thread gets a few tasks, and
/// even (the number of tasks a multiple of the thread count when there are enough queries).
fn batch_rows(nq: usize, max: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    let tasks = nq.div_ceil(max.max(1)).max(4 * threads).min(nq.max(1));
    let tasks = if tasks >= threads {
        tasks.div_ceil(threads) * threads
    } else {
        tasks
    };
    nq.div_ceil(tasks).max(1)
}

/// A score as the heap ranks it.
trait Rank: Copy + PartialOrd {
    /// The value used for ranking (NaN → −∞ for floats).
    fn rank(self) -> Self;
    /// The score reported in a [`Hit`].
    fn to_f32(self) -> f32;
}

impl Rank for f32 {
    #[inline]
    fn rank(self) -> f32 {
        if self.is_nan() {
            f32::NEG_INFINITY
        } else {
            self
        }
    }
    fn to_f32(self) -> f32 {
        self
    }
}

impl Rank for u64 {
    #[inline]
    fn rank(self) -> u64 {
        self
    }
    fn to_f32(self) -> f32 {
        self as f32
    }
}

/// The best `cap` (score, row) pairs seen so far: a binary min-heap whose root is the worst kept
/// pair (lowest rank; among equal ranks the largest row).
struct TopK<T> {
    cap: usize,
    heap: Vec<(T, usize)>,
}

impl<T: Rank> TopK<T> {
    fn new(cap: usize) -> TopK<T> {
        TopK {
            cap,
            heap: Vec::with_capacity(cap),
        }
    }

    /// Whether `a` ranks below `b`.
    #[inline]
    fn worse(a: &(T, usize), b: &(T, usize)) -> bool {
        let (ra, rb) = (a.0.rank(), b.0.rank());
        ra < rb || (ra == rb && a.1 > b.1)
    }

    /// Whether a row scanned after every row already offered (so with a larger index) and
    /// scoring `s` would enter: the heap is not full yet, or `s` ranks strictly above the worst.
    #[inline(always)]
    fn wants(&self, s: T) -> bool {
        match self.heap.first() {
            Some(root) if self.heap.len() == self.cap => s > root.0.rank(),
            _ => true,
        }
    }

    /// Offer rows `start, start + 1, …` scoring `scores`, all after every row offered so far.
    #[inline]
    fn offer_run(&mut self, scores: &[T], start: usize) {
        let mut rest = scores.iter().enumerate();
        while self.heap.len() < self.cap {
            match rest.next() {
                Some((j, &s)) => self.push(s, start + j),
                None => return,
            }
        }
        let Some(mut worst) = self.heap.first().map(|r| r.0.rank()) else {
            return; // cap = 0
        };
        for (j, &s) in rest {
            if s > worst {
                self.push(s, start + j);
                worst = self.heap[0].0.rank();
            }
        }
    }

    /// Offer a pair (rows may come in any order).
    fn push(&mut self, s: T, row: usize) {
        let item = (s, row);
        if self.heap.len() < self.cap {
            self.heap.push(item);
            let mut i = self.heap.len() - 1;
            while i > 0 {
                let parent = (i - 1) / 2;
                if Self::worse(&self.heap[i], &self.heap[parent]) {
                    self.heap.swap(i, parent);
                    i = parent;
                } else {
                    break;
                }
            }
        } else if self.cap > 0 && Self::worse(&self.heap[0], &item) {
            self.heap[0] = item;
            let len = self.heap.len();
            let mut i = 0;
            loop {
                let (l, r) = (2 * i + 1, 2 * i + 2);
                let mut m = i;
                if l < len && Self::worse(&self.heap[l], &self.heap[m]) {
                    m = l;
                }
                if r < len && Self::worse(&self.heap[r], &self.heap[m]) {
                    m = r;
                }
                if m == i {
                    break;
                }
                self.heap.swap(i, m);
                i = m;
            }
        }
    }

    /// The kept pairs, best first.
    fn into_hits(mut self) -> Vec<Hit> {
        self.heap.sort_by(|a, b| {
            if Self::worse(b, a) {
                std::cmp::Ordering::Less
            } else if Self::worse(a, b) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        });
        self.heap
            .into_iter()
            .map(|(s, row)| Hit {
                row,
                score: s.to_f32(),
            })
            .collect()
    }
}

/// `1/‖row‖` for each row (norms in f64), 0 for a zero row (so that its scores are 0).
/// `1/‖x‖` rounded to f32 (the norm summed in f64), 0 for a zero row: the cosine factor of a row.
/// The HNSW search re-scores with this same function, so its scores equal the scan's.
pub(super) fn inverse_norm(x: &[f32]) -> f32 {
    let n = x.iter().map(|&v| v as f64 * v as f64).sum::<f64>().sqrt();
    if n > 0.0 {
        (1.0 / n) as f32
    } else {
        0.0
    }
}

/// [`inverse_norm`] of every row, in parallel.
pub(super) fn inverse_norms(data: &[f32], k: usize) -> Vec<f32> {
    data.par_chunks(k).map(inverse_norm).collect()
}

fn search_real(
    db: &[f32],
    queries: &[f32],
    k: usize,
    cosine: bool,
    top: usize,
    counter: &Counter<'_>,
) -> Result<Vec<Vec<Hit>>> {
    let (n, nq) = (db.len() / k, queries.len() / k);
    let (db_inv, q_inv) = if cosine {
        (inverse_norms(db, k), inverse_norms(queries, k))
    } else {
        (Vec::new(), Vec::new())
    };
    let qb = batch_rows(nq, REAL_QUERY_BATCH);
    let dbb = REAL_DB_BLOCK;
    let shape = |e: ndarray::ShapeError| Error::param("‹queries›", format!("sketch shape: {e}"));
    let batches: Vec<Vec<Vec<Hit>>> = queries
        .par_chunks(qb * k)
        .enumerate()
        .map(|(b, q)| {
            let m = q.len() / k;
            let mut heaps: Vec<TopK<f32>> = (0..m).map(|_| TopK::new(top)).collect();
            let mut scores = vec![0f32; m * dbb.min(n)];
            let q_inv = if cosine {
                &q_inv[b * qb..b * qb + m]
            } else {
                &[][..]
            };
            let a = ArrayView2::from_shape((m, k), q).map_err(shape)?;
            let mut start = 0;
            while start < n {
                let bn = dbb.min(n - start);
                let block = &db[start * k..(start + bn) * k];
                let d = ArrayView2::from_shape((bn, k), block).map_err(shape)?;
                let mut c =
                    ArrayViewMut2::from_shape((m, bn), &mut scores[..m * bn]).map_err(shape)?;
                general_mat_mul(1.0, &a, &d.t(), 0.0, &mut c);
                for (i, (row, heap)) in scores[..m * bn]
                    .chunks_exact_mut(bn)
                    .zip(heaps.iter_mut())
                    .enumerate()
                {
                    if cosine {
                        let qi = q_inv[i];
                        for (s, &dj) in row.iter_mut().zip(&db_inv[start..start + bn]) {
                            *s = *s * qi * dj;
                        }
                    }
                    heap.offer_run(row, start);
                }
                start += bn;
            }
            counter.add(m);
            Ok(heaps.into_iter().map(TopK::into_hits).collect())
        })
        .collect::<Result<_>>()?;
    Ok(batches.into_iter().flatten().collect())
}

fn search_bits(
    db: &[u64],
    queries: &[u64],
    k: usize,
    top: usize,
    counter: &Counter<'_>,
) -> Vec<Vec<Hit>> {
    let w = k.div_ceil(64);
    let nq = queries.len() / w;
    let qb = batch_rows(nq, BITS_QUERY_BATCH);
    let batches: Vec<Vec<Vec<Hit>>> = queries
        .par_chunks(qb * w)
        .map(|q| {
            let m = q.len() / w;
            let mut heaps: Vec<TopK<u64>> = (0..m).map(|_| TopK::new(top)).collect();
            bits_batch(db, q, k, &mut heaps);
            counter.add(m);
            heaps.into_iter().map(TopK::into_hits).collect()
        })
        .collect();
    batches.into_iter().flatten().collect()
}

/// Scan the whole database for one batch of queries, with the fastest kernel the CPU allows.
fn bits_batch(db: &[u64], queries: &[u64], k: usize, heaps: &mut [TopK<u64>]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU supports popcnt (checked just above).
            unsafe { bits_batch_popcnt(db, queries, k, heaps) };
            return;
        }
    }
    bits_batch_generic(db, queries, k, heaps);
}

/// [`bits_batch_generic`] compiled with the `popcnt` instruction.
///
/// # Safety
/// The CPU must support `popcnt`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn bits_batch_popcnt(db: &[u64], queries: &[u64], k: usize, heaps: &mut [TopK<u64>]) {
    bits_batch_generic(db, queries, k, heaps);
}

#[inline(always)]
fn bits_batch_generic(db: &[u64], queries: &[u64], k: usize, heaps: &mut [TopK<u64>]) {
    match k.is_multiple_of(64).then_some(k / 64) {
        Some(4) => bits_batch_w::<4>(db, queries, k, heaps),
        Some(8) => bits_batch_w::<8>(db, queries, k, heaps),
        Some(16) => bits_batch_w::<16>(db, queries, k, heaps),
        Some(32) => bits_batch_w::<32>(db, queries, k, heaps),
        _ => bits_batch_w::<0>(db, queries, k, heaps),
    }
}

/// One batch of queries against the whole database, block by block. `W` is the number of words
/// per row when it is fixed at compile time (`k = 64·W`), 0 for any `k`.
#[inline(always)]
fn bits_batch_w<const W: usize>(db: &[u64], queries: &[u64], k: usize, heaps: &mut [TopK<u64>]) {
    let w = k.div_ceil(64);
    let n = db.len() / w;
    let mut start = 0;
    while start < n {
        let bn = BITS_DB_BLOCK.min(n - start);
        let block = &db[start * w..(start + bn) * w];
        let mut groups = queries.chunks_exact(GROUP * w);
        let mut hs = heaps.chunks_exact_mut(GROUP);
        for (q, h) in (&mut groups).zip(&mut hs) {
            if W == 0 {
                scan_group::<GROUP>(q, block, start, k, h);
            } else {
                scan_fixed::<GROUP, W>(q, block, start, k, h);
            }
        }
        for (q, h) in groups
            .remainder()
            .chunks_exact(w)
            .zip(hs.into_remainder().iter_mut())
        {
            let h = std::slice::from_mut(h);
            if W == 0 {
                scan_group::<1>(q, block, start, k, h);
            } else {
                scan_fixed::<1, W>(q, block, start, k, h);
            }
        }
        start += bn;
    }
}

/// [`scan_group`] for `k = 64·W` (no mask), with the row length known at compile time.
#[inline(always)]
fn scan_fixed<const G: usize, const W: usize>(
    queries: &[u64],
    block: &[u64],
    start: usize,
    k: usize,
    heaps: &mut [TopK<u64>],
) {
    let mut q = [[0u64; W]; G];
    for (g, row) in q.iter_mut().enumerate() {
        row.copy_from_slice(&queries[g * W..g * W + W]);
    }
    for (j, d) in block.chunks_exact(W).enumerate() {
        let Ok(d) = <&[u64; W]>::try_from(d) else {
            continue;
        };
        let mut diff = [0u32; G];
        for t in 0..W {
            for g in 0..G {
                diff[g] += (q[g][t] ^ d[t]).count_ones();
            }
        }
        for g in 0..G {
            let agree = k as u64 - diff[g] as u64;
            if heaps[g].wants(agree) {
                heaps[g].push(agree, start + j);
            }
        }
    }
}

/// Agreements of `G` queries (`G×w` words) with every row of a database block whose first row is
/// `start`, offered to the queries' heaps.
#[inline(always)]
fn scan_group<const G: usize>(
    queries: &[u64],
    block: &[u64],
    start: usize,
    k: usize,
    heaps: &mut [TopK<u64>],
) {
    let w = k.div_ceil(64);
    let full = k / 64;
    let mask = if k.is_multiple_of(64) {
        0
    } else {
        (1u64 << (k % 64)) - 1
    };
    let q: [&[u64]; G] = std::array::from_fn(|g| &queries[g * w..g * w + w]);
    for (j, d) in block.chunks_exact(w).enumerate() {
        let mut diff = [0u64; G];
        for t in 0..full {
            let x = d[t];
            for g in 0..G {
                diff[g] += (q[g][t] ^ x).count_ones() as u64;
            }
        }
        if mask != 0 {
            let x = d[full];
            for g in 0..G {
                diff[g] += ((q[g][full] ^ x) & mask).count_ones() as u64;
            }
        }
        for g in 0..G {
            let agree = k as u64 - diff[g];
            if heaps[g].wants(agree) {
                heaps[g].push(agree, start + j);
            }
        }
    }
}
