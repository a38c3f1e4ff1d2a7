//! `dprp eval mean`: the local-DP mean-estimation experiments (see [`crate::eval::mean`]).

use std::path::PathBuf;

use clap::Args;

use super::super::ScaleArgs;
use crate::data::scale::check_input_domain;
use crate::data::{Format, InputOptions};
use crate::error::{Error, Result};
use crate::eval::grid::{parse_f64_list, parse_usize_list, Seeds};
use crate::eval::mean::{self, Data, Experiment, MeanConfig, MeanSpec, Plan};
use crate::eval::mean_report;
use crate::mechanism::MechanismKind;
use crate::privacy::guarantee::InputDomain;
use crate::projection::Seed;
use crate::publish::load_scaled;

#[derive(Debug, Args)]
pub struct MeanArgs {
    /// A preset mirroring a paper: projunit (Asi et al. 2023 §4.1: error vs k at d = 2^13 and
    /// 2^15, error vs ε, runtime vs d) or privunit (Bhowmick et al. 2018: PrivUnit2, Duchi,
    /// PrivUnitG over ε at d = 1000 and 10^5). Explicit --repeat, --seed, --data-seed, --delta
    /// and --budget override the preset's values.
    #[arg(long)]
    preset: Option<String>,
    /// Synthetic data: number of users n (v_i = normalise(μ + N(0, I/d)), μ a random unit
    /// vector).
    #[arg(long)]
    users: Option<usize>,
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
    /// Mechanisms, comma-separated: privunit2, duchi, privunitg, projunit[:rotation|gaussian|
    /// srht|srht-nearly-unbiased] (default map srht), and central-gaussian (the trusted-server
    /// reference).
    #[arg(long)]
    mechanisms: Option<String>,
    /// ε values, comma-separated.
    #[arg(long, alias = "epsilon", allow_negative_numbers = true)]
    epsilons: Option<String>,
    /// Projected dimensions k of ProjUnit, comma-separated (default min(100, d)).
    #[arg(long, alias = "k")]
    ks: Option<String>,
    /// Repeats per setting (fresh public maps and noise each; default 5).
    #[arg(long)]
    repeat: Option<usize>,
    /// δ of the central Gaussian reference (default 1e-6).
    #[arg(long, allow_negative_numbers = true)]
    delta: Option<f64>,
    /// Skip (and report as not run) settings whose estimated time exceeds this many seconds
    /// (n · repeats · a rough per-user cost; default: no limit; the presets set one).
    #[arg(long)]
    budget: Option<f64>,
    /// Master seed (hex) of every public map and noise key (default: fresh; always recorded).
    #[arg(long)]
    seed: Option<String>,
    /// Directory for report.md, report.csv, report.json and the plots (SVG and PNG).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    scale: ScaleArgs,
}

/// The ProjUnit family of the projunit preset (the correlated FastProjUnit joins it when the
/// mechanism is available).
fn projunit_family() -> String {
    let mut m = "privunitg,projunit:rotation,projunit:gaussian,projunit:srht".to_string();
    if MechanismKind::parse("projunit-correlated").is_ok() {
        m.push_str(",projunit-correlated");
    }
    m
}

/// Budget per setting of the presets, estimated seconds (see `MeanSpec::seconds_per_user`):
/// keeps each preset within about ten minutes on two shared cores.
pub const PRESET_BUDGET: f64 = 15.0;

