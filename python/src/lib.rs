//! `dprp._dprp`: the Python module (pyo3 + rust-numpy) over the dprp library.
//!
//! Python sees `dprp.publish`, `dprp.Release`, `dprp.calibrate`, the local-DP client/server
//! (`dprp.privatise`, `dprp.MeanAccumulator`), `dprp.eval_retrieval` and `dprp.DprpError` (re-exported by the pure-Python
//! package `python/dprp/__init__.py`, typed in `__init__.pyi`).
//!
//! Three rules hold for every function here:
//! * every [`dprp::Error`] becomes a [`DprpError`] (a `ValueError`) carrying dprp's message;
//! * no panic crosses into Python: long calls run in [`interrupt::run`], which catches panics on
//!   its worker thread, and the short ones call library functions that return errors rather than
//!   panic (a panic that escaped anyway would be turned by pyo3 into `PanicException`, not an
//!   abort);
//! * long calls (publish, search, eval_retrieval) release the GIL and answer Ctrl-C ([`interrupt`]).

use pyo3::prelude::*;

mod arrays;
mod eval;
mod interrupt;
mod ldp;
mod publish;
mod release;

pyo3::create_exception!(
    _dprp,
    DprpError,
    pyo3::exceptions::PyValueError,
    "An error reported by dprp (bad parameter, unreadable input, corrupt release, ...): the \
     message is dprp's own, naming what and where."
);

/// Turn a dprp error into a Python exception carrying its message. A parameter named by its
/// command-line flag (`--label-column`) is named as the keyword argument (`label_column`).
pub(crate) fn err(e: dprp::Error) -> PyErr {
    let e = match e {
        dprp::Error::Param { name, msg } => dprp::Error::Param {
            name: keyword(name),
            msg,
        },
        dprp::Error::Missing { name, msg } => dprp::Error::Missing {
            name: keyword(name),
            msg,
        },
        other => other,
    };
    DprpError::new_err(keywords_in_text(&e.to_string()))
}

/// Messages that name the CLI flag a value came from ("column 'x' (given with --label-column)")
/// name the keyword instead ("given as label_column="), so Python users see their own spelling.
fn keywords_in_text(msg: &str) -> String {
    const FROM: &str = "given with --";
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(i) = rest.find(FROM) {
        out.push_str(&rest[..i]);
        let after = &rest[i + FROM.len()..];
        let end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(after.len());
        out.push_str("given as ");
        out.push_str(&after[..end].replace('-', "_"));
        out.push('=');
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// `--label-column` → `label_column`; other names unchanged.
fn keyword(name: String) -> String {
    match name.strip_prefix("--") {
        Some(flag) if flag.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') => {
            flag.replace('-', "_")
        }
        _ => name,
    }
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
    py.import("json")?.call_method1("loads", (text,))
}

#[pymodule]
fn _dprp(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("DprpError", m.py().get_type::<DprpError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(publish::publish, m)?)?;
    m.add_function(wrap_pyfunction!(publish::calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(publish::finish_shards, m)?)?;
    m.add_class::<release::Release>()?;
    m.add_function(wrap_pyfunction!(ldp::privatise, m)?)?;
    m.add_class::<ldp::MeanAccumulator>()?;
    m.add_function(wrap_pyfunction!(eval::eval_retrieval, m)?)?;
    Ok(())
}
