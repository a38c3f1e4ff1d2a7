//! `dprp eval mean`: the local-DP mean-estimation experiments (see [`crate::eval::mean`]).

use std::path::PathBuf;

use clap::Args;

use super::super::ScaleArgs;
use crate::data::scale::check_input_domain;
use crate::data::{Format, InputOptions};
use crate::error::{Error, Result};
use crate::eval::grid::{parse_f64_list, parse_usize_list, Seeds};
use crate::eval::mean::{self, Data, Experiment, MeanConfig, MeanSpec, Plan};
use crate::eval::{gradients, mean_report};
use crate::mechanism::distributed::accountant::params::MAX_BITS;
use crate::mechanism::distributed::DistributedKind;
use crate::mechanism::MechanismKind;
use crate::privacy::guarantee::InputDomain;
use crate::projection::Seed;
use crate::publish::load_scaled;

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
                    ns: vec![50],
                    bits: vec![],
                    bpp_caps: vec![],
                    mechanisms: list(&with_ref)?,
                    epsilons: vec![4.0, 10.0, 16.0],
                    ks: vec![10, 50, 100, 500, 1000, 2000],
                    cap_k_at_d: false,
                    repeat: a.repeat.unwrap_or(3),
                    data: None,
                    budget,
                },
                Experiment {
                    name: "error-vs-eps".into(),
                    title: "Error vs ε (Asi et al. 2023, Figure 2): d = 8192, n = 50, k = 1000"
                        .into(),
                    plan: Plan::ErrorVsEps,
                    dims: vec![1 << 13],
                    ns: vec![50],
                    bits: vec![],
                    bpp_caps: vec![],
                    mechanisms: list(&with_ref)?,
                    epsilons: (1..=15).map(f64::from).collect(),
                    ks: vec![1000],
                    cap_k_at_d: false,
                    repeat: a.repeat.unwrap_or(3),
                    data: None,
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
                    ns: vec![1],
                    bits: vec![],
                    bpp_caps: vec![],
                    mechanisms: list(&fam)?,
                    epsilons: vec![10.0],
                    ks: vec![1000],
                    cap_k_at_d: true,
                    repeat: a.repeat.unwrap_or(3),
                    data: None,
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
                ns: vec![100],
                bits: vec![],
                bpp_caps: vec![],
                mechanisms: list(&mechs)?,
                epsilons: vec![0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0],
                ks: vec![],
                cap_k_at_d: false,
                repeat: a.repeat.unwrap_or(5),
                data: None,
                budget,
            }])
        }
        "distributed" => distributed_preset(a, budget),
        o => Err(Error::param(
            "--preset",
            format!(
                "unknown preset '{o}' for eval mean (expected projunit, privunit or distributed)"
            ),
        )),
    }
}

/// Clients and images per client of the distributed preset's gradients (all 60000 images).
pub const GRADIENT_CLIENTS: (usize, usize) = (6000, 10);

