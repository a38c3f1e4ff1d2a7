//! `dprp eval` from options as a user gives them. For retrieval and the SVM (this module): the
//! grid (mechanisms, ε, k, δ, β, ν, repeats, master seed), the data (files or a preset's datasets
//! under [`data_dir`]) and the refusals, resolved in the order the command checks them; then the
//! datasets loaded, the evaluation run ([`crate::eval::retrieval`], [`crate::eval::svm`]) and its
//! report annotated and written. The front end stages the output directory, draws the progress
//! bar and prints.
//!
//! - `retrieval.rs`: [`RetrievalOptions`] → [`RetrievalRequest`] → [`RetrievalRun`].
//! - `svm.rs`: [`SvmOptions`] → [`SvmRequest`] (its datasets) → one [`SvmRun`] per dataset.
//! - [`mean`]: `eval mean`, [`mean::MeanOptions`] → [`mean::MeanRequest`] (its data and
//!   experiments, presets included).

use crate::error::field;
use std::path::{Path, PathBuf};

use crate::data::parquet::Columns;
use crate::data::scale::{check_domain, ScaleArg, ScaleOptions, ScalingRequest};
use crate::data::{Dataset, Format, InputOptions};
use crate::error::{Error, Result};
use crate::eval::grid::{parse_f64_list, parse_usize_list, MechanismSpec, Privacy, Seeds};
use crate::eval::report::{self, PlotOutcome};
use crate::eval::Report;
use crate::projection::Seed;
use crate::publish::load_scaled;

pub mod mean;
mod retrieval;
mod svm;

pub use retrieval::{RetrievalOptions, RetrievalRequest, RetrievalRun, RowsRetrieval};
pub use svm::{SvmOptions, SvmRequest, SvmRun, SvmSet};

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
/// Sketch sizes of a retrieval without a preset.
const RETRIEVAL_KS: &str = "256,512,1024";

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

/// The preset's file `rel` under `dir`, refused (naming the preset option) when it is missing.
fn preset_file(dir: &Path, rel: &str, preset: &str) -> Result<PathBuf> {
    let p = dir.join(rel);
    if p.is_file() {
        Ok(p)
    } else {
        Err(Error::param(
            field("preset"),
            format!(
                "{preset} needs {} (not found); {DATA_HINT}, or pass {}/{}",
                p.display(),
                field("train"),
                field("test")
            ),
        ))
    }
}

/// The options every evaluation shares, as given; `None` where the user gave nothing.
#[derive(Debug, Clone, Default)]
pub struct GridOptions {
    /// `paper-mnist` (retrieval) or `paper-svm` (classification).
    pub preset: Option<String>,
    /// Training rows (the database for retrieval).
    pub train: Option<PathBuf>,
    /// Test rows (the queries for retrieval).
    pub test: Option<PathBuf>,
    /// MNIST IDX label file of the training rows.
    pub train_labels: Option<PathBuf>,
    /// MNIST IDX label file of the test rows.
    pub test_labels: Option<PathBuf>,
    /// Input format when the file names do not tell.
    pub format: Option<String>,
    /// Parquet: the vector column.
    pub column: Option<String>,
    /// Parquet: the label column.
    pub label_column: Option<String>,
    /// Mechanisms, comma-separated (default `all`, or the preset's).
    pub mechanisms: Option<String>,
    /// ε values, comma-separated (default [`PAPER_EPSILONS`]).
    pub epsilon: Option<String>,
    /// Sketch sizes, comma-separated (default: the evaluation's).
    pub k: Option<String>,
    /// δ (default 1e-6).
    pub delta: Option<f64>,
    /// Neighbour distance β (default 1).
    pub beta: Option<f64>,
    /// Public lower bound ν on row norms.
    pub min_norm: Option<f64>,
    /// Repeats per setting (default 1).
    pub repeat: Option<usize>,
    /// Master seed, hexadecimal (default: fresh from the operating system).
    pub seed: Option<String>,
    /// Scaling of both sides.
    pub scale: ScaleOptions,
}

/// Which evaluation a grid is for: its default sketch sizes and its preset.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Evaluation {
    Retrieval,
    Svm,
}

impl Evaluation {
    fn default_ks(self) -> &'static str {
        match self {
            Evaluation::Retrieval => RETRIEVAL_KS,
            Evaluation::Svm => PAPER_SVM_KS,
        }
    }

    fn preset(self) -> &'static str {
        match self {
            Evaluation::Retrieval => "paper-mnist",
            Evaluation::Svm => "paper-svm",
        }
    }
}

/// Resolved inputs and grid of an evaluation.
#[derive(Debug)]
struct Grid {
    preset: Option<String>,
    train: PathBuf,
    test: PathBuf,
    train_labels: Option<PathBuf>,
    test_labels: Option<PathBuf>,
    format: Option<Format>,
    columns: Columns,
    scaling: ScalingRequest,
    mechanisms: Vec<MechanismSpec>,
    epsilons: Vec<f64>,
    ks: Vec<usize>,
    privacy: Privacy,
    repeat: usize,
    seeds: Seeds,
}

