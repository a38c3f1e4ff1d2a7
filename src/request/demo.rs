//! `dprp demo`: the bundled sample published with a few mechanisms, and for each release what it
//! keeps — pairwise estimates with their error bars, and nearest neighbours — measured against
//! the sample's own rows ([`Utility`]).

use std::path::{Path, PathBuf};

use crate::atomic::Existing;
use crate::data::native::NativeReader;
use crate::data::{collect, Dataset, InputOptions};
use crate::error::{Error, Result};
use crate::estimate::{
    agreements, estimate_ip_known, known_row_norm_sq, sign_cosine, Estimator, PairStats, QueryMode,
    INTERVAL_LEVEL,
};
use crate::mechanism::central::sign_sketch::pack_signs;
use crate::mechanism::{self, Mechanism, MechanismKind, MechanismParams};
use crate::privacy::samplers::noise::NoiseSource;
use crate::publish::PublishRequest;
use crate::release::Release;

/// `dprp sample`: write the bundled sample (2 000 rows × 64 features in [0, 1], the demo's data)
/// as a native dataset at `output`.
pub fn write_sample(output: &Path, existing: Existing) -> Result<()> {
    crate::data::native::write_as(output, &crate::data::sample::generate(), existing)
}

/// The mechanisms the demo publishes, in order.
pub const KINDS: [MechanismKind; 3] = [
    MechanismKind::DpOporp,
    MechanismKind::DpRpGOpt,
    MechanismKind::DpSignoporpRr,
];

/// Sketch length of the demo's releases.
const K: usize = 32;

/// The demo's directory, holding the bundled sample, and the sample's rows.
pub struct Demo {
    dir: PathBuf,
    /// The temporary directory used when none was given, removed with the demo.
    _tmp: Option<tempfile::TempDir>,
    sample: PathBuf,
    data: Dataset,
    existing: Existing,
}

impl Demo {
    /// Write the bundled sample into `out_dir` (created if need be; an existing one must be
    /// empty unless `existing` is [`Existing::Replace`], which lets the demo's files replace
    /// regular files of their names) or a temporary directory, and read it back.
    pub fn prepare(out_dir: Option<&Path>, existing: Existing) -> Result<Demo> {
        let (dir, tmp) = match out_dir {
            Some(d) => {
                crate::atomic::check_dir_output(d)?;
                if existing == Existing::Refuse
                    && d.is_dir()
                    && crate::atomic::target::dir_has_entries(d)?
                {
                    return Err(Error::output(
                        d,
                        "is a directory that is not empty; the demo writes sample.bin and \
                         sample-<mechanism>.dprp files there",
                        true,
                    ));
                }
                crate::atomic::create_output_dir(d)?;
                (d.to_path_buf(), None)
            }
            None => {
                let tmp = tempfile::tempdir().map_err(|e| Error::io("temporary directory", e))?;
                (tmp.path().to_path_buf(), Some(tmp))
            }
        };
        let sample = dir.join("sample.bin");
        let mut f = crate::atomic::AtomicFile::create(&sample, existing)?;
        f.write_all(crate::data::sample::SAMPLE_BIN)?;
        f.commit()?;
        let data = collect(&mut NativeReader::open(&sample)?)?;
        Ok(Demo {
            dir,
            _tmp: tmp,
            sample,
            data,
            existing,
        })
    }

    /// The line on the sample, and a blank one.
    pub fn intro(&self) -> String {
        format!(
            "bundled sample: {} rows × {} features in [0,1], {} classes (data/sample.bin)\n\n",
            self.data.n,
            self.data.p,
            crate::data::sample::SAMPLE_CLASSES
        )
    }

    fn output(&self, kind: MechanismKind) -> PathBuf {
        self.dir.join(format!("sample-{}.dprp", kind.name()))
    }

    /// The `dprp publish` command that [`publish`](Self::publish) stands for.
    pub fn command(&self, kind: MechanismKind, epsilon: f64) -> String {
        format!(
            "$ dprp publish sample.bin ‹mechanism› {} ‹epsilon› {epsilon}{} ‹k› {K} -o {}\n",
            kind.name(),
            if kind.needs_delta() {
                " ‹delta› 1e-6"
            } else {
                ""
            },
            self.output(kind)
                .file_name()
                .map(|f| f.to_string_lossy())
                .unwrap_or_default()
        )
    }

