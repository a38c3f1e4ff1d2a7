//! Retrieval evaluation (DESIGN.md §9): database = training rows, queries = test rows; ground
//! truth = top-10 by cosine on the original vectors; precision@10 and recall@100 of the top-100
//! retrieved from the sketches, ranked by estimated cosine (real sketches) or agreements (sign
//! sketches), for every (mechanism, ε, k) and query mode, averaged over repeats.

use std::time::Instant;

use serde_json::json;

use super::grid::{self, MechanismSpec, Privacy, Seeds};
use super::metrics::{self, ground_truth, rows_of, PRECISION_AT, RECALL_AT, TRUE_TOP};
use super::{EvalKind, Metric, Report, ResultRow, Status};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::mechanism::sign_sketch::pack_signs;
use crate::mechanism::{Mechanism, Payload};
use crate::projection::{DenseKind, DenseProjection};
use crate::publish::{privatise_dataset, Sketches};
use crate::search::{exact, Measure, Sketch};

/// How queries are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryMode {
    /// Queries privatised like the database (another party's release).
    Private,
    /// Queries projected with the public map only (the querier's own raw vectors).
    Raw,
}

impl QueryMode {
    /// Name in reports.
    pub fn name(&self) -> &'static str {
        match self {
            QueryMode::Private => "private",
            QueryMode::Raw => "raw",
        }
    }
    /// Parse `private`, `raw` or `both`.
    pub fn parse_list(s: &str) -> Result<Vec<QueryMode>> {
        match s.to_ascii_lowercase().as_str() {
            "private" => Ok(vec![QueryMode::Private]),
            "raw" => Ok(vec![QueryMode::Raw]),
            "both" => Ok(vec![QueryMode::Private, QueryMode::Raw]),
            o => Err(Error::param(
                "--query-mode",
                format!("unknown query mode '{o}' (expected private, raw or both)"),
            )),
        }
    }
}

/// A retrieval grid.
#[derive(Debug, Clone)]
pub struct RetrievalConfig {
    /// Mechanisms.
    pub mechanisms: Vec<MechanismSpec>,
    /// ε values.
    pub epsilons: Vec<f64>,
    /// Sketch sizes.
    pub ks: Vec<usize>,
    /// δ, β, ν.
    pub privacy: Privacy,
    /// Query modes.
    pub query_modes: Vec<QueryMode>,
    /// Repeats per setting (fresh projection and noise each).
    pub repeat: usize,
    /// Seed derivation.
    pub seeds: Seeds,
}

/// Metric names of a retrieval report.
pub const METRICS: [&str; 2] = ["precision@10", "recall@100"];

/// One unit of work: a setting and one repeat.
struct Job {
    /// Index into the mechanism list, or None for the non-private reference.
    mech: Option<usize>,
    /// Reference kind when `mech` is None: signs (true) or real values.
    sign_reference: bool,
    epsilon: f64,
    k: usize,
    repeat: usize,
}

/// Per-job outcome: for each query mode, precision and recall (or why it did not run).
type JobResult = std::result::Result<Vec<(f64, f64)>, Status>;

