//! The graph of an [`HnswIndex`](super::HnswIndex): its layers as flat adjacency lists, copied
//! from the lists of the construction (`build.rs`); the walk (greedy descent through the upper layers, then
//! a best-first search with `ef` candidates on layer 0); and the graph section of the index file
//! (layout in the parent module's documentation), read back with every count, row and link
//! checked.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::NB_LAYER;

/// One layer of the graph.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Layer {
    /// Rows on this layer, increasing; empty on layer 0, which holds every row.
    nodes: Vec<u32>,
    /// `links[offsets[i]..offsets[i + 1]]` are the links of the `i`-th node.
    offsets: Vec<usize>,
    /// Linked rows.
    links: Vec<u32>,
}

impl Layer {
    /// The links of `row` (none if `row` is not on this layer).
    #[inline]
    fn links_of(&self, row: u32, bottom: bool) -> &[u32] {
        let i = if bottom {
            row as usize
        } else {
            match self.nodes.binary_search(&row) {
                Ok(i) => i,
                Err(_) => return &[],
            }
        };
        &self.links[self.offsets[i]..self.offsets[i + 1]]
    }
}

/// The layers of an HNSW graph and its entry point (a node of the top layer).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Graph {
    pub(super) layers: Vec<Layer>,
    pub(super) entry: u32,
}

impl Graph {
    /// The flat graph of per-row adjacency lists (`lists[row][layer]` for the layers
    /// `0..=levels[row]`), entered at `entry` (a row of the top level).
    pub(super) fn from_lists(levels: &[u8], mut lists: Vec<Vec<Vec<u32>>>, entry: u32) -> Graph {
        let top = levels.iter().copied().max().unwrap_or(0) as usize;
        let layers = (0..=top)
            .map(|l| {
                let nodes: Vec<u32> = (0..levels.len() as u32)
                    .filter(|&r| levels[r as usize] as usize >= l)
                    .collect();
                let mut offsets = Vec::with_capacity(nodes.len() + 1);
                offsets.push(0);
                let total: usize = nodes
                    .iter()
                    .map(|&r| lists[r as usize].get(l).map_or(0, Vec::len))
                    .sum();
                let mut links = Vec::with_capacity(total);
                for &r in &nodes {
                    if let Some(list) = lists[r as usize].get_mut(l) {
                        links.extend_from_slice(list);
                        // Free the build's copy as the flat one grows.
                        *list = Vec::new();
                    }
                    offsets.push(links.len());
                }
                Layer {
                    nodes: if l == 0 { Vec::new() } else { nodes },
                    offsets,
                    links,
                }
            })
            .collect();
        Graph { layers, entry }
    }
}

/// The rows visited by the current search, one bit per row, cleared through the rows it marked
/// (so a search costs nothing in proportion to `n`). Shared by the walk and the construction.
pub(super) struct Visited {
    bits: Vec<u64>,
    touched: Vec<u32>,
}

impl Visited {
    pub(super) fn new(n: usize) -> Visited {
        Visited {
            bits: vec![0; n.div_ceil(64)],
            touched: Vec::new(),
        }
    }

    /// Mark `row` visited; `false` if it already was.
    #[inline]
    pub(super) fn visit(&mut self, row: u32) -> bool {
        let (w, b) = (row as usize / 64, 1u64 << (row % 64));
        let seen = self.bits[w] & b != 0;
        if !seen {
            self.bits[w] |= b;
            self.touched.push(row);
        }
        !seen
    }

    /// Forget every visit.
    pub(super) fn clear(&mut self) {
        for &t in &self.touched {
            self.bits[t as usize / 64] = 0;
        }
        self.touched.clear();
    }
}

/// Per-thread search state.
pub(super) struct Scratch {
    visited: Visited,
    candidates: BinaryHeap<Reverse<u64>>,
    best: BinaryHeap<u64>,
    pending: Vec<u32>,
}

impl Scratch {
    #[inline]
    fn visit(&mut self, row: u32) -> bool {
        self.visited.visit(row)
    }

    pub(super) fn new(n: usize) -> Scratch {
        Scratch {
            visited: Visited::new(n),
            candidates: BinaryHeap::new(),
            best: BinaryHeap::new(),
            pending: Vec::new(),
        }
    }
}

/// A (distance, row) pair as one integer ordered like the pair: distances are `≥ +0.0` and not
/// NaN, and such floats order like their bit patterns.
#[inline]
fn key(d: f32, row: u32) -> u64 {
    ((d.to_bits() as u64) << 32) | row as u64
}

