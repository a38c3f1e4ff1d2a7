//! PrivUnitInf (Bhowmick et al. 2018, Algorithm 2): the log-space binomial against exact values;
//! the privacy ratio, unbiasedness and MSE by enumerating all `2^d` outputs (and all `2^d` rounded
//! corners) at `d ≤ 10` — a mechanism spending 1.2ε is flagged; the sampler's output law (χ² over
//! all outputs) and the law of the agreement count against the exact pmf, with power checks; the
//! optimiser against brute force; finite constants at d = 10⁷, ε = 500.

use crate::ldp_common;

use dprp::mechanism::local::privunit_inf::{ln_binom_half, MIN_EPS0};
use dprp::mechanism::local::PrivUnitInf;
use ldp_common::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// `C(n, x)/2^n` in f64 by the multiplicative formula (exact to a few ulps for n ≤ 60).
fn binom_half(x: usize, n: usize) -> f64 {
    let x = x.min(n - x);
    let mut c = 1.0f64;
    for i in 0..x {
        c = c * (n - i) as f64 / (i + 1) as f64;
    }
    c / 2f64.powi(n as i32)
}

#[test]
fn log_binomial_is_exact() {
    for n in 1..=60usize {
        for x in 0..=n {
            let want = binom_half(x, n).ln();
            let got = ln_binom_half(x, n);
            assert!(
                (got - want).abs() < 1e-13 * want.abs().max(1.0),
                "n = {n}, x = {x}"
            );
        }
    }
    // Large n: the pmf sums to 1 (the central ±40σ carries all but e^{−3200} of the mass) and is
    // symmetric; both fail if Stirling remainders or the deviance are off.
    for &n in &[1001usize, 10_000_000] {
        let s = (n as f64).sqrt() * 20.0;
        let (lo, hi) = ((n as f64 / 2.0 - s) as usize, (n as f64 / 2.0 + s) as usize);
        let total: f64 = (lo..=hi.min(n)).map(|x| ln_binom_half(x, n).exp()).sum();
        assert!((total - 1.0).abs() < 1e-11, "n = {n}: {total}");
        assert_eq!(ln_binom_half(3, n), ln_binom_half(n - 3, n));
    }
    // Against lgamma at n = 1000 (lgamma is accurate to ~1e-13 there).
    for x in [0usize, 1, 100, 480, 500, 777, 1000] {
        let lg = libm::lgamma(1001.0)
            - libm::lgamma(x as f64 + 1.0)
            - libm::lgamma(1001.0 - x as f64)
            - 1000.0 * std::f64::consts::LN_2;
        assert!((ln_binom_half(x, 1000) - lg).abs() < 1e-10, "x = {x}");
    }
}

/// Exact output law `P(V = v | u)` for every `v ∈ {±1}^d` (bit `j` of the index set ↔ `v_j = +1`),
/// from `(p, L)` and binomial tails computed here independently of the library's log space.
fn output_pmf(m: &PrivUnitInf, u: &[f64]) -> Vec<f64> {
    let d = m.d;
    let n_cap: f64 = (m.threshold..=d).map(|l| binom_half(l, d)).sum();
    let (dens_cap, dens_comp) = (m.p / n_cap, (1.0 - m.p) / (1.0 - n_cap));
    let mut pmf = vec![0.0; 1 << d];
    for corner in 0u32..(1 << d) {
        let pc: f64 = (0..d)
            .map(|j| {
                let up = 0.5 * (1.0 + u[j]);
                if corner >> j & 1 == 1 {
                    up
                } else {
                    1.0 - up
                }
            })
            .product();
        if pc == 0.0 {
            continue;
        }
        for (v, slot) in pmf.iter_mut().enumerate() {
            let agree = d - ((v as u32 ^ corner).count_ones() as usize);
            let dens = if agree >= m.threshold {
                dens_cap
            } else {
                dens_comp
            };
            *slot += pc * dens / 2f64.powi(d as i32);
        }
    }
    pmf
}

fn max_ln_ratio(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x / y).ln().abs())
        .fold(0.0, f64::max)
}

fn sign_vec(v: usize, d: usize) -> Vec<f64> {
    (0..d)
        .map(|j| if v >> j & 1 == 1 { 1.0 } else { -1.0 })
        .collect()
}

