//! `dprp eval mean` with the distributed mechanisms (binomial, ddg, sketch-ddg) and the central
//! references of both neighbour relations: the empirical error against the planner's closed
//! form (with a power check), the references' calibration, not-run rows for infeasible plans,
//! the report files and bad input; and the MNIST gradients of the `distributed` preset.

use crate::cli_helpers;
use crate::data_common;

use cli_helpers::{dprp, stderr};
use data_common::data_file;
use dprp::eval::grid::Seeds;
use dprp::eval::mean::{
    self, Check, Data, Experiment, MeanConfig, MeanSpec, Plan, CENTRAL, CENTRAL_ADD_REMOVE,
    CENTRAL_ZCDP,
};
use dprp::eval::Status;
use dprp::privacy::gaussian::analytic_sigma;
use dprp::privacy::zcdp::rho_for_epsilon;
use dprp::projection::Seed;

fn experiment(mechs: &str, ns: Vec<usize>, bits: Vec<u32>, repeat: usize) -> Experiment {
    Experiment {
        name: "t".into(),
        title: "t".into(),
        plan: Plan::Grid,
        dims: vec![48],
        ns,
        mechanisms: MeanSpec::parse_list(mechs).unwrap(),
        epsilons: vec![2.0],
        ks: vec![],
        bits,
        bpp_caps: vec![],
        cap_k_at_d: false,
        repeat,
        data: None,
        budget: None,
    }
}

fn config(e: Experiment) -> MeanConfig {
    MeanConfig {
        experiments: vec![e],
        delta: 1e-5,
        seeds: Seeds::new(Seed::parse_hex("d15").unwrap()),
        data: Data::Synthetic { seed: 3 },
    }
}

/// Each distributed mechanism's squared error over 40 repeats stays below its closed form
/// (one-sided check), and is close to it — the closed form is nearly tight here (noise
/// dominates), so the same samples flag a closed form 25 % too small (power check).
#[test]
fn empirical_error_agrees_with_the_planned_error() {
    let cfg = config(experiment(
        "binomial,ddg,sketch-ddg,central-gaussian",
        vec![60],
        vec![20],
        40,
    ));
    let rep = mean::run(&cfg, &|_, _| {}).unwrap();
    let rows = &rep.experiments[0].rows;
    assert_eq!(rows.len(), 5);
    for r in rows {
        let what = &r.mechanism;
        assert_eq!(r.status, Status::Ok, "{what}");
        let c = r.check.as_ref().expect("checked");
        assert!(c.agrees, "{what}: {c:?}");
        assert_eq!(c.samples, 40, "{what}");
        if MeanSpec::is_central_label(&r.mechanism) {
            assert!(!c.one_sided);
            continue;
        }
        assert!(c.one_sided, "{what}");
        let m = r.sq_error.as_ref().unwrap();
        assert!(
            m.mean > 0.8 * r.expected.unwrap(),
            "{what}: measured {} far below the closed form {}",
            m.mean,
            r.expected.unwrap()
        );
        let w = Check::new(c.samples, c.mean, c.expected * 0.75, c.se, true);
        assert!(
            !w.agrees,
            "{what}: a closed form 25 % too small not flagged: {w:?}"
        );
        assert!(r.bits_per_parameter.unwrap() > 0.0);
        assert_eq!(r.wrapped, Some(0), "{what}");
        assert_eq!(r.sketch_m.is_some(), r.mechanism == "sketch-ddg");
    }
}

