//! Mean-estimation evaluation (`dprp eval mean`): the experiments of Asi et al. 2023 (ProjUnit,
//! §4.1: error vs k, error vs ε, runtime vs d) and of Bhowmick et al. 2018 (PrivUnit2 against
//! Duchi et al.'s hemisphere mechanism) on synthetic or given unit-ball data.
//!
//! Each setting (mechanism, ε, d, k) is repeated with fresh public maps and fresh secret noise:
//! every user's device runs [`LocalDecoder::client`](crate::mechanism::LocalDecoder::client), the server a
//! [`MeanAccumulator`] (`add_rows`, `finish`), and the report gives
//!
//! - the empirical squared error `‖μ̂ − μ̄‖²` of the estimate against the true mean of the data
//!   (mean and spread over the repeats), next to the closed form `E‖μ̂ − μ̄‖² = mse/n` of
//!   [`MeanEstimate::expected_sq_error`](crate::mechanism::local::accumulator::MeanEstimate);
//! - an **agreement check** of the closed form: each user's own decoded estimate `Ẑᵢ` gives one
//!   sample `‖Ẑᵢ − vᵢ‖²` of the per-user error, whose expectation is the closed-form per-user MSE
//!   (users are independent and each `Ẑᵢ` is unbiased, so `E‖μ̂ − μ̄‖² = mse/n` holds exactly when
//!   the per-user figure does). Over the `n·R` samples, `z = (mean − mse)/(s/√(nR))` is
//!   approximately standard normal (central limit theorem; `s` the sample standard deviation)
//!   and the figures disagree when `|z| > `[`Z_MAX`] — one-sided when the closed form is an
//!   upper bound (inputs inside the ball);
//! - client time per user and server time (all users), wall clock, one thread per setting.
//!
//! The **central Gaussian reference** (`central-gaussian`) is what a *trusted server* holding
//! the raw vectors would reach at the same ε (and δ): the mean plus `N(0, σ²I)` with σ from the
//! analytic Gaussian mechanism ([`analytic_sigma`], Balle & Wang 2018, Theorem 8) at ℓ₂
//! sensitivity `2/n` (replace-one: one user's unit vector replaced by any other moves the mean
//! by at most `‖v − v'‖/n ≤ 2/n`); its expected squared error is `d·σ²`. It is (ε, δ)-DP on the
//! mean, not local DP: users must trust the server, so it is a reference, not a competitor.
//!
//! Settings that would exceed a work budget (e.g. the dense Gaussian ProjUnit, `O(dk)` per user,
//! at d = 2^15 and k = 2000) are kept in the report as **not run**, with the estimated cost and
//! the budget, never dropped silently.

use std::time::Instant;

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use super::grid::Seeds;
use super::mean_repeat::Repeat;
pub use super::mean_spec::{
    Data, Experiment, MeanConfig, MeanSpec, Plan, CENTRAL, CENTRAL_ADD_REMOVE, CENTRAL_ZCDP, CLIP,
    MAX_WRAP,
};
use super::{Metric, Status};
use crate::error::{Error, Result};
use crate::mechanism::distributed::accountant::params::DistributedRequest;
use crate::mechanism::distributed::DistributedKind;
use crate::mechanism::local::accumulator::MeanAccumulator;
use crate::mechanism::local::release::ErrorKind;
use crate::mechanism::{self, LocalOptions, MechanismKind, MechanismParams};
use crate::privacy::gaussian::analytic_sigma;
use crate::privacy::guarantee::{GuaranteeKind, InputDomain};
use crate::privacy::zcdp;

/// Disagreement threshold of the closed-form check: `|z| > 4` has probability about 6·10⁻⁵ for
/// a standard normal, so a report of a few hundred settings flags a correct closed form with
/// probability about 1–2 %, while a 20 % error in the closed form is flagged as soon as the
/// relative standard error of the empirical mean is below 5 %.
pub const Z_MAX: f64 = 4.0;

/// Fewest samples for the check (below this the normal approximation of `z` is not trusted and
/// the check is not made).
pub const MIN_CHECK_SAMPLES: usize = 30;

/// The closed-form check of one setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Samples (users × repeats, or repeats for the central reference).
    pub samples: usize,
    /// Their mean.
    pub mean: f64,
    /// The closed form.
    pub expected: f64,
    /// Standard error of `mean`.
    pub se: f64,
    /// `(mean − expected)/se`.
    pub z: f64,
    /// Only `mean > expected` is a disagreement (the closed form is an upper bound).
    pub one_sided: bool,
    /// `|z| ≤ Z_MAX` (or `z ≤ Z_MAX` one-sided).
    pub agrees: bool,
}

