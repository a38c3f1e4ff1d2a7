//! The exact samplers (`dprp::privacy::exact`) against their exact laws: χ² goodness of fit
//! against reference pmfs computed independently in f64 (fixed seeds, critical values from the
//! χ² law at α = 1e-5), each with a power check — the same test, same n, predicted power ≥ 0.999
//! and an actual rejection of a sampler whose parameter is off by 5% (σ, scale, e^{−γ}) or by 2%
//! (binomial p) — plus exact identities and out-of-range parameters.

use crate::exact_common;

use dprp::privacy::exact::{
    bernoulli, binomial_half, fill_binomial_half, fill_discrete_gaussian, uniform_below, Bernoulli,
    BernoulliExpNeg, Binomial, DiscreteGaussian, DiscreteLaplace, Geometric, Rational,
};
use exact_common::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

fn rat(n: u128, d: u128) -> Rational {
    Rational::new(n, d).unwrap()
}

/// `r·n/d` exactly (test parameters are small).
fn scale(r: Rational, n: u128, d: u128) -> Rational {
    rat(r.num() * n, r.den() * d)
}

#[test]
fn chi2_helpers_match_tables() {
    // Textbook quantiles of the χ² law.
    for (k, alpha, x) in [
        (1.0, 0.05, 3.841_459),
        (10.0, 0.01, 23.209_25),
        (100.0, 0.001, 149.449_3),
        (2.0, 1e-5, 23.025_85), // χ²_2 is exponential: −2 ln α
    ] {
        let c = chi2_critical(k, alpha);
        assert!((c - x).abs() < 1e-4 * x, "χ²_{k} at {alpha}: {c} vs {x}");
    }
    assert!((norm_cdf(1.959_964) - 0.975).abs() < 1e-6);
}

#[test]
fn reference_normaliser_of_the_discrete_gaussian() {
    // σ = 1: Σ e^{−y²/2} = √(2π)(1 + 2e^{−2π²} + …) = 2.506 628 288 1…
    let z1 = dgauss_normaliser(1.0);
    assert!((z1 - 2.506_628_288_1).abs() < 1e-9, "{z1}");
    for s2 in [0.25, 1.0, 10.89, 100.0, 1e6] {
        let (a, b) = (dgauss_normaliser(s2), dgauss_normaliser_poisson(s2));
        assert!((a / b - 1.0).abs() < 1e-12, "σ² = {s2}: {a} vs {b}");
    }
    // σ = ½: 1 + 2e^{−2} + 2e^{−8} + 2e^{−18} + …
    let z = 1.0 + 2.0 * ((-2f64).exp() + (-8f64).exp() + (-18f64).exp() + (-32f64).exp());
    assert!((dgauss_normaliser(0.25) - z).abs() < 1e-15);
}

/// Draw `n` discrete Gaussians with σ² and test them; then the sampler with σ off by 5%.
fn check_dgauss(sigma2: Rational, n: usize, seed: u64) {
    let s2 = sigma2.to_f64();
    let (pmf, lo, hi) = dgauss(s2);
    let gof = Gof::new(&format!("N_Z(0, {s2})"), &pmf, lo, hi, (0.0, 0.0), n);
    let mut x = vec![0i64; n];
    fill_discrete_gaussian(&mut rng(seed), sigma2, &mut x).unwrap();
    gof.accept(&x);
    // Power: σ' = 1.05·σ, i.e. σ'² = σ²·441/400.
    let alt = scale(sigma2, 441, 400);
    let (alt_pmf, _, _) = dgauss(alt.to_f64());
    DiscreteGaussian::new(alt)
        .unwrap()
        .fill(&mut rng(seed + 1), &mut x);
    gof.reject("σ × 1.05", &alt_pmf, &x);
}

#[test]
fn discrete_gaussian_small_sigma() {
    check_dgauss(rat(1, 4), 400_000, 1); // σ = 0.5 < 1 (t = 1)
    check_dgauss(rat(16, 25), 200_000, 3); // σ = 0.8
    check_dgauss(Rational::ONE, 200_000, 5); // σ = 1 (t = 2)
}

