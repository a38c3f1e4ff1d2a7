//! Sign mechanisms (DESIGN.md §4–6): flip rates, the privacy arguments checked on the actual
//! projections, iDP noise sets, packing, and the Theorem 4.5 estimator. Tolerances are derived from
//! the number of trials (5 standard errors), seeds are fixed. Run with `cargo test --release`.

use dprp::estimate::{agreements, sign_cosine, QueryMode};
use dprp::mechanism::central::arithmetic::Arithmetic;
use dprp::mechanism::central::public_map::step_sizes;
use dprp::mechanism::central::public_map::PublicMap;
use dprp::mechanism::central::sign_sketch::{pack_signs, FlipRule, SignSketch};
use dprp::mechanism::{build, Mechanism, MechanismKind, MechanismParams, SketchMut};
use dprp::privacy::guarantee::Neighbour;
use dprp::privacy::rr::{rr_flip_probability, split_epsilon, steps_to_flip, Flip};
use dprp::privacy::samplers::noise::NoiseSource;
use dprp::projection::{DenseKind, DenseProjection, Oporp, Seed};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// Rebuild a sign mechanism from its record through its kind's own file (what
/// `mechanism::from_record` does), keeping the concrete type for the sign-only methods.
pub(crate) fn sign_from_record(
    rec: &dprp::mechanism::MechanismRecord,
    guarantee: &dprp::privacy::guarantee::Guarantee,
) -> dprp::error::Result<SignSketch> {
    use dprp::mechanism::central::{idp_sign, sign_rr, smooth_flipping};
    use dprp::mechanism::MechanismKind as K;
    match rec.name {
        K::DpSignrpRr | K::DpSignoporpRr => sign_rr::from_record(rec, guarantee),
        K::DpSignrpRrSmooth | K::DpSignoporpRrSmooth => {
            smooth_flipping::from_record(rec, guarantee)
        }
        K::IdpSignrpG | K::IdpSignrpRr | K::IdpSignoporpG | K::IdpSignoporpRr => {
            idp_sign::from_record(rec, guarantee)
        }
        other => panic!("{} is not a sign mechanism", other.name()),
    }
}

fn params(kind: MechanismKind, p: usize, k: usize, eps: f64) -> MechanismParams {
    MechanismParams {
        kind,
        epsilon: eps,
        delta: Some(1e-6),
        beta: 1.0,
        neighbour: Neighbour::Coordinate,
        p,
        k: Some(k),
        projection: None,
        seed: Some(Seed::parse_hex("5151").unwrap()),
        min_norm: Some(2.0),
        individual_dp: true,
        local: Default::default(),
    }
}

