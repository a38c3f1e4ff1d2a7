//! Classification evaluation (DESIGN.md §9): a linear SVM ([`crate::learn::svm`]) trained on
//! released sketches of the training rows and tested on released sketches of the test rows (each
//! privatised with its own noise, the same public projection), for every (mechanism, ε, k) and C;
//! multi-class by one-vs-rest. With `pick_c`, C is chosen per setting on a validation split of
//! the training sketches (the last fifth, after a seeded shuffle) and the reported accuracy is on
//! the test sketches after retraining on all training sketches.

use std::time::Instant;

use serde_json::json;

use super::grid::{self, Job, MechanismSpec, Privacy, Seeds, Setting};
use super::metrics::accuracy;
use super::{EvalKind, Metric, Report, ResultRow, Status};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::learn::features::Features;
use crate::learn::svm::{labels_from_f32, LinearSvm, SvmParams};
use crate::publish::{privatise_dataset, Sketches};

/// A classification grid.
#[derive(Debug, Clone)]
pub struct SvmConfig {
    /// Mechanisms.
    pub mechanisms: Vec<MechanismSpec>,
    /// ε values.
    pub epsilons: Vec<f64>,
    /// Sketch sizes.
    pub ks: Vec<usize>,
    /// δ, β, ν.
    pub privacy: Privacy,
    /// C values: one result row per C, or the candidates of `pick_c`.
    pub cs: Vec<f64>,
    /// Pick C on a validation split instead of reporting every C.
    pub pick_c: bool,
    /// Solver settings (C is overridden per setting).
    pub svm: SvmParams,
    /// Repeats per setting.
    pub repeat: usize,
    /// Seed derivation.
    pub seeds: Seeds,
}

/// Metric names of an SVM report.
pub const METRICS: [&str; 1] = ["accuracy"];

/// Per job: for each reported C, (C, accuracy, converged).
type JobResult = std::result::Result<Vec<(f64, f64, bool)>, Status>;

/// Run the grid. Both datasets need labels.
pub fn run(
    train: &Dataset,
    test: &Dataset,
    cfg: &SvmConfig,
    tick: &(dyn Fn(usize, usize) + Sync),
) -> Result<Report> {
    let (ytr, yte) = class_labels(train, test)?;
    if cfg.repeat == 0 {
        return Err(Error::param("‹repeat›", "must be at least 1"));
    }
    grid::refuse_local(&cfg.mechanisms, "eval svm")?;
    cfg.svm.validate()?;
    let start = Instant::now();
    let jobs = grid::jobs(&cfg.mechanisms, &cfg.epsilons, &cfg.ks, cfg.repeat);
    let results = grid::run_parallel(
        &jobs,
        |j| {
            let t0 = Instant::now();
            let r = job(train, test, &ytr, &yte, cfg, j);
            (r, t0.elapsed().as_secs_f64())
        },
        tick,
    );
    let (rows, nonconverged) = result_rows(&jobs, &results, cfg, train.p);
    let meta = meta(
        train,
        test,
        &ytr,
        cfg,
        nonconverged,
        start.elapsed().as_secs_f64(),
    );
    Ok(Report {
        kind: EvalKind::Svm,
        metrics: METRICS.iter().map(|s| s.to_string()).collect(),
        rows,
        meta,
    })
}

/// The class labels of the training and test rows, once both have the same features and labels.
fn class_labels(train: &Dataset, test: &Dataset) -> Result<(Vec<i32>, Vec<i32>)> {
    if train.p != test.p {
        return Err(Error::param(
            "‹test›",
            format!(
                "test rows have {} features, training rows {}",
                test.p, train.p
            ),
        ));
    }
    let ytr = labels_from_f32(
        train
            .labels
            .as_deref()
            .ok_or_else(|| Error::param("‹train›", "the training data has no labels"))?,
    )?;
    let yte = labels_from_f32(
        test.labels
            .as_deref()
            .ok_or_else(|| Error::param("‹test›", "the test data has no labels"))?,
    )?;
    Ok((ytr, yte))
}