#[test]
fn discrete_gaussian_sigma_10_and_non_integer() {
    check_dgauss(Rational::integer(100), 200_000, 7); // σ = 10
    check_dgauss(Rational::from_f64(10.89).unwrap(), 200_000, 9); // σ = 3.3, f64 denominator
    check_dgauss(rat(1, 3), 200_000, 11); // σ² = 1/3, not dyadic
}

/// The σ of the full-round target's noise (`σ/γ` of the sketch-DDG plan in `benches/round.rs`,
/// ≈ 116.6, so `t = 117` and the `exp(−U/117)` trials go through `ExpFrac`'s tables), with
/// the 40-bit denominator the DDG encoder hands the sampler.
#[test]
fn discrete_gaussian_round_sigma() {
    let s = 1.308425e-1 / 1.121686e-3;
    check_dgauss(Rational::from_f64_up(s * s, 40).unwrap(), 1_000_000, 15);
}

#[test]
fn discrete_gaussian_sigma_1000() {
    check_dgauss(Rational::integer(1_000_000), 1_000_000, 13);
}

#[test]
fn discrete_gaussian_tiny_sigma_is_zero() {
    // σ = 0.1: P(X ≠ 0) = 2e^{−50}/Z ≈ 3.9e−22, so 10^5 draws are all 0 (a wrong t, sign or
    // acceptance would show up as non-zeros).
    let g = DiscreteGaussian::new(rat(1, 100)).unwrap();
    let mut x = vec![1i64; 100_000];
    g.fill(&mut rng(15), &mut x);
    assert!(x.iter().all(|&v| v == 0));
}

#[test]
fn discrete_gaussian_reference_variance() {
    // The sample variance at σ = 10 against the exact variance Σ y² p(y) (< σ² = 100), with a
    // tolerance of 5 standard errors from the fourth moment; σ off by 5% (variance +10%) is far
    // outside it.
    let s2 = 100.0;
    let (pmf, lo, hi) = dgauss(s2);
    let var: f64 = (lo..=hi).map(|y| (y * y) as f64 * pmf(y)).sum();
    let m4: f64 = (lo..=hi).map(|y| ((y * y) as f64).powi(2) * pmf(y)).sum();
    assert!(var < s2 && var > s2 - 1e-6, "{var}");
    let n = 400_000;
    let se = ((m4 - var * var) / n as f64).sqrt();
    let sample_var = |sigma2: Rational, seed| {
        let mut x = vec![0i64; n];
        fill_discrete_gaussian(&mut rng(seed), sigma2, &mut x).unwrap();
        x.iter().map(|&v| (v * v) as f64).sum::<f64>() / n as f64
    };
    let v = sample_var(Rational::integer(100), 17);
    assert!((v - var).abs() < 5.0 * se, "{v} vs {var} ± {se}");
    let v_alt = sample_var(rat(441, 4), 18);
    assert!(
        (v_alt - var).abs() > 5.0 * se,
        "σ × 1.05 not caught: {v_alt}"
    );
}

fn check_laplace(tau: Rational, n: usize, seed: u64) {
    let t = tau.to_f64();
    let (pmf, lo, hi, tail) = dlaplace(t);
    let gof = Gof::new(&format!("DLap({tau})"), &pmf, lo, hi, (tail, tail), n);
    let mut x = vec![0i64; n];
    DiscreteLaplace::new(tau)
        .unwrap()
        .fill(&mut rng(seed), &mut x);
    gof.accept(&x);
    let alt = scale(tau, 21, 20);
    let (alt_pmf, _, _, _) = dlaplace(alt.to_f64());
    DiscreteLaplace::new(alt)
        .unwrap()
        .fill(&mut rng(seed + 1), &mut x);
    gof.reject("scale × 1.05", &alt_pmf, &x);
}

