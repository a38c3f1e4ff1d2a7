use std::path::PathBuf;

use clap::Args;

use dprp::error::{Error, Result};
use dprp::request::rows::{read_all, Scaling};

use dprp::release::{Mechanism, Payload, ReleaseMeta, ReleaseSet};
use dprp::request::project::QuerySketches;
use dprp::request::query::{release_queries, RawQueries, ZERO_QUERY_NOTE};
use dprp::request::search::{self, Search, Searcher};
use dprp::search::hnsw::HnswIndex;
use dprp::search::{Hit, Measure, Sketch};

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// Release to search.
    release: PathBuf,
    /// Query vectors (any supported input format) or, with --query-mode release, another release
    /// made with the same public projection.
    #[arg(long)]
    queries: PathBuf,
    /// Parquet queries: the column holding the vectors (default: the file's only list column).
    #[arg(long, value_name = "NAME")]
    column: Option<String>,
    /// Number of neighbours per query.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Ranking: ip, cosine (default for real sketches) or hamming (sign sketches).
    #[arg(long)]
    measure: Option<String>,
    /// raw: project the query vectors with the release's public map (default); release: the
    /// queries are rows of another release.
    #[arg(long, default_value = "raw")]
    query_mode: String,
    /// Search an HNSW index built by `dprp index` instead of scanning exactly.
    #[arg(long)]
    index: Option<PathBuf>,
    /// HNSW search breadth: larger is slower and finds more of the exact top-K (default
    /// max(64, 2·top), max(128, 2·top) for ip; --check-recall measures what a value gives).
    #[arg(long)]
    ef: Option<usize>,
    /// Also run the exact scan and report recall@K of the index on stderr.
    #[arg(long)]
    check_recall: bool,
    /// Output JSON.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Output CSV.
    #[arg(long)]
    csv: bool,
    /// Memory budget for results in MiB: queries are searched and printed in batches whose
    /// results fit in it.
    #[arg(long, value_name = "MiB", default_value_t = 256)]
    memory: usize,
    /// Raw queries: do not apply the public scaling recorded in the release (--scale, --normalize,
    /// --clip); use when the queries are already on the release's scale.
    #[arg(long)]
    no_scale: bool,
}

/// Queries prepared as sketches, with their ids.
pub struct Prepared {
    /// Real values or packed words.
    pub real: Vec<f32>,
    /// Packed words.
    pub bits: Vec<u64>,
    /// Id of each query.
    pub ids: Vec<u64>,
    /// Each query is a zero vector (raw queries; its cosine or sign ranking is undefined).
    pub zero: Vec<bool>,
}

impl Prepared {
    fn new(sketches: QuerySketches, ids: Vec<u64>, zero: Vec<bool>) -> Prepared {
        let zero = if zero.is_empty() {
            vec![false; ids.len()]
        } else {
            zero
        };
        match sketches {
            QuerySketches::Real(real) => Prepared {
                real,
                bits: Vec::new(),
                ids,
                zero,
            },
            QuerySketches::Bits(bits) => Prepared {
                real: Vec::new(),
                bits,
                ids,
                zero,
            },
        }
    }
}

/// The query vectors of a file, as given; `column` names a Parquet file's vector column (`None`:
/// its only list column).
pub fn read_file(path: &std::path::Path, column: Option<&str>) -> Result<RawQueries> {
    let q = read_all(path, &dprp::request::query::query_input(column))?;
    Ok(RawQueries {
        values: q.values,
        p: q.p,
        scaling: q.scaling,
        file: Some(path.to_path_buf()),
    })
}

/// Say on stderr which scaling steps were applied to the queries.
pub fn note_applied(applied: &Scaling) {
    if !applied.0.is_empty() {
        super::output::note(format_args!(
            "note: queries scaled as the release's rows were: {} (--no-scale to opt out)",
            applied.describe()
        ));
    }
}

/// Project raw query vectors with the release's public map ([`RawQueries::sketch_for`]).
pub fn prepare_raw(
    r: &ReleaseMeta,
    m: &dyn Mechanism,
    (path, column): (&std::path::Path, Option<&str>),
    no_scale: bool,
) -> Result<Prepared> {
    let q = read_file(path, column)?;
    let ids = (0..q.n() as u64).collect();
    let zero = dprp::request::query::zero_queries(&q.values, q.p);
    let (sketches, applied) = q.sketch_for(r, m, "--queries", no_scale)?;
    note_applied(&applied);
    Ok(Prepared::new(sketches, ids, zero))
}

/// A progress bar on stderr, drawn only when stderr is a terminal.
pub fn progress_bar(len: u64, what: &str) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(len);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{msg} [{bar:40}] {pos}/{len} ({per_sec}, ETA {eta})",
    ) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(what.to_string());
    pb
}

