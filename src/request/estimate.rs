//! `dprp estimate`: inner products and cosines between released rows, or between a raw query
//! vector and released rows, with their error bars — one report rendered as text or JSON.

use crate::error::field;
use crate::error::{Error, Result};
use crate::estimate::{
    agreements, estimate_ip_known, estimate_sq_norm, known_row_norm_sq, sign_cosine, Estimator,
    Family, IpEstimate, NormEstimate, QueryMode, INTERVAL_LEVEL, REAL_INTERVAL_METHOD,
};
use crate::mechanism::{central::sign_sketch::pack_signs, Mechanism, ProjectionRecord};
use crate::projection::DenseKind;
use crate::release::ReleaseSet;

/// One side of a compared pair: a released row, or the raw query vector.
#[derive(Debug)]
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

/// One compared pair: side `a` against released row `b`.
#[derive(Debug)]
struct Line {
    a: Side,
    b: usize,
    fields: serde_json::Value,
    text: String,
}

/// The estimates of one request, a line per compared pair.
#[derive(Debug)]
pub struct Estimates {
    lines: Vec<Line>,
}

/// A release and its mechanism, with the rows a request names checked against the release.
pub struct EstimateRequest<'a> {
    release: &'a ReleaseSet,
    mechanism: &'a dyn Mechanism,
    rows: &'a [usize],
}

impl<'a> EstimateRequest<'a> {
    /// Check that every one of `rows` is a row of the release (a shard's rows by their global
    /// ids); a refusal names the `rows` option.
    pub fn new(
        release: &'a ReleaseSet,
        mechanism: &'a dyn Mechanism,
        rows: &'a [usize],
    ) -> Result<EstimateRequest<'a>> {
        let n = release.n();
        for &i in rows {
            if release.is_sharded() || release.first_row(0) > 0 {
                release
                    .locate(i as u64)
                    .map_err(|e| Error::param(field("rows"), e.detail()))?;
            } else if i >= n {
                return Err(Error::param(
                    field("rows"),
                    format!(
                        "row {i} is out of range: the release has {n} rows (0..{})",
                        n - 1
                    ),
                ));
            }
        }
        Ok(EstimateRequest {
            release,
            mechanism,
            rows,
        })
    }

    /// The estimate between the two released rows the request names (refused unless it names
    /// exactly two).
    pub fn pair(&self) -> Result<Estimates> {
        let [i, j] = self.rows[..] else {
            return Err(Error::param(
                field("rows"),
                format!(
                    "give exactly two rows I,J (or a {} and the rows to compare)",
                    field("query_vector")
                ),
            ));
        };
        Ok(Estimates {
            lines: vec![pair(self.release, self.mechanism, i, j)?],
        })
    }

    /// The pair's estimate as two numbers (`Release.estimate`): for a sign release the cosine
    /// debiased from the agreements and its standard error — refused when the flips depend on
    /// the data (smooth flipping, iDP) —, else the inner product and its standard error (NaN
    /// where undefined).
    pub fn pair_value(&self) -> Result<(f64, f64)> {
        let line = self.pair()?.to_json()[0].take();
        let num = |k: &str| line[k].as_f64();
        Ok(match self.mechanism.as_sketch()?.estimator() {
            Estimator::Sign { .. } => match (num("cosine"), num("se_cosine")) {
                (Some(c), Some(s)) => (c, s),
                _ => {
                    return Err(Error::param(
                        "release",
                        "its sign flips depend on the data (smooth flipping or iDP), so the \
                         agreement rate cannot be debiased into a cosine",
                    ))
                }
            },
            _ => (
                num("inner_product").unwrap_or(f64::NAN),
                num("se").unwrap_or(f64::NAN),
            ),
        })
    }

    /// The estimates between the raw query vector `u` (read from `file`, already at the scale of
    /// the release's rows) and each row the request names; `u` is projected with the release's
    /// public map, without noise.
    pub fn query(&self, u: &[f32], file: &str) -> Result<Estimates> {
        let lines = self
            .rows
            .iter()
            .map(|&j| query(self.release, self.mechanism, u, file.to_string(), j))
            .collect::<Result<_>>()?;
        Ok(Estimates { lines })
    }
}

impl Estimates {
    /// One line per pair: `row 1 vs row 2: inner product …`.
    pub fn to_text(&self) -> String {
        self.lines
            .iter()
            .map(|l| format!("{} vs row {}: {}\n", l.a.label(), l.b, l.text))
            .collect()
    }

