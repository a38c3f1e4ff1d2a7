//! The Rust API in one program: what `cargo add dprp` gives without the command line.
//!
//! ```text
//! cargo run --release --example library
//! ```
//!
//! 1. publish rows held in memory as a private sketch release (DP-OPORP, (ε, δ)-DP);
//! 2. open the release (checksum verified), search it, estimate an inner product with its
//!    standard error;
//! 3. privatise one user's vector with PrivUnitG (ε-local DP) and average many of them;
//! 4. plan a distributed discrete Gaussian (DDG) round for 200 clients, encode each client's
//!    vector, add the messages modulo 2^b (what secure aggregation reveals) and decode the mean.
//!
//! Noise comes from ChaCha20 keyed by the operating system ([`NoiseSource::from_os`]); nothing
//! here is reproducible on purpose. `tests/examples.rs` runs it and checks its errors against
//! the mechanisms' own expectations, so it stays working.

use dprp::data::{Dataset, MemReader, RowReader};
use dprp::estimate::estimate_ip;
use dprp::mechanism::distributed::accountant::params::DistributedRequest;
use dprp::mechanism::distributed::modular::ModularSum;
use dprp::mechanism::distributed::planned::{plan_encoder, DistributedKind};
use dprp::mechanism::local::PrivUnitG;
use dprp::mechanism::{from_record, MechanismKind, MechanismParams};
use dprp::privacy::samplers::noise::NoiseSource;
use dprp::projection::Seed;
use dprp::publish::{publish_from, PublishOptions, PublishRequest};
use dprp::release::Release;
use dprp::search::{exact, Measure, Sketch};
use dprp::Result;

/// `n` rows of `p` values in [-1, 1]: two clusters, so that a search has something to find.
fn rows(n: usize, p: usize) -> Dataset {
    let values = (0..n * p)
        .map(|i| {
            let (row, col) = (i / p, i % p);
            let centre = if row % 2 == 0 { 0.5 } else { -0.5 };
            let wobble = ((i as f32) * 0.618_034).fract() * 0.4 - 0.2;
            (centre * if col % 3 == 0 { 1.0 } else { -1.0 }) + wobble
        })
        .collect();
    Dataset {
        n,
        p,
        values,
        labels: None,
        scaling: Default::default(),
    }
}

/// 1 and 2: publish in-memory rows, then use the release as anyone holding it would.
pub fn sketches(dir: &std::path::Path) -> Result<()> {
    let data = rows(1000, 64);
    let output = dir.join("rows.dprp");
    let request = PublishRequest {
        input: dir.join("(memory)"), // names the input in messages only
        input_opts: Default::default(),
        scaling: Default::default(),
        // β = 1, one-coordinate neighbours, p taken from the rows, a fresh public projection
        // seed recorded in the release: MechanismParams::of's defaults
        params: MechanismParams {
            delta: Some(1e-6),
            k: Some(64),
            ..MechanismParams::of(MechanismKind::DpOporp, 4.0)
        },
        output: output.clone(),
    };
    let mut open = || Ok(Box::new(MemReader::new(&data)) as Box<dyn RowReader>);
    let noise = NoiseSource::from_os()?;
    let outcome = publish_from(
        &request,
        &mut open,
        &noise,
        &PublishOptions::default(),
        None,
    )?;
    println!(
        "published {} rows: {}",
        outcome.meta.n, outcome.meta.statement
    );

    let release = Release::open(&output)?;
    let db = Sketch::Real {
        data: release.values()?,
        k: release.k(),
    };
    let queries = Sketch::Real {
        data: &release.values()?[..release.k()], // row 0 as the query
        k: release.k(),
    };
    let hits = exact::search(&db, &queries, Measure::Cosine, 5, None)?;
    let ids: Vec<usize> = hits[0].iter().map(|h| h.row).collect();
    println!("row 0's five nearest rows by cosine: {ids:?}");

    let mechanism = from_record(&release.meta().mechanism, &release.meta().guarantee)?;
    let estimator = mechanism.as_sketch()?.estimator();
    let e = estimate_ip(&estimator, release.row(0)?, release.row(2)?, None)
        .expect("a Gaussian sketch has an inner-product estimator");
    let truth: f32 = data
        .row(0)
        .iter()
        .zip(data.row(2))
        .map(|(a, b)| a * b)
        .sum();
    println!(
        "⟨u0, u2⟩ ≈ {:.2} ± {:.2} (true {truth:.2}; {})",
        e.inner_product, e.se, e.formula
    );
    Ok(())
}

/// 3: local DP — each user privatises their own unit vector; the average is unbiased. Returns
/// the squared error of the mean and its expectation (`mse_unit / users`).
pub fn local() -> Result<(f64, f64)> {
    let (d, users, epsilon) = (32, 2000, 4.0);
    let mechanism = PrivUnitG::new(epsilon, d)?;
    let noise = NoiseSource::from_os()?;
    let mut direction = vec![0.0; d];
    direction[0] = 1.0;
    let mut mean = vec![0.0; d];
    for user in 0..users {
        let mut rng = noise.row_rng(user); // each user's own noise stream
        let private = mechanism.privatize(&direction, &mut rng)?;
        for (m, x) in mean.iter_mut().zip(private) {
            *m += x / users as f64;
        }
    }
    println!(
        "PrivUnitG, ε = {epsilon}, {users} users: mean[0] ≈ {:.2} (true 1), mean[1] ≈ {:.2} (true 0)",
        mean[0], mean[1]
    );
    let error: f64 = mean
        .iter()
        .zip(&direction)
        .map(|(m, t)| (m - t) * (m - t))
        .sum();
    Ok((error, mechanism.mse_unit() / users as f64))
}

/// 4: distributed DP — a DDG round: clients add small integer noise, the server sees the sum.
/// Returns the squared error of the decoded mean and the plan's expectation of it.
pub fn distributed() -> Result<(f64, f64)> {
    let request = DistributedRequest {
        n: 200,
        d: 16,
        epsilon: 2.0,
        delta: 1e-5,
        clip: 1.0,
        bits: 20,
        max_wrap_probability: 1e-9,
    };
    let planned = plan_encoder(DistributedKind::Ddg, &request, None, Seed::random()?)?;
    println!(
        "DDG for {} clients: ε = {:.3} (target {}), expected squared error of the mean {:.2e}",
        request.n,
        planned.epsilon,
        request.epsilon,
        planned.mse.total()
    );
    let encoder = &planned.encoder;
    let noise = NoiseSource::from_os()?;
    let mut sum = ModularSum::new(encoder.message_len(), encoder.modulus());
    let mut message = vec![0u64; encoder.message_len()];
    let x: Vec<f64> = (0..16).map(|j| if j < 4 { 0.5 } else { 0.0 }).collect();
    for client in 0..request.n {
        encoder.encode(&x, &mut message, &mut noise.row_rng(client), None)?;
        sum.add(&message)?;
    }
    let mean = encoder.decode(&sum)?;
    println!(
        "decoded mean[0] ≈ {:.2} (true 0.5), mean[8] ≈ {:.2} (true 0)",
        mean[0], mean[8]
    );
    let error: f64 = mean.iter().zip(&x).map(|(m, t)| (m - t) * (m - t)).sum();
    Ok((error, planned.mse.total()))
}

pub fn main() -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| dprp::Error::io("temporary directory", e))?;
    sketches(dir.path())?;
    local()?;
    distributed()?;
    Ok(())
}
