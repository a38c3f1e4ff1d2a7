//! Re-ranking candidates by the debiased estimates (`dprp::search::rerank`): the order and the
//! numbers of `dprp estimate --query-vector`, padding, repeats and refusals.

use dprp::estimate::{agreements, estimate_ip, sign_cosine, Estimator, QueryMode};
use dprp::mechanism::central::sign_sketch::pack_signs;
use dprp::release::ReleaseSet;
use dprp::search::rerank::{rerank, NO_ID};
use dprp::search::Measure;

use dprp::mechanism::{from_record, MechanismKind};
use dprp::search::{exact, Sketch};

fn release(dir: &std::path::Path, kind: MechanismKind, eps: f64) -> ReleaseSet {
    release_scaled(dir, kind, eps, kind != MechanismKind::DpOporp)
}

fn release_scaled(dir: &std::path::Path, kind: MechanismKind, eps: f64, unit: bool) -> ReleaseSet {
    let data = dprp::data::sample::generate();
    let input = dir.join("s.bin");
    dprp::data::native::write(&input, &data).unwrap();
    let output = dir.join(format!("{kind:?}-{eps}-{unit}.dprp"));
    let req = dprp::publish::PublishRequest {
        input,
        input_opts: Default::default(),
        // a sign release needs a norm floor: --normalize l2 gives every row norm 1
        scaling: dprp::data::scale::ScalingRequest {
            normalize_l2: unit,
            ..Default::default()
        },
        params: dprp::mechanism::MechanismParams {
            kind,
            epsilon: eps,
            delta: Some(1e-6),
            beta: 1.0,
            neighbour: dprp::privacy::guarantee::Neighbour::Coordinate,
            p: 0,
            k: Some(64),
            projection: None,
            seed: None,
            min_norm: None,
            individual_dp: false,
            local: Default::default(),
        },
        output: output.clone(),
    };
    let noise = dprp::privacy::samplers::noise::NoiseSource::from_os().unwrap();
    dprp::publish::publish(&req, &noise).unwrap();
    ReleaseSet::open(&output).unwrap()
}

/// Released rows 0..3 used as raw queries (the sample is on the release's scale).
fn queries(set: &ReleaseSet) -> Vec<f32> {
    let data = dprp::data::sample::generate();
    data.values[..3 * set.meta().p].to_vec()
}

#[test]
fn re_ranking_every_row_by_ip_is_the_exact_search_with_the_estimates_of_dprp_estimate() {
    let d = tempfile::tempdir().unwrap();
    let set = release(d.path(), MechanismKind::DpOporp, 4.0);
    let meta = set.meta();
    let m = from_record(&meta.mechanism, &meta.guarantee).unwrap();
    let q = queries(&set);
    let n = set.n();
    let all: Vec<u64> = (0..3).flat_map(|_| 0..n as u64).collect();
    let r = rerank(&set, m.as_ref(), &q, &all, n, 10, Some(Measure::Ip)).unwrap();
    let dprp::search::queries::QuerySketches::Real(x) =
        dprp::search::queries::sketch_queries(m.as_ref(), meta.payload, &q).unwrap()
    else {
        panic!("a real release")
    };
    let db = Sketch::Real {
        data: set.parts()[0].values().unwrap(),
        k: set.k(),
    };
    let qs = Sketch::Real {
        data: &x,
        k: set.k(),
    };
    let hits = exact::search(&db, &qs, Measure::Ip, 10, None).unwrap();
    let est = m.as_sketch().unwrap().estimator();
    for (qi, h) in hits.iter().enumerate() {
        let ids: Vec<u64> = h.iter().map(|h| h.row as u64).collect();
        assert_eq!(&r.ids[qi * 10..(qi + 1) * 10], &ids[..]);
        let u = &q[qi * meta.p..(qi + 1) * meta.p];
        let nsq = u.iter().map(|&a| a as f64 * a as f64).sum::<f64>();
        let row = set.parts()[0].row(ids[0] as usize).unwrap();
        let e = estimate_ip(&est, &x[qi * 64..(qi + 1) * 64], row, Some(nsq)).unwrap();
        assert_eq!(
            (r.estimates[qi * 10], r.se[qi * 10]),
            (e.inner_product, e.se)
        );
        assert!(r.se[qi * 10] > 0.0);
    }
    // the cosine is the debiased one, and scores descend (undefined ones last)
    let c = rerank(&set, m.as_ref(), &q, &all, n, 10, None).unwrap();
    for qi in 0..3 {
        let s = &c.estimates[qi * 10..(qi + 1) * 10];
        assert!(s.windows(2).all(|w| w[0] >= w[1] || w[1].is_nan()), "{s:?}");
    }
}

