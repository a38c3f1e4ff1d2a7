//! The distributed mechanisms in `dprp eval mean` (binomial, ddg, sketch-ddg): one repeat runs
//! the encoder `dprp aggregate` would run ([`plan_encoder`], same planner, same encoder) for
//! every user and decodes the sum mod `M`.
//!
//! **What the evaluation leaves out, and why that changes no number.** A real round masks each
//! message with pairwise one-time pads ([`crate::mechanism::distributed::secagg`]); the pads cancel exactly in
//! the sum mod `M` (tested bit for bit in `tests/distributed_round.rs`), so the decoded mean is
//! the same with or without them and the evaluation skips their cost. The users' noise comes
//! from ChaCha20 streams of a recorded seed (stream `i` for user `i`) instead of the operating
//! system, so every figure can be regenerated — an evaluation is a simulation, never a release.
//!
//! **The closed form** is the planner's expected squared error with one change: the count
//! sketch's term is `(d−1)‖μ̄‖²/m` at the data's own mean (the planner assumes the worst case
//! `‖μ̄‖ = c`), the exact expectation over fully random hashes. The other terms bound the error
//! from above (discrete Gaussian variance below σ², rounding variance at most ¼, the rounding
//! bias bound), so the figure is an upper bound and the check is one-sided.

use std::time::Instant;

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

use super::grid::Seeds;
use super::mean_repeat::{DistributedOutcome, Repeat};
use crate::error::Result;
use crate::mechanism::distributed::accountant::params::DistributedRequest;
use crate::mechanism::distributed::secagg::ModularSum;
use crate::mechanism::distributed::{plan_encoder, ClientEncoder, DistributedKind, Planned};
use crate::mechanism::local::release::ErrorKind;
use crate::projection::count_sketch::CountSketch;
use crate::projection::Seed;

/// Users encoded per parallel task.
const USERS_PER_TASK: usize = 16;

/// Plan `kind` for `req` (an error when the planner finds no parameters).
pub(super) fn plan(
    kind: DistributedKind,
    req: &DistributedRequest,
    cap: Option<f64>,
) -> Result<Planned> {
    plan_encoder(kind, req, cap, Seed([0; 32]))
}

/// One thread's share of a repeat.
struct Part {
    sum: ModularSum,
    exact: Vec<i128>,
    seconds: f64,
}

/// One repeat: plan with a fresh public seed, encode every user (rows of `d` values, in the
/// unit ball) in parallel, add the messages mod `M`, decode.
pub(super) fn run_distributed(
    kind: DistributedKind,
    req: &DistributedRequest,
    cap: Option<f64>,
    rows: &[f64],
    mean: &[f64],
    seeds: &Seeds,
    r: usize,
) -> Result<Repeat> {
    let d = req.d as usize;
    let tag = format!(
        "{} eps={} d={d} n={} b={} cap={cap:?} repeat={r}",
        kind.name(),
        req.epsilon,
        req.n,
        req.bits
    );
    let map_seed = seeds.derive(&format!("mean distributed map {tag}"));
    let noise_seed = seeds.derive(&format!("mean distributed noise {tag}"));
    let planned = plan_encoder(kind, req, cap, map_seed)?;
    let enc: &dyn ClientEncoder = planned.encoder.as_ref();
    let len = enc.message_len();
    let parts = rows
        .par_chunks(USERS_PER_TASK * d)
        .enumerate()
        .map(|(t, users)| {
            let started = Instant::now();
            let mut part = Part {
                sum: ModularSum::new(len, enc.modulus()),
                exact: vec![0; len],
                seconds: 0.0,
            };
            let mut msg = vec![0u64; len];
            let mut rng = ChaCha20Rng::from_seed(noise_seed.0);
            for (i, x) in users.chunks_exact(d).enumerate() {
                rng.set_stream((t * USERS_PER_TASK + i) as u64);
                rng.set_word_pos(0);
                enc.encode(x, &mut msg, &mut rng, Some(&mut part.exact))?;
                part.sum.add(&msg)?;
            }
            part.seconds = started.elapsed().as_secs_f64();
            Ok(part)
        })
        .collect::<Result<Vec<Part>>>()?;
    let started = Instant::now();
    let mut sum = ModularSum::new(len, enc.modulus());
    let mut exact = vec![0i128; len];
    let mut client_seconds = 0.0;
    for p in parts {
        sum.merge(&p.sum)?;
        exact.iter_mut().zip(&p.exact).for_each(|(a, b)| *a += b);
        client_seconds += p.seconds;
    }
    let estimate = enc.decode(&sum)?;
    let server = started.elapsed().as_secs_f64();
    let wrapped = exact.iter().filter(|&&v| !enc.decodes_exactly(v)).count() as u64;
    let mut terms = planned.mse;
    if let Some(m) = planned.sketch_m {
        let norm_sq: f64 = mean.iter().map(|x| x * x).sum();
        terms.sketch = CountSketch::expected_error_sq(d, m as usize, norm_sq);
    }
    let sq_error = estimate
        .iter()
        .zip(mean)
        .map(|(a, b)| (a - b) * (a - b))
        .sum();
    Ok(Repeat {
        sq_error,
        expected: terms.total(),
        error_kind: ErrorKind::UpperBound,
        per_user: Vec::new(),
        client_per_user: Some(client_seconds / req.n as f64),
        server,
        seeds: format!("{}:{}", map_seed.to_hex(), noise_seed.to_hex()),
        distributed: Some(DistributedOutcome {
            bits_per_parameter: planned.bits_per_parameter,
            sketch_m: planned.sketch_m,
            wrapped,
        }),
    })
}
