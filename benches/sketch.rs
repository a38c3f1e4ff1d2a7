//! Count sketch cost (issue 12): regenerate the public sketch from its seed, encode `y = Sx` and
//! decode `Sᵀy`, at d = 10^6 and m = 10^5, one thread.
//!
//! ```text
//! cargo bench --bench sketch                 # everything
//! cargo bench --bench sketch -- encode       # one group
//! ```
//!
//! * `generate/d1000000-m100000-t{1,5}`: [`CountSketch::generate`] (the `t·d` hashes by
//!   multiply-and-reject on ChaCha20 stream 6, the signs from stream 7).
//! * `encode/…`, `decode/…`: one vector through [`CountSketch::encode_into`] /
//!   [`CountSketch::decode_into`] (buffers preallocated; `O(t·d)` each).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use dprp::projection::{CountSketch, Seed};

const D: usize = 1_000_000;
const M: usize = 100_000;

fn input(d: usize) -> Vec<f64> {
    (0..d)
        .map(|i| ((i as f64 + 0.5) * 0.618_033_988_749_895).fract() - 0.5)
        .collect()
}

fn bench(c: &mut Criterion) {
    let seed = Seed([7; 32]);
    let x = input(D);
    for t in [1usize, 5] {
        let id = format!("d{D}-m{M}-t{t}");
        let mut g = c.benchmark_group("generate");
        g.sample_size(10);
        g.throughput(Throughput::Elements((D * t) as u64));
        g.bench_function(BenchmarkId::from_parameter(&id), |b| {
            b.iter(|| black_box(CountSketch::generate(D, M, t, seed).unwrap()))
        });
        g.finish();

        let s = CountSketch::generate(D, M, t, seed).unwrap();
        let mut y = vec![0.0; M];
        let mut back = vec![0.0; D];
        let mut g = c.benchmark_group("encode");
        g.sample_size(20);
        g.throughput(Throughput::Elements(D as u64));
        g.bench_function(BenchmarkId::from_parameter(&id), |b| {
            b.iter(|| s.encode_into(black_box(&x), &mut y).unwrap())
        });
        g.finish();
        s.encode_into(&x, &mut y).unwrap();
        let mut g = c.benchmark_group("decode");
        g.sample_size(20);
        g.throughput(Throughput::Elements(D as u64));
        g.bench_function(BenchmarkId::from_parameter(&id), |b| {
            b.iter(|| s.decode_into(black_box(&y), &mut back).unwrap())
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
