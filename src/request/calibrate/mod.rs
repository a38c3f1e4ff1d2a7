//! `dprp calibrate`: what a mechanism's noise would be before anything is published — the
//! Gaussian σ for a sensitivity, the σ table of a Gaussian sketch with the inner-product error it
//! implies, the flip rules of a sign sketch, a local mechanism's constants and error, or the plan
//! of a distributed round. One typed report ([`CalibrationReport`]), built whole before anything
//! is printed, that renders its own lines. The mechanism is resolved from the options as `dprp
//! publish` resolves it ([`MechanismOptions::resolve`]), once, and built for each k.

use crate::error::{Error, Result};
use crate::estimate::{ip_variance, PairStats, QueryMode};
use crate::mechanism::distributed::DistributedGuarantee;
use crate::mechanism::{self, MechanismKind, MechanismParams};
use crate::privacy::guarantee::check_beta;
use crate::privacy::lattice::NoiseChoice;
use crate::projection::{DenseKind, Seed};
use crate::request::MechanismOptions;

mod one;
mod tables;
pub use one::{mechanism_calibration, sigma_for_sensitivity, MechanismCalibration, SigmaReport};
pub use tables::{
    BinomialRow, CalibrationReport, DdgRow, DistributedPlan, DistributedTable, GaussianRow,
    GaussianTable, LocalRow, LocalTable, SignFlips, SignRow, SignTable,
};

/// The options of `dprp calibrate` as given; `None` where the user gave nothing.
#[derive(Debug, Clone)]
pub struct CalibrateOptions {
    /// Privacy parameter ε > 0.
    pub epsilon: f64,
    /// Privacy parameter δ in (0, 1) (Gaussian mechanisms, dp-signrp-rr, idp-*-g).
    pub delta: Option<f64>,
    /// ℓ₂-sensitivity Δ₂ of the released vector (alternative to --mechanism).
    pub sensitivity: Option<f64>,
    /// Mechanism whose sensitivity to compute (with --dim and optionally --k).
    pub mechanism: Option<String>,
    /// Sketch width k (default: a table over 64..1024).
    pub k: Option<usize>,
    /// Input dimension p.
    pub dim: Option<usize>,
    /// Neighbour distance β.
    pub beta: f64,
    /// Dense projection kind for dp-rp-g / dp-rp-g-opt.
    pub projection: Option<String>,
    /// Projection seed (Δ₂ of Gaussian projections depends on the draw).
    pub projection_seed: Option<String>,
    /// ‖u‖ of a typical pair, for the error estimate.
    pub norm_u: f64,
    /// ‖v‖ of a typical pair.
    pub norm_v: f64,
    /// Cosine of the pair.
    pub cosine: f64,
    /// Public lower bound ν on row norms (dp-signrp-rr).
    pub min_norm: Option<f64>,
    /// Local mechanisms: number of users n, for the error of the mean (default: a table).
    pub users: Option<u64>,
    /// privunit2-norm: the norm's budget ε₂.
    pub epsilon_norm: Option<f64>,
    /// privunit2-norm: radius R of the input ball; scalar-dp: upper bound R of the values.
    pub radius: Option<f64>,
    /// Distributed mechanisms (ddg, sketch-ddg, binomial): ℓ₂ clip norm c of each client's vector.
    pub clip: Option<f64>,
    /// Distributed mechanisms: bits b per transmitted coordinate (M = 2^b).
    pub bits: Option<u32>,
    /// Distributed mechanisms: the largest acceptable bound on P(the modular sum wraps).
    pub max_wrap: f64,
    /// sketch-ddg: the most bits per input parameter (chooses the sketch size).
    pub bits_per_parameter: Option<f64>,
    /// Gaussian mechanisms: the noise to calibrate for, lattice (default; σ includes the
    /// lattice's rounding terms) or float, as `publish --noise`.
    pub noise: Option<String>,
}

