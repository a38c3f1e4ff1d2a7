//! End-to-end runs on the real datasets in the project's `data/` (or `$DPRP_DATA`). The data
//! ships with the project: a test fails, naming the file, when it is missing.

use crate::data_common;

use dprp::data::scale::{ScaleArg, ScalingRequest};
use dprp::data::{native, InputOptions};
use dprp::mechanism::{MechanismKind, MechanismParams};
use dprp::privacy::guarantee::Neighbour;
use dprp::privacy::samplers::noise::NoiseSource;
use dprp::publish::{load_scaled, publish, PublishRequest};
use dprp::release::Release;

use data_common::data_file;

fn params(kind: MechanismKind, k: usize) -> MechanismParams {
    MechanismParams {
        kind,
        epsilon: 5.0,
        delta: Some(1e-6),
        beta: 1.0,
        neighbour: Neighbour::Coordinate,
        p: 0,
        k: Some(k),
        projection: None,
        seed: Some(dprp::projection::Seed::parse_hex("3a1").unwrap()),
        min_norm: None,
        individual_dp: false,
        local: Default::default(),
    }
}

#[test]
fn mnist_train_converts_and_publishes() {
    let img = data_file("mnist/train-images-idx3-ubyte.gz");
    let lab = data_file("mnist/train-labels-idx1-ubyte.gz");
    let opts = InputOptions {
        labels: Some(lab),
        ..Default::default()
    };
    let req = ScalingRequest {
        scale: Some(ScaleArg::Divide(255.0)),
        ..Default::default()
    };
    let d = load_scaled(&img, &opts, &req).unwrap();
    assert_eq!((d.n, d.p), (60000, 784));
    let mean = d.values.iter().map(|&v| v as f64).sum::<f64>() / d.values.len() as f64 * 255.0;
    assert!((mean - 33.318).abs() < 1e-3, "mean pixel {mean}");
    let labels = d.labels.as_ref().unwrap();
    assert_eq!(
        &labels[..10],
        &[5.0, 0.0, 4.0, 1.0, 9.0, 2.0, 1.0, 3.0, 1.0, 4.0]
    );
    let mut counts = [0usize; 10];
    for &l in labels {
        counts[l as usize] += 1;
    }
    assert_eq!(
        counts,
        [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    );

    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("mnist.bin");
    native::write(&bin, &d).unwrap();
    for (kind, k) in [(MechanismKind::DpOporp, 256), (MechanismKind::DpRpGOpt, 64)] {
        let out = dir.path().join(format!("m-{}.dprp", kind.name()));
        let r = PublishRequest {
            input: bin.clone(),
            input_opts: InputOptions::default(),
            scaling: Default::default(),
            params: params(kind, k),
            output: out.clone(),
        };
        let o = publish(&r, &NoiseSource::from_seed("real-data")).unwrap();
        assert_eq!(o.meta.n, 60000);
        let rel = Release::open(&out).unwrap();
        assert_eq!((rel.n(), rel.k()), (60000, k));
        assert_eq!(rel.labels().unwrap(), &labels[..]);
        assert_eq!(rel.meta().scaling.describe(), "divide by 255");
        // The release minus the public projection (regenerated from the recorded seed) is the noise:
        // mean 0 and variance σ², within 5 standard errors over 2000 rows × k values.
        let sigma = rel.meta().mechanism.gaussian.as_ref().unwrap().sigma;
        let m = dprp::mechanism::from_record(&rel.meta().mechanism, &rel.meta().guarantee).unwrap();
        let mut x = vec![0f32; k];
        let (mut s1, mut s2, mut n) = (0f64, 0f64, 0f64);
        for i in 0..2000 {
            m.as_sketch().unwrap().project(d.row(i), &mut x).unwrap();
            for (a, b) in rel.row(i).unwrap().iter().zip(&x) {
                let e = (*a as f64) - (*b as f64);
                s1 += e;
                s2 += e * e;
                n += 1.0;
            }
        }
        let var = s2 / n - (s1 / n).powi(2);
        assert!(
            (s1 / n).abs() < 5.0 * sigma / n.sqrt(),
            "{kind:?}: noise mean {}",
            s1 / n
        );
        assert!(
            (var / (sigma * sigma) - 1.0).abs() < 5.0 * (2.0 / n).sqrt(),
            "{kind:?}: noise variance {var} vs σ² = {}",
            sigma * sigma
        );
    }
    // Publishing the IDX file directly, unscaled, is refused with the cell named.
    let out = dir.path().join("raw.dprp");
    let r = PublishRequest {
        input: img.clone(),
        input_opts: InputOptions::default(),
        scaling: Default::default(),
        params: params(MechanismKind::DpOporp, 16),
        output: out.clone(),
    };
    let e = publish(&r, &NoiseSource::from_os().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("row 0, column 152") && e.contains("outside the privacy domain"),
        "{e}"
    );
    assert!(!out.exists());
}

#[test]
fn a9a_publishes_directly_from_svm_gz() {
    let f = data_file("libsvm/a9a.svm.gz");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a9a.dprp");
    let r = PublishRequest {
        input: f,
        input_opts: InputOptions {
            dim: Some(123),
            ..Default::default()
        },
        scaling: Default::default(),
        params: params(MechanismKind::DpOporp, 64),
        output: out.clone(),
    };
    publish(&r, &NoiseSource::from_os().unwrap()).unwrap();
    let rel = Release::open(&out).unwrap();
    assert_eq!((rel.n(), rel.meta().p), (32561, 123));
    let pos = rel.labels().unwrap().iter().filter(|&&l| l > 0.0).count();
    assert_eq!(pos, 7841);
}
