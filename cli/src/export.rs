//! `dprp export`: a release loaded into PostgreSQL with pgvector ([`dprp::export::postgres`]).

use std::path::PathBuf;

use clap::Args;

use dprp::error::{Error, Result};
use dprp::export::measure_name;
use dprp::export::postgres::{export, measure_for, redact, ExportOptions};
use dprp::release::ReleaseSet;

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Release to load (a file or a shard directory).
    release: PathBuf,
    /// The database: a libpq URL or connection string, e.g.
    /// postgresql://user@/db?host=/var/run/postgresql (a socket directory) or
    /// postgresql://user:password@host:5432/db?sslmode=verify-full (TLS: sslmode, sslrootcert;
    /// connect_timeout, default 15 s). Passwords are masked in every message.
    #[arg(long, value_name = "URL")]
    postgres: String,
    /// The table to create: `name` or `schema.name` (lower-case letters, digits, _; not a
    /// PostgreSQL keyword such as user or order).
    #[arg(long)]
    table: String,
    /// Drop an existing table of that name first (in the same transaction: if the export fails,
    /// the old table stays).
    #[arg(long)]
    replace: bool,
    /// Build an index after loading: hnsw (pgvector's), or none.
    #[arg(long, default_value = "none")]
    index: String,
    /// The measure the table is searched and indexed by: ip or cosine (real sketches; default
    /// cosine), hamming (sign sketches).
    #[arg(long)]
    measure: Option<String>,
}

pub fn run(a: ExportArgs) -> Result<()> {
    let set = ReleaseSet::open(&a.release)?;
    let hnsw = match a.index.as_str() {
        "hnsw" => true,
        "none" => false,
        o => {
            return Err(Error::param(
                "--index",
                format!("unknown index '{o}' (expected hnsw or none)"),
            ))
        }
    };
    let o = ExportOptions {
        url: a.postgres.clone(),
        table: a.table.clone(),
        replace: a.replace,
        hnsw,
        measure: measure_for(&set, a.measure.as_deref())?,
    };
    let done = export(&set, &o, &|| Ok(()))?;
    let s = &done.stamp;
    let rate = s.rows as f64 / done.copy_seconds.max(1e-9);
    super::output::note(format_args!(
        "exported {} rows (k = {}, {}) to table {} at {} in {:.2} s ({:.0} rows/s loading{}); \
         release fingerprint {} stored as the table's comment",
        s.rows,
        s.k,
        measure_name(o.measure),
        o.table,
        redact(&o.url),
        done.total_seconds,
        rate,
        if done.hnsw {
            ", then an HNSW index"
        } else {
            ""
        },
        &s.fingerprint[..16]
    ));
    Ok(())
}
