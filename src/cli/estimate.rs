use std::path::PathBuf;

use clap::Args;

use crate::error::{Error, Result};
use crate::estimate::{
    agreements, estimate_ip, sign_cosine, Estimator, Family, IpEstimate, QueryMode, INTERVAL_LEVEL,
};
use crate::mechanism::{self, central::sign_sketch::pack_signs, Mechanism};
use crate::release::ReleaseSet;

#[derive(Debug, Args)]
pub struct EstimateArgs {
    /// Release file.
    release: PathBuf,
    /// Row indices: `I,J` for one pair of released rows, or with --query-vector the rows to
    /// compare the query against (`J` or `J1,J2,...`).
    #[arg(long, value_delimiter = ',', required = true)]
    rows: Vec<usize>,
    /// A raw vector (first row of any supported input file) projected with the release's public
    /// map and compared, without noise on its side, to each of --rows.
    #[arg(long)]
    query_vector: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// With --query-vector: do not apply the public scaling recorded in the release.
    #[arg(long)]
    no_scale: bool,
}

/// One side of a compared pair: a released row, or the raw query vector.
enum Side {
    Row(usize),
    Query(String),
}

impl Side {
    /// `row 3` / `query`, for text output.
    fn label(&self) -> String {
        match self {
            Side::Row(i) => format!("row {i}"),
            Side::Query(_) => "query".into(),
        }
    }

    /// `{"kind": "row", "row": 3}` / `{"kind": "query", "file": "q.csv"}`: the same type on both
    /// sides of every line.
    fn json(&self) -> serde_json::Value {
        match self {
            Side::Row(i) => serde_json::json!({"kind": "row", "row": i}),
            Side::Query(f) => serde_json::json!({"kind": "query", "file": f}),
        }
    }
}

struct Line {
    a: Side,
    b: usize,
    fields: serde_json::Value,
    text: String,
}
pub fn run(a: EstimateArgs) -> Result<()> {
    let r = ReleaseSet::open(&a.release)?;
    let m = mechanism::from_record(&r.meta().mechanism, &r.meta().guarantee)?;
    let n = r.n();
    for &i in &a.rows {
        if r.is_sharded() || r.first_row(0) > 0 {
            r.locate(i as u64)
                .map_err(|e| Error::param("--rows", e.detail()))?;
        } else if i >= n {
            return Err(Error::param(
                "--rows",
                format!(
                    "row {i} is out of range: the release has {n} rows (0..{})",
                    n - 1
                ),
            ));
        }
    }
    let mut lines = Vec::new();
    match &a.query_vector {
        None => {
            let [i, j] = a.rows[..] else {
                return Err(Error::param(
                    "--rows",
                    "give exactly two rows I,J (or a --query-vector and the rows to compare)",
                ));
            };
            lines.push(pair(&r, m.as_ref(), i, j)?);
        }
        Some(qpath) => {
            let q = super::query::read_raw_queries(r.meta(), qpath, "--query-vector", a.no_scale)?;
            for &j in &a.rows {
                let name = qpath.display().to_string();
                lines.push(query(&r, m.as_ref(), &q.values[..q.p], name, j)?);
            }
        }
    }
    if a.json {
        let v: Vec<serde_json::Value> = lines
            .iter()
            .map(|l| {
                let mut f = l.fields.clone();
                f["a"] = l.a.json();
                f["b"] = Side::Row(l.b).json();
                f
            })
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| Error::param("--json", e.to_string()))?
        )?;
    } else {
        for l in lines {
            outln!("{} vs row {}: {}", l.a.label(), l.b, l.text)?;
        }
    }
    Ok(())
}

/// Why the cosine of a real-sketch pair is undefined (a norm estimate is not positive), naming the
/// row(s) and the numbers; `None` when it is defined.
fn cosine_note(e: &IpEstimate, est: &Estimator, a: &Side, b: usize) -> Option<String> {
    if e.cosine.is_some() {
        return None;
    }
    let noise = match est {
        Estimator::Gaussian {
            family: Family::Raw { .. },
            ..
        } => "pσ²",
        _ => "kσ²",
    };
    let released = |who: String, sym: &str, sq: &str, v: f64| {
        format!(
            "the estimated {sq} of {who} ({sym}‖² − {noise} = {v:.4}, with {noise} = {:.4}) is not \
             positive: at this noise level the row's signal is not separable from the noise",
            e.noise_norm_sq
        )
    };
    let mut why = Vec::new();
    match a {
        Side::Query(_) if e.norm_u_sq <= 0.0 => why.push("the query vector is zero".to_string()),
        Side::Row(i) if e.norm_u_sq <= 0.0 => {
            why.push(released(format!("row {i}"), "‖x̃", "‖u‖²", e.norm_u_sq))
        }
        _ => {}
    }
    if e.norm_v_sq <= 0.0 {
        why.push(released(format!("row {b}"), "‖ỹ", "‖v‖²", e.norm_v_sq));
    }
    if why.is_empty() {
        // both estimates positive but the product underflowed: say so rather than nothing
        why.push("the product of the estimated norms is zero".into());
    }
    Some(format!("cosine undefined: {}", why.join("; and ")))
}

