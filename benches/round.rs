//! One client's share of a secure-aggregation round with sketch-DDG (issue 12's full-round
//! target: n = 1000 clients, d = 10^6, m = 131072), piece by piece, one thread. Multiply a
//! per-client time by n = 1000 and divide by the cores to read it against the round.
//!
//! ```text
//! cargo bench --bench round                 # every piece
//! cargo bench --bench round -- noise        # one piece
//! ```
//!
//! * `synthetic`: one `--synthetic` row (10^6 normals, ziggurat on xoshiro256++, normalised,
//!   f32).
//! * `normals-chacha`, `normals-xoshiro`: the 10^6 ziggurat normals alone, on ChaCha20 keystream
//!   words (the synthetic rows' generator until round2, and the secret-noise path's) and on
//!   xoshiro256++ words (the synthetic rows' now).
//! * `sketch`: `y = Sx`, the count sketch from 10^6 to m coordinates.
//! * `round`: clip, flatten (H·D in m dimensions) and conditional randomised rounding.
//! * `noise`: m exact discrete Gaussians at the plan's σ/γ (CKS 2020 on the client's stream).
//! * `mask`: the 2⌈log₂ n⌉ = 20 pairwise pads of b = 16 bits added to the message.
//! * `sum`: adding one masked message to the server's sum mod M.
//! * `client`: encode + mask + sum, what the round does per client after reading its row.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, SamplingMode};

use dprp::data::synthetic::SyntheticRows;
use dprp::data::RowReader;
use dprp::mechanism::distributed::secagg::{default_half_degree, ModularSum, SecAggRound};
use dprp::mechanism::distributed::{ClientEncoder, DdgParams, SketchDdg};
use dprp::privacy::chacha::BufferedChaCha;
use dprp::privacy::samplers::noise::NoiseSource;
use dprp::projection::Seed;
use dprp::rng::normal::fill_standard_normal;
use dprp::rng::Xoshiro256pp;
use rand::SeedableRng;

const N: u64 = 1000;
const D: usize = 1_000_000;
const M: usize = 131_072;

/// The plan `dprp aggregate -m sketch-ddg --bits-per-parameter 2.1 --synthetic 1000,1000000
/// --epsilon 1 --delta 1e-5 --clip 1 --bits 16` prints.
fn params() -> DdgParams {
    DdgParams {
        clip: 1.0,
        gamma: 1.121686e-3,
        sigma: 1.308425e-1,
        beta: 1e-3,
        bits: 16,
    }
}

fn settings(g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
}

fn bench(c: &mut Criterion) {
    let seed = Seed([7; 32]);
    let enc = SketchDdg::new(D, M, 1, params(), seed).expect("encoder");
    let noise = NoiseSource::from_seed("bench round");
    let secagg =
        SecAggRound::new(N, M, enc.modulus(), default_half_degree(N), [3; 32]).expect("round");
    let mut rows = SyntheticRows::new(u64::MAX, D, Seed([4; 32])).expect("rows");
    let (mut v, mut l) = (Vec::new(), Vec::new());
    rows.read_chunk(1, &mut v, &mut l).expect("row");
    let x: Vec<f64> = v.iter().map(|&a| a as f64).collect();
    let y = enc.sketch().encode(&x).expect("sketch");

    let mut g = c.benchmark_group("round-client");
    settings(&mut g);
    g.bench_function("synthetic", |b| {
        b.iter(|| {
            v.clear();
            rows.read_chunk(1, &mut v, &mut l).expect("row");
            black_box(&v);
        })
    });
    let mut z = vec![0.0f64; D];
    let mut chacha = rand_chacha::ChaCha20Rng::from_seed([4; 32]);
    g.bench_function("normals-chacha", |b| {
        b.iter(|| {
            fill_standard_normal(&mut chacha, &mut z);
            black_box(&z);
        })
    });
    let mut xo = Xoshiro256pp::from_seed_stream([4; 32], 1);
    g.bench_function("normals-xoshiro", |b| {
        b.iter(|| {
            fill_standard_normal(&mut xo, &mut z);
            black_box(&z);
        })
    });
    let mut out = vec![0.0; M];
    g.bench_function("sketch", |b| {
        b.iter(|| {
            enc.sketch()
                .encode_into(black_box(&x), &mut out)
                .expect("sketch")
        })
    });
    let mut client = 0u64;
    g.bench_function("round", |b| {
        b.iter(|| {
            client += 1;
            black_box(
                enc.ddg()
                    .round(&y, &mut noise.row_rng(client))
                    .expect("round"),
            )
        })
    });
    let dg = enc.ddg().noise().expect("σ > 0").clone();
    let mut zn = vec![0i64; M];
    g.bench_function("noise", |b| {
        b.iter(|| {
            client += 1;
            let mut rng = noise.row_rng(client);
            dg.fill(&mut BufferedChaCha::new(&mut rng), &mut zn);
            black_box(&zn);
        })
    });
    let mut msg = vec![0u64; M];
    g.bench_function("mask", |b| {
        b.iter(|| secagg.mask(black_box(client % N), &mut msg).expect("mask"))
    });
    let mut sum = ModularSum::new(M, enc.modulus());
    g.bench_function("sum", |b| b.iter(|| sum.add(black_box(&msg)).expect("sum")));
    g.bench_function("client", |b| {
        b.iter(|| {
            client += 1;
            let mut rng = noise.row_rng(client);
            enc.encode(&x, &mut msg, &mut rng, None).expect("encode");
            secagg.mask(client % N, &mut msg).expect("mask");
            sum.add(&msg).expect("sum");
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
