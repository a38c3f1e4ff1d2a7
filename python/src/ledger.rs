//! `dprp.LedgerGate` and `dprp.fingerprint_part`: a privacy budget ledger held by the driver of
//! a job of many processes (`dprp.spark.publish(…, ledger=, budget=)`), which fingerprints the
//! dataset from its tasks' partial sums and charges the release once, before any task publishes.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use dprp::release::DatasetRecord;
use dprp::request::ledger::{file_part, fingerprint_part as fingerprint_part_of, JobGate};
use dprp::request::MechanismOptions;

use crate::arrays::{self, ArrayReader};
use crate::interrupt::Cancel;
use crate::ints::{self, Int};
use crate::options::{mechanism_plan, scaling};
use crate::{err, param};

/// The 32 bytes of a row-hashing key, or a `DprpError` naming `rows_key`.
fn key_bytes(b: &[u8]) -> PyResult<[u8; 32]> {
    b.try_into()
        .map_err(|_| param("rows_key", format!("{} bytes, expected 32", b.len())))
}

/// A dataset record from the dict [`LedgerGate::dataset`] returns.
pub(crate) fn dataset_record(d: &Bound<'_, PyDict>) -> PyResult<DatasetRecord> {
    let field = |k: &str| -> PyResult<String> {
        d.get_item(k)?
            .ok_or_else(|| param("dataset", format!("the record has no {k:?}")))?
            .extract::<String>()
    };
    Ok(DatasetRecord {
        fingerprint: field("fingerprint")?,
        key_id: field("key_id")?,
        hashed: field("hashed")?,
    })
}

/// The rows of `x` hashed with a ledger's row key ([`LedgerGate::rows_key`]): `(rows, dim,
/// sum)`, a part of the dataset's fingerprint for [`LedgerGate::dataset`]. `x` is a 2-D
/// float32/float64 array (values taken as float32, as publishing reads them) or a dataset file
/// read as `dprp.publish` reads it (`column=` for Parquet, `rows=(lo, hi)` for part of it).
#[pyfunction]
#[pyo3(signature = (x, rows_key, *, column=None, rows=None))]
pub fn fingerprint_part<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    rows_key: &[u8],
    column: Option<String>,
    rows: Option<(u64, u64)>,
) -> PyResult<(u64, usize, Bound<'py, PyBytes>)> {
    let key = key_bytes(rows_key)?;
    let part = if x.cast::<numpy::PyUntypedArray>().is_ok() {
        if column.is_some() || rows.is_some() {
            return Err(param(
                "column",
                "column= and rows= select from a file, not an array",
            ));
        }
        let m = arrays::matrix(x, "x")?;
        let cancel = Cancel::default();
        let mut reader = ArrayReader {
            view: m.view(),
            labels: None,
            next: 0,
            cancel: &cancel,
        };
        fingerprint_part_of(&mut reader, key).map_err(err)?
    } else {
        let path: PathBuf = x.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("x: expected a 2-D numpy array or a path")
        })?;
        py.detach(|| fingerprint_part_of(file_part(&path, column, rows)?.as_mut(), key))
            .map_err(err)?
    };
    Ok((part.rows, part.dim, PyBytes::new(py, &part.sum)))
}

/// A privacy budget ledger held for one release made by many processes: open it (taking its
/// lock until `close`), fingerprint the dataset from parts, `reserve` the release before any task
/// runs, then `confirm` the finished release or `withdraw` a failed one.
#[pyclass(module = "dprp._dprp")]
pub struct LedgerGate {
    gate: Option<JobGate>,
    dir: PathBuf,
}

impl LedgerGate {
    fn gate(&mut self) -> PyResult<&mut JobGate> {
        self.gate.as_mut().ok_or_else(|| {
            param(
                "ledger",
                format!("the ledger {} was closed", self.dir.display()),
            )
        })
    }
}

/// `budget=` as the CLI's `--budget` text: a number ε, a pair (ε, δ), or the text itself.
pub(crate) fn budget_text(b: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok((e, d)) = b.extract::<(f64, f64)>() {
        Ok(format!("{e},{d}"))
    } else if let Ok(e) = b.extract::<f64>() {
        Ok(e.to_string())
    } else {
        b.extract::<String>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("budget: expected ε, (ε, δ) or the text \"ε,δ\"")
        })
    }
}

