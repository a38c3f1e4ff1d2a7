//! `dprp project`: raw query vectors put through a release's public scaling and map, written for
//! a database that holds the release's sketches ([`dprp::request::project`]).

use std::path::PathBuf;

use clap::Args;

use dprp::error::Result;
use dprp::release::{Payload, ReleaseSet};
use dprp::request::project::{fingerprint, Projected};

#[derive(Debug, Args)]
pub struct ProjectArgs {
    /// Release whose public scaling and map to apply.
    release: PathBuf,
    /// Raw query vectors (any supported input format), of the release's input dimension.
    #[arg(long)]
    queries: PathBuf,
    /// Parquet queries: the column holding the vectors (default: the file's only list column).
    #[arg(long, value_name = "NAME")]
    column: Option<String>,
    /// Output: .npy (float32 rows × k, or uint64 rows × ⌈k/64⌉ packed signs for a sign release)
    /// or .parquet (id, sketch: the release's own schema, with its fingerprint).
    #[arg(short, long)]
    output: PathBuf,
    /// Replace an existing regular file at --output (without it, an existing output is refused;
    /// links, devices, pipes and sockets are always refused).
    #[arg(long)]
    overwrite: bool,
    /// Do not apply the public scaling recorded in the release (--scale, --normalize, --clip);
    /// use when the queries are already on the release's scale.
    #[arg(long)]
    no_scale: bool,
}

pub fn run(a: ProjectArgs) -> Result<()> {
    dprp::atomic::check_file_output(&a.output, dprp::atomic::Existing::replace_if(a.overwrite))?;
    let set = ReleaseSet::open(&a.release)?;
    let meta = set.meta();
    let m = set.mechanism()?;
    let raw = super::query::read_file(&a.queries, a.column.as_deref())?;
    let pr = Projected::new(meta, m.as_ref(), raw, "--queries", a.no_scale)?;
    super::query::note_applied(&pr.applied);
    let existing = dprp::atomic::Existing::replace_if(a.overwrite);
    pr.write((&a.output, existing), &fingerprint(&set), "--output")?;
    super::output::note(format_args!(
        "projected {} queries to {} {} per row for release {} → {}",
        pr.rows,
        pr.width(),
        match pr.payload() {
            Payload::F32 => "float32 values",
            Payload::Bits => "packed sign words (uint64)",
        },
        &fingerprint(&set)[..16],
        a.output.display()
    ));
    Ok(())
}