fn uniform(rng: &mut ChaCha20Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

fn random_row(rng: &mut ChaCha20Rng, p: usize) -> Vec<f32> {
    (0..p).map(|_| (2.0 * uniform(rng) - 1.0) as f32).collect()
}

fn bit(words: &[u64], j: usize) -> bool {
    (words[j / 64] >> (j % 64)) & 1 == 1
}

/// Release the same row `trials` times with independent noise; count per-sign flips against the
/// noiseless signs.
fn flip_counts(m: &dyn Mechanism, u: &[f32], trials: usize) -> (Vec<u64>, Vec<f32>) {
    let k = m.output_dim();
    let wpr = k.div_ceil(64);
    let mut x = vec![0f32; k];
    m.as_sketch().unwrap().project(u, &mut x).unwrap();
    let mut clean = vec![0u64; wpr];
    pack_signs(&x, &mut clean);
    let mut counts = vec![0u64; k];
    let mut out = vec![0u64; wpr];
    let noise = NoiseSource::from_seed("flip-rates");
    for t in 0..trials {
        let mut rng = noise.row_rng(t as u64);
        m.privatise(u, 0, SketchMut::Bits(&mut out), &mut rng)
            .unwrap();
        for (j, c) in counts.iter_mut().enumerate() {
            *c += (bit(&out, j) != bit(&clean, j)) as u64;
        }
    }
    (counts, x)
}

/// Binomial check: `count` successes in `n` trials against probability `q`, 5 standard errors (and
/// at least 1.5 counts, for q near 0).
fn binomial_ok(count: u64, n: u64, q: f64) -> bool {
    let mean = n as f64 * q;
    let se = (n as f64 * q * (1.0 - q)).sqrt();
    (count as f64 - mean).abs() <= 5.0 * se + 1.5
}

#[test]
fn randomised_response_flips_each_sign_at_the_calibrated_rate() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let u = random_row(&mut rng, 100);
    for (kind, eps) in [
        (MechanismKind::DpSignoporpRr, 1.0),
        (MechanismKind::DpSignrpRr, 100.0),
    ] {
        let m = build(&params(kind, 100, 64, eps)).unwrap();
        let rec = m.record().sign.unwrap();
        let FlipRule::RandomisedResponse {
            eps_prime,
            flip_probability,
        } = rec.rule
        else {
            panic!()
        };
        let expected_eps = match &rec.n_plus {
            Some(n) => split_epsilon(eps, n.n_plus as u64),
            None => eps,
        };
        assert_eq!(eps_prime, expected_eps);
        // ε' is ε/N₊ rounded down: N₊·ε' ≤ ε exactly (one rounding in the fused multiply-add)
        let n_plus = rec.n_plus.as_ref().map_or(1, |n| n.n_plus) as f64;
        assert!(eps_prime.mul_add(n_plus, -eps) <= 0.0);
        // the recorded coin is the exact dyadic Q/2^64 the mechanism uses, rounded toward ½
        let coin = Flip::randomised_response(eps_prime).unwrap();
        assert_eq!(rec.flip_threshold, Some(coin.threshold()));
        assert_eq!(flip_probability, coin.probability());
        assert!(flip_probability >= rr_flip_probability(eps_prime));
        assert!((flip_probability - 1.0 / (1.0 + eps_prime.exp())).abs() < 1e-15);
        let trials = 20_000;
        let (counts, _) = flip_counts(m.as_ref(), &u, trials);
        for (j, &c) in counts.iter().enumerate() {
            assert!(
                binomial_ok(c, trials as u64, flip_probability),
                "{kind:?} sign {j}: {c} flips of {trials}, expected q = {flip_probability}"
            );
        }
        // pooled over all signs the test is sharp: a 2% error in q would be caught
        let total: u64 = counts.iter().sum();
        let n = (trials * 64) as u64;
        assert!(binomial_ok(total, n, flip_probability));
        assert!(
            !binomial_ok(total, n, flip_probability * 1.02),
            "{kind:?}: no power"
        );
    }
}

#[test]
fn smooth_flipping_flips_each_sign_with_its_own_probability() {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    let p = 60;
    let u: Vec<f32> = random_row(&mut rng, p);
    for kind in [
        MechanismKind::DpSignrpRrSmooth,
        MechanismKind::DpSignoporpRrSmooth,
    ] {
        let eps = if kind == MechanismKind::DpSignoporpRrSmooth {
            1.0
        } else {
            32.0
        };
        let m = build(&params(kind, p, 32, eps)).unwrap();
        let FlipRule::SmoothFlipping { eps_prime } = m.record().sign.unwrap().rule else {
            panic!()
        };
        let expect_eps = if kind == MechanismKind::DpSignoporpRrSmooth {
            eps
        } else {
            eps / 32.0
        };
        assert_eq!(eps_prime, expect_eps);
        let trials = 20_000;
        let (counts, x) = flip_counts(m.as_ref(), &u, trials);
        let SignSketchView { steps } = view(&kind, p, 32);
        let mut seen_levels = std::collections::BTreeSet::new();
        for j in 0..32 {
            let l = steps_to_flip(x[j] as f64, steps[j]);
            seen_levels.insert(l);
            let q = rr_flip_probability(eps_prime * l as f64);
            assert!(
                binomial_ok(counts[j], trials as u64, q),
                "{kind:?} sign {j}: L = {l}, {} flips, expected q = {q}",
                counts[j]
            );
        }
        assert!(
            seen_levels.len() >= 2,
            "the test should cover several L: {seen_levels:?}"
        );
    }
}

struct SignSketchView {
    steps: Vec<f64>,
}

/// The step sizes c_j of the mechanism `params(kind, p, k, ·)` builds (same seed).
fn view(kind: &MechanismKind, p: usize, k: usize) -> SignSketchView {
    let seed = Seed::parse_hex("5151").unwrap();
    let map = if kind.oporp() {
        PublicMap::Oporp(Oporp::generate(p, k, seed).unwrap())
    } else {
        PublicMap::Dense(DenseProjection::generate(DenseKind::Rademacher, p, k, seed).unwrap())
    };
    SignSketchView {
        steps: step_sizes(&map, 1.0),
    }
}

