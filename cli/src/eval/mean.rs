//! `dprp eval mean`: the local-DP mean-estimation experiments (see [`dprp::eval::mean`]); the
//! data, experiments and refusals are [`dprp::request::eval::mean`].

use std::path::PathBuf;

use clap::Args;

use super::super::output::note;
use super::super::ScaleArgs;
use super::{commit_out, record_command, stage_out, with_progress, written};
use dprp::atomic::Existing;
use dprp::error::Result;
use dprp::eval::mean_report;
use dprp::request::eval::mean::MeanOptions;

#[derive(Debug, Args)]
pub struct MeanArgs {
    /// A preset mirroring a paper: projunit (Asi et al. 2023 §4.1: error vs k at d = 2^13 and
    /// 2^15, error vs ε, runtime vs d) or privunit (Bhowmick et al. 2018: PrivUnit2, Duchi,
    /// PrivUnitG over ε at d = 1000 and 10^5) or distributed (Chen et al. 2022 on MNIST: binomial,
    /// ddg, sketch-ddg against the central Gaussian over bits per parameter, n and ε). Explicit
    /// --repeat, --seed, --data-seed, --delta
    /// and --budget override the preset's values.
    #[arg(long)]
    preset: Option<String>,
    /// Numbers of users n, comma-separated: synthetic users (v_i = normalise(μ + N(0, I/d)), μ a
    /// random unit vector), or with --input the first n rows of the file (default: all rows).
    #[arg(long)]
    users: Option<String>,
    /// Synthetic data: dimension d.
    #[arg(long)]
    dim: Option<usize>,
    /// Seed of the synthetic data (the same data for every mechanism, ε, k and repeat).
    #[arg(long)]
    data_seed: Option<u64>,
    /// The users' vectors from a file instead (any supported format); each row must lie in the
    /// unit ball (or pass --normalize l2 or --clip-norm 1).
    #[arg(long)]
    input: Option<PathBuf>,
    /// Input format when the file name does not tell.
    #[arg(long)]
    format: Option<String>,
    /// Mechanisms, comma-separated: the local privunit2, duchi, privunitg,
    /// projunit[:rotation|gaussian|srht|srht-nearly-unbiased] (default map srht); the
    /// distributed binomial, ddg, sketch-ddg (clip norm 1, under secure aggregation); and
    /// central-gaussian (alias gaussian-central; the trusted-server reference, with the
    /// neighbour relation of the mechanisms listed: :replace-one for local, :add-remove for
    /// distributed).
    #[arg(long)]
    mechanisms: Option<String>,
    /// ε values, comma-separated.
    #[arg(long, alias = "epsilon", allow_negative_numbers = true)]
    epsilons: Option<String>,
    /// Projected dimensions k of ProjUnit, comma-separated (default min(100, d)).
    #[arg(long, alias = "k")]
    ks: Option<String>,
    /// Distributed mechanisms: bits per transmitted coordinate b, comma-separated (SecAgg modulus
    /// 2^b; default 16).
    #[arg(long)]
    bits: Option<String>,
    /// sketch-ddg: caps on the bits per parameter, comma-separated (each chooses a sketch size;
    /// default: the least-error sketch).
    #[arg(long)]
    bits_per_parameter: Option<String>,
    /// Repeats per setting (fresh public maps and noise each; default 5).
    #[arg(long)]
    repeat: Option<usize>,
    /// δ of the central Gaussian reference and of the distributed mechanisms (default 1e-6).
    #[arg(long, allow_negative_numbers = true)]
    delta: Option<f64>,
    /// Skip (and report as not run) settings whose estimated time exceeds this many seconds
    /// (n · repeats · a rough per-user cost; default: no limit; the presets set one).
    #[arg(long)]
    budget: Option<f64>,
    /// Master seed (hex) of every public map and noise key (default: fresh; always recorded).
    #[arg(long)]
    seed: Option<String>,
    /// Directory for report.md, report.csv, report.json and the plots (SVG and PNG); created, and
    /// an existing one must be empty unless --overwrite.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Let --out be a directory that holds files already: reports and plots of the same names
    /// are replaced (links, devices, pipes and sockets are always refused).
    #[arg(long)]
    overwrite: bool,
    #[command(flatten)]
    scale: ScaleArgs,
}

impl MeanArgs {
    /// The options as given, and `--out`.
    fn options(self) -> (MeanOptions, (Option<PathBuf>, Existing)) {
        let options = MeanOptions {
            preset: self.preset,
            users: self.users,
            dim: self.dim,
            data_seed: self.data_seed,
            input: self.input,
            format: self.format,
            mechanisms: self.mechanisms,
            epsilons: self.epsilons,
            ks: self.ks,
            bits: self.bits,
            bits_per_parameter: self.bits_per_parameter,
            repeat: self.repeat,
            delta: self.delta,
            budget: self.budget,
            seed: self.seed,
            scale: self.scale.options(),
        };
        (options, (self.out, Existing::replace_if(self.overwrite)))
    }
}

pub fn run(a: MeanArgs) -> Result<()> {
    let (options, (out, existing)) = a.options();
    let req = options.resolve(&|s| note(s))?;
    // the output directory is checked (and staged) before the work
    let staging = stage_out(out.as_deref(), existing)?;
    note(req.summary());
    let mut rep = with_progress("eval mean", |tick| req.run(tick))?;
    record_command(&mut rep.meta);
    let md = mean_report::markdown(&rep);
    outln!("{md}")?;
    if let Some(s) = &staging {
        let (files, warnings) = mean_report::write_all(&rep, &md, s.path())?;
        written(files.len(), &warnings);
    }
    commit_out(staging)
}
