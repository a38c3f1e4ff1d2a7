//! `dprp calibrate`: what a mechanism's noise would be before anything is published — the
//! Gaussian σ for a sensitivity, the σ table of a Gaussian sketch with the inner-product error it
//! implies, the flip rules of a sign sketch, a local mechanism's constants and error, or the plan
//! of a distributed round. One report of text lines, built whole before anything is printed.

use crate::error::{Error, Result};
use crate::estimate::{ip_variance, PairStats, QueryMode};
use crate::mechanism::distributed::DistributedGuarantee;
use crate::mechanism::local::release::describe_constants;
use crate::mechanism::{self, MechanismKind, MechanismParams};
use crate::privacy::guarantee::{check_beta, Neighbour};
use crate::privacy::lattice::NoiseChoice;
use crate::projection::{DenseKind, Seed};

mod one;
pub use one::{mechanism_calibration, sigma_for_sensitivity, MechanismCalibration, SigmaReport};

/// `push!(out, "…", args)?`: one line of the report (a `Result` so that the code reads as the
/// printing it replaced).
macro_rules! push {
    ($out:expr, $($arg:tt)*) => {{
        $out.push(format!($($arg)*));
        Ok::<(), Error>(())
    }};
}

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

/// The calibration report of the options, as text lines (nothing is printed, so a refusal leaves
/// no partial table).
pub fn report(a: &CalibrateOptions) -> Result<Vec<String>> {
    let mut out = Vec::new();
    calibrate(a, &mut out)?;
    Ok(out)
}

fn calibrate(a: &CalibrateOptions, out: &mut Vec<String>) -> Result<()> {
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
        out.extend(sigma_for_sensitivity(a)?.to_text());
        return Ok(());
    };
    if matches!(
        name.to_ascii_lowercase().as_str(),
        "ddg" | "sketch-ddg" | "binomial"
    ) {
        return distributed(a, &name.to_ascii_lowercase(), out);
    }
    for (given, opt) in [
        (a.clip.is_some(), "‹clip›"),
        (a.bits.is_some(), "‹bits›"),
        (a.bits_per_parameter.is_some(), "‹bits_per_parameter›"),
    ] {
        if given {
            return Err(Error::param(
                opt,
                "applies to the distributed mechanisms (ddg, sketch-ddg, binomial) only",
            ));
        }
    }
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
    super::mechanism::check_applies(
        kind,
        super::mechanism::Given {
            delta: a.delta.is_some(),
            min_norm: a.min_norm.is_some(),
            individual_dp: false,
            projection: a.projection.is_some() && !kind.is_local(),
        },
    )?;
    let noise = match &a.noise {
        Some(_) if !kind.is_gaussian_sketch() => {
            return Err(Error::param(
                "‹noise›",
                format!(
                    "calibrate's σ table is for the Gaussian sketches ({}), not {}",
                    MechanismKind::names_where(MechanismKind::is_gaussian_sketch),
                    kind.name()
                ),
            ))
        }
        Some(n) => NoiseChoice::parse(n)?,
        None => NoiseChoice::default(),
    };
    let p = a
        .dim
        .filter(|&p| p > 0)
        .ok_or_else(|| Error::param("‹dim›", "give the input dimension p ≥ 1"))?;
    if kind.is_local() {
        return local_table(a, kind, p, out);
    }
    for (given, opt) in [
        (a.users.is_some(), "‹users›"),
        (a.epsilon_norm.is_some(), "‹epsilon_norm›"),
        (a.radius.is_some(), "‹radius›"),
    ] {
        if given {
            return Err(Error::param(
                opt,
                format!(
                    "applies to the local-DP mechanisms only, not {}",
                    kind.name()
                ),
            ));
        }
    }
    let seed = match a.projection_seed.as_deref() {
        Some(s) => Seed::parse_hex(s)?,
        None => Seed::random()?,
    };
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
        return sign_table(a, kind, p, &ks, seed, out);
    }
    gaussian_table(a, kind, p, &ks, seed, noise, out)
}

