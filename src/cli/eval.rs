//! `dprp eval retrieval|svm|mean`: utility of each mechanism at given ε and k, before publishing.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

mod mean;

use super::ScaleArgs;
use crate::data::scale::{check_domain, ScaleArg, ScalingRequest};
use crate::data::{Dataset, Format, InputOptions};
use crate::error::{Error, Result};
use crate::eval::grid::{parse_f64_list, parse_usize_list, MechanismSpec, Privacy, Seeds};
use crate::eval::retrieval::{self, QueryMode, RetrievalConfig};
use crate::eval::{report, Report};
use crate::projection::Seed;
use crate::publish::load_scaled;

#[derive(Debug, Args)]
pub struct EvalArgs {
    #[command(subcommand)]
    what: EvalCommand,
}

#[derive(Debug, Subcommand)]
enum EvalCommand {
    /// Nearest-neighbour retrieval: precision@10 and recall@100 against the true top-10 by cosine.
    Retrieval(RetrievalArgs),
    /// Linear SVM trained on released sketches of the training rows, tested on released sketches
    /// of the test rows (one-vs-rest for several classes): accuracy.
    Svm(SvmArgs),
    /// Local-DP mean estimation (PrivUnit2, Duchi, PrivUnitG, ProjUnit): squared error against
    /// the closed form, client and server time; presets mirror the ProjUnit and PrivUnit papers.
    Mean(mean::MeanArgs),
}

/// Options shared by every evaluation.
#[derive(Debug, Args, Clone)]
pub struct CommonArgs {
    /// A preset grid with its data: paper-mnist (retrieval) or paper-svm (classification). Data
    /// is read from the project's data/ directory (mnist/, libsvm/) or from $DPRP_DATA if set;
    /// explicit options override the preset's values.
    #[arg(long)]
    preset: Option<String>,
    /// Training rows (the database for retrieval), any supported format.
    #[arg(long)]
    train: Option<PathBuf>,
    /// Test rows (the queries for retrieval), any supported format.
    #[arg(long)]
    test: Option<PathBuf>,
    /// MNIST IDX label file for --train.
    #[arg(long)]
    train_labels: Option<PathBuf>,
    /// MNIST IDX label file for --test.
    #[arg(long)]
    test_labels: Option<PathBuf>,
    /// Input format when the file names do not tell (native, npy, fvecs, bvecs, svm, idx, csv,
    /// parquet).
    #[arg(long)]
    format: Option<String>,
    /// Parquet: the vector column of --train and --test (default: each file's only list column).
    #[arg(long, value_name = "NAME")]
    column: Option<String>,
    /// Parquet: the label column of --train and --test (the SVM's classes).
    #[arg(long, value_name = "NAME")]
    label_column: Option<String>,
    /// Mechanisms: a comma-separated list of names, `name:projection` for a dense kind (e.g.
    /// dp-rp-g-opt:gaussian), `all` (the sketch mechanisms); retrieval also takes the local-DP
    /// ones (privunit2, duchi, privunitg, projunit[:rotation|gaussian|srht], projunit-correlated,
    /// privunit-inf; `local` for all six), whose guarantee is LDP (replace-one).
    #[arg(long)]
    mechanisms: Option<String>,
    /// ε values, comma-separated.
    #[arg(long, allow_negative_numbers = true)]
    epsilon: Option<String>,
    /// Sketch sizes k, comma-separated.
    #[arg(long)]
    k: Option<String>,
    /// δ for the Gaussian mechanisms and N₊.
    #[arg(long, allow_negative_numbers = true)]
    delta: Option<f64>,
    /// Neighbour distance β.
    #[arg(long, allow_negative_numbers = true)]
    beta: Option<f64>,
    /// Public lower bound ν on row norms (dp-signrp-rr; without it that mechanism is reported as
    /// not applicable).
    #[arg(long, allow_negative_numbers = true)]
    min_norm: Option<f64>,
    /// Repeats per setting (fresh projection and noise each); the spread is reported.
    #[arg(long)]
    repeat: Option<usize>,
    /// Master seed (hex) from which every projection seed and noise key is derived (default:
    /// fresh from the OS; always recorded in the report).
    #[arg(long)]
    seed: Option<String>,
    /// Directory for report.md, report.csv, report.json and the plots (SVG and PNG).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    scale: ScaleArgs,
}