impl Check {
    /// Compare `mean` with `expected` at standard error `se`.
    pub fn new(samples: usize, mean: f64, expected: f64, se: f64, one_sided: bool) -> Check {
        let z = (mean - expected) / se;
        let agrees = if one_sided {
            z <= Z_MAX
        } else {
            z.abs() <= Z_MAX
        };
        Check {
            samples,
            mean,
            expected,
            se,
            z,
            one_sided,
            agrees,
        }
    }

    /// Compare the sample mean of `values` with `expected`, the standard error from the sample
    /// standard deviation; `None` with fewer than [`MIN_CHECK_SAMPLES`] values.
    pub fn from_samples(values: &[f64], expected: f64, one_sided: bool) -> Option<Check> {
        if values.len() < MIN_CHECK_SAMPLES {
            return None;
        }
        let m = Metric::from_values("", values.to_vec());
        let se = m.sd / (values.len() as f64).sqrt();
        Some(Check::new(values.len(), m.mean, expected, se, one_sided))
    }
}

/// One setting's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeanRow {
    /// Mechanism label.
    pub mechanism: String,
    /// Guarantee kind (`local-dp` for the local mechanisms, `approx-dp` for the central
    /// reference).
    pub guarantee: GuaranteeKind,
    /// ε.
    pub epsilon: f64,
    /// Dimension.
    pub d: usize,
    /// Users.
    pub n: usize,
    /// Projected dimension (ProjUnit family).
    pub k: Option<usize>,
    /// Bits per transmitted coordinate (distributed mechanisms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits: Option<u32>,
    /// sketch-DDG's cap on the bits per parameter, when one was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpp_cap: Option<f64>,
    /// Bits each client sent per input parameter (distributed mechanisms: `b ·` message length
    /// `/ d`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits_per_parameter: Option<f64>,
    /// Count-sketch rows chosen (sketch-DDG).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sketch_m: Option<u64>,
    /// Coordinates of the secure sum that wrapped around the modulus, over all repeats
    /// (distributed mechanisms; the evaluation can see the exact integer sum).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrapped: Option<u64>,
    /// Whether it ran.
    #[serde(flatten)]
    pub status: Status,
    /// `‖μ̂ − μ̄‖²` per repeat.
    pub sq_error: Option<Metric>,
    /// Closed form `E‖μ̂ − μ̄‖²`.
    pub expected: Option<f64>,
    /// How exact the closed form is.
    pub error_kind: Option<ErrorKind>,
    /// The agreement check (`None` when not made: runtime experiment or too few samples).
    pub check: Option<Check>,
    /// Client seconds per user, per repeat (`None` for the central reference).
    pub client_s_per_user: Option<Metric>,
    /// Server seconds for all `n` users (accumulate + finish), per repeat.
    pub server_s: Option<Metric>,
    /// Map and noise seeds per repeat (hex).
    pub seeds: Vec<String>,
}

/// One experiment's rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentReport {
    /// Name.
    pub name: String,
    /// Description.
    pub title: String,
    /// Which plot.
    pub plan: Plan,
    /// Repeats per setting.
    pub repeat: usize,
    /// Rows in grid order (d, n, mechanism, ε, k or b).
    pub rows: Vec<MeanRow>,
    /// This experiment's own data, when it is not the configuration's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

/// The whole evaluation's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeanReport {
    /// Per experiment.
    pub experiments: Vec<ExperimentReport>,
    /// Inputs, seeds, version, command line.
    pub meta: serde_json::Value,
}