/// The add/remove reference has sensitivity c/n, the replace-one reference 2/n: the analytic
/// Gaussian's σ is linear in the sensitivity, so their closed forms differ by exactly 4.
#[test]
fn central_references_have_the_sensitivity_of_their_relation() {
    let list = MeanSpec::parse_list("privunitg,ddg,gaussian-central").unwrap();
    let labels: Vec<&str> = list.iter().map(|m| m.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "privunitg",
            "ddg",
            CENTRAL,
            CENTRAL_ADD_REMOVE,
            CENTRAL_ZCDP
        ]
    );
    let only_dist = MeanSpec::parse_list("ddg,central-gaussian").unwrap();
    assert_eq!(only_dist[1].label, CENTRAL_ADD_REMOVE);
    assert_eq!(only_dist[2].label, CENTRAL_ZCDP);
    assert_eq!(only_dist.len(), 3);
    assert_eq!(
        MeanSpec::parse_list("central-gaussian").unwrap()[0].label,
        CENTRAL
    );
    let explicit = MeanSpec::parse_list("ddg,central-gaussian:replace-one").unwrap();
    assert_eq!(explicit[1].label, CENTRAL);
    assert!(MeanSpec::parse("central-gaussian:swap").is_err());

    let cfg = config(experiment(
        "central-gaussian:add-remove,central-gaussian:replace-one,gaussian-central:zcdp",
        vec![30],
        vec![],
        2,
    ));
    let rep = mean::run(&cfg, &|_, _| {}).unwrap();
    let rows = &rep.experiments[0].rows;
    let ar = rows
        .iter()
        .find(|r| r.mechanism == CENTRAL_ADD_REMOVE)
        .unwrap();
    let ro = rows.iter().find(|r| r.mechanism == CENTRAL).unwrap();
    let sigma = analytic_sigma(1.0 / 30.0, 2.0, 1e-5).unwrap();
    let want = 48.0 * sigma * sigma;
    assert!((ar.expected.unwrap() - want).abs() <= 1e-12 * want);
    assert!((ro.expected.unwrap() / ar.expected.unwrap() - 4.0).abs() < 1e-9);
    // at the zCDP accountant: σ = c/(n√(2ρ)), a little above the analytic σ (the conversion
    // from zCDP is not the Gaussian's exact privacy profile)
    let z = rows.iter().find(|r| r.mechanism == CENTRAL_ZCDP).unwrap();
    let rho = rho_for_epsilon(2.0, 1e-5).unwrap();
    let want = 48.0 / (30.0f64 * 30.0 * 2.0 * rho);
    assert!((z.expected.unwrap() - want).abs() <= 1e-12 * want);
    let slack = z.expected.unwrap() / ar.expected.unwrap();
    assert!(slack > 1.0 && slack < 1.3, "{slack}");
}

/// A bit budget the planner cannot meet is a "not run" row with the planner's reason; the other
/// settings still run.
#[test]
fn infeasible_plans_are_reported_not_fatal() {
    let cfg = config(experiment("binomial,ddg", vec![200], vec![4, 20], 1));
    let rep = mean::run(&cfg, &|_, _| {}).unwrap();
    let rows = &rep.experiments[0].rows;
    assert_eq!(rows.len(), 4);
    let small = rows
        .iter()
        .find(|r| r.mechanism == "binomial" && r.bits == Some(4))
        .unwrap();
    match &small.status {
        Status::NotApplicable(s) => assert!(s.contains("no binomial parameters"), "{s}"),
        s => panic!("{s:?}"),
    }
    assert!(rows
        .iter()
        .filter(|r| r.bits == Some(20))
        .all(|r| r.status == Status::Ok));
}

