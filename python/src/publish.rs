//! `dprp.publish` and `dprp.calibrate`.

use std::path::PathBuf;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use dprp::request::calibrate::{mechanism_calibration, sigma_for_sensitivity, CalibrateOptions};
use dprp::request::publish::{Layout, LedgerOptions, PublishJob, PublishRequest, RunOptions};
use dprp::request::rows::{open_reader, Columns, InputOptions, RowReader};
use dprp::request::shards::WorkerShard;
use dprp::request::MechanismOptions;

use crate::arrays::{self, ArrayReader, CancellableReader};
use crate::interrupt::{self, Outcome};
use crate::ints::{self, Int};
use crate::options::{mechanism_plan, scaling};
use crate::release::Release;
use crate::{err, param};

/// What to publish: a numpy array or a dataset file.
enum Input<'py> {
    Array(arrays::Matrix<'py>),
    Path(PathBuf),
}

/// Publish `x` (a 2-D float32/float64 numpy array, or the path of any dataset file dprp reads)
/// as a private sketch release written to `output`, and open it. The release is the same file
/// `dprp publish` writes; the secret noise comes from the operating system's CSPRNG unless
/// `noise_seed` is given (then the release is NOT private, and a warning says so).
///
/// With `ledger=DIR` (and `budget=ε`, `(ε, δ)` or `"ε,δ"`), as `dprp publish --ledger DIR
/// --budget …`: the rows are fingerprinted with the ledger's secret key as they are read, the
/// release is recorded in the ledger's journal, and a release that would take the dataset past
/// its budget is refused before anything is written (`DprpError`, no output file). The lock on
/// the ledger is held for the whole call (another publish on it waits, without the GIL).
#[pyfunction]
#[pyo3(signature = (x, *, mechanism, epsilon, output, delta=None, k=None, seed=None, beta=None,
    neighbour=None, projection=None, min_norm=None, individual_dp=false, epsilon_norm=None,
    radius=None, first_row=0, noise=None, noise_seed=None, labels=None, scale=None,
    normalize=None, clip=false, clip_norm=None, memory=256, shard=None, output_format=None,
    column=None, label_column=None, id_column=None, rows=None, overwrite=false, dataset=None,
    ledger=None, budget=None))]
#[allow(clippy::too_many_arguments)]
pub fn publish<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    mechanism: &str,
    epsilon: f64,
    output: PathBuf,
    delta: Option<f64>,
    k: Option<Int>,
    seed: Option<&Bound<'py, PyAny>>,
    beta: Option<f64>,
    neighbour: Option<&str>,
    projection: Option<&str>,
    min_norm: Option<f64>,
    individual_dp: bool,
    epsilon_norm: Option<f64>,
    radius: Option<f64>,
    #[pyo3(from_py_with = ints::int)] first_row: i128,
    noise: Option<&str>,
    noise_seed: Option<&str>,
    labels: Option<&Bound<'py, PyAny>>,
    scale: Option<&Bound<'py, PyAny>>,
    normalize: Option<&str>,
    clip: bool,
    clip_norm: Option<f64>,
    #[pyo3(from_py_with = ints::int)] memory: i128,
    shard: Option<(Int, Int)>,
    output_format: Option<&str>,
    column: Option<String>,
    label_column: Option<String>,
    id_column: Option<String>,
    rows: Option<(Int, Int)>,
    overwrite: bool,
    dataset: Option<&Bound<'py, PyDict>>,
    ledger: Option<PathBuf>,
    budget: Option<&Bound<'py, PyAny>>,
) -> PyResult<Release> {
    let k: Option<usize> = ints::opt(k, "k")?;
    let first_row: u64 = ints::unsigned(first_row, "first_row")?;
    let memory: usize = ints::unsigned(memory, "memory")?;
    let shard: Option<(u32, u32)> = shard
        .map(|(i, n)| Ok::<_, PyErr>((i.get("shard")?, n.get("shard")?)))
        .transpose()?;
    let rows: Option<(u64, u64)> = rows
        .map(|(lo, hi)| Ok::<_, PyErr>((lo.get("rows")?, hi.get("rows")?)))
        .transpose()?;
    let worker = worker_shard(x, shard, first_row, rows)?;
    let plan = mechanism_plan(
        MechanismOptions {
            mechanism: mechanism.to_string(),
            epsilon,
            first_row,
            ..Default::default()
        },
        (delta, beta, neighbour, k, projection, seed),
        (min_norm, individual_dp, epsilon_norm, radius, noise),
    )?;
    let params = plan.params;
    let input = Input::of(x)?;
    let scaling = scaling(scale, normalize, clip, clip_norm)?;
    let (options, noise) = RunOptions {
        memory_mib: memory,
        output_format: output_format.map(String::from),
        noise_seed: noise_seed.map(String::from),
        overwrite,
    }
    .resolve(&output, plan.noise, Some(collect_warning))
    .map_err(err)?;
    let named = [
        ("column", column.is_some()),
        ("label_column", label_column.is_some()),
        ("id_column", id_column.is_some()),
    ];
    let (view, label_values, input_path) = input.rows(labels, named)?;
    // the job `dprp publish` runs, through the same request function: the ledger as
    // `--ledger DIR --budget …` opens it (before a worker's shard directory is made, its lock
    // held until the release is recorded), the layout, the driver's dataset record
    let job = PublishJob {
        request: PublishRequest {
            input: input_path,
            input_opts: InputOptions {
                csv_label_column: label_column.as_deref().and_then(|l| l.parse().ok()),
                columns: Columns {
                    vectors: column,
                    label: label_column,
                    id: id_column,
                },
                ..InputOptions::default()
            },
            scaling,
            params,
            output,
        },
        noise,
        options,
        layout: worker.map_or(Layout::Whole, Layout::Worker),
        ledger: LedgerOptions {
            dir: ledger,
            budget: budget.map(crate::ledger::budget_text).transpose()?,
        },
        dataset: dataset.map(crate::ledger::dataset_record).transpose()?,
    };
    publish_interruptibly(py, job, view, label_values.as_deref())
}