#[test]
fn enumeration_privacy_unbiasedness_and_mse() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    for &d in &[2usize, 3, 4, 7, 10] {
        for &eps in &[0.1, 0.7, 2.0, 6.0] {
            let m = PrivUnitInf::new(eps, d).unwrap();
            let tag = format!("d = {d}, ε = {eps}, L = {}, p = {}", m.threshold, m.p);
            assert!((m.epsilon - eps).abs() < 1e-12 * eps.max(1.0), "{tag}");
            let n_cap: f64 = (m.threshold..=d).map(|l| binom_half(l, d)).sum();
            assert!((m.ln_p_cap - n_cap.ln()).abs() < 1e-12, "{tag}");
            // Pairs: a corner and its negation (the worst case), then random interior pairs.
            let corner: Vec<f64> = (0..d)
                .map(|j| if j % 3 == 0 { -1.0 } else { 1.0 })
                .collect();
            let neg: Vec<f64> = corner.iter().map(|x| -x).collect();
            let worst = max_ln_ratio(&output_pmf(&m, &corner), &output_pmf(&m, &neg));
            assert!(worst <= eps + 1e-10, "{tag}: corner pair {worst}");
            assert!(
                worst >= eps - 1e-9,
                "{tag}: the bound is attained ({worst})"
            );
            for _ in 0..3 {
                let a: Vec<f64> = (0..d).map(|_| rng.random_range(-1.0..=1.0)).collect();
                let b: Vec<f64> = (0..d).map(|_| rng.random_range(-1.0..=1.0)).collect();
                let pa = output_pmf(&m, &a);
                let r = max_ln_ratio(&pa, &output_pmf(&m, &b));
                assert!(r <= eps + 1e-10, "{tag}: random pair {r}");
                // Unbiasedness and the closed-form MSE, exactly.
                let mut mean = vec![0.0; d];
                let mut mse = 0.0;
                for (v, pv) in pa.iter().enumerate() {
                    let z: Vec<f64> = sign_vec(v, d).iter().map(|x| x / m.m).collect();
                    mean.iter_mut().zip(&z).for_each(|(s, zi)| *s += pv * zi);
                    mse += pv * z.iter().zip(&a).map(|(x, y)| (x - y).powi(2)).sum::<f64>();
                }
                let scale = 1.0 / m.m;
                assert!(
                    mean.iter()
                        .zip(&a)
                        .all(|(x, y)| (x - y).abs() < 1e-10 * scale),
                    "{tag}: E[Z] = {mean:?} vs {a:?}"
                );
                assert!(
                    (mse - m.mse(&a)).abs() < 1e-10 * mse,
                    "{tag}: {mse} vs {}",
                    m.mse(&a)
                );
            }
            // Power: the same cap with 0.2ε more on the coin spends 1.2ε; enumeration flags it.
            let over = PrivUnitInf::from_threshold(d, m.threshold, m.eps0 + 0.2 * eps).unwrap();
            let r = max_ln_ratio(&output_pmf(&over, &corner), &output_pmf(&over, &neg));
            assert!(
                r > eps + 0.19 * eps,
                "{tag}: 1.2ε mechanism not flagged ({r})"
            );
        }
    }
}

/// χ² critical value at upper tail 1e-4 (Wilson–Hilferty).
fn chi2_crit(df: f64) -> f64 {
    let z = 3.719;
    let a = 2.0 / (9.0 * df);
    df * (1.0 - a + z * a.sqrt()).powi(3)
}

/// χ² of observed counts against expected probabilities, merging cells with expectation < 5 into
/// one; returns (statistic, degrees of freedom).
fn chi2(counts: &[f64], probs: &[f64], n: f64) -> (f64, f64) {
    let (mut stat, mut cells, mut rest_o, mut rest_e) = (0.0, 0.0, 0.0, 0.0);
    for (o, p) in counts.iter().zip(probs) {
        let e = p * n;
        if e >= 5.0 {
            stat += (o - e).powi(2) / e;
            cells += 1.0;
        } else {
            rest_o += o;
            rest_e += e;
        }
    }
    if rest_e > 0.0 {
        stat += (rest_o - rest_e).powi(2) / rest_e.max(1e-300);
        cells += 1.0;
    }
    (stat, cells - 1.0)
}

