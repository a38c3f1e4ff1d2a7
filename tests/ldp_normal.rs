//! The bulk ziggurat normal sampler of the local mechanisms (`src/mechanism/local/normal.rs`):
//! its draws against the exact N(0,1) law — Kolmogorov–Smirnov on the whole line, and a χ² test
//! on the ziggurat's own layer boundaries (where a wrong table, wedge or tail would show) — each
//! with a power check (a 10% wrong scale is rejected).

use crate::ldp_common;

use dprp::mechanism::local::normal::{fill_standard_normal, fill_standard_normal_dot, Ziggurat};
use dprp::privacy::special::ln_norm_sf;
use ldp_common::*;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// `Φ(x)`.
fn norm_cdf(x: f64) -> f64 {
    if x < 0.0 {
        ln_norm_sf(-x).exp()
    } else {
        -ln_norm_sf(x).exp_m1()
    }
}

/// `P(|X| ≥ a)` for `X ~ N(0,1)`.
fn two_sided_sf(a: f64) -> f64 {
    2.0 * ln_norm_sf(a).exp()
}

fn draws(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut xs = vec![0f64; n];
    // Several calls of uneven length: block boundaries of the word buffer fall everywhere.
    let mut at = 0;
    for len in [1usize, 127, 129, 1000, 4093].iter().cycle() {
        if at >= n {
            break;
        }
        let end = (at + len).min(n);
        fill_standard_normal(&mut rng, &mut xs[at..end]);
        at = end;
    }
    xs
}

#[test]
fn ks_against_the_normal_cdf() {
    let n = 200_000;
    let xs = draws(n, 1);
    assert!(xs.iter().all(|x| x.is_finite()));
    let ks = ks_distance(&xs, norm_cdf);
    assert!(ks < ks_critical(n), "KS = {ks}");
    // Power: a 10% wrong scale is rejected.
    let bad: Vec<f64> = xs.iter().map(|x| 1.1 * x).collect();
    assert!(ks_distance(&bad, norm_cdf) > ks_critical(n));
}

/// χ² statistic of `|x|` over the bins `[x_{i+1}, x_i)` of the ziggurat layers (`x_1 = r`, the
/// last bin `[r, ∞)` is the tail), against the exact half-normal probabilities.
fn layer_chi2(xs: &[f64], z: &Ziggurat) -> (f64, usize) {
    // Edges ascending: 0 = x_N < x_{N−1} < … < x_1 = r, then ∞.
    let mut edges: Vec<f64> = z.x[1..].to_vec();
    edges.reverse();
    let bins = edges.len(); // [e_0, e_1), …, [e_{N−1} = r, ∞)
    let mut counts = vec![0f64; bins];
    for x in xs {
        let a = x.abs();
        let j = edges.partition_point(|&e| e <= a) - 1;
        counts[j] += 1.0;
    }
    let n = xs.len() as f64;
    let mut chi2 = 0.0;
    for j in 0..bins {
        let lo = two_sided_sf(edges[j]);
        let hi = if j + 1 < bins {
            two_sided_sf(edges[j + 1])
        } else {
            0.0
        };
        let e = n * (lo - hi);
        chi2 += (counts[j] - e).powi(2) / e;
    }
    (chi2, bins - 1)
}

/// Upper `p = 0.001` point of χ²_df (Wilson–Hilferty; z = 3.090).
fn chi2_critical(df: usize) -> f64 {
    let k = df as f64;
    let h = 2.0 / (9.0 * k);
    k * (1.0 - h + 3.090 * h.sqrt()).powi(3)
}

#[test]
fn chi_square_on_the_layers_and_the_tail() {
    let z = Ziggurat::get();
    let n = 2_000_000;
    let xs = draws(n, 2);
    let (chi2, df) = layer_chi2(&xs, z);
    assert!(chi2 < chi2_critical(df), "χ² = {chi2} on {df} df");
    // The tail beyond r (probability 2.6e-4, ≈ 520 draws) is there with the right mass.
    let tail = xs.iter().filter(|x| x.abs() >= z.r).count() as f64;
    let want = n as f64 * two_sided_sf(z.r);
    assert!(
        (tail - want).abs() < 4.0 * want.sqrt(),
        "tail {tail} vs {want}"
    );
    assert!(
        xs.iter().any(|x| x.abs() > z.r + 0.5),
        "no draw deep in the tail"
    );
    // Power: a 10% wrong scale is rejected by the same test.
    let bad: Vec<f64> = xs.iter().map(|x| 1.1 * x).collect();
    assert!(layer_chi2(&bad, z).0 > chi2_critical(df));
}

