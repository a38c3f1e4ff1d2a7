//! Search over a sharded release ([`crate::release::ReleaseSet`]): the exact search of every
//! shard, merged — what `dprp query` and the Python module's `Release.search` run on a shard
//! directory, like faiss's `IndexShards` over its sub-indexes.

use super::{exact, Hit, Measure, Sketch};
use crate::error::Result;
use crate::mechanism::Payload;
use crate::release::ReleaseSet;

/// The payload of every part of `set` as a [`Sketch`] (borrowed from the memory maps).
pub fn part_sketches(set: &ReleaseSet) -> Result<Vec<Sketch<'_>>> {
    let k = set.k();
    set.parts()
        .iter()
        .map(|p| {
            Ok(match set.meta().payload {
                Payload::F32 => Sketch::Real {
                    data: p.values()?,
                    k,
                },
                Payload::Bits => Sketch::Bits { data: p.bits()?, k },
            })
        })
        .collect()
}

/// Exact top-`top` neighbours of every query among all parts of `set` (`parts` from
/// [`part_sketches`]), best first with ties to the smaller global id — the order of the exact
/// search over the one-file release of the same rows. Each hit's `row` is the row's **global id**
/// ([`ReleaseSet::id`]), not an index into one part.
pub fn search(
    set: &ReleaseSet,
    parts: &[Sketch<'_>],
    queries: &Sketch<'_>,
    measure: Measure,
    top: usize,
) -> Result<Vec<Vec<Hit>>> {
    let mut merged: Vec<Vec<Hit>> = vec![Vec::new(); queries.rows()];
    for (i, db) in parts.iter().enumerate() {
        if db.rows() == 0 {
            continue;
        }
        let hits = exact::search(db, queries, measure, top.min(db.rows()), None)?;
        for (m, h) in merged.iter_mut().zip(hits) {
            m.extend(h.into_iter().map(|x| Hit {
                row: set.id(i, x.row) as usize,
                score: x.score,
            }));
        }
    }
    for m in &mut merged {
        m.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.row.cmp(&b.row)));
        m.truncate(top);
    }
    Ok(merged)
}

/// The payload of every part of `set`, one after the other (shard order), copied into one
/// buffer: the database an HNSW index over a shard directory is built on and searched with
/// (row `r` of it has the global id [`ReleaseSet::id_of_concatenated`]`(r)`).
pub enum Concatenated {
    /// f32 sketches, `n·k`.
    Real(Vec<f32>),
    /// Packed sign words, `n·⌈k/64⌉`.
    Bits(Vec<u64>),
}

impl Concatenated {
    /// Copy the parts' payloads.
    pub fn of(set: &ReleaseSet) -> Result<Concatenated> {
        Ok(match set.meta().payload {
            Payload::F32 => {
                let mut v = Vec::with_capacity(set.n() * set.k());
                for p in set.parts() {
                    v.extend_from_slice(p.values()?);
                }
                Concatenated::Real(v)
            }
            Payload::Bits => {
                let mut v = Vec::with_capacity(set.n() * set.k().div_ceil(64));
                for p in set.parts() {
                    v.extend_from_slice(p.bits()?);
                }
                Concatenated::Bits(v)
            }
        })
    }

    /// As a [`Sketch`] of `k` values (or bits) per row.
    pub fn sketch(&self, k: usize) -> Sketch<'_> {
        match self {
            Concatenated::Real(v) => Sketch::Real { data: v, k },
            Concatenated::Bits(v) => Sketch::Bits { data: v, k },
        }
    }
}
