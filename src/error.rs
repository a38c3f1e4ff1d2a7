//! One error type for the library. Every variant names *what* is wrong and *where* (file, row,
//! column, line or option), so the CLI can print it verbatim and exit non-zero.
//!
//! Positions follow one convention, stated in every message: rows, columns and features of a
//! dataset are counted from 0 (as release row ids, `--rows` and `--label-column` are); a text
//! file's lines are counted from 1, as editors and `sed -n` number them, and are called "line N of
//! the file".

use std::path::PathBuf;

/// Result alias used throughout dprp.
pub type Result<T> = std::result::Result<T, Error>;

/// The front end a request came from, for naming options in refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    /// The `dprp` command: `--first-row`.
    Cli,
    /// The Python module: `first_row`.
    Python,
}

impl Front {
    /// The option `name` (snake case) as this front end spells it.
    pub fn field(self, name: &str) -> String {
        match self {
            Front::Cli => format!("--{}", name.replace('_', "-")),
            // the module's publish() calls the projection seed `seed`
            Front::Python if name == "projection_seed" => "seed".to_string(),
            Front::Python => name.to_string(),
        }
    }
}

/// Everything that can go wrong in dprp. No path reachable from user input panics; it returns one
/// of these instead.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The operating system refused an operation on a file.
    #[error("{path}: {source}")]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An output path dprp will not write: an existing file it may not replace, a link, a device,
    /// a pipe, a socket, a directory where a file is meant. The front ends add how to allow a
    /// replacement when `replaceable` (`--overwrite`, `overwrite=True`).
    #[error("{path}: {msg}")]
    Output {
        /// The output path.
        path: PathBuf,
        /// What is there and why it is not written.
        msg: String,
        /// Whether leave to replace an existing file would let the output be written.
        replaceable: bool,
    },
    /// A file's contents do not match its format (bad magic, truncated, ragged rows, ...).
    #[error("{path}: {msg}")]
    Format {
        /// The file involved.
        path: PathBuf,
        /// What is wrong and where (line, row, byte offset).
        msg: String,
    },
    /// A value outside the mechanism's data domain (or NaN/inf).
    #[error("{path}: row {row}, column {col} (counted from 0): {msg}")]
    Value {
        /// The file involved.
        path: PathBuf,
        /// Zero-based row index.
        row: u64,
        /// Zero-based column index.
        col: u64,
        /// What is wrong with the value.
        msg: String,
    },
    /// A whole row is unacceptable (e.g. its norm is below the public bound).
    #[error("{path}: row {row} (counted from 0): {msg}")]
    Row {
        /// The file involved.
        path: PathBuf,
        /// Zero-based row index.
        row: u64,
        /// What is wrong with the row.
        msg: String,
    },
    /// A parameter (command-line option or API argument) is invalid.
    #[error("invalid {name}: {msg}")]
    Param {
        /// Name of the parameter, e.g. `--epsilon`.
        name: String,
        /// Why it is invalid.
        msg: String,
    },
    /// A required option (or an explicit acknowledgement such as `--individual-dp`) is missing.
    #[error("missing {name}: {msg}")]
    Missing {
        /// Name of the option, e.g. `--delta`.
        name: String,
        /// Why it is needed.
        msg: String,
    },
    /// A release file failed an integrity or consistency check.
    #[error("{path}: corrupt release: {msg}")]
    Corrupt {
        /// The file involved.
        path: PathBuf,
        /// What check failed.
        msg: String,
    },
    /// The privacy budget ledger refused a release, or cannot account for one.
    #[error("ledger {path}: {msg}")]
    Ledger {
        /// The ledger directory.
        path: PathBuf,
        /// What was refused and why (the budget and the total, or the file that could not be read).
        msg: String,
    },
    /// A database server could not be reached, or refused a step of an export (`dprp export
    /// --postgres`); the connection string is redacted.
    #[error("PostgreSQL at {target}: {step} failed: {msg}")]
    Database {
        /// The connection string, its passwords masked.
        target: String,
        /// The step that failed: resolve, connect, TLS, authenticate, COPY, ….
        step: String,
        /// What happened (the server's message, the system's error).
        msg: String,
    },
    /// `dprp audit` found an empirical lower bound on ε above the claim.
    #[error("audit: {msg}")]
    Audit {
        /// Which mechanism, which bound, which event.
        msg: String,
    },
}

impl Error {
    /// The message without the parameter prefix (`invalid X: `), for errors re-reported in
    /// another context (e.g. under a file name).
    pub fn detail(&self) -> String {
        match self {
            Error::Param { msg, .. } => msg.clone(),
            other => other.to_string(),
        }
    }

    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
    /// An output path that is not written ([`Error::Output`]).
    pub fn output(path: impl Into<PathBuf>, msg: impl Into<String>, replaceable: bool) -> Self {
        Error::Output {
            path: path.into(),
            msg: msg.into(),
            replaceable,
        }
    }
    /// A format error in `path`.
    pub fn format(path: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        Error::Format {
            path: path.into(),
            msg: msg.into(),
        }
    }
    /// An invalid parameter.
    pub fn param(name: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Param {
            name: name.into(),
            msg: msg.into(),
        }
    }
    /// A missing option.
    pub fn missing(name: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Missing {
            name: name.into(),
            msg: msg.into(),
        }
    }
    /// A refusal of the privacy budget ledger in `dir`.
    pub fn ledger(dir: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        Error::Ledger {
            path: dir.into(),
            msg: msg.into(),
        }
    }
    /// A failed step of talking to a database (`target` already redacted).
    pub fn database(
        target: impl Into<String>,
        step: impl Into<String>,
        msg: impl Into<String>,
    ) -> Self {
        Error::Database {
            target: target.into(),
            step: step.into(),
            msg: msg.into(),
        }
    }
    /// An audit's finding of a violated claim.
    pub fn audit(msg: impl Into<String>) -> Self {
        Error::Audit { msg: msg.into() }
    }
    /// A corrupt release file.
    pub fn corrupt(path: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        Error::Corrupt {
            path: path.into(),
            msg: msg.into(),
        }
    }
}
