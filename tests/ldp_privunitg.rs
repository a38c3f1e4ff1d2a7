//! PrivUnitG: the truncated-normal samplers against the exact conditional law (γ = 6–8 and far
//! beyond), unbiasedness/MSE against the closed form, and privacy checks that can fail. The §A
//! table is checked beside the code (`src/mechanism/local/privunitg.rs`).

use crate::ldp_common;

use dprp::mechanism::local::privunitg::{sample_lower, sample_upper};
use dprp::mechanism::local::PrivUnitG;
use dprp::privacy::coin::Coin;
use dprp::privacy::special::{ln_1m_exp, ln_norm_sf};
use ldp_common::*;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// Exact CDF of `N(0,1) | N ≥ γ`: `1 − Φ̄(a)/Φ̄(γ)`.
fn upper_cdf(gamma: f64, a: f64) -> f64 {
    if a <= gamma {
        0.0
    } else {
        -(ln_norm_sf(a) - ln_norm_sf(gamma)).exp_m1()
    }
}

/// Exact CDF of `N(0,1) | N < γ`: `Φ(a)/Φ(γ)`.
fn lower_cdf(gamma: f64, a: f64) -> f64 {
    if a >= gamma {
        1.0
    } else {
        (ln_norm_sf(-a) - ln_norm_sf(-gamma)).exp()
    }
}

#[test]
fn upper_tail_sampler_is_the_exact_conditional_law() {
    let n = 50_000;
    for &gamma in &[6.0, 7.0, 8.0, 30.0] {
        let mut rng = ChaCha20Rng::seed_from_u64(gamma as u64);
        let lq = ln_norm_sf(gamma);
        let xs: Vec<f64> = (0..n).map(|_| sample_upper(gamma, lq, &mut rng)).collect();
        assert!(xs.iter().all(|&x| x >= gamma && x.is_finite()));
        let ks = ks_distance(&xs, |a| upper_cdf(gamma, a));
        assert!(ks < ks_critical(n), "γ = {gamma}: KS = {ks}");
        // Power 1: a 10% wrong scale of the excess over γ is rejected.
        let bad: Vec<f64> = xs.iter().map(|x| gamma + 1.1 * (x - gamma)).collect();
        let ks_bad = ks_distance(&bad, |a| upper_cdf(gamma, a));
        assert!(ks_bad > ks_critical(n), "γ = {gamma}: power KS = {ks_bad}");
    }
    // Power 2: the classical exponential approximation γ + Exp(1)/γ is rejected at γ = 6.
    let gamma = 6.0;
    let mut rng = ChaCha20Rng::seed_from_u64(99);
    let approx: Vec<f64> = (0..n)
        .map(|_| gamma - dprp::mechanism::local::unit_open0(&mut rng).ln() / gamma)
        .collect();
    let ks_approx = ks_distance(&approx, |a| upper_cdf(gamma, a));
    assert!(
        ks_approx > ks_critical(n),
        "exponential approximation: {ks_approx}"
    );
}

#[test]
fn lower_sampler_is_the_exact_conditional_law() {
    let n = 50_000;
    for &gamma in &[-1.0, 0.4, 1.5, 7.0] {
        let mut rng = ChaCha20Rng::seed_from_u64(100 + gamma as u64);
        let l1q = ln_norm_sf(-gamma);
        let xs: Vec<f64> = (0..n).map(|_| sample_lower(gamma, l1q, &mut rng)).collect();
        assert!(xs.iter().all(|&x| x <= gamma && x.is_finite()));
        let ks = ks_distance(&xs, |a| lower_cdf(gamma, a));
        assert!(ks < ks_critical(n), "γ = {gamma}: KS = {ks}");
        let bad: Vec<f64> = xs.iter().map(|x| gamma - 1.1 * (gamma - x)).collect();
        assert!(ks_distance(&bad, |a| lower_cdf(gamma, a)) > ks_critical(n));
    }
}

#[test]
fn alpha_mixture_matches_its_exact_cdf() {
    // The full step-2 draw at ε = 16 (γ ≈ 4.56): CDF (1−p)·Φ(a)/Φ(γ) below γ, then the cap.
    let n = 50_000;
    let m = PrivUnitG::new(16.0, 4).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(16);
    let xs: Vec<f64> = (0..n).map(|_| m.sample_alpha(&mut rng)).collect();
    let cdf = |a: f64| {
        if a < m.gamma {
            (1.0 - m.p) * lower_cdf(m.gamma, a)
        } else {
            (1.0 - m.p) + m.p * upper_cdf(m.gamma, a)
        }
    };
    assert!(ks_distance(&xs, cdf) < ks_critical(n));
    // Power: the mixture for p computed at 1.2ε (same γ) is rejected.
    let p_bad = 1.0 / (1.0 + (-(1.2 * 16.0 - (ln_1m_exp(m.ln_q) - m.ln_q))).exp());
    let cdf_bad = |a: f64| {
        if a < m.gamma {
            (1.0 - p_bad) * lower_cdf(m.gamma, a)
        } else {
            (1.0 - p_bad) + p_bad * upper_cdf(m.gamma, a)
        }
    };
    assert!(ks_distance(&xs, cdf_bad) > ks_critical(n));
}