/// The report's rows from the jobs' results (and their seconds): per setting, one row per
/// reported C; with the number of fits that did not converge.
fn result_rows(
    jobs: &[Job],
    results: &[(JobResult, f64)],
    cfg: &SvmConfig,
    p: usize,
) -> (Vec<ResultRow>, usize) {
    let mut rows = Vec::new();
    let mut nonconverged = 0usize;
    for range in grid::settings(jobs) {
        let j = &jobs[range.start];
        let group = &results[range.clone()];
        let d = grid::describe(jobs, range, &cfg.mechanisms, p, &cfg.seeds);
        let seconds: f64 = group.iter().map(|g| g.1).sum();
        // one row per reported C (with pick_c: one row, C = the value picked in the first repeat)
        let slots = if cfg.pick_c { 1 } else { cfg.cs.len() };
        for slot in 0..slots {
            let mut status = Status::Ok;
            let mut acc = Vec::new();
            let mut c_used = None;
            for g in group {
                match &g.0 {
                    Ok(v) => {
                        let (c, a, conv) = v[slot];
                        c_used.get_or_insert(c);
                        acc.push(a);
                        nonconverged += (!conv) as usize;
                    }
                    Err(s) => status = s.clone(),
                }
            }
            let metrics = if status == Status::Ok {
                vec![Metric::from_values(METRICS[0], acc)]
            } else {
                Vec::new()
            };
            rows.push(ResultRow {
                mechanism: d.label.clone(),
                guarantee: Some(d.guarantee),
                epsilon: j.epsilon.is_finite().then_some(j.epsilon),
                k: d.k,
                query_mode: None,
                reference: d.reference.clone(),
                c: if cfg.pick_c {
                    c_used
                } else {
                    Some(cfg.cs[slot])
                },
                status,
                metrics,
                seeds: d.seeds.clone(),
                seconds,
            });
        }
    }
    (rows, nonconverged)
}

/// The report's metadata: the data, the grid, the solver, the seeds, the fits that did not
/// converge and the `seconds` the run took.
fn meta(
    train: &Dataset,
    test: &Dataset,
    ytr: &[i32],
    cfg: &SvmConfig,
    nonconverged: usize,
    seconds: f64,
) -> serde_json::Value {
    json!({
        "evaluation": "svm",
        "dprp_version": env!("CARGO_PKG_VERSION"),
        "train_rows": train.n,
        "test_rows": test.n,
        "p": train.p,
        "classes": distinct(ytr),
        "scaling_train": train.scaling,
        "scaling_test": test.scaling,
        "mechanisms": cfg.mechanisms.iter().map(|m| m.label.clone()).collect::<Vec<_>>(),
        "epsilons": cfg.epsilons,
        "ks": cfg.ks,
        "delta": cfg.privacy.delta,
        "beta": cfg.privacy.beta,
        "min_norm": cfg.privacy.min_norm,
        "c": cfg.cs,
        "pick_c": cfg.pick_c,
        "svm": {
            "solver": "dual coordinate descent (Hsieh et al. 2008, LIBLINEAR), one-vs-rest",
            "loss": format!("{:?}", cfg.svm.loss),
            "tol": cfg.svm.tol,
            "max_iter": cfg.svm.max_iter,
            "bias": cfg.svm.bias,
        },
        "fits_not_converged": nonconverged,
        "repeat": cfg.repeat,
        "master_seed": cfg.seeds.master().to_hex(),
        "features": "training and test rows each privatised with the mechanism (own noise, same public projection); sign sketches as ±1",
        "reference": "each mechanism's row names its reference: noiseless:<map> = the same public map (same kind, k and projection seed of each repeat) without noise; noiseless-signs:<map> = its signs without flips (as ±1 features); unprojected = the original features (the SVM's accuracy without any projection or noise; the ε = ∞ limit of raw-g-opt)",
        "noise": "seeded from the master seed (a reproducible simulation, not a release)",
        "threads": rayon::current_num_threads(),
        "seconds": seconds,
    })
}

fn distinct(y: &[i32]) -> Vec<i32> {
    let mut v = y.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

fn features(s: &Sketches, k: usize) -> Result<Features<'_>> {
    match s {
        Sketches::Real(v) => Features::dense(v, k),
        Sketches::Bits(v) => Features::signs(v, k),
    }
}

