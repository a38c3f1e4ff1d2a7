//! Approximate top-K search with an HNSW graph, with the scores of [`exact`](super::exact):
//! inner product, cosine, or agreements `k − Hamming`, larger is better.
//!
//! dprp builds the graph itself (`hnsw/build.rs`: Malkov & Yashunin 2018, Algorithm 1 with the
//! neighbour-selection heuristic of Algorithm 4, parallel insertion on all cores with one lock
//! per row's adjacency lists) into flat arrays (one adjacency list per node and layer), and
//! searches and stores those arrays itself. The walk is the standard one — greedy descent to a
//! local minimum on every upper layer, then a best-first search on the bottom layer with a list
//! of `ef` candidates, prefetching each candidate's vector while the previous one is compared.
//! (Until 0.3 the graph came from the crate `hnsw_rs`; profiled on MNIST sketches, 70% of its
//! build time went into its own bookkeeping — reference-counted points, a hash map of visited
//! points, heaps of boxed entries — rather than distances: see docs/performance.md.)
//!
//! Real sketches are indexed by their *directions* (rows scaled to unit length), quantised
//! (`quant.rs`): the graph is built on 8-bit codes with one scale for all rows, and
//! walked on 4-bit codes from k = 512 (8-bit below; a quarter and an eighth of the memory traffic of f32; a walk's time goes
//! into loading a few hundred scattered rows). The rows a walk returns are re-scored from the
//! release's f32 values, so the codes only decide which rows are visited, never a reported
//! score. The codes are recomputed from the release on load, into memory that the kernel may
//! back with huge pages (fewer TLB misses on scattered reads). Measured on MNIST `dp-rp-g-opt`
//! sketches (k = 1024, 60000 rows, cosine, m = 24, 10000 queries): 4-bit walks changed recall@10
//! by at most 0.01 at ef = 16–32, and together with the prefetching of the re-scored rows took
//! the time per query at recall 0.95 from 0.08 to 0.05–0.06 ms.
//!
//! # Distances
//!
//! HNSW needs a distance whose smallest values are the best matches, `≥ 0` and never NaN
//! (the construction and the walk rely on both). The rows the walk returns are **re-scored** exactly as the exact scan
//! scores them (an f32 inner product; times both rows' inverse norms for cosine; `k − popcount`
//! for signs) and sorted by (score descending, row ascending), as the exact scan ranks them.
//!
//! * **Cosine** — the graph is built over the rows' unit directions (a zero row stays zero) with
//!   the distance `1 − ⟨a, b⟩`, clamped at `+0`. On unit vectors `1 − ⟨a, b⟩ = ‖a − b‖²/2`,
//!   a monotone function of the Euclidean distance, so this is an ordinary Euclidean HNSW on the
//!   sphere. The walk uses `1 − cos(q, x)`, whose order is exactly the cosine order (a zero row
//!   has cosine 0, as in the exact scan).
//! * **Inner product** (maximum-inner-product search, not a metric problem) — the same graph of
//!   directions, walked with `1 − ⟨q, x⟩/(‖q‖·M)`, `M` the largest row norm: that lies in
//!   `[0, 2]` and its order is exactly the inner-product order, so every candidate is compared
//!   correctly; only which rows the walk reaches depends on the graph. The alternatives were
//!   measured on MNIST dp-oporp sketches (k = 256, 60000 rows, 500 queries, recall@10 at
//!   ef = 64): this graph 0.989; the classic reduction to nearest neighbours (rows
//!   `[x/M, √(1 − ‖x/M‖²)]`, queries `[q/‖q‖, 0]`, Bachrach et al. 2014) 0.945; a graph built
//!   with the inner product itself (ip-NSW, Morozov & Babenko 2018) 0.886, saturating at 0.935.
//!   Where row norms vary widely the walk needs a longer candidate list, hence the larger
//!   [`default_ef`] (on synthetic rows whose norms vary by 2×: 0.91 at ef = 64, 0.98 at 128).
//! * **Hamming** — packed sign words, distance `popcount(a XOR b)` over the `⌈k/64⌉` words, the
//!   padding bits above `k` masked off. Scores are `k − distance`.
//!
//! A zero query (inner product or cosine) scores 0 against every row; it returns rows `0..K`, as
//! the exact scan's tie-breaking does. Should a walk find fewer than `K` rows (possible only in a
//! disconnected graph), that query is answered by scoring every row.
//!
//! # Index file (`dprp index release.dprp -o release.hnsw`)
//!
//! Little-endian, one file, written atomically (temporary file + rename):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 8 | magic `DPRPHNSW` |
//! | 8 | 4 | format version (1) |
//! | 12 | 4 | measure: 0 ip, 1 cosine, 2 hamming |
//! | 16 | 8 | n (rows) |
//! | 24 | 8 | k (values or signs per row) |
//! | 32 | 8 | m (construction parameter; at most `2m` links per node and layer) |
//! | 40 | 8 | ef_construction |
//! | 48 | 8 | number of layers `L` (1 to 16) |
//! | 56 | 8 | entry row (a node of the top layer) |
//! | 64 | 8 | graph section length |
//! | 72 | 32 | BLAKE3 checksum of the release the index was built from (given by the caller) |
//! | 104 | 32 | BLAKE3 of the indexed sketch payload (the `n` rows as the release stores them) |
//! | 136 | 32 | BLAKE3 of bytes 0..136 followed by the graph section |
//! | 168 | … | graph section |
//!
//! The graph section holds, for each layer `l = 0..L`: its node count `c` (u64; `n` on layer 0),
//! for `l ≥ 1` the `c` rows on the layer (u32, increasing, each also on layer `l − 1`), the `c`
//! link counts (u16, at most `2m`), then all links (u32 rows on the same layer), node by node.
//!
//! There are no vectors in the file: they are a deterministic function of the release, so
//! [`HnswIndex::load`] takes the release's sketches again and recomputes them. That keeps the
//! index small and ties it to its release twice: the caller compares the recorded release
//! checksum ([`IndexHeader::check_release`]), and `load` itself refuses sketches whose payload
//! hash differs. `load` verifies the checksum, then every count, row, link and the entry point,
//! so no file, however crafted, makes a later search index out of bounds.

