//! The local-DP mechanisms through the publishing trait, the release format and the server-side
//! accumulator: round trips, the fast paths equal the slow paths, the mean is unbiased with the
//! closed-form error, and every misuse is refused.

use crate::ldp_common;

use std::path::{Path, PathBuf};

use dprp::mechanism::local::accumulator::{AccumulatorState, MeanAccumulator};
use dprp::mechanism::{self, LocalMap, LocalOptions, Mechanism, MechanismKind, MechanismParams};
use dprp::privacy::guarantee::{GuaranteeKind, Neighbour};
use dprp::privacy::samplers::noise::NoiseSource;
use dprp::projection::Seed;
use dprp::publish::{publish, PublishRequest};
use dprp::release::Release;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rand_distr::StandardNormal;

fn params(kind: MechanismKind, d: usize, local: LocalOptions, k: Option<usize>) -> MechanismParams {
    MechanismParams {
        kind,
        epsilon: 4.0,
        delta: None,
        beta: 1.0,
        neighbour: Neighbour::ReplaceOne,
        p: d,
        k,
        projection: None,
        seed: Some(Seed::parse_hex("5eed").unwrap()),
        min_norm: None,
        individual_dp: false,
        local,
    }
}

/// Every local configuration dprp publishes, with data of the right shape.
fn configs() -> Vec<(MechanismParams, &'static str)> {
    let map = |m| LocalOptions {
        map: Some(m),
        ..Default::default()
    };
    vec![
        (
            params(MechanismKind::Privunit2, 12, LocalOptions::default(), None),
            "unit ball",
        ),
        (
            params(MechanismKind::Duchi, 12, LocalOptions::default(), None),
            "unit ball",
        ),
        (
            params(MechanismKind::Privunitg, 12, LocalOptions::default(), None),
            "unit ball",
        ),
        (
            params(
                MechanismKind::Projunit,
                12,
                map(LocalMap::Rotation),
                Some(5),
            ),
            "unit ball",
        ),
        (
            params(
                MechanismKind::Projunit,
                12,
                map(LocalMap::Gaussian),
                Some(5),
            ),
            "unit ball",
        ),
        (
            params(MechanismKind::Projunit, 12, map(LocalMap::Srht), Some(5)),
            "unit ball",
        ),
        (
            params(
                MechanismKind::Projunit,
                12,
                map(LocalMap::SrhtNearlyUnbiased),
                Some(5),
            ),
            "unit ball",
        ),
        (
            params(
                MechanismKind::ProjunitCorrelated,
                12,
                LocalOptions::default(),
                Some(5),
            ),
            "unit ball",
        ),
        (
            params(
                MechanismKind::PrivunitInf,
                12,
                LocalOptions::default(),
                None,
            ),
            "cube [-1,1]^d",
        ),
        (
            params(
                MechanismKind::ScalarDp,
                1,
                LocalOptions {
                    radius: Some(3.0),
                    ..Default::default()
                },
                None,
            ),
            "interval [0, 3]",
        ),
        (
            params(
                MechanismKind::Privunit2Norm,
                12,
                LocalOptions {
                    radius: Some(2.0),
                    epsilon_norm: Some(1.5),
                    ..Default::default()
                },
                None,
            ),
            "ball of radius 2",
        ),
    ]
}

/// `n` rows in the domain of `p` (unit rows, or values in [0, R] for scalar-dp), with the true
/// mean.
fn data(p: &MechanismParams, n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let d = p.p;
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut rows = Vec::with_capacity(n * d);
    let dir: Vec<f64> = (0..d).map(|j| 1.0 + j as f64 / d as f64).collect();
    for _ in 0..n {
        if p.kind == MechanismKind::ScalarDp {
            rows.push(rng.random::<f64>() * p.local.radius.unwrap());
            continue;
        }
        let mut v: Vec<f64> = dir
            .iter()
            .map(|m| m + rng.sample::<f64, _>(StandardNormal))
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        let r = p.local.radius.unwrap_or(1.0)
            * if p.kind == MechanismKind::Privunit2Norm {
                rng.random::<f64>()
            } else {
                1.0
            };
        v.iter_mut().for_each(|x| *x *= r / norm);
        rows.extend(v);
    }
    let mut mean = vec![0.0; d];
    for row in rows.chunks(d) {
        mean.iter_mut()
            .zip(row)
            .for_each(|(m, x)| *m += x / n as f64);
    }
    (rows, mean)
}