    /// Publish the sample with `kind` at `epsilon` (δ = 10⁻⁶ where it needs one, noise from the
    /// operating system) and open the release.
    pub fn publish(&self, kind: MechanismKind, epsilon: f64) -> Result<Release> {
        let out = self.output(kind);
        let req = PublishRequest {
            input: self.sample.clone(),
            input_opts: InputOptions::default(),
            scaling: Default::default(),
            params: MechanismParams {
                delta: kind.needs_delta().then_some(1e-6),
                k: Some(K),
                ..MechanismParams::of(kind, epsilon)
            },
            output: out.clone(),
        };
        let opts = crate::publish::PublishOptions {
            existing: self.existing,
            ..Default::default()
        };
        crate::publish::publish_with(&req, &NoiseSource::from_os()?, &opts)?;
        Release::open(&out)
    }

    /// What release `r` of the sample keeps.
    pub fn utility(&self, r: &Release) -> Result<Utility> {
        let m = mechanism::from_record(&r.meta().mechanism, &r.meta().guarantee)?;
        Ok(Utility {
            signs: r.bits().is_ok(),
            oporp: matches!(
                r.meta().mechanism.projection,
                mechanism::ProjectionRecord::Oporp { .. }
            ),
            offset: self.data.n / 2,
            pairs: Pairs::measure(r, m.as_ref(), &self.data)?,
            neighbours: Neighbours::measure(r, m.as_ref(), &self.data)?,
        })
    }
}

/// The 5th–95th percentile of the demo's coverage figure over 200 runs of `dprp demo` (percent;
/// dp-oporp, dp-rp-g-opt, dp-signoporp-rr), measured by `tests/coverage_paths.rs`
/// (`demo_coverage_spread_over_runs`, ignored by default) and reported in docs/error-bars.md.
pub const RUN_SPREAD: [(f64, f64); 3] = [(84.5, 98.2), (84.8, 99.2), (89.8, 99.5)];

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

/// Pairwise estimates of rows `i` and `i + n/2` against the truth, with the error bars
/// `dprp estimate` prints.
struct Pairs {
    pairs: usize,
    /// Pairs whose interval covers the truth.
    covered: usize,
    abs_err: f64,
    /// Σ |truth|.
    scale: f64,
    /// The formula of a real sketch's standard error.
    formula: &'static str,
}

impl Pairs {
    fn measure(r: &Release, m: &dyn Mechanism, data: &Dataset) -> Result<Pairs> {
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
                // signs: cosine from the debiased agreement rate (Theorem 4.5), Clopper–Pearson
                // interval
                Some(b) => {
                    let Estimator::Sign { eps_prime, .. } = est else {
                        continue;
                    };
                    let a = agreements(&b[i * wpr..(i + 1) * wpr], &b[j * wpr..(j + 1) * wpr], k);
                    let s = sign_cosine(a, k, eps_prime, QueryMode::BothPrivate);
                    let cos = truth.ip / (truth.norm_u_sq * truth.norm_v_sq).sqrt().max(1e-12);
                    (s.cosine, (s.cosine_lo, s.cosine_hi), cos)
                }
                // real: the inner product's score interval, as `dprp estimate` prints it
                None => {
                    let known = known_row_norm_sq(&r.meta().scaling);
                    let Some(e) = estimate_ip_known(&est, r.row(i)?, r.row(j)?, None, known) else {
                        continue;
                    };
                    formula = e.formula;
                    (e.inner_product, (e.ip_lo, e.ip_hi), truth.ip)
                }
            };
            covered += (lo <= t && t <= hi) as usize;
            abs_err += (e - t).abs();
            scale += t.abs();
        }
        Ok(Pairs {
            pairs,
            covered,
            abs_err,
            scale,
            formula,
        })
    }
}

/// 1-NN label agreement: the first rows as raw queries (projected with the public map) against
/// the released rows after them, ranked by cosine (agreement counts for signs), beside the same
/// ranking of the unprivatised rows.
struct Neighbours {
    queries: usize,
    hit_priv: usize,
    hit_raw: usize,
}

impl Neighbours {
    fn measure(r: &Release, m: &dyn Mechanism, data: &Dataset) -> Result<Neighbours> {
        let est = m.as_sketch()?.estimator();
        let k = r.k();
        let wpr = k.div_ceil(64);
        let bits = r.bits().ok();
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
        Ok(Neighbours {
            queries,
            hit_priv,
            hit_raw,
        })
    }
}