/// The premise of smooth flipping, on the actual projections: for random rows and random
/// β-neighbours (one coordinate moved by up to β, including exactly ±β), `|L_j − L'_j| ≤ 1` for
/// every j, and a sign changes only where both `L_j, L'_j ≤ 1`. OPORP: at most one bin moves.
#[test]
fn neighbours_move_every_level_by_at_most_one() {
    let (p, k, beta) = (200, 64, 0.8);
    let seed = Seed::parse_hex("77").unwrap();
    let maps = vec![
        PublicMap::Dense(DenseProjection::generate(DenseKind::Rademacher, p, k, seed).unwrap()),
        PublicMap::Dense(DenseProjection::generate(DenseKind::Gaussian, p, k, seed).unwrap()),
        PublicMap::Dense(
            DenseProjection::generate(DenseKind::Sparse { s: 3.0 }, p, k, seed).unwrap(),
        ),
        PublicMap::Oporp(Oporp::generate(p, k, seed).unwrap()),
    ];
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    for map in &maps {
        let steps = step_sizes(map, beta);
        let mut max_jump = 0u64;
        for t in 0..3000 {
            // small rows so that many values sit near zero
            let u: Vec<f32> = random_row(&mut rng, p).iter().map(|v| v * 0.05).collect();
            let i = (rng.next_u64() % p as u64) as usize;
            let d = match t % 3 {
                0 => beta,
                1 => -beta,
                _ => beta * (2.0 * uniform(&mut rng) - 1.0),
            } as f32;
            let mut v = u.clone();
            v[i] += d;
            let (mut x, mut y) = (vec![0f32; k], vec![0f32; k]);
            map.apply(&u, &mut x);
            map.apply(&v, &mut y);
            let mut moved = 0;
            for j in 0..k {
                // 1e-5 absorbs f32 rounding of the projection
                let l = steps_to_flip(x[j] as f64, steps[j] * (1.0 + 1e-5));
                let l2 = steps_to_flip(y[j] as f64, steps[j] * (1.0 + 1e-5));
                max_jump = max_jump.max(l.abs_diff(l2));
                assert!(l.abs_diff(l2) <= 1, "L {l} → {l2}");
                if (x[j] >= 0.0) != (y[j] >= 0.0) {
                    assert!(l <= 1 && l2 <= 1, "sign changed at L {l} → {l2}");
                }
                moved += (x[j] != y[j]) as usize;
            }
            if let PublicMap::Oporp(_) = map {
                assert!(moved <= 1, "OPORP: {moved} bins moved");
            }
        }
        assert_eq!(max_jump, 1, "the neighbours should exercise level changes");
    }
    // Power: with half the true step size the premise fails for some neighbour.
    let steps: Vec<f64> = step_sizes(&maps[0], beta).iter().map(|c| c / 2.0).collect();
    let mut broke = false;
    for _ in 0..500 {
        let u: Vec<f32> = random_row(&mut rng, p).iter().map(|v| v * 0.05).collect();
        let mut v = u.clone();
        v[0] += beta as f32;
        let (mut x, mut y) = (vec![0f32; k], vec![0f32; k]);
        maps[0].apply(&u, &mut x);
        maps[0].apply(&v, &mut y);
        broke |= (0..k).any(|j| {
            steps_to_flip(x[j] as f64, steps[j]).abs_diff(steps_to_flip(y[j] as f64, steps[j])) > 1
        });
    }
    assert!(broke, "a wrong step size must be detectable");
}

/// iDP (Algorithm 7): outside the noise set A, no β-neighbour of the row can change a sign; and
/// the mechanism releases those signs untouched.
#[test]
fn idp_signs_outside_the_noise_set_cannot_change() {
    let (p, k) = (120, 96);
    let mut rng = ChaCha20Rng::seed_from_u64(4);
    for kind in [
        MechanismKind::IdpSignrpG,
        MechanismKind::IdpSignrpRr,
        MechanismKind::IdpSignoporpG,
        MechanismKind::IdpSignoporpRr,
    ] {
        let m = build(&params(kind, p, k, 1.0)).unwrap();
        let rec = m.record();
        let s = sign_from_record(&rec, &m.guarantee()).unwrap();
        let mut in_a_total = 0;
        for _ in 0..40 {
            let u: Vec<f32> = random_row(&mut rng, p).iter().map(|v| v * 0.3).collect();
            // the values the mechanism computes (f64; `project` rounds them to f32)
            let x = s.project_values(&u).unwrap();
            let mut mask = Vec::new();
            let size = s.noise_set(&x, &mut mask);
            in_a_total += size;
            for i in 0..p {
                for d in [1.0f32, -1.0] {
                    let mut v = u.clone();
                    v[i] += d;
                    if v[i].abs() > 1.0 {
                        continue; // outside the domain [−1, 1]
                    }
                    let y = s.project_values(&v).unwrap();
                    for j in (0..k).filter(|&j| !mask[j]) {
                        assert_eq!(
                            x[j] >= 0.0,
                            y[j] >= 0.0,
                            "{kind:?}: sign {j} outside A changed"
                        );
                    }
                }
            }
            // released signs outside A equal the clean signs, whatever the noise
            let mut clean = vec![0u64; k.div_ceil(64)];
            pack_signs(&x, &mut clean);
            for t in 0..20 {
                let mut out = vec![0u64; k.div_ceil(64)];
                let mut r = NoiseSource::from_seed(&format!("idp{t}")).row_rng(0);
                m.privatise(&u, 0, SketchMut::Bits(&mut out), &mut r)
                    .unwrap();
                for j in (0..k).filter(|&j| !mask[j]) {
                    assert_eq!(bit(&out, j), bit(&clean, j));
                }
            }
        }
        assert!(
            in_a_total > 0,
            "{kind:?}: the rows should have non-empty noise sets"
        );
    }
}