impl Default for CalibrateOptions {
    /// ε = 1 and the command's defaults: β = 1, a pair of unit norms with cosine 0.5, a wrap
    /// bound of 10⁻⁶; nothing else given.
    fn default() -> CalibrateOptions {
        CalibrateOptions {
            epsilon: 1.0,
            delta: None,
            sensitivity: None,
            mechanism: None,
            k: None,
            dim: None,
            beta: 1.0,
            projection: None,
            projection_seed: None,
            norm_u: 1.0,
            norm_v: 1.0,
            cosine: 0.5,
            min_norm: None,
            users: None,
            epsilon_norm: None,
            radius: None,
            clip: None,
            bits: None,
            max_wrap: 1e-6,
            bits_per_parameter: None,
            noise: None,
        }
    }
}

/// Refuse the first option given (`(given, ‹key›)`) with the reason `why`.
fn refuse_given(options: &[(bool, &str)], why: impl Fn() -> String) -> Result<()> {
    match options.iter().find(|(given, _)| *given) {
        Some((_, opt)) => Err(Error::param(*opt, why())),
        None => Ok(()),
    }
}

/// The calibration report of the options (nothing is printed, so a refusal leaves no partial
/// table).
pub fn report(a: &CalibrateOptions) -> Result<CalibrationReport> {
    check_beta(a.beta)?;
    if !(a.norm_u.is_finite() && a.norm_u >= 0.0 && a.norm_v.is_finite() && a.norm_v >= 0.0) {
        return Err(Error::param(
            "‹norm_u›/‹norm_v›",
            "norms must be finite and ≥ 0",
        ));
    }
    if !(-1.0..=1.0).contains(&a.cosine) {
        return Err(Error::param("‹cosine›", "the cosine must lie in [-1, 1]"));
    }
    let Some(name) = &a.mechanism else {
        return Ok(CalibrationReport::Sigma(sigma_for_sensitivity(a)?));
    };
    if matches!(
        name.to_ascii_lowercase().as_str(),
        "ddg" | "sketch-ddg" | "binomial"
    ) {
        return distributed(a, &name.to_ascii_lowercase()).map(CalibrationReport::Distributed);
    }
    refuse_given(
        &[
            (a.clip.is_some(), "‹clip›"),
            (a.bits.is_some(), "‹bits›"),
            (a.bits_per_parameter.is_some(), "‹bits_per_parameter›"),
        ],
        || "applies to the distributed mechanisms (ddg, sketch-ddg, binomial) only".into(),
    )?;
    let kind = MechanismKind::parse(name)?;
    if a.sensitivity.is_some() {
        return Err(Error::param(
            "‹sensitivity›",
            format!(
                "{} computes its own sensitivity from ‹dim›, ‹k› and β; ‹sensitivity› is for \
                 the σ of a Gaussian mechanism without ‹mechanism›",
                kind.name()
            ),
        ));
    }
    // the options that do not apply refused first, as `dprp publish` refuses them
    super::mechanism::check_applies(
        kind,
        super::mechanism::Given {
            delta: a.delta.is_some(),
            min_norm: a.min_norm.is_some(),
            individual_dp: false,
            projection: a.projection.is_some() && !kind.is_local(),
        },
    )?;
    if a.noise.is_some() && !kind.is_gaussian_sketch() {
        return Err(Error::param(
            "‹noise›",
            format!(
                "calibrate's σ table is for the Gaussian sketches ({}), not {}",
                MechanismKind::names_where(MechanismKind::is_gaussian_sketch),
                kind.name()
            ),
        ));
    }
    let p = a
        .dim
        .filter(|&p| p > 0)
        .ok_or_else(|| Error::param("‹dim›", "give the input dimension p ≥ 1"))?;
    if !kind.is_local() {
        refuse_given(
            &[
                (a.users.is_some(), "‹users›"),
                (a.epsilon_norm.is_some(), "‹epsilon_norm›"),
                (a.radius.is_some(), "‹radius›"),
            ],
            || {
                format!(
                    "applies to the local-DP mechanisms only, not {}",
                    kind.name()
                )
            },
        )?;
    }
    // the options `dprp publish` resolves, through the same function (its refusals of options
    // that do not apply); the local constants do not depend on the seed
    let seed = match (kind.is_local(), a.projection_seed.as_deref()) {
        (true, _) => Seed([0; 32]),
        (false, Some(s)) => Seed::parse_hex(s)?,
        (false, None) => Seed::random()?,
    };
    let plan = MechanismOptions {
        mechanism: name.clone(),
        epsilon: a.epsilon,
        delta: a.delta,
        beta: (!kind.is_local()).then_some(a.beta),
        k: a.k,
        projection: a.projection.clone(),
        seed: Some(seed),
        min_norm: a.min_norm,
        individual_dp: kind.is_idp(),
        epsilon_norm: a.epsilon_norm,
        radius: a.radius,
        noise: a.noise.clone(),
        ..Default::default()
    }
    .resolve()?;
    let mut params = plan.params;
    params.p = p;
    if kind.is_local() {
        return local_table(a, params).map(CalibrationReport::Local);
    }
    let ks: Vec<usize> = match (kind.projects(), a.k) {
        (false, _) => vec![p],
        (true, Some(k)) => vec![k],
        (true, None) => [64, 128, 256, 512, 1024]
            .into_iter()
            .filter(|&k| !kind.oporp() || k <= p)
            .collect(),
    };
    if ks.is_empty() {
        return Err(Error::param(
            "‹dim›",
            format!("OPORP needs k ≤ p; p = {p} is below 64, give ‹k›"),
        ));
    }
    if kind.is_sign() {
        return sign_table(a, params, &ks).map(CalibrationReport::Sign);
    }
    gaussian_table(a, params, &ks, plan.noise).map(CalibrationReport::Gaussian)
}

