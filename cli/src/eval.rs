//! `dprp eval retrieval|svm|mean`: utility of each mechanism at given ε and k, before publishing.

//! The grids, data and refusals are [`dprp::request::eval`] and [`dprp::request::eval_mean`];
//! this module parses the flags, stages `--out`, draws the progress bar and prints.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

mod mean;

use super::output::{note, warn};
use super::ScaleArgs;
use dprp::atomic::{Existing, StagingDir};
use dprp::error::{Error, Result};
use dprp::eval::{report, Report};
use dprp::request::eval::{write_report, GridOptions, RetrievalOptions, SvmOptions};

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

impl CommonArgs {
    /// The options as given, and `--out` with what it may replace.
    fn options(self) -> (GridOptions, (Option<PathBuf>, Existing)) {
        let grid = GridOptions {
            preset: self.preset,
            train: self.train,
            test: self.test,
            train_labels: self.train_labels,
            test_labels: self.test_labels,
            format: self.format,
            column: self.column,
            label_column: self.label_column,
            mechanisms: self.mechanisms,
            epsilon: self.epsilon,
            k: self.k,
            delta: self.delta,
            beta: self.beta,
            min_norm: self.min_norm,
            repeat: self.repeat,
            seed: self.seed,
            scale: self.scale.options(),
        };
        (grid, (self.out, Existing::replace_if(self.overwrite)))
    }
}

fn run_retrieval(a: RetrievalArgs) -> Result<()> {
    let (grid, (out, existing)) = a.common.options();
    let options = RetrievalOptions {
        grid,
        queries: a.queries,
        query_mode: a.query_mode,
    };
    let req = options.resolve()?;
    // the output directory is checked (and staged) before the work
    let staging = stage_out(out.as_deref(), existing)?;
    let run = req.load()?;
    note(run.summary());
    let rep = with_progress("eval", |tick| run.run(tick))?;
    finish(rep, staging.as_ref().map(|s| s.path()))?;
    commit_out(staging)
}

fn run_svm(a: SvmArgs) -> Result<()> {
    let (grid, (out, existing)) = a.common.options();
    let staging = stage_out(out.as_deref(), existing)?;
    let options = SvmOptions {
        grid,
        c: a.c,
        pick_c: a.pick_c,
        loss: a.loss,
        tol: a.tol,
        max_iter: a.max_iter,
    };
    let req = options.resolve()?;
    let several = req.sets().len() > 1;
    for set in req.sets() {
        let run = req.load(set)?;
        note(run.summary(&set.name));
        let rep = with_progress("eval", |tick| run.run(tick))?;
        if !set.name.is_empty() {
            outln!("## {}\n", set.name)?;
        }
        let dir = staging.as_ref().map(|s| {
            if several {
                s.path().join(&set.name)
            } else {
                s.path().to_path_buf()
            }
        });
        finish(rep, dir.as_deref())?;
    }
    commit_out(staging)
}

/// Stage `--out`: refused at once if it is a file or its parent directory is missing; its files
/// are written under a hidden directory beside it and moved into place only when every report of
/// the run is complete (an error or a signal leaves nothing behind).
fn stage_out(out: Option<&Path>, existing: Existing) -> Result<Option<StagingDir>> {
    out.map(|o| {
        StagingDir::create(o, existing).map_err(|e| match e {
            Error::Output { .. } => e,
            e => Error::param("--out", e.to_string()),
        })
    })
    .transpose()
}

/// Move the staged reports into `--out` and say where they are.
fn commit_out(staging: Option<StagingDir>) -> Result<()> {
    if let Some(s) = staging {
        let dest = s.dest().to_path_buf();
        s.commit()?;
        note(format_args!("wrote {}", dest.display()));
    }
    Ok(())
}

/// Run an evaluation with a progress bar (drawn on a terminal only).
fn with_progress<R>(what: &str, run: impl FnOnce(&(dyn Fn(usize, usize) + Sync)) -> R) -> R {
    let pb = super::query::progress_bar(0, what);
    let tick = |done: usize, total: usize| {
        pb.set_length(total as u64);
        pb.set_position(done as u64);
    };
    let rep = run(&tick);
    pb.finish_and_clear();
    rep
}

/// Record the command line in a report's metadata.
fn record_command(meta: &mut serde_json::Value) {
    if let Some(m) = meta.as_object_mut() {
        m.insert(
            "command".into(),
            serde_json::json!(std::env::args().collect::<Vec<_>>().join(" ")),
        );
    }
}

/// Print the Markdown table; write the files and plots under `out`.
fn finish(mut rep: Report, out: Option<&Path>) -> Result<()> {
    record_command(&mut rep.meta);
    let md = report::markdown(&rep);
    outln!("{md}")?;
    if let Some(dir) = out {
        // `dir` lies inside the staging directory of `--out` (see `stage_out`)
        let plots = write_report(&rep, &md, dir)?;
        written(plots.files.len(), &plots.warnings);
    }
    Ok(())
}

/// Warn about what could not be drawn and say what was written.
fn written(plot_files: usize, warnings: &[String]) {
    for w in warnings {
        warn(w);
    }
    note(format_args!(
        "report.md, report.csv, report.json and {plot_files} plot files"
    ));
}