/// Run the grid: `train` is the database, `queries` the query rows (same p). `tick(done, total)`
/// reports progress over the grid's jobs (settings × repeats).
pub fn run(
    train: &Dataset,
    queries: &Dataset,
    cfg: &RetrievalConfig,
    tick: &(dyn Fn(usize, usize) + Sync),
) -> Result<Report> {
    if train.p != queries.p {
        return Err(Error::param(
            "--test",
            format!(
                "queries have {} features, the training data {}",
                queries.p, train.p
            ),
        ));
    }
    if train.n < RECALL_AT {
        return Err(Error::param(
            "--train",
            format!(
                "the database needs at least {RECALL_AT} rows for recall@{RECALL_AT} (it has {})",
                train.n
            ),
        ));
    }
    if queries.n == 0 {
        return Err(Error::param("--test", "no query rows"));
    }
    if cfg.repeat == 0 {
        return Err(Error::param("--repeat", "must be at least 1"));
    }
    let start = Instant::now();
    let truth = ground_truth(&train.values, &queries.values, train.p, TRUE_TOP)?;

    let any_sign = cfg.mechanisms.iter().any(|m| m.kind.is_sign());
    let any_real = cfg.mechanisms.iter().any(|m| !m.kind.is_sign());
    let mut jobs = Vec::new();
    for &k in &cfg.ks {
        for (sign_reference, wanted) in [(false, any_real), (true, any_sign)] {
            for r in 0..cfg.repeat {
                if wanted {
                    jobs.push(Job {
                        mech: None,
                        sign_reference,
                        epsilon: f64::INFINITY,
                        k,
                        repeat: r,
                    });
                }
            }
        }
    }
    for (mi, _) in cfg.mechanisms.iter().enumerate() {
        // raw-g-opt has no projection: it runs once (reported with k = p), not once per k
        let no_projection = cfg.mechanisms[mi].kind == crate::mechanism::MechanismKind::RawGOpt;
        for &k in cfg
            .ks
            .iter()
            .take(if no_projection { 1 } else { cfg.ks.len() })
        {
            for &epsilon in &cfg.epsilons {
                for r in 0..cfg.repeat {
                    jobs.push(Job {
                        mech: Some(mi),
                        sign_reference: false,
                        epsilon,
                        k,
                        repeat: r,
                    });
                }
            }
        }
    }
    let results = grid::run_parallel(&jobs, |j| run_job(train, queries, &truth, cfg, j), tick);

    // Assemble rows in grid order: references per k, then mechanism × k × ε; each × query mode.
    let mut rows = Vec::new();
    let mut i = 0;
    while i < jobs.len() {
        let j = &jobs[i];
        let mut group = vec![i];
        let mut e = i + 1;
        while e < jobs.len()
            && jobs[e].mech == j.mech
            && jobs[e].sign_reference == j.sign_reference
            && jobs[e].k == j.k
            && jobs[e].epsilon == j.epsilon
        {
            group.push(e);
            e += 1;
        }
        let label = match j.mech {
            Some(m) => cfg.mechanisms[m].label.clone(),
            None if j.sign_reference => "non-private-sign".to_string(),
            None => "non-private".to_string(),
        };
        let seconds: f64 = group.iter().map(|&g| results[g].1).sum();
        let seeds: Vec<String> = group
            .iter()
            .map(|&g| {
                let jb = &jobs[g];
                format!(
                    "projection {} (repeat {}; noise keys derived from the master seed)",
                    cfg.seeds.projection(jb.k, jb.repeat).to_hex(),
                    jb.repeat
                )
            })
            .collect();
        let k_row = match j.mech {
            Some(m) if cfg.mechanisms[m].kind == crate::mechanism::MechanismKind::RawGOpt => {
                train.p
            }
            _ => j.k,
        };
        for (qi, mode) in cfg.query_modes.iter().enumerate() {
            let mut status = Status::Ok;
            let (mut prec, mut rec) = (Vec::new(), Vec::new());
            for &g in &group {
                match &results[g].0 {
                    Ok(v) => {
                        prec.push(v[qi].0);
                        rec.push(v[qi].1);
                    }
                    Err(s) => status = s.clone(),
                }
            }
            let metrics = if status == Status::Ok {
                vec![
                    Metric::from_values(METRICS[0], prec),
                    Metric::from_values(METRICS[1], rec),
                ]
            } else {
                Vec::new()
            };
            rows.push(ResultRow {
                mechanism: label.clone(),
                epsilon: j.mech.map(|_| j.epsilon),
                k: k_row,
                query_mode: Some(mode.name().to_string()),
                c: None,
                status,
                metrics,
                seeds: seeds.clone(),
                seconds,
            });
        }
        i = e;
    }
    let meta = json!({
        "evaluation": "retrieval",
        "dprp_version": env!("CARGO_PKG_VERSION"),
        "database_rows": train.n,
        "query_rows": queries.n,
        "p": train.p,
        "scaling_database": train.scaling,
        "scaling_queries": queries.scaling,
        "mechanisms": cfg.mechanisms.iter().map(|m| m.label.clone()).collect::<Vec<_>>(),
        "epsilons": cfg.epsilons,
        "ks": cfg.ks,
        "delta": cfg.privacy.delta,
        "beta": cfg.privacy.beta,
        "min_norm": cfg.privacy.min_norm,
        "query_modes": cfg.query_modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
        "repeat": cfg.repeat,
        "master_seed": cfg.seeds.master().to_hex(),
        "ground_truth": format!("top-{TRUE_TOP} by cosine on the original vectors"),
        "metrics": {
            "precision@10": format!("|retrieved top-{PRECISION_AT} ∩ true top-{TRUE_TOP}| / {TRUE_TOP}"),
            "recall@100": format!("|retrieved top-{RECALL_AT} ∩ true top-{TRUE_TOP}| / {TRUE_TOP}"),
        },
        "ranking": "estimated cosine (real sketches), agreements k − Hamming (sign sketches)",
        "reference": "non-private: the dense Rademacher projection without noise (cosine); non-private-sign: its signs (agreements); same projection seed as the mechanisms of that k and repeat",
        "noise": "seeded from the master seed (a reproducible simulation, not a release)",
        "threads": rayon::current_num_threads(),
        "seconds": start.elapsed().as_secs_f64(),
    });
    Ok(Report {
        kind: EvalKind::Retrieval,
        metrics: METRICS.iter().map(|s| s.to_string()).collect(),
        rows,
        meta,
    })
}