#[test]
fn padding_repeats_and_bad_candidates() {
    let d = tempfile::tempdir().unwrap();
    let set = release(d.path(), MechanismKind::DpSignrpRr, 3.0);
    let meta = set.meta();
    let m = from_record(&meta.mechanism, &meta.guarantee).unwrap();
    let q = &queries(&set)[..meta.p];
    let r = rerank(&set, m.as_ref(), q, &[5, NO_ID, 5, 7], 4, 3, None).unwrap();
    assert_eq!(r.ids.iter().filter(|&&i| i == NO_ID).count(), 1);
    assert!(r.ids[..2].contains(&5) && r.ids[..2].contains(&7));
    assert!(r.estimates[2].is_nan() && r.se[2].is_nan());
    // the sign estimate is the debiased cosine of dprp estimate, in the raw-query mode
    let est = m.as_sketch().unwrap().estimator();
    let Estimator::Sign { eps_prime, .. } = est else {
        panic!("a sign release")
    };
    let mut x = vec![0f32; 64];
    m.as_sketch().unwrap().project(q, &mut x).unwrap();
    let mut qb = vec![0u64; 1];
    pack_signs(&x, &mut qb);
    let row = set.parts()[0].bits().unwrap()[r.ids[0] as usize];
    let s = sign_cosine(
        agreements(&qb, &[row], 64),
        64,
        eps_prime,
        QueryMode::RawQuery,
    );
    assert_eq!((r.estimates[0], r.se[0]), (s.cosine, s.se_cosine));
    let e = rerank(&set, m.as_ref(), q, &[set.n() as u64 + 3], 1, 1, None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("candidate") && e.contains(&(set.n() + 3).to_string()),
        "{e}"
    );
    let e = rerank(&set, m.as_ref(), q, &[1], 1, 1, Some(Measure::Ip)).unwrap_err();
    assert!(e.to_string().contains("cosine"), "{e}");
    let e = rerank(&set, m.as_ref(), q, &[1, 2, 3], 2, 1, None).unwrap_err();
    assert!(e.to_string().contains("candidate"), "{e}");
    // no candidates at all: every slot padded; a K beyond the release's rows refused (before
    // anything is allocated for it)
    let r = rerank(&set, m.as_ref(), q, &[], 0, 2, None).unwrap();
    assert_eq!(r.ids, vec![NO_ID; 2]);
    let e = rerank(&set, m.as_ref(), q, &[1], 1, usize::MAX, None).unwrap_err();
    assert!(
        e.to_string().contains("top") && e.to_string().contains("exceeds"),
        "{e}"
    );
}

#[test]
fn on_a_unit_norm_release_the_cosine_divides_by_the_known_norm() {
    // --normalize l2: every released row has norm 1 (public, recorded in the release), so the
    // cosine with a raw query u is ⟨u,v⟩/‖u‖ — never the ratio with a noisy norm estimate,
    // which explodes where a row's noise nearly cancels its signal.
    let d = tempfile::tempdir().unwrap();
    let set = release_scaled(d.path(), MechanismKind::DpOporp, 1.0, true);
    let meta = set.meta();
    let m = from_record(&meta.mechanism, &meta.guarantee).unwrap();
    let p = meta.p;
    let mut q = queries(&set);
    for u in q.chunks_mut(p) {
        let norm = u.iter().map(|&a| a * a).sum::<f32>().sqrt();
        u.iter_mut().for_each(|a| *a /= norm);
    }
    let n = set.n();
    let all: Vec<u64> = (0..3).flat_map(|_| 0..n as u64).collect();
    let ip = rerank(&set, m.as_ref(), &q, &all, n, n, Some(Measure::Ip)).unwrap();
    let cos = rerank(&set, m.as_ref(), &q, &all, n, n, Some(Measure::Cosine)).unwrap();
    assert_eq!(ip.ids, cos.ids);
    for qi in 0..3 {
        let u = &q[qi * p..(qi + 1) * p];
        let norm = u.iter().map(|&a| a as f64 * a as f64).sum::<f64>().sqrt();
        for j in qi * n..(qi + 1) * n {
            assert!(cos.estimates[j].is_finite());
            assert!((cos.estimates[j] - ip.estimates[j] / norm).abs() < 1e-12);
            assert!((cos.se[j] - ip.se[j] / norm).abs() < 1e-12);
        }
    }
    // the noisy-norm ratio (no known norm) would have been undefined or outside [-1, 1] for
    // some rows at ε = 1: the known norm is what keeps every cosine finite
    let est = m.as_sketch().unwrap().estimator();
    let mut x = vec![0f32; set.k()];
    m.as_sketch().unwrap().project(&q[..p], &mut x).unwrap();
    let wild = (0..n)
        .filter(|&j| {
            let e = estimate_ip(&est, &x, set.parts()[0].row(j).unwrap(), Some(1.0)).unwrap();
            e.cosine.is_none_or(|c| c.abs() > 1.0)
        })
        .count();
    assert!(
        wild > 0,
        "expected the noisy-norm cosine to misbehave at ε = 1"
    );
}

#[test]
fn sign_cosines_clamped_at_one_keep_the_hamming_order() {
    // The debiased sign cosine is a non-decreasing function of the agreements, clamped at 1: among
    // clamped candidates the agreements (the database's Hamming order) must still decide.
    let d = tempfile::tempdir().unwrap();
    let set = release(d.path(), MechanismKind::DpSignrpRr, 8.0);
    let meta = set.meta();
    let m = from_record(&meta.mechanism, &meta.guarantee).unwrap();
    let q = &queries(&set)[..meta.p];
    let n = set.n();
    let all: Vec<u64> = (0..n as u64).collect();
    let r = rerank(&set, m.as_ref(), q, &all, n, n, None).unwrap();
    let mut x = vec![0f32; 64];
    m.as_sketch().unwrap().project(q, &mut x).unwrap();
    let mut qb = vec![0u64; 1];
    pack_signs(&x, &mut qb);
    let words = set.parts()[0].bits().unwrap();
    let agree: Vec<u32> = r
        .ids
        .iter()
        .map(|&i| agreements(&qb, &words[i as usize..i as usize + 1], 64))
        .collect();
    let clamped = r.estimates.iter().filter(|&&e| e == 1.0).count();
    assert!(
        clamped >= 2,
        "the test needs clamped cosines to have power ({clamped})"
    );
    assert!(agree.windows(2).all(|w| w[0] >= w[1]), "{agree:?}");
    let distinct: std::collections::BTreeSet<u32> = agree[..clamped].iter().copied().collect();
    assert!(
        distinct.len() >= 2,
        "clamped rows should span several agreement counts"
    );
}
