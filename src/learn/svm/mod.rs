//! Linear SVM (dual coordinate descent, LIBLINEAR) on dense and sign sketches.
//!
//! # The problem solved
//!
//! For rows `x_i ∈ R^d` with labels `y_i ∈ {−1, +1}`, append a constant feature `B` (the
//! *bias*, [`SvmParams::bias`]; LIBLINEAR's `-B`, scikit-learn's `intercept_scaling`) to get
//! `x̄_i = [x_i; B]`, `w̄ = [w; w_B]`, and solve the L2-regularised primal
//!
//! ```text
//!     min_w̄  ½‖w̄‖² + C Σ_i ξ(y_i w̄ᵀx̄_i)
//!     hinge (L1-loss):          ξ(z) = max(0, 1 − z)
//!     squared hinge (L2-loss):  ξ(z) = max(0, 1 − z)²
//! ```
//!
//! The decision function is `wᵀx + b` with intercept `b = B·w_B`; like LIBLINEAR and
//! scikit-learn's `LinearSVC`, the intercept is regularised (through `w_B`). Without a bias
//! (`bias: None`) the problem has no intercept.
//!
//! # The algorithm
//!
//! Dual coordinate descent: C.-J. Hsieh, K.-W. Chang, C.-J. Lin, S. S. Keerthi and
//! S. Sundararajan, *A dual coordinate descent method for large-scale linear SVM*, ICML 2008 —
//! Algorithm 1 (one coordinate at a time, exact minimisation along it, `w = Σ y_i α_i x̄_i`
//! maintained incrementally) with the random permutation and shrinking of Algorithm 3, as
//! implemented in LIBLINEAR (R.-E. Fan et al., JMLR 2008, solver `-s 1` / `-s 3`). It minimises the
//! dual
//!
//! ```text
//!     min_α  ½ αᵀ(Q + D)α − Σ_i α_i   subject to 0 ≤ α_i ≤ U,   Q_ij = y_i y_j x̄_iᵀx̄_j
//!     hinge:          D = 0,          U = C
//!     squared hinge:  D = I/(2C),     U = ∞
//! ```
//!
//! Each epoch visits the active coordinates in a random order (a ChaCha20 generator seeded from
//! [`SvmParams::seed`], so fits are reproducible). For coordinate `i` the gradient is
//! `G = y_i w̄ᵀx̄_i − 1 + D_ii α_i` and the projected gradient `PG` is `G` clipped at the bounds;
//! `α_i ← min(max(α_i − G/Q̄_ii, 0), U)` with `Q̄_ii = ‖x̄_i‖² + D_ii` precomputed. Shrinking: a
//! coordinate at a bound whose gradient points out of the box by more than last epoch's
//! extreme projected gradient is removed from the active set. The stopping rule is LIBLINEAR's
//! (and scikit-learn's bundled copy, which `LinearSVC(dual=True)` runs): stop when
//! `max PG − min PG ≤ tol` over an epoch on the *full* set; if it holds on a shrunk set, the set
//! is reset to all coordinates and the epoch repeated. `tol` is therefore an absolute bound on the
//! projected-gradient gap, exactly scikit-learn's `tol` (default 1e-4); the LIBLINEAR command
//! line's default is 0.1. `max_iter` counts epochs, like scikit-learn's `max_iter` (default 1000);
//! reaching it is reported as non-convergence ([`ModelInfo::converged`]).
//!
//! Multi-class problems are solved one-vs-rest (one binary problem per class); the predicted class
//! is the one with the largest decision value. Two classes give one model whose positive class is
//! the larger label. The binary problems are split into groups of at most five (the split depends
//! only on the number of classes, so results do not depend on the number of threads); groups are
//! trained in parallel with rayon, and the problems of a group in lockstep: one shared random
//! order of the rows per epoch, and for each row a coordinate step in every problem for which that
//! row is still active. Restricted to one problem's active rows, the shared order is a uniformly
//! random permutation of them, and shrinking, resets and stopping are per problem, so each problem
//! runs exactly the algorithm above; but a row is read from memory once per epoch for the whole
//! group rather than once per problem (on 60000 × 1024 sketches this halves the training time).
//!
//! Rows are [`Features`]: dense f32 rows or packed sign rows, borrowed without copying.
//!
//! ```
//! use dprp::learn::{Features, LinearSvm, SvmParams};
//!
//! # fn main() -> dprp::Result<()> {
//! // Four 2-D rows (row-major) and their classes.
//! let x = [2.0f32, 1.0, 1.5, 2.0, -1.0, -2.0, -2.0, -0.5];
//! let y = [1, 1, -1, -1];
//! let model = LinearSvm::fit(&Features::dense(&x, 2)?, &y, &SvmParams::default())?;
//! assert!(model.converged());
//! let test = [3.0f32, 3.0, -3.0, -1.0];
//! assert_eq!(model.predict(&Features::dense(&test, 2)?)?, vec![1, -1]);
//! // A sign release: Features::signs(release.bits()?, release.k())?
//! # Ok(()) }
//! ```

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