/// A Gaussian sketch's σ for each k, with the variance of the inner-product estimate it implies
/// and the cost of the arithmetic's rounding.
fn gaussian_table(
    a: &CalibrateOptions,
    kind: MechanismKind,
    p: usize,
    ks: &[usize],
    seed: Seed,
    noise: NoiseChoice,
    out: &mut Vec<String>,
) -> Result<()> {
    let delta = a.delta;
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
        let params = MechanismParams {
            kind,
            epsilon: a.epsilon,
            delta,
            beta: a.beta,
            neighbour: Neighbour::Coordinate,
            p,
            k: kind.projects().then_some(k),
            projection: a.projection.as_deref().map(DenseKind::parse).transpose()?,
            seed: Some(seed),
            min_norm: None,
            individual_dp: false,
            local: Default::default(),
        };
        let m = mechanism::build_with(&params, noise)?;
        let rec = m.record();
        let Some(cal) = rec.gaussian.as_ref() else {
            continue;
        };
        let est = m.as_sketch()?.estimator();
        let crate::estimate::Estimator::Gaussian { family, .. } = est else {
            continue;
        };
        let both = ip_variance(family, k, cal.sigma, &stats, QueryMode::BothPrivate);
        let raw = ip_variance(family, k, cal.sigma, &stats, QueryMode::RawQuery);
        let cost = crate::mechanism::central::arithmetic::RoundingCost::of(&rec, &m.guarantee());
        rows.push((k, cal.sigma, cal.sigma_classical, both, raw, cost));
    }
    push!(out,
        "{} at ε = {}, δ = {:e}, β = {}, p = {p}, {} noise; pair with ‖u‖ = {}, ‖v‖ = {}, cos = {} \
         (ρ = {:.4})",
        kind.name(),
        a.epsilon,
        delta.unwrap_or(0.0),
        a.beta,
        match noise {
            NoiseChoice::Lattice => "lattice",
            NoiseChoice::Float => "float",
        },
        a.norm_u,
        a.norm_v,
        a.cosine,
        stats.ip
    )?;
    push!(out,
        "(Σu²v² taken as ‖u‖²‖v‖²/p; variance and standard deviation of the inner-product estimate \
         ⟨x̃,ỹ⟩ (Theorems C.1–C.3, docs/commands.md#query-and-estimate-what-they-print): both \
         rows released, or a raw query against a released row)"
    )?;
    push!(out,
        "(rounding: Δ_r is the sensitivity the noise is calibrated for — Δ₂ of the exact map plus \
         the input grid, the arithmetic's error bound and the lattice step; \"σ cost\" is σ against \
         the σ for Δ₂ itself)"
    )?;
    push!(
        out,
        "{:>6} {:>10} {:>10} {:>10} {:>9} {:>12} {:>13} {:>10} {:>13} {:>10}",
        "k",
        "Δ₂",
        "Δ_r/Δ₂−1",
        "σ",
        "σ cost",
        "σ classical",
        "var both",
        "sd both",
        "var raw-q",
        "sd raw-q"
    )?;
    for (k, sigma, classical, both, raw, cost) in rows {
        let (sens, excess, sigma_cost) = match &cost {
            Some(c) => (
                c.sensitivity_exact,
                format!("{:.2e}", c.sensitivity_excess),
                c.sigma_textbook
                    .map(|t| format!("{:+.3}%", (sigma / t - 1.0) * 100.0))
                    .unwrap_or_else(|| "-".into()),
            ),
            None => (f64::NAN, "-".into(), "-".into()),
        };
        push!(
            out,
            "{:>6} {:>10.6} {:>10} {:>10.6} {:>9} {:>12.6} {:>13.6} {:>10.6} {:>13.6} {:>10.6}",
            k,
            sens,
            excess,
            sigma,
            sigma_cost,
            classical,
            both,
            both.sqrt(),
            raw,
            raw.sqrt()
        )?;
    }
    Ok(())
}

/// A local mechanism's guarantee, constants and error: per user, and of the mean over n users.
fn local_table(
    a: &CalibrateOptions,
    kind: MechanismKind,
    p: usize,
    out: &mut Vec<String>,
) -> Result<()> {
    use crate::mechanism::{LocalMap, LocalOptions};
    let map = a.projection.as_deref().map(LocalMap::parse).transpose()?;
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
    let mut first = true;
    for k in ks {
        let params = MechanismParams {
            kind,
            epsilon: a.epsilon,
            delta: None,
            beta: 1.0,
            neighbour: Neighbour::ReplaceOne,
            p,
            k,
            projection: None,
            seed: Some(Seed([0; 32])),
            min_norm: None,
            individual_dp: false,
            local: LocalOptions {
                map,
                epsilon_norm: a.epsilon_norm,
                radius: a.radius,
                first_row: 0,
            },
        };
        let m = mechanism::build(&params)?;
        let rec = m.record();
        let Some(l) = rec.local.as_ref() else {
            continue;
        };
        if first {
            let g = m.guarantee();
            push!(out, "{} at d = {p}: {}", kind.name(), g.label())?;
            push!(out, "guarantee: {}", g.sentence())?;
            push!(out, "per-user error: {}", l.mse_note)?;
            first = false;
        }
        let errs: Vec<String> = users
            .iter()
            .map(|&n| format!("n = {n}: {:.4e}", l.mse_per_user / n as f64))
            .collect();
        push!(
            out,
            "{}constants: {}\n  E‖Z − v‖² per user = {:.6}; E‖mean − μ‖² = per user / n: {}",
            k.map(|k| format!("k = {k}: ")).unwrap_or_default(),
            describe_constants(&l.constants),
            l.mse_per_user,
            errs.join(", ")
        )?;
    }
    Ok(())
}