/// A Gaussian sketch's σ for each k, with the variance of the inner-product estimate it implies
/// and the cost of the arithmetic's rounding.
fn gaussian_table(
    a: &CalibrateOptions,
    mut params: MechanismParams,
    ks: &[usize],
    noise: NoiseChoice,
) -> Result<GaussianTable> {
    let (kind, p) = (params.kind, params.p);
    let nu2 = a.norm_u * a.norm_u;
    let nv2 = a.norm_v * a.norm_v;
    let stats = PairStats {
        norm_u_sq: nu2,
        norm_v_sq: nv2,
        ip: a.cosine * a.norm_u * a.norm_v,
        // assume the mass is spread over the p coordinates
        sum_u2v2: nu2 * nv2 / p as f64,
    };
    let mut rows = Vec::new();
    for &k in ks {
        params.k = kind.projects().then_some(k);
        let m = mechanism::build_with(&params, noise)?;
        let rec = m.record();
        let Some(cal) = rec.gaussian.as_ref() else {
            continue;
        };
        let est = m.as_sketch()?.estimator();
        let crate::estimate::Estimator::Gaussian { family, .. } = est else {
            continue;
        };
        let cost = crate::mechanism::central::arithmetic::RoundingCost::of(&rec, &m.guarantee());
        rows.push(GaussianRow {
            k,
            sensitivity: cost.as_ref().map(|c| c.sensitivity_exact),
            sensitivity_excess: cost.as_ref().map(|c| c.sensitivity_excess),
            sigma: cal.sigma,
            sigma_textbook: cost.as_ref().and_then(|c| c.sigma_textbook),
            sigma_classical: cal.sigma_classical,
            var_both: ip_variance(family, k, cal.sigma, &stats, QueryMode::BothPrivate),
            var_raw_query: ip_variance(family, k, cal.sigma, &stats, QueryMode::RawQuery),
        });
    }
    Ok(GaussianTable {
        mechanism: kind.name(),
        epsilon: a.epsilon,
        delta: a.delta,
        beta: a.beta,
        p,
        noise: match noise {
            NoiseChoice::Lattice => "lattice",
            NoiseChoice::Float => "float",
        },
        norm_u: a.norm_u,
        norm_v: a.norm_v,
        cosine: a.cosine,
        ip: stats.ip,
        rows,
    })
}