/// iDP-RR on a dense projection flips signs in A with 1/(1+e^{ε/|A|}); Rademacher iDP-G uses
/// Δ₂(A) = β_q·√(|A|/k), `β_q = β + 2^-12` (inputs on the grid 2^-12 at β = 1).
#[test]
fn idp_calibration_follows_the_noise_set() {
    let (p, k) = (100, 64);
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let u: Vec<f32> = random_row(&mut rng, p).iter().map(|v| v * 0.2).collect();
    let m = build(&params(MechanismKind::IdpSignrpRr, p, k, 2.0)).unwrap();
    let s = sign_from_record(&m.record(), &m.guarantee()).unwrap();
    let mut x = vec![0f32; k];
    m.as_sketch().unwrap().project(&u, &mut x).unwrap();
    let mut mask = Vec::new();
    let size = s.noise_set(&x, &mut mask);
    assert!(size > 2);
    let q = rr_flip_probability(2.0 / size as f64);
    let trials = 20_000;
    let (counts, _) = flip_counts(m.as_ref(), &u, trials);
    for j in 0..k {
        let expect = if mask[j] { q } else { 0.0 };
        assert!(
            binomial_ok(counts[j], trials as u64, expect),
            "sign {j}: {} vs q {expect}",
            counts[j]
        );
    }
    let g = build(&params(MechanismKind::IdpSignrpG, p, k, 2.0)).unwrap();
    let sg = sign_from_record(&g.record(), &g.guarantee()).unwrap();
    let want = (1.0 + 1.0 / 4096.0) * (size as f64 / k as f64).sqrt();
    let got = sg.set_sensitivity(&mask, size);
    assert!(got >= want && got < want * (1.0 + 1e-12), "{got} vs {want}");
}

#[test]
fn packing_is_lsb_first_with_zero_tail() {
    let x: Vec<f32> = (0..70)
        .map(|j| {
            if j % 3 == 0 {
                -1.0
            } else if j == 5 {
                0.0
            } else {
                0.5
            }
        })
        .collect();
    let mut w = vec![0u64; 2];
    pack_signs(&x, &mut w);
    for (j, &v) in x.iter().enumerate() {
        assert_eq!(bit(&w, j), v >= 0.0, "bit {j}");
    }
    assert_eq!(w[1] >> 6, 0, "bits past k must be zero");
    assert_eq!(agreements(&w, &w, 70), 70);
    let mut w2 = w.clone();
    w2[1] ^= 1u64 << 63; // beyond k: ignored
    w2[0] ^= 1;
    assert_eq!(agreements(&w, &w2, 70), 69);
}