fn write_csv(dir: &Path, name: &str, rows: &[f64], d: usize) -> PathBuf {
    let path = dir.join(name);
    let text: String = rows
        .chunks(d)
        .map(|r| {
            r.iter()
                .map(|x| format!("{x:.9}"))
                .collect::<Vec<_>>()
                .join(",")
                + "\n"
        })
        .collect();
    std::fs::write(&path, text).unwrap();
    path
}

fn publish_csv(input: &Path, out: &Path, p: &MechanismParams, noise: &str) {
    let req = PublishRequest {
        input: input.to_path_buf(),
        input_opts: Default::default(),
        scaling: Default::default(),
        params: p.clone(),
        output: out.to_path_buf(),
    };
    // the tests publish to the same path in turn
    let _ = std::fs::remove_file(out);
    publish(&req, &NoiseSource::from_seed(noise)).unwrap();
}

#[test]
fn every_local_mechanism_round_trips_through_a_release() {
    let dir = tempfile::tempdir().unwrap();
    for (p, domain) in configs() {
        let (rows, _) = data(&p, 300, 1);
        let input = write_csv(dir.path(), "in.csv", &rows, p.p);
        let out = dir.path().join("r.dprp");
        publish_csv(&input, &out, &p, "1");
        let r = Release::open(&out).unwrap();
        let meta = r.meta();
        let g = &meta.guarantee;
        assert_eq!(g.kind, GuaranteeKind::LocalDp, "{:?}", p.kind);
        assert!(
            g.sentence()
                .contains(&format!("replace-one: any two inputs in the {domain}")),
            "{:?}: {}",
            p.kind,
            g.sentence()
        );
        let built = mechanism::build(&p).unwrap();
        let again = mechanism::from_record(&meta.mechanism, g).unwrap();
        assert_eq!(again.record(), built.record(), "{:?}", p.kind);
        assert_eq!(again.guarantee(), built.guarantee(), "{:?}", p.kind);
        assert_eq!(meta.k, built.output_dim());
        if p.kind == MechanismKind::Privunit2Norm {
            assert_eq!(g.epsilon, 5.5);
            assert!(g.label().contains("(4, 1.5)-separated"), "{}", g.label());
        }
        // A local mechanism has no sketch capability; asking for one is refused with a pointer
        // to `dprp mean`, and it has the local one instead.
        assert!(again.sketch().is_none());
        let e = again
            .as_sketch()
            .err()
            .expect("a local release is not a sketch");
        assert!(e.to_string().contains("dprp mean"), "{e}");
        assert!(again.local().is_some());
    }
}

#[test]
fn a_tampered_constant_is_refused() {
    let (p, _) = configs().remove(0);
    let m = mechanism::build(&p).unwrap();
    let mut rec = m.record();
    rec.local.as_mut().unwrap().constants[4].1 *= 1.01; // m of PrivUnit2
    let e = mechanism::from_record(&rec, &m.guarantee()).err().unwrap();
    assert!(e.to_string().contains("records m ="), "{e}");
    // and an untouched record is accepted
    assert!(mechanism::from_record(&m.record(), &m.guarantee()).is_ok());
}

/// Messages of `n` users privatised with `mech` (rows ids from 0), as f32 as a release holds them.
fn messages(mech: &dyn Mechanism, rows: &[f64], seed: u64) -> Vec<f32> {
    let dec = mech.local().unwrap();
    let d = mech.input_dim();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    for (i, v) in rows.chunks(d).enumerate() {
        out.extend(
            dec.client(i as u64, v, &mut rng)
                .unwrap()
                .into_iter()
                .map(|x| x as f32),
        );
    }
    out
}

