//! The arithmetic of the public maps (src/mechanism/central/arithmetic.rs), recomputed independently:
//! the grid's sums equal exact integer sums (with a power check that an unblocked f32 sum is not
//! exact), the f64 path stays within its bound against exact rational sums (and the f32 path of
//! dprp 0.2.0 does not), the rounding term is below 10⁻³ of Δ for every map, k and p ≤ 65 536,
//! σ at p = 4096 is the textbook σ within 0.1%, and a published release minus its noiseless twin
//! has the stated σ.

use crate::cli_helpers;

#[allow(unused_imports)]
use cli_helpers::*;

use dprp::mechanism::central::arithmetic::{Arithmetic, ArithmeticRecord};
use dprp::mechanism::central::public_map::PublicMap;
use dprp::mechanism::{build_with, MechanismKind, MechanismParams, NoiseChoice, NoiseMethod};
use dprp::privacy::gaussian::analytic_sigma;
use dprp::privacy::guarantee::Neighbour;
use dprp::projection::{DenseKind, DenseProjection, Oporp, Seed};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn seed() -> Seed {
    Seed::parse_hex("a217").unwrap()
}

fn uniform_rows(rng: &mut ChaCha20Rng, n: usize, p: usize) -> Vec<f32> {
    (0..n * p)
        .map(|_| ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32)
        .collect()
}

/// `Σ_i round(u_i·2^q)·units_ij` in i64, the rounding to nearest with ties to even done in f64
/// (exact: `u·2^q` is exact in f64).
fn exact_grid_sums(d: &DenseProjection, rows: &[f32], q: i32) -> Vec<i64> {
    let (p, k) = (d.p(), d.k());
    let mut out = vec![0i64; rows.len() / p * k];
    for (row, o) in rows.chunks(p).zip(out.chunks_mut(k)) {
        for (i, &u) in row.iter().enumerate() {
            let n = (u as f64 * 2f64.powi(q)).round_ties_even() as i64;
            for (j, oj) in o.iter_mut().enumerate() {
                *oj += n * d.units()[i * k + j] as i64;
            }
        }
    }
    out
}

/// The grid's f32 block sums are the exact integer sums, for Rademacher and sparse maps, one and
/// many blocks, and the extreme row of p = 65 536 whose first output is the largest possible
/// (`2^28`, reached through partial sums far beyond f32's 2^24 without blocks). Power: the same
/// integers summed in f32 without blocks are not exact.
#[test]
fn grid_sums_are_the_exact_integer_sums() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    for (kind, p, k, n) in [
        (DenseKind::Rademacher, 784, 64, 300),
        (DenseKind::Sparse { s: 3.0 }, 1000, 33, 40),
        (DenseKind::Rademacher, 9000, 8, 20),
    ] {
        let d = DenseProjection::generate(kind, p, k, seed()).unwrap();
        let rows = uniform_rows(&mut rng, n, p);
        for q in [0, 12, 18] {
            let mut got = vec![0f64; n * k];
            d.grid_sums(&rows, q, &mut got).unwrap();
            let want = exact_grid_sums(&d, &rows, q);
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(*g, *w as f64, "{kind:?} p={p} q={q}");
            }
        }
    }
    // the extreme row: u_i = sign(w_i0)·(1 − 2^-12), so n_i·w_i0 = 4095 for every i
    let (p, k) = (65_536, 2);
    let d = DenseProjection::generate(DenseKind::Rademacher, p, k, seed()).unwrap();
    let row: Vec<f32> = (0..p)
        .map(|i| d.units()[i * k] * (1.0 - 1.0 / 4096.0))
        .collect();
    let mut got = vec![0f64; k];
    d.grid_sums(&row, 12, &mut got).unwrap();
    assert_eq!(got[0], 4095.0 * p as f64);
    assert_eq!(
        got,
        exact_grid_sums(&d, &row, 12)
            .iter()
            .map(|&v| v as f64)
            .collect::<Vec<_>>()
    );
    // power: without the blocks, the f32 running sum of the same integers is not exact
    let naive: f32 = (0..p)
        .map(|i| 4095.0f32 * d.units()[i * k] * d.units()[i * k])
        .sum();
    assert_ne!(naive as f64, 4095.0 * p as f64);
    // a value outside [−1, 1] is refused, naming it
    let mut bad = row.clone();
    bad[7] = 1.5;
    let e = d.grid_sums(&bad, 12, &mut got).unwrap_err().to_string();
    assert!(e.contains("1.5") && e.contains("coordinate 7"), "{e}");
}