pub fn run(a: QueryArgs) -> Result<()> {
    let set = ReleaseSet::open(&a.release)?;
    let r = &set.parts()[0];
    let meta = set.meta();
    let m = set.mechanism()?;
    let k = set.k();
    let q = prepare(&a, meta, m.as_ref())?;
    // An index over a shard directory was built on all shards' rows one after the other.
    let concatenated = match a.index {
        Some(_) => search::index_rows(&set)?,
        None => None,
    };
    let (db, qs) = sketches(r, concatenated.as_ref(), &q, k)?;
    let measure = Measure::or_default(a.measure.as_deref(), db.is_bits())?;
    let index = load_index(&a, &db, &set, measure)?;
    let searcher = match &index {
        Some((index, ef)) => Searcher::Index {
            index,
            ef: *ef,
            concatenated: concatenated.is_some(),
        },
        None => Searcher::Exact,
    };
    let s = Search::new(
        &set,
        db,
        qs,
        &q.zero,
        (Some(measure.name()), a.top),
        searcher,
    )?;
    let nq = s.queries();
    let batch = batch_size(&a, nq)?;
    let pb = progress_bar(nq as u64, "searching");
    let mut printer = HitPrinter::start(&a, measure)?;
    let (mut found, mut total) = (0.0f64, 0usize);
    // Queries are searched and printed batch by batch, so memory holds one batch of results.
    for start in (0..nq).step_by(batch) {
        let end = (start + batch).min(nq);
        let tick = |done: usize| pb.set_position((start + done) as u64);
        let hits = s.batch(start, end, Some(&tick))?;
        if a.check_recall && index.is_some() {
            let truth = s.exact(start, end)?;
            found += dprp::search::recall(&hits, &truth) * (end - start) as f64;
            total += end - start;
        }
        // a query whose ranking is undefined gets no neighbours, and a note
        let notes: Vec<bool> = (start..end).map(|i| s.undefined(i)).collect();
        printer.write(&q.ids[start..end], &hits, &notes)?;
    }
    let zeros = q.zero.iter().filter(|&&z| z).count();
    if zeros > 0 && measure != Measure::Ip {
        let first = q.zero.iter().position(|&z| z).unwrap_or(0);
        super::output::note(format_args!(
            "warning: {zeros} of the queries (the first: query {first}) are zero vectors: \
             {ZERO_QUERY_NOTE}; no neighbours printed for them"
        ));
    }
    pb.finish_and_clear();
    printer.finish()?;
    if a.check_recall {
        note_recall(a.top, index.is_some(), found / total.max(1) as f64);
    }
    Ok(())
}

/// The release's rows (all shards one after the other when an index was built over them) and
/// the queries, as sketches of the release's payload.
fn sketches<'a>(
    r: &'a dprp::release::Release,
    concatenated: Option<&'a dprp::search::sharded::Concatenated>,
    q: &'a Prepared,
    k: usize,
) -> Result<(Sketch<'a>, Sketch<'a>)> {
    Ok(match r.meta().payload {
        Payload::F32 => (
            match concatenated {
                Some(c) => c.sketch(k),
                None => Sketch::Real {
                    data: r.values()?,
                    k,
                },
            },
            Sketch::Real { data: &q.real, k },
        ),
        Payload::Bits => (
            match concatenated {
                Some(c) => c.sketch(k),
                None => Sketch::Bits { data: r.bits()?, k },
            },
            Sketch::Bits { data: &q.bits, k },
        ),
    })
}

/// Queries searched at once within the `--memory` budget (MiB; at least 1).
fn batch_size(a: &QueryArgs, nq: usize) -> Result<usize> {
    if a.memory == 0 {
        return Err(Error::param(
            "--memory",
            "the memory budget must be at least 1 MiB",
        ));
    }
    Ok(query_batch(a.top, a.memory.saturating_mul(1 << 20)).min(nq.max(1)))
}

/// The queries as `--query-mode` asks: raw vectors projected with the release's map, or the
/// rows of another release made with the same map.
fn prepare(a: &QueryArgs, meta: &ReleaseMeta, m: &dyn Mechanism) -> Result<Prepared> {
    match a.query_mode.as_str() {
        "raw" => prepare_raw(meta, m, (&a.queries, a.column.as_deref()), a.no_scale),
        "release" => {
            if a.column.is_some() {
                return Err(Error::param(
                    "--column",
                    "names the vector column of raw Parquet queries; with --query-mode release \
                     the queries are a release's rows",
                ));
            }
            let (sketches, ids) = release_queries(meta, &a.queries, "--queries")?;
            Ok(Prepared::new(sketches, ids, Vec::new()))
        }
        o => Err(Error::param(
            "--query-mode",
            format!("unknown query mode '{o}' (expected raw or release)"),
        )),
    }
}

