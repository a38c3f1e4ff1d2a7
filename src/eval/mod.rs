//! Utility evaluation (DESIGN.md §9): how much precision, recall or accuracy each mechanism keeps
//! at a given ε and k, before anything is published.
//!
//! - [`metrics`]: precision@10, recall@100, accuracy, ground truth by brute force.
//! - [`report`]: the results table as Markdown, CSV, JSON and plots (SVG and PNG).
//! - [`mean`], [`mean_report`]: `dprp eval mean`, the local-DP mean-estimation experiments of
//!   the ProjUnit and PrivUnit papers (their own report: error, closed form, check, runtime).
//!
//! Every evaluation produces one [`Report`]: one [`ResultRow`] per (mechanism, ε, k, query mode),
//! including the combinations a mechanism cannot take (status [`Status::NotApplicable`]), and the
//! noiseless references (`epsilon = None`, i.e. ε = ∞): one per public-map family of the grid
//! (each mechanism row names its own in [`ResultRow::reference`]; see
//! [`grid::ReferenceKind`]) and the unprojected ceiling. Every row names its guarantee kind
//! ([`ResultRow::guarantee`]: DP, iDP, or none for a reference).

pub mod gradients;
pub mod grid;
pub mod mean;
mod mean_distributed;
mod mean_repeat;
pub mod mean_report;
mod mean_series;
mod mean_spec;
mod mean_summary;
pub mod metrics;
pub mod report;
pub mod retrieval;
pub mod svm;

use serde::{Deserialize, Serialize};

use crate::privacy::guarantee::GuaranteeKind;

/// Which evaluation produced a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EvalKind {
    /// Nearest-neighbour retrieval (precision@10, recall@100).
    Retrieval,
    /// Linear SVM on released sketches (accuracy).
    Svm,
}

/// Outcome of one setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", content = "reason", rename_all = "kebab-case")]
pub enum Status {
    /// Ran; metrics are filled in.
    Ok,
    /// The mechanism cannot take this combination (e.g. OPORP needs k ≤ p); the reason says why.
    NotApplicable(String),
    /// Ran and failed (e.g. every row below the public norm bound); the reason says why.
    Failed(String),
}

/// One metric of one setting over its repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// Name, e.g. `precision@10`, `recall@100`, `accuracy`.
    pub name: String,
    /// Mean over repeats.
    pub mean: f64,
    /// Sample standard deviation over repeats (0 for one repeat).
    pub sd: f64,
    /// The value of each repeat.
    pub values: Vec<f64>,
}

impl Metric {
    /// Summarise per-repeat values.
    pub fn from_values(name: &str, values: Vec<f64>) -> Metric {
        let n = values.len() as f64;
        let mean = if values.is_empty() {
            f64::NAN
        } else {
            values.iter().sum::<f64>() / n
        };
        let sd = if values.len() > 1 {
            (values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Metric {
            name: name.to_string(),
            mean,
            sd,
            values,
        }
    }
}

/// One (mechanism, ε, k, query mode) setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRow {
    /// Mechanism label as given on the command line (e.g. `dp-oporp`, `dp-rp-g-opt:gaussian`), or
    /// a reference's label (`noiseless:rademacher`, `noiseless-signs:oporp`, `unprojected`, ...).
    pub mechanism: String,
    /// The kind of guarantee (from the mechanism; `none` for a reference). Reports name it as
    /// [`GuaranteeKind::short`] (`DP`, `iDP`, `none`). Absent in reports written before it was
    /// recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guarantee: Option<GuaranteeKind>,
    /// ε; `None` is the non-private reference (ε = ∞).
    pub epsilon: Option<f64>,
    /// Sketch size (the input dimension p for mechanisms without a projection).
    pub k: usize,
    /// Retrieval: `private` (queries privatised like the database) or `raw` (queries projected
    /// only). `None` for SVM.
    pub query_mode: Option<String>,
    /// Extra parameter of the setting, e.g. the SVM's C (`None` when not applicable).
    pub c: Option<f64>,
    /// For a mechanism: the label of its ε = ∞ reference — the row with that label and the same
    /// k, query mode (and C) holds the same public map without noise. `None` for a reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Whether it ran.
    #[serde(flatten)]
    pub status: Status,
    /// Metrics (empty unless `status` is `Ok`).
    pub metrics: Vec<Metric>,
    /// Seeds used per repeat (projection seed and noise seed, hex), for reproduction.
    pub seeds: Vec<String>,
    /// Wall-clock seconds for all repeats.
    pub seconds: f64,
}

impl ResultRow {
    /// The metric with this name.
    pub fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }
}

/// A whole evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Which evaluation.
    pub kind: EvalKind,
    /// Metric names, in display order.
    pub metrics: Vec<String>,
    /// One row per setting, in grid order.
    pub rows: Vec<ResultRow>,
    /// Everything needed to reproduce: inputs, parameters, master seed, dprp version, preset,
    /// machine facts (free-form JSON object).
    pub meta: serde_json::Value,
}
