//! End-to-end and component benchmarks of the publish pipeline on MNIST (60000 × 784).
//!
//! ```text
//! cargo bench --bench publish                       # all benchmarks
//! cargo bench --bench publish -- e2e                # only the end-to-end group
//! DPRP_BENCH_PHASES=1 cargo bench --bench publish   # also print a per-phase timing breakdown
//! ```
//!
//! MNIST is looked up as `$DPRP_SHARED_DATA/mnist/train-images-idx3-ubyte.gz`, else
//! `<CARGO_MANIFEST_DIR>/../shared/data/mnist/...`. Without it the benchmark prints
//! `skipping: ...` and exits successfully. The images are converted once (pixels / 255) to a native
//! `dataset.bin` in a temporary directory; every end-to-end iteration reads that file, projects,
//! adds noise and writes a release into the same temporary directory.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use rand::Rng;
use rayon::prelude::*;

use dprp::data::scale::{check_domain, check_finite, ScaleArg, ScalingRequest};
use dprp::data::{native, open_reader, Dataset, InputOptions};
use dprp::mechanism::gaussian_sketch::add_gaussian_noise;
use dprp::mechanism::{self, Mechanism, MechanismKind, MechanismParams};
use dprp::privacy::guarantee::Neighbour;
use dprp::privacy::noise::{NoiseSource, BLOCK_ROWS};
use dprp::projection::{DenseKind, DenseProjection, Oporp, Seed};
use dprp::publish::{load_scaled, privatise_real, publish, PublishRequest, CHUNK_ROWS};

const EPSILON: f64 = 5.0;
const DELTA: f64 = 1e-6;
/// Values in the noise micro-benchmark buffer.
const NOISE_LEN: usize = 1 << 20;
/// Rows projected by the dense micro-benchmark.
const DENSE_ROWS: usize = 4096;

/// The end-to-end settings: (label, mechanism, k).
const SETTINGS: [(&str, MechanismKind, usize); 4] = [
    ("dp-oporp", MechanismKind::DpOporp, 256),
    ("dp-oporp", MechanismKind::DpOporp, 512),
    ("dp-rp-g-opt-rademacher", MechanismKind::DpRpGOpt, 256),
    ("dp-rp-g-opt-rademacher", MechanismKind::DpRpGOpt, 1024),
];

fn mnist_path() -> Option<PathBuf> {
    let root = match std::env::var_os("DPRP_SHARED_DATA") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data"),
    };
    let f = root.join("mnist/train-images-idx3-ubyte.gz");
    f.is_file().then_some(f)
}

fn params(kind: MechanismKind, k: usize, p: usize) -> MechanismParams {
    MechanismParams {
        kind,
        epsilon: EPSILON,
        delta: Some(DELTA),
        beta: 1.0,
        neighbour: Neighbour::Coordinate,
        p,
        k: Some(k),
        projection: kind.dense().then_some(DenseKind::Rademacher),
        // A fixed public seed: the cost of generating the map is the same for any seed.
        seed: Some(Seed::parse_hex("d9e5").expect("valid hex seed")),
        min_norm: None,
        individual_dp: false,
    }
}

fn request(kind: MechanismKind, k: usize, input: &Path, output: PathBuf) -> PublishRequest {
    PublishRequest {
        input: input.to_path_buf(),
        input_opts: InputOptions::default(),
        scaling: ScalingRequest::default(),
        params: params(kind, k, 0),
        output,
    }
}

/// Everything the benchmarks share: the converted dataset on disk and in memory.
struct Fixture {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    dataset: PathBuf,
    data: Dataset,
}

fn fixture(mnist: &Path) -> dprp::Result<Fixture> {
    let t = Instant::now();
    let data = load_scaled(
        mnist,
        &InputOptions::default(),
        &ScalingRequest {
            scale: Some(ScaleArg::Divide(255.0)),
            ..Default::default()
        },
    )?;
    let tmp = tempfile::Builder::new()
        .prefix("dprp-bench-")
        .tempdir()
        .map_err(|e| dprp::Error::io(Path::new("tempdir"), e))?;
    let dir = tmp.path().to_path_buf();
    let dataset = dir.join("mnist-train.bin");
    native::write(&dataset, &data)?;
    eprintln!(
        "fixture: {} rows × {} features converted to {} in {:.2} s",
        data.n,
        data.p,
        dataset.display(),
        t.elapsed().as_secs_f64()
    );
    Ok(Fixture {
        _dir: tmp,
        dir,
        dataset,
        data,
    })
}

