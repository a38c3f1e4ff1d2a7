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

/// The front end a message is shown by, for spelling the options it names.
///
/// Below the front ends a message names an option by its key, marked with [`field`]
/// (`‹min_norm›`, or `‹noise float›` with a value); [`Front::render`] spells every marked key the
/// way its reader writes it, and [`Error::render`] does so for a whole error. `Display` on
/// [`Error`] uses [`Front::Rust`], so a Rust caller never sees a marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    /// The `dprp` command: `--first-row`, `--noise float`.
    Cli,
    /// The Python module: `first_row` as a parameter's name, `first_row=` in a sentence,
    /// `noise='float'` with a value.
    Python,
    /// The Rust library: the option's field name, `first_row`, `noise = float`.
    Rust,
}

/// The marks around an option's key in a message ([`field`]).
pub const FIELD_MARKS: (char, char) = ('‹', '›');

/// Every option key a library message may mark ([`field`]): each is a flag of the `dprp`
/// command (`--key` with `-` for `_`), which the command's tests check, and a test of the
/// library fails on a marked key missing here.
pub const OPTION_KEYS: &[&str] = &[
    "all",
    "beta",
    "bits",
    "bits_per_parameter",
    "budget",
    "clip",
    "clip_norm",
    "column",
    "cosine",
    "delta",
    "dim",
    "ef",
    "ef_construction",
    "epsilon",
    "epsilon_norm",
    "first_row",
    "format",
    "id_column",
    "index",
    "individual_dp",
    "k",
    "label_column",
    "labels",
    "ledger",
    "m",
    "measure",
    "mechanism",
    "mechanisms",
    "memory",
    "min_norm",
    "miscalibrate",
    "neighbour",
    "noise",
    "noise_seed",
    "norm_u",
    "norm_v",
    "normalize",
    "out",
    "output",
    "output_format",
    "p",
    "pipeline",
    "postgres",
    "preset",
    "projection",
    "projection_seed",
    "queries",
    "query_mode",
    "radius",
    "repeat",
    "replace",
    "scale",
    "seed",
    "sensitivity",
    "shard",
    "shards",
    "synthetic",
    "table",
    "test",
    "top",
    "train",
    "trials",
    "users",
];

/// `key` (snake case, as the Rust options structs spell it) marked as an option for each front
/// end to spell: `field("min_norm")` is `‹min_norm›`, shown as `--min-norm` by the command and
/// `min_norm` by Python. A message literal may write the marks itself (`"raise ‹memory›"`); a key
/// followed by a space and a value (`‹noise float›`) names the option with that value.
pub fn field(key: &str) -> String {
    format!("{}{key}{}", FIELD_MARKS.0, FIELD_MARKS.1)
}

impl Front {
    /// The option `key` as this front end names a parameter: `--first-row`, `first_row`.
    pub fn name(self, key: &str) -> String {
        match self {
            Front::Cli => format!("--{}", key.replace('_', "-")),
            // the module's publish() calls the projection seed `seed`
            Front::Python if key == "projection_seed" => "seed".to_string(),
            Front::Python | Front::Rust => key.to_string(),
        }
    }

    /// The option `key`, with `value` when given, as a sentence names it: `--noise float`,
    /// `noise='float'`, `noise = float`; without a value Python writes `noise=`.
    fn mention(self, key: &str, value: Option<&str>) -> String {
        let name = self.name(key);
        match (self, value) {
            (Front::Cli, None) | (Front::Rust, None) => name,
            (Front::Cli, Some(v)) => format!("{name} {v}"),
            (Front::Python, None) => format!("{name}="),
            (Front::Python, Some(v)) if v.parse::<f64>().is_ok() => format!("{name}={v}"),
            (Front::Python, Some(v)) => format!("{name}='{v}'"),
            (Front::Rust, Some(v)) => format!("{name} = {v}"),
        }
    }

    /// `text` with every marked option ([`field`]) spelt for this front end, as a sentence
    /// names it. Text without marks is returned unchanged.
    pub fn render(self, text: &str) -> String {
        self.render_with(text, |key, value| self.mention(key, value))
    }

    /// `text` as a parameter's name: a marked option alone is named (`first_row`, not
    /// `first_row=`); anything else is rendered as a sentence.
    pub fn render_name(self, text: &str) -> String {
        match marked_key(text) {
            Some(key) => self.name(key),
            None => self.render(text),
        }
    }

    fn render_with(self, text: &str, spell: impl Fn(&str, Option<&str>) -> String) -> String {
        let (open, close) = FIELD_MARKS;
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(i) = rest.find(open) {
            let after = &rest[i + open.len_utf8()..];
            let Some(j) = after.find(close) else { break };
            out.push_str(&rest[..i]);
            let inner = &after[..j];
            let (key, value) = match inner.split_once(' ') {
                Some((k, v)) => (k, Some(v)),
                None => (inner, None),
            };
            let end = i + open.len_utf8() + j + close.len_utf8();
            if is_key(key) {
                out.push_str(&spell(key, value));
            } else {
                out.push_str(&rest[i..end]); // not a marked option: left as written
            }
            rest = &rest[end..];
        }
        out.push_str(rest);
        out
    }
}