#[test]
fn sampler_output_law_matches_the_exact_pmf() {
    let n = 200_000usize;
    for &(d, eps) in &[(4usize, 1.0), (7, 3.0)] {
        let m = PrivUnitInf::new(eps, d).unwrap();
        let u: Vec<f64> = (0..d).map(|j| 0.8 - 0.35 * j as f64).collect();
        let u: Vec<f64> = u.iter().map(|x| x.clamp(-1.0, 1.0)).collect();
        let pmf = output_pmf(&m, &u);
        let mut rng = ChaCha20Rng::seed_from_u64(d as u64);
        let mut counts = vec![0.0; 1 << d];
        for _ in 0..n {
            let z = m.privatize(&u, &mut rng).unwrap();
            let v: usize = z
                .iter()
                .enumerate()
                .map(|(j, x)| ((*x > 0.0) as usize) << j)
                .sum();
            counts[v] += 1.0;
        }
        let (stat, df) = chi2(&counts, &pmf, n as f64);
        assert!(stat < chi2_crit(df), "d = {d}: χ² = {stat} (df {df})");
        // Power: the pmf of a neighbouring mechanism (threshold one step up, or the input's
        // negation) is rejected by the same counts.
        let other = if m.threshold < d {
            PrivUnitInf::from_threshold(d, m.threshold + 1, m.eps0).unwrap()
        } else {
            PrivUnitInf::from_threshold(d, m.threshold - 1, m.eps0 + 0.5).unwrap()
        };
        let (s2, df2) = chi2(&counts, &output_pmf(&other, &u), n as f64);
        assert!(s2 > chi2_crit(df2), "d = {d}: power {s2}");
        let neg: Vec<f64> = u.iter().map(|x| -x).collect();
        let (s3, df3) = chi2(&counts, &output_pmf(&m, &neg), n as f64);
        assert!(s3 > chi2_crit(df3), "d = {d}: power (−u) {s3}");
    }
}

#[test]
fn agreement_count_law_in_each_branch() {
    let n = 100_000usize;
    for &(d, eps) in &[(30usize, 2.0), (51, 0.5), (2001, 8.0)] {
        let m = PrivUnitInf::new(eps, d).unwrap();
        let l = m.threshold;
        let pmf: Vec<f64> = (0..=d).map(|x| ln_binom_half(x, d).exp()).collect();
        let p_cap: f64 = pmf[l..].iter().sum();
        let mut rng = ChaCha20Rng::seed_from_u64(d as u64 + 7);
        for cap in [true, false] {
            let want: Vec<f64> = (0..=d)
                .map(|x| match (cap, x >= l) {
                    (true, true) => pmf[x] / p_cap,
                    (false, false) => pmf[x] / (1.0 - p_cap),
                    _ => 0.0,
                })
                .collect();
            let mut counts = vec![0.0; d + 1];
            for _ in 0..n {
                let x = m.sample_agreements(cap, &mut rng).unwrap();
                assert!((x >= l) == cap, "d = {d}: ℓ = {x} outside its branch");
                counts[x] += 1.0;
            }
            let (stat, df) = chi2(&counts, &want, n as f64);
            assert!(
                stat < chi2_crit(df),
                "d = {d}, cap = {cap}: χ² = {stat} (df {df})"
            );
            // Power: the law shifted by one agreement is rejected.
            let shifted: Vec<f64> = (0..=d)
                .map(|x| if x == 0 { 0.0 } else { want[x - 1] })
                .collect();
            let (s2, df2) = chi2(&counts, &shifted, n as f64);
            assert!(s2 > chi2_crit(df2), "d = {d}, cap = {cap}: power {s2}");
        }
    }
}

#[test]
fn unbiased_with_the_closed_form_mse() {
    let (d, eps, n) = (50usize, 2.0, 40_000usize);
    let m = PrivUnitInf::new(eps, d).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let u: Vec<f64> = (0..d)
        .map(|j| ((j * 37 % 23) as f64 / 11.0 - 1.0).clamp(-1.0, 1.0))
        .collect();
    let a = u.clone();
    let (mut along, mut err) = (vec![], vec![]);
    for _ in 0..n {
        let z = m.privatize(&u, &mut rng).unwrap();
        along.push(z.iter().zip(&a).map(|(x, y)| x * y).sum::<f64>());
        err.push(z.iter().zip(&u).map(|(x, y)| (x - y).powi(2)).sum::<f64>());
    }
    let target: f64 = u.iter().zip(&a).map(|(x, y)| x * y).sum();
    assert!(
        z_score(&along, target) < 4.0,
        "{:?} vs {target}",
        mean_se(&along)
    );
    let mse = m.mse(&u);
    assert!(z_score(&err, mse) < 4.0, "{:?} vs {mse}", mean_se(&err));
    // Power: a 10% wrong m (Z·1.1) moves both.
    let bad: Vec<f64> = along.iter().map(|x| 1.1 * x).collect();
    assert!(z_score(&bad, target) > 4.0);
    let u2: f64 = u.iter().map(|x| x * x).sum();
    let bad_err: Vec<f64> = err
        .iter()
        .map(|e| {
            // ‖1.1Z − u‖² = 1.21‖Z‖² − 2.2⟨Z,u⟩ + ‖u‖², with ⟨Z,u⟩ = (‖Z‖² + ‖u‖² − e)/2.
            let z2 = d as f64 / (m.m * m.m);
            let zu = 0.5 * (z2 + u2 - e);
            1.21 * z2 - 2.2 * zu + u2
        })
        .collect();
    assert!(z_score(&bad_err, mse) > 4.0);
}