/// `vᵢ = normalise(μ + N(0, I/d))` for `n` users, `μ` a uniformly random unit vector.
pub fn synthetic(n: usize, d: usize, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed ^ (d as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let normal = |rng: &mut ChaCha20Rng| -> f64 { StandardNormal.sample(rng) };
    let mut mu: Vec<f64> = (0..d).map(|_| normal(&mut rng)).collect();
    normalise(&mut mu);
    let s = 1.0 / (d as f64).sqrt();
    let mut out = Vec::with_capacity(n * d);
    for _ in 0..n {
        let start = out.len();
        out.extend(mu.iter().map(|m| m + s * normal(&mut rng)));
        normalise(&mut out[start..]);
    }
    out
}

fn normalise(v: &mut [f64]) {
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

fn sq_dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Column means of row-major `rows`.
fn true_mean(rows: &[f64], d: usize) -> Vec<f64> {
    let n = (rows.len() / d).max(1) as f64;
    let mut m = vec![0.0; d];
    for r in rows.chunks_exact(d) {
        m.iter_mut().zip(r).for_each(|(a, x)| *a += x);
    }
    m.iter_mut().for_each(|a| *a /= n);
    m
}

/// One repeat of a local mechanism.
#[allow(clippy::too_many_arguments)]
fn run_local(
    spec: &MeanSpec,
    kind: MechanismKind,
    eps: f64,
    k: Option<usize>,
    rows: &[f64],
    d: usize,
    mean: &[f64],
    seeds: &Seeds,
    r: usize,
    check: bool,
) -> Result<Repeat> {
    let map_seed = seeds.derive(&format!("mean map d={d} k={k:?} repeat={r}"));
    let noise_seed = seeds.derive(&format!(
        "mean noise {} eps={eps} d={d} k={k:?} repeat={r}",
        spec.label
    ));
    let params = MechanismParams {
        p: d,
        k,
        seed: Some(map_seed),
        local: LocalOptions {
            map: spec.map,
            ..Default::default()
        },
        ..MechanismParams::of(kind, eps)
    };
    let mech = mechanism::build(&params)?;
    if mech.input_domain() != (InputDomain::Ball { radius: 1.0 }) {
        return Err(Error::param(
            "‹mechanisms›",
            format!(
                "{} takes inputs in {}, not the unit ball",
                spec.label,
                mech.input_domain().describe()
            ),
        ));
    }
    let dec = mech.local().ok_or_else(|| {
        Error::param(
            "‹mechanisms›",
            format!("{} has no mean decoder", spec.label),
        )
    })?;
    let n = rows.len() / d;
    let mut rng = ChaCha20Rng::from_seed(noise_seed.0);
    let t = Instant::now();
    let mut msgs: Vec<f32> = Vec::with_capacity(n * dec.message_len());
    for (i, v) in rows.chunks_exact(d).enumerate() {
        let m = dec.client(i as u64, v, &mut rng)?;
        msgs.extend(m.iter().map(|&x| x as f32));
    }
    let client = t.elapsed().as_secs_f64() / n as f64;
    let t = Instant::now();
    let mut acc = MeanAccumulator::new(mech.as_ref())?;
    acc.add_rows(0, &msgs)?;
    let est = acc.finish()?;
    let server = t.elapsed().as_secs_f64();
    let per_user = if check {
        let ml = dec.message_len();
        rows.chunks_exact(d)
            .zip(msgs.chunks_exact(ml))
            .enumerate()
            .map(|(i, (v, m))| Ok(sq_dist(&dec.decode_row(i as u64, m)?, v)))
            .collect::<Result<Vec<f64>>>()?
    } else {
        Vec::new()
    };
    Ok(Repeat {
        sq_error: sq_dist(&est.mean, mean),
        expected: est.expected_sq_error,
        error_kind: est.error_kind,
        per_user,
        client_per_user: Some(client),
        server,
        seeds: format!("{}:{}", map_seed.to_hex(), noise_seed.to_hex()),
        distributed: None,
    })
}

/// One repeat of a central Gaussian reference: the true mean plus `N(0, σ²I)`, σ from the
/// analytic Gaussian mechanism at the mean's ℓ₂ sensitivity (`2/n` replace-one, `c/n`
/// add/remove), or `c/(n√(2ρ))` at the zCDP accountant ([`CENTRAL_ZCDP`]).
fn run_central(
    label: &str,
    eps: f64,
    delta: f64,
    n: usize,
    d: usize,
    seeds: &Seeds,
    r: usize,
) -> Result<Repeat> {
    let sigma = match label {
        CENTRAL_ADD_REMOVE => analytic_sigma(CLIP / n as f64, eps, delta)?,
        CENTRAL_ZCDP => CLIP / n as f64 / (2.0 * zcdp::rho_for_epsilon(eps, delta)?).sqrt(),
        _ => analytic_sigma(2.0 / n as f64, eps, delta)?,
    };
    // the replace-one reference keeps its historical seed label (reports stay reproducible)
    let tag = if label == CENTRAL {
        "mean central".to_string()
    } else {
        format!("mean {label}")
    };
    let seed = seeds.derive(&format!("{tag} eps={eps} d={d} n={n} repeat={r}"));
    let mut rng = ChaCha20Rng::from_seed(seed.0);
    let t = Instant::now();
    let sq: f64 = (0..d)
        .map(|_| {
            let z: f64 = StandardNormal.sample(&mut rng);
            (sigma * z) * (sigma * z)
        })
        .sum();
    Ok(Repeat {
        sq_error: sq,
        expected: d as f64 * sigma * sigma,
        error_kind: ErrorKind::Exact,
        per_user: Vec::new(),
        client_per_user: None,
        server: t.elapsed().as_secs_f64(),
        seeds: seed.to_hex(),
        distributed: None,
    })
}

/// One point of an experiment's grid at a given dimension.
#[derive(Debug, Clone, Copy)]
struct Setting {
    mechanism: usize,
    eps: f64,
    k: Option<usize>,
    n: usize,
    bits: Option<u32>,
    cap: Option<f64>,
}

/// The settings of one experiment at dimension `d` with `rows` users available (file data) —
/// order: n, mechanism, ε, then k or (b, cap).
fn settings(e: &Experiment, d: usize, rows: Option<usize>) -> Vec<Setting> {
    let ns: Vec<usize> = if e.ns.is_empty() {
        vec![rows.unwrap_or(1)]
    } else {
        e.ns.clone()
    };
    let bits: Vec<Option<u32>> = if e.bits.is_empty() {
        vec![Some(16)]
    } else {
        e.bits.iter().map(|&b| Some(b)).collect()
    };
    let caps: Vec<Option<f64>> = if e.bpp_caps.is_empty() {
        vec![None]
    } else {
        e.bpp_caps.iter().map(|&c| Some(c)).collect()
    };
    let mut out = Vec::new();
    for &n in &ns {
        for (mi, m) in e.mechanisms.iter().enumerate() {
            for &eps in &e.epsilons {
                let base = Setting {
                    mechanism: mi,
                    eps,
                    k: None,
                    n,
                    bits: None,
                    cap: None,
                };
                if m.takes_k() {
                    let mut ks: Vec<usize> =
                        e.ks.iter()
                            .map(|&k| if e.cap_k_at_d { k.min(d) } else { k })
                            .collect();
                    ks.dedup();
                    out.extend(ks.into_iter().map(|k| Setting { k: Some(k), ..base }));
                } else if m.takes_bits() {
                    let sketch = m.distributed == Some(DistributedKind::SketchDdg);
                    for &b in &bits {
                        for &cap in if sketch { &caps[..] } else { &[None][..] } {
                            out.push(Setting {
                                bits: b,
                                cap,
                                ..base
                            });
                        }
                    }
                } else {
                    out.push(base);
                }
            }
        }
    }
    out
}

/// Number of settings (for progress).
pub fn total_settings(cfg: &MeanConfig) -> usize {
    cfg.experiments
        .iter()
        .map(|e| match e.data.as_ref().unwrap_or(&cfg.data) {
            Data::Rows { d, values, .. } => settings(e, *d, Some(values.len() / d)).len(),
            Data::Synthetic { .. } => e.dims.iter().map(|&d| settings(e, d, None).len()).sum(),
        })
        .sum()
}

/// Run every experiment; `tick(done, total)` after each setting.
pub fn run(cfg: &MeanConfig, tick: &(dyn Fn(usize, usize) + Sync)) -> Result<MeanReport> {
    let total = total_settings(cfg);
    let mut done = 0;
    let mut experiments = Vec::new();
    for e in &cfg.experiments {
        let source = e.data.as_ref().unwrap_or(&cfg.data);
        let dims = match source {
            Data::Rows { d, .. } => vec![*d],
            Data::Synthetic { .. } => e.dims.clone(),
        };
        let mut rows = Vec::new();
        for &d in &dims {
            let available = match source {
                Data::Rows { values, .. } => Some(values.len() / d),
                Data::Synthetic { .. } => None,
            };
            let grid = settings(e, d, available);
            // synthetic users: the first n of the largest n (the generator draws user after user)
            let data: Vec<f64> = match source {
                Data::Rows { values, .. } => values.clone(),
                Data::Synthetic { seed } => {
                    let most = grid.iter().map(|s| s.n).max().unwrap_or(1);
                    synthetic(most, d, *seed)
                }
            };
            let mut means: Vec<(usize, Vec<f64>)> = Vec::new();
            for s in grid {
                let n = s.n;
                let row = if n == 0 || n * d > data.len() {
                    not_run_row(
                        e,
                        &s,
                        d,
                        format!(
                            "n = {n} users: the data has {} (and at least one is needed)",
                            data.len() / d
                        ),
                    )
                } else {
                    let users = &data[..n * d];
                    if !means.iter().any(|(m, _)| *m == n) {
                        means.push((n, true_mean(users, d)));
                    }
                    let mean = &means.iter().find(|(m, _)| *m == n).expect("pushed").1;
                    run_setting(cfg, e, &s, users, d, mean)?
                };
                rows.push(row);
                done += 1;
                tick(done, total);
            }
        }
        experiments.push(ExperimentReport {
            name: e.name.clone(),
            title: e.title.clone(),
            plan: e.plan,
            repeat: e.repeat,
            rows,
            data: e.data.as_ref().map(describe),
        });
    }
    Ok(MeanReport {
        experiments,
        meta: serde_json::json!({
            "dprp": env!("CARGO_PKG_VERSION"),
            "master_seed": cfg.seeds.master().to_hex(),
            "delta": cfg.delta,
            "clip": CLIP,
            "max_wrap_probability": MAX_WRAP,
            "data": describe(&cfg.data),
            "threads": rayon::current_num_threads(),
        }),
    })
}

/// The data, for the report.
fn describe(data: &Data) -> serde_json::Value {
    match data {
        Data::Synthetic { seed } => serde_json::json!({
            "synthetic": "v_i = normalise(mu + N(0, I/d)), mu a random unit vector",
            "data_seed": seed,
        }),
        Data::Rows { source, d, values } => serde_json::json!({
            "file": source, "d": d, "n": values.len() / (*d).max(1),
        }),
    }
}

/// A row for a setting that does not run, with the reason.
fn not_run_row(e: &Experiment, s: &Setting, d: usize, reason: String) -> MeanRow {
    let mut row = empty_row(e, s, d);
    row.status = Status::NotApplicable(reason);
    row
}

fn empty_row(e: &Experiment, s: &Setting, d: usize) -> MeanRow {
    let spec = &e.mechanisms[s.mechanism];
    MeanRow {
        mechanism: spec.label.clone(),
        guarantee: spec.guarantee(),
        epsilon: s.eps,
        d,
        n: s.n,
        k: s.k,
        bits: s.bits,
        bpp_cap: s.cap,
        bits_per_parameter: None,
        sketch_m: None,
        wrapped: None,
        status: Status::Ok,
        sq_error: None,
        expected: None,
        error_kind: None,
        check: None,
        client_s_per_user: None,
        server_s: None,
        seeds: Vec::new(),
    }
}

fn run_setting(
    cfg: &MeanConfig,
    e: &Experiment,
    s: &Setting,
    data: &[f64],
    d: usize,
    mean: &[f64],
) -> Result<MeanRow> {
    let spec = &e.mechanisms[s.mechanism];
    let (eps, k, n) = (s.eps, s.k, s.n);
    let mut row = empty_row(e, s, d);
    if let Some(k) = k.filter(|&k| k > d) {
        row.status = Status::NotApplicable(format!("k = {k} > d = {d}"));
        return Ok(row);
    }
    let check = e.plan != Plan::RuntimeVsD;
    let passes = if check { 3 } else { 2 };
    let work = (n * e.repeat) as f64 * spec.seconds_per_user(d, k.unwrap_or(0), passes);
    if let Some(b) = e.budget.filter(|&b| work > b) {
        row.status = Status::NotApplicable(format!(
            "not run: estimated {work:.0} s (n = {n} users × {} repeats × {passes} passes of \
             its per-user cost) exceeds this experiment's budget of {b} s per setting",
            e.repeat
        ));
        return Ok(row);
    }
    let mut reps = Vec::with_capacity(e.repeat);
    for r in 0..e.repeat {
        let rep = match (spec.kind, spec.distributed) {
            (Some(kind), _) => run_local(spec, kind, eps, k, data, d, mean, &cfg.seeds, r, check)?,
            (None, Some(dk)) => {
                let bits = s.bits.unwrap_or(16);
                let req = DistributedRequest {
                    n: n as u64,
                    d: d as u64,
                    epsilon: eps,
                    delta: cfg.delta,
                    clip: CLIP,
                    bits,
                    max_wrap_probability: MAX_WRAP,
                };
                if r == 0 {
                    // the planner finds no parameters for this (n, d, ε, b): report, go on
                    if let Err(err) = super::mean_distributed::plan(dk, &req, s.cap) {
                        row.status = Status::NotApplicable(format!(
                            "no {} parameters: {}",
                            dk.name(),
                            err.detail()
                        ));
                        return Ok(row);
                    }
                }
                super::mean_distributed::run_distributed(
                    dk, &req, s.cap, data, mean, &cfg.seeds, r,
                )?
            }
            (None, None) => run_central(&spec.label, eps, cfg.delta, n, d, &cfg.seeds, r)?,
        };
        reps.push(rep);
    }
    let expected = reps[0].expected;
    let error_kind = reps[0].error_kind;
    let errors: Vec<f64> = reps.iter().map(|r| r.sq_error).collect();
    row.check = if !check {
        None
    } else if spec.kind.is_some() {
        let per_user: Vec<f64> = reps
            .iter()
            .flat_map(|r| r.per_user.iter().copied())
            .collect();
        Check::from_samples(
            &per_user,
            expected * n as f64,
            error_kind == ErrorKind::UpperBound,
        )
    } else if spec.distributed.is_some() {
        // only the sum is seen: one sample per repeat
        Check::from_samples(&errors, expected, error_kind == ErrorKind::UpperBound)
    } else {
        // ‖N(0, σ²I_d)‖² = σ²χ²_d: mean dσ², standard deviation σ²√(2d), exactly
        let m = errors.iter().sum::<f64>() / errors.len() as f64;
        let se = expected * (2.0 / d as f64).sqrt() / (errors.len() as f64).sqrt();
        Some(Check::new(errors.len(), m, expected, se, false))
    };
    row.sq_error = Some(Metric::from_values("sq_error", errors));
    row.expected = Some(expected);
    row.error_kind = Some(error_kind);
    row.client_s_per_user = reps
        .iter()
        .map(|r| r.client_per_user)
        .collect::<Option<Vec<f64>>>()
        .map(|v| Metric::from_values("client_s_per_user", v));
    row.server_s = Some(Metric::from_values(
        "server_s",
        reps.iter().map(|r| r.server).collect(),
    ));
    if let Some(o) = reps[0].distributed.as_ref() {
        row.bits_per_parameter = Some(o.bits_per_parameter);
        row.sketch_m = o.sketch_m;
        row.wrapped = Some(
            reps.iter()
                .filter_map(|r| r.distributed.as_ref().map(|o| o.wrapped))
                .sum(),
        );
    }
    row.seeds = reps.into_iter().map(|r| r.seeds).collect();
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_rows_are_unit_and_clustered() {
        let (n, d) = (200, 64);
        let v = synthetic(n, d, 7);
        assert_eq!(v.len(), n * d);
        for r in v.chunks(d) {
            let norm: f64 = r.iter().map(|x| x * x).sum::<f64>().sqrt();
            assert!((norm - 1.0).abs() < 1e-12);
        }
        // μ and the noise both have norm ≈ 1, so ⟨vᵢ, μ⟩ ≈ 1/√2 and ‖μ̄‖² ≈ 1/2 (+ 1/(2n))
        let m = true_mean(&v, d);
        let m2: f64 = m.iter().map(|x| x * x).sum();
        assert!((m2 - 0.5).abs() < 0.08, "{m2}");
        assert_eq!(synthetic(n, d, 7), v);
        assert_ne!(synthetic(n, d, 8), v);
    }

    /// The check passes a correct closed form and flags one 20 % too large, from the same
    /// samples (power check).
    #[test]
    fn check_power() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        // exponential samples with mean 2: sd 2
        let v: Vec<f64> = (0..2000)
            .map(|_| {
                let u: f64 = rand::RngExt::random(&mut rng);
                -2.0 * (1.0 - u).ln()
            })
            .collect();
        assert!(Check::from_samples(&v, 2.0, false).unwrap().agrees);
        assert!(!Check::from_samples(&v, 2.4, false).unwrap().agrees);
        assert!(!Check::from_samples(&v, 1.6, false).unwrap().agrees);
        // one-sided: an upper bound above the truth agrees, one below does not
        assert!(Check::from_samples(&v, 2.4, true).unwrap().agrees);
        assert!(!Check::from_samples(&v, 1.6, true).unwrap().agrees);
        assert!(Check::from_samples(&v[..10], 2.0, false).is_none());
    }
}