#[test]
fn discrete_laplace_matches_pmf() {
    check_laplace(rat(1, 2), 300_000, 21); // scale ½ (t = 1, s = 2: Y = ⌊X/2⌋)
    check_laplace(Rational::ONE, 200_000, 23);
    check_laplace(rat(7, 3), 200_000, 25);
    check_laplace(Rational::integer(50), 400_000, 27);
}

#[test]
fn geometric_matches_pmf() {
    for (tau, n, seed) in [
        (rat(10, 3), 200_000, 31),
        (Rational::integer(20), 300_000, 33),
    ] {
        let (pmf, lo, hi, tail) = geometric(tau.to_f64());
        let gof = Gof::new(&format!("Geom({tau})"), &pmf, lo, hi, (0.0, tail), n);
        let g = Geometric::new(tau).unwrap();
        let mut r = rng(seed);
        let x: Vec<i64> = (0..n).map(|_| g.sample(&mut r) as i64).collect();
        gof.accept(&x);
        let alt = scale(tau, 21, 20);
        let (alt_pmf, _, _, _) = geometric(alt.to_f64());
        let g = Geometric::new(alt).unwrap();
        let x: Vec<i64> = (0..n).map(|_| g.sample(&mut r) as i64).collect();
        gof.reject("scale × 1.05", &alt_pmf, &x);
    }
}

/// A 0/1 law as a pmf on {0, 1}.
fn two_point(p: f64) -> impl Fn(i64) -> f64 {
    move |x| match x {
        0 => 1.0 - p,
        1 => p,
        _ => 0.0,
    }
}

#[test]
fn bernoulli_exp_neg_matches() {
    // γ < 1, = 1 and > 1 (integer and fractional parts); the alternative is γ + 1/20, whose
    // success probability is e^{−1/20} = 0.951 times the right one (≈ 5% off).
    let n = 1_000_000;
    for (gamma, seed) in [
        (rat(1, 2), 41),
        (rat(1, 3), 43),
        (Rational::ONE, 45),
        (rat(5, 2), 47),
        (Rational::integer(2), 49),
        // γ ≈ 2.5 with 121-bit numbers: the overflow-free long division near 2^128.
        (rat((5 << 120) + 1, 1 << 121), 52),
    ] {
        let p = (-gamma.to_f64()).exp();
        let gof = Gof::new(
            &format!("Bern(e^-{gamma})"),
            &two_point(p),
            0,
            1,
            (0.0, 0.0),
            n,
        );
        let b = BernoulliExpNeg::new(gamma);
        let mut r = rng(seed);
        let x: Vec<i64> = (0..n).map(|_| b.sample(&mut r) as i64).collect();
        gof.accept(&x);
        let alt = rat(gamma.num() * 20 + gamma.den(), gamma.den() * 20);
        let b = BernoulliExpNeg::new(alt);
        let x: Vec<i64> = (0..n).map(|_| b.sample(&mut r) as i64).collect();
        gof.reject("γ + 1/20", &two_point((-alt.to_f64()).exp()), &x);
    }
    // γ = 0 is certain; a huge γ practically never succeeds (e^{−1000}).
    let mut r = rng(50);
    assert!((0..1000).all(|_| BernoulliExpNeg::new(Rational::ZERO).sample(&mut r)));
    assert!((0..1000).all(|_| !BernoulliExpNeg::new(Rational::integer(1000)).sample(&mut r)));
}

#[test]
fn bernoulli_rational_matches() {
    // p = 1/3 (64-bit denominator) and p with a 100-bit denominator (the 128-bit path).
    let n = 400_000;
    let big = (1u128 << 100) + 12345;
    for (p, seed) in [(rat(1, 3), 51), (rat(big / 5 * 2, big), 53)] {
        let pf = p.to_f64();
        let gof = Gof::new(
            &format!("Bern({pf:.6})"),
            &two_point(pf),
            0,
            1,
            (0.0, 0.0),
            n,
        );
        let b = Bernoulli::new(p).unwrap();
        let mut r = rng(seed);
        let x: Vec<i64> = (0..n).map(|_| b.sample(&mut r) as i64).collect();
        gof.accept(&x);
        let alt = scale(p, 51, 50); // off by 2%
        let x: Vec<i64> = (0..n)
            .map(|_| bernoulli(&mut r, alt).unwrap() as i64)
            .collect();
        gof.reject("p × 1.02", &two_point(alt.to_f64()), &x);
    }
}

