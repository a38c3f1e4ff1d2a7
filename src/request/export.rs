//! `dprp export` and `Release.to_postgres`: a release loaded into PostgreSQL with pgvector
//! ([`crate::export::postgres`]) from options as a user gives them, and the summary of what was
//! loaded. Feature `postgres`.

use crate::error::{field, Error, Result};
use crate::export::measure_name;
use crate::export::postgres::{export, measure_for, ExportOptions, Exported};
use crate::release::ReleaseSet;

pub use crate::export::postgres::redact;

/// The options of an export; `None` where the user gave nothing.
#[derive(Debug, Clone, Default)]
pub struct ExportRequest {
    /// A libpq connection string or URL.
    pub url: String,
    /// The table: `name` or `schema.name`.
    pub table: String,
    /// Drop a table of that name first (in the same transaction).
    pub replace: bool,
    /// `hnsw` (pgvector's HNSW index after loading) or `none` (the default).
    pub index: Option<String>,
    /// `ip` or `cosine` (real sketches; default cosine), `hamming` (signs).
    pub measure: Option<String>,
}

/// What an export did, with the options it ran with.
#[derive(Debug, Clone)]
pub struct ExportDone {
    /// The stamp stored, whether an index was built, the times.
    pub exported: Exported,
    /// The options, checked.
    pub options: ExportOptions,
}

impl ExportRequest {
    /// The options checked against the release (the index named, the measure fitting its
    /// payload), before anything is sent.
    pub fn options(&self, set: &ReleaseSet) -> Result<ExportOptions> {
        let hnsw = match self.index.as_deref() {
            None | Some("none") => false,
            Some("hnsw") => true,
            Some(o) => {
                return Err(Error::param(
                    field("index"),
                    format!("unknown index '{o}' (expected hnsw or none)"),
                ))
            }
        };
        Ok(ExportOptions {
            url: self.url.clone(),
            table: self.table.clone(),
            replace: self.replace,
            hnsw,
            measure: measure_for(set, self.measure.as_deref())?,
        })
    }

    /// Load `set` in one transaction (an error, or `cancel` returning an error, leaves no table).
    pub fn run(&self, set: &ReleaseSet, cancel: &dyn Fn() -> Result<()>) -> Result<ExportDone> {
        let options = self.options(set)?;
        let exported = export(set, &options, cancel)?;
        Ok(ExportDone { exported, options })
    }
}

impl ExportDone {
    /// One line: rows, k, measure, table, the database (passwords masked), times, the
    /// fingerprint stored.
    pub fn to_text(&self) -> String {
        let (s, o) = (&self.exported.stamp, &self.options);
        let rate = s.rows as f64 / self.exported.copy_seconds.max(1e-9);
        format!(
            "exported {} rows (k = {}, {}) to table {} at {} in {:.2} s ({:.0} rows/s loading{}); \
             release fingerprint {} stored as the table's comment",
            s.rows,
            s.k,
            measure_name(o.measure),
            o.table,
            redact(&o.url),
            self.exported.total_seconds,
            rate,
            if self.exported.hnsw {
                ", then an HNSW index"
            } else {
                ""
            },
            &s.fingerprint[..16.min(s.fingerprint.len())]
        )
    }
}