fn real_line(e: IpEstimate, est: &Estimator, a: Side, b: usize, mode: &str) -> Line {
    let note = cosine_note(&e, est, &a, b);
    let cosine = match (e.cosine, e.se_cosine, &note) {
        (Some(c), Some(sc), _) => format!("cosine {c:.4} ± {sc:.4}"),
        (_, _, Some(n)) => n.clone(),
        _ => "cosine undefined".into(),
    };
    Line {
        text: format!(
            "inner product {:.6} ± {:.6} (se), {cosine}; {} — {mode}; norms² ≈ {:.4}, {:.4}",
            e.inner_product, e.se, e.formula, e.norm_u_sq, e.norm_v_sq
        ),
        fields: serde_json::json!({
            "inner_product": e.inner_product, "se": e.se, "cosine": e.cosine,
            "se_cosine": e.se_cosine, "cosine_note": note, "formula": e.formula, "mode": mode,
            "norm_u_sq": e.norm_u_sq, "norm_v_sq": e.norm_v_sq, "noise_norm_sq": e.noise_norm_sq,
        }),
        a,
        b,
    }
}

const INTERVAL_METHOD: &str =
    "Clopper–Pearson interval for the agreement probability from the count, mapped through the \
     monotone debiasing P → P_SRP → θ = π(1 − P_SRP) → cos θ; level over releases with fresh \
     projections";

fn sign_line(
    agree: u32,
    k: usize,
    eps: Option<f64>,
    mode: QueryMode,
    mode_text: &str,
    a: Side,
    b: usize,
) -> Line {
    let s = sign_cosine(agree, k, eps, mode);
    let level = 100.0 * INTERVAL_LEVEL;
    let formula = match eps {
        Some(_) => {
            "Theorem 4.5 (debiased sign agreement; angle model exact for Gaussian projections)"
        }
        None => "agreement count only: flips are data-dependent (smooth or iDP), no debiasing",
    };
    let text = match eps {
        Some(_) => format!(
            "{agree}/{k} signs agree; angle {:.4} ± {:.4} rad, cosine {:.4} ± {:.4} (se), \
             {level:.0}% interval [{:.4}, {:.4}] (Clopper–Pearson on the agreement count); \
             {formula} — {mode_text}",
            s.theta, s.se_theta, s.cosine, s.se_cosine, s.cosine_lo, s.cosine_hi
        ),
        None => format!(
            "{agree}/{k} signs agree; no cosine: the flip probability depends on the data, so the \
             agreement rate cannot be debiased into an angle; {formula} — {mode_text}"
        ),
    };
    let some = |v: f64| eps.map(|_| v);
    Line {
        text,
        fields: serde_json::json!({
            "agreements": agree, "k": k, "formula": formula, "mode": mode_text,
            "theta": some(s.theta), "se_theta": some(s.se_theta),
            "theta_lo": some(s.theta_lo), "theta_hi": some(s.theta_hi),
            "cosine": some(s.cosine), "se_cosine": some(s.se_cosine),
            "cosine_lo": some(s.cosine_lo), "cosine_hi": some(s.cosine_hi),
            "interval_level": some(INTERVAL_LEVEL),
            "interval_method": eps.map(|_| INTERVAL_METHOD),
            "cosine_note": match eps {
                Some(_) => None,
                None => Some("cosine undefined: the flip probability depends on the data (smooth \
                              flipping or iDP), so the agreement rate cannot be debiased"),
            },
        }),
        a,
        b,
    }
}

const BOTH: &str = "both rows released";
const RAW: &str = "raw query (no noise on its side)";

/// The packed signs of the row with global id `id`.
fn bits_of(r: &ReleaseSet, id: usize) -> Result<&[u64]> {
    let (p, i) = r.locate(id as u64)?;
    let w = r.k().div_ceil(64);
    Ok(&r.parts()[p].bits()?[i * w..(i + 1) * w])
}

/// The values of the row with global id `id`.
fn row_of(r: &ReleaseSet, id: usize) -> Result<&[f32]> {
    let (p, i) = r.locate(id as u64)?;
    r.parts()[p].row(i)
}

fn pair(r: &ReleaseSet, m: &dyn Mechanism, i: usize, j: usize) -> Result<Line> {
    let k = r.k();
    match m.as_sketch()?.estimator() {
        Estimator::Sign { eps_prime, .. } => {
            let agree = agreements(bits_of(r, i)?, bits_of(r, j)?, k);
            Ok(sign_line(
                agree,
                k,
                eps_prime,
                QueryMode::BothPrivate,
                BOTH,
                Side::Row(i),
                j,
            ))
        }
        est => {
            let e = estimate_ip(&est, row_of(r, i)?, row_of(r, j)?, None)
                .ok_or_else(|| Error::param("release", "no estimator for this release"))?;
            Ok(real_line(e, &est, Side::Row(i), j, BOTH))
        }
    }
}

fn query(r: &ReleaseSet, m: &dyn Mechanism, u: &[f32], file: String, j: usize) -> Result<Line> {
    let k = r.k();
    let mut x = vec![0f32; k];
    m.as_sketch()?.project(u, &mut x)?;
    match m.as_sketch()?.estimator() {
        Estimator::Sign { eps_prime, .. } => {
            let w = k.div_ceil(64);
            let mut q = vec![0u64; w];
            pack_signs(&x, &mut q);
            let agree = agreements(&q, bits_of(r, j)?, k);
            Ok(sign_line(
                agree,
                k,
                eps_prime,
                QueryMode::RawQuery,
                RAW,
                Side::Query(file),
                j,
            ))
        }
        est => {
            let nsq = u.iter().map(|&a| a as f64 * a as f64).sum::<f64>();
            let e = estimate_ip(&est, &x, row_of(r, j)?, Some(nsq))
                .ok_or_else(|| Error::param("release", "no estimator for this release"))?;
            Ok(real_line(e, &est, Side::Query(file), j, RAW))
        }
    }
}