#[derive(Debug, Args)]
pub struct RetrievalArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Use only the first N test rows as queries (default: all; paper-mnist: 1000).
    #[arg(long)]
    queries: Option<usize>,
    /// Queries privatised like the database (private), projected only (raw), or both.
    #[arg(long)]
    query_mode: Option<String>,
}

#[derive(Debug, Args)]
pub struct SvmArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// C values, comma-separated: one result per C, or the candidates of --pick-c.
    #[arg(long, default_value = "1")]
    c: String,
    /// Pick C per setting on a validation split (a fifth of the training rows, seeded) and report
    /// the test accuracy of the model retrained with it.
    #[arg(long)]
    pick_c: bool,
    /// Loss: squared-hinge (default, as scikit-learn's LinearSVC) or hinge.
    #[arg(long, default_value = "squared-hinge")]
    loss: String,
    /// Stopping tolerance of the dual coordinate descent.
    #[arg(long, default_value_t = 1e-4)]
    tol: f64,
    /// Maximum epochs per binary problem (default 1000; paper-svm: 200).
    #[arg(long)]
    max_iter: Option<usize>,
}

pub fn run(a: EvalArgs) -> Result<()> {
    match a.what {
        EvalCommand::Retrieval(r) => run_retrieval(r),
        EvalCommand::Svm(s) => run_svm(s),
        EvalCommand::Mean(m) => mean::run(m),
    }
}

/// The classification grid of paper-svm.
pub const PAPER_SVM_MECHANISMS: &str = "raw-g-opt,dp-rp-g-opt,dp-oporp,dp-signrp-rr-smooth,\
dp-signoporp-rr,dp-signoporp-rr-smooth,idp-signrp-g,idp-signoporp-g";
/// Sketch sizes of paper-svm (values are clamped to [-1, 1] unless scaling is given).
pub const PAPER_SVM_KS: &str = "16,64,256";
/// The LIBSVM sets of paper-svm (name, train, test) under the data directory ([`data_dir`]).
pub const PAPER_SVM_SETS: [(&str, &str, &str); 2] = [
    ("a9a", "libsvm/a9a.svm.gz", "libsvm/a9a.t.svm.gz"),
    (
        "ijcnn1",
        "libsvm/ijcnn1.trn.svm.gz",
        "libsvm/ijcnn1.tst.svm.gz",
    ),
];

/// The paper's retrieval grid (DESIGN.md §9, §11).
pub const PAPER_MNIST_MECHANISMS: &str = "raw-g-opt,dp-rp-g,dp-rp-g-opt,dp-rp-g-opt:gaussian,\
dp-oporp,dp-signrp-rr,dp-signrp-rr-smooth,dp-signoporp-rr,dp-signoporp-rr-smooth,idp-signrp-g,\
idp-signrp-rr,idp-signoporp-g,idp-signoporp-rr";
/// ε grid of the presets.
pub const PAPER_EPSILONS: &str = "1,2,5,10,20,50,100";
/// Default query subset of paper-mnist.
pub const PAPER_MNIST_QUERIES: usize = 1000;
/// ν for MNIST/255 in paper-mnist: below the smallest row norm of MNIST train and test (3.57 and
/// 3.68), so no row is refused; in a real release ν must be a public bound, not read off the data.
pub const PAPER_MNIST_MIN_NORM: f64 = 3.0;

/// How to point the presets at the datasets, for the error messages.
pub const DATA_HINT: &str = "set DPRP_DATA to a directory holding mnist/ and libsvm/";

