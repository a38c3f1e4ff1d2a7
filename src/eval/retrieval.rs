//! Retrieval evaluation (DESIGN.md §9): database = training rows, queries = test rows; ground
//! truth = top-10 by cosine on the original vectors; precision@10 and recall@100 of the top-100
//! retrieved from the sketches, ranked by estimated cosine (real sketches) or agreements (sign
//! sketches), for every (mechanism, ε, k) and query mode, averaged over repeats.
//!
//! Local-DP mechanisms (issue 11) take part too: each database row is privatised on its own (after
//! l2-normalisation for the ball mechanisms — cosine, and so the ground truth, does not change),
//! decoded on the server side to its unbiased estimate in the input space
//! ([`crate::mechanism::LocalDecoder::decode_row`]), and ranked by cosine. Private queries are
//! further users (row ids from the first block boundary after the database's, so each gets its own
//! noise stream and public map); raw queries are
//! the querier's own vectors. Their guarantee is LDP, replace-one — a much stronger promise than the
//! sketches' β-adjacency, so the numbers are not like for like, which every table says.

use std::time::Instant;

use serde_json::json;

use super::grid::{self, Job, MechanismSpec, Privacy, Seeds, Setting};
use super::metrics::{self, ground_truth, rows_of, PRECISION_AT, RECALL_AT, TRUE_TOP};
use super::{EvalKind, Metric, Report, ResultRow, Status};
use crate::data::scale::{Scaler, ScalingRequest};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::mechanism::Mechanism;
use crate::mechanism::Payload;
use crate::privacy::guarantee::InputDomain;
use crate::publish::{first_row_after, privatise_dataset, privatise_dataset_at, Sketches};
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
                "‹query_mode›",
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

/// How the ε = ∞ rows of a retrieval report were made (recorded in its metadata).
pub const REFERENCE_NOTE: &str = "each mechanism's row names its reference: noiseless:<map> = the \
same public map (same kind, k and projection seed of each repeat) without noise, ranked by cosine; \
noiseless-signs:<map> = its signs without flips, ranked by agreements; unprojected = the original \
vectors (the ceiling: 1 up to ties, since the ground truth is computed on them; the ε = ∞ limit of \
raw-g-opt). Each is the limit of its mechanisms as ε grows, in both query modes.";

/// Metric names of a retrieval report.
pub const METRICS: [&str; 2] = ["precision@10", "recall@100"];

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
            "‹test›",
            format!(
                "queries have {} features, the training data {}",
                queries.p, train.p
            ),
        ));
    }
    if train.n < RECALL_AT {
        return Err(Error::param(
            "‹train›",
            format!(
                "the database needs at least {RECALL_AT} rows for recall@{RECALL_AT} (it has {})",
                train.n
            ),
        ));
    }
    if queries.n == 0 {
        return Err(Error::param("‹test›", "no query rows"));
    }
    if cfg.repeat == 0 {
        return Err(Error::param("‹repeat›", "must be at least 1"));
    }
    let start = Instant::now();
    let truth = ground_truth(&train.values, &queries.values, train.p, TRUE_TOP)?;

    let jobs = grid::jobs(&cfg.mechanisms, &cfg.epsilons, &cfg.ks, cfg.repeat);
    let results = grid::run_parallel(&jobs, |j| run_job(train, queries, &truth, cfg, j), tick);

    // Assemble rows in grid order: references per k, the ceiling, then mechanism × k × ε; each ×
    // query mode.
    let mut rows = Vec::new();
    for range in grid::settings(&jobs) {
        let j = &jobs[range.start];
        let group: Vec<usize> = range.clone().collect();
        let d = grid::describe(&jobs, range, &cfg.mechanisms, train.p, &cfg.seeds);
        let seconds: f64 = group.iter().map(|&g| results[g].1).sum();
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
                mechanism: d.label.clone(),
                guarantee: Some(d.guarantee),
                epsilon: j.epsilon.is_finite().then_some(j.epsilon),
                k: d.k,
                query_mode: Some(mode.name().to_string()),
                c: None,
                reference: d.reference.clone(),
                status,
                metrics,
                seeds: d.seeds.clone(),
                seconds,
            });
        }
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
        "ranking": "estimated cosine (real sketches), agreements k − Hamming (sign sketches); local-DP \
    mechanisms: cosine of each row's decoded unbiased estimate (rows l2-normalised first for the ball \
    mechanisms; private queries are further users with their own public maps)",
        "reference": REFERENCE_NOTE,
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

