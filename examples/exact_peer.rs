//! The dprp side of the exact-sampler peer benchmark (`benches/run-exact-peers.sh`,
//! `benches/peer_opendp.py`): time the exact discrete Gaussian per sample at each σ, and
//! `Bin(N, ½)` in coin flips per second, and print one JSON object.
//!
//! ```sh
//! cargo run --release --example exact_peer -- --sigma 10,100,1000,10000 --n 1000000 --reps 5
//! ```
//!
//! Each σ builds a [`DiscreteGaussian`] with `σ²` converted exactly from the `f64` `σ·σ`
//! ([`Rational::from_f64`]) and fills a buffer of `--n` samples with
//! [`DiscreteGaussian::fill`] from ChaCha20 keyed by the operating system (dprp's noise
//! generator) — one thread. Only the fill is timed; `ns_per_sample` is the median over `--reps`
//! repetitions of the fill time divided by `n`, and `cpu_ns_per_sample` the same in the thread's
//! CPU time (`CLOCK_THREAD_CPUTIME_ID`). The sample variance over all repetitions is
//! reported next to `σ²` as a sanity check (the discrete Gaussian's variance is just below `σ²`).
//! `Bin(N, ½)` is timed the same way with [`fill_binomial_half`] over `--bin-n` trials per sample
//! (`flips_per_sec` = trials per second).

use std::time::Instant;

use clap::Parser;

use dprp::privacy::exact::{
    fill_binomial_half, DiscreteGaussian, Rational, TableGaussian, TABLE_GAUSSIAN_MAX_S2,
    TABLE_GAUSSIAN_MIN_S2,
};
use dprp::privacy::samplers::noise::NoiseSource;
use dprp::{Error, Result};

#[derive(Debug, Parser)]
#[command(about = "Time dprp's exact discrete Gaussian and Bin(N, 1/2) samplers (peer benchmark)")]
struct Args {
    /// Comma-separated σ values.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000,10000")]
    sigma: Vec<f64>,
    /// Samples per repetition.
    #[arg(long, default_value_t = 1_000_000)]
    n: usize,
    /// Repetitions (the median is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Trials per Bin(N, ½) sample.
    #[arg(long, default_value_t = 65_536)]
    bin_n: u64,
    /// Bin(N, ½) samples per repetition.
    #[arg(long, default_value_t = 2000)]
    bin_samples: usize,
}

/// CPU time of the calling thread, in seconds (on a shared machine wall time also counts the
/// time other processes hold the core).
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        0.5 * (v[m - 1] + v[m])
    }
}

fn run(args: &Args) -> Result<serde_json::Value> {
    if args.n == 0 || args.reps == 0 || args.bin_samples == 0 {
        return Err(Error::param("--n/--reps/--bin-samples", "must be positive"));
    }
    let noise = NoiseSource::from_os()?;
    let mut rng = noise.row_rng(0);
    let mut rows = Vec::new();
    let mut buf = vec![0i64; args.n];
    for &sigma in &args.sigma {
        if !(sigma.is_finite() && sigma > 0.0) {
            return Err(Error::param("--sigma", format!("{sigma} is not positive")));
        }
        let sampler = DiscreteGaussian::new(Rational::from_f64(sigma * sigma)?)?;
        let (mut times, mut cpu) = (Vec::new(), Vec::new());
        let (mut sum, mut sum2) = (0f64, 0f64);
        for _ in 0..args.reps {
            let (t, c) = (Instant::now(), thread_cpu());
            sampler.fill(&mut rng, &mut buf);
            cpu.push((thread_cpu() - c) / args.n as f64);
            times.push(t.elapsed().as_secs_f64() / args.n as f64);
            for &x in &buf {
                sum += x as f64;
                sum2 += (x as f64) * (x as f64);
            }
        }
        let total = (args.n * args.reps) as f64;
        let mean = sum / total;
        // the table sampler (exact too) where it applies: s² = ⌈σ²⌉ ≥ 2^12
        let s2 = (sigma * sigma).ceil();
        let table_cpu = if s2 >= TABLE_GAUSSIAN_MIN_S2 as f64 && s2 <= TABLE_GAUSSIAN_MAX_S2 as f64
        {
            let t = TableGaussian::new(s2 as u64)?;
            let mut cpu = Vec::new();
            for _ in 0..args.reps {
                let c = thread_cpu();
                t.fill(&mut rng, &mut buf);
                cpu.push((thread_cpu() - c) / args.n as f64);
            }
            Some(median(cpu) * 1e9)
        } else {
            None
        };
        rows.push(serde_json::json!({
            "sigma": sigma,
            "ns_per_sample": median(times) * 1e9,
            "cpu_ns_per_sample": median(cpu) * 1e9,
            "table_cpu_ns_per_sample": table_cpu,
            "variance_over_sigma2": (sum2 / total - mean * mean) / (sigma * sigma),
            "n": args.n,
            "reps": args.reps,
        }));
    }
    let mut out = vec![0u64; args.bin_samples];
    let (mut times, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..args.reps {
        let (t, c) = (Instant::now(), thread_cpu());
        fill_binomial_half(&mut rng, args.bin_n, &mut out);
        cpu.push(thread_cpu() - c);
        times.push(t.elapsed().as_secs_f64());
    }
    let flips = args.bin_n as f64 * args.bin_samples as f64;
    Ok(serde_json::json!({
        "discrete_gaussian": rows,
        "binomial_half": {
            "n": args.bin_n,
            "samples": args.bin_samples,
            "flips_per_sec": flips / median(times),
            "cpu_flips_per_sec": flips / median(cpu),
        },
    }))
}

fn main() {
    let args = Args::parse();
    match run(&args) {
        Ok(v) => println!("{v}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
