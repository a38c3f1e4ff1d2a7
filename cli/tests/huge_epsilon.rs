//! Huge ε (issue 37 §4): σ is non-increasing in ε up to the largest ε accepted, ε above it is
//! refused by name everywhere (publish, calibrate, every mechanism family), and nothing prints NaN.
//!
//! Before: `calibrate -e 1e300` gave σ = 1.000173 for dp-oporp (more noise than at ε = 5: the
//! analytic bisection compared NaN), ε = 1e100 failed blaming "β is very small", and a sign
//! release at ε = 1e308 made `estimate` print "cosine NaN ± NaN" with exit status 0.

use crate::cli_helpers;

use cli_helpers::*;
use dprp::estimate::{sign_cosine, Estimator, QueryMode};
use dprp::mechanism::{build_with, MechanismKind, MechanismParams, NoiseChoice};
use dprp::privacy::gaussian::analytic_sigma;
use dprp::privacy::guarantee::{Neighbour, MAX_EPSILON};

/// ε on a log grid from 1 to `top`, `per_decade` points a decade, `top` included.
fn grid(top: f64, per_decade: usize) -> Vec<f64> {
    let decades = top.log10();
    let n = (decades * per_decade as f64).ceil() as usize;
    (0..=n)
        .map(|i| 10f64.powf(decades * i as f64 / n as f64).min(top))
        .collect()
}

fn params(
    kind: MechanismKind,
    eps: f64,
    proj: Option<dprp::projection::DenseKind>,
) -> MechanismParams {
    MechanismParams {
        kind,
        epsilon: eps,
        delta: kind.needs_delta().then_some(1e-6),
        beta: 1.0,
        neighbour: Neighbour::Coordinate,
        p: 64,
        k: kind.projects().then_some(32),
        projection: proj,
        seed: Some(dprp::projection::Seed::parse_hex("5eed").unwrap()),
        min_norm: matches!(kind, MechanismKind::DpSignrpRr).then_some(0.5),
        individual_dp: false,
        local: Default::default(),
    }
}

/// The analytic σ (Theorem 3.2) as a function: finite, positive and non-increasing over ε from 1
/// to 10³⁰⁰ (30 points a decade), and ≈ Δ/√(2ε) at the top (the large-ε asymptote). The
/// library's accepted range stops at 10⁶; the function itself no longer breaks beyond it (it
/// returned 1.000 at 10³⁰⁰).
#[test]
fn analytic_sigma_is_monotone_up_to_1e300() {
    let mut prev = f64::INFINITY;
    for eps in grid(1e300, 30) {
        let s = analytic_sigma(1.0, eps, 1e-6).unwrap();
        assert!(s.is_finite() && s > 0.0, "ε {eps:e}: σ = {s}");
        assert!(
            s <= prev,
            "ε {eps:e}: σ = {s} > {prev} at the smaller ε before it"
        );
        prev = s;
    }
    let s = analytic_sigma(1.0, 1e300, 1e-6).unwrap();
    let asymptote = 1.0 / (2.0f64 * 1e300).sqrt();
    assert!(
        (s / asymptote - 1.0).abs() < 0.01,
        "σ = {s:e} vs {asymptote:e}"
    );
}

/// Every Gaussian mechanism's recorded σ (lattice noise, the default, and float) is
/// non-increasing in ε over the whole accepted range, 1 to [`MAX_EPSILON`] (20 points a decade),
/// and ε one ulp above the limit is refused naming `--epsilon` and the limit.
#[test]
fn gaussian_sigma_is_monotone_over_the_accepted_range() {
    assert_eq!(MAX_EPSILON, 1e6);
    let dense = Some(dprp::projection::DenseKind::Rademacher);
    for (kind, proj) in [
        (MechanismKind::DpOporp, None),
        (MechanismKind::DpRpGOpt, dense),
        (MechanismKind::DpRpG, dense),
        (MechanismKind::RawGOpt, None),
    ] {
        for noise in [NoiseChoice::default(), NoiseChoice::Float] {
            let mut prev = f64::INFINITY;
            for eps in grid(MAX_EPSILON, 20) {
                let m = build_with(&params(kind, eps, proj), noise).unwrap();
                let Estimator::Gaussian { sigma, .. } = m.as_sketch().unwrap().estimator() else {
                    panic!("{kind:?}: not Gaussian");
                };
                assert!(
                    sigma.is_finite() && sigma > 0.0 && sigma <= prev,
                    "{kind:?} {noise:?} ε {eps:e}: σ = {sigma} after {prev}"
                );
                prev = sigma;
            }
        }
        let above = f64::from_bits(MAX_EPSILON.to_bits() + 1);
        let e = build_with(&params(kind, above, proj), NoiseChoice::default())
            .err()
            .expect("above the limit")
            .render(dprp::error::Front::Cli);
        assert!(e.contains("--epsilon") && e.contains("1e6"), "{e}");
    }
}