#[test]
fn optimiser_matches_brute_force() {
    for &d in &[2usize, 3, 4, 5, 10, 11, 50, 51, 300] {
        for &eps in &[0.05, 0.5, 2.0, 8.0, 30.0] {
            let best = PrivUnitInf::new(eps, d).unwrap();
            assert!((best.eps_cap + best.eps0 - eps).abs() < 1e-12 * eps.max(1.0));
            for l in d / 2 + 1..=d {
                let probe = PrivUnitInf::from_threshold(d, l, 1.0).unwrap();
                let eps0 = eps - probe.eps_cap;
                if eps0 < MIN_EPS0 {
                    // beneath the exact coin's resolution: refused, and never the optimum
                    assert!(PrivUnitInf::from_threshold(d, l, eps0).is_err());
                    assert!(best.eps0 >= MIN_EPS0);
                    continue;
                }
                let other = PrivUnitInf::from_threshold(d, l, eps0).unwrap();
                assert!(
                    other.m <= best.m * (1.0 + 1e-12),
                    "d = {d}, ε = {eps}: L = {l} gives m = {} > {} (L = {})",
                    other.m,
                    best.m,
                    best.threshold
                );
            }
        }
    }
    // κ ↔ L and the paper's parametrisation.
    let m = PrivUnitInf::from_kappa(10, 0, 0.0).unwrap();
    assert_eq!((m.threshold, m.kappa), (6, 0));
    let m = PrivUnitInf::from_kappa(11, 0, 1.0).unwrap();
    assert_eq!((m.threshold, m.kappa, m.eps_cap), (6, 0, 0.0));
    let m = PrivUnitInf::from_kappa(11, 3, 0.0).unwrap();
    assert_eq!(m.threshold, 8); // ⌈(11 + 3 + 1)/2⌉
}

#[test]
fn huge_dimension_and_epsilon() {
    for &(d, eps) in &[
        (10_000_000usize, 500.0),
        (10_000_000, 1.0),
        (3_274_634, 50.0),
    ] {
        let m = PrivUnitInf::new(eps, d).unwrap();
        let tag = format!("d = {d}, ε = {eps}: {m:?}");
        assert!((m.epsilon - eps).abs() < 1e-9 * eps, "{tag}");
        assert!(m.m.is_finite() && m.m > 0.0 && m.m <= 1.0, "{tag}");
        assert!(m.kappa_plus.is_finite() && m.kappa_minus < 0.0, "{tag}");
        assert!(m.threshold > d / 2 && m.threshold <= d, "{tag}");
        let u = vec![0.25; d];
        assert!(m.mse(&u).is_finite() && m.mse(&u) > 0.0);
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let z = m.privatize(&u, &mut rng).unwrap();
        let z2: f64 = z.iter().map(|x| x * x).sum();
        assert!((z2 - d as f64 / (m.m * m.m)).abs() < 1e-9 * z2, "{tag}");
        let l = m.sample_agreements(true, &mut rng).unwrap();
        assert!(l >= m.threshold);
    }
}

#[test]
fn bad_parameters_and_inputs_are_errors() {
    for eps in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(PrivUnitInf::new(eps, 10).is_err());
    }
    assert!(PrivUnitInf::new(1.0, 1).is_err());
    assert!(PrivUnitInf::from_kappa(10, 10, 0.0).is_err());
    assert!(PrivUnitInf::from_threshold(10, 5, 0.0).is_err());
    assert!(PrivUnitInf::from_threshold(10, 11, 0.0).is_err());
    let m = PrivUnitInf::from_threshold(10, 8, 0.0).unwrap();
    assert!(PrivUnitInf::from_threshold(10, 8, -m.eps_cap).is_err());
    assert!(PrivUnitInf::from_threshold(10, 8, f64::NAN).is_err());
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    assert!(m.privatize(&[0.5; 10], &mut rng).is_ok());
    assert!(m.privatize(&[0.5; 9], &mut rng).is_err());
    let mut bad = [0.5; 10];
    bad[3] = 1.5;
    assert!(m.privatize(&bad, &mut rng).is_err());
    bad[3] = f64::NAN;
    assert!(m.privatize(&bad, &mut rng).is_err());
}