/// The inputs a preset fills in where the user gave none.
struct Inputs {
    train: Option<PathBuf>,
    test: Option<PathBuf>,
    train_labels: Option<PathBuf>,
    test_labels: Option<PathBuf>,
    scaling: ScalingRequest,
    mechanisms: String,
    min_norm: Option<f64>,
}

impl GridOptions {
    /// The inputs with the preset's filled in (paper-svm's datasets are chosen per run, see
    /// [`SvmOptions::resolve`]); an unknown preset is refused.
    fn inputs(&self, eval: Evaluation) -> Result<Inputs> {
        let mut i = Inputs {
            train: self.train.clone(),
            test: self.test.clone(),
            train_labels: self.train_labels.clone(),
            test_labels: self.test_labels.clone(),
            scaling: self.scale.request()?,
            mechanisms: self.mechanisms.clone().unwrap_or_else(|| "all".to_string()),
            min_norm: self.min_norm,
        };
        match self.preset.as_deref() {
            None => {}
            Some("paper-mnist") => {
                let dir = data_dir();
                let f = |rel: &str| preset_file(&dir, rel, "paper-mnist");
                i.train
                    .get_or_insert(f("mnist/train-images-idx3-ubyte.gz")?);
                i.test.get_or_insert(f("mnist/t10k-images-idx3-ubyte.gz")?);
                i.train_labels
                    .get_or_insert(f("mnist/train-labels-idx1-ubyte.gz")?);
                i.test_labels
                    .get_or_insert(f("mnist/t10k-labels-idx1-ubyte.gz")?);
                if i.scaling == ScalingRequest::default() {
                    i.scaling.scale = Some(ScaleArg::Divide(255.0));
                }
                if self.mechanisms.is_none() {
                    i.mechanisms = PAPER_MNIST_MECHANISMS.to_string();
                }
                i.min_norm.get_or_insert(PAPER_MNIST_MIN_NORM);
            }
            Some("paper-svm") if eval == Evaluation::Svm && self.mechanisms.is_none() => {
                i.mechanisms = PAPER_SVM_MECHANISMS.to_string();
            }
            Some("paper-svm") if eval == Evaluation::Svm => {}
            Some(o) => {
                return Err(Error::param(
                    field("preset"),
                    format!(
                        "unknown preset '{o}' for this evaluation (expected {})",
                        eval.preset()
                    ),
                ));
            }
        }
        Ok(i)
    }

    /// δ, β and ν, each checked.
    pub(super) fn privacy(&self, min_norm: Option<f64>) -> Result<Privacy> {
        let delta = self.delta.unwrap_or(1e-6);
        if !(delta > 0.0 && delta < 1.0) {
            return Err(Error::param(
                field("delta"),
                format!("{delta} is not in (0, 1)"),
            ));
        }
        let beta = self.beta.unwrap_or(1.0);
        if !(beta.is_finite() && beta > 0.0) {
            return Err(Error::param(
                field("beta"),
                format!("{beta} must be positive"),
            ));
        }
        if let Some(v) = min_norm {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::param(
                    field("min_norm"),
                    format!("{v} must be positive"),
                ));
            }
        }
        Ok(Privacy {
            delta,
            beta,
            min_norm,
        })
    }

    /// The grid for `eval`, every option checked (no file is read).
    fn resolve(&self, eval: Evaluation) -> Result<Grid> {
        let i = self.inputs(eval)?;
        let missing = |name: &str, what: &str| {
            Error::missing(
                field(name),
                format!("give the {what} data (or use {})", field("preset")),
            )
        };
        let train = i.train.ok_or_else(|| missing("train", "training"))?;
        let test = i.test.ok_or_else(|| missing("test", "test"))?;
        let privacy = self.privacy(i.min_norm)?;
        let repeat = self.repeat.unwrap_or(1);
        if repeat == 0 {
            return Err(Error::param(field("repeat"), "must be at least 1"));
        }
        let master = master_seed(self.seed.as_deref())?;
        let epsilons = self.epsilon.as_deref().unwrap_or(PAPER_EPSILONS);
        Ok(Grid {
            preset: self.preset.clone(),
            train,
            test,
            train_labels: i.train_labels,
            test_labels: i.test_labels,
            format: None,
            columns: Columns {
                vectors: self.column.clone(),
                label: self.label_column.clone(),
                id: None,
            },
            scaling: i.scaling,
            mechanisms: MechanismSpec::parse_list(&i.mechanisms)?,
            epsilons: parse_f64_list(&field("epsilon"), epsilons)?,
            ks: parse_usize_list(&field("k"), self.k.as_deref().unwrap_or(eval.default_ks()))?,
            privacy,
            repeat,
            seeds: Seeds::new(master),
        })
    }

    /// The input format, if given.
    fn format(&self) -> Result<Option<Format>> {
        self.format.as_deref().map(Format::parse).transpose()
    }
}

