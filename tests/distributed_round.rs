//! The DDG encoder and the secure-aggregation round end to end (issue 12): with the noise off the
//! decoded mean is exactly the decoded sum of the clients' rounded vectors; the noise in the sum
//! has the variance the accountant assumed; a too-small modulus is reported; bad input refused.

use dprp::data::synthetic::SyntheticRows;
use dprp::data::RowReader;
use dprp::mechanism::distributed::round::run_round;
use dprp::mechanism::distributed::secagg::{ModularSum, Modulus, SecAggRound};
use dprp::mechanism::distributed::{Ddg, DdgParams};
use dprp::privacy::samplers::noise::NoiseSource;
use dprp::projection::flatten::Flatten;
use dprp::projection::Seed;

fn params(sigma: f64, bits: u32) -> DdgParams {
    DdgParams {
        clip: 1.0,
        gamma: 1e-3,
        sigma,
        beta: (-0.5f64).exp(),
        bits,
    }
}

fn round_for(ddg: &Ddg, n: u64) -> SecAggRound {
    SecAggRound::new(n, ddg.message_len(), ddg.modulus(), 3, [9; 32]).unwrap()
}

/// Noise off: the round's mean is, bit for bit, the decoding of the plain (unmasked, exact
/// integer) sum of every client's conditionally rounded vector, recomputed here from the same
/// client streams; nothing wrapped; the error against the true mean is the rounding's.
#[test]
fn without_noise_the_round_decodes_the_exact_quantised_sum() {
    let (n, d) = (40u64, 300usize);
    let seed = Seed([3; 32]);
    let ddg = Ddg::new(d, params(0.0, 32), seed).unwrap();
    let noise = NoiseSource::from_seed("round test");
    let mut rows = SyntheticRows::new(n, d, Seed([4; 32])).unwrap();
    let rep = run_round(&ddg, &mut rows, &round_for(&ddg, n), &noise, true).unwrap();
    assert_eq!(rep.clients, n);
    assert_eq!(rep.wrapped, Some(0));
    assert_eq!(rep.bits_per_client, 512 * 32);

    // the same clients, rounded with their own streams, summed exactly, decoded
    let mut rows = SyntheticRows::new(n, d, Seed([4; 32])).unwrap();
    let (mut v, mut l) = (Vec::new(), Vec::new());
    rows.read_chunk(n as usize, &mut v, &mut l).unwrap();
    let m = ddg.modulus();
    let mut plain = ModularSum::new(ddg.message_len(), m);
    for (i, row) in v.chunks(d).enumerate() {
        let x: Vec<f64> = row.iter().map(|&a| a as f64).collect();
        let mut rng = noise.row_rng(i as u64);
        let (t, _) = ddg.round(&x, &mut rng).unwrap();
        let msg: Vec<u64> = t.iter().map(|&a| m.reduce(a)).collect();
        plain.add(&msg).unwrap();
    }
    let want = ddg.decode(&plain).unwrap();
    assert_eq!(rep.mean, want, "bit for bit");

    // rounding error only: E‖μ̂ − μ‖² ≤ d'γ²/(4n(1−β)) + bias; allow 4× (a wrong γ scale in
    // the decoder, e.g. forgetting ×γ, would be off by orders of magnitude)
    let exact = rep.exact_mean.as_ref().unwrap();
    let err: f64 = rep
        .mean
        .iter()
        .zip(exact)
        .map(|(a, b)| (a - b).powi(2))
        .sum();
    let beta = (-0.5f64).exp();
    let bound = 512.0 * 1e-6 / (4.0 * n as f64 * (1.0 - beta));
    assert!(
        err < 4.0 * bound,
        "error {err} against the rounding bound {bound}"
    );
    assert!(err > 0.0);
}

