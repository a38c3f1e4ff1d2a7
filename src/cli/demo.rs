use std::path::PathBuf;

use clap::Args;

use crate::data::native::NativeReader;
use crate::data::{collect, InputOptions};
use crate::error::{Error, Result};
use crate::estimate::{
    agreements, estimate_ip, sign_cosine, Estimator, PairStats, QueryMode, INTERVAL_LEVEL,
};
use crate::mechanism::central::sign_sketch::pack_signs;
use crate::mechanism::{self, MechanismKind, MechanismParams};
use crate::privacy::guarantee::Neighbour;
use crate::privacy::noise::NoiseSource;
use crate::release::Release;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Directory for the demo's files (default: a temporary directory, removed afterwards).
    #[arg(long)]
    out_dir: Option<PathBuf>,
    /// ε for the demo releases.
    #[arg(short, long, default_value_t = 10.0)]
    epsilon: f64,
}

pub fn run(a: DemoArgs) -> Result<()> {
    let tmp;
    let dir = match &a.out_dir {
        Some(d) => {
            crate::atomic::create_output_dir(d)?;
            d.clone()
        }
        None => {
            tmp = tempfile::tempdir().map_err(|e| Error::io("temporary directory", e))?;
            tmp.path().to_path_buf()
        }
    };
    let sample = dir.join("sample.bin");
    std::fs::write(&sample, crate::data::sample::SAMPLE_BIN).map_err(|e| Error::io(&sample, e))?;
    let data = collect(&mut NativeReader::open(&sample)?)?;
    outln!(
        "bundled sample: {} rows × {} features in [0,1], {} classes (data/sample.bin)\n",
        data.n,
        data.p,
        crate::data::sample::SAMPLE_CLASSES
    )?;
    let k = 32;
    for kind in [
        MechanismKind::DpOporp,
        MechanismKind::DpRpGOpt,
        MechanismKind::DpSignoporpRr,
    ] {
        let out = dir.join(format!("sample-{}.dprp", kind.name()));
        outln!(
            "$ dprp publish sample.bin --mechanism {} --epsilon {}{} --k {k} -o {}",
            kind.name(),
            a.epsilon,
            if kind.needs_delta() {
                " --delta 1e-6"
            } else {
                ""
            },
            out.file_name()
                .map(|f| f.to_string_lossy())
                .unwrap_or_default()
        )?;
        let req = crate::publish::PublishRequest {
            input: sample.clone(),
            input_opts: InputOptions::default(),
            scaling: Default::default(),
            params: MechanismParams {
                kind,
                epsilon: a.epsilon,
                delta: kind.needs_delta().then_some(1e-6),
                beta: 1.0,
                neighbour: Neighbour::Coordinate,
                p: 0,
                k: Some(k),
                projection: None,
                seed: None,
                min_norm: None,
                individual_dp: false,
                local: Default::default(),
            },
            output: out.clone(),
        };
        crate::publish::publish(&req, &NoiseSource::from_os()?)?;
        let r = Release::open(&out)?;
        super::output::print_str(&crate::request::info::ReleaseInfo::of_release(&r).to_text())?;
        utility(&r, &data)?;
        outln!()?;
    }
    Ok(())
}

/// Index of the largest score (first on ties).
fn argmax(scores: impl Iterator<Item = (f64, usize)>) -> usize {
    scores
        .fold((f64::MIN, 0), |a, b| if b.0 > a.0 { b } else { a })
        .1
}

fn norm(v: &[f32]) -> f64 {
    v.iter()
        .map(|&x| (x as f64).powi(2))
        .sum::<f64>()
        .sqrt()
        .max(1e-12)
}

