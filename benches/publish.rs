//! End-to-end and component benchmarks of the publish pipeline on MNIST (60000 × 784).
//!
//! ```text
//! cargo bench --bench publish                       # all benchmarks
//! cargo bench --bench publish -- e2e                # end-to-end, real-valued and sign (e2e, e2e-sign)
//! cargo bench --bench publish -- 'e2e/'             # end-to-end, real-valued mechanisms only
//! cargo bench --bench publish -- e2e-sign           # end-to-end, sign mechanisms only
//! cargo bench --bench publish -- privatise          # privatisation alone (privatise, privatise-sign)
//! DPRP_BENCH_PHASES=1 cargo bench --bench publish   # also print per-phase timing breakdowns
//! DPRP_BENCH_CPU=1 cargo bench --bench publish -- privatise  # also privatise-cpu, privatise-sign-cpu
//! benches/sign_overhead.sh                          # e2e + privatise, then the sign/real ratio table
//! ```
//!
//! MNIST is read from the project's `data/mnist/train-images-idx3-ubyte.gz`, or from
//! `$DPRP_DATA/mnist/...` if that is set. Without it the benchmark prints `skipping: ...` and
//! exits successfully. The images are converted once (pixels / 255) to a native
//! `dataset.bin` in a temporary directory; every end-to-end iteration reads that file, projects,
//! adds noise (or takes signs and flips them) and writes a release into the same temporary directory.
//!
//! Sign mechanisms are compared with the real-valued mechanism on the same public map (issue 3:
//! packing and flipping must cost at most 20% over it): `dp-signrp-*` and `idp-signrp-*` (dense
//! Rademacher) with `dp-rp-g-opt` at the same k, `dp-signoporp-*` and `idp-signoporp-*` with
//! `dp-oporp` at the same k. A real-valued release writes 32× more bytes than a sign release, so the
//! end-to-end ratio flatters signs; the `privatise` / `privatise-sign` groups time the in-memory
//! privatisation alone (projection + Gaussian noise vs projection + sign packing + flipping, the
//! same parallel layout as `publish`, no reading, validation, hashing or writing), which is the fair
//! measure of the packing and flipping cost. On a shared machine, `DPRP_BENCH_CPU=1` adds the same
//! privatisation benches measured in process CPU time (`privatise-cpu`, `privatise-sign-cpu`; Linux
//! only), which other processes competing for the cores barely move, unlike wall time.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use rand::Rng;
use rayon::prelude::*;

use dprp::data::scale::{check_domain, check_finite, ScaleArg, ScalingRequest};
use dprp::data::{native, open_reader, Dataset, InputOptions};
use dprp::mechanism::central::gaussian_sketch::add_gaussian_noise;
use dprp::mechanism::SketchMut;
use dprp::mechanism::{self, Mechanism, MechanismKind, MechanismParams};
use dprp::privacy::guarantee::Neighbour;
use dprp::privacy::samplers::noise::NoiseSource;
use dprp::projection::{DenseKind, DenseProjection, Oporp, Seed};
use dprp::publish::BLOCK_ROWS;
use dprp::publish::{
    load_scaled, privatise_real, publish, PublishRequest, CHUNK_ROWS, GROUP_BLOCKS,
};

const EPSILON: f64 = 5.0;
const DELTA: f64 = 1e-6;
/// Values in the noise micro-benchmark buffer.
const NOISE_LEN: usize = 1 << 20;
/// Rows projected by the dense micro-benchmark.
const DENSE_ROWS: usize = 4096;

/// Public lower bound ν on every row's ℓ₂ norm, for `dp-signrp-rr`: the smallest norm of an MNIST
/// train row scaled by 1/255 is 3.5698 (row 17664), rounded down. `publish` refuses any row below
/// it, so a wrong bound fails the benchmark rather than skewing it.
const MNIST_MIN_NORM: f64 = 3.5;

