//! PrivUnit2 and the Duchi et al. baseline: reference values (MECHANISMS-LDP.md §C), closed forms,
//! calibration at d = 10⁷ / ε = 500, the cap sampler against the exact conditional law,
//! unbiasedness/MSE, and privacy checks that can fail.

use crate::ldp_common;

use dprp::mechanism::local::privunit2::{gamma_14a, gamma_14b, hemisphere_mean};
use dprp::mechanism::local::{PrivUnit2, PrivUnitG};
use dprp::privacy::special::{ln_1m_exp, ln_sym_beta_lower};
use ldp_common::*;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn logit(p: f64) -> f64 {
    (p / (1.0 - p)).ln()
}

#[test]
fn m_check_values_of_eq_13() {
    for &(d, gamma, p, m) in &[
        (5, 0.3, 0.7, 0.320908),
        (10, 0.2, 0.9, 0.333917),
        (20, 0.4, 0.6, 0.278590),
    ] {
        let mech = PrivUnit2::from_gamma(d, gamma, logit(p)).unwrap();
        assert!((mech.m - m).abs() < 0.5e-6, "d = {d}: m = {}", mech.m);
    }
}

#[test]
fn cap_probabilities_match_closed_forms() {
    // d = 2: U₁ = cos θ, θ uniform: P(U₁ ≥ γ) = acos(γ)/π, E[U₁ | U₁ ≥ γ] = √(1−γ²)/acos(γ).
    // d = 3 (Archimedes): U₁ uniform on [−1, 1]: P = (1−γ)/2, E[U₁ | U₁ ≥ γ] = (1+γ)/2.
    for &g in &[0.0, 0.1, 0.5, 0.9, 0.999] {
        let m2 = PrivUnit2::from_gamma(2, g, 1.0).unwrap();
        let a: f64 = f64::acos(g);
        assert!(
            (m2.ln_p_cap - (a / std::f64::consts::PI).ln()).abs() < 1e-12,
            "γ = {g}"
        );
        assert!(
            (m2.gamma_plus - (1.0 - g * g).sqrt() / a).abs() < 1e-12,
            "γ = {g}"
        );
        let m3 = PrivUnit2::from_gamma(3, g, 1.0).unwrap();
        assert!(
            (m3.ln_p_cap - (0.5 * (1.0 - g)).ln()).abs() < 1e-12,
            "γ = {g}"
        );
        assert!((m3.gamma_plus - 0.5 * (1.0 + g)).abs() < 1e-12, "γ = {g}");
    }
}

#[test]
fn duchi_constant_is_half_the_printed_one() {
    for &d in &[2usize, 3, 10, 1000, 10_000_000] {
        for &eps in &[0.5, 2.0, 8.0] {
            let m = PrivUnit2::duchi(eps, d).unwrap();
            // 1/m = ((e^ε+1)/(e^ε−1))·√π·Γ((d+1)/2)/Γ(d/2), the closed form through lgamma.
            let ln_ratio = libm::lgamma((d as f64 + 1.0) / 2.0) - libm::lgamma(d as f64 / 2.0);
            let inv_m = 1.0 / (0.5 * eps).tanh() * std::f64::consts::PI.sqrt() * ln_ratio.exp();
            let rel = (1.0 / m.m - inv_m).abs() / inv_m;
            // lgamma differences lose ~1e-9 at d = 10⁷; the continued fraction does not.
            assert!(rel < 1e-8, "d = {d}, ε = {eps}: {rel}");
            assert!((m.gamma_plus - hemisphere_mean(d)).abs() < 1e-12 * m.gamma_plus.max(1e-3));
            assert!((m.epsilon - eps).abs() < 1e-12 * eps);
        }
    }
    // d = 2: E[U₁ | U₁ ≥ 0] = 2/π.
    assert!((hemisphere_mean(2) - 2.0 / std::f64::consts::PI).abs() < 1e-15);
}

#[test]
fn sufficient_condition_14b_reference_and_validity() {
    let g = gamma_14b(495.0, 3_274_634).unwrap();
    assert!((g - 0.017294).abs() < 0.5e-6, "γ = {g}");
    // (14) is a sufficient condition: the exact cap cost at the paper's γ never exceeds 0.99ε,
    // and the variance-optimal split is never worse than the paper's.
    for &d in &[10usize, 100, 10_000, 1_000_000, 3_274_634] {
        for &eps in &[1.0, 4.0, 16.0, 100.0, 495.0] {
            let paper = PrivUnit2::paper(eps, d).unwrap();
            assert!(
                paper.eps_cap <= 0.99 * eps * (1.0 + 1e-12),
                "d = {d}, ε = {eps}"
            );
            assert!(paper.epsilon <= eps * (1.0 + 1e-12));
            let best = PrivUnit2::new(eps, d).unwrap();
            assert!(best.m >= paper.m * (1.0 - 1e-9), "d = {d}, ε = {eps}");
            // (14a) alone, where it is the binding condition, is also valid.
            let ga = gamma_14a(0.99 * eps, d);
            if ga < 1.0 {
                let a = PrivUnit2::from_gamma(d, ga, 0.0).unwrap();
                assert!(
                    a.eps_cap <= 0.99 * eps * (1.0 + 1e-12),
                    "(14a) d = {d}, ε = {eps}"
                );
            }
        }
    }
}