mod solver;

pub use super::features::Features;
use super::features::Kernel;
use crate::error::{Error, Result};
use solver::{groups, solve_group, Solution};

/// The loss `ξ` of the primal problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Loss {
    /// L1-loss SVM: `max(0, 1 − y·f(x))` (LIBLINEAR `-s 3`, scikit-learn `loss="hinge"`).
    Hinge,
    /// L2-loss SVM: `max(0, 1 − y·f(x))²` (LIBLINEAR `-s 1`, scikit-learn's default
    /// `loss="squared_hinge"`).
    #[default]
    SquaredHinge,
}

impl Loss {
    /// Parse `hinge` / `l1` or `squared-hinge` / `squared_hinge` / `l2`.
    pub fn parse(s: &str) -> Result<Loss> {
        match s.to_ascii_lowercase().as_str() {
            "hinge" | "l1" => Ok(Loss::Hinge),
            "squared-hinge" | "squared_hinge" | "l2" => Ok(Loss::SquaredHinge),
            o => Err(Error::param(
                "loss",
                format!("unknown loss '{o}' (expected hinge or squared-hinge)"),
            )),
        }
    }

    /// `ξ(z)` for the margin `z = y·f(x)`.
    pub fn eval(self, z: f64) -> f64 {
        let h = (1.0 - z).max(0.0);
        match self {
            Loss::Hinge => h,
            Loss::SquaredHinge => h * h,
        }
    }
}

/// Training parameters. [`Default`] matches scikit-learn's `LinearSVC()` with `dual=True`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SvmParams {
    /// Penalty `C > 0` on the losses (default 1).
    pub c: f64,
    /// Loss (default squared hinge).
    pub loss: Loss,
    /// Stopping tolerance `> 0` on the projected-gradient gap `max PG − min PG` (default 1e-4,
    /// absolute, as scikit-learn's `tol`).
    pub tol: f64,
    /// Maximum number of epochs (passes over the active set) per binary problem (default 1000).
    pub max_iter: usize,
    /// Value `B > 0` of the constant feature that carries the intercept (default `Some(1.0)`, as
    /// scikit-learn's `intercept_scaling`); `None` fits no intercept.
    pub bias: Option<f64>,
    /// Seed of the per-epoch random permutations (default 0).
    pub seed: u64,
}

impl Default for SvmParams {
    fn default() -> Self {
        SvmParams {
            c: 1.0,
            loss: Loss::SquaredHinge,
            tol: 1e-4,
            max_iter: 1000,
            bias: Some(1.0),
            seed: 0,
        }
    }
}

impl SvmParams {
    /// Check every parameter, naming the first invalid one.
    pub fn validate(&self) -> Result<()> {
        if !(self.c.is_finite() && self.c > 0.0) {
            return Err(Error::param(
                "C",
                format!("must be a finite number > 0, got {}", self.c),
            ));
        }
        if !(self.tol.is_finite() && self.tol > 0.0) {
            return Err(Error::param(
                "tol",
                format!("must be a finite number > 0, got {}", self.tol),
            ));
        }
        if self.max_iter == 0 {
            return Err(Error::param("max_iter", "must be at least 1"));
        }
        if let Some(b) = self.bias {
            if !(b.is_finite() && b > 0.0) {
                return Err(Error::param(
                    "bias",
                    format!("the intercept feature must be a finite number > 0, got {b}"),
                ));
            }
        }
        Ok(())
    }
}

