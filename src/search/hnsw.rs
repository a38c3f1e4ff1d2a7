//! Approximate top-K search with an HNSW graph (`hnsw_rs` 0.3), with the scores of
//! [`exact`](super::exact): inner product, cosine, or agreements `k − Hamming`, larger is better.
//!
//! # What the graph indexes
//!
//! HNSW needs a distance whose smallest values are the best matches, `≥ 0` and never NaN
//! (`hnsw_rs` asserts both). The rows are therefore transformed before insertion, and queries
//! before the graph walk; the candidates the walk returns are then **re-scored exactly** from the
//! original rows and sorted by (score descending, row ascending), as the exact scan ranks them.
//!
//! * **Cosine** — rows and queries are normalised to unit length (a zero row stays zero) and the
//!   distance is `1 − ⟨a, b⟩` clamped at 0. On unit vectors `1 − ⟨a, b⟩ = ‖a − b‖²/2`, a monotone
//!   function of the Euclidean distance, so the graph is an ordinary Euclidean HNSW on the sphere
//!   and its order is exactly the cosine order.
//! * **Inner product** (maximum-inner-product search, not a metric problem) — the classic
//!   reduction to nearest neighbours (Bachrach et al. 2014; Neyshabur & Srebro 2015): with `M` the
//!   largest row norm, row `x` becomes `x̃ = [x/M, √(1 − ‖x/M‖²)]` (unit length, `k + 1`
//!   values) and query `q` becomes `q̃ = [q/‖q‖, 0]` (unit length). Then
//!   `‖q̃ − x̃‖² = 2 − 2⟨q, x⟩/(M‖q‖)`, so for a fixed query the nearest `x̃` are exactly the
//!   largest inner products, and the same `1 − ⟨a, b⟩` distance on unit vectors applies.
//!   (`anndists::DistDot` is not used: it assumes normalised input, returns `1 − ⟨a, b⟩` and
//!   *asserts* it is `≥ 0`, which rounding breaks for near-identical unit vectors.)
//! * **Hamming** — packed sign words, distance `popcount(a XOR b)` summed over the `⌈k/64⌉`
//!   words (padding bits above `k` are masked off). `anndists::DistHamming` on `u64` counts
//!   differing *words*, not bits, so it is not used. Scores are `k − distance`.
//!
//! A zero query (inner product or cosine) has score 0 against every row; it returns rows
//! `0..K`, as the exact scan's tie-breaking does.
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
//! | 32 | 8 | m (HNSW links per node and layer; `2m` on layer 0) |
//! | 40 | 8 | ef_construction |
//! | 48 | 8 | vector length in the graph (`k + 1` ip, `k` cosine, `⌈k/64⌉` hamming) |
//! | 56 | 8 | level scale of the layer sampling (f64) |
//! | 64 | 8 | graph section length |
//! | 72 | 32 | BLAKE3 checksum of the release the index was built from (given by the caller) |
//! | 104 | 32 | BLAKE3 of the indexed sketch payload (`n` rows as stored in the release) |
//! | 136 | 32 | BLAKE3 of bytes 0..136 followed by the graph section |
//! | 168 | … | graph section: `hnsw_rs` 0.3's graph dump (`DumpMode::Full`) without its description |
//!
//! The graph section holds the topology only (node levels, neighbour lists with their
//! distances, the entry point), no vectors: the vectors are a deterministic function of the
//! release, so [`HnswIndex::load`] takes the release's sketches again and regenerates them. That
//! keeps the index file small and ties it to its release twice: the caller compares the recorded
//! release checksum ([`IndexHeader::check_release`]), and `load` itself refuses sketches whose
//! payload hash differs.
//!
//! `hnsw_rs`'s reloader trusts its input (it panics, or exits the process, on malformed dumps),
//! so `load` verifies the checksum and then validates every structural field of the graph
//! section (counts, levels, ranks, neighbour references, distances, entry point) before handing
//! `hnsw_rs` a dump it rebuilds in a temporary directory. No malformed file reaches it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use hnsw_rs::anndists::dist::distances::Distance;
use hnsw_rs::api::AnnT;
use hnsw_rs::hnsw::Hnsw;
use hnsw_rs::hnswio::HnswIo;
use rayon::prelude::*;

use super::{check_request, Hit, Measure, Sketch};
use crate::atomic::{check_input_file, AtomicFile};
use crate::error::{Error, Result};

/// Magic bytes at the start of an index file.
pub const INDEX_MAGIC: &[u8; 8] = b"DPRPHNSW";
/// Index format version written by this dprp.
pub const INDEX_VERSION: u32 = 1;
/// Bytes before the graph section.
const HEADER_LEN: usize = 168;
/// Header bytes covered by the index checksum (everything before it).
const HASHED_HEADER: usize = 136;
/// `hnsw_rs`'s fixed number of layers (`NB_LAYER_MAX`); its dump refuses any other.
const NB_LAYER: usize = 16;
/// Release magic, to name a release passed where an index is expected.
const RELEASE_MAGIC: &[u8; 8] = b"DPRPSKCH";

