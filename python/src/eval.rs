//! `dprp.eval_retrieval`: the retrieval evaluation of `dprp eval retrieval` on numpy arrays
//! (`dprp::request::eval::RowsRetrieval`: the command's checks), returning its report
//! as dicts and lists.

use pyo3::prelude::*;

use dprp::request::eval::RowsRetrieval;
use dprp::request::rows::Dataset;

use crate::err;
use crate::interrupt::{self, Outcome};
use crate::ints::{self, Int};

/// The unwinding payload that stops a grid once the call is interrupted (raised with
/// `resume_unwind`, so no panic message is printed; caught on the worker thread).
struct Cancelled;

fn dataset(x: &Bound<'_, PyAny>, what: &str) -> PyResult<Dataset> {
    let m = crate::arrays::matrix(x, what)?;
    let v = m.view();
    let mut values = Vec::with_capacity(v.rows() * v.cols());
    v.append_rows(0, v.rows(), &mut values);
    Ok(Dataset {
        n: v.rows(),
        p: v.cols(),
        values,
        labels: None,
        scaling: Default::default(),
    })
}

/// Retrieval evaluation before publishing: `train` is the database, `test` the queries (2-D
/// float arrays with the same number of columns, already on the mechanisms' scale); for every
/// mechanism (`"dp-oporp,dp-signoporp-rr"` or `"all"`), ε, k and query mode, precision@10 and
/// recall@100 against the true cosine top-10, averaged over `repeat` fresh releases, and each
/// family's noiseless reference. Returns the report (`kind`, `metrics`, `rows`, `meta`) as
/// `dprp eval retrieval --out` writes it in `results.json`.
#[pyfunction]
#[pyo3(signature = (train, test, *, mechanisms, epsilons, ks, delta=1e-6, beta=1.0,
    min_norm=None, query_mode="both", repeat=1, seed=None))]
#[allow(clippy::too_many_arguments)]
pub fn eval_retrieval<'py>(
    py: Python<'py>,
    train: &Bound<'py, PyAny>,
    test: &Bound<'py, PyAny>,
    mechanisms: &str,
    epsilons: Vec<f64>,
    ks: Vec<Int>,
    delta: f64,
    beta: f64,
    min_norm: Option<f64>,
    query_mode: &str,
    #[pyo3(from_py_with = ints::int)] repeat: i128,
    seed: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let ks = ks
        .into_iter()
        .map(|k| k.get::<usize>("ks"))
        .collect::<PyResult<Vec<usize>>>()?;
    let request = RowsRetrieval {
        mechanisms: mechanisms.to_string(),
        epsilons,
        ks,
        delta: Some(delta),
        beta: Some(beta),
        min_norm,
        query_mode: Some(query_mode.to_string()),
        repeat: Some(ints::unsigned(repeat, "repeat")?),
        seed: seed.map(crate::public_seed).transpose()?,
    };
    let run = request
        .with_rows(dataset(train, "train")?, dataset(test, "test")?)
        .map_err(err)?;
    let outcome = interrupt::run(py, |cancel| {
        // The grid has no cancellation hook; its progress callback unwinds out of it instead.
        let tick = |_: usize, _: usize| {
            if cancel.is_set() {
                std::panic::resume_unwind(Box::new(Cancelled));
            }
        };
        run.run(&tick)
    })?;
    let report = match outcome {
        Outcome::Done(r) => r.map_err(err)?,
        Outcome::Interrupted { exc, .. } => return Err(exc),
    };
    crate::to_py_json(py, &report)
}
