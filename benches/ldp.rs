//! Client-side cost of the local-DP mechanisms, per user, on one core (issue 11, "Benchmarks and
//! targets"), and the transforms and samplers they are built from.
//!
//! ```text
//! cargo bench --bench ldp                  # everything (a few minutes)
//! cargo bench --bench ldp -- client/       # one user's privatisation, per mechanism and d
//! cargo bench --bench ldp -- fwht          # the in-place fast Walsh–Hadamard transform, 2^20
//! cargo bench --bench ldp -- normals       # 10^6 standard normals from ChaCha20
//! cargo bench --bench ldp -- keystream     # ChaCha keystream throughput, one core
//! DPRP_BENCH_CPU=1 cargo bench --bench ldp   # also cpu-client/…, cpu-fwht/… in thread CPU time
//! ```
//!
//! On a shared machine wall time counts the time other processes hold the core; with
//! `DPRP_BENCH_CPU=1` the client and FWHT groups are repeated measuring the benchmark thread's
//! CPU time (`CLOCK_THREAD_CPUTIME_ID`; everything here runs on one thread), the "on one core"
//! figure.
//!
//! * `client/privunit2/d`, `client/privunitg/d` for d ∈ {1000, 2^15, 10^6}: `privatize_unit` of a
//!   fixed unit vector (the already debiased output vector included).
//! * `client/projunit-srht/d1000000-k1000`: what a ProjUnit-SRHT client does for one user —
//!   regenerate its public SRHT from its row seed ([`Seed::for_row`]), project, normalise, and
//!   run PrivUnitG in `R^k` (target: under 10 ms).
//! * `fwht/normalized-f64/1048576`: [`fwht_normalized`] in place.
//! * `client/projunit-rotation/d8192-k1000`: one user of ProjUnit with the rotation as in the peer
//!   benchmark: regenerate `W`, encode and decode.
//! * `normals/*`: 10^6 N(0,1) from a ChaCha20 stream, `rand_distr::StandardNormal` one at a time
//!   (the previous sampler of the mechanisms) against the bulk ziggurat [`fill_standard_normal`]
//!   (on dprp's multi-block ChaCha20, and on rand_chacha's own ChaCha20 keystream); and the bulk
//!   ziggurat on rand_chacha's ChaCha12 and ChaCha8.
//! * `keystream/*`: 1 MiB of keystream per call from rand_chacha's ChaCha20/12/8 and from dprp's
//!   multi-block ChaCha20 (sixteen or eight blocks at a time; same words as rand_chacha's ChaCha20).
//!
//! All noise comes from ChaCha20 (here seeded with a fixed key so that runs are comparable).

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput};
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::{ChaCha12Rng, ChaCha20Rng, ChaCha8Rng};
use rand_distr::StandardNormal;

use dprp::mechanism::local::normal::{fill_standard_normal, FillBytesOnly};
use dprp::mechanism::local::{PrivUnit2, PrivUnitG, ProjKind, ProjUnit};
use dprp::privacy::chacha::fill_from_rng;
use dprp::projection::hadamard::fwht_normalized;
use dprp::projection::Seed;

const EPSILON: f64 = 4.0;
const DIMS: [usize; 3] = [1000, 1 << 15, 1_000_000];

