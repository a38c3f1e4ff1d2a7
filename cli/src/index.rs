use std::path::PathBuf;

use clap::Args;

use dprp::error::Result;
use dprp::release::Payload;
use dprp::release::ReleaseSet;
use dprp::search::hnsw::{HnswIndex, HnswParams};
use dprp::search::sharded::Concatenated;
use dprp::search::{Measure, Sketch};

#[derive(Debug, Args)]
pub struct IndexArgs {
    /// Release to index: a file, or a sharded release's directory (one index over all shards).
    release: PathBuf,
    /// Output index file.
    #[arg(short, long)]
    output: PathBuf,
    /// Replace an existing regular file at --output (without it, an existing output is refused;
    /// links, devices, pipes and sockets are always refused).
    #[arg(long)]
    overwrite: bool,
    /// Ranking the index serves: ip, cosine (default for real sketches) or hamming (signs).
    #[arg(long)]
    measure: Option<String>,
    /// HNSW: links per node.
    #[arg(long, default_value_t = 16)]
    m: usize,
    /// HNSW: search breadth while building.
    #[arg(long, default_value_t = 200)]
    ef_construction: usize,
}

pub fn run(a: IndexArgs) -> Result<()> {
    dprp::atomic::check_not_input(&a.release, &a.output)?;
    let existing = dprp::atomic::Existing::replace_if(a.overwrite);
    // refused before the build, which may take minutes
    dprp::atomic::check_file_output(&a.output, existing)?;
    let set = ReleaseSet::open(&a.release)?;
    // a local-DP release holds per-user messages, which no search reads: refused here, not
    // after the build by the first query
    set.mechanism()?.as_sketch()?;
    let k = set.k();
    // A shard directory is indexed as one graph over all its rows (copied one after the other,
    // like faiss's merged shards); the index is bound to the checksums of all shards.
    let concatenated = set
        .is_sharded()
        .then(|| Concatenated::of(&set))
        .transpose()?;
    let db = match &concatenated {
        Some(c) => c.sketch(k),
        None => {
            let r = &set.parts()[0];
            match r.meta().payload {
                Payload::F32 => Sketch::Real {
                    data: r.values()?,
                    k,
                },
                Payload::Bits => Sketch::Bits { data: r.bits()?, k },
            }
        }
    };
    let measure = match &a.measure {
        Some(s) => Measure::parse(s)?,
        None if db.is_bits() => Measure::Hamming,
        None => Measure::Cosine,
    };
    dprp::search::check_request(&db, &db, measure, 1)?;
    if a.m < 2 || a.ef_construction < a.m {
        return Err(dprp::error::Error::param(
            "--m/--ef-construction",
            "need m ≥ 2 and ef-construction ≥ m",
        ));
    }
    let params = HnswParams {
        m: a.m,
        ef_construction: a.ef_construction,
    };
    let start = std::time::Instant::now();
    // Progress on stderr when it is a terminal (rows inserted, rows/s, ETA); Ctrl-C ends the
    // build before any output exists (the file is written only once the graph is complete).
    let pb = super::query::progress_bar(db.rows() as u64, "indexing");
    let tick = |done: usize| pb.set_position(done as u64);
    let index = HnswIndex::build_with_progress(&db, measure, &params, Some(&tick))?;
    pb.finish_and_clear();
    index.save((&a.output, existing), set.checksum())?;
    super::output::report_written(&[&a.output], || {
        outln!(
            "indexed {} rows of {} ({} measure, m = {}, ef-construction = {}) in {:.1} s → {}",
            set.n(),
            a.release.display(),
            measure.name(),
            a.m,
            a.ef_construction,
            start.elapsed().as_secs_f64(),
            a.output.display()
        )
    })
}