/// Run the publish with Ctrl-C honoured (an interrupted call leaves no output), pass its
/// warnings to Python's `warnings`, and open the release.
fn publish_interruptibly<'a>(
    py: Python<'_>,
    job: PublishJob,
    view: Option<arrays::View<'a>>,
    labels: Option<&'a [f32]>,
) -> PyResult<Release> {
    let input = job.request.input.clone();
    let input_opts = job.request.input_opts.clone();
    let outcome = interrupt::run(py, |cancel| {
        WARNINGS.with(|w| w.borrow_mut().clear());
        let mut open = || -> dprp::Result<Box<dyn RowReader + '_>> {
            Ok(match view {
                Some(view) => Box::new(ArrayReader {
                    view,
                    labels: labels.map(numpy::ndarray::ArrayView1::from),
                    next: 0,
                    cancel,
                }),
                None => Box::new(CancellableReader {
                    inner: open_reader(&input, &input_opts)?,
                    cancel,
                }),
            })
        };
        let r = job.run(Some(&mut open), |_| {});
        (WARNINGS.with(|w| std::mem::take(&mut *w.borrow_mut())), r)
    })?;
    let (warnings, result) = match outcome {
        Outcome::Done(r) => r,
        Outcome::Interrupted { exc, result } => {
            if let Some((_, Ok(done))) = result {
                // The signal came after the last chunk was read and the release was committed:
                // an interrupted call leaves no output, so remove it.
                let _ = std::fs::remove_file(&done.release);
            }
            return Err(exc);
        }
    };
    // the warnings first, also when the run failed (a free-space warning explains the failure)
    if !warnings.is_empty() {
        let warn = py.import("warnings")?;
        for w in &warnings {
            warn.call_method1("warn", (crate::py_text(w),))?;
        }
    }
    let done = result.map_err(err)?;
    Release::open_path(py, &done.release, true)
}

/// One shard of a sharded release (a Spark executor, a worker), or none: with `shard=(i, N)`,
/// `output` is the shard directory, the rows get the global ids `first_row, …`, and the file is
/// output/shard-i-of-N.dprp; `dprp.finish_shards(output)` writes the manifest at the end.
/// `rows=(lo, hi)` picks the shard's rows of an input file.
fn worker_shard(
    x: &Bound<'_, PyAny>,
    shard: Option<(u32, u32)>,
    first_row: u64,
    rows: Option<(u64, u64)>,
) -> PyResult<Option<WorkerShard>> {
    let worker = shard.map(|(index, count)| WorkerShard {
        index,
        count,
        first_row,
        rows,
    });
    if rows.is_some() {
        if worker.is_none() {
            return Err(param(
                "rows",
                "rows=(lo, hi) picks a shard's rows from a whole input file: use it with shard=(i, N)",
            ));
        }
        if x.extract::<PathBuf>().is_err() {
            return Err(param(
                "rows",
                "selects rows of an input file; slice a numpy array instead",
            ));
        }
    }
    Ok(worker)
}

/// An input's rows as publish reads them: the array's view (none for a file), its labels, and
/// the name the release records as its input.
type InputRows<'a> = (Option<arrays::View<'a>>, Option<Vec<f32>>, PathBuf);