    /// An array with an object per pair, its sides as `a` and `b`.
    pub fn to_json(&self) -> serde_json::Value {
        self.lines
            .iter()
            .map(|l| {
                let mut f = l.fields.clone();
                f["a"] = l.a.json();
                f["b"] = Side::Row(l.b).json();
                f
            })
            .collect()
    }
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

/// `[lo, hi]` to four places.
fn bracket(lo: f64, hi: f64) -> String {
    format!("[{lo:.4}, {hi:.4}]")
}

fn real_line(e: IpEstimate, est: &Estimator, a: Side, b: usize, mode: &str) -> Line {
    let note = cosine_note(&e, est, &a, b);
    let level = 100.0 * INTERVAL_LEVEL;
    let range = match (e.cosine_lo, e.cosine_hi) {
        (Some(lo), Some(hi)) => format!("{level:.0}% interval {}", bracket(lo, hi)),
        _ => String::new(),
    };
    let cosine = match (e.cosine, e.se_cosine, &note) {
        (Some(c), Some(sc), _) => format!("cosine {c:.4} ± {sc:.4} (se), {range}"),
        (_, _, Some(n)) if !range.is_empty() => format!("{n} ({range})"),
        (_, _, Some(n)) => n.clone(),
        _ => "cosine undefined".into(),
    };
    Line {
        text: format!(
            "inner product {:.6} ± {:.6} (se), {level:.0}% interval {}; {cosine}; {} — {mode}; \
             norms² ≈ {:.4}, {:.4}",
            e.inner_product,
            e.se,
            bracket(e.ip_lo, e.ip_hi),
            e.formula,
            e.norm_u_sq,
            e.norm_v_sq
        ),
        fields: serde_json::json!({
            "inner_product": e.inner_product, "se": e.se, "ip_lo": e.ip_lo, "ip_hi": e.ip_hi,
            "cosine": e.cosine, "se_cosine": e.se_cosine, "cosine_lo": e.cosine_lo,
            "cosine_hi": e.cosine_hi, "cosine_note": note, "interval_level": INTERVAL_LEVEL,
            "interval_method": REAL_INTERVAL_METHOD, "formula": e.formula, "mode": mode,
            "norm_u_sq": e.norm_u_sq, "norm_v_sq": e.norm_v_sq, "noise_norm_sq": e.noise_norm_sq,
        }),
        a,
        b,
    }
}

/// What a row with itself is: its squared norm, estimated with the noise energy removed (the two
/// sides share one noise draw, so `⟨x̃, x̃⟩` would count `kσ²` as signal), and the cosine 1.
fn self_line(e: NormEstimate, i: usize) -> Line {
    let level = 100.0 * INTERVAL_LEVEL;
    let (value, note) = if e.known {
        (
            format!(
                "squared norm {:.6} exactly (the release's scaling gives every row this norm)",
                e.sq_norm
            ),
            None,
        )
    } else {
        let note = (e.lo <= 0.0).then_some(
            "1 for a non-zero row; this row's squared-norm interval reaches 0, so the row may be zero",
        );
        (
            format!(
                "squared norm {:.6} ± {:.6} (se), {level:.0}% interval {} (‖x̃‖² − noise energy \
                 {:.4})",
                e.sq_norm,
                e.se,
                bracket(e.lo, e.hi),
                e.noise_norm_sq
            ),
            note,
        )
    };
    Line {
        text: format!(
            "a row with itself shares its noise: its inner product is its {value}; cosine 1{}; {} \
             — one released row",
            note.map(|n| format!(" ({n})")).unwrap_or_default(),
            e.formula
        ),
        fields: serde_json::json!({
            "self_pair": true, "inner_product": e.sq_norm, "se": e.se, "ip_lo": e.lo,
            "ip_hi": e.hi, "cosine": 1.0, "se_cosine": 0.0, "cosine_lo": 1.0, "cosine_hi": 1.0,
            "cosine_note": note, "interval_level": INTERVAL_LEVEL,
            "interval_method": REAL_INTERVAL_METHOD, "formula": e.formula,
            "mode": "one released row with itself", "norm_u_sq": e.sq_norm,
            "norm_v_sq": e.sq_norm, "noise_norm_sq": e.noise_norm_sq,
        }),
        a: Side::Row(i),
        b: i,
    }
}

/// A sign row with itself: every sign agrees by construction (one flip draw), which says nothing
/// about the row; its cosine with itself is 1.
fn sign_self_line(k: usize, i: usize) -> Line {
    Line {
        text: format!(
            "a row with itself: all {k} signs agree by construction (one draw of flips), which \
             carries no information; cosine 1 (a non-zero row with itself)"
        ),
        fields: serde_json::json!({
            "self_pair": true, "agreements": k, "k": k, "cosine": 1.0, "se_cosine": 0.0,
            "cosine_lo": 1.0, "cosine_hi": 1.0, "interval_level": INTERVAL_LEVEL,
            "mode": "one released row with itself",
        }),
        a: Side::Row(i),
        b: i,
    }
}

/// A raw query whose projection is zero against a sign release: its signs are all `sign(0) = +1`
/// by convention, not by the data, so no cosine can be read from the agreements.
fn sign_zero_query_line(k: usize, file: String, b: usize) -> Line {
    let note =
        "cosine undefined: the query vector (or its projection) is zero, so its signs carry \
                no direction";
    Line {
        text: format!("{note}; {k} signs compared — {}", RAW.text),
        fields: serde_json::json!({
            "agreements": None::<u32>, "k": k, "cosine": None::<f64>, "se_cosine": None::<f64>,
            "cosine_lo": None::<f64>, "cosine_hi": None::<f64>, "cosine_note": note,
            "mode": RAW.text,
        }),
        a: Side::Query(file),
        b,
    }
}

const INTERVAL_METHOD: &str =
    "Clopper–Pearson interval for the agreement probability from the count, mapped through the \
     monotone debiasing P → P_SRP → θ = π(1 − P_SRP) → cos θ; level over releases with fresh \
     projections";

/// How a sign pair was compared: both rows released, or a raw query against a row.
struct SignMode {
    mode: QueryMode,
    text: &'static str,
}

const BOTH: SignMode = SignMode {
    mode: QueryMode::BothPrivate,
    text: "both rows released",
};
const RAW: SignMode = SignMode {
    mode: QueryMode::RawQuery,
    text: "raw query (no noise on its side)",
};

/// When the sign interval's level is not assured: Theorem 4.5's angle model `P = 1 − θ/π` is
/// exact for Gaussian projections only. For OPORP it fails where bins are empty (a sparse row's
/// bin of zeros has sign `sign(0) = +1` whatever the angle) and as k nears p (a bin of one
/// coordinate compares the coordinates' signs, not the angle): `tests/coverage.rs`'s
/// `heavy_signs` measured 0–45% coverage for a sparse pair (a fifth of the coordinates non-zero)
/// at k = 16–64 and 81% for the sample's dense rows at k = p = 64 (docs/error-bars.md).
fn angle_model_note(projection: &ProjectionRecord) -> Option<&'static str> {
    match projection {
        ProjectionRecord::Dense {
            entries: DenseKind::Gaussian,
            ..
        } => None,
        ProjectionRecord::Oporp { .. } => Some(
            "level not assured: the angle model P = 1 − θ/π is an approximation for OPORP \
             signs that fails for rows with empty bins (sparse rows: measured coverage 0–45%) \
             and as k nears p (81% at k = p); docs/error-bars.md",
        ),
        _ => Some(
            "level approximate: the angle model P = 1 − θ/π is exact for Gaussian projections \
             only (docs/error-bars.md)",
        ),
    }
}

