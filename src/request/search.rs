//! One search of a release, for every front end: `dprp query` and Python's `Release.search` check
//! the request once ([`Search::new`]) and then search batch by batch ([`Search::batch`]), each hit
//! naming its row by the row's **id** (a one-file release's row id, a shard directory's global id)
//! and a query whose ranking is undefined (a zero vector under the cosine or sign agreement) given
//! no neighbours — the same refusals, the same ids and the same rule in both.

use crate::error::{field, Error, Result};
use crate::release::ReleaseSet;
use crate::search::hnsw::HnswIndex;
use crate::search::sharded::{self, Concatenated};
use crate::search::{check_request, exact, Hit, Measure, Sketch};

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
