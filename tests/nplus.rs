//! `N₊` (Proposition 4.4, `dprp::privacy::nplus`) checked against closed forms, brute-force
//! quadrature, Monte Carlo simulation of the event it bounds, and the exact binomial tail.
//!
//! All simulations use fixed seeds (ChaCha20) and tolerances of 5 binomial standard errors of the
//! simulated frequency, `√(P(1−P)/n)`, so a wrong formula fails and a right one passes with
//! probability > 1 − 10⁻⁵ per assertion. Run with `--nocapture` to see the numbers.

use dprp::privacy::nplus::{
    chernoff_eta, compute, compute_with, f_gaussian, f_gaussian_refined, gaussian_r_bound, n_plus,
    p_rademacher, p_rademacher_bound,
};
use dprp::projection::DenseKind;
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

const RS: [f64; 5] = [1e-3, 0.01, 0.1, 0.3, 1.0];
const PS: [usize; 7] = [2, 10, 100, 784, 1000, 10_000, 1_000_000];

fn se(prob: f64, n: u64) -> f64 {
    (prob * (1.0 - prob) / n as f64).sqrt()
}

fn norm_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

fn norm_pdf(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

// ---------------------------------------------------------------------------------------------
// 1. Reference values (DESIGN.md §4)
// ---------------------------------------------------------------------------------------------

fn round5(x: f64) -> f64 {
    (x * 1e5).round() / 1e5
}

#[test]
fn design_reference_values() {
    for (r, p, want) in [
        (0.1, 100, 0.21628),
        (0.1, 784, 0.26362),
        (0.3, 784, 0.68526),
        (1.0, 1000, 0.99900),
    ] {
        let f = f_gaussian(r, p).unwrap();
        eprintln!("F_{{{r},{p}}} = {f:.12}");
        assert_eq!(round5(f), want, "F_{{{r},{p}}} = {f}");
    }
    for (r, want) in [(0.1, 0.07966), (0.3, 0.23582)] {
        let a = p_rademacher(r);
        eprintln!("2Φ({r})−1 = {a:.12}");
        assert_eq!(round5(a), want);
        assert!((a - (2.0 * norm_cdf(r) - 1.0)).abs() < 1e-15);
    }
}

// ---------------------------------------------------------------------------------------------
// Quadrature accuracy: closed forms, brute force, refinement, speed
// ---------------------------------------------------------------------------------------------

/// `F_{1,p} = Pr(M > |Z|)` with `M` the largest of `p` i.i.d. half-normals and `|Z|` one more:
/// `p/(p+1)` by symmetry. `F_{r,1} = Pr(|Z| < r|X|) = (2/π)·atan r` (the angle of a 2-D normal).
#[test]
fn quadrature_matches_closed_forms() {
    let mut worst: f64 = 0.0;
    for p in [
        1usize,
        2,
        3,
        10,
        100,
        784,
        1000,
        10_000,
        1_000_000,
        100_000_000,
    ] {
        let f = f_gaussian(1.0, p).unwrap();
        let exact = p as f64 / (p as f64 + 1.0);
        let rel = ((f - exact) / exact).abs();
        // 1 − F is tiny for large p: check it relatively too.
        let rel_c = ((1.0 - f) - 1.0 / (p as f64 + 1.0)).abs() * (p as f64 + 1.0);
        worst = worst.max(rel);
        assert!(rel < 1e-10, "p = {p}: {f} vs {exact}");
        assert!(
            rel_c < 1e-6 || p > 1_000_000,
            "p = {p}: 1−F {} vs {}",
            1.0 - f,
            1.0 / (p as f64 + 1.0)
        );
    }
    for r in [1e-6, 1e-3, 0.01, 0.1, 0.3, 0.5, 1.0, 2.0, 10.0, 100.0, 1e4] {
        let f = f_gaussian(r, 1).unwrap();
        let exact = std::f64::consts::FRAC_2_PI * r.atan();
        let rel = ((f - exact) / exact).abs();
        worst = worst.max(rel);
        assert!(rel < 1e-10, "r = {r}: {f} vs {exact}");
    }
    eprintln!("closed forms: worst relative error {worst:.2e}");
}

/// Composite Simpson on a uniform grid over [0, 40]: slow, simple, independent of the panel logic.
fn brute_force(r: f64, p: usize, n: usize) -> f64 {
    let pf = p as f64;
    let s2 = std::f64::consts::SQRT_2;
    let g = |t: f64| {
        let x = t / s2;
        let ln_erf = if x < 0.5 {
            libm::erf(x).ln()
        } else {
            libm::log1p(-libm::erfc(x))
        };
        let pow = if p == 1 {
            1.0
        } else {
            ((pf - 1.0) * ln_erf).exp()
        };
        2.0 * pf * pow * libm::erf(r * t / s2) * norm_pdf(t)
    };
    let (a, b) = (0.0, 40.0);
    let h = (b - a) / n as f64;
    let mut s = g(a) + g(b);
    for i in 1..n {
        s += g(a + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0
}

#[test]
fn quadrature_converges_and_matches_brute_force() {
    let grid: Vec<(f64, usize)> = RS
        .iter()
        .flat_map(|&r| PS.iter().map(move |&p| (r, p)))
        .chain([(3.0, 2), (3.0, 100), (10.0, 10), (100.0, 2)])
        .collect();
    let rows: Vec<(f64, usize, f64, f64, f64)> = grid
        .par_iter()
        .map(|&(r, p)| {
            let f = f_gaussian(r, p).unwrap();
            let f4 = f_gaussian_refined(r, p, 4).unwrap();
            let bf = brute_force(r, p, 400_000);
            (r, p, f, ((f - f4) / f4).abs(), ((f - bf) / bf).abs())
        })
        .collect();
    let (mut worst_ref, mut worst_bf): (f64, f64) = (0.0, 0.0);
    for &(r, p, f, d4, dbf) in &rows {
        eprintln!("r = {r:<6} p = {p:<8} F = {f:.12}  |F − F×4|/F = {d4:.1e}  |F − Simpson|/F = {dbf:.1e}");
        assert!(
            d4 < 1e-7,
            "r = {r}, p = {p}: refinement changes F by {d4:e}"
        );
        assert!(
            dbf < 1e-7,
            "r = {r}, p = {p}: brute force differs by {dbf:e}"
        );
        worst_ref = worst_ref.max(d4);
        worst_bf = worst_bf.max(dbf);
    }
    eprintln!("worst: refinement {worst_ref:.1e}, brute force {worst_bf:.1e}");
}

#[test]
fn f_is_monotone_in_r_and_p() {
    for &p in &PS {
        let mut last = 0.0;
        for i in 0..=60 {
            let r = 10f64.powf(-4.0 + i as f64 / 10.0); // 1e-4 .. 100
            let f = f_gaussian(r, p).unwrap();
            // Strictly increasing until F is within rounding of 1.
            let ok = f <= 1.0
                && if 1.0 - f > 1e-9 {
                    f > last
                } else {
                    f >= last - 1e-15
                };
            assert!(ok, "p = {p}, r = {r}: {f} after {last}");
            last = f;
        }
    }
    for &r in &RS {
        let mut last = 0.0;
        for p in [
            1, 2, 3, 5, 10, 30, 100, 300, 784, 1000, 3000, 10_000, 100_000, 1_000_000,
        ] {
            let f = f_gaussian(r, p).unwrap();
            assert!(f > last, "r = {r}, p = {p}: {f} after {last}");
            last = f;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 2. F_{r,p} against Monte Carlo with Gaussian w
// ---------------------------------------------------------------------------------------------

/// Unit vectors `û` of different shapes in R^p.
fn shapes(p: usize, seed: u64) -> Vec<(&'static str, Vec<f64>)> {
    let unit = |v: Vec<f64>| {
        let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        v.into_iter().map(|x| x / n).collect::<Vec<f64>>()
    };
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let uniform: Vec<f64> = (0..p).map(|_| rng.random_range(-1.0..1.0)).collect();
    let mut e1 = vec![0.0; p];
    e1[0] = 1.0;
    let mut two = vec![0.0; p];
    two[0] = 1.0;
    two[1] = 1.0;
    let half: Vec<f64> = (0..p).map(|i| if i < p / 2 { 1.0 } else { 0.0 }).collect();
    vec![
        ("constant", unit(vec![1.0; p])),
        ("uniform[-1,1]", unit(uniform)),
        ("half", unit(half)),
        ("two-coord", unit(two)),
        ("e1", e1),
    ]
}

/// For `n` draws of `w ~ N(0, I_p)` and an independent `z ~ N(0,1)`, count, per shape and `r`,
/// the events `r·max|w_i| > |wᵀû|` (the real event: β·max|w_i| > |wᵀu| with ‖u‖ = β/r) and
/// `r·max|w_i| > |z|` (the independent model whose probability is exactly `F_{r,p}`).
fn gaussian_mc(p: usize, rs: &[f64], us: &[Vec<f64>], n: u64, seed: u64) -> (Vec<u64>, Vec<u64>) {
    let chunks = 16u64;
    let per = n / chunks;
    assert_eq!(per * chunks, n);
    let (ns, nr) = (us.len(), rs.len());
    (0..chunks)
        .into_par_iter()
        .map(|c| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            rng.set_stream(c);
            let mut w = vec![0.0f64; p];
            let mut dep = vec![0u64; ns * nr];
            let mut ind = vec![0u64; nr];
            for _ in 0..per {
                let mut m: f64 = 0.0;
                for x in w.iter_mut() {
                    *x = rng.sample::<f64, _>(rand_distr::StandardNormal);
                    m = m.max(x.abs());
                }
                let z: f64 = rng.sample(rand_distr::StandardNormal);
                for (j, &r) in rs.iter().enumerate() {
                    ind[j] += u64::from(r * m > z.abs());
                }
                for (s, u) in us.iter().enumerate() {
                    let dot: f64 = w.iter().zip(u).map(|(a, b)| a * b).sum();
                    for (j, &r) in rs.iter().enumerate() {
                        dep[s * nr + j] += u64::from(r * m > dot.abs());
                    }
                }
            }
            (dep, ind)
        })
        .reduce(
            || (vec![0; ns * nr], vec![0; nr]),
            |(mut a, mut b), (c, d)| {
                a.iter_mut().zip(c).for_each(|(x, y)| *x += y);
                b.iter_mut().zip(d).for_each(|(x, y)| *x += y);
                (a, b)
            },
        )
}

/// What eq. (5) is and is not, by simulation (200 000 draws of `w` per `p`):
///
/// * `F_{r,p}` is exactly the probability when `wᵀû` is replaced by an independent N(0,1):
///   checked to 5 s.e. for every `(p, r)`.
/// * For `u = e₁` the real probability is exactly `F_{r,p−1}` (the event is
///   `max_{i≥2}|w_i| > |w₁|/r`); for `p = 2`, `u ∝ (1,1)` it is exactly
///   `1 − (2/π)·atan(√2/r − 1)`. Both checked to 5 s.e.
/// * The real probability is **not** always below `F_{r,p}` (Lemma 4.2's claim): for `p = 10`,
///   `u` constant, `r = 1` it exceeds it by far more than 10 s.e. It is below the corrected bound
///   `F_{r',p}`, `r' = r/(1 − r·max|û_i|)` (Anderson's inequality, see the module documentation of
///   `nplus`) for every shape, `p` and `r`: checked to 5 s.e.
/// * At `r = 0.1` every simulated shape stays below `F_{r,p}` + 5 s.e. (observed, not proven).
#[test]
fn gaussian_f_against_monte_carlo() {
    let n = 200_000u64;
    let rs = [0.1, 0.3, 0.5, 0.7, 1.0];
    let mut violations = 0;
    for (p, seed) in [(2usize, 10u64), (10, 11), (100, 12), (784, 13)] {
        let us = shapes(p, seed + 100);
        let vecs: Vec<Vec<f64>> = us.iter().map(|s| s.1.clone()).collect();
        let (dep, ind) = gaussian_mc(p, &rs, &vecs, n, seed);
        for (j, &r) in rs.iter().enumerate() {
            let f = f_gaussian(r, p).unwrap();
            let tol = 5.0 * se(f, n);
            let fi = ind[j] as f64 / n as f64;
            eprintln!(
                "p = {p:<4} r = {r:<4} F = {f:.5}  independent-model MC = {fi:.5} \
                 (diff {:+.5}, 5 s.e. = {tol:.5})",
                fi - f
            );
            assert!(
                (fi - f).abs() < tol,
                "independent model p = {p}, r = {r}: {fi} vs {f}"
            );
            for (s, (name, u)) in us.iter().enumerate() {
                let fd = dep[s * rs.len() + j] as f64 / n as f64;
                let a = u.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                let bound = gaussian_r_bound(r, a).map_or(1.0, |rp| f_gaussian(rp, p).unwrap());
                eprintln!(
                    "    u = {name:<14} real MC = {fd:.5}  F − MC = {:+.5} ({:+.1} s.e.)  \
                     corrected bound F_{{r',p}} = {bound:.5}",
                    f - fd,
                    (f - fd) / se(f, n)
                );
                if fd > f + tol {
                    violations += 1;
                }
                assert!(
                    fd <= bound + 5.0 * se(bound, n),
                    "corrected bound violated: p = {p}, r = {r}, u = {name}: {fd} > {bound}"
                );
                if r <= 0.1 {
                    assert!(
                        fd <= f + tol,
                        "p = {p}, r = {r}, u = {name}: {fd} > F = {f}"
                    );
                }
                if *name == "e1" {
                    let exact = f_gaussian(r, p - 1).map_or(0.0, |x| x);
                    let t = 5.0 * se(exact, n) + 1e-12;
                    assert!(
                        (fd - exact).abs() < t,
                        "u = e1, p = {p}, r = {r}: {fd} vs F_{{r,p−1}} = {exact}"
                    );
                }
                if p == 2 && *name == "constant" {
                    let x = std::f64::consts::SQRT_2 / r - 1.0;
                    let exact = 1.0 - std::f64::consts::FRAC_2_PI * x.atan();
                    assert!(
                        (fd - exact).abs() < 5.0 * se(exact, n),
                        "p = 2, u ∝ (1,1), r = {r}: {fd} vs {exact}"
                    );
                }
                if p == 10 && *name == "constant" && r == 1.0 {
                    assert!(
                        fd > f + 2.0 * tol,
                        "expected the eq. (5) violation: {fd} vs {f}"
                    );
                }
            }
        }
    }
    eprintln!("(p, r, u) cases with real P > F_{{r,p}} + 5 s.e.: {violations}");
}

// ---------------------------------------------------------------------------------------------
// 3. The Rademacher approximation (eq. (10), Figure 8)
// ---------------------------------------------------------------------------------------------

/// `Pr(|Binomial(p, ½)·2 − p| < a)`, exactly (log space).
fn lattice_prob(p: usize, a: f64) -> f64 {
    let ln_half = -std::f64::consts::LN_2 * p as f64;
    (0..=p)
        .filter(|&b| ((2 * b) as f64 - p as f64).abs() < a)
        .map(|b| {
            let ln_c = libm::lgamma(p as f64 + 1.0)
                - libm::lgamma(b as f64 + 1.0)
                - libm::lgamma((p - b) as f64 + 1.0);
            (ln_c + ln_half).exp()
        })
        .sum()
}

/// For `n` draws of Rademacher `w ∈ {±1}^p`, count per unit vector `û` and `r` the event
/// `r > |wᵀû|` (i.e. β·max|w_i| = β > |wᵀu| with ‖u‖ = β/r), and for the constant vector the
/// event `|2·#(+1) − p| < r√p` in integer arithmetic.
fn rademacher_mc(p: usize, rs: &[f64], us: &[Vec<f64>], n: u64, seed: u64) -> (Vec<u64>, Vec<u64>) {
    let chunks = 16u64;
    let per = n / chunks;
    assert_eq!(per * chunks, n);
    let (ns, nr) = (us.len(), rs.len());
    let words = p.div_ceil(64);
    (0..chunks)
        .into_par_iter()
        .map(|c| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            rng.set_stream(c);
            let mut bits = vec![0u64; words];
            let mut hits = vec![0u64; ns * nr];
            let mut lattice = vec![0u64; nr];
            for _ in 0..per {
                let mut ones = 0usize;
                for (i, b) in bits.iter_mut().enumerate() {
                    *b = rng.next_u64();
                    if i == words - 1 && !p.is_multiple_of(64) {
                        *b &= (1u64 << (p % 64)) - 1;
                    }
                    ones += b.count_ones() as usize;
                }
                for (j, &r) in rs.iter().enumerate() {
                    let a = r * (p as f64).sqrt();
                    lattice[j] += u64::from(((2 * ones) as f64 - p as f64).abs() < a);
                }
                for (s, u) in us.iter().enumerate() {
                    let mut dot = 0.0;
                    for (i, &ui) in u.iter().enumerate() {
                        if bits[i / 64] >> (i % 64) & 1 == 1 {
                            dot += ui;
                        } else {
                            dot -= ui;
                        }
                    }
                    for (j, &r) in rs.iter().enumerate() {
                        hits[s * nr + j] += u64::from(r > dot.abs());
                    }
                }
            }
            (hits, lattice)
        })
        .reduce(
            || (vec![0; ns * nr], vec![0; nr]),
            |(mut a, mut b), (c, d)| {
                a.iter_mut().zip(c).for_each(|(x, y)| *x += y);
                b.iter_mut().zip(d).for_each(|(x, y)| *x += y);
                (a, b)
            },
        )
}

/// Paper's Figure 8 setting (`u` with i.i.d. unif[−1,1] coordinates) and the constant vector.
///
/// * `u` uniform: the summands `w_i u_i` are independent, symmetric and of unequal sizes (no
///   lattice), so the Edgeworth expansion has no `1/√p` term; its leading term is
///   `−(γ₂/12)(r³ − 3r)φ(r)` with excess kurtosis `γ₂ = −2Σu_i⁴/‖u‖⁴ = O(1/p)`, the remainder is
///   `O(1/p²)`. The slack added to 5 s.e. is twice that leading term (at most 3e-3 at p = 100): a
///   justified estimate, not a proven bound. The rigorous Berry–Esseen bound
///   (`2·0.56·Σ|u_i|³/‖u‖³`, Shevtsova 2010) is checked as well but is 50–100× looser.
/// * `u` constant: `wᵀu = c·(2B − p)` with `B ~ Binomial(p, ½)`, so the exact `P` is a binomial
///   sum; the simulation is checked against it to 5 s.e., and the exact `P` against eq. (10) only
///   within Berry–Esseen for i.i.d. summands (`2·0.4748/√p`, Shevtsova 2011), because the lattice
///   error is of order `1/√p` here.
#[test]
fn rademacher_approximation_against_simulation() {
    let n = 200_000u64;
    let rs = [0.1, 0.3, 1.0];
    for (p, seed) in [(100usize, 21u64), (784, 22)] {
        let all = shapes(p, seed + 100);
        let uniform = all[1].1.clone();
        let (hits, lattice) = rademacher_mc(p, &rs, std::slice::from_ref(&uniform), n, seed);
        let s4: f64 = uniform.iter().map(|x| x.powi(4)).sum();
        let s3: f64 = uniform.iter().map(|x| x.abs().powi(3)).sum();
        for (j, &r) in rs.iter().enumerate() {
            let approx = p_rademacher(r);
            let tol = 5.0 * se(approx, n);
            let gamma2 = -2.0 * s4;
            let edgeworth = -(gamma2 / 12.0) * (r.powi(3) - 3.0 * r) * norm_pdf(r);
            let mc = hits[j] as f64 / n as f64;
            eprintln!(
                "p = {p:<4} r = {r:<4} 2Φ(r)−1 = {approx:.5}  u uniform: MC = {mc:.5} (diff {:+.5}, \
                 5 s.e. = {tol:.5}, Edgeworth term {edgeworth:+.5}, corrected diff {:+.5})",
                mc - approx,
                mc - approx - edgeworth
            );
            assert!(
                (mc - approx).abs() < tol + 2.0 * edgeworth.abs(),
                "uniform u, p = {p}, r = {r}: {mc} vs {approx}"
            );
            assert!((mc - approx).abs() < tol + 2.0 * 0.56 * s3);

            let exact = lattice_prob(p, r * (p as f64).sqrt());
            let lm = lattice[j] as f64 / n as f64;
            let be = 2.0 * 0.4748 / (p as f64).sqrt();
            eprintln!(
                "              u constant: exact P = {exact:.5}, MC = {lm:.5}, exact − approx = {:+.5} \
                 (Berry–Esseen allows {be:.4})",
                exact - approx
            );
            assert!(
                (lm - exact).abs() < 5.0 * se(exact, n) + 1e-12,
                "constant u, p = {p}, r = {r}"
            );
            assert!((exact - approx).abs() < be);
        }
    }
}

/// Eq. (10) is not a bound: for `u` on two coordinates, `wᵀu = 0` with probability ½ whatever
/// `r > 0`, far above `2Φ(r) − 1`. (This is why [`compute`] marks the Rademacher value as
/// approximate.)
#[test]
fn rademacher_approximation_fails_for_sparse_u() {
    let n = 64_000u64;
    let p = 100;
    let two = shapes(p, 1)[3].1.clone();
    let rs = [0.1, 0.3];
    let (hits, _) = rademacher_mc(p, &rs, &[two], n, 5);
    for (j, &r) in rs.iter().enumerate() {
        let mc = hits[j] as f64 / n as f64;
        eprintln!(
            "two-coordinate u, r = {r}: simulated P = {mc:.4}, 2Φ(r)−1 = {:.4}",
            p_rademacher(r)
        );
        assert!((mc - 0.5).abs() < 5.0 * se(0.5, n));
        assert!(mc > p_rademacher(r) + 0.2);
    }
    assert!(
        compute_with(DenseKind::Rademacher, 1.0, 10.0, p, 64, 1e-6, true)
            .unwrap()
            .approximate
    );
    // dprp's default for Rademacher is the Berry–Esseen bound, which holds here: rows live in
    // [-1,1]^p, so a two-coordinate row has ‖u‖ ≤ √2 and ν ≤ √2, and the bound is then ≥ ½.
    assert!(
        !compute(DenseKind::Rademacher, 1.0, 10.0, p, 64, 1e-6)
            .unwrap()
            .approximate
    );
    for beta in [0.01, 0.1, 0.5] {
        let nu = 2f64.sqrt();
        assert!(p_rademacher_bound(beta / nu, nu) >= 0.5);
    }
}

/// The Berry–Esseen bound is an upper bound in simulation for every row shape tried, including
/// the sparsest rows the domain allows at a given norm.
#[test]
fn rademacher_berry_esseen_bound_holds() {
    let n = 64_000u64;
    for p in [100, 784] {
        for (name, u) in shapes(p, 1) {
            // the largest row of this shape inside [-1,1]^p: u/max|u_i|, of norm 1/max|u_i|
            let norm = 1.0 / u.iter().fold(0f64, |m, &x| m.max(x.abs()));
            for r in [0.05, 0.2, 0.5] {
                let (hits, _) = rademacher_mc(p, &[r], std::slice::from_ref(&u), n, 9);
                let mc = hits[0] as f64 / n as f64;
                let bound = p_rademacher_bound(r, norm);
                assert!(
                    mc <= bound + 5.0 * se(bound.min(0.5), n),
                    "p = {p}, {name}, r = {r}: simulated {mc} above the bound {bound}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 4. N₊ and the binomial tail
// ---------------------------------------------------------------------------------------------

/// `ln Pr(Binomial(k, P) > n)`, by log-sum-exp over the pmf.
fn ln_binomial_tail(k: usize, prob: f64, n: usize) -> f64 {
    if n >= k {
        return f64::NEG_INFINITY;
    }
    let (lp, lq) = (prob.ln(), (-prob).ln_1p());
    let lg = |x: usize| libm::lgamma(x as f64 + 1.0);
    let terms: Vec<f64> = (n + 1..=k)
        .map(|j| {
            let lq_part = if j == k { 0.0 } else { (k - j) as f64 * lq };
            lg(k) - lg(j) - lg(k - j) + j as f64 * lp + lq_part
        })
        .collect();
    let m = terms.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    m + terms.iter().map(|t| (t - m).exp()).sum::<f64>().ln()
}

/// The smallest `n` with `Pr(Binomial(k, P) > n) ≤ δ` (what an exact quantile would give).
fn exact_quantile(k: usize, prob: f64, delta: f64) -> usize {
    (0..=k)
        .find(|&n| ln_binomial_tail(k, prob, n) <= delta.ln())
        .unwrap()
}

#[test]
fn n_plus_tail_is_at_most_delta() {
    for (k, prob, delta) in [(512, 0.26, 1e-6), (256, 0.05, 1e-3), (1024, 0.9, 1e-6)] {
        let np = n_plus(k, prob, delta);
        let tail = ln_binomial_tail(k, prob, np);
        let q = exact_quantile(k, prob, delta);
        eprintln!(
            "k = {k:<5} P = {prob:<5} δ = {delta:e}: N₊ = {np}, Pr(N > N₊) = {:.3e}, exact quantile {q}, mean {:.1}",
            tail.exp(),
            prob * k as f64
        );
        assert!(tail <= delta.ln(), "tail {} > δ", tail.exp());
        assert!(np >= q);
    }
    // A wider grid.
    let mut checked = 0;
    for k in [1usize, 2, 3, 10, 64, 256, 512, 1024, 4096] {
        for prob in [
            1e-9, 1e-4, 1e-3, 0.01, 0.05, 0.1, 0.26, 0.5, 0.685, 0.9, 0.99, 0.9999,
        ] {
            for delta in [0.5, 0.1, 1e-3, 1e-6, 1e-10, 1e-30] {
                let np = n_plus(k, prob, delta);
                assert!(np >= 1 && np <= k, "k = {k}, P = {prob}, δ = {delta}: {np}");
                let tail = ln_binomial_tail(k, prob, np);
                assert!(
                    tail <= delta.ln(),
                    "k = {k}, P = {prob}, δ = {delta}: N₊ = {np}, tail {}",
                    tail.exp()
                );
                // Using a larger P than the real one (as F_{r,p} ≥ P) stays valid.
                assert!(ln_binomial_tail(k, prob * 0.5, np) <= delta.ln());
                checked += 1;
            }
        }
    }
    eprintln!("{checked} (k, P, δ) combinations: Pr(Binomial(k,P) > N₊) ≤ δ");
}

#[test]
fn eta_solves_the_chernoff_quadratic() {
    for mu in [1e-6, 0.01, 1.0, 12.8, 133.1, 921.6, 1e6] {
        for delta in [0.5, 1e-3, 1e-6, 1e-30] {
            let eta = chernoff_eta(mu, delta);
            let l = -f64::ln(delta);
            let residual = mu * eta * eta - l * eta - 2.0 * l;
            let scale = mu * eta * eta + l * eta + 2.0 * l;
            assert!(
                eta > 0.0 && residual.abs() <= 1e-12 * scale,
                "μ = {mu}, δ = {delta}: η = {eta}"
            );
            // And it makes the Chernoff bound equal to δ.
            let bound = -eta * eta * mu / (2.0 + eta);
            assert!(
                (bound - delta.ln()).abs() <= 1e-10 * l,
                "{bound} vs {}",
                delta.ln()
            );
            // N₊ is ⌈(1+η)μ⌉ (when below k).
            let k = 1usize << 40;
            let prob = mu / k as f64;
            let np = n_plus(k, prob, delta);
            let want = ((1.0 + chernoff_eta(prob * k as f64, delta)) * prob * k as f64).ceil();
            assert!(
                (np as f64 - want).abs() <= 1.0,
                "μ = {mu}, δ = {delta}: {np} vs {want}"
            );
        }
    }
}

#[test]
fn n_plus_is_monotone_and_bounded() {
    for k in [1usize, 5, 64, 512, 1024] {
        let mut last_p = 0;
        for i in 0..=400 {
            let prob = i as f64 / 400.0;
            let np = n_plus(k, prob, 1e-6);
            assert!(
                np >= 1 && np <= k && np >= last_p,
                "k = {k}, P = {prob}: {np} after {last_p}"
            );
            last_p = np;
        }
        assert_eq!(last_p, k);
        for prob in [0.0, 1e-6, 0.05, 0.26, 0.9] {
            let mut last_d = 0;
            for e in 0..=60 {
                let delta = 10f64.powf(-(e as f64) / 2.0 - 0.1); // δ decreasing
                let np = n_plus(k, prob, delta);
                assert!(
                    np >= 1 && np <= k && np >= last_d,
                    "k = {k}, P = {prob}, δ = {delta}"
                );
                last_d = np;
            }
        }
    }
}

/// The whole pipeline for the paper's MNIST setting (p = 784, β = 1, ‖u‖ ≥ 10, k = 512, δ = 1e-6).
/// The Gaussian value is the corrected bound `F_{r',p}`, `r' = 0.1/(1 − 0.1·0.1)`, not the
/// paper's `F_{0.1,784} = 0.26362`.
#[test]
fn compute_end_to_end() {
    let g = compute(DenseKind::Gaussian, 1.0, 10.0, 784, 512, 1e-6).unwrap();
    let r = compute(DenseKind::Rademacher, 1.0, 10.0, 784, 512, 1e-6).unwrap();
    let paper = n_plus(512, f_gaussian(0.1, 784).unwrap(), 1e-6);
    eprintln!("{g:?}\n{r:?}\nN₊ with the paper's F_{{0.1,784}}: {paper}");
    assert_eq!(round5(g.prob), 0.26618);
    assert!(!g.approximate && !r.approximate);
    let clt = compute_with(DenseKind::Rademacher, 1.0, 10.0, 784, 512, 1e-6, true).unwrap();
    assert!(clt.approximate && clt.n_plus < r.n_plus);
    assert_eq!(g.n_plus, n_plus(512, g.prob, 1e-6));
    assert!(ln_binomial_tail(512, g.prob, g.n_plus) <= (1e-6f64).ln());
    assert!(r.n_plus < g.n_plus);
}