/// Whether `key` is spelt as an option's key: snake case, starting with a letter.
fn is_key(key: &str) -> bool {
    key.starts_with(|c: char| c.is_ascii_lowercase())
        && key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Text written into a file — a release's statement, an evaluation's or an audit's report —
/// with the options it names spelt as the command's flags (`--noise-seed`). Such a file is read
/// apart from the front end that made it, and the command's flags are the spelling the project
/// documents everywhere (the release format's goldens fix it): one spelling for every file,
/// whichever front end wrote it.
pub fn in_files(text: &str) -> String {
    Front::Cli.render(text)
}

/// The key of `text` when it is one marked option and nothing else (`‹epsilon›` → `epsilon`).
fn marked_key(text: &str) -> Option<&str> {
    let inner = text
        .strip_prefix(FIELD_MARKS.0)?
        .strip_suffix(FIELD_MARKS.1)?;
    is_key(inner).then_some(inner)
}

/// Everything that can go wrong in dprp. No path reachable from user input panics; it returns one
/// of these instead.
#[derive(Debug)]
pub enum Error {
    /// The operating system refused an operation on a file.
    Io {
        /// The file involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An output path dprp will not write: an existing file it may not replace, a link, a device,
    /// a pipe, a socket, a directory where a file is meant. The front ends add how to allow a
    /// replacement when `replaceable` (`--overwrite`, `overwrite=True`).
    Output {
        /// The output path.
        path: PathBuf,
        /// What is there and why it is not written.
        msg: String,
        /// Whether leave to replace an existing file would let the output be written.
        replaceable: bool,
    },
    /// A file's contents do not match its format (bad magic, truncated, ragged rows, ...).
    Format {
        /// The file involved.
        path: PathBuf,
        /// What is wrong and where (line, row, byte offset).
        msg: String,
    },
    /// A value outside the mechanism's data domain (or NaN/inf).
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
    Row {
        /// The file involved.
        path: PathBuf,
        /// Zero-based row index.
        row: u64,
        /// What is wrong with the row.
        msg: String,
    },
    /// A parameter (command-line option or API argument) is invalid.
    Param {
        /// Name of the parameter: an option's key marked with [`field`] (`‹epsilon›`, see
        /// [`Error::field`]), or a noun (`release`, `dimension d`).
        name: String,
        /// Why it is invalid.
        msg: String,
    },
    /// A required option (or an explicit acknowledgement such as `--individual-dp`) is missing.
    Missing {
        /// Name of the option: its key marked with [`field`] (`‹delta›`), or a noun.
        name: String,
        /// Why it is needed.
        msg: String,
    },
    /// A release file failed an integrity or consistency check.
    Corrupt {
        /// The file involved.
        path: PathBuf,
        /// What check failed.
        msg: String,
    },
    /// The privacy budget ledger refused a release, or cannot account for one.
    Ledger {
        /// The ledger directory.
        path: PathBuf,
        /// What was refused and why (the budget and the total, or the file that could not be read).
        msg: String,
    },
    /// A database server could not be reached, or refused a step of an export (`dprp export
    /// --postgres`); the connection string is redacted.
    Database {
        /// The connection string, its passwords masked.
        target: String,
        /// The step that failed: resolve, connect, TLS, authenticate, COPY, ….
        step: String,
        /// What happened (the server's message, the system's error).
        msg: String,
    },
    /// `dprp audit` found an empirical lower bound on ε above the claim.
    Audit {
        /// Which mechanism, which bound, which event.
        msg: String,
    },
}

impl std::fmt::Display for Error {
    /// The message as a Rust caller reads it: options named by their fields ([`Front::Rust`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(Front::Rust))
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl Error {
    /// The whole message with every option it names spelt for `front`: `invalid --epsilon: …`
    /// for the command, `invalid epsilon: …` for Python and Rust.
    pub fn render(&self, front: Front) -> String {
        self.compose(&|s| front.render(s), &|s| front.render_name(s))
    }

    /// The message, its sentences passed through `text` and an option's name through `name`.
    fn compose(&self, text: &dyn Fn(&str) -> String, name: &dyn Fn(&str) -> String) -> String {
        match self {
            Error::Io { path, source } => format!("{}: {source}", path.display()),
            Error::Output { path, msg, .. } | Error::Format { path, msg } => {
                format!("{}: {}", path.display(), text(msg))
            }
            Error::Value {
                path,
                row,
                col,
                msg,
            } => format!(
                "{}: row {row}, column {col} (counted from 0): {}",
                path.display(),
                text(msg)
            ),
            Error::Row { path, row, msg } => {
                format!(
                    "{}: row {row} (counted from 0): {}",
                    path.display(),
                    text(msg)
                )
            }
            Error::Param { name: n, msg } => format!("invalid {}: {}", name(n), text(msg)),
            Error::Missing { name: n, msg } => format!("missing {}: {}", name(n), text(msg)),
            Error::Corrupt { path, msg } => {
                format!("{}: corrupt release: {}", path.display(), text(msg))
            }
            Error::Ledger { path, msg } => format!("ledger {}: {}", path.display(), text(msg)),
            Error::Database { target, step, msg } => {
                format!("PostgreSQL at {target}: {step} failed: {}", text(msg))
            }
            Error::Audit { msg } => format!("audit: {}", text(msg)),
        }
    }

    /// The option this error names, by key, when it is a refused or missing option
    /// (`Some("epsilon")` for `invalid ‹epsilon›: …`); `None` for other errors and for
    /// parameters named by a noun.
    pub fn field(&self) -> Option<&str> {
        match self {
            Error::Param { name, .. } | Error::Missing { name, .. } => marked_key(name),
            _ => None,
        }
    }

    /// The message without the parameter prefix (`invalid X: `), for errors re-reported in
    /// another context (e.g. under a file name); options stay marked, so the front end that
    /// shows the outer message spells them.
    pub fn detail(&self) -> String {
        match self {
            Error::Param { msg, .. } => msg.clone(),
            other => other.marked(),
        }
    }

    /// The whole message with its options still marked, for embedding in another message.
    pub fn marked(&self) -> String {
        self.compose(&str::to_string, &str::to_string)
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