/// `--check-recall`: the index's recall@K against the exact scan (1 without an index).
fn note_recall(top: usize, indexed: bool, recall: f64) {
    if indexed {
        super::output::note(format_args!(
            "recall@{top} of the index against the exact scan: {recall:.4}"
        ));
    } else {
        super::output::note(format_args!("recall@{top}: 1.000 (exact scan)"));
    }
}

/// `--index`: the HNSW index, checked to belong to this release and measure, with its search
/// breadth `ef` (at least `--top`).
fn load_index<'d>(
    a: &QueryArgs,
    db: &Sketch<'d>,
    set: &ReleaseSet,
    measure: Measure,
) -> Result<Option<(HnswIndex<'d>, usize)>> {
    Ok(match &a.index {
        Some(path) => {
            let (index, header) = HnswIndex::load(path, db)?;
            if header.release_checksum != set.checksum() {
                return Err(Error::param(
                    "--index",
                    format!(
                        "{} was built for a different release (its checksum does not match {})",
                        path.display(),
                        a.release.display()
                    ),
                ));
            }
            if header.measure != measure {
                return Err(Error::param(
                    "--measure",
                    format!(
                        "the index was built for {}; query it with --measure {}",
                        header.measure.name(),
                        header.measure.name()
                    ),
                ));
            }
            let ef =
                a.ef.unwrap_or(dprp::search::hnsw::default_ef(measure, a.top));
            if ef < a.top {
                return Err(Error::param("--ef", "ef must be at least --top"));
            }
            Some((index, ef))
        }
        None => None,
    })
}

/// The release's id of a hit: for one file, the id of its row; for a sharded release, hits
/// carry global ids already ([`dprp::search::sharded::search`]).
/// Queries per batch so that one batch of results (`top` hits per query, kept while searching and
/// while printing) fits in `budget` bytes.
fn query_batch(top: usize, budget: usize) -> usize {
    let per_query = 2 * top.max(1) * std::mem::size_of::<Hit>();
    (budget / per_query).max(1)
}

/// Prints results as they come, in the chosen format (text lines, CSV, or one JSON document whose
/// `results` array is streamed).
struct HitPrinter {
    out: std::io::BufWriter<std::io::StdoutLock<'static>>,
    format: HitFormat,
    first: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum HitFormat {
    Text,
    Csv,
    Json,
}

impl HitPrinter {
    fn start(a: &QueryArgs, m: Measure) -> Result<HitPrinter> {
        use std::io::Write;
        let format = if a.json {
            HitFormat::Json
        } else if a.csv {
            HitFormat::Csv
        } else {
            HitFormat::Text
        };
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let io = super::output::stdout_error;
        match format {
            HitFormat::Json => write!(
                out,
                "{{\n  \"measure\": {},\n  \"results\": [",
                serde_json::Value::from(m.name())
            )
            .map_err(io)?,
            HitFormat::Csv => writeln!(out, "query_id,rank,neighbour_id,score").map_err(io)?,
            HitFormat::Text => {}
        }
        Ok(HitPrinter {
            out,
            format,
            first: true,
        })
    }

    /// Write the hits of the queries `qids` (each hit's `row` the row's id).
    fn write(&mut self, qids: &[u64], hits: &[Vec<Hit>], undefined: &[bool]) -> Result<()> {
        use std::io::Write;
        let io = super::output::stdout_error;
        let out = &mut self.out;
        for ((h, q), &undef) in hits.iter().zip(qids).zip(undefined) {
            match self.format {
                HitFormat::Json => {
                    let mut v = serde_json::json!({
                        "query": q,
                        "neighbours": h.iter().map(|x| serde_json::json!({"id": x.row, "score": x.score})).collect::<Vec<_>>(),
                    });
                    if undef {
                        v["note"] = ZERO_QUERY_NOTE.into();
                    }
                    out.write_all(if self.first { b"\n    " } else { b",\n    " })
                        .map_err(io)?;
                    serde_json::to_writer(&mut *out, &v).map_err(super::output::json_error)?;
                    self.first = false;
                }
                HitFormat::Csv => {
                    for (rank, x) in h.iter().enumerate() {
                        writeln!(out, "{q},{},{},{}", rank + 1, x.row, x.score).map_err(io)?;
                    }
                }
                HitFormat::Text => {
                    for x in h {
                        writeln!(out, "{q} {} {}", x.row, x.score).map_err(io)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn finish(mut self) -> Result<()> {
        use std::io::Write;
        let io = super::output::stdout_error;
        if self.format == HitFormat::Json {
            self.out.write_all(b"\n  ]\n}\n").map_err(io)?;
        }
        self.out.flush().map_err(io)
    }
}
