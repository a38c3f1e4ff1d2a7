//! The dprp side of the local-DP peer benchmark (`benches/run-ldp-peers.sh`,
//! `benches/peer_ldp.py`): privatise every row of a `.npy` file of unit vectors with one
//! mechanism, average, and print one JSON object with the time per user and the errors.
//!
//! ```sh
//! cargo run --release --example ldp_peer -- --data v.npy --mech privunitg --epsilon 4
//! cargo run --release --example ldp_peer -- --data v.npy --mech projunit-srht --k 1000 --reps 3
//! ```
//!
//! `--mech`: `privunit2`, `privunitg`, `projunit-rotation`, `projunit-gaussian`,
//! `projunit-srht`. The rows are read with dprp's `.npy` reader (f32 values, converted to f64)
//! and must be unit vectors up to float rounding (the peer script writes them normalised); each
//! row goes through the library's `privatize` (ball input; a unit row is used as is). For ProjUnit
//! a user's work is what the authors' `ProjUnit`/`FastProjUnit` functions do: regenerate the
//! user's public map from its row seed, encode (project, normalise, PrivUnitG in `R^k`) and decode
//! (`c·Wᵀẑ`), so the timings are comparable. Noise comes from ChaCha20 keyed by the operating
//! system; each repetition uses a fresh release seed.
//!
//! Only the `privatize` calls are timed (not reading, averaging or error bookkeeping); the time
//! per user of a repetition is their sum over the rows divided by the number of rows, and the
//! JSON reports the median over repetitions. Errors: `sq_err_mean` is `‖(1/n)Σ Z_i − (1/n)Σ v_i‖²`
//! averaged over repetitions, next to its expectation `Σ mse/n²` from the closed form;
//! `mse_per_user` (± `mse_se`) is the empirical `(1/n)Σ‖Z_i − v_i‖²` over all rows and repetitions
//! next to the closed form `mse_closed_form`
//! (for SRHT the rotation formula with `d' = 2^⌈log₂ d⌉`, marked `"mse_approx": true`: SRHT has
//! no closed form and is only nearly unbiased); `along` (± `along_se`) is the mean of `⟨Z_i, v_i⟩`,
//! 1 for an unbiased mechanism.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use rand::{SeedableRng, TryRng};
use rand_chacha::ChaCha20Rng;

use dprp::data::{read_all, InputOptions};
use dprp::mechanism::local::{PrivUnit2, PrivUnitG, ProjKind, ProjUnit};
use dprp::projection::hadamard::next_pow2;
use dprp::projection::Seed;
use dprp::{Error, Result};

#[derive(Debug, Parser)]
#[command(about = "Time dprp's local-DP clients on the rows of a .npy file (peer benchmark)")]
struct Args {
    /// Unit vectors, one per row (.npy, <f4 or <f8).
    #[arg(long)]
    data: PathBuf,
    /// privunit2, privunitg, projunit-rotation, projunit-gaussian or projunit-srht.
    #[arg(long)]
    mech: String,
    /// ε of the ε-LDP guarantee.
    #[arg(long)]
    epsilon: f64,
    /// Projected dimension (ProjUnit).
    #[arg(long, default_value_t = 1000)]
    k: usize,
    /// Use only the first N rows.
    #[arg(long)]
    users: Option<usize>,
    /// Repetitions over all rows.
    #[arg(long, default_value_t = 3)]
    reps: usize,
}

enum Mech {
    P2(PrivUnit2),
    G(PrivUnitG),
    Proj(ProjUnit),
}

impl Mech {
    fn privatize(
        &self,
        v: &[f64],
        row: u64,
        seed: Seed,
        rng: &mut ChaCha20Rng,
    ) -> Result<Vec<f64>> {
        match self {
            Mech::P2(m) => m.privatize(v, rng),
            Mech::G(m) => m.privatize(v, rng),
            Mech::Proj(m) => m.privatize(v, seed.for_row(row), rng),
        }
    }

    /// Closed-form per-user MSE for a unit input, and whether it is only an approximation.
    fn mse(&self) -> (f64, bool) {
        match self {
            Mech::P2(m) => (m.mse_unit(), false),
            Mech::G(m) => (m.mse_unit(), false),
            Mech::Proj(m) => match m.mse(1.0) {
                Some(x) => (x, false),
                None => {
                    // SRHT: ‖Wᵀẑ‖² = (d'/k)‖ẑ‖² when d = d'; the rotation formula at d'.
                    let d_pad = next_pow2(m.d).unwrap_or(m.d) as f64;
                    let s2 = m.inner.scale * m.inner.scale;
                    let ez2 = s2 * (m.inner.e_alpha2 + (m.k - 1) as f64);
                    (m.c * m.c * d_pad / m.k as f64 * ez2 - 1.0, true)
                }
            },
        }
    }
}

