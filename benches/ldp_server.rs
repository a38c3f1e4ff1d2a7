//! Server-side cost of the ProjUnit family at the paper's scale: n = 10⁴ users, d = 2¹⁵, k = 1000.
//!
//! ```text
//! cargo bench --bench ldp_server                    # both
//! cargo bench --bench ldp_server -- correlated      # correlated FastProjUnit: scatter + one transform
//! cargo bench --bench ldp_server -- independent     # independent SRHT ProjUnit: one W_iᵀẑ_i per user
//! ```
//!
//! The privatised vectors are fixed Gaussian draws (the server's cost does not depend on their
//! values). Correlated: `scatter_all` (rayon, chunks of users with their own accumulators) then
//! `finish`. Independent: per user, regenerate the SRHT of `seed.for_row(i)` and add `c·W_iᵀẑ_i`
//! into a per-chunk accumulator (`ProjUnit::decode_into`), chunks in parallel, then add.

use criterion::{criterion_group, criterion_main, Criterion};
use dprp::mechanism::local::{CorrelatedProjUnit, ProjKind, ProjUnit};
use dprp::projection::Seed;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rand_distr::StandardNormal;
use rayon::prelude::*;
use std::hint::black_box;

const N: usize = 10_000;
const D: usize = 1 << 15;
const K: usize = 1000;

fn zs() -> Vec<Vec<f64>> {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    (0..N)
        .map(|_| {
            (0..K)
                .map(|_| rng.sample::<f64, _>(StandardNormal))
                .collect()
        })
        .collect()
}

fn correlated(c: &mut Criterion) {
    let m = CorrelatedProjUnit::new(4.0, D, K).unwrap();
    let public = m.public(Seed([3; 32])).unwrap();
    let zs = zs();
    let mut g = c.benchmark_group("correlated");
    g.sample_size(10);
    g.bench_function("n10000-d32768-k1000", |b| {
        b.iter(|| {
            let acc = m.scatter_all(&public, 0, &zs).unwrap();
            black_box(m.finish(&public, &acc, N as u64).unwrap())
        })
    });
    g.finish();
}

fn independent(c: &mut Criterion) {
    let m = ProjUnit::new(4.0, D, K, ProjKind::Srht).unwrap();
    let seed = Seed([3; 32]);
    let zs = zs();
    let mut g = c.benchmark_group("independent");
    g.sample_size(10);
    g.bench_function("srht-n10000-d32768-k1000", |b| {
        b.iter(|| {
            let chunk = N.div_ceil(4 * rayon::current_num_threads());
            let parts: Vec<Vec<f64>> = zs
                .par_chunks(chunk)
                .enumerate()
                .map(|(ci, users)| {
                    let mut acc = vec![0f64; D];
                    for (t, z) in users.iter().enumerate() {
                        let w = m.matrix(seed.for_row((ci * chunk + t) as u64)).unwrap();
                        m.decode_into(&w, z, &mut acc).unwrap();
                    }
                    acc
                })
                .collect();
            let mut total = vec![0f64; D];
            for p in parts {
                total
                    .iter_mut()
                    .zip(&p)
                    .for_each(|(a, b)| *a += b / N as f64);
            }
            black_box(total)
        })
    });
    g.finish();
}

criterion_group!(benches, correlated, independent);
criterion_main!(benches);