fn sign_line(
    agree: u32,
    k: usize,
    eps: Option<f64>,
    mode: SignMode,
    model: Option<&'static str>,
    (a, b): (Side, usize),
) -> Line {
    let s = sign_cosine(agree, k, eps, mode.mode);
    let (level, mode_text) = (100.0 * INTERVAL_LEVEL, mode.text);
    let formula = match eps {
        Some(_) => {
            "Theorem 4.5 (debiased sign agreement; angle model exact for Gaussian projections)"
        }
        None => "agreement count only: flips are data-dependent (smooth or iDP), no debiasing",
    };
    let text = match eps {
        Some(_) => format!(
            "{agree}/{k} signs agree; angle {:.4} ± {:.4} rad, cosine {:.4} ± {:.4} (se), \
             {level:.0}% interval [{:.4}, {:.4}] (Clopper–Pearson on the agreement count{}); \
             {formula} — {mode_text}",
            s.theta,
            s.se_theta,
            s.cosine,
            s.se_cosine,
            s.cosine_lo,
            s.cosine_hi,
            model.map(|m| format!("; {m}")).unwrap_or_default()
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
            "interval_note": eps.and(model),
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

fn no_estimator() -> Error {
    Error::param("release", "no estimator for this release")
}

fn pair(r: &ReleaseSet, m: &dyn Mechanism, i: usize, j: usize) -> Result<Line> {
    let k = r.k();
    let est = m.as_sketch()?.estimator();
    if i == j {
        return match est {
            Estimator::Sign { .. } => Ok(sign_self_line(k, i)),
            est => {
                let known = known_row_norm_sq(&r.meta().scaling);
                let e = estimate_sq_norm(&est, row_of(r, i)?, known).ok_or_else(no_estimator)?;
                Ok(self_line(e, i))
            }
        };
    }
    match est {
        Estimator::Sign { eps_prime, .. } => {
            let agree = agreements(bits_of(r, i)?, bits_of(r, j)?, k);
            let model = angle_model_note(&r.meta().mechanism.projection);
            Ok(sign_line(
                agree,
                k,
                eps_prime,
                BOTH,
                model,
                (Side::Row(i), j),
            ))
        }
        est => {
            let known = known_row_norm_sq(&r.meta().scaling);
            let e = estimate_ip_known(&est, row_of(r, i)?, row_of(r, j)?, None, known)
                .ok_or_else(no_estimator)?;
            Ok(real_line(e, &est, Side::Row(i), j, BOTH.text))
        }
    }
}

fn query(r: &ReleaseSet, m: &dyn Mechanism, u: &[f32], file: String, j: usize) -> Result<Line> {
    let k = r.k();
    let mut x = vec![0f32; k];
    m.as_sketch()?.project(u, &mut x)?;
    match m.as_sketch()?.estimator() {
        Estimator::Sign { .. } if x.iter().all(|&v| v == 0.0) => {
            Ok(sign_zero_query_line(k, file, j))
        }
        Estimator::Sign { eps_prime, .. } => {
            let mut q = vec![0u64; k.div_ceil(64)];
            pack_signs(&x, &mut q);
            let agree = agreements(&q, bits_of(r, j)?, k);
            let model = angle_model_note(&r.meta().mechanism.projection);
            Ok(sign_line(
                agree,
                k,
                eps_prime,
                RAW,
                model,
                (Side::Query(file), j),
            ))
        }
        est => {
            let nsq = u.iter().map(|&a| a as f64 * a as f64).sum::<f64>();
            let known = known_row_norm_sq(&r.meta().scaling);
            let e = estimate_ip_known(&est, &x, row_of(r, j)?, Some(nsq), known)
                .ok_or_else(no_estimator)?;
            Ok(real_line(e, &est, Side::Query(file), j, RAW.text))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Front;

    #[test]
    fn a_pair_needs_two_rows_named_per_front() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("r.dprp");
        let data = crate::data::sample::generate();
        let input = d.path().join("s.bin");
        crate::data::native::write(&input, &data).unwrap();
        let req = crate::publish::PublishRequest {
            input,
            input_opts: Default::default(),
            scaling: Default::default(),
            params: crate::mechanism::MechanismParams {
                kind: crate::mechanism::MechanismKind::DpOporp,
                epsilon: 5.0,
                delta: Some(1e-6),
                beta: 1.0,
                neighbour: crate::privacy::guarantee::Neighbour::Coordinate,
                p: 0,
                k: Some(8),
                projection: None,
                seed: None,
                min_norm: None,
                individual_dp: false,
                local: Default::default(),
            },
            output: path.clone(),
        };
        let noise = crate::privacy::samplers::noise::NoiseSource::from_os().unwrap();
        crate::publish::publish(&req, &noise).unwrap();
        let r = ReleaseSet::open(&path).unwrap();
        let m = crate::mechanism::from_record(&r.meta().mechanism, &r.meta().guarantee).unwrap();
        for (front, rows, query) in [
            (Front::Cli, "--rows", "--query-vector"),
            (Front::Python, "rows", "query_vector"),
        ] {
            let e = EstimateRequest::new(&r, m.as_ref(), &[1, 2, 3])
                .unwrap()
                .pair()
                .unwrap_err()
                .render(front);
            assert!(e.contains(rows) && e.contains(query), "{e}");
            let e = EstimateRequest::new(&r, m.as_ref(), &[1, r.n()])
                .err()
                .unwrap()
                .render(front);
            assert!(e.contains(rows) && e.contains("out of range"), "{e}");
        }
        let two = EstimateRequest::new(&r, m.as_ref(), &[1, 2]).unwrap();
        let text = two.pair().unwrap().to_text();
        assert!(text.starts_with("row 1 vs row 2: inner product"), "{text}");
        let json = two.pair().unwrap().to_json();
        assert_eq!(json[0]["b"]["row"], 2);
    }
}
