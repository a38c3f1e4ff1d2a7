//! The exact integer samplers (`dprp::privacy::exact`, issue 12 "Benchmarks and targets"), one
//! thread, noise from ChaCha20 seeded with a fixed key so that runs are comparable.
//!
//! ```text
//! cargo bench --bench exact                       # everything (about a minute)
//! cargo bench --bench exact -- discrete-gaussian  # N_Z(0, σ²) per sample, σ ∈ {10, …, 10^4}
//! cargo bench --bench exact -- binomial           # Bin(N, ½) and Bin(N, p), coin flips per second
//! ```
//!
//! * `discrete-gaussian/fill/σ`: [`DiscreteGaussian::fill`] of 10^4 samples (criterion reports
//!   the time per sample through `Throughput::Elements`), σ² converted exactly from `σ·σ`.
//! * `discrete-laplace/fill/t`: [`DiscreteLaplace::fill`], the proposals of the Gaussian at
//!   `t = σ + 1`.
//! * `table-gaussian/fill/s²`: [`TableGaussian::fill`] of 10^4 samples (the lattice noise's
//!   sampler; `s² = 5 034 748 662` is MNIST's at ε = 10, k = 1024, `γ = 2^-17`).
//! * `table-gaussian/new/s²`: [`TableGaussian::new`], the sampler's set-up (its weights, the
//!   cumulative table and the 2^16-entry guide), paid once per mechanism built.
//! * `lattice-noise/add/k`: [`LatticeNoise::add`] of 256 rows of `k` values, each row from its
//!   own ChaCha20 stream as `publish` draws them (per value: the sampler, the keystream, the
//!   rounding and adding).
//! * `binomial/half/N`: [`fill_binomial_half`] of `Bin(N, ½)` samples, throughput in coin flips
//!   (target ≥ 200 M flips/s per core); `N = 65` checks the cost of a remainder word.
//! * `binomial/p3_8/N`, `binomial/p1_3/N`: [`Binomial::fill`] for a dyadic `p = 3/8` and for `p = 1/3`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use dprp::privacy::exact::{
    fill_binomial_half, Binomial, DiscreteGaussian, DiscreteLaplace, Rational, TableGaussian,
};
use dprp::privacy::lattice::LatticeNoise;

fn settings(g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
}

fn bench_gaussian(c: &mut Criterion) {
    let n = 10_000;
    let mut buf = vec![0i64; n];
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut g = c.benchmark_group("discrete-gaussian");
    settings(&mut g);
    g.throughput(Throughput::Elements(n as u64));
    for sigma in [10f64, 100.0, 1e3, 1e4] {
        let s = DiscreteGaussian::new(Rational::from_f64(sigma * sigma).expect("σ²")).expect("σ");
        g.bench_function(BenchmarkId::new("fill", sigma), |b| {
            b.iter(|| {
                s.fill(&mut rng, &mut buf);
                black_box(&buf);
            })
        });
    }
    g.finish();
    let mut g = c.benchmark_group("discrete-laplace");
    settings(&mut g);
    g.throughput(Throughput::Elements(n as u64));
    for t in [11u128, 1001] {
        let s = DiscreteLaplace::new(Rational::integer(t)).expect("scale");
        g.bench_function(BenchmarkId::new("fill", t), |b| {
            b.iter(|| {
                s.fill(&mut rng, &mut buf);
                black_box(&buf);
            })
        });
    }
    g.finish();
}

fn bench_table(c: &mut Criterion) {
    let n = 10_000;
    let mut buf = vec![0i64; n];
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let mut g = c.benchmark_group("table-gaussian");
    settings(&mut g);
    g.throughput(Throughput::Elements(n as u64));
    for s2 in [5_034_748_662u64, 1 << 40] {
        g.throughput(Throughput::Elements(1));
        g.bench_function(BenchmarkId::new("new", s2), |b| {
            b.iter(|| black_box(TableGaussian::new(black_box(s2)).expect("s²")))
        });
        g.throughput(Throughput::Elements(n as u64));
        let t = TableGaussian::new(s2).expect("s²");
        g.bench_function(BenchmarkId::new("fill", s2), |b| {
            b.iter(|| {
                t.fill(&mut rng, &mut buf);
                black_box(&buf);
            })
        });
    }
    g.finish();
    let mut g = c.benchmark_group("lattice-noise");
    settings(&mut g);
    let noise = LatticeNoise::new(17, 5_034_748_662).expect("lattice");
    let rows = 256;
    for k in [256usize, 1024] {
        let y: Vec<f64> = (0..rows * k)
            .map(|i| ((i * 7919) % 2001) as f64 / 1000.0 - 1.0)
            .collect();
        let mut out = vec![0f32; rows * k];
        g.throughput(Throughput::Elements((rows * k) as u64));
        g.bench_function(BenchmarkId::new("add", k), |b| {
            b.iter(|| {
                for (i, (yr, or)) in y.chunks(k).zip(out.chunks_mut(k)).enumerate() {
                    let mut rng = ChaCha20Rng::from_seed([7; 32]);
                    rng.set_stream(i as u64);
                    noise.add(yr, or, &mut rng).expect("in range");
                }
                black_box(&out);
            })
        });
    }
    g.finish();
}

fn bench_binomial(c: &mut Criterion) {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let mut g = c.benchmark_group("binomial");
    settings(&mut g);
    for (n, samples) in [(65u64, 100_000usize), (1 << 16, 1000)] {
        let mut out = vec![0u64; samples];
        g.throughput(Throughput::Elements(n * samples as u64));
        g.bench_function(BenchmarkId::new("half", n), |b| {
            b.iter(|| {
                fill_binomial_half(&mut rng, n, &mut out);
                black_box(&out);
            })
        });
    }
    let (n, samples) = (1u64 << 16, 1000usize);
    let mut out = vec![0u64; samples];
    g.throughput(Throughput::Elements(n * samples as u64));
    for (name, p) in [("3/8", (3u128, 8u128)), ("1/3", (1, 3))] {
        let bin = Binomial::new(n, Rational::new(p.0, p.1).expect("p")).expect("Bin");
        g.bench_function(
            BenchmarkId::new(format!("p{}", name.replace('/', "_")), n),
            |b| {
                b.iter(|| {
                    bin.fill(&mut rng, &mut out);
                    black_box(&out);
                })
            },
        );
    }
    g.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_gaussian(&mut c);
    bench_table(&mut c);
    bench_binomial(&mut c);
    c.final_summary();
}