use std::path::Path;
use std::sync::Mutex;

use rayon::prelude::*;

mod build;
mod graph;

use graph::{Graph, Scratch};

use super::kernels::{dot, hamming, prefetch_bytes};
use super::quant::{ByteCodes, ByteDot, WalkCodes};
use super::{check_request, Hit, Measure, Sketch};
use crate::atomic::{check_input_file, AtomicFile, Existing};
use crate::error::{Error, Result};

/// Magic bytes at the start of an index file.
pub const INDEX_MAGIC: &[u8; 8] = b"DPRPHNSW";
/// Index format version written by this dprp.
pub const INDEX_VERSION: u32 = 1;
/// Bytes before the graph section.
const HEADER_LEN: usize = 168;
/// Header bytes covered by the index checksum (everything before it).
const HASHED_HEADER: usize = 136;
/// The largest number of layers (levels 0 to 15).
const NB_LAYER: usize = 16;
/// Release magic, to name a release passed where an index is expected.
const RELEASE_MAGIC: &[u8; 8] = b"DPRPSKCH";
/// Queries per parallel task.
const QUERY_BATCH: usize = 64;

/// Construction parameters of the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HnswParams {
    /// Links per node and layer (`2m` on the bottom layer). 2..=255; default 16.
    pub m: usize,
    /// Candidate list size while inserting. 1..=65536; default 200.
    pub ef_construction: usize,
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams {
            m: 16,
            ef_construction: 200,
        }
    }
}

impl HnswParams {
    /// Check the ranges supported (link counts are stored in 16 bits).
    pub fn check(&self) -> Result<()> {
        if !(2..=255).contains(&self.m) {
            return Err(Error::param(
                "‹m›",
                format!("m = {} is out of range (2 to 255)", self.m),
            ));
        }
        if !(1..=65536).contains(&self.ef_construction) {
            return Err(Error::param(
                "‹ef_construction›",
                format!(
                    "ef_construction = {} is out of range (1 to 65536)",
                    self.ef_construction
                ),
            ));
        }
        Ok(())
    }
}

/// Default search list size for `top` results: `max(64, 2·top)`, and `max(128, 2·top)` for
/// inner products, whose walk over a graph of directions needs a longer list where row norms
/// vary (see the module docs).
pub fn default_ef(measure: Measure, top: usize) -> usize {
    let floor = if measure == Measure::Ip { 128 } else { 64 };
    top.saturating_mul(2).max(floor)
}