/// Where the presets' datasets (`mnist/`, `libsvm/`) are: `$DPRP_DATA` if set, else the project's
/// `data/` directory (the source tree's path, fixed at compile time, so an installed binary run
/// elsewhere still finds it). Run from the source tree, that directory is named `data`, relative
/// to the working directory, so that reports record `data/...` rather than this machine's path.
pub fn data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("DPRP_DATA").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
    let here = Path::new("data");
    match (here.canonicalize(), dir.canonicalize()) {
        (Ok(a), Ok(b)) if a == b => here.to_path_buf(),
        _ => dir,
    }
}

fn preset_file(dir: &Path, rel: &str, preset: &str) -> Result<PathBuf> {
    let p = dir.join(rel);
    if p.is_file() {
        Ok(p)
    } else {
        Err(Error::param(
            "--preset",
            format!(
                "{preset} needs {} (not found); {DATA_HINT}, or pass --train/--test",
                p.display()
            ),
        ))
    }
}

/// Load one side (train or test), scaled and checked against the privacy domain [-1, 1].
fn load(
    path: &Path,
    labels: Option<&PathBuf>,
    format: Option<Format>,
    req: &ScalingRequest,
    dim: Option<usize>,
    columns: &crate::data::parquet::Columns,
) -> Result<Dataset> {
    let opts = InputOptions {
        format,
        labels: labels.cloned(),
        dim,
        columns: columns.clone(),
        ..Default::default()
    };
    let d = load_scaled(path, &opts, req)?;
    check_domain(&d.values, d.p, 0, path)?;
    Ok(d)
}

/// Resolved inputs and grid of an evaluation.
struct Resolved {
    train: PathBuf,
    test: PathBuf,
    train_labels: Option<PathBuf>,
    test_labels: Option<PathBuf>,
    columns: crate::data::parquet::Columns,
    scaling: ScalingRequest,
    mechanisms: Vec<MechanismSpec>,
    epsilons: Vec<f64>,
    ks: Vec<usize>,
    privacy: Privacy,
    repeat: usize,
    seeds: Seeds,
}