/// Theorem 4.5 on Gaussian projections (where the sign-collision probability is exactly 1 − θ/π):
/// θ̂ is unbiased and its variance matches the formula, both sides flipped and raw query.
#[test]
fn sign_estimator_is_unbiased_with_the_theorem_variance() {
    let (p, k) = (50, 256);
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    let u = random_row(&mut rng, p);
    let mut v: Vec<f32> = u.iter().map(|&a| 0.6 * a).collect();
    for (i, x) in random_row(&mut rng, p).into_iter().enumerate() {
        v[i] += 0.5 * x;
    }
    let dot: f64 = u.iter().zip(&v).map(|(&a, &b)| a as f64 * b as f64).sum();
    let nu: f64 = u.iter().map(|&a| (a as f64).powi(2)).sum::<f64>().sqrt();
    let nv: f64 = v.iter().map(|&a| (a as f64).powi(2)).sum::<f64>().sqrt();
    let theta = (dot / (nu * nv)).acos();
    let mut base = params(MechanismKind::DpSignrpRr, p, k, 300.0);
    base.projection = Some(DenseKind::Gaussian);
    base.min_norm = Some(nu.min(nv) * 0.99);
    let m0 = build(&base).unwrap();
    let rec0 = m0.record();
    let eps_prime = match rec0.sign.as_ref().unwrap().rule {
        FlipRule::RandomisedResponse { eps_prime, .. } => eps_prime,
        _ => panic!(),
    };
    assert!(
        eps_prime > 0.3 && eps_prime < 3.0,
        "ε' = {eps_prime}: pick ε for a useful test"
    );
    let trials = 4000;
    for mode in [QueryMode::BothPrivate, QueryMode::RawQuery] {
        let mut est = Vec::with_capacity(trials);
        let mut var_formula = 0.0;
        let e = eps_prime.exp();
        for t in 0..trials {
            // a fresh public projection per trial (same calibration), fresh noise
            let mut rec = rec0.clone();
            if let dprp::mechanism::ProjectionRecord::Dense { seed, .. } = &mut rec.projection {
                *seed = Seed::parse_hex(&format!("{:x}", 1000 + t)).unwrap();
            }
            let m = sign_from_record(&rec, &m0.guarantee()).unwrap();
            let wpr = k.div_ceil(64);
            let (mut a, mut b) = (vec![0u64; wpr], vec![0u64; wpr]);
            let mut r = NoiseSource::from_seed(&format!("est{t}")).row_rng(0);
            m.privatise(&v, 0, SketchMut::Bits(&mut b), &mut r).unwrap();
            match mode {
                QueryMode::BothPrivate => {
                    m.privatise(&u, 0, SketchMut::Bits(&mut a), &mut r).unwrap()
                }
                QueryMode::RawQuery => {
                    let mut x = vec![0f32; k];
                    m.as_sketch().unwrap().project(&u, &mut x).unwrap();
                    pack_signs(&x, &mut a);
                }
            }
            let s = sign_cosine(agreements(&a, &b, k), k, Some(eps_prime), mode);
            est.push(s.theta);
            let p_true = match mode {
                QueryMode::BothPrivate => {
                    (1.0 - theta / std::f64::consts::PI) * ((e - 1.0) / (e + 1.0)).powi(2)
                        + 2.0 * e / ((e + 1.0) * (e + 1.0))
                }
                QueryMode::RawQuery => {
                    (1.0 - theta / std::f64::consts::PI) * (e - 1.0) / (e + 1.0) + 1.0 / (e + 1.0)
                }
            };
            let slope = match mode {
                QueryMode::BothPrivate => ((e - 1.0) / (e + 1.0)).powi(2),
                QueryMode::RawQuery => (e - 1.0) / (e + 1.0),
            };
            var_formula =
                (std::f64::consts::PI / slope).powi(2) * p_true * (1.0 - p_true) / k as f64;
        }
        let n = est.len() as f64;
        let mean = est.iter().sum::<f64>() / n;
        let var = est.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let m4 = est.iter().map(|x| (x - mean).powi(4)).sum::<f64>() / n;
        let se_mean = (var / n).sqrt();
        let se_var = ((m4 - var * var) / n).sqrt();
        eprintln!(
            "{mode:?}: θ = {theta:.4}, mean θ̂ = {mean:.4} (z {:.2}); var {var:.5} vs formula {var_formula:.5} (z {:.2})",
            (mean - theta) / se_mean,
            (var - var_formula) / se_var
        );
        assert!(((mean - theta) / se_mean).abs() < 5.0, "{mode:?}: biased");
        assert!(
            ((var - var_formula) / se_var).abs() < 5.0,
            "{mode:?}: variance"
        );
        // power: ignoring the flips (ε' = ∞ formula) must be rejected
        let naive = std::f64::consts::PI.powi(2)
            * (1.0 - theta / std::f64::consts::PI)
            * (theta / std::f64::consts::PI)
            / k as f64;
        assert!(((var - naive) / se_var).abs() > 5.0, "{mode:?}: no power");
    }
}