/// What a release keeps: pairwise estimates with error bars, and nearest neighbours.
///
/// The error bars are the ones `dprp estimate` prints: for real sketches the inner product's
/// score interval (`estimate_ip_known`), for sign sketches the 95% Clopper–Pearson interval of
/// `sign_cosine`. Their level holds over releases (fresh projection and fresh noise); the demo has
/// one release, so it measures coverage over the noise and over 400 disjoint pairs that share one
/// projection, and says so — with the spread of that figure over 200 runs ([`RUN_SPREAD`]).
pub struct Utility {
    /// A sign release (else real values).
    signs: bool,
    /// Projected with OPORP.
    oporp: bool,
    /// Row `i` is paired with row `i + offset`.
    offset: usize,
    pairs: Pairs,
    neighbours: Neighbours,
}

impl Utility {
    /// What is estimated, by which interval, and what its coverage should be.
    fn interval(&self) -> (&'static str, String, String) {
        let level = 100.0 * INTERVAL_LEVEL;
        if self.signs {
            let proj = if self.oporp {
                "OPORP, for which the angle model P = 1 − θ/π is an approximation (exact for \
                 Gaussian projections), so the level is not assured: it fails for sparse rows \
                 and as k nears p (docs/error-bars.md)"
            } else {
                "dense; the angle model P = 1 − θ/π is exact for Gaussian projections and an \
                 approximation otherwise"
            };
            (
                "cosines",
                format!("the {level:.0}% Clopper–Pearson interval `dprp estimate` prints"),
                format!(
                    "over independent releases (a fresh projection each) the interval covers at \
                     least {level:.0}% of the time for a binomial agreement count (it is \
                     conservative at small k); the projection here is {proj}"
                ),
            )
        } else {
            (
                "inner products",
                format!("the {level:.0}% score interval `dprp estimate` prints"),
                format!(
                    "variance from {}, evaluated at the hypothesised inner product; over \
                     independent releases (a fresh projection and fresh noise each) the interval \
                     covers about {level:.0}% of the time",
                    self.pairs.formula
                ),
            )
        }
    }

    /// The spread of this figure over runs of the demo ([`RUN_SPREAD`]).
    fn run_spread(&self) -> (f64, f64) {
        RUN_SPREAD[if self.signs {
            2
        } else if self.oporp {
            0
        } else {
            1
        }]
    }

    /// The measurements as text lines, each with what it means.
    pub fn to_text(&self) -> String {
        let p = &self.pairs;
        let pairs = p.pairs;
        let n = pairs.max(1) as f64;
        let rate = p.covered as f64 / n;
        let (lo, hi) = self.run_spread();
        let (what, interval, expect) = self.interval();
        let mut s = format!(
            "utility     {what} over {pairs} pairs (row i vs row i + {}): mean |error| {:.3} (mean \
             |truth| {:.3}); {interval} covers the truth for {:.1}% of them\n",
            self.offset,
            p.abs_err / n,
            p.scale / n,
            100.0 * rate
        );
        s += &format!("            meaning: {expect}.\n");
        s += &format!(
            "            one release: one projection shared by all rows, fresh noise per row; the \
             figure averages over the noise and over {pairs} pairs that share that one \
             projection, so it is not the interval's level and varies from run to run far more \
             than {pairs} independent pairs would: over 200 runs, 90% of runs fell between \
             {lo:.1}% and {hi:.1}% (docs/error-bars.md).\n"
        );
        let nn = &self.neighbours;
        s += &format!(
            "utility     1-NN label agreement, {} raw queries vs the other rows: private sketch \
             {:.1}%, original data {:.1}%\n",
            nn.queries,
            100.0 * nn.hit_priv as f64 / nn.queries as f64,
            100.0 * nn.hit_raw as f64 / nn.queries as f64
        );
        s += &format!(
            "            meaning: how often the nearest released row (by {}) has the query's \
             label; 'original data' ranks the unprivatised rows the same way. The gap is what the \
             sketch costs (projection to k values, noise at this ε).\n",
            if self.signs {
                "sign agreements"
            } else {
                "estimated cosine"
            }
        );
        s
    }
}