/// `Σ_i u_i w_ij` exactly, for inputs on the grid 2^-30 and f32 entries of magnitude ≥ 2^-40:
/// every product is an integer multiple of 2^-93 below 2^100, so an i128 holds the sum exactly.
fn exact_dense_sum(d: &DenseProjection, row: &[f32], j: usize) -> f64 {
    let k = d.k();
    let mut acc: i128 = 0;
    for (i, &u) in row.iter().enumerate() {
        let a = (u as f64 * 2f64.powi(30)) as i128;
        assert_eq!(a as f64, u as f64 * 2f64.powi(30), "input not on the grid");
        let w = d.units()[i * k + j] as f64 * d.unit() as f64;
        if w == 0.0 {
            continue;
        }
        assert!(w.abs() >= 2f64.powi(-40));
        let m = w * 2f64.powi(63);
        assert_eq!(m, m.trunc(), "entry not a multiple of 2^-63");
        acc += a * m as i128;
    }
    acc as f64 * 2f64.powi(-93)
}

/// The f64 path (Gaussian and uniform maps) is within its bound `γ_{p+4}‖w_j‖₁/√k` of the exact
/// value, the bound is the one written out here, and the f32 product of dprp 0.2.0 is not within
/// it (so the check has power).
#[test]
fn float64_values_are_within_their_bound_of_the_exact_values() {
    let mut rng = ChaCha20Rng::seed_from_u64(2);
    for (kind, p, k) in [
        (DenseKind::Gaussian, 2000, 16),
        (DenseKind::Uniform, 300, 9),
    ] {
        let d = DenseProjection::generate(kind, p, k, seed()).unwrap();
        let map = PublicMap::Dense(d.clone());
        let arith = Arithmetic::choose(&map, 1.0, Neighbour::Coordinate);
        assert_eq!(arith, Arithmetic::Float64);
        let bounds = arith.output_errors(&map);
        let u53 = 2f64.powi(-53);
        let g = (p + 4) as f64 * u53 / (1.0 - (p + 4) as f64 * u53);
        for (j, &b) in bounds.iter().enumerate() {
            let l1: f64 = (0..p).map(|i| d.entry(i, j).abs()).sum();
            let want = g * l1 / (k as f64).sqrt();
            assert!(
                b >= want && b <= want * (1.0 + 1e-9),
                "{kind:?} E_{j} = {b} vs {want}"
            );
        }
        let n = 20;
        let rows: Vec<f32> = uniform_rows(&mut rng, n, p)
            .iter()
            .map(|&u| ((u as f64 * 2f64.powi(30)).round() / 2f64.powi(30)) as f32)
            .collect();
        let mut got = vec![0f64; n * k];
        arith.evaluate(&map, &rows, &mut got).unwrap();
        let mut f32_out = vec![0f32; n * k];
        d.project(&rows, &mut f32_out);
        let mut f32_outside = 0;
        for r in 0..n {
            for j in 0..k {
                let exact = exact_dense_sum(&d, &rows[r * p..(r + 1) * p], j) / (k as f64).sqrt();
                // the test's own f64 arithmetic (one conversion, one division) is within
                // 3·2^-53·|exact|, far below the bound
                let slack = 4.0 * u53 * exact.abs();
                assert!(
                    (got[r * k + j] - exact).abs() <= bounds[j] - slack,
                    "{kind:?} row {r} output {j}: {} vs exact {exact}, bound {}",
                    got[r * k + j],
                    bounds[j]
                );
                f32_outside += ((f32_out[r * k + j] as f64 - exact).abs() > bounds[j]) as usize;
            }
        }
        assert!(
            f32_outside > n * k / 2,
            "{kind:?}: f32 within the f64 bound {f32_outside} times"
        );
    }
}

fn params(kind: MechanismKind, p: usize, k: Option<usize>) -> MechanismParams {
    MechanismParams {
        kind,
        epsilon: 10.0,
        delta: Some(1e-6),
        beta: 1.0,
        neighbour: Neighbour::Coordinate,
        p,
        k,
        projection: None,
        seed: Some(seed()),
        min_norm: None,
        individual_dp: true,
        local: Default::default(),
    }
}

