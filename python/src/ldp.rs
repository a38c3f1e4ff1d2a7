//! The local-DP client/server API: `dprp.privatise` (one user's vector, on their device) and
//! `dprp.MeanAccumulator` (the server's streaming, mergeable mean), through
//! [`dprp::request::local`].
//!
//! Client and server rebuild the same mechanism from the same public parameters (mechanism, ε,
//! dimension, public seed, constants); the accumulator refuses messages of another configuration
//! when states are merged.

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use std::path::PathBuf;

use dprp::request::local::{self, Accumulator, LocalConfig};

use crate::err;
use crate::ints::{self, Int};

/// The public parameters as the request layer takes them (`dim` is the users' dimension; 0
/// when the vector gives it).
#[allow(clippy::too_many_arguments)]
fn config(
    mechanism: &str,
    epsilon: f64,
    dim: usize,
    seed: &Bound<'_, PyAny>,
    k: Option<usize>,
    projection: Option<&str>,
    epsilon_norm: Option<f64>,
    radius: Option<f64>,
) -> PyResult<LocalConfig> {
    Ok(LocalConfig {
        mechanism: mechanism.to_string(),
        epsilon,
        dim,
        seed: crate::public_seed(seed)?,
        k,
        projection: projection.map(String::from),
        epsilon_norm,
        radius,
    })
}

/// One user's side of local-DP mean estimation: privatise the vector `v` (a 1-D float32 or
/// float64 array, or a list of numbers; its row id `row` selects the public map of per-row
/// mechanisms) with fresh noise from the operating system's CSPRNG, returning the message to send
/// (float32). `seed` is the public seed (hex string or int) the server also uses; `k` is the
/// projected dimension of projunit and projunit-correlated (`-k`), `projection` projunit's map.
#[pyfunction]
#[pyo3(signature = (v, *, mechanism, epsilon, seed, row=0, k=None, projection=None,
    epsilon_norm=None, radius=None))]
#[allow(clippy::too_many_arguments)]
pub fn privatise<'py>(
    py: Python<'py>,
    v: &Bound<'py, PyAny>,
    mechanism: &str,
    epsilon: f64,
    seed: &Bound<'py, PyAny>,
    #[pyo3(from_py_with = ints::int)] row: i128,
    k: Option<Int>,
    projection: Option<&str>,
    epsilon_norm: Option<f64>,
    radius: Option<f64>,
) -> PyResult<Bound<'py, PyArray1<f32>>> {
    let row: u64 = ints::unsigned(row, "row")?;
    let k: Option<usize> = ints::opt(k, "k")?;
    let v = crate::arrays::vector(v, "v", "privatise takes one vector (1-D array of d values)")?;
    let c = config(
        mechanism,
        epsilon,
        v.len(),
        seed,
        k,
        projection,
        epsilon_norm,
        radius,
    )?;
    let msg = local::privatise(&c, row, &v).map_err(err)?;
    Ok(PyArray1::from_vec(py, msg))
}

/// The server's streaming, mergeable mean of privatised messages ([`Accumulator`]).
#[pyclass(module = "dprp")]
pub struct MeanAccumulator {
    inner: Accumulator,
}

#[pymethods]
impl MeanAccumulator {
    /// An empty accumulator for the mechanism with these public parameters (as the clients).
    #[new]
    #[pyo3(signature = (*, mechanism, epsilon, dim, seed, k=None, projection=None,
        epsilon_norm=None, radius=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        mechanism: &str,
        epsilon: f64,
        dim: Int,
        seed: &Bound<'_, PyAny>,
        k: Option<Int>,
        projection: Option<&str>,
        epsilon_norm: Option<f64>,
        radius: Option<f64>,
    ) -> PyResult<Self> {
        let dim: usize = dim.get("dim")?;
        let k: Option<usize> = ints::opt(k, "k")?;
        let c = config(
            mechanism,
            epsilon,
            dim,
            seed,
            k,
            projection,
            epsilon_norm,
            radius,
        )?;
        let inner = Accumulator::new(&c).map_err(err)?;
        Ok(MeanAccumulator { inner })
    }

    /// The accumulator of a local-DP release's mechanism, built from its metadata as `dprp mean`
    /// builds it, with every row of the release added (by global id) when `rows`: a shard
    /// directory adds all its shards, a shard file its own rows (so the states of a sharded
    /// release's shards merge into `dprp mean` of the directory). `rows=False` reads only the
    /// header and metadata: an empty accumulator to merge the shards' states into.
    #[staticmethod]
    #[pyo3(signature = (path, rows = true))]
    fn of_release(py: Python<'_>, path: PathBuf, rows: bool) -> PyResult<Self> {
        let inner = py
            .detach(|| Accumulator::of_release(&path, rows))
            .map_err(err)?;
        Ok(MeanAccumulator { inner })
    }

    /// Add user `row`'s message (a 1-D float32 or float64 array, or a list). A message with a
    /// NaN or infinite value is refused and the accumulator left unchanged, as after any error.
    fn add(&mut self, row: Int, message: &Bound<'_, PyAny>) -> PyResult<()> {
        let row: u64 = row.get("row")?;
        let m: Vec<f32> = crate::arrays::vector(
            message,
            "message",
            "add takes one message (1-D array); add_rows takes a 2-D array of messages",
        )?
        .into_iter()
        .map(|x| x as f32)
        .collect();
        self.inner.add(row, &m).map_err(err)
    }

    /// Add the messages of users `first_row, first_row + 1, …` (one per row of a 2-D float32 or
    /// float64 array). Nothing is added when any message is refused (NaN or infinite values).
    fn add_rows(&mut self, first_row: Int, messages: &Bound<'_, PyAny>) -> PyResult<()> {
        let first_row: u64 = first_row.get("first_row")?;
        let matrix = crate::arrays::matrix(messages, "messages")?;
        let view = matrix.view();
        let mut m = Vec::with_capacity(view.rows() * view.cols());
        view.append_rows(0, view.rows(), &mut m);
        self.inner.add_rows(first_row, &m).map_err(err)
    }

    /// Merge another accumulator of the same configuration that saw other users.
    fn merge(&mut self, other: PyRef<'_, MeanAccumulator>) -> PyResult<()> {
        self.inner.merge(&other.inner).map_err(err)
    }

    /// Users added.
    #[getter]
    fn n(&self) -> u64 {
        self.inner.n()
    }

    /// The state as JSON, to send to another machine ([`MeanAccumulator::merge_json`] there).
    fn to_json(&self) -> PyResult<String> {
        self.inner.to_json().map_err(err)
    }

    /// Merge a state produced by [`to_json`](MeanAccumulator::to_json).
    fn merge_json(&mut self, state: &str) -> PyResult<()> {
        self.inner.merge_json(state).map_err(err)
    }

    /// The mean and its expected squared error: a dict with `mean` (float64 array), `n`,
    /// `mse_per_user`, `expected_sq_error` and `error_note`.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let e = self.inner.finish().map_err(err)?;
        let d = PyDict::new(py);
        d.set_item("mean", PyArray1::from_vec(py, e.mean))?;
        d.set_item("n", e.n)?;
        d.set_item("mse_per_user", e.mse_per_user)?;
        d.set_item("expected_sq_error", e.expected_sq_error)?;
        d.set_item("error_note", e.error_note)?;
        Ok(d)
    }
}