/// What an index file records about itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IndexHeader {
    /// How neighbours are ranked.
    pub measure: Measure,
    /// Rows indexed.
    pub n: u64,
    /// Values (or signs) per row.
    pub k: usize,
    /// Construction parameters.
    pub params: HnswParams,
    /// BLAKE3 checksum of the release the index was built from.
    pub release_checksum: [u8; 32],
}

impl IndexHeader {
    /// Refuse an index built for another release than the one whose checksum is given.
    pub fn check_release(&self, index_path: &Path, release_checksum: &[u8; 32]) -> Result<()> {
        if &self.release_checksum != release_checksum {
            return Err(Error::format(
                index_path,
                format!(
                    "this index was built for a different release (the index records release \
                     checksum {}…, the release's is {}…); rebuild it with `dprp index`",
                    hex8(&self.release_checksum),
                    hex8(release_checksum)
                ),
            ));
        }
        Ok(())
    }
}

fn hex8(b: &[u8; 32]) -> String {
    b[..8].iter().map(|x| format!("{x:02x}")).collect()
}

fn inverse_norms(db: &Sketch<'_>, measure: Measure) -> Vec<f32> {
    match *db {
        Sketch::Real { data, k } if measure == Measure::Cosine => {
            super::exact::inverse_norms(data, k)
        }
        _ => Vec::new(),
    }
}

/// Mask of the meaningful bits of a row's last word.
fn last_word_mask(k: usize) -> u64 {
    match k % 64 {
        0 => !0,
        r => (1u64 << r) - 1,
    }
}

/// An HNSW graph over the rows of a sketch, which it borrows for re-scoring.
pub struct HnswIndex<'a> {
    db: Sketch<'a>,
    measure: Measure,
    params: HnswParams,
    n: usize,
    k: usize,
    /// `1/‖row‖` per database row (cosine; as the exact scan computes them).
    inv_norms: Vec<f32>,
    /// The rows' quantised directions (real sketches), which walks compare.
    codes: Option<WalkCodes>,
    graph: Graph,
}

/// Checks shared by `build` and `load`: shape, measure, finiteness.
fn check_db(db: &Sketch<'_>, measure: Measure) -> Result<()> {
    let k = db.k();
    if k == 0 {
        return Err(Error::param("release", "k = 0: nothing to index"));
    }
    let (len, per) = match *db {
        Sketch::Real { data, k } => (data.len(), k),
        Sketch::Bits { data, k } => (data.len(), k.div_ceil(64)),
    };
    if len % per != 0 {
        return Err(Error::param(
            "release",
            format!("{len} payload elements are not a whole number of {per}-element rows"),
        ));
    }
    let n = db.rows();
    if n == 0 {
        return Err(Error::param("release", "the release has no rows to index"));
    }
    if n > i32::MAX as usize {
        return Err(Error::param(
            "release",
            format!("{n} rows exceed the HNSW index limit of {}", i32::MAX),
        ));
    }
    check_request(db, db, measure, 1)?;
    if let Sketch::Real { data, k } = *db {
        check_finite(data, k, "release")?;
    }
    Ok(())
}

fn check_finite(data: &[f32], k: usize, what: &str) -> Result<()> {
    // The first row holding a non-finite value (rows checked in parallel), then its column.
    let bad = |x: &[f32]| x.iter().position(|v| !v.is_finite());
    if let Some(row) = data.par_chunks(k).position_first(|x| bad(x).is_some()) {
        let col = bad(&data[row * k..]).unwrap_or(0);
        return Err(Error::param(
            what,
            format!(
                "row {row}, column {col} is not finite ({})",
                data[row * k + col]
            ),
        ));
    }
    Ok(())
}

/// The walk codes of real sketches (none for signs).
fn walk_codes(db: &Sketch<'_>, measure: Measure) -> Option<WalkCodes> {
    match *db {
        Sketch::Real { data, k } => Some(WalkCodes::new(data, k, measure)),
        Sketch::Bits { .. } => None,
    }
}

/// Sign rows with the padding bits above `k` cleared.
fn masked_bits(data: &[u64], k: usize) -> Vec<u64> {
    let words = k.div_ceil(64);
    let mask = last_word_mask(k);
    let mut out = data.to_vec();
    for row in out.chunks_mut(words) {
        row[words - 1] &= mask;
    }
    out
}