#[pymethods]
impl LedgerGate {
    /// Open (or create) the ledger in `dir` and take its lock, waiting for another publish that
    /// holds it; with `budget` (ε, (ε, δ) or "ε,δ") releases that would exceed it are refused.
    #[new]
    #[pyo3(signature = (dir, budget = None))]
    fn new(py: Python<'_>, dir: PathBuf, budget: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let budget = budget.map(budget_text).transpose()?;
        let gate = py
            .detach(|| JobGate::open(&dir, budget.as_deref()))
            .map_err(err)?;
        Ok(LedgerGate {
            gate: Some(gate),
            dir,
        })
    }

    /// The row-hashing key for [`fingerprint_part`] (secret: for the processes that read the
    /// rows, never to be logged or written).
    fn rows_key<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, &self.gate()?.rows_key()))
    }

    /// The dataset's fingerprint from its parts `[(rows, sum), …]` (each from
    /// [`fingerprint_part`]) of rows of `dim` values: a dict (fingerprint, key_id, hashed, rows).
    fn dataset<'py>(
        &mut self,
        py: Python<'py>,
        dim: Int,
        parts: Vec<(u64, Vec<u8>)>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let dim: usize = dim.get("dim")?;
        let (rec, rows) = self.gate()?.dataset(dim, &parts).map_err(err)?;
        let d = PyDict::new(py);
        d.set_item("fingerprint", rec.fingerprint)?;
        d.set_item("key_id", rec.key_id)?;
        d.set_item("hashed", rec.hashed)?;
        d.set_item("rows", rows)?;
        Ok(d)
    }

    /// Charge the release to be written at `output` — `rows` rows of `dataset` ([`dataset`]'s
    /// dict) of `dim` values, published with these options (as `dprp.publish` takes them) —
    /// before any task runs: refused when it would exceed the budget. Returns the reservation id.
    #[pyo3(signature = (output, rows, dataset, dim, *, mechanism, epsilon, delta=None, k=None,
        seed=None, beta=None, neighbour=None, projection=None, min_norm=None,
        individual_dp=false, epsilon_norm=None, radius=None, noise=None, noise_seed=None,
        scale=None, normalize=None, clip=false, clip_norm=None))]
    #[allow(clippy::too_many_arguments)]
    fn reserve(
        &mut self,
        output: PathBuf,
        rows: Int,
        dataset: &Bound<'_, PyDict>,
        dim: Int,
        mechanism: &str,
        epsilon: f64,
        delta: Option<f64>,
        k: Option<Int>,
        seed: Option<&Bound<'_, PyAny>>,
        beta: Option<f64>,
        neighbour: Option<&str>,
        projection: Option<&str>,
        min_norm: Option<f64>,
        individual_dp: bool,
        epsilon_norm: Option<f64>,
        radius: Option<f64>,
        noise: Option<&str>,
        noise_seed: Option<&str>,
        scale: Option<&Bound<'_, PyAny>>,
        normalize: Option<&str>,
        clip: bool,
        clip_norm: Option<f64>,
    ) -> PyResult<String> {
        let (rows, dim): (u64, usize) = (rows.get("rows")?, dim.get("dim")?);
        let k: Option<usize> = ints::opt(k, "k")?;
        let plan = mechanism_plan(
            MechanismOptions {
                mechanism: mechanism.to_string(),
                epsilon,
                ..Default::default()
            },
            (delta, beta, neighbour, k, projection, seed),
            (min_norm, individual_dp, epsilon_norm, radius, noise),
        )?;
        let scaling = scaling(scale, normalize, clip, clip_norm)?;
        let dataset = dataset_record(dataset)?;
        self.gate()?
            .reserve(
                &output,
                rows,
                dataset,
                dim,
                plan,
                scaling,
                noise_seed.map(String::from),
            )
            .map_err(err)
    }

    /// Record the finished release at `release` (a sharded release's directory, not yet
    /// published elsewhere) in its reservation's place; refused when it is not what was reserved.
    fn confirm(&mut self, py: Python<'_>, release: PathBuf) -> PyResult<()> {
        let gate = self.gate()?;
        py.detach(|| gate.confirm(&release)).map_err(err)
    }

    /// The job failed and nothing it wrote remains: the reservation no longer counts.
    fn withdraw(&mut self) -> PyResult<()> {
        self.gate()?.withdraw().map_err(err)
    }

    /// Release the ledger's lock (also when the object is dropped).
    fn close(&mut self) {
        self.gate = None;
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&mut self, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }
}