/// Sketches as a searchable view.
fn view(s: &Sketches, k: usize) -> Sketch<'_> {
    match s {
        Sketches::Real(v) => Sketch::Real { data: v, k },
        Sketches::Bits(v) => Sketch::Bits { data: v, k },
    }
}

/// Project rows with the public map only (packed signs for sign mechanisms).
fn project_only(m: &dyn Mechanism, data: &Dataset) -> Sketches {
    let k = m.output_dim();
    let mut z = vec![0f32; data.n * k];
    // in blocks, to bound the temporary of dense projections
    let block = 4096;
    for (rows, out) in data
        .values
        .chunks(block * data.p.max(1))
        .zip(z.chunks_mut(block * k.max(1)))
    {
        m.project(rows, out);
    }
    match m.payload() {
        Payload::F32 => Sketches::Real(z),
        Payload::Bits => {
            let w = k.div_ceil(64);
            let mut bits = vec![0u64; data.n * w];
            for (x, words) in z.chunks(k.max(1)).zip(bits.chunks_mut(w.max(1))) {
                pack_signs(x, words);
            }
            Sketches::Bits(bits)
        }
    }
}

/// Top-`RECALL_AT` rows of each query, then precision@10 and recall@100.
fn score(db: &Sketches, q: &Sketches, k: usize, truth: &[Vec<usize>]) -> Result<(f64, f64)> {
    let (dbv, qv) = (view(db, k), view(q, k));
    let measure = if dbv.is_bits() {
        Measure::Hamming
    } else {
        Measure::Cosine
    };
    let hits = exact::search(&dbv, &qv, measure, RECALL_AT, None)?;
    let got = rows_of(&hits);
    Ok((
        metrics::precision_at_10(&got, truth),
        metrics::recall_at_100(&got, truth),
    ))
}

fn run_job(
    train: &Dataset,
    queries: &Dataset,
    truth: &[Vec<usize>],
    cfg: &RetrievalConfig,
    j: &Job,
) -> (JobResult, f64) {
    let t0 = Instant::now();
    let r = job_inner(train, queries, truth, cfg, j);
    (r, t0.elapsed().as_secs_f64())
}

fn job_inner(
    train: &Dataset,
    queries: &Dataset,
    truth: &[Vec<usize>],
    cfg: &RetrievalConfig,
    j: &Job,
) -> JobResult {
    let failed = |e: Error| Status::Failed(e.to_string());
    let p = train.p;
    let seed = cfg.seeds.projection(j.k, j.repeat);
    let Some(mi) = j.mech else {
        // the non-private reference: the same public Rademacher map, no noise
        let w = DenseProjection::generate(DenseKind::Rademacher, p, j.k, seed).map_err(failed)?;
        let proj = |d: &Dataset| {
            let mut z = vec![0f32; d.n * j.k];
            for (rows, out) in d
                .values
                .chunks(4096 * p.max(1))
                .zip(z.chunks_mut(4096 * j.k))
            {
                w.project(rows, out);
            }
            z
        };
        let (db, q) = (proj(train), proj(queries));
        let (db, q) = if j.sign_reference {
            let pack = |z: &[f32], n: usize| {
                let wpr = j.k.div_ceil(64);
                let mut b = vec![0u64; n * wpr];
                for (x, words) in z.chunks(j.k).zip(b.chunks_mut(wpr)) {
                    pack_signs(x, words);
                }
                Sketches::Bits(b)
            };
            (pack(&db, train.n), pack(&q, queries.n))
        } else {
            (Sketches::Real(db), Sketches::Real(q))
        };
        let s = score(&db, &q, j.k, truth).map_err(failed)?;
        return Ok(vec![s; cfg.query_modes.len()]);
    };
    let spec = &cfg.mechanisms[mi];
    let m = grid::mechanism(spec, j.epsilon, j.k, p, &cfg.privacy, seed)
        .map_err(|e| Status::NotApplicable(e.to_string()))?;
    let k = m.output_dim();
    let db_noise = cfg
        .seeds
        .noise(&spec.label, j.epsilon, j.k, j.repeat, "database");
    let db = privatise_dataset(m.as_ref(), train, &db_noise).map_err(failed)?;
    let mut out = Vec::new();
    for mode in &cfg.query_modes {
        let q = match mode {
            QueryMode::Private => {
                let qn = cfg
                    .seeds
                    .noise(&spec.label, j.epsilon, j.k, j.repeat, "queries");
                privatise_dataset(m.as_ref(), queries, &qn).map_err(failed)?
            }
            QueryMode::Raw => project_only(m.as_ref(), queries),
        };
        out.push(score(&db, &q, k, truth).map_err(failed)?);
    }
    Ok(out)
}