/// Every other family refuses ε above the limit too (sign, smooth, iDP, local), and accepts it
/// at the limit.
#[test]
fn every_family_refuses_epsilon_above_the_limit() {
    for kind in MechanismKind::all() {
        let mut p = params(kind, MAX_EPSILON, None);
        p.individual_dp = kind.name().starts_with("idp");
        if kind.is_local() {
            p.k = None;
        }
        let at = build_with(&p, NoiseChoice::default());
        p.epsilon = 1e7;
        let above = build_with(&p, NoiseChoice::default());
        let e = above.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            e.contains("1e6"),
            "{}: ε = 1e7 not refused by the limit: {e}",
            kind.name()
        );
        if let Err(e) = at {
            assert!(
                !e.to_string().contains("limit"),
                "{}: ε = 1e6 refused by the limit: {e}",
                kind.name()
            );
        }
    }
}

/// The sign estimator at any ε′: finite angle, cosine, standard errors and interval at
/// ε′ = 10⁶ and at 10³⁰⁸ (NaN before: e^{ε′} overflowed), equal to the no-flip estimator there.
#[test]
fn sign_estimates_are_finite_at_any_epsilon() {
    for eps_prime in [1e6, 1e308, f64::MAX] {
        for mode in [QueryMode::BothPrivate, QueryMode::RawQuery] {
            let s = sign_cosine(20, 32, Some(eps_prime), mode);
            let none = sign_cosine(20, 32, None, mode);
            for v in [s.cosine, s.se_cosine, s.theta, s.cosine_lo, s.cosine_hi] {
                assert!(v.is_finite(), "ε′ {eps_prime:e} {mode:?}: {s:?}");
            }
            assert!((s.cosine - none.cosine).abs() < 1e-12, "{s:?} vs {none:?}");
        }
    }
}

/// Through the command line: `calibrate` and `publish` refuse ε = 1e300 (and 1e100, which
/// blamed β) naming the limit, leave no file; at ε = 1e6 a sign release estimates without NaN.
#[test]
fn the_command_line_refuses_and_never_prints_nan() {
    let d = tmp();
    let dir = d.path();
    let sample = dprp::data::sample::generate();
    dprp::data::native::write(&dir.join("s.bin"), &sample).unwrap();
    for eps in ["1e100", "1e300", "1.0000001e6"] {
        fails(
            dir,
            &[
                "calibrate",
                "-e",
                eps,
                "-d",
                "1e-6",
                "-m",
                "dp-oporp",
                "--dim",
                "64",
                "-k",
                "32",
            ],
            &["--epsilon", "1e6"],
        );
        for m in ["dp-oporp", "dp-signoporp-rr", "privunitg"] {
            let mut args = vec!["publish", "s.bin", "-m", m, "-e", eps, "-o", "r.dprp"];
            if m == "dp-oporp" {
                args.extend(["-d", "1e-6", "-k", "32"]);
            } else if m == "dp-signoporp-rr" {
                args.extend(["-k", "32"]);
            } else {
                args.extend(["--normalize", "l2"]);
            }
            fails_clean(dir, &args, "r.dprp", &["--epsilon", "1e6"]);
        }
    }
    ok(
        dir,
        &[
            "publish",
            "s.bin",
            "-m",
            "dp-signoporp-rr",
            "-e",
            "1e6",
            "-k",
            "32",
            "-o",
            "sg.dprp",
        ],
    );
    for json in [false, true] {
        let mut args = vec!["estimate", "sg.dprp", "--rows", "3,4"];
        if json {
            args.push("--json");
        }
        let out = ok(dir, &args);
        assert!(!out.contains("NaN") && !out.contains("nan"), "{out}");
        if json {
            let v: Value = serde_json::from_str(&out).unwrap();
            assert!(v[0]["cosine"].as_f64().unwrap().is_finite(), "{out}");
        }
    }
    let out = ok(
        dir,
        &[
            "calibrate",
            "-e",
            "1e6",
            "-d",
            "1e-6",
            "-m",
            "dp-oporp",
            "--dim",
            "64",
            "-k",
            "32",
        ],
    );
    assert!(!out.contains("NaN") && !out.contains("inf"), "{out}");
}
