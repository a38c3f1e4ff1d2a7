//! Error bars from released sketches alone: across repeated releases (fresh public seed and fresh
//! noise each time, as independent publishers would make them), about 95% of the intervals
//! `estimate ± 1.96·se` cover the true inner product. The standard error is the plug-in version of
//! DESIGN.md §6 (`dprp::estimate::estimate_ip`), which errs on the conservative side.

use dprp::estimate::estimate_ip;
use dprp::mechanism::{build, MechanismKind, MechanismParams, SketchMut};
use dprp::privacy::guarantee::Neighbour;
use dprp::privacy::noise::NoiseSource;
use dprp::projection::{DenseKind, Seed};

fn rows(p: usize) -> (Vec<f32>, Vec<f32>) {
    let u: Vec<f32> = (0..p)
        .map(|i| (((i * 37) % 23) as f32 / 23.0) - 0.3)
        .collect();
    let v: Vec<f32> = (0..p)
        .map(|i| 0.7 * u[i] + 0.3 * ((((i * 53) % 19) as f32 / 19.0) - 0.5))
        .collect();
    (u, v)
}

fn coverage(kind: MechanismKind, proj: Option<DenseKind>, k: usize, raw_query: bool) -> f64 {
    let p = 128;
    let (u, v) = rows(p);
    let truth: f64 = u.iter().zip(&v).map(|(&a, &b)| a as f64 * b as f64).sum();
    let norm_u_sq: f64 = u.iter().map(|&a| a as f64 * a as f64).sum();
    let trials = 2000;
    let mut covered = 0;
    for t in 0..trials {
        let m = build(&MechanismParams {
            kind,
            epsilon: 8.0,
            delta: Some(1e-6),
            beta: 1.0,
            neighbour: Neighbour::Coordinate,
            p,
            k: kind.projects().then_some(k),
            projection: proj,
            seed: Some(Seed::parse_hex(&format!("{:x}", 7000 + t)).unwrap()),
            min_norm: None,
            individual_dp: false,
        })
        .unwrap();
        let kk = m.output_dim();
        let mut both = u.clone();
        both.extend_from_slice(&v);
        let mut out = vec![0f32; 2 * kk];
        let mut rng = NoiseSource::from_seed(&format!("cov{t}")).block_rng(0);
        m.privatise(&both, SketchMut::Real(&mut out), &mut rng)
            .unwrap();
        let (x, y) = out.split_at(kk);
        let e = if raw_query {
            let mut q = vec![0f32; kk];
            m.project(&u, &mut q);
            estimate_ip(&m.estimator(), &q, y, Some(norm_u_sq)).unwrap()
        } else {
            estimate_ip(&m.estimator(), x, y, None).unwrap()
        };
        covered += ((e.inner_product - truth).abs() <= 1.96 * e.se) as usize;
    }
    covered as f64 / trials as f64
}

#[test]
fn intervals_cover_the_truth_about_95_percent_of_the_time() {
    for (kind, proj, k) in [
        (MechanismKind::RawGOpt, None, 0),
        (MechanismKind::DpRpGOpt, Some(DenseKind::Rademacher), 32),
        (MechanismKind::DpRpGOpt, Some(DenseKind::Gaussian), 32),
        (MechanismKind::DpOporp, None, 32),
    ] {
        for raw in [false, true] {
            let c = coverage(kind, proj, k, raw);
            eprintln!("{kind:?} {proj:?} raw query {raw}: coverage {c:.3}");
            // binomial s.e. at 2000 trials is 0.005: 0.925 is 5 s.e. below 95%
            assert!(c >= 0.925, "{kind:?} {proj:?} raw {raw}: coverage {c}");
            // conservative, but not uselessly so
            assert!(
                c <= 0.995,
                "{kind:?} {proj:?} raw {raw}: coverage {c} (se far too large)"
            );
        }
    }
}