/// The flip parameters of a sign mechanism for each k: N₊ and its inputs, ε' per sign, flip
/// probabilities (DESIGN.md §4).
fn sign_table(
    a: &CalibrateOptions,
    kind: MechanismKind,
    p: usize,
    ks: &[usize],
    seed: Seed,
    out: &mut Vec<String>,
) -> Result<()> {
    use crate::mechanism::central::sign_sketch::FlipRule;
    use crate::privacy::rr::rr_flip_probability;
    let mut lines = Vec::new();
    let mut weak = false;
    for &k in ks {
        let params = MechanismParams {
            kind,
            epsilon: a.epsilon,
            delta: a.delta,
            beta: a.beta,
            neighbour: Neighbour::Coordinate,
            p,
            k: Some(k),
            projection: a.projection.as_deref().map(DenseKind::parse).transpose()?,
            seed: Some(seed),
            min_norm: a.min_norm,
            individual_dp: true,
            local: Default::default(),
        };
        let m = mechanism::build(&params)?;
        let rec = m.record();
        let Some(sign) = rec.sign else { continue };
        let line = match sign.rule {
            FlipRule::RandomisedResponse {
                eps_prime,
                flip_probability,
            } => {
                weak |= flip_probability >= 0.499;
                match &sign.n_plus {
                    Some(n) => {
                        // what the paper's formulas would give (not used: not proven bounds)
                        let paper_p = match params.projection.unwrap_or(DenseKind::Rademacher) {
                            DenseKind::Gaussian => crate::privacy::nplus::f_gaussian(n.r, p)?,
                            _ => crate::privacy::nplus::p_rademacher(n.r),
                        };
                        let paper_n = crate::privacy::nplus::n_plus(k, paper_p, n.delta);
                        format!(
                            "k = {k:>5}: r = β/ν = {:.4}, P = {:.6} ({}), μ = {:.3}, η = {:.4}, \
                             N₊ = {}, ε' = ε/N₊ = {:.6}, flip probability {:.6}\n          \
                             (the paper's eq. (5)/(10) value P = {:.6}, N₊ = {}, is not a proven \
                             bound and is not used)",
                            n.r,
                            n.prob,
                            n.method,
                            n.mu,
                            n.eta,
                            n.n_plus,
                            eps_prime,
                            flip_probability,
                            paper_p,
                            paper_n
                        )
                    }
                    None => format!(
                        "k = {k:>5}: N₊ = 1 (one bin moves), ε' = {eps_prime}, flip probability {flip_probability:.6}"
                    ),
                }
            }
            FlipRule::SmoothFlipping { eps_prime } => {
                let q1 = rr_flip_probability(eps_prime);
                weak |= q1 >= 0.499;
                let qs: Vec<String> = [0u64, 1, 2, 5, 10, 50]
                    .iter()
                    .map(|&l| format!("q(L={l}) = {:.6}", rr_flip_probability(eps_prime * l as f64)))
                    .collect();
                format!("k = {k:>5}: ε' = {eps_prime:.6}; {}", qs.join(", "))
            }
            FlipRule::IdpGaussian { sigma_unit, .. } => format!(
                "k = {k:>5}: σ = Δ₂(A)·{sigma_unit:.6}; Rademacher Δ₂(A) = β·√(|A|/k), e.g. |A| = k/10: σ = {:.6}",
                a.beta * (0.1f64).sqrt() * sigma_unit
            ),
            FlipRule::IdpRandomisedResponse { epsilon, split } => {
                if split {
                    format!(
                        "k = {k:>5}: flip probability 1/(1+e^(ε/|A|)); |A| = k/10: {:.6}",
                        rr_flip_probability(epsilon / (k as f64 / 10.0).max(1.0))
                    )
                } else {
                    format!("k = {k:>5}: flip probability {:.6} per bin in A", rr_flip_probability(epsilon))
                }
            }
        };
        lines.push(line);
    }
    push!(
        out,
        "{} at ε = {}{}, β = {}, p = {p}",
        kind.name(),
        a.epsilon,
        a.delta.map(|d| format!(", δ = {d:e}")).unwrap_or_default(),
        a.beta
    )?;
    for l in lines {
        push!(out, "{l}")?;
    }
    if weak {
        push!(
            out,
            "warning: flip probabilities are ≥ 0.499: such a release carries almost no signal \
             (raise ε or lower k)"
        )?;
    }
    Ok(())
}

