//! The Binomial mechanism's π_sk encoder (cpSGD) and its secure-aggregation round (issue 12):
//! with the noise off the decoded mean is exactly the decoded sum of the clients' level indices;
//! the quantiser is unbiased; the sum carries the `Bin(n·m, ½)` noise Theorem 1 assumes; bad
//! input is refused; `dprp aggregate -m binomial --check` meets its planned error.

use crate::cli_helpers;

use cli_helpers::{dprp, dprp_json as json, stderr, temp_files};
use dprp::data::synthetic::SyntheticRows;
use dprp::data::RowReader;
use dprp::mechanism::distributed::round::run_round;
use dprp::mechanism::distributed::secagg::{ModularSum, SecAggRound};
use dprp::mechanism::distributed::{BinomialEncoder, BinomialParams};
use dprp::privacy::samplers::noise::NoiseSource;
use dprp::projection::flatten::Flatten;
use dprp::projection::Seed;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn params(x_max: f64, k: u64, m: u64, bits: u32) -> BinomialParams {
    BinomialParams {
        clip: 1.0,
        x_max,
        k,
        m,
        bits,
    }
}

/// Noise off (m = 0): the round's mean is, bit for bit, the decoding of the plain exact sum of
/// every client's level indices, recomputed here from the same client streams. With b = 9 and
/// 60 clients of k = 9 levels the sums reach past M/2 = 256 (asserted) but stay below M = 512:
/// π_sk reads residues in [0, M), so nothing counts as wrapped — a decoder lifting to
/// [−M/2, M/2) as DDG does would decode those coordinates 512 too low and fail the bit-for-bit
/// comparison, and the DDG wrap diagnostic would count them.
#[test]
fn without_noise_the_round_decodes_the_exact_level_sum() {
    let (n, d) = (60u64, 300usize);
    let enc = BinomialEncoder::new(d, params(0.3, 9, 0, 9), Seed([3; 32])).unwrap();
    let noise = NoiseSource::from_seed("binomial round test");
    let secagg = SecAggRound::new(n, enc.message_len(), enc.modulus(), 3, [9; 32]).unwrap();
    let mut rows = SyntheticRows::new(n, d, Seed([4; 32])).unwrap();
    let rep = run_round(&enc, &mut rows, &secagg, &noise, true).unwrap();
    assert_eq!(rep.clients, n);
    assert_eq!(rep.wrapped, Some(0));
    assert_eq!(rep.bits_per_client, 512 * 9);

    let mut rows = SyntheticRows::new(n, d, Seed([4; 32])).unwrap();
    let (mut v, mut l) = (Vec::new(), Vec::new());
    rows.read_chunk(n as usize, &mut v, &mut l).unwrap();
    let mut plain = vec![0u64; enc.message_len()];
    for (i, row) in v.chunks(d).enumerate() {
        let x: Vec<f64> = row.iter().map(|&a| a as f64).collect();
        let (u, _) = enc.quantise(&x, &mut noise.row_rng(i as u64)).unwrap();
        assert!(u.iter().all(|&l| l < 9));
        plain.iter_mut().zip(&u).for_each(|(s, &l)| *s += l);
    }
    assert!(
        plain.iter().any(|&s| s >= 256),
        "the test must reach past M/2"
    );
    assert!(plain.iter().all(|&s| s < 512));
    let want = enc.decode_sums(&plain, n).unwrap();
    assert_eq!(rep.mean, want, "bit for bit");

    // quantisation error only: E‖μ̂ − μ‖² ≤ d'·w_q²/(4n); allow 2× (forgetting ×w_q in the
    // decoder, or the −X offset, is off by orders of magnitude)
    let exact = rep.exact_mean.as_ref().unwrap();
    let err: f64 = rep
        .mean
        .iter()
        .zip(exact)
        .map(|(a, b)| (a - b).powi(2))
        .sum();
    let wq = enc.level_spacing();
    let bound = 512.0 * wq * wq / (4.0 * n as f64);
    assert!(err < 2.0 * bound, "error {err} against the bound {bound}");
    assert!(err > 0.0);
}