#[test]
fn cli_report_with_distributed_mechanisms() {
    let dir = tempfile::tempdir().unwrap();
    let o = dprp(
        dir.path(),
        &[
            "eval",
            "mean",
            "--users",
            "40,80,160",
            "--dim",
            "64",
            "--mechanisms",
            "ddg,sketch-ddg,binomial,privunitg,central-gaussian",
            "--epsilons",
            "1,4",
            "--bits",
            "20",
            "--bits-per-parameter",
            "2,8",
            "--repeat",
            "2",
            "--seed",
            "5",
            "--out",
            "out",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = dir.path().join("out");
    for f in ["report.md", "report.csv", "report.json", "mean.svg"] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    for needle in [
        "DP (SecAgg)",
        "**Distributed**",
        "**central-gaussian:add-remove**",
        "**Scaling**",
        "| sketch-ddg | DP (SecAgg) | 64 | 40 | 1 | — | 20 |",
    ] {
        assert!(md.contains(needle), "{needle} missing:\n{md}");
    }
    // 3 n × 2 ε × (ddg + 2 sketch caps + binomial + privunitg + 3 references)
    let csv = std::fs::read_to_string(out.join("report.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 3 * 2 * 8, "{csv}");
    assert!(csv.lines().skip(1).all(|l| l.contains(",ok,")), "{csv}");
}

use cli_helpers::eval_mean_refused as refused;

#[test]
fn bad_distributed_input_is_refused_without_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = [
        "--users",
        "20",
        "--dim",
        "8",
        "--mechanisms",
        "ddg,sketch-ddg",
    ];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = base.to_vec();
        v.extend_from_slice(extra);
        v
    };
    refused(d, &with(&["--bits", "1"]), "between 2 and 62");
    refused(d, &with(&["--bits", "63"]), "between 2 and 62");
    refused(d, &with(&["--bits", "x"]), "--bits");
    refused(d, &with(&["--bits-per-parameter", "0"]), "must be positive");
    refused(
        d,
        &[
            "--users",
            "20",
            "--dim",
            "8",
            "--mechanisms",
            "privunitg",
            "--bits",
            "16",
        ],
        "none is listed",
    );
    refused(
        d,
        &[
            "--users",
            "20",
            "--dim",
            "8",
            "--mechanisms",
            "ddg",
            "--bits-per-parameter",
            "2",
        ],
        "sketch-ddg only",
    );
    refused(
        d,
        &["--users", "20", "--dim", "8", "--mechanisms", "ddg:x"],
        "unknown mechanism",
    );
    refused(d, &["--users", "0", "--dim", "8"], "--users");
    std::fs::write(d.join("in.csv"), "0.6,0.8,0\n0.3,0.4,0\n").unwrap();
    refused(
        d,
        &["--input", "in.csv", "--users", "5", "--mechanisms", "ddg"],
        "only 2 rows",
    );
    refused(
        d,
        &["--preset", "distributed", "--bits", "16"],
        "a preset fixes its data and grid",
    );
}

/// The preset's gradients on real MNIST: the one-epoch model classifies the training set well
/// (a broken gradient would not learn), every client's gradient is in the unit ball, half of them
/// on the sphere (scaled by the median norm), and the first 100 clients' mean has the norm the
/// preset's documentation states.
#[test]
fn mnist_gradients_of_the_distributed_preset() {
    use dprp::eval::gradients::{client_gradients, load_mnist, train_model, GRADIENT_DIM};
    let images = data_file("mnist/train-images-idx3-ubyte.gz");
    let labels = data_file("mnist/train-labels-idx1-ubyte.gz");
    let m = load_mnist(&images, &labels).unwrap();
    assert_eq!(m.labels.len(), 60000);
    let (w, acc) = train_model(&m);
    assert!(acc > 0.85, "training accuracy {acc}");
    let (rows, median) = client_gradients(&m, &w, 6000, 10).unwrap();
    assert!(median > 0.0);
    let norms: Vec<f64> = rows
        .chunks_exact(GRADIENT_DIM)
        .map(|g| g.iter().map(|x| x * x).sum::<f64>().sqrt())
        .collect();
    assert!(norms.iter().all(|&x| x <= 1.0 + 1e-9));
    let on_sphere = norms.iter().filter(|&&x| x > 1.0 - 1e-9).count();
    assert!((3000..=3001).contains(&on_sphere), "{on_sphere}");
    let mut mean = vec![0.0; GRADIENT_DIM];
    for g in rows.chunks_exact(GRADIENT_DIM).take(100) {
        mean.iter_mut().zip(g).for_each(|(a, b)| *a += b / 100.0);
    }
    // 0.16 measured (module documentation of dprp::eval::gradients)
    let mean_norm = mean.iter().map(|x| x * x).sum::<f64>().sqrt();
    assert!(mean_norm > 0.1 && mean_norm < 0.25, "{mean_norm}");
}
