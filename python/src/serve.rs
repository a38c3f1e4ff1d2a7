//! The parts of `dprp.Release` that serve a release where embeddings are queried: raw queries
//! projected for a database (`project`), candidates re-ranked by the debiased estimates
//! (`rerank`), the release loaded into PostgreSQL (`to_postgres`). The work is the request
//! layer's (`dprp::request::project`, `dprp::request::search::rerank_raw`,
//! `dprp::request::export`); this module only converts arrays and runs it interruptibly.

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use dprp::release::{Mechanism, ReleaseSet};
use dprp::request::export::ExportRequest;
use dprp::request::project::{Projected, QuerySketches};
use dprp::request::query::RawQueries;
use dprp::request::search::{rerank_raw, Reranked};

use crate::interrupt::{self, Outcome};
use crate::{err, param};

/// Raw query rows from a 2-D float array.
fn raw_queries(queries: &Bound<'_, PyAny>) -> PyResult<RawQueries> {
    let m = crate::arrays::matrix(queries, "queries")?;
    let view = m.view();
    let (nq, p) = (view.rows(), view.cols());
    let mut values = Vec::with_capacity(nq * p);
    view.append_rows(0, nq, &mut values);
    Ok(RawQueries {
        values,
        p,
        scaling: Default::default(),
        file: None,
    })
}

/// The result of interruptible work, or the KeyboardInterrupt.
fn finish<T>(outcome: Outcome<dprp::Result<T>>) -> PyResult<T> {
    match outcome {
        Outcome::Done(r) => r.map_err(err),
        Outcome::Interrupted { exc, .. } => Err(exc),
    }
}

/// `Release.project`: float32 `queries × k`, or uint64 `queries × ⌈k/64⌉` packed signs.
pub fn project<'py>(
    py: Python<'py>,
    set: &ReleaseSet,
    mech: &dyn Mechanism,
    queries: &Bound<'py, PyAny>,
    no_scale: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let raw = raw_queries(queries)?;
    let meta = set.meta();
    let pr = py
        .detach(|| Projected::new(meta, mech, raw, "queries", no_scale))
        .map_err(err)?;
    let (rows, width) = (pr.rows, pr.width());
    let shape = |e: numpy::ndarray::ShapeError| param("queries", e);
    Ok(match pr.sketches {
        QuerySketches::Real(v) => Array2::from_shape_vec((rows, width), v)
            .map_err(shape)?
            .into_pyarray(py)
            .into_any(),
        QuerySketches::Bits(v) => Array2::from_shape_vec((rows, width), v)
            .map_err(shape)?
            .into_pyarray(py)
            .into_any(),
    })
}

/// Candidate ids: a 2-D array of unsigned (or non-negative signed) integers.
fn candidate_ids(c: &Bound<'_, PyAny>, nq: usize) -> PyResult<(Vec<u64>, usize)> {
    let rows = |shape: &[usize]| -> PyResult<usize> {
        if shape[0] != nq {
            return Err(param(
                "candidates",
                format!("{} rows of candidates for {nq} queries", shape[0]),
            ));
        }
        Ok(shape[1])
    };
    if let Ok(a) = c.extract::<PyReadonlyArray2<u64>>() {
        let w = rows(a.shape())?;
        return Ok((a.as_array().iter().copied().collect(), w));
    }
    if let Ok(a) = c.extract::<PyReadonlyArray2<i64>>() {
        let w = rows(a.shape())?;
        let ids = a
            .as_array()
            .iter()
            .map(|&i| {
                u64::try_from(i)
                    .map_err(|_| param("candidates", format!("candidate id {i} is negative")))
            })
            .collect::<PyResult<_>>()?;
        return Ok((ids, w));
    }
    Err(param(
        "candidates",
        "expected a 2-D numpy array of row ids (uint64 or int64), queries × candidates",
    ))
}

/// Row ids, estimates and standard errors, `queries × top` each.
pub type RerankedArrays<'py> = (
    Bound<'py, PyArray2<u64>>,
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray2<f64>>,
);

/// `Release.rerank`.
#[allow(clippy::too_many_arguments)]
pub fn rerank<'py>(
    py: Python<'py>,
    set: &ReleaseSet,
    mech: &dyn Mechanism,
    queries: &Bound<'py, PyAny>,
    candidates: &Bound<'py, PyAny>,
    top: usize,
    measure: Option<&str>,
    no_scale: bool,
) -> PyResult<RerankedArrays<'py>> {
    let raw = raw_queries(queries)?;
    let nq = raw.n();
    let (ids, c) = candidate_ids(candidates, nq)?;
    let outcome = interrupt::run(py, |cancel| -> dprp::Result<Reranked> {
        let between = || cancel.check();
        rerank_raw(set, mech, raw, (&ids, c), top, measure, no_scale, &between)
    })?;
    let r = finish(outcome)?;
    let shape = |e: numpy::ndarray::ShapeError| param("rerank", e);
    Ok((
        Array2::from_shape_vec((nq, top), r.ids)
            .map_err(shape)?
            .into_pyarray(py),
        Array2::from_shape_vec((nq, top), r.estimates)
            .map_err(shape)?
            .into_pyarray(py),
        Array2::from_shape_vec((nq, top), r.se)
            .map_err(shape)?
            .into_pyarray(py),
    ))
}

/// A PostgreSQL connection string with every password masked (`dprp.postgres.redact`): the
/// URL's `user:password@`, and `password` / `sslpassword` parameters in any case or encoding.
#[pyfunction(name = "_redact_postgres_url")]
pub fn redact_postgres_url(url: &str) -> String {
    dprp::request::export::redact(url)
}

/// `Release.to_postgres`: a dict with the stamp stored, the rows and the times.
pub fn to_postgres<'py>(
    py: Python<'py>,
    set: &ReleaseSet,
    url: String,
    table: String,
    replace: bool,
    index: Option<&str>,
    measure: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let request = ExportRequest {
        url,
        table,
        replace,
        index: index.map(String::from),
        measure: measure.map(String::from),
    };
    let outcome = interrupt::run(py, |cancel| {
        request.run(set, &|| cancel.check()).map_err(|e| match e {
            // the export's options as this method's arguments
            dprp::Error::Param { name, msg } if name == dprp::error::field("postgres") => {
                dprp::Error::Param {
                    name: "url".into(),
                    msg,
                }
            }
            other => other,
        })
    })?;
    let done = finish(outcome)?;
    let (x, d) = (&done.exported, PyDict::new(py));
    d.set_item("rows", x.stamp.rows)?;
    d.set_item("table", &done.options.table)?;
    d.set_item("fingerprint", &x.stamp.fingerprint)?;
    d.set_item("measure", &x.stamp.measure)?;
    d.set_item("hnsw", x.hnsw)?;
    d.set_item("copy_seconds", x.copy_seconds)?;
    d.set_item("total_seconds", x.total_seconds)?;
    Ok(d)
}