/// `Δ_r/Δ − 1 ≤ 10⁻³` with lattice noise for every dense kind and OPORP at p up to 65 536 and k
/// from 1 up (Δ the exact map's sensitivity), and σ within 0.1% of the analytic σ for Δ — the
/// table of issue 26, where dprp 0.2.0 had Δ_r/Δ = 3.00 at p = 4096.
#[test]
fn the_rounding_term_is_below_a_thousandth_at_every_width() {
    let mut worst = 0f64;
    for (p, ks) in [
        (784, &[1usize, 256, 1024][..]),
        (4096, &[1, 256]),
        (65_536, &[1, 64]),
    ] {
        for &k in ks {
            for proj in [
                Some(DenseKind::Rademacher),
                Some(DenseKind::Gaussian),
                Some(DenseKind::Uniform),
                Some(DenseKind::Sparse { s: 3.0 }),
                None,
            ] {
                if proj.is_none() && k > p {
                    continue; // OPORP needs k ≤ p
                }
                let kind = if proj.is_some() {
                    MechanismKind::DpRpGOpt
                } else {
                    MechanismKind::DpOporp
                };
                let mut prm = params(kind, p, Some(k));
                prm.projection = proj;
                let m = build_with(&prm, NoiseChoice::Lattice).unwrap();
                let rec = m.record();
                let Some(NoiseMethod::Lattice(l)) = rec.noise else {
                    panic!("lattice expected")
                };
                let a = rec.arithmetic.clone().unwrap();
                let map = match proj {
                    Some(kind) => {
                        PublicMap::Dense(DenseProjection::generate(kind, p, k, seed()).unwrap())
                    }
                    None => PublicMap::Oporp(Oporp::generate(p, k, seed()).unwrap()),
                };
                let delta = map.sensitivity(1.0);
                assert_eq!(a.sensitivity_exact, delta);
                let ratio = l.sensitivity_r.unwrap() / delta - 1.0;
                worst = worst.max(ratio);
                assert!(ratio <= 1e-3, "{proj:?} p={p} k={k}: Δ_r/Δ − 1 = {ratio}");
                let textbook = analytic_sigma(delta, 10.0, 1e-6).unwrap();
                let sigma = l.sigma.unwrap();
                assert!(
                    (sigma / textbook - 1.0).abs() <= 1e-3,
                    "{proj:?} p={p} k={k}: σ = {sigma} vs {textbook}"
                );
            }
        }
    }
    eprintln!("largest Δ_r/Δ − 1: {worst:.3e}");
    // power: the f32 bound of dprp 0.2.0 (γ_{p+4} with u = 2⁻²⁴) gives E ≈ Δ at p = 4096
    let d = DenseProjection::generate(DenseKind::Rademacher, 4096, 256, seed()).unwrap();
    let u24 = 2f64.powi(-24);
    let g = 4100.0 * u24 / (1.0 - 4100.0 * u24);
    let e32: f64 = (0..256)
        .map(|j| {
            let l1: f64 = (0..4096).map(|i| d.entry(i, j).abs()).sum();
            (g * l1 / 16.0).powi(2)
        })
        .sum::<f64>()
        .sqrt();
    assert!(e32 > 0.9, "{e32}");
}

/// The grid applies to ±1 maps under coordinate neighbours only: ℓ₁ neighbours (each coordinate
/// could round the other way) and Gaussian maps use f64, and so does a β whose grid would be finer
/// than 2^-18; the grid's Δ_q is Δ·(1 + 2^-q/β) with 2^-q ≤ β/4096.
#[test]
fn the_grid_is_chosen_only_where_its_argument_holds() {
    let r =
        PublicMap::Dense(DenseProjection::generate(DenseKind::Rademacher, 50, 8, seed()).unwrap());
    let g =
        PublicMap::Dense(DenseProjection::generate(DenseKind::Gaussian, 50, 8, seed()).unwrap());
    assert_eq!(
        Arithmetic::choose(&r, 1.0, Neighbour::Coordinate),
        Arithmetic::Grid { q: 12 }
    );
    assert_eq!(
        Arithmetic::choose(&r, 0.3, Neighbour::Coordinate),
        Arithmetic::Grid { q: 14 }
    );
    assert_eq!(
        Arithmetic::choose(&r, 2.0, Neighbour::Coordinate),
        Arithmetic::Grid { q: 11 }
    );
    assert_eq!(
        Arithmetic::choose(&r, 1.0, Neighbour::L1),
        Arithmetic::Float64
    );
    assert_eq!(
        Arithmetic::choose(&r, 1e-4, Neighbour::Coordinate),
        Arithmetic::Float64
    );
    assert_eq!(
        Arithmetic::choose(&g, 1.0, Neighbour::Coordinate),
        Arithmetic::Float64
    );
    for beta in [1.0, 0.3, 2.0] {
        let a = ArithmeticRecord::plan(&r, beta, Neighbour::Coordinate);
        let Arithmetic::Grid { q } = a.arithmetic else {
            panic!()
        };
        assert!(2f64.powi(-q) <= beta / 4096.0 && 2f64.powi(-q + 1) > beta / 4096.0);
        let want = r.sensitivity(beta) * (1.0 + 2f64.powi(-q) / beta);
        assert!(a.sensitivity >= want && a.sensitivity <= want * (1.0 + 1e-12));
    }
}

