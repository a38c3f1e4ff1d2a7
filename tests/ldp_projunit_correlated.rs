//! Correlated FastProjUnit (Algorithms 3–4): the fast server (scatter + one transform) is the slow
//! path (average of per-user decodes); the row and sign layout is the SRHT's; the mean's
//! expectation and error against their exact values by enumerating every `(D, S)` at `d' = 8`
//! (power: the printed Algorithm 4 without `√(d'/k)` is caught); and the privacy reduction: given
//! `(D, S_i)` the client's output is PrivUnitG_k of `W_i v/‖W_i v‖` bit for bit.

use crate::ldp_common;

use dprp::mechanism::local::{norm2, uniform_unit, CorrelatedProjUnit};
use dprp::projection::{Seed, Srht};
use ldp_common::*;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn seed_of(i: u64) -> Seed {
    let mut b = [0u8; 32];
    b[..8].copy_from_slice(&i.to_le_bytes());
    b[31] = 0xc3;
    Seed(b)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The normalised Hadamard matrix of order `n` (Sylvester), explicitly.
fn hadamard(n: usize) -> Vec<Vec<f64>> {
    let s = 1.0 / (n as f64).sqrt();
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| if (i & j).count_ones() % 2 == 0 { s } else { -s })
                .collect()
        })
        .collect()
}

/// `W = √(d'/k)·S·H·D` restricted to the first `d` columns, explicitly (`k×d`).
fn explicit_w(d: usize, d_pad: usize, rows: &[usize], signs: &[f64]) -> Vec<Vec<f64>> {
    let h = hadamard(d_pad);
    let s = (d_pad as f64 / rows.len() as f64).sqrt();
    rows.iter()
        .map(|&r| (0..d).map(|i| s * h[r][i] * signs[i]).collect())
        .collect()
}

#[test]
fn fast_server_is_the_slow_path_and_the_layout_is_the_srhts() {
    let (d, k, eps, n) = (100usize, 10usize, 4.0, 300u64);
    let m = CorrelatedProjUnit::new(eps, d, k).unwrap();
    assert_eq!(m.d_pad, 128);
    let public = m.public(seed_of(1)).unwrap();
    assert_eq!(
        public.signs(),
        Srht::generate(d, k, seed_of(1)).unwrap().signs()
    );
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let mut scratch = m.scratch();
    let mut zs = Vec::new();
    let mut slow = vec![0.0; d];
    let mut seq = vec![0.0; m.d_pad];
    for row in 0..n {
        let rows = m.rows(&public, row);
        let srht = Srht::generate(d, k, seed_of(1).for_row(row)).unwrap();
        assert_eq!(rows, srht.rows(), "row {row}");
        assert_eq!(m.rows_into(&public, row, &mut scratch), &rows[..]);
        let v: Vec<f64> = uniform_unit(d, &mut rng)
            .iter()
            .map(|x| x * (row % 3 + 1) as f64 / 3.0)
            .collect();
        let z = m.encode(&public, row, &v, &mut rng).unwrap();
        let x = m.decode_one(&public, row, &z).unwrap();
        slow.iter_mut()
            .zip(&x)
            .for_each(|(a, b)| *a += b / n as f64);
        m.scatter(&public, row, &z, &mut seq).unwrap();
        zs.push(z);
    }
    let acc = m.scatter_all(&public, 0, &zs).unwrap();
    let fast = m.finish(&public, &acc, n).unwrap();
    let fast_seq = m.finish(&public, &seq, n).unwrap();
    let scale = slow.iter().map(|x| x.abs()).fold(1.0f64, f64::max);
    for i in 0..d {
        assert!((fast[i] - slow[i]).abs() < 1e-12 * scale, "coordinate {i}");
        assert!(
            (fast_seq[i] - slow[i]).abs() < 1e-12 * scale,
            "coordinate {i}"
        );
    }
    // Power: the same users scattered from row 1 (wrong S_i) give a different mean.
    let shifted = m.finish(&public, &m.scatter_all(&public, 1, &zs).unwrap(), n);
    let diff: f64 = shifted
        .unwrap()
        .iter()
        .zip(&slow)
        .map(|(a, b)| (a - b).abs())
        .sum();
    assert!(diff > 1e-3, "{diff}");
    // decode_one against the explicit matrix: X = c·Wᵀẑ.
    let w = explicit_w(d, m.d_pad, &m.rows(&public, 7), public.signs());
    let x = m.decode_one(&public, 7, &zs[7]).unwrap();
    for i in 0..d {
        let want: f64 = m.c * (0..k).map(|j| w[j][i] * zs[7][j]).sum::<f64>();
        assert!((x[i] - want).abs() < 1e-12 * scale);
    }
}