#[test]
fn bad_parameters_for_sign_mechanisms() {
    let mut p = params(MechanismKind::DpSignrpRr, 50, 16, 1.0);
    p.min_norm = None;
    let e = build(&p).err().unwrap().render(dprp::error::Front::Cli);
    assert!(e.contains("--min-norm"), "{e}");
    p.min_norm = Some(0.0);
    assert!(build(&p)
        .err()
        .unwrap()
        .render(dprp::error::Front::Cli)
        .contains("--min-norm"));
    let mut p = params(MechanismKind::DpSignrpRr, 50, 16, 1.0);
    p.projection = Some(DenseKind::Uniform);
    assert!(build(&p)
        .err()
        .unwrap()
        .render(dprp::error::Front::Cli)
        .contains("--projection"));
    let mut p = params(MechanismKind::IdpSignrpG, 50, 16, 1.0);
    p.individual_dp = false;
    let e = build(&p).err().unwrap().render(dprp::error::Front::Cli);
    assert!(e.contains("--individual-dp") && e.contains("weaker"), "{e}");
    let mut p = params(MechanismKind::DpSignoporpRr, 50, 16, 1.0);
    p.neighbour = Neighbour::L1;
    assert!(build(&p)
        .err()
        .unwrap()
        .render(dprp::error::Front::Cli)
        .contains("--neighbour"));
    let p = params(MechanismKind::DpSignoporpRrSmooth, 50, 51, 1.0);
    assert!(build(&p)
        .err()
        .unwrap()
        .render(dprp::error::Front::Cli)
        .contains("k ≤ p"));
}

/// Reference values of a public map in the mechanism's arithmetic, more accurate than the
/// mechanism's: dense on the grid, the exact integer sums `Σ_i round(u_i·2^q)·w_ij/unit` (i64)
/// scaled once; dense in f64, `Σ_i u_i w_ij / √k` by compensated (Neumaier) summation; OPORP:
/// `Σ_{i→j} s_i u_i`.
fn project_f64(map: &PublicMap, u: &[f32], arithmetic: Arithmetic) -> Vec<f64> {
    match map {
        PublicMap::Dense(d) => {
            let k = d.k();
            let unit = d.unit() as f64;
            match arithmetic {
                Arithmetic::Grid { q } => {
                    let mut sums = vec![0i64; k];
                    for (i, &ui) in u.iter().enumerate() {
                        let n = (ui as f64 * 2f64.powi(q)).round_ties_even() as i64;
                        for (j, sj) in sums.iter_mut().enumerate() {
                            *sj += n * (d.entry(i, j) / unit) as i64;
                        }
                    }
                    sums.iter()
                        .map(|&sj| sj as f64 * unit * 2f64.powi(-q) / (k as f64).sqrt())
                        .collect()
                }
                Arithmetic::Float64 => (0..k)
                    .map(|j| {
                        let (mut sum, mut comp) = (0f64, 0f64);
                        for (i, &ui) in u.iter().enumerate() {
                            let t = ui as f64 * d.entry(i, j);
                            let s2 = sum + t;
                            comp += if sum.abs() >= t.abs() {
                                (sum - s2) + t
                            } else {
                                (t - s2) + sum
                            };
                            sum = s2;
                        }
                        (sum + comp) / (k as f64).sqrt()
                    })
                    .collect(),
            }
        }
        PublicMap::Oporp(o) => {
            let mut x = vec![0f64; o.k()];
            for ((&ui, &b), &s) in u.iter().zip(o.bins()).zip(o.signs()) {
                x[b as usize] += s as f64 * ui as f64;
            }
            x
        }
        PublicMap::Identity { .. } => u.iter().map(|&v| v as f64).collect(),
    }
}

