//! PrivUnit2 × ScalarDP (Bhowmick et al. eq. (22)): unbiasedness and the closed-form MSE for
//! vectors in a ball of public radius R, the two budgets, and bad input.

use crate::ldp_common;

use dprp::mechanism::local::PrivUnit2Norm;
use ldp_common::*;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

#[test]
fn unbiased_with_closed_form_mse() {
    let d = 10;
    let radius = 3.0;
    let n = 40_000;
    let mech = PrivUnit2Norm::new(4.0, 3.0, d, radius).unwrap();
    assert!((mech.epsilon() - 7.0).abs() < 1e-9);
    assert_eq!(mech.magnitude.k, 3); // ⌈e^{3/3}⌉
    let dir: Vec<f64> = (0..d).map(|j| if j == 3 { 1.0 } else { 0.0 }).collect();
    let orth: Vec<f64> = (0..d).map(|j| if j == 4 { 1.0 } else { 0.0 }).collect();
    let mut rng = ChaCha20Rng::seed_from_u64(22);
    for &r in &[2.0, 3.0, 0.0] {
        let w: Vec<f64> = dir.iter().map(|x| x * r).collect();
        let zs: Vec<Vec<f64>> = (0..n)
            .map(|_| mech.privatize(&w, &mut rng).unwrap())
            .collect();
        let along: Vec<f64> = zs.iter().map(|z| dot(z, &dir)).collect();
        let across: Vec<f64> = zs.iter().map(|z| dot(z, &orth)).collect();
        let err: Vec<f64> = zs.iter().map(|z| dist2(z, &w)).collect();
        let mse = mech.mse(r).unwrap();
        assert!(z_score(&along, r) < 4.0, "r = {r}: along");
        assert!(z_score(&across, 0.0) < 4.0, "r = {r}: across");
        assert!(z_score(&err, mse) < 4.0, "r = {r}: mse {mse}");
        // Power: 10% wrong overall scale.
        if r > 0.0 {
            let bad: Vec<f64> = along.iter().map(|x| x * 1.1).collect();
            assert!(z_score(&bad, r) > 4.0, "power along, r = {r}");
        }
        let bad_err: Vec<f64> = zs
            .iter()
            .map(|z| dist2(&z.iter().map(|x| x * 1.1).collect::<Vec<_>>(), &w))
            .collect();
        assert!(z_score(&bad_err, mse) > 4.0, "power mse, r = {r}");
    }
}

#[test]
fn bad_inputs_are_errors() {
    assert!(PrivUnit2Norm::new(0.0, 1.0, 5, 1.0).is_err());
    assert!(PrivUnit2Norm::new(1.0, f64::NAN, 5, 1.0).is_err());
    assert!(PrivUnit2Norm::new(1.0, 1.0, 1, 1.0).is_err());
    assert!(PrivUnit2Norm::new(1.0, 1.0, 5, 0.0).is_err());
    assert!(PrivUnit2Norm::new(1.0, 1.0, 5, f64::INFINITY).is_err());
    let m = PrivUnit2Norm::new(1.0, 1.0, 3, 2.0).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    assert!(m.privatize(&[2.5, 0.0, 0.0], &mut rng).is_err());
    assert!(m.privatize(&[f64::NAN, 0.0, 0.0], &mut rng).is_err());
    assert!(m.privatize(&[1.0, 0.0], &mut rng).is_err());
    assert!(m.mse(2.5).is_err());
    assert!(m.privatize(&[2.0, 0.0, 0.0], &mut rng).is_ok());
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum()
}

/// ScalarDP's keep coin is exact: at ε = 70 with k = 2³², `e^ε/(e^ε + k)` is 1.0 in `f64`, and
/// the old `uniform_f64 < p_keep` never moved the level (an unbounded loss between two levels).
/// The coin moves it with probability `≥ k/(k + e^{70})`: words at the top move the level, a lower
/// first word keeps it.
#[test]
fn scalar_dp_moves_the_level_at_huge_budgets() {
    use dprp::mechanism::local::ScalarDp;
    let k = 1u64 << 32;
    let s = ScalarDp::with_k(70.0, k, 1.0).unwrap();
    assert_eq!(1.0 / (1.0 + k as f64 * (-70f64).exp()), 1.0);
    let moves = k as f64 * (-70f64).exp();
    assert!(s.keep.complement() >= moves * (1.0 - 1e-15) && s.keep.complement() < 1.0001 * moves);
    let top = (s.keep.threshold() >> 64) as u64;
    assert_eq!(top, u64::MAX);
    // r = r_max: J = k (the rounding word is consumed anyway)
    let kept = s.a * (s.k as f64 - s.b);
    let z = s
        .privatize(1.0, &mut Scripted::new(&[0, top, u64::MAX], 3))
        .unwrap();
    assert!(z < kept, "the top words must move the level: Z = {z}");
    let z = s
        .privatize(1.0, &mut Scripted::new(&[0, top - 1], 3))
        .unwrap();
    assert_eq!(z, kept);
    // and the constants are those of the coin: b = q(k+1)/2 with q its move probability
    let want = s.keep.complement() * (k as f64 + 1.0) / 2.0;
    assert!((s.b - want).abs() <= 1e-15 * want);
}