/// Exact `E[X | D]` for a unit `v` at `d = d'`, averaging `c·WᵀWv/‖Wv‖` over all `k`-subsets `S`
/// (PrivUnitG is exactly debiased, so `E[ẑ | u] = u`).
fn conditional_mean(m: &CorrelatedProjUnit, signs: &[f64], v: &[f64]) -> Vec<f64> {
    let n = m.d_pad;
    let mut subsets: Vec<Vec<usize>> = vec![vec![]];
    for _ in 0..m.k {
        subsets = subsets
            .into_iter()
            .flat_map(|s| {
                let start = s.last().map_or(0, |x| x + 1);
                (start..n).map(move |r| {
                    let mut t = s.clone();
                    t.push(r);
                    t
                })
            })
            .collect();
    }
    let mut out = vec![0.0; m.d];
    for s in &subsets {
        let w = explicit_w(m.d, n, s, signs);
        let wv: Vec<f64> = w.iter().map(|row| dot(row, v)).collect();
        let nw = dot(&wv, &wv).sqrt();
        assert!(nw > 1e-9, "v is generic: Wv ≠ 0");
        for (j, row) in w.iter().enumerate() {
            for i in 0..m.d {
                out[i] += m.c * row[i] * wv[j] / nw / subsets.len() as f64;
            }
        }
    }
    out
}

#[test]
fn mean_matches_the_exact_enumeration_and_the_scale_factor_is_needed() {
    // d = d' = 8, k = 3 (so √(d'/k) ≠ 1), ε = 2; n users with the same unit v per release, T
    // independent releases (fresh D each).
    let (d, k, eps) = (8usize, 3usize, 2.0);
    let (n, t_rel) = (10u64, 4000u64);
    let m = CorrelatedProjUnit::new(eps, d, k).unwrap();
    let raw: Vec<f64> = (0..d)
        .map(|i| 1.0 + i as f64 * 0.37 + (i * i) as f64 * 0.05)
        .collect();
    let nv = dot(&raw, &raw).sqrt();
    let v: Vec<f64> = raw.iter().map(|x| x / nv).collect();
    let o_raw: Vec<f64> = (0..d)
        .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let c0 = dot(&o_raw, &v);
    let o_raw: Vec<f64> = o_raw.iter().zip(&v).map(|(a, b)| a - c0 * b).collect();
    let no = dot(&o_raw, &o_raw).sqrt();
    let o: Vec<f64> = o_raw.iter().map(|x| x / no).collect();
    // Exact moments over all 2⁸ diagonals.
    let (mut mean, mut e_m2, mut e_bias2) = (vec![0.0; d], 0.0, 0.0);
    for bits in 0u32..256 {
        let signs: Vec<f64> = (0..d)
            .map(|i| if bits >> i & 1 == 1 { 1.0 } else { -1.0 })
            .collect();
        let md = conditional_mean(&m, &signs, &v);
        mean.iter_mut().zip(&md).for_each(|(a, b)| *a += b / 256.0);
        e_m2 += dot(&md, &md) / 256.0;
        e_bias2 += md.iter().zip(&v).map(|(a, b)| (a - b).powi(2)).sum::<f64>() / 256.0;
    }
    let ex2 = m.mse_unit() + 1.0; // E‖X‖², exact at d = d'
    let mse_mean = (ex2 - e_m2) / n as f64 + e_bias2;
    let (along_exact, across_exact) = (dot(&mean, &v), dot(&mean, &o));
    eprintln!(
        "exact: E⟨X,v⟩ = {along_exact}, E⟨X,o⟩ = {across_exact}, E‖X‖² = {ex2}, \
         E‖m(D) − v‖² = {e_bias2}, mean mse = {mse_mean} (vs mse_unit/n = {})",
        m.mse_unit() / n as f64
    );
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let (mut along, mut across, mut err, mut user_x2) = (vec![], vec![], vec![], vec![]);
    let (mut bad_along, mut bad_err) = (vec![], vec![]);
    let s_miss = (k as f64 / m.d_pad as f64).sqrt();
    for t in 0..t_rel {
        let public = m.public(seed_of(1_000 + t)).unwrap();
        let zs: Vec<Vec<f64>> = (0..n)
            .map(|row| m.encode(&public, row, &v, &mut rng).unwrap())
            .collect();
        user_x2.push(dot(&zs[0], &zs[0]) * m.c * m.c * m.d_pad as f64 / k as f64);
        let mu = m
            .finish(&public, &m.scatter_all(&public, 0, &zs).unwrap(), n)
            .unwrap();
        along.push(dot(&mu, &v));
        across.push(dot(&mu, &o));
        err.push(mu.iter().zip(&v).map(|(a, b)| (a - b).powi(2)).sum::<f64>());
        // The printed Algorithm 4 (no √(d'/k)): μ̂·√(k/d').
        bad_along.push(s_miss * dot(&mu, &v));
        bad_err.push(
            mu.iter()
                .zip(&v)
                .map(|(a, b)| (s_miss * a - b).powi(2))
                .sum::<f64>(),
        );
    }
    assert!(
        z_score(&along, along_exact) < 4.0,
        "along {:?}",
        mean_se(&along)
    );
    assert!(
        z_score(&across, across_exact) < 4.0,
        "across {:?}",
        mean_se(&across)
    );
    assert!(
        z_score(&err, mse_mean) < 4.0,
        "mse {:?} vs {mse_mean}",
        mean_se(&err)
    );
    assert!(
        z_score(&user_x2, ex2) < 4.0,
        "E‖X‖² {:?}",
        mean_se(&user_x2)
    );
    assert!(
        z_score(&bad_along, along_exact) > 4.0,
        "power: √(d'/k) omitted"
    );
    assert!(
        z_score(&bad_err, mse_mean) > 4.0,
        "power: √(d'/k) omitted (error)"
    );
    // Power of the along test against a 5% wrong constant.
    let off: Vec<f64> = along.iter().map(|x| 1.05 * x).collect();
    assert!(z_score(&off, along_exact) > 4.0, "power: 5% wrong c");
    // The SRHT is nearly unbiased: the exact bias along v is small.
    assert!((along_exact - 1.0).abs() < 0.05, "{along_exact}");
}