/// The smooth-flipping premise with the mechanism's own arithmetic (f32 projection, guarded steps,
/// the level pass it runs): full-scale rows in [-1, 1]^p and β-neighbours, at a small ε' so that
/// levels are distinguished up to thousands. The f32 projection error measured against f64 stays inside the
/// guard the mechanism adds to its steps (`fp_guard`); crafted values at level boundaries keep
/// `|L − L'| ≤ 1`, and a step beyond the guarded one breaks it (so the check has power).
#[test]
fn smooth_levels_as_computed_move_by_at_most_one() {
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    for (kind, projection, p, k) in [
        (MechanismKind::DpSignrpRrSmooth, None, 784, 256),
        (
            MechanismKind::DpSignrpRrSmooth,
            Some(DenseKind::Gaussian),
            2000,
            128,
        ),
        (MechanismKind::DpSignoporpRrSmooth, None, 784, 256),
        (MechanismKind::DpSignoporpRrSmooth, None, 4096, 64),
    ] {
        let mut par = params(kind, p, k, 0.5);
        par.projection = projection;
        let m = build(&par).unwrap();
        let s = sign_from_record(&m.record(), &m.guarantee()).unwrap();
        let arithmetic = s.arithmetic().arithmetic;
        let exact_steps = step_sizes(s.map(), s.arithmetic().beta_q);
        let (mut lx, mut ly) = (Vec::new(), Vec::new());
        let (mut worst_err, mut max_level) = (0f64, 0u32);
        for _ in 0..300 {
            let u = random_row(&mut rng, p);
            let i = (rng.next_u64() % p as u64) as usize;
            let mut v = u.clone();
            // a β = 1 step that stays in the domain [−1, 1]
            v[i] += if v[i] < 0.0 { 1.0 } else { -1.0 };
            // the values the mechanism itself computes (its arithmetic)
            let x = s.project_values(&u).unwrap();
            let y = s.project_values(&v).unwrap();
            s.levels(&x, &mut lx);
            s.levels(&y, &mut ly);
            for j in 0..k {
                assert!(
                    lx[j].abs_diff(ly[j]) <= 1,
                    "{kind:?}: L {} → {}",
                    lx[j],
                    ly[j]
                );
                if (x[j] >= 0.0) != (y[j] >= 0.0) {
                    assert!(
                        lx[j] <= 1 && ly[j] <= 1,
                        "sign changed at L {} → {}",
                        lx[j],
                        ly[j]
                    );
                }
            }
            max_level = max_level.max(*lx.iter().max().unwrap());
            for ((xj, ej), c) in x
                .iter()
                .zip(project_f64(s.map(), &u, arithmetic))
                .zip(&exact_steps)
            {
                worst_err = worst_err.max((xj - ej).abs() / c);
            }
        }
        // the guard is a worst-case bound; the measured error (relative to c) must sit below it
        assert!(
            worst_err < s.guard() / 2.0,
            "{kind:?} p={p}: projection error {worst_err}·c vs guard {}",
            s.guard()
        );
        eprintln!(
            "{kind:?} p={p} k={k}: {:?}, guard {:.3e}, measured error {worst_err:.3e}·c, top level {max_level}",
            arithmetic,
            s.guard()
        );
        assert!(max_level > 2, "{kind:?}: levels should vary ({max_level})");
        // the guard stays negligible at every width (the f32 guard of dprp 0.2.0 was 7.3% at
        // p = 784 and grew as p²)
        assert!(s.guard() < 1e-6, "p = {p}: guard {}", s.guard());

        // Crafted boundaries: x at (the f32 values around) m·c̃ and x' = x ± c (the exact step):
        // levels differ by at most one; at x' = x + 1.01·c̃ they can differ by two.
        let (c, cg) = (exact_steps[0], s.steps()[0]);
        let mut xs = vec![0f64; k];
        let mut broke = false;
        for lvl in (1..2000u32).step_by(7) {
            let centre = lvl as f64 * cg;
            for d in -3i64..=3 {
                let x0 = f64::from_bits((centre.to_bits() as i64 + d) as u64);
                for (far, ok) in [(c, true), (-c, true), (1.01 * cg, false)] {
                    xs[0] = x0;
                    s.levels(&xs, &mut lx);
                    xs[0] = x0 + far;
                    s.levels(&xs, &mut ly);
                    if ok {
                        assert!(lx[0].abs_diff(ly[0]) <= 1, "{kind:?} at level {lvl}");
                    } else {
                        broke |= lx[0].abs_diff(ly[0]) > 1;
                    }
                }
            }
        }
        assert!(
            broke,
            "a step beyond the guard must be able to skip a level"
        );
    }
}

