//! Top-10 search benchmark: MNIST test (10000 queries) against MNIST train (60000 rows), sketches
//! at k = 1024: the exact scans (inner product on real sketches, agreements on signs) and the HNSW
//! search of real sketches by cosine against the exact cosine scan, with raw (noiseless) queries
//! as `dprp query` uses by default (graph at the default m = 16, ef-construction = 200, on
//! ε = 10 sketches; built once, one to two minutes; its recall@10 at each ef is printed first,
//! and the recall of a graph over the ε = 5 sketches for comparison).
//!
//! ```text
//! cargo bench --bench search                       # build the sketches, export them, time all searches
//! cargo bench --bench search -- exact-ip           # real sketches only (or exact-hamming: signs only)
//! cargo bench --bench search -- cosine             # the HNSW search and the exact cosine scan
//! cargo bench --bench search -- --export-only      # only write the sketches and dprp's results
//! DPRP_BENCH_EXPORT_ONLY=1 cargo bench --bench search   # the same
//! bash benches/run-search-peers.sh                 # then time faiss on the same files
//! ```
//!
//! The sketches are built in-process with the publishing code (pixels / 255, β = 1, coordinate
//! neighbours, ε = 5, a fixed public seed, seeded noise: `bench-db` for train, `bench-q` for test):
//! real sketches with `dp-rp-g-opt` (dense Rademacher, δ = 1e-6), sign sketches with
//! `dp-signrp-rr-smooth` (dense Rademacher; `dp-signoporp-rr` would need k ≤ p = 784).
//!
//! Every run writes, under `<target>/bench-data/` (`$CARGO_TARGET_DIR`, else `<manifest>/target`):
//!
//! * `search-real-db.bin`, `search-real-q.bin`: f32 little-endian, n×1024, row-major;
//! * `search-bits-db.bin`, `search-bits-q.bin`: u64 little-endian, n×16 (bit j of a row is bit
//!   j mod 64 of word j/64; 1 = positive);
//! * `search-real-top10.bin`, `search-bits-top10.bin`: dprp's exact result, u64 row indices,
//!   10000×10, best first;
//! * `search-meta.json`: the shapes and settings, and the wall and CPU time of the search run that
//!   produced the results (outside criterion; CPU time from `/proc/self/stat`, so Linux only).
//!
//! MNIST is read from the project's `data/mnist/{train,t10k}-images-idx3-ubyte.gz`, or from
//! `$DPRP_DATA/mnist/...` if that is set; without it the benchmark prints `skipping: ...` and exits
//! successfully.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode};

use dprp::data::scale::{ScaleArg, ScalingRequest};
use dprp::data::{Dataset, InputOptions};
use dprp::mechanism::{self, MechanismKind, MechanismParams};
use dprp::privacy::guarantee::Neighbour;
use dprp::privacy::samplers::noise::NoiseSource;
use dprp::projection::{DenseKind, Seed};
use dprp::publish::{load_scaled, privatise_dataset, Sketches};
use dprp::search::exact::search;
use dprp::search::hnsw::{HnswIndex, HnswParams};
use dprp::search::{recall, Hit, Measure, Sketch};

const K: usize = 1024;
const TOP: usize = 10;
const EPSILON: f64 = 5.0;
const DELTA: f64 = 1e-6;
/// Candidate list sizes timed for the HNSW search.
const HNSW_EF: [usize; 3] = [32, 48, 64];
/// ε of the sketches the HNSW search is timed on. How well a graph finds the exact top-10 depends
/// on how much the noise dominates the ranking: at ε = 10 (σ = 0.54) it reaches recall 0.95 at
/// ef = 32–48; at ε = 5 the exact top-10 is largely decided by each row's noise and the graph
/// needs a much longer list (the recall at ε = 5 is printed too).
const HNSW_EPSILON: f64 = 10.0;

fn mnist_dir() -> PathBuf {
    match std::env::var_os("DPRP_DATA") {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("mnist"),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("data/mnist"),
    }
}

fn out_dir() -> PathBuf {
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
    };
    target.join("bench-data")
}

fn params(kind: MechanismKind, p: usize, epsilon: f64) -> MechanismParams {
    MechanismParams {
        kind,
        epsilon,
        delta: kind.needs_delta().then_some(DELTA),
        beta: 1.0,
        neighbour: Neighbour::Coordinate,
        p,
        k: Some(K),
        projection: Some(DenseKind::Rademacher),
        seed: Some(Seed::parse_hex("5ea4c4").expect("valid hex seed")),
        min_norm: None,
        individual_dp: false,
        local: Default::default(),
    }
}

fn load(path: &Path) -> dprp::Result<Dataset> {
    load_scaled(
        path,
        &InputOptions::default(),
        &ScalingRequest {
            scale: Some(ScaleArg::Divide(255.0)),
            ..Default::default()
        },
    )
}