fn bench_end_to_end(c: &mut Criterion, fx: &Fixture, noise: &NoiseSource) {
    let mut g = c.benchmark_group("e2e");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .throughput(Throughput::Elements(fx.data.n as u64));
    for (name, kind, k) in SETTINGS {
        let req = request(
            kind,
            k,
            &fx.dataset,
            fx.dir.join(format!("{name}-{k}.release")),
        );
        // ~1.5 s per run for the widest dense setting: give it room for its 10 samples.
        let secs = if kind.dense() && k >= 1024 { 18 } else { 8 };
        g.measurement_time(Duration::from_secs(secs));
        g.bench_with_input(BenchmarkId::new(name, k), &req, |b, req| {
            b.iter(|| publish(black_box(req), noise).expect("publish"))
        });
    }
    g.finish();
}

fn bench_noise(c: &mut Criterion, noise: &NoiseSource) {
    let mut g = c.benchmark_group("noise");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Elements(NOISE_LEN as u64));
    let mut buf = vec![0f32; NOISE_LEN];
    let mut rng = noise.block_rng(0);
    g.bench_function("add_gaussian_noise/1M", |b| {
        b.iter(|| add_gaussian_noise(black_box(&mut buf), 0.98, &mut rng))
    });
    // Reference point: the raw ChaCha20 keystream the sampler draws from (one u64 per value).
    let mut words = vec![0u64; NOISE_LEN];
    let mut rng = noise.block_rng(1);
    g.bench_function("chacha20_next_u64/1M", |b| {
        b.iter(|| {
            for w in words.iter_mut() {
                *w = rng.next_u64();
            }
            black_box(&words);
        })
    });
    g.finish();
}

