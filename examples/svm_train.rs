//! Train a linear SVM ([`dprp::learn::svm`]) and report accuracy, training time and epochs.
//!
//! ```sh
//! cargo run --release --example svm_train -- \
//!     --train data/libsvm/a9a.svm.gz --test data/libsvm/a9a.t.svm.gz
//! cargo run --release --example svm_train -- \
//!     --train x_train.npy --train-labels y_train.npy --test x_test.npy --test-labels y_test.npy
//! cargo run --release --example svm_train -- --train train.dprp --test test.dprp
//! ```
//!
//! Inputs, by file name:
//! * `.npy` features (2-D `<f4`, `<f8` or `|u1`, read with dprp's reader) with a separate label
//!   file (`--train-labels` / `--test-labels`): a 1-D (or n×1) `.npy` of integers (`|u1`, `|i1`,
//!   `<i2`, `<u2`, `<i4`, `<u4`, `<i8`, `<u8`) or integral floats (`<f4`, `<f8`);
//! * LIBSVM / svmlight text (`.svm`, `.t`, `.trn`, `.tst`, optionally `.gz`) with labels inside;
//!   the test file gets the training file's dimension unless `--dim` says otherwise;
//! * a dprp release (`.dprp`): real sketches as dense rows, sign sketches as packed signs (no
//!   unpacking), labels from the release unless a label file is given.
//!
//! Only `LinearSvm::fit` is timed (not reading the data). `--json` prints one JSON object.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;
use dprp::data::{read_all, Format, InputOptions};
use dprp::learn::svm::labels_from_f32;
use dprp::learn::{Features, LinearSvm, Loss, SvmParams};
use dprp::release::Release;
use dprp::{Error, Result};

#[derive(Debug, Parser)]
#[command(about = "Train dprp's linear SVM (LIBLINEAR dual coordinate descent) and test it")]
struct Args {
    /// Training features: .npy, LIBSVM (.svm[.gz], .t, .trn, .tst) or a .dprp release.
    #[arg(long)]
    train: PathBuf,
    /// Labels for --train (.npy), when the feature file has none.
    #[arg(long)]
    train_labels: Option<PathBuf>,
    /// Test features (same kinds as --train).
    #[arg(long)]
    test: Option<PathBuf>,
    /// Labels for --test (.npy).
    #[arg(long)]
    test_labels: Option<PathBuf>,
    /// LIBSVM input: number of features (default: the training file's largest index).
    #[arg(long)]
    dim: Option<usize>,
    /// Penalty C > 0.
    #[arg(short = 'c', long = "c", default_value_t = 1.0)]
    c: f64,
    /// Loss: squared-hinge (default, scikit-learn's) or hinge.
    #[arg(long, default_value = "squared-hinge")]
    loss: String,
    /// Stopping tolerance on the projected-gradient gap (scikit-learn's tol).
    #[arg(long, default_value_t = 1e-4)]
    tol: f64,
    /// Maximum epochs per binary problem.
    #[arg(long, default_value_t = 1000)]
    max_iter: usize,
    /// Value B of the constant intercept feature (scikit-learn's intercept_scaling).
    #[arg(long, default_value_t = 1.0)]
    bias: f64,
    /// Fit no intercept.
    #[arg(long)]
    no_bias: bool,
    /// Seed of the random visiting order.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Worker threads (one-vs-rest problems run in parallel; default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Feature rows held in memory (or memory-mapped) with their labels.
enum Rows {
    Dense { values: Vec<f32>, d: usize },
    Release(Box<Release>),
}

struct Loaded {
    rows: Rows,
    labels: Vec<i32>,
}

impl Loaded {
    fn features(&self) -> Result<Features<'_>> {
        match &self.rows {
            Rows::Dense { values, d } => Features::dense(values, *d),
            Rows::Release(r) => {
                if r.meta().payload == dprp::mechanism::Payload::Bits {
                    Features::signs(r.bits()?, r.k())
                } else {
                    Features::dense(r.values()?, r.k())
                }
            }
        }
    }
}

fn is_release(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("dprp"))
}

fn load(path: &Path, labels: Option<&Path>, dim: Option<usize>) -> Result<Loaded> {
    let (rows, stored) = if is_release(path) {
        let r = Release::open(path)?;
        let stored = r.labels().map(|l| l.to_vec());
        (Rows::Release(Box::new(r)), stored)
    } else {
        let svm = Format::from_path(path) == Some(Format::Svm);
        let opts = InputOptions {
            dim: if svm { dim } else { None },
            ..Default::default()
        };
        let ds = read_all(path, &opts)?;
        (
            Rows::Dense {
                values: ds.values,
                d: ds.p,
            },
            ds.labels,
        )
    };
    let labels = match (labels, stored) {
        (Some(l), _) => read_label_npy(l)?,
        (None, Some(s)) => labels_from_f32(&s)?,
        (None, None) => {
            return Err(Error::param(
                "labels",
                format!(
                    "{} carries no labels: pass a label .npy file",
                    path.display()
                ),
            ))
        }
    };
    Ok(Loaded { rows, labels })
}