/// Database and query sketches of one mechanism, and the queries' noiseless projections (what
/// `dprp query` searches with by default, `--query-mode raw`).
struct Pair {
    db: Sketches,
    q: Sketches,
    raw_q: Vec<f32>,
}

impl Pair {
    fn sketch(s: &Sketches) -> Sketch<'_> {
        match s {
            Sketches::Real(v) => Sketch::Real { data: v, k: K },
            Sketches::Bits(v) => Sketch::Bits { data: v, k: K },
        }
    }
    fn db(&self) -> Sketch<'_> {
        Pair::sketch(&self.db)
    }
    fn q(&self) -> Sketch<'_> {
        Pair::sketch(&self.q)
    }
    fn raw_q(&self) -> Sketch<'_> {
        Sketch::Real {
            data: &self.raw_q,
            k: K,
        }
    }
}

fn build(kind: MechanismKind, train: &Dataset, test: &Dataset, epsilon: f64) -> dprp::Result<Pair> {
    let mech = mechanism::build(&params(kind, train.p, epsilon))?;
    let mut raw_q = vec![0f32; test.n * K];
    mech.as_sketch()
        .unwrap()
        .project(&test.values, &mut raw_q)
        .unwrap();
    Ok(Pair {
        db: privatise_dataset(mech.as_ref(), train, &NoiseSource::from_seed("bench-db"))?,
        q: privatise_dataset(mech.as_ref(), test, &NoiseSource::from_seed("bench-q"))?,
        raw_q,
    })
}

fn bytes(s: &Sketches) -> &[u8] {
    match s {
        Sketches::Real(v) => bytemuck::cast_slice(v),
        Sketches::Bits(v) => bytemuck::cast_slice(v),
    }
}

fn write(path: &Path, data: &[u8]) -> dprp::Result<()> {
    std::fs::write(path, data).map_err(|e| dprp::Error::io(path, e))
}

/// CPU seconds used by this process so far (user + system, all threads), where Linux's
/// `/proc/self/stat` tells (clock ticks of 1/100 s).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// Row indices of a search result as u64 little-endian, `queries × TOP`.
fn ids(hits: &[Vec<Hit>]) -> Vec<u8> {
    hits.iter()
        .flat_map(|h| h.iter().flat_map(|h| (h.row as u64).to_le_bytes()))
        .collect()
}

fn export(dir: &Path, real: &Pair, sign: &Pair) -> dprp::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| dprp::Error::io(dir, e))?;
    if cfg!(target_endian = "big") {
        return Err(dprp::Error::param(
            "export",
            "the exported files are little-endian; this machine is big-endian",
        ));
    }
    let mut times = serde_json::Map::new();
    for (name, pair, measure) in [
        ("real", real, Measure::Ip),
        ("bits", sign, Measure::Hamming),
    ] {
        write(&dir.join(format!("search-{name}-db.bin")), bytes(&pair.db))?;
        write(&dir.join(format!("search-{name}-q.bin")), bytes(&pair.q))?;
        let (t, cpu) = (Instant::now(), cpu_seconds());
        let hits = search(&pair.db(), &pair.q(), measure, TOP, None)?;
        let wall = t.elapsed().as_secs_f64();
        let cpu = cpu.zip(cpu_seconds()).map(|(a, b)| b - a);
        println!(
            "{name}: exact top-{TOP} search of {} queries in {} rows: {wall:.3} s wall, {} CPU \
             (one run, outside criterion)",
            pair.q().rows(),
            pair.db().rows(),
            cpu.map_or("?".into(), |c| format!("{c:.2} s"))
        );
        times.insert(
            name.into(),
            serde_json::json!({"wall_seconds": wall, "cpu_seconds": cpu}),
        );
        write(
            &dir.join(format!("search-{name}-top{TOP}.bin")),
            &ids(&hits),
        )?;
    }
    let meta = serde_json::json!({
        "k": K,
        "top": TOP,
        "db_rows": real.db().rows(),
        "query_rows": real.q().rows(),
        "words_per_row": K.div_ceil(64),
        "real": {"mechanism": "dp-rp-g-opt", "dtype": "<f4", "measure": "ip"},
        "bits": {"mechanism": "dp-signrp-rr-smooth", "dtype": "<u8", "measure": "hamming"},
        "rayon_threads": rayon::current_num_threads(),
        "export_run": times,
    });
    let path = dir.join("search-meta.json");
    write(&path, meta.to_string().as_bytes())?;
    println!("exported sketches and results to {}", dir.display());
    Ok(())
}