/// What the solver reports for one binary problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The class treated as +1 (all other rows are −1).
    pub positive_class: i32,
    /// Epochs run.
    pub iterations: usize,
    /// Whether the stopping rule was met before `max_iter` epochs.
    pub converged: bool,
    /// Final dual objective `½ αᵀ(Q + D)α − Σα_i` (the primal optimum is its negation).
    pub dual_objective: f64,
    /// Number of rows with `α_i > 0` (support vectors).
    pub support_vectors: usize,
}

/// A trained linear SVM: one weight vector and intercept per binary problem.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearSvm {
    classes: Vec<i32>,
    dim: usize,
    /// `models × dim`, row-major.
    coef: Vec<f64>,
    /// Weight of the constant feature `B`, per model (0 without a bias).
    bias_weight: Vec<f64>,
    info: Vec<ModelInfo>,
    params: SvmParams,
}

impl LinearSvm {
    /// Train on `features` with one class id per row (any `i32` values; at least two distinct).
    ///
    /// Errors: no rows, `labels.len() != features.n()`, fewer than two classes, invalid
    /// parameters ([`SvmParams::validate`]), non-finite feature values.
    pub fn fit(features: &Features, labels: &[i32], params: &SvmParams) -> Result<LinearSvm> {
        Ok(Self::fit_impl(features, labels, params, false)?.0)
    }

    /// [`fit`](LinearSvm::fit), also returning, per binary problem, the dual objective after every
    /// epoch (non-increasing up to rounding: each step minimises the dual exactly along one
    /// coordinate). Costs `O(n + d)` per epoch.
    pub fn fit_with_trace(
        features: &Features,
        labels: &[i32],
        params: &SvmParams,
    ) -> Result<(LinearSvm, Vec<Vec<f64>>)> {
        Self::fit_impl(features, labels, params, true)
    }

    fn fit_impl(
        x: &Features,
        labels: &[i32],
        params: &SvmParams,
        trace: bool,
    ) -> Result<(LinearSvm, Vec<Vec<f64>>)> {
        params.validate()?;
        let n = x.n();
        if n == 0 {
            return Err(Error::param("features", "there are no rows to train on"));
        }
        if labels.len() != n {
            return Err(Error::param(
                "labels",
                format!("{} labels for {n} rows", labels.len()),
            ));
        }
        let mut classes = labels.to_vec();
        classes.sort_unstable();
        classes.dedup();
        if classes.len() < 2 {
            return Err(Error::param(
                "labels",
                format!(
                    "every row has the label {}: a classifier needs at least two classes",
                    classes[0]
                ),
            ));
        }
        x.check_finite()?;
        let kernel = Kernel::detect();
        let sq_norms = x.sq_norms();
        // Binary: one model, positive class = the larger label (scikit-learn's convention).
        let positives: Vec<i32> = if classes.len() == 2 {
            vec![classes[1]]
        } else {
            classes.clone()
        };
        let solutions: Vec<Solution> = groups(positives.len())
            .into_par_iter()
            .enumerate()
            .flat_map_iter(|(j, range)| {
                solve_group(
                    x,
                    kernel,
                    &sq_norms,
                    labels,
                    &positives[range],
                    params,
                    j as u64,
                    trace,
                )
            })
            .collect();
        let dim = x.dim();
        let mut coef = Vec::with_capacity(dim * solutions.len());
        let mut bias_weight = Vec::with_capacity(solutions.len());
        let mut info = Vec::with_capacity(solutions.len());
        let mut traces = Vec::with_capacity(solutions.len());
        for (s, &pos) in solutions.into_iter().zip(&positives) {
            coef.extend_from_slice(&s.w);
            bias_weight.push(s.wb);
            info.push(ModelInfo {
                positive_class: pos,
                iterations: s.iterations,
                converged: s.converged,
                dual_objective: s.dual_objective,
                support_vectors: s.support_vectors,
            });
            traces.push(s.trace);
        }
        Ok((
            LinearSvm {
                classes,
                dim,
                coef,
                bias_weight,
                info,
                params: *params,
            },
            traces,
        ))
    }