/// Unbiased stochastic rounding: T = 400 noiseless encodings of one fixed vector, summed and
/// decoded as a round of T clients, estimate x with per-coordinate variance f(1−f)·w_q²/T ≤
/// w_q²/(4T) (f the fractional level position; the rotation is orthogonal, so ‖x̂ − x‖² is the
/// same in both domains). Q = ‖x̂ − x‖² has mean ≤ d·w_q²/(4T) and standard deviation ≤
/// √(2d)·w_q²/(4T) (a sum of d independent squared near-normals); tolerance 5 s.d. Power: a
/// quantiser that always rounds down decodes, deterministically, to a vector whose Q (here
/// computed exactly from the rotated coordinates) exceeds the tolerance by orders of magnitude.
#[test]
fn the_quantiser_is_unbiased() {
    let d = 1024usize;
    let t = 400u64;
    let seed = Seed([7; 32]);
    let (x_max, k) = (0.2, 5u64);
    let enc = BinomialEncoder::new(d, params(x_max, k, 0, 20), seed).unwrap();
    let wq = enc.level_spacing();
    let x: Vec<f64> = (0..d)
        .map(|j| ((j * 37 % 101) as f64 / 101.0 - 0.5) * 0.05)
        .collect();
    let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
    assert!(norm < 1.0, "no clipping");
    let rotated = Flatten::new(d, seed)
        .unwrap()
        .rotate_scaled(&x, 1.0)
        .unwrap();
    assert!(rotated.iter().all(|v| v.abs() < x_max), "no clamping");

    let mut sum = ModularSum::new(enc.message_len(), enc.modulus());
    let mut msg = vec![0u64; enc.message_len()];
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    for _ in 0..t {
        enc.encode(&x, &mut msg, &mut rng, None).unwrap();
        sum.add(&msg).unwrap();
    }
    let est = enc.decode(&sum).unwrap();
    let q: f64 = est.iter().zip(&x).map(|(a, b)| (a - b).powi(2)).sum();
    let unit = wq * wq / (4.0 * t as f64);
    let tol = d as f64 * unit + 5.0 * (2.0 * d as f64).sqrt() * unit;
    assert!(q < tol, "Q = {q}, tolerance {tol}");

    // Power: always rounding down gives x̂ = Uᵀ(−X + w_q⌊t⌋), error w_q·f per rotated coordinate.
    let q_down: f64 = rotated
        .iter()
        .map(|&v| {
            let s = (v + x_max) / wq;
            ((s - s.floor()) * wq).powi(2)
        })
        .sum();
    assert!(q_down > 10.0 * tol, "power: round-down Q {q_down} vs {tol}");
}

/// The noise of the sum: zero vectors sit exactly on the middle level of k = 3 (index 1, no
/// randomness), so each coordinate of the sum is n + Bin(n·m, ½): mean n + nm/2, variance nm/4.
/// Over 2^16 coordinates the sample variance has relative s.e. √(2/65535) = 0.55%; tolerance 5
/// s.e. Power: m off by 20% moves the variance by 20%, caught; p = ½ off shifts the mean.
#[test]
fn the_sum_carries_binomial_noise_of_n_m_trials() {
    let (n, d, m) = (10u64, 1usize << 16, 20u64);
    let enc = BinomialEncoder::new(d, params(1.0, 3, m, 16), Seed([5; 32])).unwrap();
    let noise = NoiseSource::from_seed("binomial noise variance");
    let secagg = SecAggRound::new(n, enc.message_len(), enc.modulus(), 3, [8; 32]).unwrap();
    let mut sum = ModularSum::new(enc.message_len(), enc.modulus());
    let zero = vec![0.0; d];
    let mut msg = vec![0u64; enc.message_len()];
    for i in 0..n {
        enc.encode(&zero, &mut msg, &mut noise.row_rng(i), None)
            .unwrap();
        secagg.mask(i, &mut msg).unwrap();
        sum.add(&msg).unwrap();
    }
    let r = sum.residues();
    let mean = r.iter().map(|&v| v as f64).sum::<f64>() / d as f64;
    let var = r.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / (d - 1) as f64;
    let want = (n * m) as f64 / 4.0;
    let se = want * (2.0 / (d - 1) as f64).sqrt();
    assert!(
        (var - want).abs() < 5.0 * se,
        "variance {var}, want {want} ± {se}"
    );
    let want_mean = n as f64 + (n * m) as f64 / 2.0;
    let se_mean = (want / d as f64).sqrt();
    assert!(
        (mean - want_mean).abs() < 5.0 * se_mean,
        "mean {mean}, want {want_mean} ± {se_mean}"
    );
    // Power: m 20% too large (or small) is outside the tolerance.
    let off = (n as f64 * m as f64 * 1.2) / 4.0;
    assert!((off - want).abs() > 5.0 * se, "power");
    // the decoded mean is centred: −X + w_q(S/n − m/2) has mean 0
    let dec = enc.decode(&sum).unwrap();
    let dmean = dec.iter().sum::<f64>() / d as f64;
    let wq = enc.level_spacing();
    let dvar = wq * wq * m as f64 / (4.0 * n as f64);
    assert!(
        dmean.abs() < 5.0 * (dvar / d as f64).sqrt(),
        "decoded {dmean}"
    );
}