/// The distributed preset (Chen et al. 2022 on MNIST; see docs/distributed-dp.md): error against the bits
/// per parameter on MNIST gradients and rows, and the scaling in n and ε.
fn distributed_preset(a: &MeanArgs, budget: Option<f64>) -> Result<Vec<Experiment>> {
    let dir = crate::request::eval::data_dir();
    let images = dir.join("mnist/train-images-idx3-ubyte.gz");
    let labels = dir.join("mnist/train-labels-idx1-ubyte.gz");
    for f in [&images, &labels] {
        if !f.is_file() {
            return Err(Error::param(
                "--preset",
                format!(
                    "distributed needs {} (not found); {}",
                    f.display(),
                    crate::request::eval::DATA_HINT
                ),
            ));
        }
    }
    crate::cli::output::note(format_args!(
        "distributed preset: reading MNIST and training the logistic regression"
    ));
    let mnist = gradients::load_mnist(&images, &labels)?;
    let (w, accuracy) = gradients::train_model(&mnist);
    let (clients, per) = GRADIENT_CLIENTS;
    let (grads, median) = gradients::client_gradients(&mnist, &w, clients, per)?;
    let grad_data = Data::Rows {
        source: format!(
            "MNIST train: gradients of {clients} clients × {per} images, multinomial logistic \
             regression after one epoch of SGD (training accuracy {:.3}), scaled by the median \
             norm {median:.4} and clipped to the unit ball",
            accuracy
        ),
        d: gradients::GRADIENT_DIM,
        values: grads,
    };
    let row_data = Data::Rows {
        source: "MNIST train: the first 1000 images scaled to unit ℓ₂ norm".into(),
        d: 784,
        values: gradients::unit_rows(&mnist, 1000),
    };
    let list = |s: &str| MeanSpec::parse_list(s);
    let dist = "binomial,ddg,sketch-ddg,central-gaussian";
    let caps = vec![0.3, 0.6, 1.2, 2.4, 4.8, 9.6];
    let repeat = a.repeat.unwrap_or(5);
    let vs_bits = |name: &str, title: &str, data: Data, bits: Vec<u32>| -> Result<Experiment> {
        Ok(Experiment {
            name: name.into(),
            title: title.into(),
            plan: Plan::ErrorVsBits,
            dims: vec![],
            ns: vec![100, 1000],
            mechanisms: list(dist)?,
            epsilons: vec![1.0, 4.0],
            ks: vec![],
            bits,
            bpp_caps: caps.clone(),
            cap_k_at_d: false,
            repeat,
            data: Some(data),
            budget,
        })
    };
    Ok(vec![
        vs_bits(
            "gradients-vs-bits",
            "MNIST logistic-regression gradients (d = 7850): error vs bits per parameter \
             (Chen et al. 2022, Figure 3 / Table 1)",
            grad_data.clone(),
            vec![12, 16, 20],
        )?,
        vs_bits(
            "rows-vs-bits",
            "MNIST rows (d = 784): error vs bits per parameter",
            row_data,
            vec![16],
        )?,
        Experiment {
            name: "gradients-scaling".into(),
            title: "MNIST gradients: error vs n and ε (the O(c²d/(n²ε²)) scaling; PrivUnitG for \
                    local DP)"
                .into(),
            plan: Plan::ErrorVsN,
            dims: vec![],
            ns: vec![100, 200, 500, 1000],
            mechanisms: list("ddg,sketch-ddg,privunitg,central-gaussian")?,
            epsilons: vec![0.5, 1.0, 2.0, 4.0, 8.0],
            ks: vec![],
            bits: vec![16],
            bpp_caps: vec![1.2],
            cap_k_at_d: false,
            repeat,
            data: Some(grad_data),
            budget,
        },
    ])
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
    let users = a
        .users
        .as_deref()
        .map(|u| parse_usize_list("--users", u))
        .transpose()?;
    let (ns, d) = match data {
        Data::Rows { d, values, .. } => {
            let rows = values.len() / d;
            let ns = users.unwrap_or_default();
            if let Some(&n) = ns.iter().find(|&&n| n > rows) {
                return Err(Error::param(
                    "--users",
                    format!("n = {n} users, but the input has only {rows} rows"),
                ));
            }
            (ns, *d)
        }
        Data::Synthetic { .. } => {
            let ns = users.unwrap_or_else(|| vec![50]);
            let d = a.dim.unwrap_or(1000);
            if d < 2 {
                return Err(Error::param(
                    "--dim",
                    format!("d = {d}: the mechanisms need d ≥ 2 (a unit vector in one dimension is ±1, a sign)"),
                ));
            }
            (ns, d)
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
    let any_dist = mechanisms.iter().any(MeanSpec::takes_bits);
    let bits = match &a.bits {
        Some(s) => {
            let b = parse_usize_list("--bits", s)?;
            if let Some(&x) = b.iter().find(|&&x| !(2..=MAX_BITS as usize).contains(&x)) {
                return Err(Error::param(
                    "--bits",
                    format!("b = {x}: bits per coordinate must be between 2 and {MAX_BITS}"),
                ));
            }
            b.into_iter().map(|x| x as u32).collect()
        }
        None => vec![16],
    };
    let bpp_caps = match &a.bits_per_parameter {
        Some(s) => parse_f64_list("--bits-per-parameter", s)?,
        None => vec![],
    };
    if !any_dist && (a.bits.is_some() || a.bits_per_parameter.is_some()) {
        return Err(Error::param(
            "--bits",
            "--bits and --bits-per-parameter apply to the distributed mechanisms (binomial, ddg, \
             sketch-ddg), and none is listed",
        ));
    }
    if !bpp_caps.is_empty()
        && !mechanisms
            .iter()
            .any(|m| m.distributed == Some(DistributedKind::SketchDdg))
    {
        return Err(Error::param(
            "--bits-per-parameter",
            "applies to sketch-ddg only (ddg and binomial send b bits per rotated coordinate)",
        ));
    }
    let repeat = a.repeat.unwrap_or(5);
    let title = match (data, ns.as_slice()) {
        (Data::Rows { values, .. }, []) => {
            format!("Mean estimation: d = {d}, n = {}", values.len() / d)
        }
        (_, [n]) => format!("Mean estimation: d = {d}, n = {n}"),
        _ => format!("Mean estimation: d = {d}"),
    };
    let plan = if ns.len() > 1 {
        Plan::ErrorVsN
    } else {
        Plan::Grid
    };
    Ok(Experiment {
        name: "mean".into(),
        title,
        plan,
        dims: vec![d],
        ns,
        mechanisms,
        epsilons,
        ks,
        bits,
        bpp_caps,
        cap_k_at_d: false,
        repeat,
        data: None,
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
    if a.input.is_some() && (a.dim.is_some() || a.data_seed.is_some()) {
        return Err(Error::param(
            "--input",
            "give either --input or synthetic data (--dim, --data-seed), not both",
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
                || a.bits.is_some()
                || a.bits_per_parameter.is_some()
            {
                return Err(Error::param(
                    "--preset",
                    "a preset fixes its data and grid: --input, --users, --dim, --mechanisms, \
                     --epsilons, --ks, --bits and --bits-per-parameter cannot be combined with it",
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