    /// The distinct class ids, ascending.
    pub fn classes(&self) -> &[i32] {
        &self.classes
    }

    /// Number of binary models: 1 for two classes, else one per class (one-vs-rest).
    pub fn n_models(&self) -> usize {
        self.info.len()
    }

    /// Number of features the model expects.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Weight vector `w` of model `m` (`dim()` values).
    ///
    /// # Panics
    /// If `m ≥ n_models()`.
    pub fn coef(&self, m: usize) -> &[f64] {
        &self.coef[m * self.dim..(m + 1) * self.dim]
    }

    /// Intercept `b = B·w_B` of model `m` (0 without a bias).
    ///
    /// # Panics
    /// If `m ≥ n_models()`.
    pub fn intercept(&self, m: usize) -> f64 {
        self.bias_weight[m] * self.params.bias.unwrap_or(0.0)
    }

    /// Solver report per binary model (epochs, convergence, dual objective, support vectors).
    pub fn info(&self) -> &[ModelInfo] {
        &self.info
    }

    /// Epochs run, per binary model.
    pub fn iterations(&self) -> Vec<usize> {
        self.info.iter().map(|i| i.iterations).collect()
    }

    /// Whether every binary model met the stopping rule within `max_iter` epochs.
    pub fn converged(&self) -> bool {
        self.info.iter().all(|i| i.converged)
    }

    /// The parameters the model was trained with.
    pub fn params(&self) -> &SvmParams {
        &self.params
    }

    fn check_features(&self, x: &Features) -> Result<()> {
        if x.dim() != self.dim {
            return Err(Error::param(
                "features",
                format!(
                    "the model was trained on {} features per row, these rows have {}",
                    self.dim,
                    x.dim()
                ),
            ));
        }
        x.check_finite()
    }

    /// Decision values `wᵀx + b`: `n` values for a binary model (positive → `classes()[1]`),
    /// otherwise `n × classes` row-major (one column per class, in `classes()` order).
    pub fn decision_function(&self, x: &Features) -> Result<Vec<f64>> {
        self.check_features(x)?;
        let kernel = Kernel::detect();
        let m = self.n_models();
        let mut out = vec![0f64; x.n() * m];
        out.par_chunks_mut(m.max(1) * 256)
            .enumerate()
            .for_each(|(c, chunk)| {
                for (r, row) in chunk.chunks_mut(m).enumerate() {
                    let i = c * 256 + r;
                    for (j, v) in row.iter_mut().enumerate() {
                        *v = x.dot_with(kernel, i, self.coef(j)) + self.intercept(j);
                    }
                }
            });
        Ok(out)
    }

    /// Predicted class id per row.
    pub fn predict(&self, x: &Features) -> Result<Vec<i32>> {
        let d = self.decision_function(x)?;
        let m = self.n_models();
        Ok(if m == 1 {
            d.iter()
                .map(|&v| {
                    if v > 0.0 {
                        self.classes[1]
                    } else {
                        self.classes[0]
                    }
                })
                .collect()
        } else {
            d.chunks(m)
                .map(|row| {
                    let mut best = 0;
                    for (j, &v) in row.iter().enumerate() {
                        if v > row[best] {
                            best = j;
                        }
                    }
                    self.classes[best]
                })
                .collect()
        })
    }

    /// Fraction of rows whose predicted class equals `labels` (in [0, 1]).
    pub fn accuracy(&self, x: &Features, labels: &[i32]) -> Result<f64> {
        if labels.len() != x.n() {
            return Err(Error::param(
                "labels",
                format!("{} labels for {} rows", labels.len(), x.n()),
            ));
        }
        if labels.is_empty() {
            return Err(Error::param("features", "there are no rows to evaluate"));
        }
        let pred = self.predict(x)?;
        let hits = pred.iter().zip(labels).filter(|(p, l)| p == l).count();
        Ok(hits as f64 / labels.len() as f64)
    }