/// A fixed unit vector of `R^d` (deterministic, no zero coordinates).
fn unit_vector(d: usize) -> Vec<f64> {
    let v: Vec<f64> = (0..d)
        .map(|i| ((i as f64 + 0.5) * 0.618_033_988_749_895).fract() - 0.5)
        .collect();
    let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

/// CPU time of the calling thread (criterion calls `start` and `end` on the benchmark thread).
struct ThreadCpu;

static WALL: WallTime = WallTime;

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer to a timespec; CLOCK_THREAD_CPUTIME_ID exists on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

impl Measurement for ThreadCpu {
    type Intermediate = Duration;
    type Value = Duration;
    fn start(&self) -> Duration {
        thread_cpu()
    }
    fn end(&self, start: Duration) -> Duration {
        thread_cpu().saturating_sub(start)
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
        WALL.formatter()
    }
}

fn group_settings<M: Measurement>(g: &mut BenchmarkGroup<'_, M>) {
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
}

fn bench_clients<M: Measurement>(c: &mut Criterion<M>, name: &str) {
    let mut g = c.benchmark_group(name);
    group_settings(&mut g);
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    for &d in &DIMS {
        let u = unit_vector(d);
        let m2 = PrivUnit2::new(EPSILON, d).expect("PrivUnit2");
        g.bench_with_input(BenchmarkId::new("privunit2", d), &u, |b, u| {
            b.iter(|| {
                m2.privatize_unit(black_box(u), &mut rng)
                    .expect("privatize")
            })
        });
        let mg = PrivUnitG::new(EPSILON, d).expect("PrivUnitG");
        g.bench_with_input(BenchmarkId::new("privunitg", d), &u, |b, u| {
            b.iter(|| {
                mg.privatize_unit(black_box(u), &mut rng)
                    .expect("privatize")
            })
        });
    }
    let (d, k) = (1_000_000, 1000);
    let pu = ProjUnit::new(EPSILON, d, k, ProjKind::Srht).expect("ProjUnit");
    let v = unit_vector(d);
    let release = Seed([7; 32]);
    let mut row = 0u64;
    g.bench_with_input(
        BenchmarkId::new("projunit-srht", format!("d{d}-k{k}")),
        &v,
        |b, v| {
            b.iter(|| {
                row += 1;
                let w = pu.matrix(release.for_row(row)).expect("matrix");
                pu.encode(&w, black_box(v), &mut rng).expect("encode")
            })
        },
    );
    // ProjUnit with the rotation, d = 2^13, k = 1000: what one user costs in the peer benchmark
    // (regenerate W from the row seed, encode, and decode c·Wᵀẑ: 2k reflections of length ≤ d).
    let (d, k) = (1 << 13, 1000);
    let pr = ProjUnit::new(EPSILON, d, k, ProjKind::Rotation).expect("ProjUnit");
    let v = unit_vector(d);
    g.bench_with_input(
        BenchmarkId::new("projunit-rotation", format!("d{d}-k{k}")),
        &v,
        |b, v| {
            b.iter(|| {
                row += 1;
                let w = pr.matrix(release.for_row(row)).expect("matrix");
                let z = pr.encode(&w, black_box(v), &mut rng).expect("encode");
                pr.decode(&w, &z).expect("decode")
            })
        },
    );
    g.finish();
}

fn bench_fwht<M: Measurement>(c: &mut Criterion<M>, name: &str) {
    let mut g = c.benchmark_group(name);
    group_settings(&mut g);
    let n = 1usize << 20;
    g.throughput(Throughput::Elements(n as u64));
    let mut x = unit_vector(n);
    g.bench_function(BenchmarkId::new("normalized-f64", n), |b| {
        b.iter(|| fwht_normalized(black_box(&mut x)).expect("fwht"))
    });
    g.finish();
}

fn bench_normals(c: &mut Criterion) {
    let mut g = c.benchmark_group("normals");
    group_settings(&mut g);
    let n = 1_000_000;
    g.throughput(Throughput::Elements(n as u64));
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let mut buf = vec![0f64; n];
    g.bench_function(BenchmarkId::new("rand_distr-standard-normal", n), |b| {
        b.iter(|| {
            for x in buf.iter_mut() {
                *x = rng.sample(StandardNormal);
            }
            black_box(&buf);
        })
    });
    g.bench_function(BenchmarkId::new("bulk-ziggurat", n), |b| {
        b.iter(|| {
            fill_standard_normal(&mut rng, &mut buf);
            black_box(&buf);
        })
    });
    // The same sampler on the reduced-round ChaCha generators (also CSPRNGs), to show what the
    // generator costs: the mechanisms take any `Rng`, the caller picks it.
    let mut rng12 = ChaCha12Rng::seed_from_u64(3);
    g.bench_function(BenchmarkId::new("bulk-ziggurat-chacha12", n), |b| {
        b.iter(|| {
            fill_standard_normal(&mut rng12, &mut buf);
            black_box(&buf);
        })
    });
    let mut rng8 = ChaCha8Rng::seed_from_u64(4);
    g.bench_function(BenchmarkId::new("bulk-ziggurat-chacha8", n), |b| {
        b.iter(|| {
            fill_standard_normal(&mut rng8, &mut buf);
            black_box(&buf);
        })
    });
    // The same sampler on rand_chacha's own ChaCha20 keystream (`fill_bytes`), i.e. without
    // dprp's multi-block ChaCha20: what the keystream implementation is worth.
    let mut plain = FillBytesOnly(ChaCha20Rng::seed_from_u64(5));
    g.bench_function(BenchmarkId::new("bulk-ziggurat-rand_chacha20", n), |b| {
        b.iter(|| {
            fill_standard_normal(&mut plain, &mut buf);
            black_box(&buf);
        })
    });
    g.finish();
}

/// Keystream throughput (bytes per second, 1 MiB per call, one core): rand_chacha's ChaCha20,
/// ChaCha12 and ChaCha8 (`fill_bytes`) against dprp's multi-block ChaCha20
/// ([`dprp::privacy::chacha::fill_from_rng`], the same words as rand_chacha's ChaCha20).
fn bench_keystream(c: &mut Criterion) {
    let mut g = c.benchmark_group("keystream");
    group_settings(&mut g);
    let mut buf = vec![0u64; 1 << 17];
    g.throughput(Throughput::Bytes((buf.len() * 8) as u64));
    let mut r20 = ChaCha20Rng::seed_from_u64(6);
    g.bench_function("rand_chacha-chacha20", |b| {
        b.iter(|| r20.fill_bytes(black_box(bytemuck::cast_slice_mut(&mut buf))))
    });
    let mut r12 = ChaCha12Rng::seed_from_u64(6);
    g.bench_function("rand_chacha-chacha12", |b| {
        b.iter(|| r12.fill_bytes(black_box(bytemuck::cast_slice_mut(&mut buf))))
    });
    let mut r8 = ChaCha8Rng::seed_from_u64(6);
    g.bench_function("rand_chacha-chacha8", |b| {
        b.iter(|| r8.fill_bytes(black_box(bytemuck::cast_slice_mut(&mut buf))))
    });
    let mut d20 = ChaCha20Rng::seed_from_u64(6);
    g.bench_function("dprp-chacha20", |b| {
        b.iter(|| fill_from_rng(&mut d20, black_box(&mut buf)))
    });
    g.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_clients(&mut c, "client");
    bench_fwht(&mut c, "fwht");
    bench_normals(&mut c);
    bench_keystream(&mut c);
    c.final_summary();
    if std::env::var_os("DPRP_BENCH_CPU").is_some_and(|v| v == "1") {
        let mut cpu = Criterion::default()
            .with_measurement(ThreadCpu)
            .configure_from_args();
        bench_clients(&mut cpu, "cpu-client");
        bench_fwht(&mut cpu, "cpu-fwht");
        cpu.final_summary();
    }
}