impl Graph {
    /// The (at most) `ef` rows nearest the query under `dist`: greedy descent through the upper
    /// layers, then a best-first search on layer 0.
    /// `prefetch(row)` is called shortly before `dist(row)` on the bottom layer, to start loading
    /// the row's vector while the previous one is compared.
    pub(super) fn walk(
        &self,
        dist: impl Fn(u32) -> f32,
        prefetch: impl Fn(u32),
        ef: usize,
        s: &mut Scratch,
    ) -> Vec<usize> {
        let mut cur = key(dist(self.entry), self.entry);
        for layer in self.layers[1..].iter().rev() {
            loop {
                let mut next = cur;
                for &t in layer.links_of(cur as u32, false) {
                    next = next.min(key(dist(t), t));
                }
                if next == cur {
                    break;
                }
                cur = next;
            }
        }
        let bottom = &self.layers[0];
        s.candidates.clear();
        s.best.clear();
        s.visit(cur as u32);
        s.candidates.push(Reverse(cur));
        s.best.push(cur);
        while let Some(Reverse(c)) = s.candidates.pop() {
            if s.best.len() >= ef && s.best.peek().is_some_and(|&w| c > w) {
                break;
            }
            s.pending.clear();
            for &t in bottom.links_of(c as u32, true) {
                if s.visit(t) {
                    s.pending.push(t);
                }
            }
            if let Some(&t) = s.pending.first() {
                prefetch(t);
            }
            for i in 0..s.pending.len() {
                let t = s.pending[i];
                if let Some(&next) = s.pending.get(i + 1) {
                    prefetch(next);
                }
                let kt = key(dist(t), t);
                if s.best.len() < ef || s.best.peek().is_some_and(|&w| kt < w) {
                    s.candidates.push(Reverse(kt));
                    s.best.push(kt);
                    if s.best.len() > ef {
                        s.best.pop();
                    }
                }
            }
        }
        s.visited.clear();
        s.best.drain().map(|k| k as u32 as usize).collect()
    }

    /// Serialise the graph section.
    pub(super) fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::new();
        for (l, layer) in self.layers.iter().enumerate() {
            let count = layer.offsets.len() - 1;
            b.extend_from_slice(&(count as u64).to_le_bytes());
            if l > 0 {
                for &r in &layer.nodes {
                    b.extend_from_slice(&r.to_le_bytes());
                }
            }
            for w in layer.offsets.windows(2) {
                b.extend_from_slice(&((w[1] - w[0]) as u16).to_le_bytes());
            }
            for &t in &layer.links {
                b.extend_from_slice(&t.to_le_bytes());
            }
        }
        b
    }

    /// Parse and validate a graph section of `layers` layers over `n` rows.
    pub(super) fn from_bytes(
        b: &[u8],
        n: usize,
        m: usize,
        layers: usize,
        entry: u64,
    ) -> std::result::Result<Graph, String> {
        if !(1..=NB_LAYER).contains(&layers) {
            return Err(format!("{layers} layers (expected 1 to {NB_LAYER})"));
        }
        let mut c = Cursor { b, pos: 0 };
        // level[r] = the highest layer read so far that holds row r.
        let mut level = vec![0u8; n];
        let mut out = Vec::with_capacity(layers);
        for l in 0..layers {
            let count = c.u64()?;
            if l == 0 && count != n as u64 {
                return Err(format!("layer 0 holds {count} rows, the index has {n}"));
            }
            if l > 0 && (count == 0 || count > out_len(&out, l)) {
                return Err(format!("layer {l} holds {count} rows"));
            }
            let count = count as usize;
            let mut nodes = Vec::new();
            if l > 0 {
                nodes.reserve(count);
                for _ in 0..count {
                    let r = c.u32()?;
                    if nodes.last().is_some_and(|&p| r <= p) || r as usize >= n {
                        return Err(format!("layer {l}: rows out of order or out of range"));
                    }
                    if level[r as usize] as usize != l - 1 {
                        return Err(format!("layer {l}: row {r} is not on layer {}", l - 1));
                    }
                    level[r as usize] = l as u8;
                    nodes.push(r);
                }
            }
            let mut offsets = Vec::with_capacity(count + 1);
            offsets.push(0usize);
            for _ in 0..count {
                let d = c.u16()? as usize;
                if d > 2 * m {
                    return Err(format!(
                        "layer {l}: a node has {d} links (at most {})",
                        2 * m
                    ));
                }
                offsets.push(offsets[offsets.len() - 1] + d);
            }
            let total = offsets[count];
            let raw = c.take(total.checked_mul(4).ok_or("link count overflows")?)?;
            let mut links = Vec::with_capacity(total);
            for w in raw.chunks_exact(4) {
                let t = u32::from_le_bytes(w.try_into().unwrap());
                if t as usize >= n || level[t as usize] as usize != l {
                    return Err(format!(
                        "layer {l}: a link to row {t}, which is not on the layer"
                    ));
                }
                links.push(t);
            }
            out.push(Layer {
                nodes,
                offsets,
                links,
            });
        }
        if c.pos != b.len() {
            return Err(format!("{} unexpected bytes at the end", b.len() - c.pos));
        }
        if entry >= n as u64 || level[entry as usize] as usize != layers - 1 {
            return Err(format!("entry row {entry} is not on the top layer"));
        }
        Ok(Graph {
            layers: out,
            entry: entry as u32,
        })
    }
}

/// The node count of the layer below `l` (an upper bound for layer `l`).
fn out_len(layers: &[Layer], l: usize) -> u64 {
    (layers[l - 1].offsets.len() - 1) as u64
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
    fn u16(&mut self) -> std::result::Result<u16, String> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    fn u32(&mut self) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> std::result::Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
}