/// The master seed given in hexadecimal, or a fresh one from the operating system.
fn master_seed(seed: Option<&str>) -> Result<Seed> {
    match seed {
        Some(s) => Seed::parse_hex(s).map_err(|_| {
            Error::param(
                field("seed"),
                format!("'{s}' is not 1 to 64 hexadecimal digits"),
            )
        }),
        None => Seed::random(),
    }
}

impl Grid {
    /// Load one side (train or test), scaled and checked against the privacy domain [-1, 1].
    fn load(&self, path: &Path, labels: Option<&PathBuf>, dim: Option<usize>) -> Result<Dataset> {
        let opts = InputOptions {
            format: self.format,
            labels: labels.cloned(),
            dim,
            columns: self.columns.clone(),
            ..Default::default()
        };
        let d = load_scaled(path, &opts, &self.scaling)?;
        check_domain(&d.values, d.p, 0, path)?;
        Ok(d)
    }

    /// The training and test sets as given (no reconciliation of their widths).
    fn load_train_test(&self, dim: Option<usize>) -> Result<(Dataset, Dataset)> {
        Ok((
            self.load(&self.train, self.train_labels.as_ref(), dim)?,
            self.load(&self.test, self.test_labels.as_ref(), dim)?,
        ))
    }

    /// Load train and test; LIBSVM files whose largest feature index differs are read again with
    /// the larger dimension (the same feature space).
    fn load_pair(&self) -> Result<(Dataset, Dataset)> {
        let (train, test) = self.load_train_test(None)?;
        if train.p == test.p {
            return Ok((train, test));
        }
        let is_svm = |p: &Path| {
            self.format == Some(Format::Svm)
                || (self.format.is_none() && Format::from_path(p) == Some(Format::Svm))
        };
        if !(is_svm(&self.train) && is_svm(&self.test)) {
            return Err(Error::param(
                field("test"),
                format!(
                    "test rows have {} features, training rows {}",
                    test.p, train.p
                ),
            ));
        }
        self.load_train_test(Some(train.p.max(test.p)))
    }

    /// Record the preset and the inputs in the report's metadata.
    fn annotate(&self, rep: &mut Report) {
        if let Some(m) = rep.meta.as_object_mut() {
            m.insert("preset".into(), serde_json::json!(self.preset));
            m.insert(
                "train".into(),
                serde_json::json!(self.train.display().to_string()),
            );
            m.insert(
                "test".into(),
                serde_json::json!(self.test.display().to_string()),
            );
        }
    }
}

/// Write `report.md` (the Markdown `md` of the report), `report.csv`, `report.json` and the plots
/// under `dir` (created if needed); returns the plots written and the warnings about them.
pub fn write_report(rep: &Report, md: &str, dir: &Path) -> Result<PlotOutcome> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut f =
        crate::atomic::AtomicFile::create(&dir.join("report.md"), crate::atomic::Existing::Refuse)?;
    f.write_all(crate::error::in_files(md).as_bytes())?;
    f.commit()?;
    report::write_csv(rep, &dir.join("report.csv"))?;
    report::write_json(rep, &dir.join("report.json"))?;
    report::plots_with_warnings(rep, dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Front;

    /// Grid options with the files and seed given (what every refusal test starts from).
    pub(super) fn files() -> GridOptions {
        GridOptions {
            train: Some("train.bin".into()),
            test: Some("test.bin".into()),
            seed: Some("abc".into()),
            ..Default::default()
        }
    }

    fn refusal(g: &GridOptions, front: Front) -> String {
        RetrievalOptions {
            grid: g.clone(),
            ..Default::default()
        }
        .resolve()
        .unwrap_err()
        .render(front)
    }

    #[test]
    fn refusals_name_the_option_per_front_end() {
        let mut g = files();
        g.min_norm = Some(0.0);
        assert!(refusal(&g, Front::Cli).contains("--min-norm"));
        assert!(refusal(&g, Front::Python).contains("min_norm"));
        assert!(!refusal(&g, Front::Python).contains("--min-norm"));
        let g = GridOptions {
            train: None,
            ..files()
        };
        assert_eq!(
            refusal(&g, Front::Cli),
            "missing --train: give the training data (or use --preset)"
        );
        let g = GridOptions {
            repeat: Some(0),
            seed: Some("xyz".into()),
            ..files()
        };
        assert_eq!(
            refusal(&g, Front::Python),
            "invalid repeat: must be at least 1"
        );
        let g = GridOptions {
            seed: Some("xyz".into()),
            ..files()
        };
        assert_eq!(
            refusal(&g, Front::Cli),
            "invalid --seed: 'xyz' is not 1 to 64 hexadecimal digits"
        );
    }

    #[test]
    fn presets_belong_to_their_evaluation() {
        let g = GridOptions {
            preset: Some("paper-svm".into()),
            ..files()
        };
        assert_eq!(
            refusal(&g, Front::Cli),
            "invalid --preset: unknown preset 'paper-svm' for this evaluation (expected \
             paper-mnist)"
        );
    }
}
