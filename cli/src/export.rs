//! `dprp export`: a release loaded into PostgreSQL with pgvector ([`dprp::request::export`]).

use std::path::PathBuf;

use clap::Args;

use dprp::error::Result;
use dprp::release::ReleaseSet;
use dprp::request::export::ExportRequest;

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
    let done = ExportRequest {
        url: a.postgres,
        table: a.table,
        replace: a.replace,
        index: Some(a.index),
        measure: a.measure,
    }
    .run(&set, &|| Ok(()))?;
    super::output::note(format_args!("{}", done.to_text()));
    Ok(())
}