/// BLAKE3 of the sketch payload as the release stores it (little-endian).
fn payload_hash(db: &Sketch<'_>) -> [u8; 32] {
    let bytes: &[u8] = match *db {
        Sketch::Real { data, .. } => bytemuck::cast_slice(data),
        Sketch::Bits { data, .. } => bytemuck::cast_slice(data),
    };
    let mut h = blake3::Hasher::new();
    h.update_rayon(bytes);
    *h.finalize().as_bytes()
}

fn measure_code(m: Measure) -> u32 {
    match m {
        Measure::Ip => 0,
        Measure::Cosine => 1,
        Measure::Hamming => 2,
    }
}

impl<'a> HnswIndex<'a> {
    /// Build over all database rows (parallel insertion on all cores; see `hnsw/build.rs`).
    ///
    /// ```
    /// use dprp::search::hnsw::{HnswIndex, HnswParams};
    /// use dprp::search::{exact, Measure, Sketch};
    ///
    /// # fn main() -> dprp::Result<()> {
    /// // 500 packed 128-bit sign sketches (2 words each)
    /// let mut x = 0x9e3779b97f4a7c15u64;
    /// let words: Vec<u64> = (0..1000)
    ///     .map(|_| {
    ///         x ^= x << 13;
    ///         x ^= x >> 7;
    ///         x ^= x << 17;
    ///         x
    ///     })
    ///     .collect();
    /// let db = Sketch::Bits { data: &words, k: 128 };
    /// let index = HnswIndex::build(&db, Measure::Hamming, &HnswParams::default())?;
    /// let approx = index.search(&db, 10, 64, None)?;
    /// let exact = exact::search(&db, &db, Measure::Hamming, 10, None)?;
    /// assert_eq!(approx.len(), exact.len());
    /// // The graph is approximate and its links depend on the threads' timing (parallel
    /// // insertion), so compare with the exact scan rather than expect every answer (with the
    /// // graph of hnsw_rs, recall@10 was at least 0.9998 over 200 builds of this example, and a
    /// // row found itself first in all 500 × 200 searches; the margins below are wide).
    /// let found: usize = approx
    ///     .iter()
    ///     .zip(&exact)
    ///     .map(|(a, e)| a.iter().filter(|h| e.iter().any(|g| g.row == h.row)).count())
    ///     .sum();
    /// assert!(found as f64 >= 0.95 * (10 * 500) as f64);
    /// let first_is_self = approx.iter().enumerate().filter(|(i, h)| h[0].row == *i).count();
    /// assert!(first_is_self >= 490); // 128 agreements with itself
    /// # Ok(())
    /// # }
    /// ```
    pub fn build(db: &Sketch<'a>, measure: Measure, params: &HnswParams) -> Result<HnswIndex<'a>> {
        HnswIndex::build_with_progress(db, measure, params, None)
    }

    /// [`build`](HnswIndex::build), calling `progress` now and then with the number of rows
    /// inserted so far (serialised, increasing, the last call being the number of rows).
    pub fn build_with_progress(
        db: &Sketch<'a>,
        measure: Measure,
        params: &HnswParams,
        progress: Option<&(dyn Fn(usize) + Sync)>,
    ) -> Result<HnswIndex<'a>> {
        params.check()?;
        check_db(db, measure)?;
        let n = db.rows();
        let (m, ef) = (params.m, params.ef_construction);
        // The graph links rows by direction for both real measures (see the module docs).
        let graph = match *db {
            Sketch::Real { data, k } => {
                let c = ByteCodes::new(data, k);
                let dist = ByteDot {
                    inv_s2: 1.0 / (c.scale * c.scale),
                };
                let row = |t: u32| &c.data[t as usize * k..(t as usize + 1) * k];
                build::build_graph(
                    n,
                    m,
                    ef,
                    &|a, b| dist.eval(row(a), row(b)),
                    &|t| prefetch_bytes(row(t)),
                    progress,
                )
            }
            Sketch::Bits { data, k } => {
                let bits = masked_bits(data, k);
                let words = k.div_ceil(64);
                let row = |t: u32| &bits[t as usize * words..(t as usize + 1) * words];
                build::build_graph(
                    n,
                    m,
                    ef,
                    &|a, b| hamming(row(a), row(b)) as f32,
                    &|t| prefetch_bytes(row(t)),
                    progress,
                )
            }
        };
        Ok(HnswIndex {
            db: *db,
            measure,
            params: *params,
            n,
            k: db.k(),
            inv_norms: inverse_norms(db, measure),
            codes: walk_codes(db, measure),
            graph,
        })
    }