// Magic numbers of `hnsw_rs` 0.3's dump format (src/hnswio.rs).
const MAGICDESCR_4: u32 = 0x002a_6779;
const MAGICLAYER: u32 = 0x000a_676f;
const MAGICPOINT: u32 = 0x000a_678f;
const MAGICDATAP: u32 = 0xa67f_0000;

/// Construction parameters of the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HnswParams {
    /// Links per node and layer (`2m` on the bottom layer). 2..=255; default 16.
    pub m: usize,
    /// Candidate list size while inserting. ≥ 1; default 200.
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
    /// Check the ranges `hnsw_rs` supports (it exits the process for `m > 256` and stores `m` in
    /// one byte).
    pub fn check(&self) -> Result<()> {
        if !(2..=255).contains(&self.m) {
            return Err(Error::param(
                "--m",
                format!("m = {} is out of range (2 to 255)", self.m),
            ));
        }
        if self.ef_construction == 0 || self.ef_construction > 1 << 20 {
            return Err(Error::param(
                "--ef-construction",
                format!(
                    "ef_construction = {} is out of range (1 to 1048576)",
                    self.ef_construction
                ),
            ));
        }
        Ok(())
    }
}

/// Default search list size for `top` results: `max(64, 2·top)`.
pub fn default_ef(top: usize) -> usize {
    top.saturating_mul(2).max(64)
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
                    "this index was built for a different release (index records release checksum \
                     {}…, the release has {}…); rebuild it with `dprp index`",
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

/// `1 − ⟨a, b⟩` for unit vectors, clamped at 0 (never negative, never NaN for finite input).
#[derive(Debug, Default, Clone, Copy)]
struct UnitDot;

impl Distance<f32> for UnitDot {
    fn eval(&self, va: &[f32], vb: &[f32]) -> f32 {
        (1.0 - dot(va, vb)).max(0.0)
    }
}

/// Bitwise Hamming distance between packed sign words (padding bits are zero in both).
#[derive(Debug, Default, Clone, Copy)]
struct PackedHamming;

impl Distance<u64> for PackedHamming {
    fn eval(&self, va: &[u64], vb: &[u64]) -> f32 {
        hamming(va, vb) as f32
    }
}

/// f32 dot product with 16 independent accumulators (vectorises on the baseline target).
#[inline]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    const L: usize = 16;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; L];
    let ca = a.chunks_exact(L);
    let cb = b.chunks_exact(L);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..L {
            acc[i] += x[i] * y[i];
        }
    }
    let mut tail = 0f32;
    for (x, y) in ra.iter().zip(rb) {
        tail += x * y;
    }
    acc.iter().sum::<f32>() + tail
}

