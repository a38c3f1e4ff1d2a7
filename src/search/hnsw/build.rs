//! Construction of the HNSW graph: Malkov & Yashunin, "Efficient and robust approximate nearest
//! neighbor search using Hierarchical Navigable Small World graphs" (IEEE TPAMI 2018),
//! Algorithm 1 (INSERT) with the neighbour-selection heuristic of Algorithm 4
//! (`extendCandidates = false`, `keepPrunedConnections = false`, as in hnswlib), inserting rows
//! in parallel on the rayon pool.
//!
//! * **Levels** are a deterministic function of the row: `⌊−ln(u)·m_L⌋` with `m_L = 1/ln(M)`
//!   (the paper's choice) and `u ∈ (0, 1]` a hash of the row number (SplitMix64), capped at 15
//!   (16 layers). A rebuild of the same release with the same M has the same levels; the links
//!   depend on the order in which the threads insert, as in every parallel HNSW build. The
//!   graph is not secret (it is computed from the public release), so a fixed hash does.
//! * **Links**: a new row gets the `M` neighbours the heuristic selects from its
//!   `ef_construction` nearest candidates on each of its layers; each of those gets a link back,
//!   and a neighbour whose list is then longer than `M_max` (`M` on the upper layers, `2M` on
//!   layer 0) keeps the `M_max` its own heuristic selects among its links and the new row.
//! * **Concurrency**: each row's adjacency lists sit behind their own lock, held only to copy
//!   a list during a search or to change it; the entry point and top level sit behind one lock,
//!   which an insertion whose level exceeds the current top holds throughout (as hnswlib does),
//!   so that the graph never has an entry point without links.
//! * **Reachability**: the heuristic can prune the last link into a row (hnswlib's graphs have
//!   such rows too). After the insertions, each layer is walked from the entry point and every
//!   row it does not reach gets a link from the nearest reachable row with room for one.
//!
//! Memory during the build: per row, a lock and its lists' headers (`32 + 24·(level + 1)` bytes)
//! and up to `M_max` links of 4 bytes per layer (reserved up front, so the build does not grow
//! past its start), about `96 + 8·M` bytes on average plus the allocator's overhead; per thread,
//! one bit per row (the visited set). The flat [`Graph`] that the lists are copied into at the end
//! takes about `8 + 4·(links)` bytes per row.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rayon::prelude::*;

use super::graph::{Graph, Visited};
use super::NB_LAYER;

/// Hash key of the level draw (any fixed value: the graph is public).
const LEVEL_SEED: u64 = 0x6470_7270_686e_7377; // "dprphnsw"
/// Rows inserted between two progress reports.
const PROGRESS_EVERY: usize = 1024;

