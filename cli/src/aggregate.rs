//! `dprp aggregate`: run one secure-aggregation round over client vectors — each client encodes
//! its vector (DDG, sketch + DDG or cpSGD's binomial), masks it with pairwise one-time pads in
//! `Z_M`, the server sums mod `M`, unmasks by cancellation and decodes the private mean. The
//! round and its report are [`dprp::request::round`]; this module reads the clients and prints.

use std::path::PathBuf;

use clap::Args;

use super::InputArgs;
use dprp::atomic::check_not_input;
use dprp::error::{Error, Result};
use dprp::request::mean::MeanFile;
use dprp::request::round::check_round_memory;
use dprp::request::round::RoundOptions;
use dprp::request::rows::SyntheticRows;
use dprp::request::rows::{open_reader, RowReader};
use dprp::request::Seed;

#[derive(Debug, Args)]
pub struct AggregateArgs {
    /// Client vectors, one row per client, in any supported input format.
    input: Option<PathBuf>,
    #[command(flatten)]
    input_args: InputArgs,
    /// Synthetic clients instead of a file: `N,D` (v_i = normalise(μ + N(0, I/D)), μ random).
    #[arg(long, value_name = "N,D")]
    synthetic: Option<String>,
    /// The encoder: ddg (the distributed discrete Gaussian), sketch-ddg (a count sketch to m
    /// dimensions, then ddg) or binomial (cpSGD's π_sk).
    #[arg(long, short = 'm', default_value = "ddg")]
    mechanism: String,
    /// sketch-ddg: the most bits per input parameter a client may send (chooses the sketch size
    /// m; default: the m with the least expected error).
    #[arg(long)]
    bits_per_parameter: Option<f64>,
    /// ε of the (ε, δ)-DP guarantee of the sum.
    #[arg(long, short = 'e', allow_negative_numbers = true)]
    epsilon: f64,
    /// δ of the guarantee.
    #[arg(long, allow_negative_numbers = true)]
    delta: f64,
    /// ℓ₂ clip norm c of each client's vector.
    #[arg(long, allow_negative_numbers = true)]
    clip: f64,
    /// Bits per transmitted coordinate b (the sum is taken mod M = 2^b).
    #[arg(long, default_value_t = 16)]
    bits: u32,
    /// Largest acceptable bound on the probability that the modular sum wraps.
    #[arg(long, default_value_t = 1e-6)]
    max_wrap: f64,
    /// Public seed (hex) of the rotation (default: fresh from the OS; printed).
    #[arg(long)]
    seed: Option<String>,
    /// Write the private mean: .npy (float64) or .csv.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Replace an existing regular file at --output (without it, an existing output is refused;
    /// links, devices, pipes and sockets are always refused).
    #[arg(long)]
    overwrite: bool,
    /// Also compute, from the raw vectors (not private), the error of the private mean and
    /// whether the modular sum wrapped.
    #[arg(long)]
    check: bool,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

/// `(n, d)` of `--synthetic N,D`.
fn parse_synthetic(s: &str) -> Result<(u64, usize)> {
    let bad = || {
        Error::param(
            "--synthetic",
            format!("'{s}' is not N,D (the number of clients and the dimension, e.g. 1000,100000)"),
        )
    };
    let (a, b) = s.split_once(',').ok_or_else(bad)?;
    let n: u64 = a.trim().parse().map_err(|_| bad())?;
    let d: usize = b.trim().parse().map_err(|_| bad())?;
    if n == 0 || d == 0 {
        return Err(Error::param(
            "--synthetic",
            format!("needs at least one client and one dimension, got {s}"),
        ));
    }
    Ok((n, d))
}

/// Clients of a file: the reader and their number (counted in a first pass when the format does
/// not say).
fn open_clients(path: &std::path::Path, args: &InputArgs) -> Result<(Box<dyn RowReader>, u64)> {
    let opts = args.options()?;
    let mut r = open_reader(path, &opts)?;
    let n = match r.rows_hint() {
        Some(n) => n,
        None => {
            let (mut v, mut l) = (Vec::new(), Vec::new());
            let mut n = 0u64;
            loop {
                v.clear();
                l.clear();
                let got = r.read_chunk(4096, &mut v, &mut l)?;
                if got == 0 {
                    break;
                }
                n += got as u64;
            }
            r = open_reader(path, &opts)?;
            n
        }
    };
    if n == 0 {
        return Err(Error::format(path, "no client vectors (0 rows)"));
    }
    Ok((r, n))
}

/// The clients: a file's rows or synthetic ones, and their number.
fn clients(a: &AggregateArgs) -> Result<(Box<dyn RowReader>, u64)> {
    match (&a.input, &a.synthetic) {
        (Some(_), Some(_)) => Err(Error::param(
            "--synthetic",
            "give either an input file or --synthetic N,D, not both",
        )),
        (None, None) => Err(Error::missing(
            "input",
            "give the client vectors (a file, one row per client) or --synthetic N,D",
        )),
        (None, Some(s)) => {
            let (n, d) = parse_synthetic(s)?;
            check_round_memory(d, "--synthetic")?;
            let data_seed = Seed::random()?;
            Ok((Box::new(SyntheticRows::new(n, d, data_seed)?), n))
        }
        (Some(p), None) => {
            if let Some(out) = &a.output {
                check_not_input(p, out)?;
            }
            open_clients(p, &a.input_args)
        }
    }
}

pub fn run(a: AggregateArgs) -> Result<()> {
    let opts = RoundOptions {
        mechanism: a.mechanism.clone(),
        bits_per_parameter: a.bits_per_parameter,
        epsilon: a.epsilon,
        delta: a.delta,
        clip: a.clip,
        bits: a.bits,
        max_wrap: a.max_wrap,
        seed: None,
        check: a.check,
    };
    opts.kind()?;
    let file = MeanFile::of(
        a.output.as_deref(),
        dprp::atomic::Existing::replace_if(a.overwrite),
    )?;
    let (mut reader, n) = clients(&a)?;
    let opts = RoundOptions {
        seed: a
            .seed
            .as_deref()
            .map(|s| Seed::parse_hex(s).map_err(|e| Error::param("--seed", e.detail())))
            .transpose()?,
        ..opts
    };
    let outcome = opts.run(reader.as_mut(), n)?;
    if let Some(f) = &file {
        f.write(&outcome.report.mean)?;
    }
    if let Some(w) = outcome.wrapped().filter(|&w| w > 0) {
        super::output::warn(format_args!(
            "{w} coordinates of the sum wrapped around M = 2^{}: raise --bits",
            a.bits
        ));
    }
    let written: Vec<&std::path::Path> = a.output.as_deref().into_iter().collect();
    super::output::report_written(&written, || {
        if a.json {
            let v = outcome.to_json(a.output.as_deref());
            return super::output::print_str(&format!("{v}\n"));
        }
        for line in outcome.to_text() {
            outln!("{line}")?;
        }
        match &a.output {
            Some(p) => outln!(
                "wrote {} ({} values)",
                p.display(),
                outcome.report.mean.len()
            ),
            None => Ok(()),
        }
    })
}