/// iDP Gaussian (Algorithms 6–7): in A the released sign is +1 with probability Φ(x_j/σ),
/// σ = Δ₂(A)·sigma_unit (1/2 exactly for x_j = 0, which takes a coin instead of a normal draw);
/// outside A the clean sign. OPORP on a sparse row, so that zero and non-zero bins both occur.
#[test]
fn idp_gaussian_releases_each_sign_with_the_calibrated_probability() {
    use dprp::privacy::gaussian::norm_cdf;
    let (p, k) = (256, 128);
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    // sparse: a third of the coordinates non-zero, values up to 0.8
    let u: Vec<f32> = (0..p)
        .map(|_| {
            if rng.next_u64() % 3 == 0 {
                (1.6 * uniform(&mut rng) - 0.8) as f32
            } else {
                0.0
            }
        })
        .collect();
    for kind in [MechanismKind::IdpSignoporpG, MechanismKind::IdpSignrpG] {
        let m = build(&params(kind, p, k, 3.0)).unwrap();
        let s = sign_from_record(&m.record(), &m.guarantee()).unwrap();
        let FlipRule::IdpGaussian { sigma_unit, .. } = s.sign_record().rule else {
            panic!("not iDP-G");
        };
        let x = s.project_values(&u).unwrap();
        let mut mask = Vec::new();
        let size = s.noise_set(&x, &mut mask);
        let sigma = s.set_sensitivity(&mask, size) * sigma_unit;
        let trials = 20_000u64;
        let mut ones = vec![0u64; k];
        let mut out = vec![0u64; k.div_ceil(64)];
        let noise = NoiseSource::from_seed("idp-gaussian-rates");
        for t in 0..trials {
            m.privatise(&u, 0, SketchMut::Bits(&mut out), &mut noise.row_rng(t))
                .unwrap();
            for (j, c) in ones.iter_mut().enumerate() {
                *c += bit(&out, j) as u64;
            }
        }
        let (mut zeros, mut inside) = (0, 0);
        for j in 0..k {
            let expect = if mask[j] {
                inside += 1;
                zeros += (x[j] == 0.0) as usize;
                norm_cdf(x[j] / sigma)
            } else {
                (x[j] >= 0.0) as u8 as f64
            };
            assert!(
                binomial_ok(ones[j], trials, expect),
                "{kind:?} sign {j}: x = {}, {} ones of {trials}, expected P = {expect}",
                x[j],
                ones[j]
            );
        }
        if kind == MechanismKind::IdpSignoporpG {
            assert!(
                zeros > 5 && inside > zeros + 5,
                "{zeros} zero bins of {inside} in A"
            );
        }
    }
    // power: a σ off by 30% is detected on the same data
    let m = build(&params(MechanismKind::IdpSignoporpG, p, k, 3.0)).unwrap();
    let s = sign_from_record(&m.record(), &m.guarantee()).unwrap();
    let FlipRule::IdpGaussian { sigma_unit, .. } = s.sign_record().rule else {
        panic!("not iDP-G");
    };
    let x = s.project_values(&u).unwrap();
    let mut mask = Vec::new();
    let size = s.noise_set(&x, &mut mask);
    let wrong = 1.3 * s.set_sensitivity(&mask, size) * sigma_unit;
    let trials = 20_000u64;
    let mut ones = vec![0u64; k];
    let mut out = vec![0u64; k.div_ceil(64)];
    let noise = NoiseSource::from_seed("idp-gaussian-power");
    for t in 0..trials {
        m.privatise(&u, 0, SketchMut::Bits(&mut out), &mut noise.row_rng(t))
            .unwrap();
        for (j, c) in ones.iter_mut().enumerate() {
            *c += bit(&out, j) as u64;
        }
    }
    let caught = (0..k)
        .filter(|&j| mask[j] && x[j] != 0.0)
        .any(|j| !binomial_ok(ones[j], trials, norm_cdf(x[j] / wrong)));
    assert!(caught, "a 30% error in σ must be detectable");
}

/// A release records the exact coin `Q` of randomised response; rebuilding recomputes it from ε'
/// and refuses a record whose `Q` differs (a tampered or inconsistent release), while a record
/// without `Q` (written before exact coins) is accepted and gets it filled in.
#[test]
fn recorded_flip_threshold_is_checked_on_rebuild() {
    let m = build(&params(MechanismKind::DpSignoporpRr, 100, 64, 1.0)).unwrap();
    let rec = m.record();
    let t = rec.sign.as_ref().unwrap().flip_threshold.unwrap();
    assert_eq!(t, Flip::randomised_response(1.0).unwrap().threshold());
    assert!(sign_from_record(&rec, &m.guarantee()).is_ok());
    let mut bad = rec.clone();
    bad.sign.as_mut().unwrap().flip_threshold = Some(t - 1);
    let err = sign_from_record(&bad, &m.guarantee()).unwrap_err();
    assert!(err.to_string().contains("flip threshold"), "{err}");
    let mut old = rec.clone();
    old.sign.as_mut().unwrap().flip_threshold = None;
    let s = sign_from_record(&old, &m.guarantee()).unwrap();
    assert_eq!(s.sign_record().flip_threshold, Some(t));
}

/// A record is rebuilt by the file of the kind it names: a sign record relabelled as a Gaussian or
/// a local kind is refused (it lacks what those kinds record), not read as a sign mechanism.
#[test]
fn a_sign_record_under_another_kind_is_refused() {
    let m = build(&params(MechanismKind::IdpSignoporpRr, 100, 64, 1.0)).unwrap();
    let rec = m.record();
    // power: the iDP kind itself is read back, through the path a reader takes
    assert!(dprp::mechanism::from_record(&rec, &m.guarantee()).is_ok());
    for (other, lacks) in [
        (MechanismKind::DpOporp, "without its calibration"),
        (MechanismKind::Privunitg, "without its local record"),
    ] {
        let mut bad = rec.clone();
        bad.name = other;
        let Err(err) = dprp::mechanism::from_record(&bad, &m.guarantee()) else {
            panic!("a sign record read as {other:?}");
        };
        assert!(err.to_string().contains(lacks), "{other:?}: {err}");
    }
}