#[test]
fn optimal_split_spends_exactly_epsilon_and_is_a_maximum() {
    for &d in &[2usize, 3, 16, 1000, 100_000] {
        for &eps in &[0.5, 2.0, 8.0, 50.0] {
            let best = PrivUnit2::new(eps, d).unwrap();
            assert!(
                (best.epsilon - eps).abs() < 1e-9 * eps,
                "d = {d}, ε = {eps}"
            );
            assert!((best.eps_cap + best.eps0 - best.epsilon).abs() < 1e-12 * eps);
            // First-order condition (derived in privunit2.rs): at an interior optimum m = γ. A
            // wrong objective (e.g. a cap cost off by a factor) would break this identity.
            assert!(
                (best.m - best.gamma).abs() < 1e-6 * best.gamma,
                "d = {d}, ε = {eps}: m = {}, γ = {}",
                best.m,
                best.gamma
            );
            // Move the cap either way (budget rebalanced to the coin): m does not improve.
            for f in [0.97, 1.03] {
                let x = (best.cap_x * f).min(0.5);
                let (lp, _) = ln_sym_beta_lower(x, (d as f64 - 1.0) / 2.0).unwrap();
                let cap_cost = ln_1m_exp(lp) - lp;
                if cap_cost > eps {
                    continue;
                }
                let alt = PrivUnit2::from_cap_x(d, x, eps - cap_cost).unwrap();
                assert!(
                    alt.m <= best.m * (1.0 + 1e-9),
                    "d = {d}, ε = {eps}, f = {f}"
                );
            }
        }
    }
}

#[test]
fn huge_dimension_and_epsilon() {
    for &(d, eps) in &[
        (10_000_000usize, 500.0),
        (10_000_000, 1.0),
        (2, 500.0),
        (3, 500.0),
    ] {
        let m = PrivUnit2::new(eps, d).unwrap();
        for v in [
            m.m,
            m.gamma,
            m.cap_x,
            m.p,
            m.eps_cap,
            m.eps0,
            m.ln_p_cap,
            m.gamma_plus,
        ] {
            assert!(v.is_finite(), "d = {d}, ε = {eps}: {m:?}");
        }
        assert!(m.epsilon <= eps * (1.0 + 1e-12) && m.epsilon >= eps * (1.0 - 1e-9));
        assert!(m.m > 0.0 && m.m <= 1.0 && m.mse_unit() >= 0.0, "{m:?}");
    }
    // For large d, √d·U₁ → N(0, 1), so PrivUnit2 approaches PrivUnitG: √d·m·scale_G → 1. An
    // independent check of the constants at d = 10⁷ (the correction is O(γ_G²/d) ≈ 1e-4).
    for &eps in &[1.0, 10.0, 500.0] {
        let d = 10_000_000;
        let pu = PrivUnit2::new(eps, d).unwrap();
        let g = PrivUnitG::new(eps, d).unwrap();
        let r = (d as f64).sqrt() * pu.m * g.scale;
        assert!((r - 1.0).abs() < 2e-3, "ε = {eps}: {r}");
    }
}

/// Exact CDF of `T = ⟨V, u⟩` under PrivUnit2 (mixture of the conditional cap and complement laws).
fn cos_cdf(m: &PrivUnit2, t: f64) -> f64 {
    let alpha = (m.d as f64 - 1.0) / 2.0;
    // ln P(U₁ ≥ t) for t ∈ [−1, 1].
    let ln_upper = |t: f64| -> f64 {
        if t >= 1.0 {
            return f64::NEG_INFINITY;
        }
        if t <= -1.0 {
            return 0.0;
        }
        if t >= 0.0 {
            ln_sym_beta_lower(0.5 * (1.0 - t), alpha).unwrap().0
        } else {
            ln_1m_exp(ln_sym_beta_lower(0.5 * (1.0 + t), alpha).unwrap().0)
        }
    };
    if 0.5 * (1.0 - t) > m.cap_x {
        // Below the cap: (1−p)·P(U₁ ≤ t)/P₋.
        (1.0 - m.p) * (ln_1m_exp(ln_upper(t)) - m.ln_p_comp).exp()
    } else {
        (1.0 - m.p) + m.p * (1.0 - (ln_upper(t) - m.ln_p_cap).exp())
    }
}