    /// Primal objective `½‖w̄‖² + C Σ ξ(y_i w̄ᵀx̄_i)` of each binary model on `(x, labels)`
    /// (the training data gives the value that training minimised).
    pub fn primal_objective(&self, x: &Features, labels: &[i32]) -> Result<Vec<f64>> {
        self.check_features(x)?;
        if labels.len() != x.n() {
            return Err(Error::param(
                "labels",
                format!("{} labels for {} rows", labels.len(), x.n()),
            ));
        }
        let d = self.decision_function(x)?;
        let m = self.n_models();
        Ok((0..m)
            .map(|j| {
                let w = self.coef(j);
                let reg =
                    0.5 * (w.iter().map(|v| v * v).sum::<f64>() + self.bias_weight[j].powi(2));
                let pos = self.info[j].positive_class;
                let loss: f64 = labels
                    .iter()
                    .enumerate()
                    .map(|(i, &l)| {
                        let y = if l == pos { 1.0 } else { -1.0 };
                        self.params.loss.eval(y * d[i * m + j])
                    })
                    .sum();
                reg + self.params.c * loss
            })
            .collect())
    }
}

/// Class ids from float labels (as readers return them, e.g. LIBSVM `+1`/`-1`, MNIST `0..9`).
/// Fails on a label that is not an integer in the `i32` range.
pub fn labels_from_f32(labels: &[f32]) -> Result<Vec<i32>> {
    labels
        .iter()
        .enumerate()
        .map(|(i, &l)| {
            if l.is_finite() && l.fract() == 0.0 && l.abs() <= i32::MAX as f32 / 2.0 {
                Ok(l as i32)
            } else {
                Err(Error::param(
                    "labels",
                    format!("row {i}: the label {l} is not an integer class id"),
                ))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_validated() {
        let ok = SvmParams::default();
        assert!(ok.validate().is_ok());
        for (p, name) in [
            (SvmParams { c: 0.0, ..ok }, "C"),
            (SvmParams { c: -1.0, ..ok }, "C"),
            (SvmParams { c: f64::NAN, ..ok }, "C"),
            (
                SvmParams {
                    c: f64::INFINITY,
                    ..ok
                },
                "C",
            ),
            (SvmParams { tol: 0.0, ..ok }, "tol"),
            (SvmParams { max_iter: 0, ..ok }, "max_iter"),
            (
                SvmParams {
                    bias: Some(0.0),
                    ..ok
                },
                "bias",
            ),
            (
                SvmParams {
                    bias: Some(f64::NAN),
                    ..ok
                },
                "bias",
            ),
        ] {
            let e = p.validate().unwrap_err().to_string();
            assert!(e.contains(name), "{e}");
        }
    }

    #[test]
    fn loss_parse_and_eval() {
        assert_eq!(Loss::parse("hinge").unwrap(), Loss::Hinge);
        assert_eq!(Loss::parse("squared_hinge").unwrap(), Loss::SquaredHinge);
        assert!(Loss::parse("log").is_err());
        assert_eq!(Loss::Hinge.eval(0.5), 0.5);
        assert_eq!(Loss::SquaredHinge.eval(0.5), 0.25);
        assert_eq!(Loss::SquaredHinge.eval(2.0), 0.0);
    }

    #[test]
    fn zero_rows_without_bias_do_not_produce_nan() {
        let x = [0.0f32, 0.0, 1.0, 1.0, -1.0, -1.0, 0.0, 0.0];
        let f = Features::dense(&x, 2).unwrap();
        let p = SvmParams {
            loss: Loss::Hinge,
            bias: None,
            ..Default::default()
        };
        let m = LinearSvm::fit(&f, &[1, 1, -1, -1], &p).unwrap();
        assert!(m.coef(0).iter().all(|v| v.is_finite()));
        assert!(m.info()[0].dual_objective.is_finite());
    }

    #[test]
    fn float_labels() {
        assert_eq!(labels_from_f32(&[1.0, -1.0, 3.0]).unwrap(), vec![1, -1, 3]);
        assert!(labels_from_f32(&[0.5]).is_err());
        assert!(labels_from_f32(&[f32::NAN]).is_err());
    }
}