impl<'py> Input<'py> {
    /// `x` as a numpy array or a path.
    fn of(x: &Bound<'py, PyAny>) -> PyResult<Input<'py>> {
        if x.cast::<numpy::PyUntypedArray>().is_ok() {
            Ok(Input::Array(arrays::matrix(x, "x")?))
        } else if let Ok(p) = x.extract::<PathBuf>() {
            Ok(Input::Path(p))
        } else {
            Err(PyTypeError::new_err(format!(
                "x: expected a 2-D numpy array or a path to a dataset file, got {}",
                x.get_type().name()?
            )))
        }
    }

    /// The array's rows and labels (`labels=`) and the name the release records as its input,
    /// or the file's path. Columns are named only for files, labels given only with an array.
    fn rows(
        &self,
        labels: Option<&Bound<'_, PyAny>>,
        named: [(&str, bool); 3],
    ) -> PyResult<InputRows<'_>> {
        match self {
            Input::Array(m) => {
                if let Some((name, _)) = named.iter().find(|(_, given)| *given) {
                    return Err(param(
                        name,
                        "columns are named only in Parquet (or CSV) input files; with a numpy \
                         array pass labels=",
                    ));
                }
                let view = m.view();
                let l = labels.map(|l| arrays::labels(l, view.rows())).transpose()?;
                let name = format!(
                    "numpy array ({} × {} {})",
                    view.rows(),
                    view.cols(),
                    match m {
                        arrays::Matrix::F32(_) => "float32",
                        arrays::Matrix::F64(_) => "float64",
                    }
                );
                Ok((Some(view), l, PathBuf::from(name)))
            }
            Input::Path(p) => {
                if labels.is_some() {
                    return Err(param(
                        "labels",
                        "labels are read from the dataset file; pass them only with a numpy array",
                    ));
                }
                Ok((None, None, p.clone()))
            }
        }
    }
}

thread_local! {
    /// The warnings of the publish running on this thread, as they arise ([`collect_warning`]).
    static WARNINGS: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `PublishOptions::on_warning` for the module: keep each warning on the publishing thread, so
/// the caller issues it as a Python warning whether the run succeeds or fails.
fn collect_warning(w: &str) {
    WARNINGS.with(|v| v.borrow_mut().push(w.to_string()));
}

/// Check the shards that `publish(..., shard=(i, N))` calls wrote into `dir` — all present, one
/// release (same mechanism, parameters, public seed), disjoint rows — and write the manifest that
/// makes `dir` a sharded release (`dprp shards finish`). Returns the opened release.
#[pyfunction]
pub fn finish_shards(py: Python<'_>, dir: PathBuf) -> PyResult<Release> {
    py.detach(|| dprp::release::shards::finish(&dir))
        .map_err(err)?;
    Release::open_path(py, &dir, true)
}

/// Calibrate a mechanism without publishing: its noise (σ and Δ₂ for the Gaussian sketches, the
/// flip rule for sign sketches, the constants of local mechanisms), its record as a release would
/// store it, and its guarantee. Without `mechanism`, the Gaussian σ for an ℓ₂ `sensitivity`
/// (default `beta`): analytic (Balle & Wang 2018, Theorem 3.2) and classical (Theorem 3.1).
#[pyfunction]
#[pyo3(signature = (*, epsilon, mechanism=None, delta=None, dim=None, k=None, sensitivity=None,
    beta=None, neighbour=None, projection=None, seed=None, min_norm=None, individual_dp=false,
    epsilon_norm=None, radius=None, noise=None))]
#[allow(clippy::too_many_arguments)]
pub fn calibrate<'py>(
    py: Python<'py>,
    epsilon: f64,
    mechanism: Option<&str>,
    delta: Option<f64>,
    dim: Option<Int>,
    k: Option<Int>,
    sensitivity: Option<f64>,
    beta: Option<f64>,
    neighbour: Option<&str>,
    projection: Option<&str>,
    seed: Option<&Bound<'py, PyAny>>,
    min_norm: Option<f64>,
    individual_dp: bool,
    epsilon_norm: Option<f64>,
    radius: Option<f64>,
    noise: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let dim: Option<usize> = ints::opt(dim, "dim")?;
    let k: Option<usize> = ints::opt(k, "k")?;
    let Some(name) = mechanism else {
        // the σ `dprp calibrate --sensitivity` prints, with its refusals
        let report = sigma_for_sensitivity(&CalibrateOptions {
            epsilon,
            delta,
            sensitivity,
            k,
            dim,
            beta: beta.unwrap_or(1.0),
            projection: projection.map(String::from),
            // only whether a seed was given matters here: it describes a mechanism
            projection_seed: seed.map(|_| String::new()),
            min_norm,
            epsilon_norm,
            radius,
            noise: noise.map(String::from),
            ..CalibrateOptions::default()
        })
        .map_err(err)?;
        return crate::to_py_json(py, &report)?
            .cast_into::<PyDict>()
            .map_err(Into::into);
    };
    if sensitivity.is_some() {
        return Err(param(
            "sensitivity",
            "is computed from the mechanism; give it only without a mechanism",
        ));
    }
    let plan = mechanism_plan(
        MechanismOptions {
            mechanism: name.to_string(),
            epsilon,
            ..Default::default()
        },
        (delta, beta, neighbour, k, projection, seed),
        (min_norm, individual_dp, epsilon_norm, radius, noise),
    )?;
    let report = mechanism_calibration(plan, dim).map_err(err)?;
    crate::to_py_json(py, &report)?
        .cast_into::<PyDict>()
        .map_err(Into::into)
}