#[test]
fn cap_sampler_matches_the_exact_conditional_law() {
    let n = 20_000;
    for &(d, eps) in &[
        (2usize, 3.0),
        (3, 1.0),
        (50, 4.0),
        (1_000_000, 8.0),
        (10_000_000, 500.0),
    ] {
        let m = PrivUnit2::new(eps, d).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(d as u64);
        let t: Vec<f64> = (0..n).map(|_| m.sample_cos(&mut rng).unwrap().0).collect();
        let ks = ks_distance(&t, |x| cos_cdf(&m, x));
        assert!(ks < ks_critical(n), "d = {d}, ε = {eps}: KS = {ks}");
        // Power: the same samples against the law of a cap 10% wider (same p) are rejected.
        let wrong = PrivUnit2::from_cap_x(d, (m.cap_x * 1.1).min(0.5), m.eps0).unwrap();
        let ks_bad = ks_distance(&t, |x| cos_cdf(&wrong, x));
        assert!(
            ks_bad > ks_critical(n),
            "d = {d}, ε = {eps}: power KS = {ks_bad}"
        );
    }
}

#[test]
fn unbiased_with_closed_form_mse_on_sphere_and_in_ball() {
    let d = 16;
    let n = 20_000;
    let mech = PrivUnit2::new(4.0, d).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let dir: Vec<f64> = (0..d)
        .map(|j| if j < 2 { 0.5f64.sqrt() } else { 0.0 })
        .collect();
    let orth: Vec<f64> = (0..d)
        .map(|j| [0.5f64.sqrt(), -(0.5f64.sqrt())].get(j).map_or(0.0, |x| *x))
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
        for z in &zs[..10] {
            assert!((norm2(z) - 1.0 / mech.m).abs() < 1e-9 / mech.m);
        }
        // Power: a 10% wrong debiasing constant is caught by the same statistics.
        if norm > 0.0 {
            let bad: Vec<f64> = along.iter().map(|x| x / 1.1).collect();
            assert!(z_score(&bad, norm) > 4.0, "power along, ‖v‖ = {norm}");
        }
        let bad_err: Vec<f64> = zs
            .iter()
            .map(|z| dist2(&scaled(z, 1.0 / 1.1), &v))
            .collect();
        assert!(
            z_score(&bad_err, mech.mse(norm)) > 4.0,
            "power mse, ‖v‖ = {norm}"
        );
    }
}

#[test]
fn density_ratio_never_exceeds_e_eps() {
    let d = 12;
    let eps = 2.0;
    let mech = PrivUnit2::new(eps, d).unwrap();
    // Mis-calibrated: the coin computed for 1.2ε on top of the same cap.
    let bad = PrivUnit2::from_cap_x(d, mech.cap_x, 1.2 * eps - mech.eps_cap).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let (mut worst, mut worst_bad) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for i in 0..2000 {
        let u = dprp::mechanism::local::uniform_unit(d, &mut rng);
        let u2 = if i % 2 == 0 {
            u.iter().map(|x| -x).collect()
        } else {
            dprp::mechanism::local::uniform_unit(d, &mut rng)
        };
        for m in [&mech, &bad] {
            let z = m.privatize_unit(&u, &mut rng).unwrap();
            let v = scaled(&z, m.m);
            let l = m.ln_density(&v, &u) - m.ln_density(&v, &u2);
            if std::ptr::eq(m, &mech) {
                worst = worst.max(l);
            } else {
                worst_bad = worst_bad.max(l);
            }
        }
    }
    assert!(worst <= eps + 1e-12, "{worst}");
    assert!(
        worst >= eps - 1e-9,
        "the worst case u' = −u attains ε: {worst}"
    );
    assert!(
        worst_bad > eps + 0.1 * eps,
        "the check flags 1.2ε: {worst_bad}"
    );
}

#[test]
fn histogram_test_passes_the_mechanism_and_flags_a_miscalibrated_one() {
    let d = 8;
    let eps = 2.0;
    let n = 40_000;
    let mech = PrivUnit2::new(eps, d).unwrap();
    let bad = PrivUnit2::from_cap_x(d, mech.cap_x, 1.2 * eps - mech.eps_cap).unwrap();
    let u: Vec<f64> = (0..d).map(|j| if j == 0 { 1.0 } else { 0.0 }).collect();
    for (m, should_flag) in [(&mech, false), (&bad, true)] {
        let worst = histogram_worst_pair(&u, n, 5, eps, |v, rng| m.privatize_unit(v, rng).unwrap());
        assert_eq!(
            worst > HIST_Z,
            should_flag,
            "p = {}: statistic {worst}",
            m.p
        );
    }
}

