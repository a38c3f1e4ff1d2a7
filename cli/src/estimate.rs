use std::path::PathBuf;

use clap::Args;

use dprp::error::{Error, Result};
use dprp::release::ReleaseSet;
use dprp::request::estimate::EstimateRequest;

#[derive(Debug, Args)]
pub struct EstimateArgs {
    /// Release file.
    release: PathBuf,
    /// Row indices: `I,J` for one pair of released rows, or with --query-vector the rows to
    /// compare the query against (`J` or `J1,J2,...`).
    #[arg(long, value_delimiter = ',', required = true)]
    rows: Vec<usize>,
    /// A raw vector (first row of any supported input file) projected with the release's public
    /// map and compared, without noise on its side, to each of --rows.
    #[arg(long)]
    query_vector: Option<PathBuf>,
    /// A Parquet --query-vector file: the column holding the vectors (default: the file's only
    /// list column).
    #[arg(long, value_name = "NAME", requires = "query_vector")]
    column: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// With --query-vector: do not apply the public scaling recorded in the release.
    #[arg(long)]
    no_scale: bool,
}

pub fn run(a: EstimateArgs) -> Result<()> {
    let r = ReleaseSet::open(&a.release)?;
    let m = r.mechanism()?;
    let req = EstimateRequest::new(&r, m.as_ref(), &a.rows)?;
    let estimates = match &a.query_vector {
        None => req.pair()?,
        Some(qpath) => {
            let mut q = dprp::request::query::first_query(qpath, a.column.as_deref())?;
            let applied = q.scale_for(r.meta(), "--query-vector", a.no_scale)?;
            super::query::note_applied(&applied);
            req.query(&q.values[..q.p], &qpath.display().to_string())?
        }
    };
    if a.json {
        let v = serde_json::to_string_pretty(&estimates.to_json())
            .map_err(|e| Error::param("--json", e.to_string()))?;
        outln!("{v}")
    } else {
        super::output::print_str(&estimates.to_text())
    }
}