#[test]
fn uniform_below_has_no_modulo_bias() {
    // n = 3·2^62: `word % n` gives [0, 2^62) twice the mass of the rest (2^64 mod n = 2^62),
    // which the χ² on three equal thirds catches; Lemire's method must pass it. The same at
    // n = 3·2^30 for the 32-bit path (bounds up to 2^32 draw 32 bits: `u32 % n` is caught). Also
    // a small n and one above 2^64.
    let n_draws = 300_000;
    let uniform = |k: i64| {
        move |x: i64| {
            if (0..k).contains(&x) {
                1.0 / k as f64
            } else {
                0.0
            }
        }
    };
    for (bound, k, seed) in [
        (3u128 << 62, 3i64, 61),
        (3u128 << 30, 3, 62),
        (7, 7, 63),
        ((5u128 << 70) + 1, 10, 65),
    ] {
        let pmf = uniform(k);
        let gof = Gof::new(
            &format!("U[0, {bound})"),
            &pmf,
            0,
            k - 1,
            (0.0, 0.0),
            n_draws,
        );
        let mut r = rng(seed);
        // Bin v into k equal parts (for bound 3·2^62 they are exact thirds).
        let bin = |v: u128| -> i64 {
            let b = (v / bound.div_ceil(k as u128)) as i64;
            assert!(b < k && v < bound);
            b
        };
        let x: Vec<i64> = (0..n_draws)
            .map(|_| bin(uniform_below(&mut r, bound).unwrap()))
            .collect();
        gof.accept(&x);
        if bound == 3u128 << 62 || bound == 3u128 << 30 {
            let biased: Vec<i64> = (0..n_draws)
                .map(|_| {
                    let w = if bound >> 32 == 0 {
                        r.next_u32() as u128
                    } else {
                        r.next_u64() as u128
                    };
                    bin(w % bound)
                })
                .collect();
            let alt = |x: i64| match x {
                0 => 0.5,
                1 | 2 => 0.25,
                _ => 0.0,
            };
            gof.reject("word % n (modulo bias)", &alt, &biased);
        }
    }
}

fn check_binomial(n_trials: u64, p: Rational, draws: usize, seed: u64, half: bool) {
    let pf = p.to_f64();
    let pmf = |k: i64| binomial_pmf(n_trials, pf, k);
    let name = format!("Bin({n_trials}, {p})");
    let gof = Gof::new(&name, &pmf, 0, n_trials as i64, (0.0, 0.0), draws);
    let mut out = vec![0u64; draws];
    if half {
        fill_binomial_half(&mut rng(seed), n_trials, &mut out);
    } else {
        Binomial::new(n_trials, p)
            .unwrap()
            .fill(&mut rng(seed), &mut out);
    }
    let x: Vec<i64> = out.iter().map(|&v| v as i64).collect();
    gof.accept(&x);
    // Off by 2%: p·51/50.
    let alt = scale(p, 51, 50);
    let alt_pmf = |k: i64| binomial_pmf(n_trials, alt.to_f64(), k);
    Binomial::new(n_trials, alt)
        .unwrap()
        .fill(&mut rng(seed + 1), &mut out);
    let x: Vec<i64> = out.iter().map(|&v| v as i64).collect();
    gof.reject("p × 1.02", &alt_pmf, &x);
}

