//! End-to-end publishing with float noise against lattice noise (issue 13: lattice noise must
//! cost at most 2× the float-noise time) on MNIST train: dense Rademacher k = 1024 and OPORP
//! k = 512, ε = 5, δ = 10⁻⁶.
//!
//! ```text
//! cargo bench --bench publish_noise                 # interleaved medians + criterion
//! DPRP_NOISE_ROWS=60000 cargo bench --bench publish_noise   # the full 60000 rows per run
//! ```
//!
//! Each run reads a native dataset, projects, adds the noise and writes a release, as
//! `dprp publish` does. The loop uses the first `DPRP_NOISE_ROWS` rows (default 10000, so a
//! criterion sample takes about a second on 2 cores). On a shared machine the two noises are
//! timed **interleaved** (float, lattice, float, …), and the medians and their ratio are printed
//! first; criterion's own report follows. MNIST is found as in `benches/publish.rs` (the
//! project's `data/`, or `$DPRP_DATA`); without it the bench prints `skipping` and exits.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::Criterion;

use dprp::data::scale::{ScaleArg, ScalingRequest};
use dprp::data::{native, InputOptions};
use dprp::mechanism::{MechanismKind, MechanismParams, NoiseChoice};
use dprp::privacy::guarantee::Neighbour;
use dprp::privacy::samplers::noise::NoiseSource;
use dprp::projection::{DenseKind, Seed};
use dprp::publish::{load_scaled, publish_with, PublishOptions, PublishRequest};

const SETTINGS: [(&str, MechanismKind, usize); 2] = [
    ("dp-rp-g-opt-rademacher", MechanismKind::DpRpGOpt, 1024),
    ("dp-oporp", MechanismKind::DpOporp, 512),
];

fn mnist_path() -> Option<PathBuf> {
    let root = match std::env::var_os("DPRP_DATA") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("data"),
    };
    let f = root.join("mnist/train-images-idx3-ubyte.gz");
    f.is_file().then_some(f)
}

fn request(kind: MechanismKind, k: usize, input: &Path, output: PathBuf) -> PublishRequest {
    PublishRequest {
        input: input.to_path_buf(),
        input_opts: InputOptions::default(),
        scaling: ScalingRequest::default(),
        params: MechanismParams {
            kind,
            epsilon: 5.0,
            delta: Some(1e-6),
            beta: 1.0,
            neighbour: Neighbour::Coordinate,
            p: 0,
            k: Some(k),
            projection: kind.dense().then_some(DenseKind::Rademacher),
            seed: Some(Seed::parse_hex("d9e5").expect("valid hex seed")),
            min_norm: None,
            individual_dp: false,
            local: Default::default(),
        },
        output,
    }
}

fn publish_once(req: &PublishRequest, noise: NoiseChoice, src: &NoiseSource) -> Duration {
    let opts = PublishOptions {
        noise,
        ..Default::default()
    };
    let t = Instant::now();
    if let Err(e) = publish_with(req, src, &opts) {
        eprintln!("publish failed: {e}");
        std::process::exit(1);
    }
    t.elapsed()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn run() -> dprp::Result<()> {
    let Some(mnist) = mnist_path() else {
        println!(
            "skipping: MNIST not found (it ships in data/mnist; set DPRP_DATA to a directory \
             holding mnist/ and libsvm/)"
        );
        return Ok(());
    };
    let rows: usize = std::env::var("DPRP_NOISE_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let reps: usize = std::env::var("DPRP_NOISE_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(9);
    let mut data = load_scaled(
        &mnist,
        &InputOptions::default(),
        &ScalingRequest {
            scale: Some(ScaleArg::Divide(255.0)),
            ..Default::default()
        },
    )?;
    let rows = rows.min(data.n);
    data.values.truncate(rows * data.p);
    data.n = rows;
    data.labels = data.labels.map(|mut l| {
        l.truncate(rows);
        l
    });
    let tmp = tempfile::Builder::new()
        .prefix("dprp-noise-bench-")
        .tempdir()
        .map_err(|e| dprp::Error::io(Path::new("tempdir"), e))?;
    let input = tmp.path().join("mnist.bin");
    native::write(&input, &data)?;
    let src = NoiseSource::from_os()?;

    println!("publish, float vs lattice noise: MNIST train, first {rows} rows, {reps} interleaved runs each");
    println!("| setting | float median (s) | lattice median (s) | lattice / float |");
    println!("|---|---|---|---|");
    for (label, kind, k) in SETTINGS {
        let req = request(kind, k, &input, tmp.path().join(format!("{label}.dprp")));
        publish_once(&req, NoiseChoice::Float, &src); // warm-up (page cache, matrix)
        let (mut f, mut l) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            f.push(publish_once(&req, NoiseChoice::Float, &src).as_secs_f64());
            l.push(publish_once(&req, NoiseChoice::Lattice, &src).as_secs_f64());
        }
        let (mf, ml) = (median(f), median(l));
        println!("| {label} k = {k} | {mf:.3} | {ml:.3} | {:.2} |", ml / mf);
    }
    println!();

    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8))
        .configure_from_args();
    let mut g = c.benchmark_group("publish-noise");
    for (label, kind, k) in SETTINGS {
        let req = request(kind, k, &input, tmp.path().join(format!("{label}-c.dprp")));
        for (name, noise) in [
            ("float", NoiseChoice::Float),
            ("lattice", NoiseChoice::Lattice),
        ] {
            g.bench_function(format!("{label}/{k}/{name}"), |b| {
                b.iter(|| publish_once(&req, noise, &src))
            });
        }
    }
    g.finish();
    c.final_summary();
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