fn resolve(c: &CommonArgs, default_ks: &str) -> Result<Resolved> {
    let mut train = c.train.clone();
    let mut test = c.test.clone();
    let mut train_labels = c.train_labels.clone();
    let mut test_labels = c.test_labels.clone();
    let mut scaling = c.scale.request()?;
    let mut mechanisms = c.mechanisms.clone().unwrap_or_else(|| "all".to_string());
    let mut min_norm = c.min_norm;
    match c.preset.as_deref() {
        None => {}
        Some("paper-mnist") => {
            let dir = data_dir();
            let f = |rel: &str| preset_file(&dir, rel, "paper-mnist");
            train.get_or_insert(f("mnist/train-images-idx3-ubyte.gz")?);
            test.get_or_insert(f("mnist/t10k-images-idx3-ubyte.gz")?);
            train_labels.get_or_insert(f("mnist/train-labels-idx1-ubyte.gz")?);
            test_labels.get_or_insert(f("mnist/t10k-labels-idx1-ubyte.gz")?);
            if scaling == ScalingRequest::default() {
                scaling.scale = Some(ScaleArg::Divide(255.0));
            }
            if c.mechanisms.is_none() {
                mechanisms = PAPER_MNIST_MECHANISMS.to_string();
            }
            min_norm.get_or_insert(PAPER_MNIST_MIN_NORM);
        }
        // the datasets are set per run by run_svm
        Some("paper-svm") if default_ks == PAPER_SVM_KS && c.mechanisms.is_none() => {
            mechanisms = PAPER_SVM_MECHANISMS.to_string();
        }
        Some("paper-svm") if default_ks == PAPER_SVM_KS => {}
        Some(o) => {
            let expected = if default_ks == PAPER_SVM_KS {
                "paper-svm"
            } else {
                "paper-mnist"
            };
            return Err(Error::param(
                "--preset",
                format!("unknown preset '{o}' for this evaluation (expected {expected})"),
            ));
        }
    }
    let train = train
        .ok_or_else(|| Error::missing("--train", "give the training data (or use --preset)"))?;
    let test =
        test.ok_or_else(|| Error::missing("--test", "give the test data (or use --preset)"))?;
    let delta = c.delta.unwrap_or(1e-6);
    if !(delta > 0.0 && delta < 1.0) {
        return Err(Error::param("--delta", format!("{delta} is not in (0, 1)")));
    }
    let beta = c.beta.unwrap_or(1.0);
    if !(beta.is_finite() && beta > 0.0) {
        return Err(Error::param("--beta", format!("{beta} must be positive")));
    }
    if let Some(v) = min_norm {
        if !(v.is_finite() && v > 0.0) {
            return Err(Error::param("--min-norm", format!("{v} must be positive")));
        }
    }
    let repeat = c.repeat.unwrap_or(1);
    if repeat == 0 {
        return Err(Error::param("--repeat", "must be at least 1"));
    }
    let master = match &c.seed {
        Some(s) => Seed::parse_hex(s).map_err(|_| {
            Error::param("--seed", format!("'{s}' is not 1 to 64 hexadecimal digits"))
        })?,
        None => Seed::random()?,
    };
    Ok(Resolved {
        train,
        test,
        train_labels,
        test_labels,
        columns: crate::data::parquet::Columns {
            vectors: c.column.clone(),
            label: c.label_column.clone(),
            id: None,
        },
        scaling,
        mechanisms: MechanismSpec::parse_list(&mechanisms)?,
        epsilons: parse_f64_list("--epsilon", c.epsilon.as_deref().unwrap_or(PAPER_EPSILONS))?,
        ks: parse_usize_list("--k", c.k.as_deref().unwrap_or(default_ks))?,
        privacy: Privacy {
            delta,
            beta,
            min_norm,
        },
        repeat,
        seeds: Seeds::new(master),
    })
}

fn run_retrieval(a: RetrievalArgs) -> Result<()> {
    let c = &a.common;
    let r = resolve(c, "256,512,1024")?;
    let format = c.format.as_deref().map(Format::parse).transpose()?;
    // the output directory is checked (and staged) before the work
    let staging = stage_out(c.out.as_deref())?;
    let (train, mut test) = load_train_test(&r, format)?;
    let queries = a.queries.or(if c.preset.as_deref() == Some("paper-mnist") {
        Some(PAPER_MNIST_QUERIES)
    } else {
        None
    });
    if let Some(nq) = queries {
        if nq == 0 {
            return Err(Error::param("--queries", "must be at least 1"));
        }
        if nq < test.n {
            test.n = nq;
            test.values.truncate(nq * test.p);
            if let Some(l) = test.labels.as_mut() {
                l.truncate(nq);
            }
        }
    }
    let query_modes = QueryMode::parse_list(a.query_mode.as_deref().unwrap_or("both"))?;
    let cfg = RetrievalConfig {
        mechanisms: r.mechanisms.clone(),
        epsilons: r.epsilons.clone(),
        ks: r.ks.clone(),
        privacy: r.privacy,
        query_modes,
        repeat: r.repeat,
        seeds: r.seeds,
    };
    super::output::note(format_args!(
        "retrieval: {} database rows, {} queries (the first {} test rows), p = {}; {} mechanisms × \
         {} ε × {} k × {} repeats",
        train.n,
        test.n,
        test.n,
        train.p,
        cfg.mechanisms.len(),
        cfg.epsilons.len(),
        cfg.ks.len(),
        cfg.repeat
    ));
    let mut rep = with_progress(|tick| retrieval::run(&train, &test, &cfg, tick))?;
    annotate(&mut rep, c, &r);
    finish(&rep, staging.as_ref().map(|s| s.path()))?;
    commit_out(staging)
}