    /// How neighbours are ranked.
    pub fn measure(&self) -> Measure {
        self.measure
    }
    /// Rows indexed.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Values (or signs) per row.
    pub fn k(&self) -> usize {
        self.k
    }
    /// Construction parameters.
    pub fn params(&self) -> HnswParams {
        self.params
    }
    /// Number of graph layers.
    pub fn layers(&self) -> usize {
        self.graph.layers.len()
    }

    /// Top-`top` hits per query, best first (score descending, then row ascending), scored as
    /// the exact scan scores them. `ef` (≥ `top`; see [`default_ef`]) is the size of the
    /// candidate list: larger is slower and finds more of the exact top `top`. `progress`, if
    /// given, is called after each finished batch of queries with the number finished so far (as
    /// [`exact::search`](super::exact::search) does: serialised, strictly increasing, the last
    /// call being the number of queries).
    ///
    /// Errors: those of [`check_request`]; `--ef` when `ef < top`; `--queries` when a real query
    /// holds a NaN or infinite value.
    pub fn search(
        &self,
        queries: &Sketch<'_>,
        top: usize,
        ef: usize,
        progress: Option<&(dyn Fn(usize) + Sync)>,
    ) -> Result<Vec<Vec<Hit>>> {
        check_request(&self.db, queries, self.measure, top)?;
        if ef < top {
            return Err(Error::param(
                "‹ef›",
                format!("ef = {ef} is smaller than K = {top}; ef must be at least K"),
            ));
        }
        let nq = queries.rows();
        let done = Mutex::new(0usize);
        let tick = |c: usize| {
            if let Some(p) = progress {
                // A poisoned lock only means another callback panicked; keep counting.
                let mut d = done.lock().unwrap_or_else(|e| e.into_inner());
                *d += c;
                p(*d);
            }
        };
        let n = self.n;
        let out: Vec<Vec<Vec<Hit>>> = match (*queries, self.db) {
            (Sketch::Real { data, k }, Sketch::Real { .. }) => {
                check_finite(data, k, "‹queries›")?;
                let Some(codes) = self.codes.as_ref() else {
                    unreachable!("an index of real sketches has codes");
                };
                let rows: Vec<&[f32]> = data.chunks(k).take(nq).collect();
                rows.par_chunks(QUERY_BATCH)
                    .map_init(
                        || (Scratch::new(n), codes.query_buffer()),
                        |(s, qc), batch| {
                            let r = batch
                                .iter()
                                .map(|q| {
                                    let found = if codes.code_query(q, qc) {
                                        let qc = &*qc;
                                        self.graph.walk(
                                            |t| codes.dist(qc, t as usize),
                                            |t| codes.prefetch(t as usize),
                                            ef,
                                            s,
                                        )
                                    } else {
                                        // Every row scores 0: the exact ranking is 0, 1, 2, ...
                                        (0..top).collect()
                                    };
                                    let q_inv = super::exact::inverse_norm(q);
                                    self.finish(
                                        found,
                                        top,
                                        |row| self.score_real(q, q_inv, row),
                                        |row| self.prefetch_real(row),
                                    )
                                })
                                .collect();
                            tick(batch.len());
                            r
                        },
                    )
                    .collect()
            }
            (Sketch::Bits { data, k }, Sketch::Bits { data: db, .. }) => {
                let words = k.div_ceil(64);
                let mask = last_word_mask(k);
                let rows: Vec<&[u64]> = data.chunks(words).take(nq).collect();
                rows.par_chunks(QUERY_BATCH)
                    .map_init(
                        || Scratch::new(n),
                        |s, batch| {
                            let r = batch
                                .iter()
                                .map(|q| {
                                    let d = |t: usize| {
                                        let x = &db[t * words..(t + 1) * words];
                                        let last = (x[words - 1] ^ q[words - 1]) & mask;
                                        hamming(&x[..words - 1], &q[..words - 1])
                                            + last.count_ones()
                                    };
                                    let found = self.graph.walk(
                                        |t| d(t as usize) as f32,
                                        |t| prefetch_bytes(&db[t as usize * words..][..words]),
                                        ef,
                                        s,
                                    );
                                    self.finish(
                                        found,
                                        top,
                                        |row| (k - d(row) as usize) as f32,
                                        |row| prefetch_bytes(&db[row * words..][..words]),
                                    )
                                })
                                .collect();
                            tick(batch.len());
                            r
                        },
                    )
                    .collect()
            }
            _ => unreachable!("check_request refuses queries of the other kind"),
        };
        Ok(out.into_iter().flatten().collect())
    }