#[test]
fn parallel_sequential_and_merged_accumulation_agree() {
    for (p, _) in configs() {
        let mech = mechanism::build(&p).unwrap();
        let (rows, _) = data(&p, 2500, 2);
        let msg = messages(mech.as_ref(), &rows, 3);
        let k = mech.output_dim();
        let mut seq = MeanAccumulator::new(mech.as_ref()).unwrap();
        for (i, m) in msg.chunks(k).enumerate() {
            seq.add(i as u64, m).unwrap();
        }
        let mut par = MeanAccumulator::new(mech.as_ref()).unwrap();
        par.add_rows(0, &msg).unwrap();
        // two halves, one sent through its portable (JSON) state
        let mut a = MeanAccumulator::new(mech.as_ref()).unwrap();
        a.add_rows(0, &msg[..1000 * k]).unwrap();
        let mut b = MeanAccumulator::new(mech.as_ref()).unwrap();
        b.add_rows(1000, &msg[1000 * k..]).unwrap();
        let json = serde_json::to_string(b.state()).unwrap();
        let state: AccumulatorState = serde_json::from_str(&json).unwrap();
        a.merge_state(&state).unwrap();
        let (s, q, m) = (
            seq.finish().unwrap(),
            par.finish().unwrap(),
            a.finish().unwrap(),
        );
        assert_eq!(s.n, 2500);
        assert_eq!(q.n, 2500);
        assert_eq!(m.n, 2500);
        for j in 0..p.p {
            let tol = 1e-9 * (1.0 + s.mean[j].abs());
            assert!((s.mean[j] - q.mean[j]).abs() <= tol, "{:?}", p.kind);
            assert!((s.mean[j] - m.mean[j]).abs() <= tol, "{:?}", p.kind);
        }
        // The decoded rows average to the mean.
        let dec = mech.local().unwrap();
        let mut avg = vec![0.0; p.p];
        for (i, z) in msg.chunks(k).enumerate() {
            let x = dec.decode_row(i as u64, z).unwrap();
            avg.iter_mut().zip(&x).for_each(|(a, b)| *a += b / 2500.0);
        }
        for (a, b) in avg.iter().zip(&s.mean) {
            assert!((a - b).abs() <= 1e-9 * (1.0 + a.abs()));
        }
    }
}

#[test]
fn misuse_of_accumulators_is_refused() {
    let map = LocalOptions {
        map: Some(LocalMap::Srht),
        ..Default::default()
    };
    let p = params(MechanismKind::Projunit, 12, map, Some(4));
    let mech = mechanism::build(&p).unwrap();
    let (rows, _) = data(&p, 10, 4);
    let msg = messages(mech.as_ref(), &rows, 5);
    let mut a = MeanAccumulator::new(mech.as_ref()).unwrap();
    assert!(a.finish().unwrap_err().to_string().contains("no rows"));
    a.add_rows(0, &msg).unwrap();
    // the same row ids again (same seed: the same public maps)
    let e = a.add_rows(5, &msg[..4 * 4]).unwrap_err().to_string();
    assert!(e.contains("overlap"), "{e}");
    let mut b = MeanAccumulator::new(mech.as_ref()).unwrap();
    b.add_rows(0, &msg).unwrap();
    assert!(a.merge(&b).unwrap_err().to_string().contains("overlap"));
    // rows published as a shard with --first-row 10 merge
    let shard = mechanism::build(&MechanismParams {
        local: LocalOptions {
            first_row: 10,
            ..map
        },
        ..p.clone()
    })
    .unwrap();
    let mut c = MeanAccumulator::new(shard.as_ref()).unwrap();
    c.add_rows(0, &msg).unwrap();
    a.merge(&c).unwrap();
    assert_eq!(a.n(), 20);
    // another seed is another configuration
    let other = mechanism::build(&MechanismParams {
        seed: Some(Seed::parse_hex("abc").unwrap()),
        ..p.clone()
    })
    .unwrap();
    let mut o = MeanAccumulator::new(other.as_ref()).unwrap();
    o.add_rows(100, &msg).unwrap();
    assert!(a
        .merge(&o)
        .unwrap_err()
        .to_string()
        .contains("different mechanism configuration"));
    // ragged messages
    assert!(a.add_rows(200, &msg[..5]).is_err());
    // a sketch mechanism has no mean decoder
    let sketch = mechanism::build(&MechanismParams {
        kind: MechanismKind::DpRpGOpt,
        epsilon: 1.0,
        delta: Some(1e-6),
        neighbour: Neighbour::Coordinate,
        k: Some(4),
        local: LocalOptions::default(),
        ..p
    })
    .unwrap();
    let e = MeanAccumulator::new(sketch.as_ref())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("no mean decoder"), "{e}");
}