fn run_svm(a: SvmArgs) -> Result<()> {
    let c = &a.common;
    let preset = c.preset.as_deref() == Some("paper-svm");
    let staging = stage_out(c.out.as_deref())?;
    // (name, train, test) per dataset
    let sets: Vec<(String, PathBuf, PathBuf)> = if preset && c.train.is_none() && c.test.is_none() {
        let dir = data_dir();
        PAPER_SVM_SETS
            .iter()
            .map(|(n, tr, te)| {
                Ok((
                    n.to_string(),
                    preset_file(&dir, tr, "paper-svm")?,
                    preset_file(&dir, te, "paper-svm")?,
                ))
            })
            .collect::<Result<_>>()?
    } else {
        let tr = c.train.clone().ok_or_else(|| {
            Error::missing(
                "--train",
                "give the training data (or use --preset paper-svm)",
            )
        })?;
        let te = c.test.clone().ok_or_else(|| {
            Error::missing("--test", "give the test data (or use --preset paper-svm)")
        })?;
        vec![(String::new(), tr, te)]
    };
    let format = c.format.as_deref().map(Format::parse).transpose()?;
    let svm = crate::learn::svm::SvmParams {
        c: 1.0,
        loss: crate::learn::svm::Loss::parse(&a.loss)?,
        tol: a.tol,
        max_iter: a.max_iter.unwrap_or(if preset { 200 } else { 1000 }),
        ..Default::default()
    };
    let cs = parse_f64_list("--c", &a.c)?;
    for (name, tr, te) in &sets {
        let mut common = CommonArgs { ..c.clone() };
        common.train = Some(tr.clone());
        common.test = Some(te.clone());
        if preset && c.scale.scale.is_none() && c.scale.normalize.is_none() {
            // ijcnn1's test file has values slightly outside [-1, 1] (e.g. -1.0028): clamp them,
            // a fixed public transform
            common.scale.clip = true;
        }
        let r = resolve(&common, PAPER_SVM_KS)?;
        crate::eval::grid::refuse_local(&r.mechanisms, "eval svm")?;
        let (train, test) = load_pair(&r, format)?;
        let cfg = crate::eval::svm::SvmConfig {
            mechanisms: r.mechanisms.clone(),
            epsilons: r.epsilons.clone(),
            ks: r.ks.clone(),
            privacy: r.privacy,
            cs: cs.clone(),
            pick_c: a.pick_c,
            svm,
            repeat: r.repeat,
            seeds: r.seeds,
        };
        super::output::note(format_args!(
            "svm{}: {} training rows, {} test rows, p = {}; {} mechanisms × {} ε × {} k × {} C \
             × {} repeats",
            if name.is_empty() {
                String::new()
            } else {
                format!(" [{name}]")
            },
            train.n,
            test.n,
            train.p,
            cfg.mechanisms.len(),
            cfg.epsilons.len(),
            cfg.ks.len(),
            cfg.cs.len(),
            cfg.repeat
        ));
        let mut rep = with_progress(|tick| crate::eval::svm::run(&train, &test, &cfg, tick))?;
        annotate(&mut rep, &common, &r);
        if !name.is_empty() {
            outln!("## {name}\n")?;
        }
        let out = staging.as_ref().map(|s| {
            if sets.len() > 1 {
                s.path().join(name)
            } else {
                s.path().to_path_buf()
            }
        });
        finish(&rep, out.as_deref())?;
    }
    commit_out(staging)
}

/// Stage `--out`: refused at once if it is a file or its parent directory is missing; its files
/// are written under a hidden directory beside it and moved into place only when every report of
/// the run is complete (an error or a signal leaves nothing behind).
fn stage_out(out: Option<&Path>) -> Result<Option<crate::atomic::StagingDir>> {
    out.map(|o| {
        crate::atomic::StagingDir::create(o).map_err(|e| Error::param("--out", e.to_string()))
    })
    .transpose()
}

