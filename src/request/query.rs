//! Queries for a release, for every front end: raw vectors checked against the release's
//! dimension, brought to the scale of its rows (the public scaling it records), and projected
//! with its public map; or the rows of another release made with the same map.

use crate::error::field;
use std::path::{Path, PathBuf};

use crate::data::scale::{scale_queries, QueryOrigin};
use crate::data::Scaling;
use crate::error::{Error, Result};
use crate::mechanism::{Mechanism, Payload};
use crate::release::{Release, ReleaseMeta};
use crate::search::queries::{sketch_queries, QuerySketches};

/// Raw query vectors as given.
#[derive(Debug, Clone)]
pub struct RawQueries {
    /// Row-major values, `p` per query.
    pub values: Vec<f32>,
    /// Their dimension.
    pub p: usize,
    /// The scaling their file records as already applied (none for in-memory queries).
    pub scaling: Scaling,
    /// The file they came from; `None` for in-memory queries.
    pub file: Option<PathBuf>,
}

impl RawQueries {
    /// How many queries.
    pub fn n(&self) -> usize {
        self.values.len().checked_div(self.p).unwrap_or(0)
    }

    /// Check the dimension against the release, then bring the values to the scale of the
    /// release's rows (unless `no_scale`; the domain is checked either way). `option` names where
    /// the queries came from as the front end spells it (`--queries`, `--query-vector`,
    /// `queries`). Returns the steps applied.
    pub fn scale_for(
        &mut self,
        release: &ReleaseMeta,
        option: &str,
        no_scale: bool,
    ) -> Result<Scaling> {
        let prefix = self
            .file
            .as_ref()
            .map(|f| format!("{}: ", f.display()))
            .unwrap_or_default();
        if self.values.is_empty() {
            return Err(Error::param(option, format!("{prefix}no query rows")));
        }
        if self.p != release.p {
            return Err(Error::param(
                option,
                format!(
                    "{prefix}queries have {} features, the release was made from {}-dimensional \
                     rows",
                    self.p, release.p
                ),
            ));
        }
        let label = self.file.clone().unwrap_or_else(|| PathBuf::from(option));
        let origin = QueryOrigin {
            path: &label,
            option,
        };
        scale_queries(
            &release.scaling,
            &self.scaling,
            &mut self.values,
            self.p,
            &origin,
            no_scale,
        )
    }

    /// [`RawQueries::scale_for`], then project with the release's public map `m` (the mechanism
    /// rebuilt from the release; signs packed for sign releases).
    pub fn sketch_for(
        mut self,
        release: &ReleaseMeta,
        m: &dyn Mechanism,
        option: &str,
        no_scale: bool,
    ) -> Result<(QuerySketches, Scaling)> {
        let applied = self.scale_for(release, option, no_scale)?;
        Ok((sketch_queries(m, release.payload, &self.values)?, applied))
    }
}

/// The rows of another release as queries, with their ids, after checking it was made with the
/// same public map, k and payload kind.
pub fn release_queries(
    searched: &ReleaseMeta,
    path: &Path,
    option: &str,
) -> Result<(QuerySketches, Vec<u64>)> {
    let q = Release::open(path)?;
    let b = q.meta();
    if searched.payload != b.payload {
        return Err(Error::param(
            option,
            "the query release and the searched release differ in kind (real values vs signs)",
        ));
    }
    if searched.p != b.p || searched.k != b.k {
        return Err(Error::param(
            option,
            format!(
                "the query release has p = {}, k = {}; the searched release p = {}, k = {}",
                b.p, b.k, searched.p, searched.k
            ),
        ));
    }
    if searched.mechanism.projection != b.mechanism.projection {
        return Err(Error::param(
            option,
            format!(
                "the query release was made with a different public projection (kind or seed); \
                 its sketches are not comparable (publish both with the same {})",
                field("projection_seed")
            ),
        ));
    }
    let ids = (0..q.n()).map(|i| q.id(i)).collect();
    let sketches = match b.payload {
        Payload::F32 => QuerySketches::Real(q.values()?.to_vec()),
        Payload::Bits => QuerySketches::Bits(q.bits()?.to_vec()),
    };
    Ok((sketches, ids))
}

/// How raw query files are read: as they are (no scaling asked: the release's own is applied
/// later), with `column` naming the vector column of a Parquet file (`--column`).
pub fn query_input(column: Option<&str>) -> crate::data::InputOptions {
    crate::data::InputOptions {
        columns: crate::data::parquet::Columns {
            vectors: column.map(String::from),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The first row of the input file `path` as one raw query (`dprp estimate --query-vector`):
/// only that row is read and checked, so what follows it in the file (a NaN in row 2, say) is
/// neither read nor held against the query.
/// `column` names the vector column of a Parquet file ([`query_input`]).
pub fn first_query(path: &Path, column: Option<&str>) -> Result<RawQueries> {
    let mut reader = crate::data::open_reader(path, &query_input(column))?;
    let (mut values, mut labels) = (Vec::new(), Vec::new());
    reader.read_chunk(1, &mut values, &mut labels)?;
    let p = reader.dim();
    values.truncate(p);
    Ok(RawQueries {
        values,
        p,
        scaling: reader.scaling(),
        file: Some(path.to_path_buf()),
    })
}

/// Why a zero query has no cosine neighbours: one rule for undefined cosines (`query`,
/// `estimate`, re-ranking, Python).
pub const ZERO_QUERY_NOTE: &str =
    "cosine undefined: the query vector is zero (no direction to compare; its signs would all be \
     sign(0) = +1 by convention)";

/// For each query of `values` (`p` each, `p > 0`): whether it is the zero vector (its ranking by
/// the cosine or by sign agreement is undefined, [`super::search::Search`]; the inner product of a
/// zero query is 0 for every row, its correct estimate).
pub fn zero_queries(values: &[f32], p: usize) -> Vec<bool> {
    values
        .chunks(p.max(1))
        .map(|q| q.iter().all(|&v| v == 0.0))
        .collect()
}