/// What the release keeps: pairwise estimates with error bars, and nearest neighbours.
///
/// The error bars are the ones `dprp estimate` prints: for real sketches `estimate ± 1.96·se` with
/// the plug-in standard error of Theorems C.1–C.3 (`estimate_ip`), for sign sketches the 95%
/// Clopper–Pearson interval of `sign_cosine`. Their level holds over releases (fresh projection
/// and fresh noise); the demo has one release, so it measures coverage over the noise and over
/// 400 disjoint pairs that share one projection, and says so.
fn utility(r: &Release, data: &crate::data::Dataset) -> Result<()> {
    let m = mechanism::from_record(&r.meta().mechanism, &r.meta().guarantee)?;
    let est = m.as_sketch()?.estimator();
    let k = r.k();
    let wpr = k.div_ceil(64);
    let bits = r.bits().ok();
    let pairs = 400.min(data.n / 2);
    let (mut covered, mut abs_err, mut scale) = (0usize, 0f64, 0f64);
    let mut formula = "";
    for i in 0..pairs {
        let j = i + data.n / 2;
        let truth = PairStats::of(data.row(i), data.row(j));
        let (e, (lo, hi), t) = match bits {
            // signs: cosine from the debiased agreement rate (Theorem 4.5), Clopper–Pearson interval
            Some(b) => {
                let Estimator::Sign { eps_prime, .. } = est else {
                    continue;
                };
                let a = agreements(&b[i * wpr..(i + 1) * wpr], &b[j * wpr..(j + 1) * wpr], k);
                let s = sign_cosine(a, k, eps_prime, QueryMode::BothPrivate);
                let cos = truth.ip / (truth.norm_u_sq * truth.norm_v_sq).sqrt().max(1e-12);
                (s.cosine, (s.cosine_lo, s.cosine_hi), cos)
            }
            // real: ⟨x̃,ỹ⟩ ± 1.96·se with the plug-in se, as `dprp estimate` prints it
            None => {
                let Some(e) = estimate_ip(&est, r.row(i)?, r.row(j)?, None) else {
                    continue;
                };
                formula = e.formula;
                let half = 1.96 * e.se;
                (
                    e.inner_product,
                    (e.inner_product - half, e.inner_product + half),
                    truth.ip,
                )
            }
        };
        covered += (lo <= t && t <= hi) as usize;
        abs_err += (e - t).abs();
        scale += t.abs();
    }
    let n = pairs.max(1) as f64;
    let rate = covered as f64 / n;
    // the 95% spread of a coverage rate over `pairs` independent pairs at the nominal level
    let spread = 100.0 * 1.96 * (INTERVAL_LEVEL * (1.0 - INTERVAL_LEVEL) / n).sqrt();
    let (what, interval, expect) = if bits.is_some() {
        let (level, proj) = (
            100.0 * INTERVAL_LEVEL,
            if matches!(
                r.meta().mechanism.projection,
                mechanism::ProjectionRecord::Oporp { .. }
            ) {
                "OPORP, for which the angle model P = 1 − θ/π is an approximation (exact for \
                 Gaussian projections)"
            } else {
                "dense; the angle model P = 1 − θ/π is exact for Gaussian projections and an \
                 approximation otherwise"
            },
        );
        (
            "cosines",
            format!("the {level:.0}% Clopper–Pearson interval `dprp estimate` prints"),
            format!(
                "the interval is exact for a binomial agreement count, so ≥ {level:.0}% is \
                 expected (it is conservative at small k: 95–99% at k = 32, depending on the \
                 cosine); the projection here is {proj}"
            ),
        )
    } else {
        (
            "inner products",
            "estimate ± 1.96·se, the interval `dprp estimate` prints".into(),
            format!(
                "se from {formula} at plug-in values; ≈95% is expected, a little more since the \
                 plug-in se errs wide, less where k is too small for the normal approximation"
            ),
        )
    };
    outln!(
        "utility     {what} over {pairs} pairs (row i vs row i + {}): mean |error| {:.3} (mean \
         |truth| {:.3}); {interval} covers the truth for {:.1}% of them",
        data.n / 2,
        abs_err / n,
        scale / n,
        100.0 * rate
    )?;
    outln!("            meaning: {expect}.")?;
    outln!(
        "            one release: one projection shared by all rows, fresh noise per row; the figure \
         averages over the noise and over {pairs} pairs that share the projection, so it varies \
         from run to run by more than the ±{spread:.1} points {pairs} independent pairs would give."
    )?;
    // 1-NN label agreement: the first 200 rows as raw queries (projected with the public map)
    // against the released rows 200.. ; cosine ranking (agreement counts for signs).
    let labels = data.labels.as_deref().unwrap_or(&[]);
    let queries = 200.min(data.n / 2);
    let db = queries..data.n;
    let mut projected = vec![0f32; queries * k];
    m.as_sketch()?
        .project(&data.values[..queries * data.p], &mut projected)?;
    let (mut hit_raw, mut hit_priv) = (0usize, 0usize);
    for q in 0..queries {
        let qv = &projected[q * k..(q + 1) * k];
        let best_priv = match bits {
            Some(b) => {
                let mut qw = vec![0u64; wpr];
                pack_signs(qv, &mut qw);
                argmax(
                    db.clone()
                        .map(|i| (agreements(&qw, &b[i * wpr..(i + 1) * wpr], k) as f64, i)),
                )
            }
            None => {
                let vals = r.values()?;
                argmax(db.clone().map(|i| {
                    let x = &vals[i * k..(i + 1) * k];
                    (est.inner_product(qv, x) / norm(x), i)
                }))
            }
        };
        let u = data.row(q);
        let best_raw = argmax(
            db.clone()
                .map(|i| (PairStats::of(u, data.row(i)).ip / norm(data.row(i)), i)),
        );
        if !labels.is_empty() {
            hit_priv += (labels[best_priv] == labels[q]) as usize;
            hit_raw += (labels[best_raw] == labels[q]) as usize;
        }
    }
    outln!(
        "utility     1-NN label agreement, {queries} raw queries vs the other rows: private sketch {:.1}%, \
         original data {:.1}%",
        100.0 * hit_priv as f64 / queries as f64,
        100.0 * hit_raw as f64 / queries as f64
    )?;
    outln!(
        "            meaning: how often the nearest released row (by {}) has the query's label; \
         'original data' ranks the unprivatised rows the same way. The gap is what the sketch costs \
         (projection to k values, noise at this ε).",
        if bits.is_some() {
            "sign agreements"
        } else {
            "estimated cosine"
        }
    )?;
    Ok(())
}