fn preset(name: &str, a: &MeanArgs) -> Result<Vec<Experiment>> {
    let budget = Some(a.budget.unwrap_or(PRESET_BUDGET));
    let list = |s: &str| MeanSpec::parse_list(s);
    match name {
        "projunit" => {
            let fam = projunit_family();
            let with_ref = format!("{fam},{}", mean::CENTRAL);
            Ok(vec![
                Experiment {
                    name: "error-vs-k".into(),
                    title: "Error vs k (Asi et al. 2023, Figure 1): n = 50".into(),
                    plan: Plan::ErrorVsK,
                    dims: vec![1 << 13, 1 << 15],
                    n: 50,
                    mechanisms: list(&with_ref)?,
                    epsilons: vec![4.0, 10.0, 16.0],
                    ks: vec![10, 50, 100, 500, 1000, 2000],
                    cap_k_at_d: false,
                    repeat: a.repeat.unwrap_or(3),
                    budget,
                },
                Experiment {
                    name: "error-vs-eps".into(),
                    title: "Error vs ε (Asi et al. 2023, Figure 2): d = 8192, n = 50, k = 1000"
                        .into(),
                    plan: Plan::ErrorVsEps,
                    dims: vec![1 << 13],
                    n: 50,
                    mechanisms: list(&with_ref)?,
                    epsilons: (1..=15).map(f64::from).collect(),
                    ks: vec![1000],
                    cap_k_at_d: false,
                    repeat: a.repeat.unwrap_or(3),
                    budget,
                },
                Experiment {
                    name: "runtime-vs-d".into(),
                    title: "Runtime vs d (Asi et al. 2023, Figure 3): ε = 10, k = min(1000, d), \
                            n = 1"
                        .into(),
                    plan: Plan::RuntimeVsD,
                    dims: vec![
                        1 << 4,
                        1 << 7,
                        1 << 10,
                        1 << 13,
                        1 << 16,
                        1 << 19,
                        1 << 22,
                        10_000_000,
                    ],
                    n: 1,
                    mechanisms: list(&fam)?,
                    epsilons: vec![10.0],
                    ks: vec![1000],
                    cap_k_at_d: true,
                    repeat: a.repeat.unwrap_or(3),
                    budget,
                },
            ])
        }
        "privunit" => {
            let mechs = format!("privunit2,duchi,privunitg,{}", mean::CENTRAL);
            Ok(vec![Experiment {
                name: "error-vs-eps".into(),
                title: "PrivUnit2 vs Duchi et al. vs PrivUnitG over ε (Bhowmick et al. 2018): \
                        n = 100"
                    .into(),
                plan: Plan::ErrorVsEps,
                dims: vec![1000, 100_000],
                n: 100,
                mechanisms: list(&mechs)?,
                epsilons: vec![0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0],
                ks: vec![],
                cap_k_at_d: false,
                repeat: a.repeat.unwrap_or(5),
                budget,
            }])
        }
        o => Err(Error::param(
            "--preset",
            format!("unknown preset '{o}' for eval mean (expected projunit or privunit)"),
        )),
    }
}

/// Load `--input`: scaled as asked, every row in the unit ball (else an error naming the row).
fn load_input(a: &MeanArgs, path: &std::path::Path) -> Result<Data> {
    let format = a.format.as_deref().map(Format::parse).transpose()?;
    let opts = InputOptions {
        format,
        ..Default::default()
    };
    let d = load_scaled(path, &opts, &a.scale.request()?)?;
    if d.n == 0 {
        return Err(Error::param(
            "--input",
            format!("{} has no rows", path.display()),
        ));
    }
    if d.p < 2 {
        return Err(Error::param(
            "--input",
            format!(
                "{} has d = {} column(s); the mechanisms need d ≥ 2",
                path.display(),
                d.p
            ),
        ));
    }
    check_input_domain(InputDomain::Ball { radius: 1.0 }, &d.values, d.p, 0, path)?;
    Ok(Data::Rows {
        source: path.display().to_string(),
        d: d.p,
        values: d.values.iter().map(|&x| x as f64).collect(),
    })
}