#[test]
fn signs_are_balanced_and_streams_reproducible() {
    let n = 200_000;
    let xs = draws(n, 3);
    let pos = xs.iter().filter(|x| **x > 0.0).count() as f64;
    assert!((pos - n as f64 / 2.0).abs() < 4.0 * (n as f64 / 4.0).sqrt());
    assert_eq!(draws(1000, 3), xs[..1000].to_vec());
    assert_ne!(draws(1000, 4), xs[..1000].to_vec());
}

#[test]
fn fused_dot_and_square_sum_are_the_sums() {
    let d = 10_001;
    let u: Vec<f64> = (0..d)
        .map(|i| ((i * 37 % 101) as f64 - 50.0) / 50.0)
        .collect();
    let mut a = vec![0f64; d];
    let mut b = vec![0f64; d];
    let (dot, sq) = fill_standard_normal_dot(&mut ChaCha20Rng::seed_from_u64(5), &mut a, &u);
    fill_standard_normal(&mut ChaCha20Rng::seed_from_u64(5), &mut b);
    assert_eq!(a, b, "the fused fill draws the same values");
    let dot2: f64 = a.iter().zip(&u).map(|(x, y)| x * y).sum();
    let sq2: f64 = a.iter().map(|x| x * x).sum();
    assert!((dot - dot2).abs() < 1e-9 * sq2 && (sq - sq2).abs() < 1e-9 * sq2);
    assert!(sq > 0.9 * d as f64 && sq < 1.1 * d as f64);
}

/// The normals as the mechanisms use them: the part of the output orthogonal to the input.
/// PrivUnit2 at d = 4: `w = (V − ⟨V,u⟩u)/‖·‖` is uniform on the unit sphere of `u^⊥ ≅ R³`, so by
/// Archimedes `⟨w, e⟩` is uniform on `[−1, 1]` for a unit `e ⊥ u`; at d = 2, `w = ±e` with
/// probability ½ each (the exact fallback path of the sampler). PrivUnitG: `⟨Z, e⟩/scale ~ N(0,1)`.
#[test]
fn orthogonal_parts_of_the_mechanisms_have_their_laws() {
    use dprp::mechanism::local::{PrivUnit2, PrivUnitG};
    let n = 50_000;
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    let u = [0.5, 0.5, 0.5, 0.5];
    let e = [0.5, -0.5, 0.5, -0.5];
    let m = PrivUnit2::new(2.0, 4).unwrap();
    let xs: Vec<f64> = (0..n)
        .map(|_| {
            let z = m.privatize_unit(&u, &mut rng).unwrap();
            let v: Vec<f64> = z.iter().map(|x| x * m.m).collect();
            let t: f64 = v.iter().zip(&u).map(|(a, b)| a * b).sum();
            let w: Vec<f64> = v.iter().zip(&u).map(|(a, b)| a - t * b).collect();
            let s = w.iter().map(|x| x * x).sum::<f64>().sqrt();
            w.iter().zip(&e).map(|(a, b)| a * b).sum::<f64>() / s
        })
        .collect();
    let unif = |a: f64| ((a + 1.0) / 2.0).clamp(0.0, 1.0);
    assert!(ks_distance(&xs, unif) < ks_critical(n));
    let bad: Vec<f64> = xs.iter().map(|x| (1.1 * x).clamp(-1.0, 1.0)).collect();
    assert!(ks_distance(&bad, unif) > ks_critical(n));

    let m2 = PrivUnit2::new(2.0, 2).unwrap();
    let u2 = [0.6, 0.8];
    let plus = (0..n)
        .filter(|_| {
            let z = m2.privatize_unit(&u2, &mut rng).unwrap();
            z[0] * 0.8 - z[1] * 0.6 > 0.0
        })
        .count() as f64;
    assert!((plus - n as f64 / 2.0).abs() < 4.0 * (n as f64 / 4.0).sqrt());

    let g = PrivUnitG::new(2.0, 4).unwrap();
    let ys: Vec<f64> = (0..n)
        .map(|_| {
            let z = g.privatize_unit(&u, &mut rng).unwrap();
            z.iter().zip(&e).map(|(a, b)| a * b).sum::<f64>() / g.scale
        })
        .collect();
    assert!(ks_distance(&ys, norm_cdf) < ks_critical(n));
    let bad: Vec<f64> = ys.iter().map(|x| 1.1 * x).collect();
    assert!(ks_distance(&bad, norm_cdf) > ks_critical(n));
}