/// One job of a local-DP mechanism: privatise every row as its own user, decode each to its
/// unbiased estimate in `R^p`, rank by cosine.
fn local_job(
    m: &dyn Mechanism,
    label: &str,
    train: &Dataset,
    queries: &Dataset,
    truth: &[Vec<usize>],
    cfg: &RetrievalConfig,
    j: &Job,
) -> Result<Vec<(f64, f64)>> {
    let db_noise = cfg.seeds.noise(label, j.epsilon, j.k, j.repeat, "database");
    let db = decoded(m, train, &db_noise, 0)?;
    let mut out = Vec::new();
    for mode in &cfg.query_modes {
        let q = match mode {
            QueryMode::Private => {
                let qn = cfg.seeds.noise(label, j.epsilon, j.k, j.repeat, "queries");
                decoded(m, queries, &qn, first_row_after(train.n))?
            }
            QueryMode::Raw => Sketches::Real(queries.values.clone()),
        };
        out.push(score(&db, &q, train.p, truth)?);
    }
    Ok(out)
}

/// The rows of `data` privatised by the local mechanism `m` (row ids from `first_row`; unit
/// vectors first when its domain is the unit ball) and decoded to `R^p`.
fn decoded(
    m: &dyn Mechanism,
    data: &Dataset,
    noise: &crate::privacy::samplers::noise::NoiseSource,
    first_row: u64,
) -> Result<Sketches> {
    use rayon::prelude::*;
    let dec = m.local().ok_or_else(|| {
        Error::param(
            "‹mechanisms›",
            format!("{} has no server-side decoder", m.kind().name()),
        )
    })?;
    let p = data.p;
    let unit;
    let input = if matches!(m.input_domain(), InputDomain::Ball { .. }) {
        let mut d = data.clone();
        let l2 = ScalingRequest {
            normalize_l2: true,
            ..Default::default()
        };
        Scaler::new(&l2, None)?.apply(&mut d.values, p);
        unit = d;
        &unit
    } else {
        data
    };
    let msgs = match privatise_dataset_at(m, input, noise, first_row)? {
        Sketches::Real(v) => v,
        Sketches::Bits(_) => {
            return Err(Error::param(
                "‹mechanisms›",
                format!("{} releases no real-valued messages", m.kind().name()),
            ))
        }
    };
    let len = dec.message_len().max(1);
    let mut out = vec![0f32; data.n * p];
    out.par_chunks_mut(p.max(1))
        .zip(msgs.par_chunks(len))
        .enumerate()
        .try_for_each(|(i, (o, msg))| -> Result<()> {
            let v = dec.decode_row(first_row + i as u64, msg)?;
            for (a, b) in o.iter_mut().zip(&v) {
                *a = *b as f32;
            }
            Ok(())
        })?;
    Ok(Sketches::Real(out))
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
    let failed = |e: Error| Status::Failed(e.marked());
    let p = train.p;
    let seed = cfg.seeds.projection(j.k, j.repeat);
    let mi = match j.setting {
        Setting::Mechanism(mi) => mi,
        Setting::Reference(rk) => {
            // the same sketches serve both query modes: without noise, a private query is a raw one
            let na = |e: Error| Status::NotApplicable(e.marked());
            let db = grid::reference(&rk, j, train, &cfg.seeds).map_err(na)?;
            let q = grid::reference(&rk, j, queries, &cfg.seeds).map_err(na)?;
            let k = if rk.seeded() { j.k } else { p };
            let s = score(&db, &q, k, truth).map_err(failed)?;
            return Ok(vec![s; cfg.query_modes.len()]);
        }
    };
    let spec = &cfg.mechanisms[mi];
    let m = grid::mechanism(spec, j.epsilon, j.k, p, &cfg.privacy, seed)
        .map_err(|e| Status::NotApplicable(e.marked()))?;
    if spec.kind.is_local() {
        return local_job(m.as_ref(), &spec.label, train, queries, truth, cfg, j).map_err(failed);
    }
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
            QueryMode::Raw => grid::project_rows(
                |rows, out| m.as_sketch()?.project(rows, out),
                queries,
                m.output_dim(),
                m.payload() == Payload::Bits,
            )
            .map_err(failed)?,
        };
        out.push(score(&db, &q, k, truth).map_err(failed)?);
    }
    Ok(out)
}