/// `calibrate --mechanism ddg|sketch-ddg|binomial`: the parameters dprp would use for `n`
/// clients (`--users`) of dimension `--dim`, with the expected error, the bits per parameter and
/// the wrap probability ([`crate::mechanism::distributed::accountant::params`]).
fn distributed(a: &CalibrateOptions, name: &str, out: &mut Vec<String>) -> Result<()> {
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
    let sketch_only = [
        (a.k.is_some(), "‹k›"),
        (a.projection.is_some(), "‹projection›"),
        (a.projection_seed.is_some(), "‹projection_seed›"),
        (a.min_norm.is_some(), "‹min_norm›"),
        (a.sensitivity.is_some(), "‹sensitivity›"),
        (a.epsilon_norm.is_some(), "‹epsilon_norm›"),
        (a.radius.is_some(), "‹radius›"),
        (a.noise.is_some(), "‹noise›"),
    ];
    if let Some((_, opt)) = sketch_only.iter().find(|(given, _)| *given) {
        return Err(Error::param(
            *opt,
            format!("does not apply to {name} (a distributed mechanism)"),
        ));
    }
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
    let ddg_lines = |out: &mut Vec<String>, p: &DdgPlan, dims: &str| -> Result<()> {
        push!(
            out,
            "guarantee: {}",
            DistributedGuarantee::of_ddg(p).summary()
        )?;
        push!(
            out,
            "{dims}; γ = {:.6e}, σ = {:.6e} per client (integer noise N_Z(0, {})), β = {:.4e}",
            p.gamma,
            p.sigma,
            crate::privacy::guarantee::fmt_param((p.sigma / p.gamma).powi(2)),
            p.beta
        )?;
        push!(
            out,
            "expected squared error of the mean: {:.6e} (noise {:.3e}, rounding {:.3e}, rounding \
             bias ≤ {:.3e}, sketch ≤ {:.3e})",
            p.mse.total(),
            p.mse.noise,
            p.mse.rounding,
            p.mse.rounding_bias,
            p.mse.sketch
        )?;
        push!(
            out,
            "bits per parameter: {:.4} (M = 2^{}); P(the modular sum wraps) ≤ {:.3e}",
            p.bits_per_parameter,
            req.bits,
            p.wrap_probability
        )
    };
    push!(
        out,
        "{name}: n = {n} clients, d = {d}, ε = {}, δ = {delta:e}, c = {clip}",
        a.epsilon
    )?;
    match name {
        "ddg" => {
            let p = plan_ddg(&req)?;
            ddg_lines(out, &p, &format!("rotated dimension d' = {}", p.d_rot))
        }
        "sketch-ddg" => {
            let sp = plan_sketch_ddg(&req, a.bits_per_parameter)?;
            ddg_lines(
                out,
                &sp.ddg,
                &format!("count sketch to m = {} rows (t = {})", sp.m, sp.t),
            )
        }
        _ => {
            let p = plan_binomial(&req)?;
            push!(
                out,
                "guarantee: {}",
                DistributedGuarantee::of_binomial(&p).summary()
            )?;
            push!(
                out,
                "rotated dimension d' = {}; clamp X = {:.6e}, k = {} levels ({:.6e} apart), \
                 Bin(m = {}, ½) per client and coordinate (N = {} in the sum)",
                p.d_rot,
                p.x_max,
                p.k,
                p.s,
                p.m,
                p.n_trials
            )?;
            push!(
                out,
                "expected squared error of the mean: {:.6e} (noise {:.3e}, quantisation {:.3e})",
                p.mse.total(),
                p.mse.noise,
                p.mse.rounding
            )?;
            push!(
                out,
                "bits per coordinate: log₂(k + m) = {:.3} (cpSGD's count; {} under SecAgg with \
                 M = 2^{}); the sum never wraps (it needs M ≥ {})",
                p.bits_per_coordinate,
                req.bits,
                req.bits,
                p.modulus_needed
            )
        }
    }
}