/// Move the staged reports into `--out` and say where they are.
fn commit_out(staging: Option<crate::atomic::StagingDir>) -> Result<()> {
    if let Some(s) = staging {
        let dest = s.dest().to_path_buf();
        s.commit()?;
        super::output::note(format_args!("wrote {}", dest.display()));
    }
    Ok(())
}

/// Load train and test; LIBSVM files whose largest feature index differs are read again with the
/// larger dimension (the same feature space).
/// The training and test sets as given (no reconciliation of their widths).
fn load_train_test(r: &Resolved, format: Option<Format>) -> Result<(Dataset, Dataset)> {
    let one = |path: &Path, labels: Option<&PathBuf>| {
        load(path, labels, format, &r.scaling, None, &r.columns)
    };
    Ok((
        one(&r.train, r.train_labels.as_ref())?,
        one(&r.test, r.test_labels.as_ref())?,
    ))
}

fn load_pair(r: &Resolved, format: Option<Format>) -> Result<(Dataset, Dataset)> {
    let (train, test) = load_train_test(r, format)?;
    if train.p == test.p {
        return Ok((train, test));
    }
    let is_svm = |p: &Path| {
        format == Some(Format::Svm)
            || (format.is_none() && Format::from_path(p) == Some(Format::Svm))
    };
    if !(is_svm(&r.train) && is_svm(&r.test)) {
        return Err(Error::param(
            "--test",
            format!(
                "test rows have {} features, training rows {}",
                test.p, train.p
            ),
        ));
    }
    let dim = train.p.max(test.p);
    Ok((
        load(
            &r.train,
            r.train_labels.as_ref(),
            format,
            &r.scaling,
            Some(dim),
            &r.columns,
        )?,
        load(
            &r.test,
            r.test_labels.as_ref(),
            format,
            &r.scaling,
            Some(dim),
            &r.columns,
        )?,
    ))
}

/// Run an evaluation with a progress bar (drawn on a terminal only).
fn with_progress(
    run: impl FnOnce(&(dyn Fn(usize, usize) + Sync)) -> Result<Report>,
) -> Result<Report> {
    let pb = super::query::progress_bar(0, "eval");
    let tick = |done: usize, total: usize| {
        pb.set_length(total as u64);
        pb.set_position(done as u64);
    };
    let rep = run(&tick);
    pb.finish_and_clear();
    rep
}

/// Record the inputs and command line in the report's metadata.
fn annotate(rep: &mut Report, c: &CommonArgs, r: &Resolved) {
    if let Some(m) = rep.meta.as_object_mut() {
        m.insert("preset".into(), serde_json::json!(c.preset));
        m.insert(
            "train".into(),
            serde_json::json!(r.train.display().to_string()),
        );
        m.insert(
            "test".into(),
            serde_json::json!(r.test.display().to_string()),
        );
        m.insert(
            "command".into(),
            serde_json::json!(std::env::args().collect::<Vec<_>>().join(" ")),
        );
    }
}

/// Print the Markdown table; write the files and plots under `out`.
fn finish(rep: &Report, out: Option<&Path>) -> Result<()> {
    let md = report::markdown(rep);
    outln!("{md}")?;
    if let Some(dir) = out {
        // `dir` lies inside the staging directory of `--out` (see `stage_out`)
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mut f = crate::atomic::AtomicFile::create(&dir.join("report.md"))?;
        f.write_all(md.as_bytes())?;
        f.commit()?;
        report::write_csv(rep, &dir.join("report.csv"))?;
        report::write_json(rep, &dir.join("report.json"))?;
        let plots = report::plots_with_warnings(rep, dir)?;
        for w in &plots.warnings {
            super::output::warn(w);
        }
        super::output::note(format_args!(
            "report.md, report.csv, report.json and {} plot files",
            plots.files.len()
        ));
    }
    Ok(())
}