fn bench_projection(c: &mut Criterion, fx: &Fixture) -> dprp::Result<()> {
    let (p, n) = (fx.data.p, fx.data.n);
    let seed = Seed::parse_hex("d9e5")?;
    let mut g = c.benchmark_group("project");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(5));

    let dense = DenseProjection::generate(DenseKind::Rademacher, p, 1024, seed)?;
    let rows = &fx.data.values[..DENSE_ROWS * p];
    let mut out = vec![0f32; DENSE_ROWS * 1024];
    g.throughput(Throughput::Elements(DENSE_ROWS as u64));
    g.bench_function(
        BenchmarkId::new("dense-rademacher-k1024", DENSE_ROWS),
        |b| b.iter(|| dense.project(black_box(rows), &mut out)),
    );

    let oporp = Oporp::generate(p, 512, seed)?;
    let mut out = vec![0f32; n * 512];
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function(BenchmarkId::new("oporp-k512", n), |b| {
        b.iter(|| oporp.project(black_box(&fx.data.values), &mut out))
    });
    g.finish();
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median over `reps` runs of `f`, in seconds.
fn time_it(reps: usize, mut f: impl FnMut()) -> f64 {
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

/// A per-phase breakdown of the pipeline (each phase run on its own over the whole dataset, with
/// the same parallel layout as `privatise_real`), to see where the end-to-end time goes.
fn phases(fx: &Fixture, noise: &NoiseSource) -> dprp::Result<()> {
    const REPS: usize = 3;
    let (n, p) = (fx.data.n, fx.data.p);
    println!(
        "\nphase breakdown (median of {REPS}; {} rayon threads; n = {n}, p = {p})",
        rayon::current_num_threads()
    );
    println!(
        "{:<28} {:>7} {:>7} {:>7} {:>7} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8}",
        "setting",
        "read",
        "checks",
        "build",
        "project",
        "proj-big",
        "noise",
        "priv",
        "hash",
        "write",
        "fsync",
        "publish"
    );
    let read = time_it(REPS, || {
        let mut r = open_reader(&fx.dataset, &InputOptions::default()).expect("open");
        let (mut v, mut l) = (Vec::new(), Vec::new());
        loop {
            v.clear();
            if r.read_chunk(CHUNK_ROWS, &mut v, &mut l).expect("read") == 0 {
                break;
            }
            black_box(&v);
        }
    });
    let checks = time_it(REPS, || {
        for (i, c) in fx.data.values.chunks(CHUNK_ROWS * p).enumerate() {
            let row0 = (i * CHUNK_ROWS) as u64;
            check_finite(c, p, row0, &fx.dataset).expect("finite");
            check_domain(c, p, row0, &fx.dataset).expect("in domain");
        }
    });
    for (name, kind, k) in SETTINGS {
        let build = time_it(REPS, || {
            black_box(mechanism::build(&params(kind, k, p)).expect("build"));
        });
        let mech = mechanism::build(&params(kind, k, p))?;
        let sigma = mech.record().gaussian.map(|g| g.sigma).unwrap_or(1.0);
        let mut out = vec![0f32; n * k];
        let project = time_it(REPS, || {
            fx.data
                .values
                .par_chunks(BLOCK_ROWS * p)
                .zip(out.par_chunks_mut(BLOCK_ROWS * k))
                .for_each(|(r, o)| mech.project(r, o));
        });
        // The same projection over larger blocks (one per thread per pipeline chunk), to show
        // what per-256-row calls cost (the dense kernel repacks W on every call).
        let big = CHUNK_ROWS / rayon::current_num_threads().max(1);
        let project_big = time_it(REPS, || {
            fx.data
                .values
                .par_chunks(big * p)
                .zip(out.par_chunks_mut(big * k))
                .for_each(|(r, o)| mech.project(r, o));
        });
        let noise_t = time_it(REPS, || {
            out.par_chunks_mut(BLOCK_ROWS * k)
                .enumerate()
                .for_each(|(b, o)| add_gaussian_noise(o, sigma, &mut noise.block_rng(b as u64)));
        });
        let m: &dyn Mechanism = mech.as_ref();
        let private = time_it(REPS, || {
            privatise_real(m, &fx.data.values, 0, noise, &mut out).expect("privatise");
        });
        let bytes: &[u8] = bytemuck::cast_slice(&out);
        let hash = time_it(REPS, || {
            let mut h = blake3::Hasher::new();
            for c in bytes.chunks(CHUNK_ROWS * k * 4) {
                h.update_rayon(c);
            }
            black_box(h.finalize());
        });
        let path = fx.dir.join("phase-write.tmp");
        let (mut write, mut fsync) = (Vec::new(), Vec::new());
        for _ in 0..REPS {
            use std::io::Write;
            let t = Instant::now();
            let mut f = std::io::BufWriter::with_capacity(
                1 << 20,
                std::fs::File::create(&path).map_err(|e| dprp::Error::io(&path, e))?,
            );
            f.write_all(bytes).map_err(|e| dprp::Error::io(&path, e))?;
            let f = f
                .into_inner()
                .map_err(|e| dprp::Error::io(&path, e.into_error()))?;
            write.push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            f.sync_all().map_err(|e| dprp::Error::io(&path, e))?;
            fsync.push(t.elapsed().as_secs_f64());
        }
        let req = request(kind, k, &fx.dataset, fx.dir.join("phase.release"));
        let total = time_it(REPS, || {
            publish(&req, noise).expect("publish");
        });
        println!(
            "{:<28} {:>7.3} {:>7.3} {:>7.3} {:>7.3} {:>8.3} {:>7.3} {:>7.3} {:>7.3} {:>7.3} {:>7.3} {:>8.3}",
            format!("{name} k={k}"),
            read,
            checks,
            build,
            project,
            project_big,
            noise_t,
            private,
            hash,
            median(write),
            median(fsync),
            total
        );
    }
    println!(
        "(seconds; read and checks (check_finite + check_domain, as publish runs them) are \
         serial over the whole dataset; project/noise/priv use rayon over {BLOCK_ROWS}-row blocks, proj-big over {}-row blocks; hash/write/fsync are of the \
         n×k output, write excludes fsync; publish is the whole pipeline)\n",
        CHUNK_ROWS / rayon::current_num_threads().max(1)
    );
    Ok(())
}

fn run() -> dprp::Result<()> {
    let Some(mnist) = mnist_path() else {
        println!(
            "skipping: MNIST not found (set DPRP_SHARED_DATA to a directory holding \
             mnist/train-images-idx3-ubyte.gz, or place it under {}/../shared/data)",
            env!("CARGO_MANIFEST_DIR")
        );
        return Ok(());
    };
    let mut c = Criterion::default().configure_from_args();
    let fx = fixture(&mnist)?;
    let noise = NoiseSource::from_os()?;
    if std::env::var_os("DPRP_BENCH_PHASES").is_some() {
        phases(&fx, &noise)?;
    }
    bench_end_to_end(&mut c, &fx, &noise);
    bench_noise(&mut c, &noise);
    bench_projection(&mut c, &fx)?;
    c.final_summary();
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