#[test]
fn binomial_half_matches_pmf() {
    for (n, draws, seed) in [
        (1, 1_000_000, 71),
        (63, 300_000, 73),
        (64, 300_000, 75),
        (65, 300_000, 77),
        (1000, 300_000, 79),
    ] {
        check_binomial(n, rat(1, 2), draws, seed, true);
    }
    // The single-sample function agrees with the law too (a fresh buffer per call).
    let mut r = rng(80);
    let x: Vec<i64> = (0..200_000)
        .map(|_| binomial_half(&mut r, 65) as i64)
        .collect();
    let pmf = |k: i64| binomial_pmf(65, 0.5, k);
    Gof::new("binomial_half(65)", &pmf, 0, 65, (0.0, 0.0), x.len()).accept(&x);
}

#[test]
fn binomial_half_fill_samples_are_independent() {
    // fill_binomial_half hands the bits left over from one sample to the next; if it reused
    // bits, consecutive samples would be correlated. The sum of consecutive pairs must be
    // Bin(2n, ½); fully reused bits (x, x) would give 2·Bin(n, ½), which the test rejects.
    for (n, seed) in [(1u64, 81), (65, 83), (100, 85)] {
        let draws = 200_000;
        let mut out = vec![0u64; 2 * draws];
        fill_binomial_half(&mut rng(seed), n, &mut out);
        let pairs: Vec<i64> = out.chunks(2).map(|c| (c[0] + c[1]) as i64).collect();
        let pmf = |k: i64| binomial_pmf(2 * n, 0.5, k);
        let gof = Gof::new(
            &format!("pairs of Bin({n}, ½)"),
            &pmf,
            0,
            2 * n as i64,
            (0.0, 0.0),
            draws,
        );
        gof.accept(&pairs);
        let doubled: Vec<i64> = out[..draws].iter().map(|&v| 2 * v as i64).collect();
        let alt = |k: i64| {
            if k % 2 == 0 {
                binomial_pmf(n, 0.5, k / 2)
            } else {
                0.0
            }
        };
        gof.reject("reused bits", &alt, &doubled);
    }
}

#[test]
fn binomial_dyadic_and_rational_match_pmf() {
    check_binomial(1000, rat(3, 8), 200_000, 91, false);
    check_binomial(1000, rat(77, 1 << 10), 200_000, 93, false);
    check_binomial(100, rat((1 << 40) + 1, 1 << 42), 200_000, 95, false); // 42 digits of p
    check_binomial(1000, rat(1, 3), 200_000, 97, false); // not dyadic: infinite expansion
    check_binomial(7, rat(2, 7), 400_000, 99, false);
}

#[test]
fn binomial_edge_cases() {
    let mut r = rng(101);
    assert_eq!(
        Binomial::new(500, Rational::ZERO).unwrap().sample(&mut r),
        0
    );
    assert_eq!(
        Binomial::new(500, Rational::ONE).unwrap().sample(&mut r),
        500
    );
    assert_eq!(Binomial::new(0, rat(1, 3)).unwrap().sample(&mut r), 0);
    assert_eq!(binomial_half(&mut r, 0), 0);
}

#[test]
fn rationals_from_f64_are_exact_or_rounded_up() {
    assert_eq!(Rational::from_f64(3.0).unwrap(), Rational::integer(3));
    assert_eq!(
        Rational::from_f64(1e12).unwrap(),
        Rational::integer(1_000_000_000_000)
    );
    assert_eq!(Rational::from_f64(0.375).unwrap(), rat(3, 8));
    assert_eq!(Rational::from_f64(0.0).unwrap(), Rational::ZERO);
    let x = Rational::from_f64(0.1).unwrap();
    assert_eq!((x.num(), x.den()), (0x000c_cccc_cccc_cccd, 1 << 55));
    // Rounding up never goes below x and stays within one step of 2^-k.
    let mut r = rng(103);
    for _ in 0..2000 {
        // A random 53-bit significand times 2^e, e in [−80, 0): values from 2^-80 to 2^53.
        let m = (r.next_u64() >> 11) as f64;
        let v = m * 2f64.powi((r.next_u64() % 80) as i32 - 80);
        let exact = Rational::from_f64(v).unwrap();
        assert_eq!(exact.to_f64(), v);
        for k in [0u32, 8, 32, 60] {
            let up = Rational::from_f64_up(v, k).unwrap();
            assert!(up >= exact, "{v} 2^-{k}");
            // up = units·2^-k; (units − 1)·2^-k must be below v.
            let units = up.num() * ((1u128 << k) / up.den());
            if units > 0 {
                let below = Rational::new(units - 1, 1 << k).unwrap();
                assert!(below < exact, "{v} 2^-{k}: not the smallest multiple");
            }
        }
    }
}