/// The mean through the whole server side (per-row public maps regenerated from the seed and the
/// row id) is unbiased, and its squared error matches the closed form `mse/n`: z-tests over
/// independent repetitions (each with its own public seed: unbiasedness is over the maps too),
/// tolerances from their number. Power checks: decoding with the maps of
/// other rows (a wrong row-id offset) is caught by the unbiasedness test, and a per-user error
/// 10% off by the error test.
#[test]
fn the_mean_is_unbiased_with_the_closed_form_error() {
    let map = |m| LocalOptions {
        map: Some(m),
        ..Default::default()
    };
    let cases = [
        params(MechanismKind::Privunit2, 16, LocalOptions::default(), None),
        params(
            MechanismKind::Projunit,
            16,
            map(LocalMap::Rotation),
            Some(4),
        ),
        params(
            MechanismKind::Projunit,
            16,
            map(LocalMap::Gaussian),
            Some(4),
        ),
    ];
    let (n, reps) = (50usize, 400usize);
    for p in cases {
        let (rows, mu) = data(&p, n, 6);
        let mut along = Vec::new();
        let mut along_wrong = Vec::new();
        let mut sq = Vec::new();
        let mut mse = 0.0;
        for rep in 0..reps {
            let p = MechanismParams {
                seed: Some(Seed([
                    rep as u8,
                    (rep >> 8) as u8,
                    1,
                    2,
                    3,
                    4,
                    5,
                    6,
                    7,
                    8,
                    9,
                    10,
                    11,
                    12,
                    13,
                    14,
                    15,
                    16,
                    17,
                    18,
                    19,
                    20,
                    21,
                    22,
                    23,
                    24,
                    25,
                    26,
                    27,
                    28,
                    29,
                    30,
                ])),
                ..p.clone()
            };
            let mech = mechanism::build(&p).unwrap();
            let shifted = mechanism::build(&MechanismParams {
                local: LocalOptions {
                    first_row: 1_000_000,
                    ..p.local
                },
                ..p.clone()
            })
            .unwrap();
            let msg = messages(mech.as_ref(), &rows, 1000 + rep as u64);
            let mut acc = MeanAccumulator::new(mech.as_ref()).unwrap();
            acc.add_rows(0, &msg).unwrap();
            let est = acc.finish().unwrap();
            mse = est.mse_per_user;
            let ip: f64 = est.mean.iter().zip(&mu).map(|(a, b)| a * b).sum();
            along.push(ip);
            sq.push(
                est.mean
                    .iter()
                    .zip(&mu)
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum::<f64>(),
            );
            let mut wrong = MeanAccumulator::new(shifted.as_ref()).unwrap();
            wrong.add_rows(0, &msg).unwrap();
            let w = wrong.finish().unwrap();
            along_wrong.push(w.mean.iter().zip(&mu).map(|(a, b)| a * b).sum::<f64>());
        }
        let mu2: f64 = mu.iter().map(|x| x * x).sum();
        let z = ldp_common::z_score(&along, mu2);
        assert!(z < 4.0, "{:?}: ⟨mean, μ⟩ z = {z}", p.kind);
        let expect = mse / n as f64;
        let z = ldp_common::z_score(&sq, expect);
        assert!(z < 4.0, "{:?}: squared error z = {z}", p.kind);
        if p.kind == MechanismKind::Projunit {
            let z = ldp_common::z_score(&along_wrong, mu2);
            assert!(z > 6.0, "{:?}: wrong row maps not caught, z = {z}", p.kind);
        }
        let z = ldp_common::z_score(&sq, 1.1 * expect);
        assert!(
            z > 4.0,
            "{:?}: a 10% wrong error formula not caught, z = {z}",
            p.kind
        );
    }
}