#[test]
fn client_output_given_d_and_s_is_privunitg_of_the_projected_direction() {
    let (d, k, eps) = (12usize, 5usize, 3.0);
    let m = CorrelatedProjUnit::new(eps, d, k).unwrap();
    assert_eq!(m.d_pad, 16);
    let public = m.public(seed_of(42)).unwrap();
    let mut r0 = ChaCha20Rng::seed_from_u64(3);
    for row in [0u64, 1, 99] {
        // Normalised exactly as the client does (`v/‖v‖` for a unit-norm input).
        let v = uniform_unit(d, &mut r0);
        let nv = norm2(&v);
        let v: Vec<f64> = v.iter().map(|x| x / nv).collect();
        let w = explicit_w(d, m.d_pad, &m.rows(&public, row), public.signs());
        let wv: Vec<f64> = w.iter().map(|r| dot(r, &v)).collect();
        let nwv = dot(&wv, &wv).sqrt();
        let u = m.project_direction(&public, row, &v).unwrap();
        assert!(u.iter().zip(&wv).all(|(a, b)| (a - b / nwv).abs() < 1e-12));
        let (mut ra, mut rb) = (ChaCha20Rng::seed_from_u64(9), ChaCha20Rng::seed_from_u64(9));
        let z = m.encode(&public, row, &v, &mut ra).unwrap();
        assert_eq!(z, m.inner.privatize_unit(&u, &mut rb).unwrap(), "row {row}");
        // The privacy loss against −v (and random v') at these outputs is ≤ ε and attains it.
        let mut worst = f64::NEG_INFINITY;
        for t in 0..2000u64 {
            let z = m.encode(&public, row, &v, &mut ra).unwrap();
            let v2: Vec<f64> = if t % 2 == 0 {
                v.iter().map(|x| -x).collect()
            } else {
                uniform_unit(d, &mut r0)
            };
            let u2 = m.project_direction(&public, row, &v2).unwrap();
            worst = worst.max(m.inner.ln_density(&z, &u) - m.inner.ln_density(&z, &u2));
        }
        assert!(worst <= eps + 1e-12 && worst >= eps - 1e-9, "{worst}");
    }
}

#[test]
fn bad_parameters_and_inputs_are_errors() {
    assert!(CorrelatedProjUnit::new(1.0, 10, 17).is_err());
    assert!(CorrelatedProjUnit::new(1.0, 10, 1).is_err());
    assert!(CorrelatedProjUnit::new(0.0, 10, 4).is_err());
    assert!(CorrelatedProjUnit::new(1.0, 10, 16).is_ok());
    let m = CorrelatedProjUnit::new(1.0, 10, 4).unwrap();
    let other = CorrelatedProjUnit::new(1.0, 40, 4).unwrap();
    let public = m.public(seed_of(1)).unwrap();
    let wrong_public = other.public(seed_of(1)).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let v = [0.6, 0.8, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    assert!(m.encode(&public, 0, &v, &mut rng).is_ok());
    assert!(m.encode(&wrong_public, 0, &v, &mut rng).is_err());
    assert!(m.encode(&public, 0, &v[..9], &mut rng).is_err());
    assert!(m.encode(&public, 0, &[1.0; 10], &mut rng).is_err());
    let mut acc = vec![0.0; 16];
    assert!(m.scatter(&public, 0, &[1.0; 4], &mut acc).is_ok());
    assert!(m.scatter(&public, 0, &[1.0; 3], &mut acc).is_err());
    assert!(m.scatter(&public, 0, &[f64::NAN; 4], &mut acc).is_err());
    assert!(m.scatter(&public, 0, &[1.0; 4], &mut [0.0; 10]).is_err());
    assert!(m.finish(&public, &acc, 0).is_err());
    assert!(m.finish(&public, &acc[..10], 1).is_err());
    assert!(m.decode_one(&public, 0, &[1.0; 5]).is_err());
    assert!(m.scatter_all(&public, 0, &[vec![1.0; 5]]).is_err());
}
