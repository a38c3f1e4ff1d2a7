//! `dprp._dprp`: the Python module (pyo3 + rust-numpy) over the dprp library.
//!
//! Python sees `dprp.publish`, `dprp.Release`, `dprp.calibrate`, the local-DP client/server
//! (`dprp.privatise`, `dprp.MeanAccumulator`), the distributed-DP encoder and the rounds
//! accountant (`dprp.DistributedEncoder`, `dprp.RoundsAccountant`), `dprp.eval_retrieval` and `dprp.DprpError` (re-exported by the pure-Python
//! package `python/dprp/__init__.py`, typed in `__init__.pyi`).
//!
//! Four rules hold for every function here:
//! * every [`dprp::Error`] becomes a [`DprpError`] (a `ValueError`) carrying dprp's message;
//! * no panic crosses into Python: long calls run in [`interrupt::run`], which catches panics on
//!   its worker thread, and the short ones call library functions that return errors rather than
//!   panic (a panic that escaped anyway would be turned by pyo3 into `PanicException`, not an
//!   abort);
//! * long calls (publish, search, eval_retrieval) release the GIL and answer Ctrl-C ([`interrupt`]);
//! * a bad value is a `DprpError` naming its keyword, a wrong type a `TypeError`: integer
//!   arguments are taken as [`ints::Int`], so a negative one is refused by name rather than by
//!   pyo3's bare `OverflowError`.

use pyo3::prelude::*;

mod arrays;
mod distributed;
mod eval;
mod interrupt;
mod ints;
mod ldp;
mod ledger;
mod options;
mod publish;
mod release;
mod serve;

pyo3::create_exception!(
    _dprp,
    DprpError,
    pyo3::exceptions::PyValueError,
    "An error reported by dprp (bad parameter, unreadable input, corrupt release, ...): the \
     message is dprp's own, naming what and where."
);

/// Turn a dprp error into a Python exception carrying its message, every option it names spelt
/// as this module's keyword argument (`label_column`, or `label_column=` in a sentence:
/// [`dprp::error::Front::Python`]); a missing one also says how to pass it (`missing k: projunit
/// needs the projected dimension k (keyword argument k=)`).
pub(crate) fn err(e: dprp::Error) -> PyErr {
    use dprp::error::Front;
    let hint = match (&e, e.field()) {
        (
            dprp::Error::Output {
                replaceable: true, ..
            },
            _,
        ) => " (overwrite=True replaces it)".to_string(),
        (dprp::Error::Missing { .. }, Some(key)) => {
            format!(" (keyword argument {}=)", Front::Python.name(key))
        }
        _ => String::new(),
    };
    DprpError::new_err(format!("{}{hint}", e.render(Front::Python)))
}

/// Text from the library as Python shows it: an option the library names by key (`‹min_norm›`,
/// [`dprp::error::field`]) is spelt as this module's keyword argument (`min_norm=`).
pub(crate) fn py_text(s: &str) -> String {
    dprp::error::Front::Python.render(s)
}

/// A public projection seed: a non-negative int (any size; numpy integers too) or up to 64 hex
/// digits, as `--projection-seed`. A negative int is a `DprpError` naming `seed`; another type a
/// `TypeError`.
pub(crate) fn public_seed(s: &Bound<'_, PyAny>) -> PyResult<dprp::request::Seed> {
    let text = if let Ok(t) = s.extract::<String>() {
        t
    } else if let Ok(ints::Int(v)) = s.extract::<ints::Int>() {
        if v < 0 {
            return Err(param(
                "seed",
                format!("must be a non-negative int or a hex string, got {v}"),
            ));
        }
        // Python formats an int of any size in hex
        s.call_method0("__index__")?
            .call_method1("__format__", ("x",))?
            .extract::<String>()?
    } else {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "seed: expected a non-negative int or a hex string, got {}",
            s.get_type().name()?
        )));
    };
    dprp::request::Seed::parse_hex(&text).map_err(err)
}

/// A parameter error raised from the bindings themselves, worded as dprp words its own.
pub(crate) fn param(name: &str, msg: impl std::fmt::Display) -> PyErr {
    err(dprp::Error::param(name, msg.to_string()))
}

/// Serialise `value` to JSON and parse it with Python's `json` module: dicts, lists, numbers and
/// strings exactly as `dprp info --json` prints them.
pub(crate) fn to_py_json<'py>(
    py: Python<'py>,
    value: &impl serde::Serialize,
) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(value).map_err(|e| param("metadata", e))?;
    py.import("json")?.call_method1("loads", (py_text(&text),))
}

#[pymodule]
fn _dprp(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("DprpError", m.py().get_type::<DprpError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(publish::publish, m)?)?;
    m.add_function(wrap_pyfunction!(publish::calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(publish::finish_shards, m)?)?;
    m.add_class::<release::Release>()?;
    m.add_class::<ledger::LedgerGate>()?;
    m.add_function(wrap_pyfunction!(ledger::fingerprint_part, m)?)?;
    m.add_function(wrap_pyfunction!(ldp::privatise, m)?)?;
    m.add_class::<ldp::MeanAccumulator>()?;
    m.add_class::<distributed::DistributedEncoder>()?;
    m.add_class::<distributed::RoundsAccountant>()?;
    m.add_function(wrap_pyfunction!(eval::eval_retrieval, m)?)?;
    m.add_function(wrap_pyfunction!(serve::redact_postgres_url, m)?)?;
    Ok(())
}