#[test]
fn unbiased_with_closed_form_mse() {
    let d = 16;
    let n = 20_000;
    let mech = PrivUnitG::new(4.0, d).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    let dir: Vec<f64> = (0..d).map(|j| if j < 4 { 0.5 } else { 0.0 }).collect();
    let orth: Vec<f64> = (0..d)
        .map(|j| [0.5, -0.5, 0.5, -0.5].get(j).map_or(0.0, |x| *x))
        .collect();
    for &norm in &[1.0, 0.6, 0.0] {
        let v: Vec<f64> = dir.iter().map(|x| x * norm).collect();
        let zs: Vec<Vec<f64>> = (0..n)
            .map(|_| mech.privatize(&v, &mut rng).unwrap())
            .collect();
        let along: Vec<f64> = zs.iter().map(|z| dot(z, &dir)).collect();
        let across: Vec<f64> = zs.iter().map(|z| dot(z, &orth)).collect();
        let err: Vec<f64> = zs.iter().map(|z| dist2(z, &v)).collect();
        assert!(z_score(&along, norm) < 4.0, "‖v‖ = {norm}: along");
        assert!(z_score(&across, 0.0) < 4.0, "‖v‖ = {norm}: across");
        assert!(z_score(&err, mech.mse(norm)) < 4.0, "‖v‖ = {norm}: mse");
        // Power: a 10% wrong scale is caught by the same statistics.
        if norm > 0.0 {
            let bad: Vec<f64> = along.iter().map(|x| x * 1.1).collect();
            assert!(z_score(&bad, norm) > 4.0, "power along, ‖v‖ = {norm}");
        }
        let bad_err: Vec<f64> = zs
            .iter()
            .map(|z| dist2(&z.iter().map(|x| x * 1.1).collect::<Vec<_>>(), &v))
            .collect();
        assert!(
            z_score(&bad_err, mech.mse(norm)) > 4.0,
            "power mse, ‖v‖ = {norm}"
        );
    }
}

#[test]
fn density_ratio_never_exceeds_e_eps() {
    let d = 10;
    let eps = 3.0;
    let mech = PrivUnitG::new(eps, d).unwrap();
    // Mis-calibrated: the coin for 1.2ε with the same threshold.
    let mut bad = mech;
    bad.coin = Coin::odds_at_most(1.2 * eps - (mech.ln_1mq - mech.ln_q)).unwrap();
    bad.p = bad.coin.probability();
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    let (mut worst, mut worst_bad) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for i in 0..2000 {
        let u = dprp::mechanism::local::uniform_unit(d, &mut rng);
        let u2: Vec<f64> = if i % 2 == 0 {
            u.iter().map(|x| -x).collect()
        } else {
            dprp::mechanism::local::uniform_unit(d, &mut rng)
        };
        let z = mech.privatize_unit(&u, &mut rng).unwrap();
        worst = worst.max(mech.ln_density(&z, &u) - mech.ln_density(&z, &u2));
        let z = bad.privatize_unit(&u, &mut rng).unwrap();
        worst_bad = worst_bad.max(bad.ln_density(&z, &u) - bad.ln_density(&z, &u2));
    }
    assert!(worst <= eps + 1e-12, "{worst}");
    assert!(
        worst >= eps - 1e-9,
        "the worst case u' = −u attains ε: {worst}"
    );
    assert!(worst_bad > 1.1 * eps, "the check flags 1.2ε: {worst_bad}");
}

#[test]
fn histogram_test_passes_the_mechanism_and_flags_a_miscalibrated_one() {
    let d = 8;
    let eps = 2.0;
    let n = 40_000;
    let mech = PrivUnitG::new(eps, d).unwrap();
    let mut bad = mech;
    bad.coin = Coin::odds_at_most(1.2 * eps - (mech.ln_1mq - mech.ln_q)).unwrap();
    bad.p = bad.coin.probability();
    let u: Vec<f64> = (0..d).map(|j| if j == 0 { 1.0 } else { 0.0 }).collect();
    for (m, should_flag) in [(&mech, false), (&bad, true)] {
        let worst = histogram_worst_pair(&u, n, 6, eps, |v, rng| m.privatize_unit(v, rng).unwrap());
        assert_eq!(
            worst > HIST_Z,
            should_flag,
            "p = {}: statistic {worst}",
            m.p
        );
    }
}

#[test]
fn bad_inputs_are_errors() {
    let m = PrivUnitG::new(1.0, 3).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    assert!(m.privatize(&[1.0, 0.0], &mut rng).is_err());
    assert!(m.privatize(&[1.0, 0.5, 0.0], &mut rng).is_err());
    assert!(m.privatize(&[f64::NAN, 0.0, 0.0], &mut rng).is_err());
    assert!(m
        .privatize(&[0.0, f64::NEG_INFINITY, 0.0], &mut rng)
        .is_err());
    assert!(m.privatize_unit(&[0.5, 0.0, 0.0], &mut rng).is_err());
    assert!(m.privatize(&[0.0, 0.0, 0.0], &mut rng).is_ok());
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum()
}