#[inline]
fn hamming(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// `1/‖x‖` rounded to f32 (norm in f64), 0 for a zero row: the exact scan's cosine factors.
fn inverse_norm(x: &[f32]) -> f32 {
    let n = norm2(x).sqrt();
    if n > 0.0 {
        (1.0 / n) as f32
    } else {
        0.0
    }
}

fn inverse_norms(db: &Sketch<'_>, measure: Measure) -> Vec<f32> {
    match *db {
        Sketch::Real { data, k } if measure == Measure::Cosine => {
            data.par_chunks(k).map(inverse_norm).collect()
        }
        _ => Vec::new(),
    }
}

fn norm2(x: &[f32]) -> f64 {
    x.iter().map(|&v| (v as f64) * (v as f64)).sum()
}

/// Mask of the meaningful bits of a row's last word.
fn last_word_mask(k: usize) -> u64 {
    match k % 64 {
        0 => !0,
        r => (1u64 << r) - 1,
    }
}

enum Graph {
    Real(Hnsw<'static, f32, UnitDot>),
    Bits(Hnsw<'static, u64, PackedHamming>),
}

/// An HNSW graph over the rows of a sketch, which it borrows for re-scoring.
pub struct HnswIndex<'a> {
    db: Sketch<'a>,
    measure: Measure,
    params: HnswParams,
    n: usize,
    k: usize,
    /// `1/‖row‖` per database row for cosine scores (as the exact scan computes them).
    inv_norms: Vec<f32>,
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
    if let Some(i) = data.iter().position(|v| !v.is_finite()) {
        return Err(Error::param(
            what,
            format!(
                "row {}, column {} is not finite ({})",
                i / k,
                i % k,
                data[i]
            ),
        ));
    }
    Ok(())
}

/// The vector length stored in the graph.
fn graph_dim(measure: Measure, k: usize) -> usize {
    match measure {
        Measure::Ip => k + 1,
        Measure::Cosine => k,
        Measure::Hamming => k.div_ceil(64),
    }
}

/// `1/M` for inner-product search.
fn ip_scale(data: &[f32], k: usize) -> f64 {
    let max = data
        .par_chunks(k)
        .map(norm2)
        .reduce(|| 0.0, f64::max)
        .sqrt();
    if max > 0.0 {
        1.0 / max
    } else {
        1.0
    }
}

/// Transform one database row into the graph's representation.
fn prepare_row(measure: Measure, x: &[f32], scale: f64, out: &mut [f32]) {
    match measure {
        Measure::Cosine => {
            let nrm = norm2(x).sqrt();
            let s = if nrm > 0.0 { 1.0 / nrm } else { 0.0 };
            for (o, &v) in out.iter_mut().zip(x) {
                *o = (v as f64 * s) as f32;
            }
        }
        _ => {
            let mut sq = 0f64;
            for (o, &v) in out.iter_mut().zip(x) {
                let y = (v as f64 * scale) as f32;
                *o = y;
                sq += (y as f64) * (y as f64);
            }
            out[x.len()] = (1.0 - sq).max(0.0).sqrt() as f32;
        }
    }
}

/// Transform one query into the graph's representation; `false` for a zero query.
fn prepare_query(measure: Measure, q: &[f32], out: &mut [f32]) -> bool {
    let nrm = norm2(q).sqrt();
    if nrm == 0.0 {
        return false;
    }
    for (o, &v) in out.iter_mut().zip(q) {
        *o = (v as f64 / nrm) as f32;
    }
    if measure == Measure::Ip {
        out[q.len()] = 0.0;
    }
    true
}

/// All database rows in the graph's representation, row-major.
fn prepare_real(measure: Measure, data: &[f32], k: usize, scale: f64) -> Vec<f32> {
    let dim = graph_dim(measure, k);
    let mut out = vec![0f32; data.len() / k * dim];
    out.par_chunks_mut(dim)
        .zip(data.par_chunks(k))
        .for_each(|(o, x)| prepare_row(measure, x, scale, o));
    out
}

fn prepare_bits(data: &[u64], k: usize) -> Vec<u64> {
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

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

impl<'a> HnswIndex<'a> {
    /// Build over all database rows (parallel insertion).
    pub fn build(db: &Sketch<'a>, measure: Measure, params: &HnswParams) -> Result<HnswIndex<'a>> {
        params.check()?;
        check_db(db, measure)?;
        let (n, k) = (db.rows(), db.k());
        let graph = match *db {
            Sketch::Real { data, k } => {
                let scale = if measure == Measure::Ip {
                    ip_scale(data, k)
                } else {
                    1.0
                };
                let dim = graph_dim(measure, k);
                let prepared = prepare_real(measure, data, k, scale);
                let h = Hnsw::new(params.m, n, NB_LAYER, params.ef_construction, UnitDot);
                let items: Vec<(&[f32], usize)> = prepared.chunks(dim).zip(0..n).collect();
                h.parallel_insert_slice(&items);
                Graph::Real(h)
            }
            Sketch::Bits { data, k } => {
                let words = k.div_ceil(64);
                let prepared = prepare_bits(data, k);
                let h = Hnsw::new(
                    params.m,
                    n,
                    NB_LAYER,
                    params.ef_construction,
                    PackedHamming,
                );
                let items: Vec<(&[u64], usize)> = prepared.chunks(words).zip(0..n).collect();
                h.parallel_insert_slice(&items);
                Graph::Bits(h)
            }
        };
        let mut index = HnswIndex {
            db: *db,
            measure,
            params: *params,
            n,
            k,
            inv_norms: inverse_norms(db, measure),
            graph,
        };
        index.set_searching();
        Ok(index)
    }

    fn set_searching(&mut self) {
        match &mut self.graph {
            Graph::Real(h) => h.set_searching_mode(true),
            Graph::Bits(h) => h.set_searching_mode(true),
        }
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

    /// Top-`top` hits per query, best first (score descending, then row ascending), with the
    /// exact scan's scores. `ef` (≥ `top`; see [`default_ef`]) is the search list size: larger is
    /// slower and more accurate. `progress`, if given, is called after each finished batch of
    /// queries with the number finished so far (as [`exact::search`](super::exact::search) does:
    /// serialised, strictly increasing, the last call being the number of queries).
    ///
    /// Queries must be finite (the graph distances must not be NaN); the other errors are those
    /// of [`check_request`], and `--ef` when `ef < top`.
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
                "--ef",
                format!("ef = {ef} is smaller than K = {top}; ef must be at least K"),
            ));
        }
        let nq = queries.rows();
        const BATCH: usize = 64;
        let done = Mutex::new(0usize);
        let tick = |c: usize| {
            if let Some(p) = progress {
                // Serialised, strictly increasing counts (a poisoned lock only means another
                // callback panicked).
                let mut d = done.lock().unwrap_or_else(|e| e.into_inner());
                *d += c;
                p(*d);
            }
        };
        match (*queries, &self.graph) {
            (Sketch::Real { data, k }, Graph::Real(h)) => {
                check_finite(data, k, "--queries")?;
                let dim = graph_dim(self.measure, k);
                let rows: Vec<&[f32]> = data.chunks(k).take(nq).collect();
                let out: Vec<Vec<Vec<Hit>>> = rows
                    .par_chunks(BATCH)
                    .map(|batch| {
                        let mut buf = vec![0f32; dim];
                        let r = batch
                            .iter()
                            .map(|q| self.search_real(h, q, &mut buf, top, ef))
                            .collect();
                        tick(batch.len());
                        r
                    })
                    .collect();
                Ok(out.into_iter().flatten().collect())
            }
            (Sketch::Bits { data, k }, Graph::Bits(h)) => {
                let words = k.div_ceil(64);
                let mask = last_word_mask(k);
                let rows: Vec<&[u64]> = data.chunks(words).take(nq).collect();
                let out: Vec<Vec<Vec<Hit>>> = rows
                    .par_chunks(BATCH)
                    .map(|batch| {
                        let mut buf = vec![0u64; words];
                        let r = batch
                            .iter()
                            .map(|q| {
                                buf.copy_from_slice(q);
                                buf[words - 1] &= mask;
                                self.search_bits(h, &buf, top, ef)
                            })
                            .collect();
                        tick(batch.len());
                        r
                    })
                    .collect();
                Ok(out.into_iter().flatten().collect())
            }
            _ => Err(Error::param(
                "--queries",
                "queries and index must both be real sketches or both be sign sketches",
            )),
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

    fn search_real(
        &self,
        h: &Hnsw<'static, f32, UnitDot>,
        q: &[f32],
        buf: &mut [f32],
        top: usize,
        ef: usize,
    ) -> Vec<Hit> {
        let q_inv = inverse_norm(q);
        let rows: Vec<usize> = if prepare_query(self.measure, q, buf) {
            h.search(buf, ef, ef).iter().map(|nb| nb.d_id).collect()
        } else {
            // Every row scores 0: the exact ranking is rows 0, 1, 2, ...
            (0..top).collect()
        };
        let hits = rows
            .into_iter()
            .filter(|&r| r < self.n)
            .map(|row| Hit {
                row,
                score: self.score_real(q, q_inv, row),
            })
            .collect();
        self.finish(hits, top, |row| self.score_real(q, q_inv, row))
    }

    fn search_bits(
        &self,
        h: &Hnsw<'static, u64, PackedHamming>,
        q: &[u64],
        top: usize,
        ef: usize,
    ) -> Vec<Hit> {
        let Sketch::Bits { data, k } = self.db else {
            return Vec::new();
        };
        let words = k.div_ceil(64);
        let mask = last_word_mask(k);
        let score = |row: usize| {
            let x = &data[row * words..(row + 1) * words];
            let mut d = hamming(&x[..words - 1], &q[..words - 1]);
            d += ((x[words - 1] ^ q[words - 1]) & mask).count_ones();
            (k - d as usize) as f32
        };
        let hits = h
            .search(q, ef, ef)
            .iter()
            .map(|nb| nb.d_id)
            .filter(|&r| r < self.n)
            .map(|row| Hit {
                row,
                score: score(row),
            })
            .collect();
        self.finish(hits, top, score)
    }

    /// Sort candidates as the exact scan ranks them and keep `top`. Should the graph walk return
    /// fewer than `top` candidates (a disconnected graph region), the query is answered by an
    /// exact scan instead, so every query gets `top` hits.
    fn finish(&self, mut hits: Vec<Hit>, top: usize, score: impl Fn(usize) -> f32) -> Vec<Hit> {
        hits.sort_unstable_by_key(|h| h.row);
        hits.dedup_by_key(|h| h.row);
        if hits.len() < top {
            hits = (0..self.n)
                .map(|row| Hit {
                    row,
                    score: score(row),
                })
                .collect();
        }
        hits.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.row.cmp(&b.row)));
        hits.truncate(top);
        hits
    }

    /// Save to `path` atomically, recording the checksum of the release the index was built from.
    pub fn save(&self, path: &Path, release_checksum: [u8; 32]) -> Result<()> {
        if cfg!(target_endian = "big") || cfg!(not(target_pointer_width = "64")) {
            return Err(Error::param(
                "output",
                "writing HNSW indexes needs a 64-bit little-endian machine",
            ));
        }
        let mut out = AtomicFile::create(path)?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // hnsw_rs dumps into two files of its own naming: dump into a private directory next to
        // the output and keep the graph file's topology part.
        let tmp = tempfile::Builder::new()
            .prefix(".dprp-hnsw-")
            .tempdir_in(&dir)
            .map_err(|e| Error::io(path, e))?;
        let dumped = catch_unwind(AssertUnwindSafe(|| match &self.graph {
            Graph::Real(h) => h.file_dump(tmp.path(), "index"),
            Graph::Bits(h) => h.file_dump(tmp.path(), "index"),
        }));
        let base = match dumped {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => {
                return Err(Error::io(
                    path,
                    std::io::Error::other(format!("writing the HNSW graph failed: {e}")),
                ))
            }
            Err(p) => {
                return Err(Error::io(
                    path,
                    std::io::Error::other(format!(
                        "writing the HNSW graph failed: {}",
                        panic_text(&*p)
                    )),
                ))
            }
        };
        let graph_path = tmp.path().join(format!("{base}.hnsw.graph"));
        let dump = std::fs::read(&graph_path).map_err(|e| Error::io(&graph_path, e))?;
        let dim = graph_dim(self.measure, self.k);
        let desc = parse_description(&dump)
            .map_err(|m| Error::format(path, format!("unexpected hnsw_rs dump: {m}")))?;
        if desc.nb_point != self.n
            || desc.dimension != dim
            || desc.max_nb_connection as usize != self.params.m
        {
            return Err(Error::format(
                path,
                "unexpected hnsw_rs dump: its description disagrees with the index",
            ));
        }
        let graph = &dump[desc.len..];
        // Validate what we are about to write as load will, so format drift fails here.
        check_graph(graph, self.n, self.params.m)
            .map_err(|m| Error::format(path, format!("unexpected hnsw_rs dump: {m}")))?;
        drop(tmp);

        let mut header = [0u8; HEADER_LEN];
        header[0..8].copy_from_slice(INDEX_MAGIC);
        header[8..12].copy_from_slice(&INDEX_VERSION.to_le_bytes());
        header[12..16].copy_from_slice(&measure_code(self.measure).to_le_bytes());
        header[16..24].copy_from_slice(&(self.n as u64).to_le_bytes());
        header[24..32].copy_from_slice(&(self.k as u64).to_le_bytes());
        header[32..40].copy_from_slice(&(self.params.m as u64).to_le_bytes());
        header[40..48].copy_from_slice(&(self.params.ef_construction as u64).to_le_bytes());
        header[48..56].copy_from_slice(&(dim as u64).to_le_bytes());
        header[56..64].copy_from_slice(&desc.level_scale.to_le_bytes());
        header[64..72].copy_from_slice(&(graph.len() as u64).to_le_bytes());
        header[72..104].copy_from_slice(&release_checksum);
        header[104..136].copy_from_slice(&payload_hash(&self.db));
        let sum = index_checksum(&header[..HASHED_HEADER], graph);
        header[136..168].copy_from_slice(&sum);
        out.write_all(&header)?;
        out.write_all(graph)?;
        out.commit()
    }

    /// Load an index saved by [`save`](HnswIndex::save) for the sketches `db` (the rows of the
    /// release it was built from: the index file holds the graph, not the vectors). Returns the
    /// header, whose `release_checksum` the caller must compare with the release's
    /// ([`IndexHeader::check_release`]). Refuses, with an error naming the file, anything that is
    /// not an intact index of this format, and sketches other than those indexed.
    pub fn load(path: &Path, db: &Sketch<'a>) -> Result<(HnswIndex<'a>, IndexHeader)> {
        check_input_file(path)?;
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let bad = |m: String| Error::format(path, m);
        if bytes.len() >= 8 && &bytes[..8] != INDEX_MAGIC {
            return Err(if &bytes[..8] == RELEASE_MAGIC {
                bad("this is a dprp release, not an HNSW index (build one with `dprp index`)".into())
            } else {
                bad("not a dprp HNSW index (wrong magic bytes; expected \"DPRPHNSW\")".into())
            });
        }
        if bytes.len() < HEADER_LEN {
            return Err(bad(format!(
                "corrupt index: file is truncated ({} bytes, shorter than the {HEADER_LEN}-byte header)",
                bytes.len()
            )));
        }
        let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap());
        let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
        if version != INDEX_VERSION {
            return Err(bad(format!(
                "unsupported index format version {version} (this dprp reads version {INDEX_VERSION})"
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
        let graph = &bytes[HEADER_LEN..];
        if index_checksum(&bytes[..HASHED_HEADER], graph) != bytes[136..168] {
            return Err(bad(
                "corrupt index: checksum mismatch: the file was modified or damaged".into(),
            ));
        }
        if cfg!(target_endian = "big") || cfg!(not(target_pointer_width = "64")) {
            return Err(bad(
                "reading HNSW indexes needs a 64-bit little-endian machine".into(),
            ));
        }
        let measure = match u32::from_le_bytes(bytes[12..16].try_into().unwrap()) {
            0 => Measure::Ip,
            1 => Measure::Cosine,
            2 => Measure::Hamming,
            c => return Err(bad(format!("corrupt index: unknown measure code {c}"))),
        };
        let n = u64_at(16);
        let k = u64_at(24);
        let (m, efc, dim) = (u64_at(32), u64_at(40), u64_at(48));
        let level_scale = f64::from_le_bytes(bytes[56..64].try_into().unwrap());
        let mut release_checksum = [0u8; 32];
        release_checksum.copy_from_slice(&bytes[72..104]);
        let params = HnswParams {
            m: usize::try_from(m).unwrap_or(usize::MAX),
            ef_construction: usize::try_from(efc).unwrap_or(usize::MAX),
        };
        params
            .check()
            .map_err(|e| bad(format!("corrupt index: {e}")))?;
        let k = usize::try_from(k)
            .ok()
            .filter(|&k| k > 0 && k < 1 << 40)
            .ok_or_else(|| bad(format!("corrupt index: k = {k}")))?;
        if dim != graph_dim(measure, k) as u64 {
            return Err(bad(format!(
                "corrupt index: vector length {dim} does not fit k = {k} and {}",
                measure.name()
            )));
        }
        if !(level_scale.is_finite() && level_scale > 0.0) {
            return Err(bad(format!("corrupt index: level scale {level_scale}")));
        }
        let header = IndexHeader {
            measure,
            n,
            k,
            params,
            release_checksum,
        };
        // The sketches given must be the ones indexed.
        if db.is_bits() != (measure == Measure::Hamming) || db.k() != k || db.rows() as u64 != n {
            return Err(Error::param(
                "release",
                format!(
                    "the index {} covers {n} {} sketches with k = {k}; the release has {} {} \
                     sketches with k = {}",
                    path.display(),
                    if measure == Measure::Hamming { "sign" } else { "real" },
                    db.rows(),
                    if db.is_bits() { "sign" } else { "real" },
                    db.k()
                ),
            ));
        }
        check_db(db, measure)?;
        if payload_hash(db) != bytes[104..136] {
            return Err(Error::param(
                "release",
                format!(
                    "the index {} was built over different sketches than the release's",
                    path.display()
                ),
            ));
        }
        let n = n as usize;
        let origins = check_graph(graph, n, params.m)
            .map_err(|m| bad(format!("corrupt index: graph section: {m}")))?;

        // Rebuild hnsw_rs's two dump files in a private directory and reload them.
        let tmp = tempfile::Builder::new()
            .prefix("dprp-hnsw-load-")
            .tempdir()
            .map_err(|e| Error::io(path, e))?;
        let scale = match *db {
            Sketch::Real { data, k } if measure == Measure::Ip => ip_scale(data, k),
            _ => 1.0,
        };
        let io_err = |e: std::io::Error| Error::io(path, e);
        let dim = dim as usize;
        let desc = Description {
            max_nb_connection: params.m as u8,
            level_scale,
            ef: params.ef_construction,
            nb_point: n,
            dimension: dim,
        };
        let graph_file = tmp.path().join("index.hnsw.graph");
        let data_file = tmp.path().join("index.hnsw.data");
        let loaded = match *db {
            Sketch::Real { data, k } => {
                let prepared = prepare_real(measure, data, k, scale);
                write_dump::<f32, UnitDot>(&graph_file, &data_file, &desc, graph, &origins, |i| {
                    bytemuck::cast_slice(&prepared[i * dim..(i + 1) * dim])
                })
                .map_err(io_err)?;
                drop(prepared);
                reload(tmp.path(), UnitDot).map(Graph::Real)
            }
            Sketch::Bits { data, k } => {
                let prepared = prepare_bits(data, k);
                write_dump::<u64, PackedHamming>(
                    &graph_file,
                    &data_file,
                    &desc,
                    graph,
                    &origins,
                    |i| bytemuck::cast_slice(&prepared[i * dim..(i + 1) * dim]),
                )
                .map_err(io_err)?;
                drop(prepared);
                reload(tmp.path(), PackedHamming).map(Graph::Bits)
            }
        }
        .map_err(|m| bad(format!("corrupt index: hnsw_rs could not reload the graph: {m}")))?;
        drop(tmp);
        let mut index = HnswIndex {
            db: *db,
            measure,
            params,
            n,
            k,
            inv_norms: inverse_norms(db, measure),
            graph: loaded,
        };
        index.set_searching();
        Ok((index, header))
    }
}

fn index_checksum(header: &[u8], graph: &[u8]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(header);
    h.update_rayon(graph);
    *h.finalize().as_bytes()
}

/// The fields of `hnsw_rs`'s dump description dprp writes.
struct Description {
    max_nb_connection: u8,
    level_scale: f64,
    ef: usize,
    nb_point: usize,
    dimension: usize,
}

/// What [`parse_description`] found.
struct ParsedDescription {
    len: usize,
    max_nb_connection: u8,
    level_scale: f64,
    nb_point: usize,
    dimension: usize,
}

/// A bounds-checked little-endian reader.
struct Cursor<'b> {
    b: &'b [u8],
    pos: usize,
}

impl<'b> Cursor<'b> {
    fn take(&mut self, n: usize) -> std::result::Result<&'b [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| format!("truncated at byte {}", self.pos))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> std::result::Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn i32(&mut self) -> std::result::Result<i32, String> {
        Ok(i32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> std::result::Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn f32(&mut self) -> std::result::Result<f32, String> {
        Ok(f32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn f64(&mut self) -> std::result::Result<f64, String> {
        Ok(f64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
}

/// Parse the description `hnsw_rs` writes at the start of its graph file (magic v4, full mode).
fn parse_description(b: &[u8]) -> std::result::Result<ParsedDescription, String> {
    let mut c = Cursor { b, pos: 0 };
    if c.u32()? != MAGICDESCR_4 {
        return Err("unknown description magic".into());
    }
    if c.u8()? != 1 {
        return Err("not a full-mode dump".into());
    }
    let max_nb_connection = c.u8()?;
    let level_scale = c.f64()?;
    if c.u8()? as usize != NB_LAYER {
        return Err("unexpected layer count".into());
    }
    let _ef = c.u64()?;
    let nb_point = c.u64()? as usize;
    let dimension = c.u64()? as usize;
    for _ in 0..2 {
        let len = c.u64()?;
        if len > 256 {
            return Err("name too long".into());
        }
        c.take(len as usize)?;
    }
    Ok(ParsedDescription {
        len: c.pos,
        max_nb_connection,
        level_scale,
        nb_point,
        dimension,
    })
}

/// Walk the topology part of an `hnsw_rs` 0.3 full-mode graph dump: for every point, its origin
/// id and position; for every neighbour, its reference. Returns the entry point.
fn walk_graph(
    b: &[u8],
    n: usize,
    m: usize,
    mut on_point: impl FnMut(usize, usize, usize) -> std::result::Result<(), String>,
    mut on_neighbour: impl FnMut(u8, i32, usize) -> std::result::Result<(), String>,
) -> std::result::Result<(u8, i32, usize), String> {
    let mut c = Cursor { b, pos: 0 };
    if c.u8()? as usize != NB_LAYER {
        return Err("unexpected layer count".into());
    }
    let mut total = 0usize;
    for layer in 0..NB_LAYER {
        if c.u32()? != MAGICLAYER {
            return Err(format!("bad layer magic at layer {layer}"));
        }
        let count = c.u64()?;
        if count > (n - total) as u64 {
            return Err(format!("layer {layer} holds more points than the index"));
        }
        let count = count as usize;
        total += count;
        for rank in 0..count {
            let at = c.pos;
            if c.u32()? != MAGICPOINT {
                return Err(format!("bad point magic at byte {at}"));
            }
            let origin = c.u64()?;
            let (l, r) = (c.u8()?, c.i32()?);
            if l as usize != layer || r as i64 != rank as i64 {
                return Err(format!("point at byte {at} is out of place"));
            }
            if origin >= n as u64 {
                return Err(format!("point at byte {at} has row {origin} ≥ n = {n}"));
            }
            on_point(layer, rank, origin as usize)?;
            for _ in 0..NB_LAYER {
                let nb = c.u64()?;
                if nb > 2 * m as u64 {
                    return Err(format!(
                        "point at byte {at} lists {nb} neighbours (at most {})",
                        2 * m
                    ));
                }
                for _ in 0..nb {
                    let d_id = c.u64()?;
                    let (nl, nr) = (c.u8()?, c.i32()?);
                    let dist = c.f32()?;
                    if !(dist.is_finite() && dist >= 0.0) {
                        return Err(format!("point at byte {at}: neighbour distance {dist}"));
                    }
                    if d_id >= n as u64 {
                        return Err(format!("point at byte {at}: neighbour row {d_id} ≥ n"));
                    }
                    on_neighbour(nl, nr, d_id as usize)?;
                }
            }
        }
    }
    if total != n {
        return Err(format!("{total} points, the index has {n} rows"));
    }
    let e_origin = c.u64()?;
    let (el, er) = (c.u8()?, c.i32()?);
    if c.pos != b.len() {
        return Err(format!("{} unexpected bytes at the end", b.len() - c.pos));
    }
    if e_origin >= n as u64 {
        return Err("entry point out of range".into());
    }
    Ok((el, er, e_origin as usize))
}

/// Validate a graph section completely; returns the rows in dump order.
fn check_graph(b: &[u8], n: usize, m: usize) -> std::result::Result<Vec<usize>, String> {
    // Pass 1: the points (positions, each row exactly once).
    let mut layers: Vec<Vec<usize>> = vec![Vec::new(); NB_LAYER];
    let mut seen = vec![false; n];
    let (el, er, eo) = walk_graph(
        b,
        n,
        m,
        |layer, _rank, origin| {
            if std::mem::replace(&mut seen[origin], true) {
                return Err(format!("row {origin} appears twice"));
            }
            layers[layer].push(origin);
            Ok(())
        },
        |_, _, _| Ok(()),
    )?;
    let at = |l: u8, r: i32| -> Option<usize> {
        let layer = layers.get(l as usize)?;
        usize::try_from(r).ok().and_then(|r| layer.get(r).copied())
    };
    if at(el, er) != Some(eo) {
        return Err("entry point does not match a point".into());
    }
    // Pass 2: every neighbour reference names an existing point with the recorded row.
    walk_graph(
        b,
        n,
        m,
        |_, _, _| Ok(()),
        |l, r, d_id| match at(l, r) {
            Some(o) if o == d_id => Ok(()),
            _ => Err(format!(
                "neighbour reference (layer {l}, rank {r}, row {d_id}) matches no point"
            )),
        },
    )?;
    Ok(layers.into_iter().flatten().collect())
}

/// Write the two files `hnsw_rs` reloads from: the graph (a fresh description + the validated
/// topology) and the data (the prepared vector of each point, in dump order).
fn write_dump<'v, T, D>(
    graph_path: &Path,
    data_path: &Path,
    desc: &Description,
    topology: &[u8],
    origins: &[usize],
    vector: impl Fn(usize) -> &'v [u8],
) -> std::io::Result<()> {
    let mut g = BufWriter::new(File::create(graph_path)?);
    g.write_all(&MAGICDESCR_4.to_le_bytes())?;
    g.write_all(&[1u8, desc.max_nb_connection])?;
    g.write_all(&desc.level_scale.to_le_bytes())?;
    g.write_all(&[NB_LAYER as u8])?;
    g.write_all(&(desc.ef as u64).to_le_bytes())?;
    g.write_all(&(desc.nb_point as u64).to_le_bytes())?;
    g.write_all(&(desc.dimension as u64).to_le_bytes())?;
    for name in [std::any::type_name::<D>(), std::any::type_name::<T>()] {
        g.write_all(&(name.len() as u64).to_le_bytes())?;
        g.write_all(name.as_bytes())?;
    }
    g.write_all(topology)?;
    g.into_inner().map_err(|e| e.into_error())?.sync_all().ok();

    let mut d = BufWriter::with_capacity(1 << 20, File::create(data_path)?);
    d.write_all(&MAGICDATAP.to_le_bytes())?;
    d.write_all(&(desc.dimension as u64).to_le_bytes())?;
    for &o in origins {
        let v = vector(o);
        d.write_all(&MAGICDATAP.to_le_bytes())?;
        d.write_all(&(o as u64).to_le_bytes())?;
        d.write_all(&(v.len() as u64).to_le_bytes())?;
        d.write_all(v)?;
    }
    d.flush()
}

/// Reload a dump written by [`write_dump`] (no memory map: the graph owns its vectors).
fn reload<T, D>(dir: &Path, dist: D) -> std::result::Result<Hnsw<'static, T, D>, String>
where
    T: 'static
        + serde::Serialize
        + serde::de::DeserializeOwned
        + Clone
        + Send
        + Sync
        + std::fmt::Debug,
    D: Distance<T> + Send + Sync,
{
    // hnsw_rs ties the reloaded graph's lifetime to its loader (for memory-mapped data, unused
    // here). The loader is a few hundred bytes; leaking it gives the graph a 'static lifetime.
    let io: &'static HnswIo = Box::leak(Box::new(HnswIo::new(dir, "index")));
    match catch_unwind(AssertUnwindSafe(|| io.load_hnsw_with_dist::<T, D>(dist))) {
        Ok(Ok(h)) => Ok(h),
        Ok(Err(e)) => Err(e.to_string()),
        Err(p) => Err(panic_text(&*p)),
    }
}