/// The noise of the decoded sum: with zero vectors (rounded exactly to 0) the lifted sum holds
/// only the n clients' discrete Gaussians, variance n·σ²/γ² per coordinate (the discrete
/// Gaussian's variance is within e^{−2π²σ²/γ²} of its parameter — nothing at σ/γ = 3). Over
/// 2^16 coordinates the sample variance has relative s.e. √(2/65535) = 0.55%; tolerance 5 s.e.
/// Power: noise 10% too large in σ is 21% off in variance, caught. Both samplers: at σ/γ = 3
/// CKS Algorithm 3, at σ/γ = 100 (s² = 10⁴ ≥ 2^12) the table sampler.
#[test]
fn the_sum_carries_the_noise_the_accountant_assumed() {
    for (sigma, table) in [(3.0, false), (100.0, true)] {
        let (n, d) = (12u64, 1usize << 16);
        let p = DdgParams {
            clip: 1.0,
            gamma: 1.0,
            sigma,
            beta: 0.0,
            bits: 20,
        };
        let ddg = Ddg::new(d, p, Seed([5; 32])).unwrap();
        let sampler = ddg.noise().unwrap();
        assert_eq!(
            matches!(
                sampler,
                dprp::mechanism::distributed::ddg::IntegerNoise::Table(_)
            ),
            table
        );
        assert!(sampler.s2() >= sigma * sigma && sampler.s2() < sigma * sigma + 1.0);
        let noise = NoiseSource::from_seed("noise variance");
        let secagg = round_for(&ddg, n);
        let mut sum = ModularSum::new(ddg.message_len(), ddg.modulus());
        let zero = vec![0.0; d];
        let mut msg = vec![0u64; ddg.message_len()];
        for i in 0..n {
            ddg.encode(&zero, &mut msg, &mut noise.row_rng(i), None)
                .unwrap();
            secagg.mask(i, &mut msg).unwrap();
            sum.add(&msg).unwrap();
        }
        let lifted = sum.lifted();
        let mean = lifted.iter().map(|&v| v as f64).sum::<f64>() / d as f64;
        let var = lifted
            .iter()
            .map(|&v| (v as f64 - mean).powi(2))
            .sum::<f64>()
            / (d - 1) as f64;
        let want = n as f64 * sigma * sigma;
        let se = want * (2.0 / (d - 1) as f64).sqrt();
        assert!(
            (var - want).abs() < 5.0 * se,
            "σ = {sigma}: variance {var}, want {want} ± {se}"
        );
        assert!(mean.abs() < 5.0 * (want / d as f64).sqrt(), "mean {mean}");
        let off = n as f64 * (1.1 * sigma).powi(2);
        assert!((off - want).abs() > 5.0 * se, "power");
    }
}

/// A modulus too small for the sum is reported by the check, not hidden.
#[test]
fn a_too_small_modulus_is_reported() {
    let (n, d) = (30u64, 64usize);
    let ddg = Ddg::new(d, params(0.0, 8), Seed([6; 32])).unwrap();
    let noise = NoiseSource::from_seed("wrap");
    let mut rows = SyntheticRows::new(n, d, Seed([7; 32])).unwrap();
    let rep = run_round(&ddg, &mut rows, &round_for(&ddg, n), &noise, true).unwrap();
    assert!(rep.wrapped.unwrap() > 0, "{:?}", rep.wrapped);
    // and with enough bits nothing wraps
    let ddg = Ddg::new(d, params(0.0, 32), Seed([6; 32])).unwrap();
    let mut rows = SyntheticRows::new(n, d, Seed([7; 32])).unwrap();
    let rep = run_round(&ddg, &mut rows, &round_for(&ddg, n), &noise, true).unwrap();
    assert_eq!(rep.wrapped, Some(0));
}

#[test]
fn bad_input_is_refused() {
    let ddg = Ddg::new(10, params(1.0, 16), Seed([1; 32])).unwrap();
    let noise = NoiseSource::from_seed("bad");
    let mut msg = vec![0u64; ddg.message_len()];
    let mut rng = noise.row_rng(0);
    let mut x = vec![0.1; 10];
    x[3] = f64::NAN;
    let e = ddg
        .encode(&x, &mut msg, &mut rng, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("coordinate 3"), "{e}");
    assert!(ddg.encode(&[0.1; 9], &mut msg, &mut rng, None).is_err());
    // the round: clients of another dimension, fewer or more clients than set up
    let mut rows = SyntheticRows::new(5, 11, Seed([1; 32])).unwrap();
    assert!(run_round(&ddg, &mut rows, &round_for(&ddg, 5), &noise, false).is_err());
    let mut rows = SyntheticRows::new(5, 10, Seed([1; 32])).unwrap();
    assert!(run_round(&ddg, &mut rows, &round_for(&ddg, 6), &noise, false).is_err());
    let mut rows = SyntheticRows::new(7, 10, Seed([1; 32])).unwrap();
    assert!(run_round(&ddg, &mut rows, &round_for(&ddg, 6), &noise, false).is_err());
    // parameters
    for p in [
        DdgParams {
            clip: 0.0,
            ..params(1.0, 16)
        },
        DdgParams {
            gamma: -1.0,
            ..params(1.0, 16)
        },
        DdgParams {
            beta: 1.0,
            ..params(1.0, 16)
        },
        DdgParams {
            sigma: f64::NAN,
            ..params(1.0, 16)
        },
        params(1.0, 1),
        params(1.0, 65),
    ] {
        assert!(Ddg::new(10, p, Seed([1; 32])).is_err(), "{p:?}");
    }
    assert_eq!(Flatten::new(10, Seed([1; 32])).unwrap().d_pad(), 16);
    let _ = Modulus::new(16).unwrap();
}