/// SplitMix64's finaliser (Steele, Lea & Flood 2014): a bijective mix of 64 bits.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The level of `row`: `⌊−ln(u)/ln(m)⌋`, `u ∈ (0, 1]` from a hash of the row, at most 15.
pub(super) fn level_of(row: u32, m: usize) -> u8 {
    let h = splitmix64(row as u64 ^ LEVEL_SEED);
    let u = ((h >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    let l = (-u.ln() / (m as f64).ln()).floor();
    l.clamp(0.0, (NB_LAYER - 1) as f64) as u8
}

/// A (distance, row) pair as one integer ordered like the pair (distances are `≥ +0.0` and not
/// NaN, and such floats order like their bit patterns).
#[inline]
fn key(d: f32, row: u32) -> u64 {
    ((d.to_bits() as u64) << 32) | row as u64
}

#[inline]
fn unkey(k: u64) -> (f32, u32) {
    (f32::from_bits((k >> 32) as u32), k as u32)
}

/// Lock a row's lists; a poisoned lock (a panicking thread) still holds consistent lists, as
/// every change is a single assignment or push.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Per-thread state of the insertions.
struct Scratch {
    visited: Visited,
    candidates: BinaryHeap<Reverse<u64>>,
    best: BinaryHeap<u64>,
    /// A copy of the links being expanded.
    links: Vec<u32>,
    /// The unvisited rows among them.
    pending: Vec<u32>,
}

impl Scratch {
    fn new(n: usize) -> Scratch {
        Scratch {
            visited: Visited::new(n),
            candidates: BinaryHeap::new(),
            best: BinaryHeap::new(),
            links: Vec::new(),
            pending: Vec::new(),
        }
    }

    #[inline]
    fn visit(&mut self, row: u32) -> bool {
        self.visited.visit(row)
    }
}

/// The graph under construction.
struct Builder<'d, D, P> {
    /// `dist(a, b)`: the distance between rows `a` and `b` (`≥ 0`, never NaN, smallest best).
    dist: &'d D,
    prefetch: &'d P,
    m: usize,
    ef: usize,
    levels: Vec<u8>,
    /// Per row, its adjacency list on each of its layers `0..=level`.
    lists: Vec<Mutex<Vec<Vec<u32>>>>,
    /// (entry row, top level).
    entry: Mutex<(u32, u8)>,
}

impl<D, P> Builder<'_, D, P>
where
    D: Fn(u32, u32) -> f32 + Sync,
    P: Fn(u32) + Sync,
{
    fn max_links(&self, layer: usize) -> usize {
        if layer == 0 {
            2 * self.m
        } else {
            self.m
        }
    }

    /// Copy the links of `row` on `layer` into `out`.
    fn copy_links(&self, row: u32, layer: usize, out: &mut Vec<u32>) {
        out.clear();
        if let Some(l) = lock(&self.lists[row as usize]).get(layer) {
            out.extend_from_slice(l);
        }
    }

    /// Greedy descent on one layer (the search with `ef = 1`): the nearest row to `q` reachable
    /// from `cur` by steps that each get closer.
    fn greedy(&self, q: u32, mut cur: (f32, u32), layer: usize, s: &mut Scratch) -> (f32, u32) {
        loop {
            let mut moved = false;
            self.copy_links(cur.1, layer, &mut s.links);
            for &t in &s.links {
                if t == q {
                    continue;
                }
                let d = (self.dist)(q, t);
                if key(d, t) < key(cur.0, cur.1) {
                    cur = (d, t);
                    moved = true;
                }
            }
            if !moved {
                return cur;
            }
        }
    }

    /// SEARCH-LAYER (Algorithm 2): the (at most) `ef` nearest rows to `q` found on `layer` by a
    /// best-first search from `ep`, nearest first.
    fn search_layer(
        &self,
        q: u32,
        ep: (f32, u32),
        layer: usize,
        s: &mut Scratch,
    ) -> Vec<(f32, u32)> {
        s.candidates.clear();
        s.best.clear();
        s.visit(q);
        s.visit(ep.1);
        let k0 = key(ep.0, ep.1);
        s.candidates.push(Reverse(k0));
        s.best.push(k0);
        while let Some(Reverse(c)) = s.candidates.pop() {
            if s.best.len() >= self.ef && s.best.peek().is_some_and(|&w| c > w) {
                break;
            }
            let mut links = std::mem::take(&mut s.links);
            self.copy_links(c as u32, layer, &mut links);
            s.pending.clear();
            for &t in &links {
                if s.visit(t) {
                    s.pending.push(t);
                }
            }
            s.links = links;
            if let Some(&t) = s.pending.first() {
                (self.prefetch)(t);
            }
            for i in 0..s.pending.len() {
                let t = s.pending[i];
                if let Some(&next) = s.pending.get(i + 1) {
                    (self.prefetch)(next);
                }
                let kt = key((self.dist)(q, t), t);
                if s.best.len() < self.ef || s.best.peek().is_some_and(|&w| kt < w) {
                    s.candidates.push(Reverse(kt));
                    s.best.push(kt);
                    if s.best.len() > self.ef {
                        s.best.pop();
                    }
                }
            }
        }
        s.visited.clear();
        let mut out: Vec<(f32, u32)> = s.best.drain().map(unkey).collect();
        out.sort_unstable_by_key(|&(d, t)| key(d, t));
        out
    }

    /// SELECT-NEIGHBORS-HEURISTIC (Algorithm 4): from `cands` (nearest first), keep a candidate
    /// only if it is nearer to the base row than to every candidate already kept, until `m` are
    /// kept. Fewer than `m` candidates are all kept.
    fn select(&self, cands: &[(f32, u32)], m: usize) -> Vec<u32> {
        if cands.len() <= m {
            return cands.iter().map(|&(_, t)| t).collect();
        }
        let mut kept: Vec<u32> = Vec::with_capacity(m);
        for &(d, t) in cands {
            if kept.len() >= m {
                break;
            }
            if kept.iter().all(|&r| (self.dist)(t, r) >= d) {
                kept.push(t);
            }
        }
        kept
    }

    /// Add the link `e → q` on `layer` (`d` their distance), shrinking `e`'s list with the
    /// heuristic when it is full.
    fn connect(&self, e: u32, q: u32, d: f32, layer: usize) {
        let max = self.max_links(layer);
        let mut g = lock(&self.lists[e as usize]);
        let Some(list) = g.get_mut(layer) else {
            return;
        };
        if list.contains(&q) {
            return;
        }
        if list.len() < max {
            list.push(q);
            return;
        }
        let mut cands: Vec<(f32, u32)> = list.iter().map(|&t| ((self.dist)(e, t), t)).collect();
        cands.push((d, q));
        cands.sort_unstable_by_key(|&(d, t)| key(d, t));
        let kept = self.select(&cands, max);
        list.clear();
        list.extend_from_slice(&kept);
    }

    /// INSERT (Algorithm 1) of row `q`.
    fn insert(&self, q: u32, s: &mut Scratch) {
        let level = self.levels[q as usize];
        let g = lock(&self.entry);
        let (ep, top) = *g;
        // Only an insertion that raises the top level keeps the entry locked.
        let guard = if level > top {
            Some(g)
        } else {
            drop(g);
            None
        };
        let mut cur = ((self.dist)(q, ep), ep);
        for layer in (level as usize + 1..=top as usize).rev() {
            cur = self.greedy(q, cur, layer, s);
        }
        for layer in (0..=level.min(top) as usize).rev() {
            let found = self.search_layer(q, cur, layer, s);
            let chosen = self.select(&found, self.m);
            {
                let mut g = lock(&self.lists[q as usize]);
                g[layer].clear();
                g[layer].extend_from_slice(&chosen);
            }
            for &e in &chosen {
                let d = found
                    .iter()
                    .find(|&&(_, t)| t == e)
                    .map_or(0.0, |&(d, _)| d);
                self.connect(e, q, d, layer);
            }
            if let Some(&first) = found.first() {
                cur = first;
            }
        }
        if let Some(mut g) = guard {
            *g = (q, level);
        }
    }
}

impl<D, P> Builder<'_, D, P>
where
    D: Fn(u32, u32) -> f32 + Sync,
    P: Fn(u32) + Sync,
{
    /// Mark in `seen` every row of `layer` reachable from `start` along the layer's links.
    fn mark_reachable(&self, start: u32, layer: usize, seen: &mut [bool], links: &mut Vec<u32>) {
        let mut stack = vec![start];
        seen[start as usize] = true;
        while let Some(r) = stack.pop() {
            self.copy_links(r, layer, links);
            for &t in links.iter() {
                if !seen[t as usize] {
                    seen[t as usize] = true;
                    stack.push(t);
                }
            }
        }
    }

    /// After the insertions: give every row of `layer` that the entry point does not reach a
    /// link from a reachable row near it (found by the same descent and search as an
    /// insertion). The heuristic can prune the last link into a row (in hnswlib too); this makes
    /// every row reachable again. The nearest candidate with room for a link takes it; when all
    /// candidates are full, the nearest one, `r`, gives up its farthest link `r → t` for
    /// `r → u`, and `u` takes `u → t` (dropping its own farthest link if it is full). Every row
    /// reached before is still reached (a path through `r → t` now goes `r → u → t`; no reached
    /// row needed `u`'s links, since `u` was not reached), and no list grows past its bound.
    /// Returns the rows left unreachable: none (the entry point is always a candidate).
    fn link_unreachable(&self, layer: usize, s: &mut Scratch) -> usize {
        let n = self.levels.len();
        let (entry, top) = *lock(&self.entry);
        let mut seen = vec![false; n];
        let mut links = Vec::new();
        self.mark_reachable(entry, layer, &mut seen, &mut links);
        let mut left = 0;
        for u in 0..n as u32 {
            if (self.levels[u as usize] as usize) < layer || seen[u as usize] {
                continue;
            }
            let mut cur = ((self.dist)(u, entry), entry);
            for l in (layer + 1..=top as usize).rev() {
                cur = self.greedy(u, cur, l, s);
            }
            let mut found = self.search_layer(u, cur, layer, s);
            if !found.iter().any(|&(_, r)| seen[r as usize]) {
                // The descent ended on a row this layer does not reach yet: start at the entry.
                found = self.search_layer(u, ((self.dist)(u, entry), entry), layer, s);
            }
            let reached = || found.iter().map(|&(_, r)| r).filter(|&r| seen[r as usize]);
            let linked = reached().any(|r| self.push_link(r, u, layer))
                || reached()
                    .next()
                    .is_some_and(|r| self.swap_link(r, u, layer));
            if linked {
                self.mark_reachable(u, layer, &mut seen, &mut links);
            } else {
                left += 1;
            }
        }
        left
    }

    /// Add `r → u` on `layer` if `r`'s list has room (and no such link).
    fn push_link(&self, r: u32, u: u32, layer: usize) -> bool {
        let max = self.max_links(layer);
        let mut g = lock(&self.lists[r as usize]);
        match g.get_mut(layer) {
            Some(list) if list.len() < max && !list.contains(&u) => {
                list.push(u);
                true
            }
            _ => false,
        }
    }

    /// Replace `r`'s farthest link `r → t` on `layer` by `r → u`, and give `u` the link `u → t`
    /// (in place of `u`'s own farthest link if its list is full), so that `t` stays reachable
    /// through `u`. `u` must not be `r` and `r` must not already link to `u`.
    fn swap_link(&self, r: u32, u: u32, layer: usize) -> bool {
        let farthest = |row: u32, list: &[u32]| {
            (0..list.len()).max_by_key(|&i| key((self.dist)(row, list[i]), list[i]))
        };
        let t = {
            let mut g = lock(&self.lists[r as usize]);
            let Some(list) = g.get_mut(layer) else {
                return false;
            };
            if list.contains(&u) {
                return false;
            }
            let Some(i) = farthest(r, list) else {
                list.push(u);
                return true;
            };
            std::mem::replace(&mut list[i], u)
        };
        let max = self.max_links(layer);
        let mut g = lock(&self.lists[u as usize]);
        if let Some(list) = g.get_mut(layer) {
            if !list.contains(&t) {
                if list.len() < max {
                    list.push(t);
                } else if let Some(i) = farthest(u, list) {
                    list[i] = t;
                }
            }
        }
        true
    }
}

/// Build the graph over rows `0..n` under `dist` (a distance between two rows: `≥ 0`, never NaN,
/// smallest best), with `m` links per node on the upper layers and `2m` on layer 0, and
/// `ef_construction` candidates. `prefetch(row)` starts loading a row's vector shortly before
/// it is compared. `progress`, if given, is called now and then with the number of rows
/// inserted so far (serialised, increasing, the last call being `n`).
pub(super) fn build_graph<D, P>(
    n: usize,
    m: usize,
    ef_construction: usize,
    dist: &D,
    prefetch: &P,
    progress: Option<&(dyn Fn(usize) + Sync)>,
) -> Graph
where
    D: Fn(u32, u32) -> f32 + Sync,
    P: Fn(u32) + Sync,
{
    let levels: Vec<u8> = (0..n as u32)
        .into_par_iter()
        .map(|r| level_of(r, m))
        .collect();
    let lists = levels
        .par_iter()
        .map(|&l| {
            Mutex::new(
                (0..=l as usize)
                    .map(|layer| Vec::with_capacity(if layer == 0 { 2 * m } else { m }))
                    .collect(),
            )
        })
        .collect();
    let b = Builder {
        dist,
        prefetch,
        m,
        ef: ef_construction.max(1),
        levels,
        lists,
        entry: Mutex::new((0, 0)),
    };
    *lock(&b.entry) = (0, b.levels[0]);
    let done = AtomicUsize::new(1);
    let reported = Mutex::new(0usize);
    let report = |count: usize| {
        if let Some(p) = progress {
            let mut r = lock(&reported);
            if count > *r {
                *r = count;
                p(count);
            }
        }
    };
    (1..n as u32)
        .into_par_iter()
        .with_min_len(16)
        .for_each_init(
            || Scratch::new(n),
            |s, q| {
                b.insert(q, s);
                let c = done.fetch_add(1, Ordering::Relaxed) + 1;
                if c.is_multiple_of(PROGRESS_EVERY) {
                    report(c);
                }
            },
        );
    report(n);
    let (entry, top) = *lock(&b.entry);
    let mut s = Scratch::new(n);
    for layer in 0..=top as usize {
        b.link_unreachable(layer, &mut s);
    }
    let lists: Vec<Vec<Vec<u32>>> = b
        .lists
        .into_iter()
        .map(|l| l.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect();
    Graph::from_lists(&b.levels, lists, entry)
}
