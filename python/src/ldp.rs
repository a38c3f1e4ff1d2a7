//! The local-DP client/server API: `dprp.privatise` (one user's vector, on their device) and
//! `dprp.MeanAccumulator` (the server's streaming, mergeable mean; [`dprp::mechanism::local::accumulator`]).
//!
//! Client and server rebuild the same mechanism from the same public parameters (mechanism, ε,
//! dimension, public seed, constants); the accumulator refuses messages of another configuration
//! when states are merged.

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use std::path::PathBuf;

use dprp::mechanism::local::accumulator::{AccumulatorState, MeanAccumulator as AccMean};
use dprp::mechanism::{self, Mechanism, MechanismKind};
use dprp::privacy::samplers::noise::NoiseSource;
use dprp::release::ReleaseSet;
use dprp::request::MechanismOptions;

use crate::ints::{self, Int};
use crate::{err, param};

/// Build a local mechanism from its public parameters, as `dprp publish -m MECH -e ε -k K
/// --projection MAP --epsilon-norm ε₂ --radius R --projection-seed SEED` builds it (with
/// `--first-row 0`: the Python API names users by their absolute row id). The seed is required
/// so that the server rebuilds the client's public map.
#[allow(clippy::too_many_arguments)]
fn local_mechanism(
    mechanism: &str,
    epsilon: f64,
    dim: usize,
    seed: &Bound<'_, PyAny>,
    k: Option<usize>,
    projection: Option<&str>,
    epsilon_norm: Option<f64>,
    radius: Option<f64>,
) -> PyResult<Box<dyn Mechanism>> {
    let kind = MechanismKind::parse(mechanism).map_err(err)?;
    if !kind.is_local() {
        return Err(param(
            "mechanism",
            format!(
                "{} is not a local-DP mechanism ({})",
                kind.name(),
                MechanismKind::local_names()
            ),
        ));
    }
    // the options `dprp publish` resolves, through the same function
    let mut params = MechanismOptions {
        mechanism: mechanism.to_string(),
        epsilon,
        k,
        projection: projection.map(String::from),
        seed: Some(crate::public_seed(seed)?),
        epsilon_norm,
        radius,
        ..Default::default()
    }
    .resolve()
    .map_err(err)?
    .params;
    params.p = dim;
    mechanism::build(&params).map_err(err)
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
    let m = local_mechanism(
        mechanism,
        epsilon,
        v.len(),
        seed,
        k,
        projection,
        epsilon_norm,
        radius,
    )?;
    let client = m
        .local()
        .ok_or_else(|| param("mechanism", "has no local client"))?;
    let noise = NoiseSource::from_os().map_err(err)?;
    let mut rng = noise.row_rng(row);
    let msg = client.client(row, &v, &mut rng).map_err(err)?;
    let msg: Vec<f32> = msg.iter().map(|&x| x as f32).collect();
    Ok(PyArray1::from_vec(py, msg))
}

/// The first value of `message` that is not finite, as an error naming it (`where_` says whose
/// message it is). A privatised message is always finite: NaN or ±inf would make the mean NaN
/// for good, so such a message is refused and the accumulator left as it was.
fn check_finite(message: &[f32], where_: impl FnOnce() -> String) -> PyResult<()> {
    match message.iter().position(|x| !x.is_finite()) {
        None => Ok(()),
        Some(j) => Err(param(
            "message",
            format!(
                "value {j} (counted from 0) of {} is {}: a privatised message is finite; \
                 nothing was added",
                where_(),
                message[j]
            ),
        )),
    }
}

/// The server's streaming, mergeable mean of privatised messages ([`dprp::mechanism::local::accumulator`]).
#[pyclass(module = "dprp")]
pub struct MeanAccumulator {
    mech: Box<dyn Mechanism>,
    state: AccumulatorState,
}

impl MeanAccumulator {
    fn with<T>(
        &mut self,
        f: impl FnOnce(&mut dprp::mechanism::local::accumulator::MeanAccumulator<'_>) -> dprp::Result<T>,
    ) -> PyResult<T> {
        let mut acc = dprp::mechanism::local::accumulator::MeanAccumulator::from_state(
            self.mech.as_ref(),
            self.state.clone(),
        )
        .map_err(err)?;
        let r = f(&mut acc).map_err(err)?;
        self.state = acc.state().clone();
        Ok(r)
    }
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
        let mech = local_mechanism(
            mechanism,
            epsilon,
            dim,
            seed,
            k,
            projection,
            epsilon_norm,
            radius,
        )?;
        let state = dprp::mechanism::local::accumulator::MeanAccumulator::new(mech.as_ref())
            .map_err(err)?
            .state()
            .clone();
        Ok(MeanAccumulator { mech, state })
    }

