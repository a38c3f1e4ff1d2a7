//! Long calls with the GIL released, and Ctrl-C.
//!
//! The CLI answers SIGINT by removing pending outputs and exiting the process
//! (`install_signal_handlers` in the command's crate, `cli/src/output.rs`); a Python module must not exit its host, and
//! only Python's main thread, holding the GIL, can see that a signal arrived
//! (`PyErr_CheckSignals`). So a long call runs its work on a worker thread while the calling
//! thread, with the GIL released, waits for it and every [`POLL`] re-takes the GIL briefly to
//! check for signals. When one arrived (a `KeyboardInterrupt`, or whatever the Python handler
//! raised), the shared cancel flag is set; the work checks it between chunks (publish: in the row
//! reader, so the pipeline stops with an error and the release writer's temporary file is removed;
//! search: between query batches), and the exception is raised once the worker has stopped.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use pyo3::prelude::*;

/// How often the waiting thread checks for signals.
pub const POLL: Duration = Duration::from_millis(20);

/// The message of the error the work returns when it sees the cancel flag.
pub const CANCELLED: &str = "interrupted (KeyboardInterrupt)";

/// A cancellation flag shared by the waiting thread and the work.
#[derive(Default)]
pub struct Cancel(AtomicBool);

impl Cancel {
    /// Whether the call was interrupted.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
    /// `Err` once the call was interrupted: for the work to stop at its next check.
    pub fn check(&self) -> dprp::Result<()> {
        if self.is_set() {
            Err(dprp::Error::param("call", CANCELLED))
        } else {
            Ok(())
        }
    }
}

/// How a long call ended.
pub enum Outcome<T> {
    /// The work finished (successfully or not) without a signal.
    Done(T),
    /// A signal handler raised `exc` while the work ran; the work stopped (or finished) with
    /// `result`, which the caller may need to undo.
    Interrupted { exc: PyErr, result: Option<T> },
}

/// Run `work` on a worker thread with the GIL released, checking for signals every [`POLL`]. A
/// panic in `work` becomes a `DprpError` rather than crossing into Python.
pub fn run<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&Cancel) -> T + Send,
) -> PyResult<Outcome<T>> {
    let cancel = Cancel::default();
    let (result, exc) = py.detach(|| {
        std::thread::scope(|s| {
            let (tx, rx) = mpsc::channel();
            let cancel = &cancel;
            s.spawn(move || {
                let r = catch_unwind(AssertUnwindSafe(|| work(cancel)));
                let _ = tx.send(r);
            });
            let mut exc: Option<PyErr> = None;
            loop {
                match rx.recv_timeout(POLL) {
                    Ok(r) => break (r.ok(), exc),
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if exc.is_none() {
                            if let Err(e) = Python::attach(|py| py.check_signals()) {
                                cancel.0.store(true, Ordering::Relaxed);
                                exc = Some(e);
                            }
                        }
                    }
                    // the worker ended without sending: it cannot, it sends after catch_unwind
                    Err(mpsc::RecvTimeoutError::Disconnected) => break (None, exc),
                }
            }
        })
    });
    match (result, exc) {
        (result, Some(exc)) => Ok(Outcome::Interrupted { exc, result }),
        (Some(r), None) => Ok(Outcome::Done(r)),
        (None, None) => Err(crate::DprpError::new_err(
            "internal error: the work panicked (please report this as a dprp bug)",
        )),
    }
}