/// A local mechanism's guarantee, constants and error: per user, and of the mean over n users.
fn local_table(a: &CalibrateOptions, mut params: MechanismParams) -> Result<LocalTable> {
    let (kind, p) = (params.kind, params.p);
    let ks: Vec<Option<usize>> = match (kind.projects(), a.k) {
        (false, _) => vec![None],
        (true, Some(k)) => vec![Some(k)],
        (true, None) => [10, 50, 100, 500, 1000, 2000]
            .into_iter()
            .filter(|&k| k <= p)
            .map(Some)
            .collect(),
    };
    if ks.is_empty() {
        return Err(Error::param(
            "‹dim›",
            format!("projunit needs k ≤ d; d = {p} is below 10, give ‹k›"),
        ));
    }
    let users: Vec<u64> = match a.users {
        Some(0) => return Err(Error::param("‹users›", "give at least one user")),
        Some(n) => vec![n],
        None => vec![100, 10_000, 1_000_000],
    };
    let mut table = LocalTable {
        mechanism: kind.name(),
        d: p,
        label: String::new(),
        guarantee: String::new(),
        mse_note: String::new(),
        users,
        rows: Vec::new(),
    };
    for k in ks {
        params.k = k;
        let m = mechanism::build(&params)?;
        let rec = m.record();
        let Some(l) = rec.local.as_ref() else {
            continue;
        };
        if table.rows.is_empty() {
            let g = m.guarantee();
            table.label = g.label();
            table.guarantee = g.sentence();
            table.mse_note = l.mse_note.clone();
        }
        table.rows.push(LocalRow {
            k,
            constants: l.constants.clone(),
            mse_per_user: l.mse_per_user,
        });
    }
    Ok(table)
}

/// The flip parameters of a sign mechanism for each k: N₊ and its inputs, ε' per sign, flip
/// probabilities (DESIGN.md §4).
fn sign_table(
    a: &CalibrateOptions,
    mut params: MechanismParams,
    ks: &[usize],
) -> Result<SignTable> {
    use crate::mechanism::central::sign_sketch::FlipRule;
    use crate::privacy::rr::rr_flip_probability;
    let (kind, p) = (params.kind, params.p);
    let mut rows = Vec::new();
    let mut weak = false;
    for &k in ks {
        params.k = Some(k);
        let m = mechanism::build(&params)?;
        let rec = m.record();
        let Some(sign) = rec.sign else { continue };
        let flips = match sign.rule {
            FlipRule::RandomisedResponse {
                eps_prime,
                flip_probability,
            } => {
                weak |= flip_probability >= 0.499;
                let paper = match &sign.n_plus {
                    // what the paper's formulas would give (not used: not proven bounds)
                    Some(n) => {
                        let paper_p = match params.projection.unwrap_or(DenseKind::Rademacher) {
                            DenseKind::Gaussian => crate::privacy::nplus::f_gaussian(n.r, p)?,
                            _ => crate::privacy::nplus::p_rademacher(n.r),
                        };
                        Some((paper_p, crate::privacy::nplus::n_plus(k, paper_p, n.delta)))
                    }
                    None => None,
                };
                SignFlips::RandomisedResponse {
                    eps_prime,
                    flip_probability,
                    n_plus: sign.n_plus.clone(),
                    paper,
                }
            }
            FlipRule::SmoothFlipping { eps_prime } => {
                weak |= rr_flip_probability(eps_prime) >= 0.499;
                SignFlips::SmoothFlipping {
                    eps_prime,
                    by_distance: [0u64, 1, 2, 5, 10, 50]
                        .iter()
                        .map(|&l| (l, rr_flip_probability(eps_prime * l as f64)))
                        .collect(),
                }
            }
            FlipRule::IdpGaussian { sigma_unit, .. } => SignFlips::IdpGaussian {
                sigma_unit,
                sigma_at_a_tenth: a.beta * (0.1f64).sqrt() * sigma_unit,
            },
            FlipRule::IdpRandomisedResponse { epsilon, split } => {
                SignFlips::IdpRandomisedResponse {
                    split,
                    flip_probability: if split {
                        rr_flip_probability(epsilon / (k as f64 / 10.0).max(1.0))
                    } else {
                        rr_flip_probability(epsilon)
                    },
                }
            }
        };
        rows.push(SignRow { k, flips });
    }
    Ok(SignTable {
        mechanism: kind.name(),
        epsilon: a.epsilon,
        delta: a.delta,
        beta: a.beta,
        p,
        rows,
        weak,
    })
}

