//! One search of a release, for every front end: `dprp query` and Python's `Release.search` check
//! the request once ([`Search::new`]) and then search batch by batch ([`Search::batch`]), each hit
//! naming its row by the row's **id** (a one-file release's row id, a shard directory's global id)
//! and a query whose ranking is undefined (a zero vector under the cosine or sign agreement) given
//! no neighbours — the same refusals, the same ids and the same rule in both. [`search_raw`] and
//! [`rerank_raw`] are the whole of `Release.search` and `Release.rerank` on queries held in
//! memory.

use crate::error::{field, Error, Result};
use crate::mechanism::Mechanism;
use crate::release::ReleaseSet;
use crate::request::query::{zero_queries, RawQueries};
use crate::search::hnsw::HnswIndex;
use crate::search::queries::QuerySketches;
use crate::search::rerank::rerank;
use crate::search::sharded::{self, Concatenated};
use crate::search::{check_request, exact, Hit, Measure, Sketch};

pub use crate::search::rerank::Reranked;

/// Where the rows are searched: every part exactly, or an HNSW index (with its search breadth
/// `ef`) built over the release's rows — a shard directory's parts one after the other.
pub enum Searcher<'a> {
    /// The exact scan of every part, merged.
    Exact,
    /// An index over `db` (the one-file release's rows, or the concatenated shards' when
    /// `concatenated`).
    Index {
        /// The loaded index.
        index: &'a HnswIndex<'a>,
        /// Search breadth.
        ef: usize,
        /// The index was built on the shards' rows one after the other.
        concatenated: bool,
    },
}

/// A checked search request.
pub struct Search<'a> {
    set: &'a ReleaseSet,
    parts: Vec<Sketch<'a>>,
    db: Sketch<'a>,
    queries: Sketch<'a>,
    undefined: Vec<bool>,
    measure: Measure,
    top: usize,
    searcher: Searcher<'a>,
}

impl<'a> Search<'a> {
    /// Check a search of `queries` (sketches of the release's payload; `zero[i]`: query `i` is the
    /// zero vector, empty when unknown) for the `top` nearest rows by `measure` (given, or the
    /// payload's default), in `db` — the release's first part, or the concatenated shards an
    /// index was built on ([`Concatenated::sketch`]).
    pub fn new(
        set: &'a ReleaseSet,
        db: Sketch<'a>,
        queries: Sketch<'a>,
        zero: &[bool],
        (measure, top): (Option<&str>, usize),
        searcher: Searcher<'a>,
    ) -> Result<Search<'a>> {
        let measure = Measure::or_default(measure, db.is_bits())?;
        check_request(&db, &queries, measure, 1)?;
        if top > set.n() {
            return Err(Error::param(
                field("top"),
                format!("K = {top} exceeds the {} rows of the release", set.n()),
            ));
        }
        // one rule for undefined rankings: a zero query under the cosine or sign agreement
        let undefined = (0..queries.rows())
            .map(|i| measure != Measure::Ip && zero.get(i).copied().unwrap_or(false))
            .collect();
        Ok(Search {
            set,
            parts: sharded::part_sketches(set)?,
            db,
            queries,
            undefined,
            measure,
            top,
            searcher,
        })
    }

    /// The measure searched by.
    pub fn measure(&self) -> Measure {
        self.measure
    }

    /// The number of queries.
    pub fn queries(&self) -> usize {
        self.queries.rows()
    }

    /// Whether query `i`'s ranking is undefined (it gets no neighbours).
    pub fn undefined(&self, i: usize) -> bool {
        self.undefined[i]
    }

    /// The hits of queries `start..end`, best first, each `row` the row's id; none for a query
    /// whose ranking is undefined. `tick` is told how many of the batch's queries are done.
    pub fn batch(
        &self,
        start: usize,
        end: usize,
        tick: Option<&(dyn Fn(usize) + Sync)>,
    ) -> Result<Vec<Vec<Hit>>> {
        self.check_range(start, end)?;
        let part = self.queries.rows_range(start, end);
        let mut hits = match &self.searcher {
            Searcher::Index { index, ef, .. } => index.search(&part, self.top, *ef, tick)?,
            Searcher::Exact if self.parts.len() == 1 => {
                exact::search(&self.db, &part, self.measure, self.top, tick)?
            }
            Searcher::Exact => {
                // already global ids
                let mut hits =
                    sharded::search(self.set, &self.parts, &part, self.measure, self.top)?;
                self.clear_undefined(start, &mut hits);
                return Ok(hits);
            }
        };
        self.to_ids(&mut hits);
        self.clear_undefined(start, &mut hits);
        Ok(hits)
    }

    /// The exact hits of queries `start..end` in the index's database (for an index's recall),
    /// with the rows named as [`Search::batch`] names them.
    pub fn exact(&self, start: usize, end: usize) -> Result<Vec<Vec<Hit>>> {
        self.check_range(start, end)?;
        let part = self.queries.rows_range(start, end);
        let mut hits = exact::search(&self.db, &part, self.measure, self.top, None)?;
        self.to_ids(&mut hits);
        self.clear_undefined(start, &mut hits);
        Ok(hits)
    }

    /// Queries `start..end` must be queries of this search.
    fn check_range(&self, start: usize, end: usize) -> Result<()> {
        if start > end || end > self.queries.rows() {
            return Err(Error::param(
                "queries",
                format!(
                    "{start}..{end} is not a range of the {} queries",
                    self.queries.rows()
                ),
            ));
        }
        Ok(())
    }

    /// Rows of `db` → ids: the first part's ids, or the concatenated shards' global ids.
    fn to_ids(&self, hits: &mut [Vec<Hit>]) {
        let concatenated = matches!(
            self.searcher,
            Searcher::Index {
                concatenated: true,
                ..
            }
        );
        for h in hits.iter_mut().flatten() {
            h.row = if concatenated {
                self.set.id_of_concatenated(h.row)
            } else {
                self.set.id(0, h.row)
            } as usize;
        }
    }

    fn clear_undefined(&self, start: usize, hits: &mut [Vec<Hit>]) {
        for (i, h) in hits.iter_mut().enumerate() {
            if self.undefined[start + i] {
                h.clear();
            }
        }
    }
}