/// The real-valued end-to-end settings: (label, mechanism, k). Every k a sign mechanism is
/// benchmarked at has its real-valued counterpart here, so each comparison comes from one run.
const SETTINGS: [(&str, MechanismKind, usize); 5] = [
    ("dp-oporp", MechanismKind::DpOporp, 256),
    ("dp-oporp", MechanismKind::DpOporp, 512),
    ("dp-rp-g-opt-rademacher", MechanismKind::DpRpGOpt, 256),
    ("dp-rp-g-opt-rademacher", MechanismKind::DpRpGOpt, 512),
    ("dp-rp-g-opt-rademacher", MechanismKind::DpRpGOpt, 1024),
];

/// The sign mechanisms, each at k = 256 and 512, and the dense ones also at 1024.
const SIGN_KINDS: [MechanismKind; 8] = [
    MechanismKind::DpSignrpRr,
    MechanismKind::DpSignrpRrSmooth,
    MechanismKind::DpSignoporpRr,
    MechanismKind::DpSignoporpRrSmooth,
    MechanismKind::IdpSignrpG,
    MechanismKind::IdpSignrpRr,
    MechanismKind::IdpSignoporpG,
    MechanismKind::IdpSignoporpRr,
];

/// (label, mechanism, k) for every sign setting.
fn sign_settings() -> Vec<(&'static str, MechanismKind, usize)> {
    SIGN_KINDS
        .into_iter()
        .flat_map(|kind| {
            let ks: &[usize] = if kind.dense() {
                &[256, 512, 1024]
            } else {
                &[256, 512]
            };
            ks.iter().map(move |&k| (kind.name(), kind, k))
        })
        .collect()
}

/// The real-valued mechanism on the same public map as sign mechanism `kind`.
fn counterpart(kind: MechanismKind) -> MechanismKind {
    if kind.oporp() {
        MechanismKind::DpOporp
    } else {
        MechanismKind::DpRpGOpt
    }
}

/// Rows privatised per iteration of the `privatise` benches: the first 20 parallel groups of MNIST
/// train (a third of it), to keep the whole run short; per-row costs and the sign/real ratio do not
/// depend on the count. DPRP_BENCH_PHASES times the whole dataset.
const PRIV_ROWS: usize = 20 * GROUP_BLOCKS * BLOCK_ROWS;

/// Criterion timing of the end-to-end and privatisation settings. With sample_size 10 and flat
/// sampling, a setting slower than 0.2 s runs one iteration per sample (10 in all, plus one to warm
/// up), and criterion prints "Unable to complete 10 samples in 2.0s": expected, and what keeps the
/// whole run to a few minutes on 2 cores.
const WARM_UP: Duration = Duration::from_millis(300);
const MEASUREMENT: Duration = Duration::from_secs(2);

fn mnist_path() -> Option<PathBuf> {
    let root = match std::env::var_os("DPRP_DATA") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("data"),
    };
    let f = root.join("mnist/train-images-idx3-ubyte.gz");
    f.is_file().then_some(f)
}