    /// The accumulator of a local-DP release's mechanism, built from its metadata as `dprp mean`
    /// builds it, with every row of the release added (by global id) when `rows`: a shard
    /// directory adds all its shards, a shard file its own rows (so the states of a sharded
    /// release's shards merge into `dprp mean` of the directory). `rows=False` reads only the
    /// header and metadata: an empty accumulator to merge the shards' states into.
    #[staticmethod]
    #[pyo3(signature = (path, rows = true))]
    fn of_release(py: Python<'_>, path: PathBuf, rows: bool) -> PyResult<Self> {
        let (mech, state) = py
            .detach(|| -> dprp::Result<(Box<dyn Mechanism>, AccumulatorState)> {
                let parts = ReleaseSet::open_with(&path, rows)?.into_parts();
                let Some((first, _)) = parts.first() else {
                    return Err(dprp::Error::format(&path, "no rows: not a release"));
                };
                let m = first.meta();
                let mech = mechanism::from_record(&m.mechanism, &m.guarantee)?;
                let state = {
                    let mut acc = AccMean::new(mech.as_ref())?;
                    for (r, first_row) in parts.iter().filter(|_| rows) {
                        if r.n() > 0 {
                            acc.add_rows(*first_row, r.values()?)?;
                        }
                    }
                    acc.state().clone()
                };
                Ok((mech, state))
            })
            .map_err(err)?;
        Ok(MeanAccumulator { mech, state })
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
        check_finite(&m, || format!("row {row}'s message"))?;
        self.with(|a| a.add(row, &m))
    }

    /// Add the messages of users `first_row, first_row + 1, …` (one per row of a 2-D float32 or
    /// float64 array). Nothing is added when any message is refused (NaN or infinite values).
    fn add_rows(&mut self, first_row: Int, messages: &Bound<'_, PyAny>) -> PyResult<()> {
        let first_row: u64 = first_row.get("first_row")?;
        let matrix = crate::arrays::matrix(messages, "messages")?;
        let view = matrix.view();
        let mut m = Vec::with_capacity(view.rows() * view.cols());
        view.append_rows(0, view.rows(), &mut m);
        if let Some(bad) = m.iter().position(|x| !x.is_finite()) {
            let (i, cols) = (bad / view.cols(), view.cols());
            let row = first_row.saturating_add(i as u64);
            check_finite(&m[i * cols..(i + 1) * cols], || {
                format!("message {i} (row {row})")
            })?;
        }
        self.with(|a| a.add_rows(first_row, &m))
    }

    /// Merge another accumulator of the same configuration that saw other users.
    fn merge(&mut self, other: PyRef<'_, MeanAccumulator>) -> PyResult<()> {
        let st = other.state.clone();
        self.with(|a| a.merge_state(&st))
    }

    /// Users added.
    #[getter]
    fn n(&self) -> u64 {
        self.state.n
    }

    /// The state as JSON, to send to another machine ([`MeanAccumulator::merge_json`] there).
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.state).map_err(|e| param("accumulator", e))
    }

    /// Merge a state produced by [`to_json`](MeanAccumulator::to_json).
    fn merge_json(&mut self, state: &str) -> PyResult<()> {
        let st: AccumulatorState = serde_json::from_str(state).map_err(|e| param("state", e))?;
        self.with(|a| a.merge_state(&st))
    }

    /// The mean and its expected squared error: a dict with `mean` (float64 array), `n`,
    /// `mse_per_user`, `expected_sq_error` and `error_note`.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let e = self.with(|a| a.finish())?;
        let d = PyDict::new(py);
        d.set_item("mean", PyArray1::from_vec(py, e.mean))?;
        d.set_item("n", e.n)?;
        d.set_item("mse_per_user", e.mse_per_user)?;
        d.set_item("expected_sq_error", e.expected_sq_error)?;
        d.set_item("error_note", e.error_note)?;
        Ok(d)
    }
}