    /// Start loading database row `row` (real sketches).
    #[inline]
    fn prefetch_real(&self, row: usize) {
        if let Sketch::Real { data, k } = self.db {
            prefetch_bytes(&data[row * k..(row + 1) * k]);
        }
    }

    /// Score of database row `row` for a real query, computed as the exact scan does (an f32
    /// inner product, times both inverse norms for cosine); `q_inv` is the query's inverse norm.
    fn score_real(&self, q: &[f32], q_inv: f32, row: usize) -> f32 {
        let Sketch::Real { data, k } = self.db else {
            return 0.0;
        };
        let d = dot(q, &data[row * k..(row + 1) * k]);
        match self.measure {
            Measure::Cosine => d * q_inv * self.inv_norms[row],
            _ => d,
        }
    }

    /// Score the rows found, sort them as the exact scan ranks (score descending, row
    /// ascending) and keep `top`. Should a walk find fewer than `top` rows (a disconnected
    /// graph), the query is answered by scoring every row.
    fn finish(
        &self,
        rows: Vec<usize>,
        top: usize,
        score: impl Fn(usize) -> f32,
        prefetch: impl Fn(usize),
    ) -> Vec<Hit> {
        let rows: Vec<usize> = if rows.len() < top {
            (0..self.n).collect()
        } else {
            rows
        };
        // Load a couple of rows ahead: they are scattered over the release.
        for &row in rows.iter().take(2) {
            prefetch(row);
        }
        let mut hits: Vec<Hit> = (0..rows.len())
            .map(|i| {
                if let Some(&next) = rows.get(i + 2) {
                    prefetch(next);
                }
                Hit {
                    row: rows[i],
                    score: score(rows[i]),
                }
            })
            .collect();
        hits.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.row.cmp(&b.row)));
        hits.truncate(top);
        hits
    }

    /// Save to `path` atomically (temporary file + rename; an existing regular file is
    /// replaced only with [`Existing::Replace`]), recording the checksum of the release the
    /// index was built from.
    pub fn save(
        &self,
        (path, existing): (&Path, Existing),
        release_checksum: [u8; 32],
    ) -> Result<()> {
        let mut out = AtomicFile::create(path, existing)?;
        let graph = self.graph.to_bytes();
        let mut header = [0u8; HEADER_LEN];
        header[0..8].copy_from_slice(INDEX_MAGIC);
        header[8..12].copy_from_slice(&INDEX_VERSION.to_le_bytes());
        header[12..16].copy_from_slice(&measure_code(self.measure).to_le_bytes());
        header[16..24].copy_from_slice(&(self.n as u64).to_le_bytes());
        header[24..32].copy_from_slice(&(self.k as u64).to_le_bytes());
        header[32..40].copy_from_slice(&(self.params.m as u64).to_le_bytes());
        header[40..48].copy_from_slice(&(self.params.ef_construction as u64).to_le_bytes());
        header[48..56].copy_from_slice(&(self.graph.layers.len() as u64).to_le_bytes());
        header[56..64].copy_from_slice(&(self.graph.entry as u64).to_le_bytes());
        header[64..72].copy_from_slice(&(graph.len() as u64).to_le_bytes());
        header[72..104].copy_from_slice(&release_checksum);
        header[104..136].copy_from_slice(&payload_hash(&self.db));
        let sum = index_checksum(&header[..HASHED_HEADER], &graph);
        header[136..168].copy_from_slice(&sum);
        out.write_all(&header)?;
        out.write_all(&graph)?;
        out.commit()
    }

    /// Load an index saved by [`save`](HnswIndex::save) for the sketches `db` — the rows of the
    /// release it was built from (the file holds the graph only; searches read the rows). Returns the header, whose `release_checksum` the caller must compare with the
    /// release's ([`IndexHeader::check_release`]).
    ///
    /// Errors: `Io` when the file cannot be read; `Format` naming the file when it is not an
    /// index (wrong magic, or a release), has another format version, is truncated or extended,
    /// fails its checksum, or holds an invalid graph ("corrupt index: ..."); `Param` (`release`)
    /// when `db` is not the sketches indexed (kind, k, rows, or payload hash differ).
    pub fn load(path: &Path, db: &Sketch<'a>) -> Result<(HnswIndex<'a>, IndexHeader)> {
        check_input_file(path)?;
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let bad = |m: String| Error::format(path, m);
        if bytes.len() >= 8 && &bytes[..8] != INDEX_MAGIC {
            return Err(bad(if &bytes[..8] == RELEASE_MAGIC {
                "this is a dprp release, not an HNSW index (build one with `dprp index`)".into()
            } else {
                "not a dprp HNSW index (wrong magic bytes; expected \"DPRPHNSW\")".into()
            }));
        }
        if bytes.len() < HEADER_LEN {
            return Err(bad(format!(
                "corrupt index: file is truncated ({} bytes, shorter than the {HEADER_LEN}-byte \
                 header)",
                bytes.len()
            )));
        }
        let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
        let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
        if version != INDEX_VERSION {
            return Err(bad(format!(
                "unsupported index format version {version} (this dprp reads version \
                 {INDEX_VERSION})"
            )));
        }
        let graph_len = u64_at(64);
        if Some(bytes.len() as u64) != (HEADER_LEN as u64).checked_add(graph_len) {
            return Err(bad(format!(
                "corrupt index: file is {} bytes, but its header says {}: truncated or extended",
                bytes.len(),
                HEADER_LEN as u128 + graph_len as u128
            )));
        }
        let graph_bytes = &bytes[HEADER_LEN..];
        if index_checksum(&bytes[..HASHED_HEADER], graph_bytes) != bytes[136..168] {
            return Err(bad(
                "corrupt index: checksum mismatch: the file was modified or damaged".into(),
            ));
        }
        let measure = match u32::from_le_bytes(bytes[12..16].try_into().unwrap()) {
            0 => Measure::Ip,
            1 => Measure::Cosine,
            2 => Measure::Hamming,
            c => return Err(bad(format!("corrupt index: unknown measure code {c}"))),
        };
        let (n, k) = (u64_at(16), u64_at(24));
        let params = HnswParams {
            m: usize::try_from(u64_at(32)).unwrap_or(usize::MAX),
            ef_construction: usize::try_from(u64_at(40)).unwrap_or(usize::MAX),
        };
        params
            .check()
            .map_err(|e| bad(format!("corrupt index: {e}")))?;
        let k = usize::try_from(k)
            .ok()
            .filter(|&k| k > 0)
            .ok_or_else(|| bad(format!("corrupt index: k = {k}")))?;
        let mut release_checksum = [0u8; 32];
        release_checksum.copy_from_slice(&bytes[72..104]);
        let header = IndexHeader {
            measure,
            n,
            k,
            params,
            release_checksum,
        };
        // The sketches given must be the ones indexed.
        let kind = |bits: bool| if bits { "sign" } else { "real" };
        if db.is_bits() != (measure == Measure::Hamming) || db.k() != k || db.rows() as u64 != n {
            return Err(Error::param(
                "release",
                format!(
                    "the index {} covers {n} {} sketches with k = {k}; the release has {} {} \
                     sketches with k = {}",
                    path.display(),
                    kind(measure == Measure::Hamming),
                    db.rows(),
                    kind(db.is_bits()),
                    db.k()
                ),
            ));
        }
        check_db(db, measure)?;
        if payload_hash(db) != bytes[104..136] {
            return Err(Error::param(
                "release",
                format!(
                    "the index {} was built over different sketches than the release's (rebuild \
                     it with `dprp index`)",
                    path.display()
                ),
            ));
        }
        let n = n as usize;
        let layers = usize::try_from(u64_at(48)).unwrap_or(usize::MAX);
        let graph = Graph::from_bytes(graph_bytes, n, params.m, layers, u64_at(56))
            .map_err(|m| bad(format!("corrupt index: graph section: {m}")))?;
        Ok((
            HnswIndex {
                db: *db,
                measure,
                params,
                n,
                k,
                inv_norms: inverse_norms(db, measure),
                codes: walk_codes(db, measure),
                graph,
            },
            header,
        ))
    }
}

fn index_checksum(header: &[u8], graph: &[u8]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(header);
    h.update_rayon(graph);
    *h.finalize().as_bytes()
}