#[test]
fn bad_parameters_and_inputs_are_errors() {
    for eps in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert!(PrivUnit2::new(eps, 10).is_err());
        assert!(PrivUnit2::duchi(eps, 10).is_err());
        assert!(PrivUnit2::paper(eps, 10).is_err());
    }
    assert!(PrivUnit2::new(1.0, 1).is_err());
    assert!(PrivUnit2::new(1.0, 0).is_err());
    assert!(PrivUnit2::from_gamma(10, 1.0, 0.0).is_err());
    assert!(PrivUnit2::from_gamma(10, -0.1, 0.0).is_err());
    assert!(PrivUnit2::from_gamma(10, f64::NAN, 0.0).is_err());
    assert!(PrivUnit2::from_gamma(10, 0.1, -1.0).is_err());
    let m = PrivUnit2::new(1.0, 3).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    assert!(m.privatize(&[1.0, 0.0], &mut rng).is_err());
    assert!(m.privatize(&[1.0, 0.5, 0.0], &mut rng).is_err());
    assert!(m.privatize(&[f64::NAN, 0.0, 0.0], &mut rng).is_err());
    assert!(m.privatize(&[f64::INFINITY, 0.0, 0.0], &mut rng).is_err());
    assert!(m.privatize_unit(&[0.5, 0.0, 0.0], &mut rng).is_err());
    assert!(m.privatize(&[0.5, 0.0, 0.0], &mut rng).is_ok());
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
fn norm2(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}
fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum()
}
fn scaled(a: &[f64], s: f64) -> Vec<f64> {
    a.iter().map(|x| x * s).collect()
}

/// The cap coin is exact and keeps the complement reachable at any finite budget: at ε₀ = 60,
/// σ(ε₀) is 1.0 in `f64`, and the old `uniform_f64 < p` never drew the complement (two inputs
/// with disjoint caps then had an unbounded loss). The coin's tails have probability
/// `⌈2¹²⁸/(1+e^{60})⌉/2¹²⁸`: a first word tying with the top half of `T` and a second word at the
/// top select the complement; a first word below it, the cap. PrivUnitG's branch coin likewise.
#[test]
fn the_complement_stays_reachable_at_huge_coin_budgets() {
    assert_eq!(1.0 / (1.0 + (-60f64).exp()), 1.0);
    let m = PrivUnit2::from_cap_x(16, 0.05, 60.0).unwrap();
    let tails = m.coin.complement();
    assert!(tails >= (-60f64).exp() / (1.0 + (-60f64).exp()) && tails < 1.0001 * (-60f64).exp());
    let top = (m.coin.threshold() >> 64) as u64;
    assert_eq!(top, u64::MAX);
    let (t, _) = m
        .sample_cos(&mut Scripted::new(&[top, u64::MAX], 1))
        .unwrap();
    assert!(
        t < m.gamma,
        "the top words must select the complement: ⟨V,u⟩ = {t}"
    );
    let (t, _) = m.sample_cos(&mut Scripted::new(&[top - 1], 1)).unwrap();
    assert!(t >= m.gamma, "a lower word selects the cap: ⟨V,u⟩ = {t}");

    let g = PrivUnitG::from_split(80.0, 16, 70.0).unwrap();
    let top = (g.coin.threshold() >> 64) as u64;
    assert_eq!(top, u64::MAX);
    assert!(g.sample_alpha(&mut Scripted::new(&[top, u64::MAX], 2)) < g.gamma);
    assert!(g.sample_alpha(&mut Scripted::new(&[top - 1], 2)) >= g.gamma);
}

/// The debiasing constant is computed for the coin actually tossed: `m = γ₊·(p − (1−p)e^{−ε_cap})`
/// with `p = T/2⁶⁴` (and PrivUnitG's `scale` with the coin's `p`), and the odds of `p` never
/// exceed `e^{ε₀}` in floating point either.
#[test]
fn constants_use_the_exact_coin() {
    for &(d, x, e0) in &[(5usize, 0.35, 0.8), (64, 0.1, 2.0), (1000, 0.45, 0.0)] {
        let m = PrivUnit2::from_cap_x(d, x, e0).unwrap();
        let p = m.coin.probability();
        assert_eq!(m.p, p);
        assert!(p.ln() - m.coin.ln_complement() <= e0 + 1e-15, "d {d}");
        let want = m.gamma_plus * (p - (m.coin.ln_complement() - m.eps_cap).exp());
        assert!(
            (m.m - want).abs() <= 1e-15 * want,
            "d {d}: m {} vs {want}",
            m.m
        );
    }
    let g = PrivUnitG::new(3.0, 100).unwrap();
    assert_eq!(g.p, g.coin.probability());
    assert!((g.epsilon_spent() - 3.0).abs() < 1e-9);
}