/// Bad input: wrong dimension, non-finite values, k < 2, parameters that do not fit the
/// modulus, a sum too large for M, a wrong buffer — errors naming what, never a panic.
#[test]
fn bad_input_is_refused() {
    let seed = Seed([1; 32]);
    for (p, needle) in [
        (params(0.5, 1, 4, 16), "k"),
        (params(0.5, 0, 4, 16), "k"),
        (params(0.0, 4, 4, 16), "X"),
        (params(f64::NAN, 4, 4, 16), "X"),
        (
            BinomialParams {
                clip: f64::INFINITY,
                ..params(0.5, 4, 4, 16)
            },
            "clip",
        ),
        (params(0.5, 4, 4, 1), "bits"),
        (params(0.5, 200, 100, 8), "k − 1 + m"),
    ] {
        let e = BinomialEncoder::new(8, p, seed).unwrap_err().to_string();
        assert!(e.contains(needle), "{p:?}: {e}");
    }
    assert!(BinomialEncoder::new(0, params(0.5, 4, 4, 16), seed).is_err());

    let enc = BinomialEncoder::new(8, params(0.5, 4, 4, 8), seed).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut msg = vec![0u64; 8];
    assert!(enc.encode(&[0.1; 7], &mut msg, &mut rng, None).is_err());
    let mut bad = [0.1; 8];
    bad[3] = f64::NAN;
    let e = enc
        .encode(&bad, &mut msg, &mut rng, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("coordinate 3"), "{e}");
    bad[3] = f64::NEG_INFINITY;
    assert!(enc.encode(&bad, &mut msg, &mut rng, None).is_err());
    assert!(enc
        .encode(&[0.1; 8], &mut [0u64; 7], &mut rng, None)
        .is_err());
    assert!(enc.decode_sums(&[0; 7], 1).is_err());
    assert!(enc.decode_sums(&[0; 8], 0).is_err());
    // 37 clients of k − 1 + m = 7 reach 259 > M − 1 = 255: refused; 36 (252) decoded
    let mut sum = ModularSum::new(8, enc.modulus());
    for _ in 0..36 {
        enc.encode(&[0.1; 8], &mut msg, &mut rng, None).unwrap();
        sum.add(&msg).unwrap();
    }
    assert!(enc.decode(&sum).is_ok());
    sum.add(&msg).unwrap();
    let e = enc.decode(&sum).unwrap_err().to_string();
    assert!(e.contains("wrapped"), "{e}");
    assert!(enc.decode(&ModularSum::new(8, enc.modulus())).is_err());
}

/// `dprp aggregate -m binomial` on 100 synthetic clients, d = 256: the guarantee (cpSGD
/// Theorem 1) and bits are printed, nothing wraps, and the measured ‖μ̂ − μ‖² lies between the
/// planned noise term (the quantisation adds f(1−f)w_q² ≥ 0) and the planned total
/// (quantisation ≤ w_q²/4), each widened by 5 relative s.e. of a sum of d = 256 squared
/// near-normal errors, 5·√(2/256) = 44%. A level spacing off by √2 (MSE ×2) or a decoder
/// forgetting to subtract the noise offset m/2 (error ≫) falls outside.
#[test]
fn cli_binomial_round_with_check() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = [
        "aggregate",
        "-m",
        "binomial",
        "--synthetic",
        "100,256",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--clip",
        "1",
        "--bits",
        "16",
        "--check",
    ];
    let o = dprp(d, &[&base[..], &["-o", "mean.npy"]].concat());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    for needle in [
        "100 clients",
        "binomial",
        "-DP for the sum",
        "replaced by another, with n fixed",
        "cpSGD Theorem 1",
        "log₂(k+m)",
        "b = 16 bits",
        "wrapped: 0",
        "wrote mean.npy (256 values)",
    ] {
        assert!(out.contains(needle), "{needle} not in\n{out}");
    }
    assert!(std::fs::read(d.join("mean.npy"))
        .unwrap()
        .starts_with(b"\x93NUMPY"));

    let v = json(d, &[&base[..], &["--json"]].concat());
    assert_eq!(v["mechanism"], "binomial");
    assert_eq!(v["clients"], 100);
    assert_eq!(v["mean"].as_array().unwrap().len(), 256);
    assert_eq!(v["bits_per_client"], 256 * 16);
    let eps = v["epsilon"].as_f64().unwrap();
    assert!(eps <= 1.0 && eps > 0.9, "ε {eps}");
    let (k, m) = (v["k"].as_u64().unwrap(), v["m"].as_u64().unwrap());
    assert!(100 * (k - 1 + m) < 1 << 16);
    let bpc = v["bits_per_coordinate"].as_f64().unwrap();
    assert!((bpc - ((k + m) as f64).log2()).abs() < 1e-12);
    let total = v["expected_squared_error"].as_f64().unwrap();
    let noise = v["expected_noise_error"].as_f64().unwrap();
    let got = v["check"]["squared_error"].as_f64().unwrap();
    let rel = 5.0 * (2.0f64 / 256.0).sqrt();
    assert!(
        got > noise * (1.0 - rel) && got < total * (1.0 + rel),
        "measured {got}, planned noise {noise}, total {total}"
    );
    // power: an MSE twice the plan (w_q off by √2) is outside the upper tolerance
    assert!(2.0 * total > total * (1.0 + rel));
    assert_eq!(v["check"]["wrapped_coordinates"], 0);

    // too few bits for the sum of 100 clients: refused, no output file
    let o = dprp(
        d,
        &[
            "aggregate",
            "-m",
            "binomial",
            "--synthetic",
            "100,16",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--clip",
            "1",
            "--bits",
            "8",
            "-o",
            "small.npy",
        ],
    );
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(err.contains("--bits"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!d.join("small.npy").exists());
    assert!(temp_files(d).is_empty());
}