#[test]
fn documented_sigma_range_is_supported() {
    // Every σ² converted exactly from an f64 in [2^-12, 2^62] builds a sampler (the range the
    // docs promise), and samples are drawn at both ends.
    let mut r = rng(105);
    for i in 0..=7400 {
        let e = -12.0 + 74.0 * i as f64 / 7400.0;
        for v in [
            2f64.powf(e),
            2f64.powf(e).next_down(),
            2f64.powf(e).next_up(),
        ] {
            if !(2f64.powi(-12)..=2f64.powi(62)).contains(&v) {
                continue;
            }
            let g = DiscreteGaussian::new(Rational::from_f64(v).unwrap())
                .unwrap_or_else(|e| panic!("σ² = {v:e}: {e}"));
            if i % 1000 == 0 {
                let _ = g.sample(&mut r);
            }
        }
    }
    // σ = 0.1 … 10^6 in particular, and σ²/γ² from 1 to 10^12.
    for s in [0.1f64, 1.0, 12.5, 1e3, 1e6] {
        assert!(DiscreteGaussian::new(Rational::from_f64(s * s).unwrap()).is_ok());
    }
}

#[test]
fn out_of_range_parameters_are_errors() {
    let msg = |e: dprp::Error| e.to_string();
    assert!(msg(Rational::new(1, 0).unwrap_err()).contains("zero denominator"));
    for bad in [f64::NAN, f64::INFINITY, -1.0, 2f64.powi(130)] {
        assert!(Rational::from_f64(bad).is_err(), "{bad}");
        assert!(Rational::from_f64_up(bad, 10).is_err(), "{bad}");
    }
    // 2^-200 needs a 2^200 denominator; rounded up to 2^-20 it is fine.
    assert!(Rational::from_f64(2f64.powi(-200)).is_err());
    assert_eq!(
        Rational::from_f64_up(2f64.powi(-200), 20).unwrap(),
        rat(1, 1 << 20)
    );
    assert!(Rational::from_f64_up(1.0, 128).is_err());

    let e = DiscreteGaussian::new(Rational::ZERO).unwrap_err();
    assert!(msg(e).contains("positive"));
    for s2 in [
        Rational::integer(1 << 100),  // σ = 2^50: 2a·t² ≈ 2^201
        rat(1, 1 << 100),             // b·t = 2^100 > 2^64
        rat((1 << 90) + 1, 1 << 40),  // σ² ≈ 2^50 with a 2^40 denominator
        Rational::integer(u128::MAX), // ⌊σ⌋ + 1 ≥ 2^64
    ] {
        let e = DiscreteGaussian::new(s2).unwrap_err();
        assert!(msg(e).contains("outside the supported range"), "{s2}");
    }
    assert!(
        fill_discrete_gaussian(&mut rng(1), Rational::integer(1 << 100), &mut [0i64; 4]).is_err()
    );

    assert!(DiscreteLaplace::new(Rational::ZERO).is_err());
    assert!(Geometric::new(Rational::ZERO).is_err());
    assert!(DiscreteLaplace::new(Rational::integer(1 << 64)).is_err());
    assert!(Geometric::new(rat(1, 1 << 70)).is_err());
    assert!(Bernoulli::new(rat(4, 3)).is_err());
    assert!(bernoulli(&mut rng(1), rat(3, 2)).is_err());
    assert!(Binomial::new(10, rat(101, 100)).is_err());
    assert!(uniform_below(&mut rng(1), 0).is_err());
}