/// Rows `idx` of a sketch matrix.
fn take(s: &Sketches, k: usize, idx: &[usize]) -> Sketches {
    match s {
        Sketches::Real(v) => Sketches::Real(
            idx.iter()
                .flat_map(|&i| v[i * k..(i + 1) * k].iter().copied())
                .collect(),
        ),
        Sketches::Bits(v) => {
            let w = k.div_ceil(64);
            Sketches::Bits(
                idx.iter()
                    .flat_map(|&i| v[i * w..(i + 1) * w].iter().copied())
                    .collect(),
            )
        }
    }
}

/// Train with C, return (test accuracy, converged).
fn fit_score(
    tr: &Sketches,
    ytr: &[i32],
    te: &Sketches,
    yte: &[i32],
    k: usize,
    params: &SvmParams,
) -> Result<(f64, bool)> {
    let model = LinearSvm::fit(&features(tr, k)?, ytr, params)?;
    let pred = model.predict(&features(te, k)?)?;
    Ok((accuracy(&pred, yte), model.converged()))
}

fn job(
    train: &Dataset,
    test: &Dataset,
    ytr: &[i32],
    yte: &[i32],
    cfg: &SvmConfig,
    j: &Job,
) -> JobResult {
    let failed = |e: Error| Status::Failed(e.marked());
    let seed = cfg.seeds.projection(j.k, j.repeat);
    let (tr, te, k) = match j.setting {
        Setting::Reference(rk) => {
            let na = |e: Error| Status::NotApplicable(e.marked());
            (
                grid::reference(&rk, j, train, &cfg.seeds).map_err(na)?,
                grid::reference(&rk, j, test, &cfg.seeds).map_err(na)?,
                if rk.seeded() { j.k } else { train.p },
            )
        }
        Setting::Mechanism(mi) => {
            let spec = &cfg.mechanisms[mi];
            let m = grid::mechanism(spec, j.epsilon, j.k, train.p, &cfg.privacy, seed)
                .map_err(|e| Status::NotApplicable(e.marked()))?;
            let ntr = cfg
                .seeds
                .noise(&spec.label, j.epsilon, j.k, j.repeat, "train");
            let nte = cfg
                .seeds
                .noise(&spec.label, j.epsilon, j.k, j.repeat, "test");
            (
                privatise_dataset(m.as_ref(), train, &ntr).map_err(failed)?,
                privatise_dataset(m.as_ref(), test, &nte).map_err(failed)?,
                m.output_dim(),
            )
        }
    };
    let with_c = |c: f64| SvmParams { c, ..cfg.svm };
    if cfg.pick_c {
        // seeded shuffle, last fifth for validation
        let n = train.n;
        let mut idx: Vec<usize> = (0..n).collect();
        let mut state = u64::from_le_bytes(seed.0[..8].try_into().unwrap_or([0; 8])) | 1;
        for i in (1..n).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            idx.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let cut = n - n / 5;
        let (fit_idx, val_idx) = idx.split_at(cut);
        let (ftr, fval) = (take(&tr, k, fit_idx), take(&tr, k, val_idx));
        let yf: Vec<i32> = fit_idx.iter().map(|&i| ytr[i]).collect();
        let yv: Vec<i32> = val_idx.iter().map(|&i| ytr[i]).collect();
        let mut best = (f64::NEG_INFINITY, cfg.cs[0]);
        for &c in &cfg.cs {
            let (a, _) = fit_score(&ftr, &yf, &fval, &yv, k, &with_c(c)).map_err(failed)?;
            if a > best.0 {
                best = (a, c);
            }
        }
        let (a, conv) = fit_score(&tr, ytr, &te, yte, k, &with_c(best.1)).map_err(failed)?;
        Ok(vec![(best.1, a, conv)])
    } else {
        cfg.cs
            .iter()
            .map(|&c| {
                let (a, conv) = fit_score(&tr, ytr, &te, yte, k, &with_c(c)).map_err(failed)?;
                Ok((c, a, conv))
            })
            .collect()
    }
}