#[test]
fn bad_local_parameters_are_refused_with_the_option_named() {
    let map = |m| LocalOptions {
        map: Some(m),
        ..Default::default()
    };
    let base = params(MechanismKind::Projunit, 12, map(LocalMap::Srht), Some(4));
    let cases: Vec<(MechanismParams, &str)> = vec![
        (
            MechanismParams {
                epsilon: 0.0,
                ..base.clone()
            },
            "--epsilon",
        ),
        (
            MechanismParams {
                epsilon: -1.0,
                ..base.clone()
            },
            "--epsilon",
        ),
        (
            MechanismParams {
                epsilon: f64::NAN,
                ..base.clone()
            },
            "--epsilon",
        ),
        (
            MechanismParams {
                epsilon: f64::INFINITY,
                ..base.clone()
            },
            "--epsilon",
        ),
        (
            MechanismParams {
                k: Some(0),
                ..base.clone()
            },
            "--k",
        ),
        (
            MechanismParams {
                k: Some(13),
                ..base.clone()
            },
            "--k",
        ),
        (
            MechanismParams {
                k: None,
                ..base.clone()
            },
            "--k",
        ),
        (
            MechanismParams {
                p: 1,
                ..base.clone()
            },
            "d ≥ 2",
        ),
        (
            params(MechanismKind::Privunit2, 1, LocalOptions::default(), None),
            "d ≥ 2",
        ),
        (
            params(
                MechanismKind::Privunit2,
                5,
                LocalOptions::default(),
                Some(3),
            ),
            "--k",
        ),
        (
            params(MechanismKind::Privunit2, 5, map(LocalMap::Srht), None),
            "--projection",
        ),
        (
            params(MechanismKind::ScalarDp, 1, LocalOptions::default(), None),
            "--radius",
        ),
        (
            params(
                MechanismKind::ScalarDp,
                2,
                LocalOptions {
                    radius: Some(1.0),
                    ..Default::default()
                },
                None,
            ),
            "one value per row",
        ),
        (
            params(
                MechanismKind::Privunit2Norm,
                4,
                LocalOptions {
                    radius: Some(1.0),
                    ..Default::default()
                },
                None,
            ),
            "--epsilon-norm",
        ),
        (
            params(
                MechanismKind::Privunit2Norm,
                4,
                LocalOptions {
                    radius: Some(-1.0),
                    epsilon_norm: Some(1.0),
                    ..Default::default()
                },
                None,
            ),
            "--radius",
        ),
        (
            MechanismParams {
                kind: MechanismKind::DpRpGOpt,
                delta: Some(1e-6),
                neighbour: Neighbour::Coordinate,
                ..base.clone()
            },
            "--projection",
        ),
    ];
    for (p, what) in cases {
        let e = mechanism::build(&p)
            .err()
            .unwrap_or_else(|| panic!("accepted {:?} k={:?} p={}", p.kind, p.k, p.p))
            .render(dprp::error::Front::Cli);
        assert!(e.contains(what), "expected {what} in: {e}");
    }
}

/// Per-row layout 2 (rotation reflections from the ziggurat) is what dprp writes; a layout-1
/// release (Box–Muller reflections) is still decoded with its own maps, and any other layout is
/// refused with a message naming it.
#[test]
fn rotation_layouts_are_recorded_decoded_and_checked() {
    use dprp::mechanism::local::rotation::ReflectionDraw;
    use dprp::mechanism::local::{ProjKind, ProjUnit};
    use dprp::mechanism::ProjectionRecord;
    let (p, _) = configs()
        .into_iter()
        .find(|(p, _)| p.kind == MechanismKind::Projunit && p.local.map == Some(LocalMap::Rotation))
        .unwrap();
    let m = mechanism::build(&p).unwrap();
    let rec = m.record();
    let with_layout = |l: u32| {
        let mut r = rec.clone();
        match &mut r.projection {
            ProjectionRecord::PerRow { layout, .. } => *layout = l,
            other => panic!("not a per-row record: {other:?}"),
        }
        r
    };
    assert_eq!(rec, with_layout(2), "dprp writes layout 2");
    let (rows, _) = data(&p, 3, 9);
    let seed = p.seed.unwrap();
    for (layout, draw) in [
        (1, ReflectionDraw::BoxMuller),
        (2, ReflectionDraw::Ziggurat),
    ] {
        let again = mechanism::from_record(&with_layout(layout), &m.guarantee()).unwrap();
        assert_eq!(
            again.record(),
            with_layout(layout),
            "layout {layout} is kept"
        );
        // Row i's message is ProjUnit's with W regenerated in that layout, bit for bit (the
        // same secret-noise words on both sides).
        let got = messages(again.as_ref(), &rows, 5);
        let pu = ProjUnit::new(p.epsilon, p.p, 5, ProjKind::Rotation)
            .unwrap()
            .with_rotation_draw(draw);
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let mut want = Vec::new();
        for (i, v) in rows.chunks(p.p).enumerate() {
            let w = pu.matrix(seed.for_row(i as u64)).unwrap();
            want.extend(
                pu.encode(&w, v, &mut rng)
                    .unwrap()
                    .into_iter()
                    .map(|x| x as f32),
            );
        }
        assert_eq!(got, want, "layout {layout}");
    }
    // The two layouts are different maps (so the comparison above tells them apart).
    let one = mechanism::from_record(&with_layout(1), &m.guarantee()).unwrap();
    assert_ne!(
        messages(one.as_ref(), &rows, 5),
        messages(m.as_ref(), &rows, 5)
    );
    for bad in [0, 3] {
        let e = mechanism::from_record(&with_layout(bad), &m.guarantee())
            .err()
            .unwrap();
        assert!(e.to_string().contains(&format!("layout {bad}")), "{e}");
    }
}