/// The release's rows an index over `set` was built on: its one file's, or its shards' one after
/// the other.
pub fn index_rows(set: &ReleaseSet) -> Result<Option<Concatenated>> {
    set.is_sharded().then(|| Concatenated::of(set)).transpose()
}

/// Ids and scores of a search, `queries × top` each, row-major.
pub type FlatHits = (Vec<u64>, Vec<f32>);

/// Search a release for raw query vectors held in memory (`Release.search`): `raw` brought to
/// the release's recorded scale (unless `no_scale`) and projected with its public map, as `dprp
/// query --queries` does, then searched exactly, `batch` queries at a time with `between`
/// called before each batch (a front end's interrupt check). Every query gets `top` slots, best
/// first; a query whose ranking is undefined (a zero vector under the cosine or sign agreement)
/// gets `(u64::MAX, NaN)` in each.
pub fn search_raw(
    set: &ReleaseSet,
    mech: &dyn Mechanism,
    raw: RawQueries,
    no_scale: bool,
    (measure, top): (Option<&str>, usize),
    batch: usize,
    between: &dyn Fn() -> Result<()>,
) -> Result<FlatHits> {
    let (nq, k) = (raw.n(), set.k());
    let zero = zero_queries(&raw.values, raw.p);
    let (q, _) = raw.sketch_for(set.meta(), mech, "queries", no_scale)?;
    let qs = match &q {
        QuerySketches::Real(v) => Sketch::Real { data: v, k },
        QuerySketches::Bits(v) => Sketch::Bits { data: v, k },
    };
    let db = sharded::part_sketches(set)?.remove(0);
    let s = Search::new(set, db, qs, &zero, (measure, top), Searcher::Exact)?;
    let mut ids = Vec::with_capacity(nq * top);
    let mut scores = Vec::with_capacity(nq * top);
    for start in (0..nq).step_by(batch.max(1)) {
        between()?;
        let end = (start + batch.max(1)).min(nq);
        for hits in s.batch(start, end, None)? {
            for h in &hits {
                ids.push(h.row as u64);
                scores.push(h.score);
            }
            // top ≤ n, so every defined query has `top` hits; pad the others
            for _ in hits.len()..top {
                ids.push(u64::MAX);
                scores.push(f32::NAN);
            }
        }
    }
    Ok((ids, scores))
}

/// Re-rank candidate rows for raw queries held in memory by the debiased estimates
/// ([`crate::search::rerank`], `Release.rerank`): `raw` brought to the release's recorded scale
/// unless `no_scale`, `ids` the candidates, `c` per query, `measure` (`cosine` or `ip`) as
/// given; `between` is called between the steps (a front end's interrupt check).
#[allow(clippy::too_many_arguments)]
pub fn rerank_raw(
    set: &ReleaseSet,
    mech: &dyn Mechanism,
    mut raw: RawQueries,
    (ids, c): (&[u64], usize),
    top: usize,
    measure: Option<&str>,
    no_scale: bool,
    between: &dyn Fn() -> Result<()>,
) -> Result<Reranked> {
    let by = measure.map(Measure::parse).transpose()?;
    raw.scale_for(set.meta(), "queries", no_scale)?;
    between()?;
    rerank(set, mech, &raw.values, ids, c, top, by)
}
