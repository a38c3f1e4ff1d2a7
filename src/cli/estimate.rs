use std::path::PathBuf;

use clap::Args;

use crate::error::{Error, Result};
use crate::estimate::{agreements, estimate_ip, sign_cosine, Estimator, QueryMode};
use crate::mechanism::{self, sign_sketch::pack_signs, Mechanism};
use crate::release::Release;

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

struct Line {
    a: String,
    b: usize,
    fields: serde_json::Value,
    text: String,
}

pub fn run(a: EstimateArgs) -> Result<()> {
    let r = Release::open(&a.release)?;
    let m = mechanism::from_record(&r.meta().mechanism, &r.meta().guarantee)?;
    let n = r.n();
    for &i in &a.rows {
        if i >= n {
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
            let q = super::query::read_raw_queries(&r, qpath, "--query-vector", a.no_scale)?;
            for &j in &a.rows {
                lines.push(query(&r, m.as_ref(), q.row(0), j)?);
            }
        }
    }
    if a.json {
        let v: Vec<serde_json::Value> = lines
            .iter()
            .map(|l| {
                let mut f = l.fields.clone();
                f["a"] = l.a.clone().into();
                f["b"] = l.b.into();
                f
            })
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| Error::param("--json", e.to_string()))?
        )?;
    } else {
        for l in lines {
            outln!("{} vs row {}: {}", l.a, l.b, l.text)?;
        }
    }
    Ok(())
}

fn real_line(e: crate::estimate::IpEstimate, a: String, b: usize, mode: &str) -> Line {
    Line {
        text: format!(
            "inner product {:.6} ± {:.6} (se), cosine {:.4} ± {:.4}; {} — {mode}; norms² ≈ {:.4}, {:.4}",
            e.inner_product, e.se, e.cosine, e.se_cosine, e.formula, e.norm_u_sq, e.norm_v_sq
        ),
        fields: serde_json::json!({
            "inner_product": e.inner_product, "se": e.se, "cosine": e.cosine,
            "se_cosine": e.se_cosine, "formula": e.formula, "mode": mode,
            "norm_u_sq": e.norm_u_sq, "norm_v_sq": e.norm_v_sq,
        }),
        a,
        b,
    }
}

fn sign_line(agree: u32, k: usize, eps: Option<f64>, mode: QueryMode, a: String, b: usize) -> Line {
    let s = sign_cosine(agree, k, eps, mode);
    let formula = match eps {
        Some(_) => {
            "Theorem 4.5 (debiased sign agreement; angle model exact for Gaussian projections)"
        }
        None => "agreement count only: flips are data-dependent (smooth or iDP), no debiasing",
    };
    let text = match eps {
        Some(_) => format!(
            "{agree}/{k} signs agree; angle {:.4} ± {:.4} rad, cosine {:.4} ± {:.4}; {formula}",
            s.theta, s.se_theta, s.cosine, s.se_cosine
        ),
        None => format!("{agree}/{k} signs agree; {formula}"),
    };
    Line {
        text,
        fields: serde_json::json!({
            "agreements": agree, "k": k, "formula": formula,
            "theta": eps.map(|_| s.theta), "se_theta": eps.map(|_| s.se_theta),
            "cosine": eps.map(|_| s.cosine), "se_cosine": eps.map(|_| s.se_cosine),
        }),
        a,
        b,
    }
}

fn pair(r: &Release, m: &dyn Mechanism, i: usize, j: usize) -> Result<Line> {
    let k = r.k();
    match m.estimator() {
        Estimator::Sign { eps_prime, .. } => {
            let w = k.div_ceil(64);
            let b = r.bits()?;
            let agree = agreements(&b[i * w..(i + 1) * w], &b[j * w..(j + 1) * w], k);
            Ok(sign_line(
                agree,
                k,
                eps_prime,
                QueryMode::BothPrivate,
                format!("row {i}"),
                j,
            ))
        }
        est => {
            let e = estimate_ip(&est, r.row(i)?, r.row(j)?, None)
                .ok_or_else(|| Error::param("release", "no estimator for this release"))?;
            Ok(real_line(e, format!("row {i}"), j, "both rows released"))
        }
    }
}

fn query(r: &Release, m: &dyn Mechanism, u: &[f32], j: usize) -> Result<Line> {
    let k = r.k();
    let mut x = vec![0f32; k];
    m.project(u, &mut x);
    match m.estimator() {
        Estimator::Sign { eps_prime, .. } => {
            let w = k.div_ceil(64);
            let mut q = vec![0u64; w];
            pack_signs(&x, &mut q);
            let agree = agreements(&q, &r.bits()?[j * w..(j + 1) * w], k);
            Ok(sign_line(
                agree,
                k,
                eps_prime,
                QueryMode::RawQuery,
                "query".into(),
                j,
            ))
        }
        est => {
            let nsq = u.iter().map(|&a| a as f64 * a as f64).sum::<f64>();
            let e = estimate_ip(&est, &x, r.row(j)?, Some(nsq))
                .ok_or_else(|| Error::param("release", "no estimator for this release"))?;
            Ok(real_line(
                e,
                "query".into(),
                j,
                "raw query (no noise on its side)",
            ))
        }
    }
}