/// `calibrate --mechanism ddg|sketch-ddg|binomial`: the parameters dprp would use for `n`
/// clients (`--users`) of dimension `--dim`, with the expected error, the bits per parameter and
/// the wrap probability ([`crate::mechanism::distributed::accountant::params`]).
fn distributed(a: &CalibrateOptions, name: &str) -> Result<DistributedTable> {
    use crate::mechanism::distributed::accountant::params::{
        plan_binomial, plan_ddg, plan_sketch_ddg, DdgPlan, DistributedRequest,
    };
    let n = a
        .users
        .ok_or_else(|| Error::missing("‹users›", "give the number of clients n"))?;
    let d = a
        .dim
        .filter(|&d| d > 0)
        .ok_or_else(|| Error::param("‹dim›", "give the dimension d ≥ 1"))?;
    let delta = a
        .delta
        .ok_or_else(|| Error::missing("‹delta›", format!("{name} gives (ε, δ)-DP and needs δ")))?;
    let clip = a
        .clip
        .ok_or_else(|| Error::missing("‹clip›", "give the clip norm c of each client's vector"))?;
    refuse_given(
        &[
            (a.k.is_some(), "‹k›"),
            (a.projection.is_some(), "‹projection›"),
            (a.projection_seed.is_some(), "‹projection_seed›"),
            (a.min_norm.is_some(), "‹min_norm›"),
            (a.sensitivity.is_some(), "‹sensitivity›"),
            (a.epsilon_norm.is_some(), "‹epsilon_norm›"),
            (a.radius.is_some(), "‹radius›"),
            (a.noise.is_some(), "‹noise›"),
        ],
        || format!("does not apply to {name} (a distributed mechanism)"),
    )?;
    if a.bits_per_parameter.is_some() && name != "sketch-ddg" {
        return Err(Error::param(
            "‹bits_per_parameter›",
            "applies to sketch-ddg only",
        ));
    }
    let req = DistributedRequest {
        n,
        d: d as u64,
        epsilon: a.epsilon,
        delta,
        clip,
        bits: a.bits.unwrap_or(16),
        max_wrap_probability: a.max_wrap,
    };
    let ddg_row = |p: &DdgPlan, d_rot: Option<u64>, sketch: Option<(u64, u64)>| DdgRow {
        d_rot,
        sketch,
        gamma: p.gamma,
        sigma: p.sigma,
        beta: p.beta,
        mse: [
            p.mse.total(),
            p.mse.noise,
            p.mse.rounding,
            p.mse.rounding_bias,
            p.mse.sketch,
        ],
        bits_per_parameter: p.bits_per_parameter,
        wrap_probability: p.wrap_probability,
    };
    let (guarantee, plan) = match name {
        "ddg" => {
            let p = plan_ddg(&req)?;
            (
                DistributedGuarantee::of_ddg(&p).summary(),
                DistributedPlan::Ddg(ddg_row(&p, Some(p.d_rot), None)),
            )
        }
        "sketch-ddg" => {
            let sp = plan_sketch_ddg(&req, a.bits_per_parameter)?;
            (
                DistributedGuarantee::of_ddg(&sp.ddg).summary(),
                DistributedPlan::Ddg(ddg_row(&sp.ddg, None, Some((sp.m, sp.t)))),
            )
        }
        _ => {
            let p = plan_binomial(&req)?;
            (
                DistributedGuarantee::of_binomial(&p).summary(),
                DistributedPlan::Binomial(BinomialRow {
                    d_rot: p.d_rot,
                    x_max: p.x_max,
                    k: p.k,
                    s: p.s,
                    m: p.m,
                    n_trials: p.n_trials,
                    mse: [p.mse.total(), p.mse.noise, p.mse.rounding],
                    bits_per_coordinate: p.bits_per_coordinate,
                    modulus_needed: p.modulus_needed,
                }),
            )
        }
    };
    Ok(DistributedTable {
        mechanism: name.to_string(),
        n,
        d,
        epsilon: a.epsilon,
        delta,
        clip,
        bits: req.bits,
        guarantee,
        plan,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(mechanism: &str, dim: usize) -> CalibrateOptions {
        CalibrateOptions {
            epsilon: 2.0,
            delta: Some(1e-6),
            mechanism: Some(mechanism.into()),
            dim: Some(dim),
            projection_seed: Some("0a".into()),
            ..Default::default()
        }
    }

    /// The table's σ for each k is the σ the one-mechanism report (Python's `dprp.calibrate`,
    /// and what `dprp publish` records) gives for that k, and the text prints it.
    #[test]
    fn gaussian_table_sigma_is_the_mechanisms_at_every_k() {
        let a = opts("dp-rp-g-opt", 300);
        let CalibrationReport::Gaussian(t) = report(&a).unwrap() else {
            panic!("not a Gaussian table")
        };
        assert_eq!(
            t.rows.iter().map(|r| r.k).collect::<Vec<_>>(),
            [64, 128, 256, 512, 1024]
        );
        let text = CalibrationReport::Gaussian(t.clone()).to_text();
        assert_eq!(text.len(), 4 + t.rows.len());
        for (r, line) in t.rows.iter().zip(&text[4..]) {
            let plan = MechanismOptions {
                mechanism: "dp-rp-g-opt".into(),
                epsilon: 2.0,
                delta: Some(1e-6),
                k: Some(r.k),
                seed: Some(Seed::parse_hex("0a").unwrap()),
                ..Default::default()
            }
            .resolve()
            .unwrap();
            let one = mechanism_calibration(plan, Some(300)).unwrap();
            assert_eq!(Some(r.sigma), one.sigma, "k = {}", r.k);
            assert!(line.contains(&format!("{:.6}", r.sigma)), "{line}");
            assert!(r.var_raw_query < r.var_both);
        }
        // power: σ differs between k (a table that repeated one row would fail above)
        assert!(t.rows[0].sigma != t.rows[4].sigma);
        let json = serde_json::to_value(CalibrationReport::Gaussian(t)).unwrap();
        assert_eq!(json["table"], "gaussian");
        assert_eq!(json["rows"][1]["k"], 128);
    }

    /// The options `dprp publish` refuses are refused here by the same function, and the
    /// distributed and local tables carry what their lines print.
    #[test]
    fn refusals_and_the_other_tables() {
        // δ for a mechanism without δ, as `dprp publish` refuses it
        let e = report(&opts("privunitg", 10)).unwrap_err();
        assert!(e.to_string().contains("delta"), "{e}");
        let local = report(&CalibrateOptions {
            delta: None,
            users: Some(500),
            ..opts("privunitg", 100)
        })
        .unwrap();
        let CalibrationReport::Local(t) = &local else {
            panic!("not a local table")
        };
        assert_eq!((t.rows.len(), t.users.as_slice()), (1, &[500u64][..]));
        let text = local.to_text().join("\n");
        assert!(
            text.contains(&format!("{:.6}", t.rows[0].mse_per_user)),
            "{text}"
        );
        assert!(text.contains(&format!("n = 500: {:.4e}", t.rows[0].mse_per_user / 500.0)));
        let ddg = report(&CalibrateOptions {
            mechanism: Some("ddg".into()),
            projection_seed: None,
            users: Some(100),
            clip: Some(1.0),
            ..opts("ddg", 1000)
        })
        .unwrap();
        let CalibrationReport::Distributed(d) = &ddg else {
            panic!("not a distributed table")
        };
        let DistributedPlan::Ddg(p) = &d.plan else {
            panic!("not a DDG plan")
        };
        assert_eq!(p.d_rot, Some(1024));
        assert!(ddg.to_text()[3].contains(&format!("{:.6e}", p.mse[0])));
    }
}