/// A 1-D (or n×1) `.npy` array of integer class ids.
fn read_label_npy(path: &Path) -> Result<Vec<i32>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let bad = |msg: &str| Error::format(path, msg.to_string());
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("not a .npy file (bad magic)"));
    }
    let (hlen, hstart) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(bad(&format!("unsupported .npy version {v}"))),
    };
    let header = bytes
        .get(hstart..hstart + hlen)
        .ok_or_else(|| bad("truncated header"))?;
    let header = String::from_utf8_lossy(header);
    let field = |key: &str| -> Option<String> {
        let at = header.find(&format!("'{key}'"))? + key.len() + 2;
        let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
        Some(rest.to_string())
    };
    let descr = field("descr").ok_or_else(|| bad("no descr in header"))?;
    let descr = descr
        .trim_start_matches('\'')
        .split('\'')
        .next()
        .unwrap_or("")
        .to_string();
    // A 1-D or n×1 array has the same layout in C and Fortran order.
    let shape = field("shape").ok_or_else(|| bad("no shape in header"))?;
    let shape: Vec<usize> = shape
        .trim_start_matches('(')
        .split(')')
        .next()
        .unwrap_or("")
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse::<usize>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| bad("unparsable shape"))?;
    let n = match shape.as_slice() {
        [n] | [n, 1] => *n,
        _ => return Err(bad(&format!("labels must be 1-D or n×1, got {shape:?}"))),
    };
    let data = &bytes[hstart + hlen..];
    let size = match &descr[1..] {
        "u1" | "i1" => 1,
        "i2" | "u2" => 2,
        "i4" | "u4" | "f4" => 4,
        "i8" | "u8" | "f8" => 8,
        _ => return Err(bad(&format!("unsupported label dtype '{descr}'"))),
    };
    if size > 1 && !descr.starts_with('<') {
        return Err(bad(&format!("labels must be little-endian, got '{descr}'")));
    }
    if data.len() != n * size {
        return Err(bad(&format!(
            "{} data bytes for {n} labels of {size} bytes",
            data.len()
        )));
    }
    let mut out = Vec::with_capacity(n);
    for (i, c) in data.chunks_exact(size).enumerate() {
        let mut b = [0u8; 8];
        b[..size].copy_from_slice(c);
        let v: f64 = match &descr[1..] {
            "u1" => c[0] as f64,
            "i1" => c[0] as i8 as f64,
            "i2" => i16::from_le_bytes([b[0], b[1]]) as f64,
            "u2" => u16::from_le_bytes([b[0], b[1]]) as f64,
            "i4" => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
            "u4" => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
            "f4" => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
            "i8" => i64::from_le_bytes(b) as f64,
            "u8" => u64::from_le_bytes(b) as f64,
            _ => f64::from_le_bytes(b),
        };
        if !(v.fract() == 0.0 && v.abs() <= i32::MAX as f64) {
            return Err(bad(&format!(
                "row {i}: label {v} is not an integer class id"
            )));
        }
        out.push(v as i32);
    }
    Ok(out)
}

fn run(a: Args) -> Result<()> {
    if let Some(t) = a.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build_global()
            .map_err(|e| Error::param("--threads", e.to_string()))?;
    }
    let params = SvmParams {
        c: a.c,
        loss: Loss::parse(&a.loss)?,
        tol: a.tol,
        max_iter: a.max_iter,
        bias: if a.no_bias { None } else { Some(a.bias) },
        seed: a.seed,
    };
    params.validate()?;
    let train = load(&a.train, a.train_labels.as_deref(), a.dim)?;
    let xtr = train.features()?;
    let t0 = Instant::now();
    let model = LinearSvm::fit(&xtr, &train.labels, &params)?;
    let fit_s = t0.elapsed().as_secs_f64();
    let train_acc = model.accuracy(&xtr, &train.labels)?;
    let test = match &a.test {
        Some(p) => {
            let t = load(
                p,
                a.test_labels.as_deref(),
                Some(a.dim.unwrap_or(xtr.dim())),
            )?;
            let x = t.features()?;
            Some((x.n(), model.accuracy(&x, &t.labels)?))
        }
        None => None,
    };
    let iters = model.iterations();
    if a.json {
        let v = serde_json::json!({
            "tool": "dprp",
            "version": env!("CARGO_PKG_VERSION"),
            "n_train": xtr.n(),
            "dim": xtr.dim(),
            "signs": xtr.is_signs(),
            "classes": model.classes().len(),
            "threads": rayon::current_num_threads(),
            "fit_seconds": fit_s,
            "iterations": iters,
            "max_iterations": iters.iter().max(),
            "converged": model.converged(),
            "train_accuracy": train_acc,
            "n_test": test.map(|t| t.0),
            "test_accuracy": test.map(|t| t.1),
            "params": model.params(),
        });
        println!("{v}");
    } else {
        println!(
            "train: {} rows × {} {} ({} classes, {} binary problem{})",
            xtr.n(),
            xtr.dim(),
            if xtr.is_signs() { "signs" } else { "features" },
            model.classes().len(),
            model.n_models(),
            if model.n_models() == 1 { "" } else { "s" }
        );
        println!(
            "fit: {fit_s:.3} s on {} thread(s); epochs {:?}; converged: {}",
            rayon::current_num_threads(),
            iters,
            model.converged()
        );
        println!("train accuracy: {:.4}", train_acc);
        if let Some((n, acc)) = test {
            println!("test accuracy: {acc:.4} ({n} rows)");
        }
    }
    Ok(())
}

fn main() {
    if let Err(e) = run(Args::parse()) {
        eprintln!("svm_train: {e}");
        std::process::exit(1);
    }
}
