//! The `dprp` command line: one module per subcommand over the library `dprp` (its request
//! layer); it parses flags, calls one request function per command and prints the report.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use dprp::error::{Error, Result};
use dprp::request::rows::{Format, InputOptions};
use dprp::request::{ScaleOptions, ScalingRequest};

#[macro_use]
pub mod output;

mod aggregate;
mod audit;
mod calibrate;
mod convert;
mod demo;
mod estimate;
mod eval;
mod export;
mod index;
mod info;
mod ledger;
mod mean;
mod project;
mod publish;
mod query;
mod shards;

/// Differentially private random-projection sketches and local-DP mean estimation.
#[derive(Debug, Parser)]
#[command(name = "dprp", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Convert vectors (.npy, .fvecs, .bvecs, LIBSVM, MNIST IDX, CSV) to the native dataset format.
    Convert(convert::ConvertArgs),
    /// Publish private sketches of a dataset.
    Publish(publish::PublishArgs),
    /// Describe a release: mechanism, parameters and guarantee.
    Info(info::InfoArgs),
    /// Compute σ, sensitivity and the expected inner-product error before publishing.
    Calibrate(calibrate::CalibrateArgs),
    /// Estimate inner products / cosines between released rows (or a raw vector and rows), with
    /// standard errors.
    Estimate(estimate::EstimateArgs),
    /// Nearest neighbours of query vectors (or of another release's rows) among released rows.
    Query(query::QueryArgs),
    /// Raw query vectors put through a release's public scaling and map (.npy or .parquet), for
    /// a database that holds the release's sketches.
    Project(project::ProjectArgs),
    /// Load a release into PostgreSQL (pgvector): one transaction, binary COPY, the release's
    /// fingerprint stored with the table.
    Export(export::ExportArgs),
    /// The mean of the users' vectors from local-DP releases, with its expected error.
    Mean(mean::MeanArgs),
    /// Run a secure-aggregation round (distributed discrete Gaussian, pairwise masks mod M) over
    /// client vectors and write the private mean.
    Aggregate(aggregate::AggregateArgs),
    /// The releases of each dataset in a privacy budget ledger directory and their total
    /// guarantee (basic composition; zCDP where every release is Gaussian).
    Ledger(ledger::LedgerArgs),
    /// An empirical lower bound on ε: privatise worst-case neighbours many times and bound the
    /// privacy loss of output events (exit status 1 when it exceeds the claim).
    Audit(audit::AuditArgs),
    /// Build an HNSW index over a release for fast approximate queries.
    Index(index::IndexArgs),
    /// Sharded releases: `dprp shards finish DIR` writes the manifest of shards written by
    /// workers (`publish --shard i/N`).
    Shards(shards::ShardsArgs),
    /// How much utility each mechanism keeps at given ε and k (retrieval or a linear SVM), before
    /// publishing: tables, CSV/JSON and plots.
    Eval(eval::EvalArgs),
    /// Publish the bundled sample with a couple of mechanisms and show what was released.
    Demo(demo::DemoArgs),
    /// Regenerate the bundled sample dataset (data/sample.bin).
    #[command(hide = true)]
    Sample {
        /// Output path.
        #[arg(short, long)]
        output: PathBuf,
        /// Replace an existing regular file at --output.
        #[arg(long)]
        overwrite: bool,
    },
}

/// How to read the input (shared by convert and publish).
#[derive(Debug, Args, Clone, Default)]
pub struct InputArgs {
    /// Input format, when the file name does not tell (native, npy, fvecs, bvecs, svm, idx, csv,
    /// parquet).
    #[arg(long)]
    format: Option<String>,
    /// Number of features for LIBSVM input (default: the largest index in the file).
    #[arg(long)]
    dim: Option<usize>,
    /// MNIST IDX label file (idx1-ubyte, raw or .gz) to store with the images.
    #[arg(long)]
    labels: Option<PathBuf>,
    /// CSV: whether the first line is a header (default: detect).
    #[arg(long, value_name = "yes|no")]
    csv_header: Option<String>,
    /// The column holding a label: a number counted from 0 for CSV, a column name for Parquet.
    #[arg(long, value_name = "COLUMN")]
    label_column: Option<String>,
    /// Parquet: the column holding the vectors (a fixed_size_list or list of numbers; default:
    /// the file's only list column).
    #[arg(long, value_name = "NAME")]
    column: Option<String>,
    /// Parquet: a column of unique non-negative integer row ids, stored in the release (default:
    /// row i has id i).
    #[arg(long, value_name = "NAME")]
    id_column: Option<String>,
}