fn os_rng() -> Result<ChaCha20Rng> {
    let mut key = [0u8; 32];
    rand::rngs::SysRng
        .try_fill_bytes(&mut key)
        .map_err(|e| Error::param("noise", format!("OS random source failed: {e}")))?;
    Ok(ChaCha20Rng::from_seed(key))
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        0.5 * (xs[n / 2 - 1] + xs[n / 2])
    }
}

/// Mean and standard error of the mean.
fn mean_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (m, 0.0);
    }
    let var = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

fn run(args: &Args) -> Result<serde_json::Value> {
    let data = read_all(&args.data, &InputOptions::default())?;
    let n = args.users.map_or(data.n, |u| u.min(data.n));
    let d = data.p;
    if n == 0 || args.reps == 0 {
        return Err(Error::param(
            "--users/--reps",
            "need at least one row and one repetition",
        ));
    }
    let mech = match args.mech.as_str() {
        "privunit2" => Mech::P2(PrivUnit2::new(args.epsilon, d)?),
        "privunitg" => Mech::G(PrivUnitG::new(args.epsilon, d)?),
        "projunit-rotation" => {
            Mech::Proj(ProjUnit::new(args.epsilon, d, args.k, ProjKind::Rotation)?)
        }
        "projunit-gaussian" => {
            Mech::Proj(ProjUnit::new(args.epsilon, d, args.k, ProjKind::Gaussian)?)
        }
        "projunit-srht" => Mech::Proj(ProjUnit::new(args.epsilon, d, args.k, ProjKind::Srht)?),
        other => {
            return Err(Error::param(
                "--mech",
                format!("unknown mechanism {other:?}"),
            ))
        }
    };
    let rows: Vec<Vec<f64>> = data
        .values
        .chunks_exact(d)
        .take(n)
        .map(|r| r.iter().map(|&x| f64::from(x)).collect())
        .collect();
    // The inputs as the mechanisms see them: unit vectors in f64.
    let units: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| {
            let s = 1.0 / r.iter().map(|x| x * x).sum::<f64>().sqrt();
            r.iter().map(|x| x * s).collect()
        })
        .collect();
    let mut true_mean = vec![0f64; d];
    for u in &units {
        true_mean
            .iter_mut()
            .zip(u)
            .for_each(|(m, x)| *m += x / n as f64);
    }
    let mut rng = os_rng()?;
    let (mut per_user, mut sq_err_mean) = (Vec::new(), 0.0);
    let (mut errs, mut along) = (Vec::new(), Vec::new());
    for _ in 0..args.reps {
        let seed = Seed::random()?;
        let mut sum = vec![0f64; d];
        let mut secs = 0.0;
        for (i, (row, u)) in rows.iter().zip(&units).enumerate() {
            let t = Instant::now();
            let z = mech.privatize(row, i as u64, seed, &mut rng)?;
            secs += t.elapsed().as_secs_f64();
            errs.push(z.iter().zip(u).map(|(a, b)| (a - b) * (a - b)).sum::<f64>());
            along.push(z.iter().zip(u).map(|(a, b)| a * b).sum::<f64>());
            sum.iter_mut().zip(&z).for_each(|(s, x)| *s += x);
        }
        per_user.push(secs / n as f64);
        sq_err_mean += sum
            .iter()
            .zip(&true_mean)
            .map(|(s, m)| (s / n as f64 - m).powi(2))
            .sum::<f64>();
    }
    let reps = args.reps as f64;
    let (mse, approx) = mech.mse();
    let (mse_user, mse_se) = mean_se(&errs);
    let (along_mean, along_se) = mean_se(&along);
    Ok(serde_json::json!({
        "side": "dprp",
        "mech": args.mech,
        "d": d,
        "n": n,
        "k": args.k,
        "epsilon": args.epsilon,
        "reps": args.reps,
        "time_per_user_s": median(per_user.clone()),
        "time_per_user_reps_s": per_user,
        "sq_err_mean": sq_err_mean / reps,
        "expected_sq_err_mean": mse / n as f64,
        "mse_per_user": mse_user,
        "mse_se": mse_se,
        "along": along_mean,
        "along_se": along_se,
        "mse_closed_form": mse,
        "mse_approx": approx,
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