fn run() -> dprp::Result<()> {
    let export_only = std::env::args().any(|a| a == "--export-only")
        || std::env::var_os("DPRP_BENCH_EXPORT_ONLY").is_some_and(|v| v != "0");
    let dir = mnist_dir();
    let (train, test) = (
        dir.join("train-images-idx3-ubyte.gz"),
        dir.join("t10k-images-idx3-ubyte.gz"),
    );
    if !train.is_file() || !test.is_file() {
        println!(
            "skipping: MNIST not found (need {} and {}; set DPRP_DATA to a directory holding \
             mnist/ and libsvm/)",
            train.display(),
            test.display()
        );
        return Ok(());
    }
    let t = Instant::now();
    let (train, test) = (load(&train)?, load(&test)?);
    let real = build(MechanismKind::DpRpGOpt, &train, &test, EPSILON)?;
    let sign = build(MechanismKind::DpSignrpRrSmooth, &train, &test, EPSILON)?;
    let hnsw = build(MechanismKind::DpRpGOpt, &train, &test, HNSW_EPSILON)?;
    drop((train, test));
    println!(
        "built sketches (k = {K}) of {} train and {} test rows in {:.1} s; {} rayon threads",
        real.db().rows(),
        real.q().rows(),
        t.elapsed().as_secs_f64(),
        rayon::current_num_threads()
    );
    export(&out_dir(), &real, &sign)?;
    if export_only {
        return Ok(());
    }

    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("search");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(10));
    let id = format!("k{K}-top{TOP}");
    g.bench_function(BenchmarkId::new("exact-ip", &id), |b| {
        b.iter(|| search(&real.db(), &real.q(), Measure::Ip, TOP, None).expect("search"))
    });
    g.bench_function(BenchmarkId::new("exact-hamming", &id), |b| {
        b.iter(|| {
            black_box(search(&sign.db(), &sign.q(), Measure::Hamming, TOP, None).expect("search"))
        })
    });
    g.finish();

    // HNSW over the real sketches by cosine, against the exact cosine scan in the same run, with
    // raw queries (`dprp query`'s default). The graph takes a minute or two to build: skip it
    // when a criterion filter (taken here as a substring) selects none of these benchmarks.
    let names: Vec<String> = std::iter::once(format!("search/exact-cosine/{id}"))
        .chain(
            HNSW_EF
                .iter()
                .map(|ef| format!("search/hnsw-cosine-ef{ef}/{id}")),
        )
        .collect();
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if filter.is_empty()
        || filter
            .iter()
            .any(|f| names.iter().any(|n| n.contains(f.as_str())))
    {
        let t = Instant::now();
        let index = HnswIndex::build(&hnsw.db(), Measure::Cosine, &HnswParams::default())?;
        println!(
            "HNSW graph (m = 16, ef-construction = 200) built in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        // Recall with raw queries, and (for the record) with private queries, where the noise on
        // both sides dominates the exact ranking.
        for (what, q) in [("raw", hnsw.raw_q()), ("private", hnsw.q())] {
            let truth = search(&hnsw.db(), &q, Measure::Cosine, TOP, None)?;
            for ef in HNSW_EF {
                let found = index.search(&q, TOP, ef, None)?;
                println!(
                    "HNSW ε = {HNSW_EPSILON}, ef = {ef}, {what} queries: recall@{TOP} against \
                     the exact scan {:.4}",
                    recall(&found, &truth)
                );
            }
        }
        // The same graph parameters on the ε = 5 sketches of the exact benchmarks.
        let index5 = HnswIndex::build(&real.db(), Measure::Cosine, &HnswParams::default())?;
        let truth = search(&real.db(), &real.raw_q(), Measure::Cosine, TOP, None)?;
        for ef in [64, 128, 256] {
            let t = Instant::now();
            let found = index5.search(&real.raw_q(), TOP, ef, None)?;
            println!(
                "HNSW ε = {EPSILON}, ef = {ef}, raw queries: recall@{TOP} {:.4} in {:.2} s (one run)",
                recall(&found, &truth),
                t.elapsed().as_secs_f64()
            );
        }
        drop(index5);
        let mut g = c.benchmark_group("search");
        g.sample_size(10)
            .sampling_mode(SamplingMode::Flat)
            .warm_up_time(Duration::from_millis(100))
            .measurement_time(Duration::from_secs(10));
        g.bench_function(BenchmarkId::new("exact-cosine", &id), |b| {
            b.iter(|| {
                search(&hnsw.db(), &hnsw.raw_q(), Measure::Cosine, TOP, None).expect("search")
            })
        });
        for ef in HNSW_EF {
            g.bench_function(BenchmarkId::new(format!("hnsw-cosine-ef{ef}"), &id), |b| {
                b.iter(|| index.search(&hnsw.raw_q(), TOP, ef, None).expect("search"))
            });
        }
        g.finish();
    }
    c.final_summary();
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