fn custom(a: &MeanArgs, data: &Data) -> Result<Experiment> {
    let (n, d) = match data {
        Data::Rows { d, values, .. } => (values.len() / d, *d),
        Data::Synthetic { .. } => {
            let n = a.users.unwrap_or(50);
            if n == 0 {
                return Err(Error::param("--users", "must be at least 1"));
            }
            let d = a.dim.unwrap_or(1000);
            if d < 2 {
                return Err(Error::param(
                    "--dim",
                    format!("d = {d}: the mechanisms need d ≥ 2 (a unit vector in one dimension is ±1, a sign)"),
                ));
            }
            (n, d)
        }
    };
    let mechanisms = MeanSpec::parse_list(
        a.mechanisms
            .as_deref()
            .unwrap_or("privunit2,privunitg,projunit:srht,central-gaussian"),
    )?;
    let epsilons = parse_f64_list("--epsilons", a.epsilons.as_deref().unwrap_or("1,4,10"))?;
    let ks = match &a.ks {
        Some(s) => parse_usize_list("--ks", s)?,
        None => vec![d.min(100)],
    };
    if let Some(&k) = ks.iter().find(|&&k| k > d) {
        if mechanisms.iter().any(MeanSpec::takes_k) {
            return Err(Error::param(
                "--ks",
                format!("k = {k} exceeds the dimension d = {d} (ProjUnit needs 1 ≤ k ≤ d)"),
            ));
        }
    }
    let repeat = a.repeat.unwrap_or(5);
    Ok(Experiment {
        name: "mean".into(),
        title: format!("Mean estimation: d = {d}, n = {n}"),
        plan: Plan::Grid,
        dims: vec![d],
        n,
        mechanisms,
        epsilons,
        ks,
        cap_k_at_d: false,
        repeat,
        budget: a.budget,
    })
}

pub fn run(a: MeanArgs) -> Result<()> {
    if a.repeat == Some(0) {
        return Err(Error::param("--repeat", "must be at least 1"));
    }
    if let Some(b) = a.budget {
        if !(b.is_finite() && b > 0.0) {
            return Err(Error::param("--budget", format!("{b} must be positive")));
        }
    }
    let delta = a.delta.unwrap_or(1e-6);
    if !(delta > 0.0 && delta < 1.0) {
        return Err(Error::param("--delta", format!("{delta} is not in (0, 1)")));
    }
    if a.input.is_some() && (a.users.is_some() || a.dim.is_some()) {
        return Err(Error::param(
            "--input",
            "give either --input or synthetic data (--users, --dim), not both",
        ));
    }
    let master = match &a.seed {
        Some(s) => Seed::parse_hex(s).map_err(|_| {
            Error::param("--seed", format!("'{s}' is not 1 to 64 hexadecimal digits"))
        })?,
        None => Seed::random()?,
    };
    let data = match &a.input {
        Some(p) => load_input(&a, p)?,
        None => Data::Synthetic {
            seed: a.data_seed.unwrap_or(1),
        },
    };
    let experiments = match a.preset.as_deref() {
        Some(p) => {
            if a.input.is_some()
                || a.users.is_some()
                || a.dim.is_some()
                || a.mechanisms.is_some()
                || a.epsilons.is_some()
                || a.ks.is_some()
            {
                return Err(Error::param(
                    "--preset",
                    "a preset fixes its data and grid: --input, --users, --dim, --mechanisms, \
                     --epsilons and --ks cannot be combined with it",
                ));
            }
            preset(p, &a)?
        }
        None => vec![custom(&a, &data)?],
    };
    let cfg = MeanConfig {
        experiments,
        delta,
        seeds: Seeds::new(master),
        data,
    };
    // the output directory is checked (and staged) before the work
    let staging = super::stage_out(a.out.as_deref())?;
    crate::cli::output::note(format_args!(
        "eval mean: {} experiment(s), {} settings",
        cfg.experiments.len(),
        mean::total_settings(&cfg)
    ));
    let pb = crate::cli::query::progress_bar(0, "eval mean");
    let tick = |done: usize, total: usize| {
        pb.set_length(total as u64);
        pb.set_position(done as u64);
    };
    let rep = mean::run(&cfg, &tick);
    pb.finish_and_clear();
    let mut rep = rep?;
    if let Some(m) = rep.meta.as_object_mut() {
        m.insert("preset".into(), serde_json::json!(a.preset));
        m.insert(
            "command".into(),
            serde_json::json!(std::env::args().collect::<Vec<_>>().join(" ")),
        );
    }
    let md = mean_report::markdown(&rep);
    outln!("{md}")?;
    if let Some(s) = &staging {
        let (files, warnings) = mean_report::write_all(&rep, &md, s.path())?;
        for w in &warnings {
            crate::cli::output::warn(w);
        }
        crate::cli::output::note(format_args!(
            "report.md, report.csv, report.json and {} plot files",
            files.len()
        ));
    }
    super::commit_out(staging)
}