fn params(kind: MechanismKind, k: usize, p: usize) -> MechanismParams {
    MechanismParams {
        kind,
        epsilon: EPSILON,
        delta: kind.needs_delta().then_some(DELTA),
        beta: 1.0,
        neighbour: Neighbour::Coordinate,
        p,
        k: Some(k),
        projection: kind.dense().then_some(DenseKind::Rademacher),
        // A fixed public seed: the cost of generating the map is the same for any seed.
        seed: Some(Seed::parse_hex("d9e5").expect("valid hex seed")),
        min_norm: kind.needs_min_norm().then_some(MNIST_MIN_NORM),
        individual_dp: kind.is_idp(),
        local: Default::default(),
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

fn bench_end_to_end(
    c: &mut Criterion,
    group: &str,
    settings: &[(&str, MechanismKind, usize)],
    fx: &Fixture,
    noise: &NoiseSource,
) {
    let mut g = c.benchmark_group(group);
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(WARM_UP)
        .measurement_time(MEASUREMENT)
        .throughput(Throughput::Elements(fx.data.n as u64));
    for &(name, kind, k) in settings {
        let req = request(
            kind,
            k,
            &fx.dataset,
            fx.dir.join(format!("{name}-{k}.release")),
        );
        g.bench_with_input(BenchmarkId::new(name, k), &req, |b, req| {
            b.iter(|| publish(black_box(req), noise).expect("publish"))
        });
        settle(&req.output, &fx.dir);
    }
    g.finish();
}

/// Remove a setting's release (up to 245 MB: real-valued, k = 1024) and sync its directory, so
/// releases do not pile up in the temporary directory and freeing their blocks is less likely to be
/// charged to the next setting. Best effort: a failure only affects timing.
fn settle(release: &Path, dir: &Path) {
    if std::fs::remove_file(release).is_ok() {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

/// [`privatise_real`] for sign mechanisms: the same parallel groups of
/// `GROUP_BLOCKS·BLOCK_ROWS` rows as `publish`, into packed words, without validation.
fn privatise_bits(
    mech: &dyn Mechanism,
    rows: &[f32],
    noise: &NoiseSource,
    out: &mut [u64],
) -> dprp::Result<()> {
    let (p, w) = (mech.input_dim(), mech.output_dim().div_ceil(64));
    let group = GROUP_BLOCKS * BLOCK_ROWS;
    rows.par_chunks(group * p)
        .zip(out.par_chunks_mut(group * w))
        .enumerate()
        .map(|(g, (r, o))| mech.privatise_rows(r, SketchMut::Bits(o), (g * group) as u64, noise))
        .collect::<Vec<dprp::Result<()>>>()
        .into_iter()
        .collect()
}

/// Output buffer for privatising rows with one mechanism.
enum Out {
    Real(Vec<f32>),
    Bits(Vec<u64>),
}

impl Out {
    fn new(mech: &dyn Mechanism, n: usize) -> Out {
        let k = mech.output_dim();
        if mech.kind().is_sign() {
            Out::Bits(vec![0; n * k.div_ceil(64)])
        } else {
            Out::Real(vec![0.0; n * k])
        }
    }
}

/// Privatise the first `rows` rows of the in-memory dataset into `out` (the privatisation phase of
/// `publish` alone).
fn privatise(mech: &dyn Mechanism, fx: &Fixture, rows: usize, noise: &NoiseSource, out: &mut Out) {
    let values = &fx.data.values[..rows * fx.data.p];
    match out {
        Out::Real(o) => privatise_real(mech, values, 0, noise, o),
        Out::Bits(o) => privatise_bits(mech, values, noise, o),
    }
    .expect("privatise");
}

/// Privatisation alone, in memory: projection + Gaussian noise (real-valued) or projection + sign
/// packing + flipping (sign), over the first [`PRIV_ROWS`] rows.
fn bench_privatise<M: Measurement>(
    c: &mut Criterion<M>,
    group: &str,
    settings: &[(&str, MechanismKind, usize)],
    fx: &Fixture,
    noise: &NoiseSource,
) -> dprp::Result<()> {
    let rows = PRIV_ROWS.min(fx.data.n);
    let mut g = c.benchmark_group(group);
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(WARM_UP)
        .measurement_time(MEASUREMENT)
        .throughput(Throughput::Elements(rows as u64));
    for &(name, kind, k) in settings {
        let mech = mechanism::build(&params(kind, k, fx.data.p))?;
        let mut out = Out::new(mech.as_ref(), rows);
        g.bench_function(BenchmarkId::new(name, k), |b| {
            b.iter(|| privatise(black_box(mech.as_ref()), fx, rows, noise, &mut out))
        });
    }
    g.finish();
    Ok(())
}

fn bench_noise(c: &mut Criterion, noise: &NoiseSource) {
    let mut g = c.benchmark_group("noise");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Elements(NOISE_LEN as u64));
    let mut buf = vec![0f32; NOISE_LEN];
    let values = vec![0f64; NOISE_LEN];
    let mut rng = noise.row_rng(0);
    g.bench_function("add_gaussian_noise/1M", |b| {
        b.iter(|| add_gaussian_noise(black_box(&values), &mut buf, 0.98, &mut rng))
    });
    // Reference point: the raw ChaCha20 keystream the sampler draws from (one u64 per value).
    let mut words = vec![0u64; NOISE_LEN];
    let mut rng = noise.row_rng(1);
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

/// Process CPU time, summed over its live threads (`/proc/self/task/*/schedstat`, Linux): a
/// criterion measurement for the privatisation benches on a shared machine. A thread still running
/// on another core is accounted up to its last scheduler tick (a few ms), which the flat sampling
/// amortises over several iterations per sample for the short settings.
struct CpuTime;

static WALL_TIME: WallTime = WallTime;

fn process_cpu_time() -> Duration {
    let mut ns = 0u64;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) {
                ns += s
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    Duration::from_nanos(ns)
}

impl Measurement for CpuTime {
    type Intermediate = Duration;
    type Value = Duration;
    fn start(&self) -> Duration {
        process_cpu_time()
    }
    fn end(&self, start: Duration) -> Duration {
        process_cpu_time().saturating_sub(start)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, v: &Duration) -> f64 {
        v.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        WALL_TIME.formatter()
    }
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
    let mut model = Vec::new();
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
                .for_each(|(r, o)| mech.as_sketch().unwrap().project(r, o).unwrap());
        });
        // The same projection over larger blocks (one per thread per pipeline chunk), to show
        // what per-256-row calls cost (the dense kernel repacks W on every call).
        let big = CHUNK_ROWS / rayon::current_num_threads().max(1);
        let project_big = time_it(REPS, || {
            fx.data
                .values
                .par_chunks(big * p)
                .zip(out.par_chunks_mut(big * k))
                .for_each(|(r, o)| mech.as_sketch().unwrap().project(r, o).unwrap());
        });
        let values: Vec<f64> = out.iter().map(|&v| v as f64).collect();
        let noise_t = time_it(REPS, || {
            out.par_chunks_mut(BLOCK_ROWS * k)
                .zip(values.par_chunks(BLOCK_ROWS * k))
                .enumerate()
                .for_each(|(b, (o, y))| {
                    add_gaussian_noise(y, o, sigma, &mut noise.row_rng(b as u64))
                });
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
            let _ = std::fs::remove_file(&path);
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
            // (a fresh output each time: replacing a release frees its blocks inside the rename)
            let _ = std::fs::remove_file(&req.output);
            publish(&req, noise).expect("publish");
        });
        let chunk =
            dprp::publish::chunk_rows(p, k, mech.payload(), dprp::publish::DEFAULT_MEMORY_BUDGET);
        model.push((
            format!("{name} k={k}"),
            Stages {
                read,
                parallel: checks + private + hash,
                write: median(write.clone()),
                device: median(fsync.clone()),
                chunks: n.div_ceil(chunk),
                publish: total,
            },
        ));
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
    if rayon::current_num_threads() == 1 {
        print_scaling_model(&model);
    } else {
        println!(
            "(run with RAYON_NUM_THREADS=1 for the one-core stage times and the scaling arithmetic)\n"
        );
    }
    Ok(())
}

/// One-core stage times of one setting (seconds over the whole dataset).
#[derive(Clone, Copy)]
struct Stages {
    /// The reader thread's work (one thread).
    read: f64,
    /// Work done by the privatisation pool (validation, privatisation, and the payload hash,
    /// which the writer hands to the pool).
    parallel: f64,
    /// The writer thread's writes (one thread).
    write: f64,
    /// The device making the payload durable (`fsync` of the whole output), overlapped with the
    /// rest by the write-behind flush of `AtomicFile` (one device).
    device: f64,
    /// Pipeline chunks.
    chunks: usize,
    /// The whole publish on one thread.
    publish: f64,
}

impl Stages {
    /// Predicted time on `t` threads: the slowest stage of the pipeline (the parallel work split
    /// over `t` threads, or a one-thread stage), plus filling and draining it (one chunk through
    /// every stage).
    fn predicted(&self, t: f64) -> f64 {
        let stages = [self.parallel / t, self.read, self.write, self.device];
        let slowest = stages.iter().cloned().fold(0.0, f64::max);
        slowest + stages.iter().sum::<f64>() / self.chunks.max(1) as f64
    }
}

/// The scaling arithmetic of issue 14 ("publishing that scales with cores"): from one-core stage
/// times, the time on t threads and the speedup over the measured one-thread publish.
fn print_scaling_model(model: &[(String, Stages)]) {
    println!(
        "scaling arithmetic from these one-core stage times: T(t) = max(parallel/t, read, write, \
         device) + one chunk through every stage; speedup = publish(1 thread) / T(t)"
    );
    println!(
        "{:<30} {:>8} {:>6} {:>6} {:>7} {:>6} {:>7} {:>5} {:>5} {:>9} {:>8}",
        "setting",
        "parallel",
        "read",
        "write",
        "device",
        "chunks",
        "T(16)",
        "×8",
        "×16",
        "×16 ¬dev",
        "limit"
    );
    for (name, s) in model {
        let t16 = s.predicted(16.0);
        let no_device = Stages { device: 0.0, ..*s };
        let limit = [
            ("parallel", s.parallel / 16.0),
            ("read", s.read),
            ("write", s.write),
            ("device", s.device),
        ]
        .into_iter()
        .fold(("", 0.0), |a, b| if b.1 > a.1 { b } else { a })
        .0;
        println!(
            "{:<30} {:>8.3} {:>6.3} {:>6.3} {:>7.3} {:>6} {:>7.3} {:>5.1} {:>5.1} {:>9.1} {:>8}",
            name,
            s.parallel,
            s.read,
            s.write,
            s.device,
            s.chunks,
            t16,
            s.publish / s.predicted(8.0),
            s.publish / t16,
            s.publish / no_device.predicted(16.0),
            limit
        );
    }
    println!(
        "(×16 ¬dev: the same without the device, i.e. on storage faster than the pipeline; limit: \
         the slowest stage at 16 threads)\n"
    );
}

/// A breakdown of the sign settings against their real-valued counterparts (median of a few runs
/// each): the projection alone (shared by a sign mechanism and its counterpart: same map, same
/// seed), privatisation alone (and what it adds to the projection: Gaussian noise, or sign packing
/// and flipping), and the whole publish.
fn sign_phases(fx: &Fixture, noise: &NoiseSource) -> dprp::Result<()> {
    const REPS: usize = 3;
    let (n, p) = (fx.data.n, fx.data.p);
    let group = GROUP_BLOCKS * BLOCK_ROWS;
    // (kind, k) -> (project, privatise, publish) of the real-valued mechanism
    let mut real = Vec::new();
    for (_, kind, k) in SETTINGS {
        let mech = mechanism::build(&params(kind, k, p))?;
        let mut z = vec![0f32; n * k];
        let project = time_it(REPS, || {
            fx.data
                .values
                .par_chunks(group * p)
                .zip(z.par_chunks_mut(group * k))
                .for_each(|(r, o)| mech.as_sketch().unwrap().project(r, o).unwrap());
        });
        drop(z);
        let mut out = Out::new(mech.as_ref(), n);
        let private = time_it(REPS, || privatise(mech.as_ref(), fx, n, noise, &mut out));
        let req = request(kind, k, &fx.dataset, fx.dir.join("phase.release"));
        let total = time_it(REPS, || {
            publish(&req, noise).expect("publish");
        });
        real.push((kind, k, project, private, total));
    }
    println!(
        "\nsign phase breakdown (median of {REPS}; {} rayon threads; n = {n}, p = {p}; \
         real = the real-valued mechanism on the same map and k)",
        rayon::current_num_threads()
    );
    println!(
        "{:<30} {:>7} {:>7} {:>9} {:>9} {:>9} {:>7} {:>8} {:>8} {:>7}",
        "setting",
        "project",
        "priv",
        "priv-proj",
        "real-priv",
        "real-p-p",
        "ratio",
        "publish",
        "real-pub",
        "ratio"
    );
    for (name, kind, k) in sign_settings() {
        let base = counterpart(kind);
        let &(_, _, project, real_priv, real_pub) = real
            .iter()
            .find(|r| r.0 == base && r.1 == k)
            .expect("every sign setting has its real-valued counterpart in SETTINGS");
        let mech = mechanism::build(&params(kind, k, p))?;
        let mut out = Out::new(mech.as_ref(), n);
        let private = time_it(REPS, || privatise(mech.as_ref(), fx, n, noise, &mut out));
        let req = request(kind, k, &fx.dataset, fx.dir.join("phase-sign.release"));
        let total = time_it(REPS, || {
            publish(&req, noise).expect("publish");
        });
        println!(
            "{:<30} {:>7.3} {:>7.3} {:>9.3} {:>9.3} {:>9.3} {:>7.2} {:>8.3} {:>8.3} {:>7.2}",
            format!("{name} k={k}"),
            project,
            private,
            private - project,
            real_priv,
            real_priv - project,
            private / real_priv,
            total,
            real_pub,
            total / real_pub
        );
    }
    println!(
        "(seconds; project: the public map alone over {group}-row parallel groups; priv: \
         privatisation alone, as the privatise benches; priv-proj: what the sign packing and \
         flipping (sign) or Gaussian noise (real-p-p) add to it; publish: the whole pipeline; \
         ratio: sign / real)\n"
    );
    Ok(())
}

fn run() -> dprp::Result<()> {
    let Some(mnist) = mnist_path() else {
        println!(
            "skipping: MNIST not found (it ships in {}/data/mnist; set DPRP_DATA to a directory \
             holding mnist/ and libsvm/)",
            env!("CARGO_MANIFEST_DIR")
        );
        return Ok(());
    };
    let mut c = Criterion::default().configure_from_args();
    let fx = fixture(&mnist)?;
    let noise = NoiseSource::from_os()?;
    if std::env::var_os("DPRP_BENCH_PHASES").is_some() {
        phases(&fx, &noise)?;
        sign_phases(&fx, &noise)?;
    }
    let signs = sign_settings();
    // Signs first: on a 2-core VM, e2e-sign dp-signrp-rr/256 and idp-signrp-rr/256 took 345 and
    // 270 ms on their own but 370 and 340 ms right after e2e dp-rp-g-opt-rademacher/1024 (which
    // writes 245 MB per iteration).
    bench_end_to_end(&mut c, "e2e-sign", &signs, &fx, &noise);
    bench_end_to_end(&mut c, "e2e", &SETTINGS, &fx, &noise);
    bench_privatise(&mut c, "privatise", &SETTINGS, &fx, &noise)?;
    bench_privatise(&mut c, "privatise-sign", &signs, &fx, &noise)?;
    if std::env::var_os("DPRP_BENCH_CPU").is_some() {
        let mut cpu = Criterion::default()
            .with_measurement(CpuTime)
            .configure_from_args();
        bench_privatise(&mut cpu, "privatise-cpu", &SETTINGS, &fx, &noise)?;
        bench_privatise(&mut cpu, "privatise-sign-cpu", &signs, &fx, &noise)?;
        cpu.final_summary();
    }
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