impl InputArgs {
    fn options(&self) -> Result<InputOptions> {
        Ok(InputOptions {
            format: self.format.as_deref().map(Format::parse).transpose()?,
            dim: match self.dim {
                Some(0) => return Err(Error::param("--dim", "the dimension must be at least 1")),
                d => d,
            },
            labels: self.labels.clone(),
            csv_header: match self.csv_header.as_deref() {
                None => None,
                Some("yes" | "true" | "1") => Some(true),
                Some("no" | "false" | "0") => Some(false),
                Some(o) => {
                    return Err(Error::param(
                        "--csv-header",
                        format!("'{o}' is not yes or no"),
                    ))
                }
            },
            csv_label_column: self.label_column.as_deref().and_then(|l| l.parse().ok()),
            columns: dprp::request::rows::Columns {
                vectors: self.column.clone(),
                label: self.label_column.clone(),
                id: self.id_column.clone(),
            },
        })
    }
}

/// Explicit scaling (shared by convert and publish).
#[derive(Debug, Args, Clone, Default)]
pub struct ScaleArgs {
    /// Scale values: `max-abs` (per column, data-dependent) or a number to divide by (e.g. 255).
    #[arg(long)]
    scale: Option<String>,
    /// Normalise rows: `l2`.
    #[arg(long)]
    normalize: Option<String>,
    /// Clamp values to [-1, 1].
    #[arg(long)]
    clip: bool,
    /// Shrink rows whose ℓ₂ norm exceeds R to norm R (local-DP mechanisms on a ball).
    #[arg(long, value_name = "R", allow_negative_numbers = true)]
    clip_norm: Option<f64>,
}

impl ScaleArgs {
    /// The options as given, parsed later by [`ScaleOptions::request`].
    fn options(self) -> ScaleOptions {
        ScaleOptions {
            scale: self.scale,
            normalize: self.normalize,
            clip: self.clip,
            clip_norm: self.clip_norm,
        }
    }

    fn request(&self) -> Result<ScalingRequest> {
        self.clone().options().request()
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Convert(a) => convert::run(a),
        Command::Publish(a) => publish::run(a),
        Command::Info(a) => info::run(a),
        Command::Calibrate(a) => calibrate::run(a),
        Command::Demo(a) => demo::run(a),
        Command::Estimate(a) => estimate::run(a),
        Command::Query(a) => query::run(a),
        Command::Project(a) => project::run(a),
        Command::Export(a) => export::run(a),
        Command::Index(a) => index::run(a),
        Command::Shards(a) => shards::run(a),
        Command::Ledger(a) => ledger::run(a),
        Command::Mean(a) => mean::run(a),
        Command::Aggregate(a) => aggregate::run(a),
        Command::Audit(a) => audit::run(a),
        Command::Eval(a) => eval::run(a),

        Command::Sample { output, overwrite } => {
            let existing = dprp::atomic::Existing::replace_if(overwrite);
            dprp::request::demo::write_sample(&output, existing)?;
            output::report_written(&[&output], || outln!("wrote {}", output.display()))
        }
    }
}

/// Parse the command line, run it, print any error; returns the process exit code.
///
/// Exit status: 0 when the command did its work — also when its output files are complete and in
/// place and only the report after them could not be printed (standard output full, closed or
/// gone: [`output::report_written`]), so that a script never runs a publish twice because its
/// report was lost; 1 on an error (nothing was written); 141 when standard output closed before
/// the work was done (as `ls | head` does); 128 + N when interrupted by signal N; 2 for a
/// malformed command line.
fn run_main() -> i32 {
    output::install_signal_handlers();
    dprp::atomic::stale::set_notice(|r| {
        output::note(format_args!(
            "note: removed {} ({}), a temporary output left by a dprp process that is no longer \
             running",
            r.path.display(),
            dprp::request::publish::human_bytes(r.bytes)
        ))
    });
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => 0,
        Err(e) if output::is_broken_pipe(&e) => output::exit_on_broken_pipe(),
        Err(e) => {
            let hint = match &e {
                dprp::error::Error::Output {
                    replaceable: true, ..
                } => " (--overwrite replaces it)",
                _ => "",
            };
            output::note(format_args!(
                "error: {}{hint}",
                e.render(dprp::error::Front::Cli)
            ));
            1
        }
    }
}

fn main() {
    std::process::exit(run_main());
}