/// Through the real path: `dprp publish` of a float32 `.npy` (p = 4096, k = 256, lattice noise),
/// read back, minus its noiseless twin (the same map from the release's record, in the release's
/// arithmetic): the differences have mean 0 and the standard deviation the release states,
/// within 5 standard errors (≈ 1.6%); the stated σ is the textbook σ for Δ = 1 within 0.1%.
/// Power: dprp 0.2.0's σ (3× the textbook σ here) is far outside.
#[test]
fn release_minus_its_noiseless_twin_has_the_stated_sigma() {
    let dir = tmp();
    let (n, p, k) = (200usize, 4096usize, 256usize);
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let rows = uniform_rows(&mut rng, n, p);
    put(dir.path(), "x.npy", &npy("<f4", n, p, &f32_le(&rows)));
    ok(
        dir.path(),
        &[
            "publish",
            "x.npy",
            "-m",
            "dp-rp-g-opt",
            "-e",
            "10",
            "-d",
            "1e-6",
            "-k",
            "256",
            "--projection-seed",
            "a217",
            "-o",
            "r.dprp",
        ],
    );
    let rel = dprp::release::Release::open(&dir.path().join("r.dprp")).unwrap();
    let meta = rel.meta();
    let m = dprp::mechanism::from_record(&meta.mechanism, &meta.guarantee).unwrap();
    let mut twin = vec![0f32; n * k];
    m.as_sketch().unwrap().project(&rows, &mut twin).unwrap();
    let values = rel.values().unwrap();
    let diffs: Vec<f64> = values
        .iter()
        .zip(&twin)
        .map(|(&v, &t)| v as f64 - t as f64)
        .collect();
    let nn = diffs.len() as f64;
    let mean = diffs.iter().sum::<f64>() / nn;
    let sd = (diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (nn - 1.0)).sqrt();
    let stated = meta.mechanism.gaussian.as_ref().unwrap().sigma;
    let textbook = analytic_sigma(1.0, 10.0, 1e-6).unwrap();
    assert!(
        (stated / textbook - 1.0).abs() < 1e-3,
        "σ {stated} vs {textbook}"
    );
    let se = stated / (2.0 * nn).sqrt();
    assert!(
        (sd - stated).abs() < 5.0 * se,
        "measured σ {sd} vs stated {stated} (se {se})"
    );
    assert!(mean.abs() < 5.0 * stated / nn.sqrt(), "mean {mean}");
    assert!((sd - 3.0 * textbook).abs() > 5.0 * se);
    // the record names the arithmetic and the rounding term
    let a = meta.mechanism.arithmetic.clone().unwrap();
    assert_eq!(a.arithmetic, Arithmetic::Grid { q: 12 });
    let info = ok(dir.path(), &["info", "r.dprp"]);
    assert!(
        info.contains("arithmetic") && info.contains("2^-12"),
        "{info}"
    );
}

/// Queries are not private and may lie outside [−1, 1]: `project` takes the grid's path for rows
/// inside the domain (equal to the release's values) and f64 for rows outside, instead of
/// refusing them (the grid's exact sums need the domain). A private row outside is still refused.
#[test]
fn queries_outside_the_domain_are_projected_not_refused() {
    let m = build_with(
        &params(MechanismKind::DpRpGOpt, 64, Some(8)),
        NoiseChoice::Lattice,
    )
    .unwrap();
    let d = DenseProjection::generate(DenseKind::Rademacher, 64, 8, seed()).unwrap();
    let map = PublicMap::Dense(d);
    let mut q: Vec<f32> = (0..64).map(|i| (i as f32 / 64.0) - 0.5).collect();
    let mut inside = vec![0f32; 8];
    m.as_sketch().unwrap().project(&q, &mut inside).unwrap();
    let mut grid = vec![0f64; 8];
    Arithmetic::Grid { q: 12 }
        .evaluate(&map, &q, &mut grid)
        .unwrap();
    assert_eq!(inside, grid.iter().map(|&v| v as f32).collect::<Vec<_>>());
    q[3] = 1.5;
    let mut outside = vec![0f32; 8];
    m.as_sketch().unwrap().project(&q, &mut outside).unwrap();
    let mut f64s = vec![0f64; 8];
    Arithmetic::Float64.evaluate(&map, &q, &mut f64s).unwrap();
    assert_eq!(outside, f64s.iter().map(|&v| v as f32).collect::<Vec<_>>());
    // a private row outside the domain is refused by the grid (publish checks it before)
    let mut out = vec![0f32; 8];
    let src = dprp::privacy::samplers::noise::NoiseSource::from_seed("q");
    let e = m
        .privatise_rows(&q, dprp::mechanism::SketchMut::Real(&mut out), 0, &src)
        .unwrap_err()
        .to_string();
    assert!(e.contains("outside"), "{e}");
}
