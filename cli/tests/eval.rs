//! `dprp eval`: metrics against known answers, the retrieval and SVM runners on the bundled
//! sample (library and command line), and the report files.

use std::path::Path;
use std::process::Output;

use dprp::data::{native, sample, Dataset};
use dprp::eval::grid::{MechanismSpec, Privacy, Seeds};
use dprp::eval::metrics::{ground_truth, precision_at_10, recall_at_100, rows_of};
use dprp::eval::retrieval::{self, QueryMode, RetrievalConfig};
use dprp::eval::{svm, Status};
use dprp::learn::svm::SvmParams;
use dprp::projection::Seed;
use dprp::search::{exact, Measure, Sketch};

fn split(d: &Dataset, first: usize) -> (Dataset, Dataset) {
    let take = |lo: usize, hi: usize| Dataset {
        n: hi - lo,
        p: d.p,
        values: d.values[lo * d.p..hi * d.p].to_vec(),
        labels: d.labels.as_ref().map(|l| l[lo..hi].to_vec()),
        scaling: d.scaling.clone(),
    };
    (take(0, first), take(first, d.n))
}

/// Perfect sketches (no noise, identity projection, k = p) retrieve exactly the true neighbours.
#[test]
fn perfect_sketches_give_precision_one() {
    let (db, q) = split(&sample::generate(), 1800);
    let truth = ground_truth(&db.values, &q.values, db.p, 10).unwrap();
    let hits = exact::search(
        &Sketch::Real {
            data: &db.values,
            k: db.p,
        },
        &Sketch::Real {
            data: &q.values,
            k: db.p,
        },
        Measure::Cosine,
        100,
        None,
    )
    .unwrap();
    let got = rows_of(&hits);
    assert_eq!(precision_at_10(&got, &truth), 1.0);
    assert_eq!(recall_at_100(&got, &truth), 1.0);
    // and a shuffled retrieval does not
    let shuffled: Vec<Vec<usize>> = got
        .iter()
        .map(|r| r.iter().rev().copied().collect())
        .collect();
    assert!(precision_at_10(&shuffled, &truth) < 0.5);
}

fn config(mechanisms: &str, eps: &[f64], ks: &[usize]) -> RetrievalConfig {
    RetrievalConfig {
        mechanisms: MechanismSpec::parse_list(mechanisms).unwrap(),
        epsilons: eps.to_vec(),
        ks: ks.to_vec(),
        privacy: Privacy {
            delta: 1e-6,
            beta: 1.0,
            min_norm: None,
        },
        query_modes: vec![QueryMode::Private, QueryMode::Raw],
        repeat: 2,
        seeds: Seeds::new(Seed([3; 32])),
    }
}

/// The retrieval grid on the sample: every combination reported (OPORP at k > p as not
/// applicable with its reason, dp-signrp-rr without ν likewise), the reference near the top,
/// utility rising with ε, and the same master seed reproducing the same numbers.
#[test]
fn retrieval_grid_on_the_sample() {
    let (db, q) = split(&sample::generate(), 1900);
    let cfg = config(
        "dp-oporp,dp-rp-g-opt,dp-signoporp-rr,dp-signrp-rr",
        &[1.0, 1000.0],
        &[32, 128],
    );
    let ticks = std::sync::atomic::AtomicUsize::new(0);
    let rep = retrieval::run(&db, &q, &cfg, &|_, _| {
        ticks.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    })
    .unwrap();
    // 4 references (Rademacher values and signs, OPORP values and signs) × 2 k + the ceiling +
    // 4 mechanisms × 2 k × 2 ε settings, each × 2 query modes
    assert_eq!(rep.rows.len(), (4 * 2 + 1 + 4 * 2 * 2) * 2);
    assert_eq!(
        ticks.into_inner(),
        (4 * 2 + 4 * 2 * 2) * 2 + 1,
        "one tick per job (× repeats; the ceiling runs once)"
    );
    let find = |m: &str, e: Option<f64>, k: usize, mode: &str| {
        rep.rows
            .iter()
            .find(|r| {
                r.mechanism == m
                    && r.epsilon == e
                    && r.k == k
                    && r.query_mode.as_deref() == Some(mode)
            })
            .unwrap_or_else(|| panic!("no row {m} {e:?} {k} {mode}"))
    };
    let na = find("dp-oporp", Some(1.0), 128, "private");
    assert!(
        matches!(&na.status, Status::NotApplicable(r) if r.contains("k")),
        "{:?}",
        na.status
    );
    assert!(matches!(
        find("dp-signrp-rr", Some(1.0), 32, "raw").status,
        Status::NotApplicable(_)
    ));
    let reference = find("noiseless:rademacher", None, 128, "private")
        .metric("precision@10")
        .unwrap()
        .mean;
    assert!(
        reference > 0.3,
        "non-private reference precision {reference}"
    );
    for m in ["dp-oporp", "dp-rp-g-opt", "dp-signoporp-rr"] {
        let lo = find(m, Some(1.0), 32, "private")
            .metric("precision@10")
            .unwrap();
        let hi = find(m, Some(1000.0), 32, "private")
            .metric("precision@10")
            .unwrap();
        assert_eq!(lo.values.len(), 2);
        assert!(
            hi.mean > lo.mean,
            "{m}: {} at ε = 1000 vs {} at ε = 1",
            hi.mean,
            lo.mean
        );
        let r = find(m, Some(1000.0), 32, "private")
            .metric("recall@100")
            .unwrap();
        assert!(r.mean >= hi.mean, "recall@100 ≥ precision@10");
    }
    // reproducible from the master seed
    let again = retrieval::run(&db, &q, &cfg, &|_, _| {}).unwrap();
    for (a, b) in rep.rows.iter().zip(&again.rows) {
        assert_eq!(a.metrics, b.metrics, "{} {:?}", a.mechanism, a.epsilon);
    }
}

/// The SVM grid on the sample (10 classes): non-private reference well above chance, a large ε
/// close to it, ε = 0.1 near chance; one row per C.
#[test]
fn svm_grid_on_the_sample() {
    let (tr, te) = split(&sample::generate(), 1500);
    let cfg = svm::SvmConfig {
        mechanisms: MechanismSpec::parse_list("dp-rp-g-opt,dp-signoporp-rr").unwrap(),
        epsilons: vec![0.1, 1000.0],
        ks: vec![32],
        privacy: Privacy {
            delta: 1e-6,
            beta: 1.0,
            min_norm: None,
        },
        cs: vec![0.1, 1.0],
        pick_c: false,
        svm: SvmParams {
            max_iter: 200,
            ..Default::default()
        },
        repeat: 1,
        seeds: Seeds::new(Seed([5; 32])),
    };
    let rep = svm::run(&tr, &te, &cfg, &|_, _| {}).unwrap();
    // references: Rademacher values, OPORP signs, the ceiling; then 2 mechanisms × 2 ε; × 2 C
    assert_eq!(rep.rows.len(), (3 + 2 * 2) * 2);
    let acc = |m: &str, e: Option<f64>, c: f64| {
        rep.rows
            .iter()
            .find(|r| r.mechanism == m && r.epsilon == e && r.c == Some(c))
            .and_then(|r| r.metric("accuracy"))
            .map(|m| m.mean)
            .unwrap_or_else(|| panic!("no accuracy for {m} {e:?} {c}"))
    };
    let reference = acc("noiseless:rademacher", None, 1.0);
    assert!(
        reference > 0.5,
        "reference accuracy {reference} (10 classes)"
    );
    assert!(acc("dp-rp-g-opt", Some(1000.0), 1.0) > 0.8 * reference);
    assert!(acc("dp-rp-g-opt", Some(0.1), 1.0) < 0.5 * reference);
    // pick_c: one row per setting, C among the candidates
    let picked = svm::run(
        &tr,
        &te,
        &svm::SvmConfig {
            pick_c: true,
            ..cfg
        },
        &|_, _| {},
    )
    .unwrap();
    assert_eq!(picked.rows.len(), 3 + 2 * 2);
    assert!(picked
        .rows
        .iter()
        .all(|r| matches!(r.c, Some(c) if c == 0.1 || c == 1.0)));
}

fn dprp(dir: &Path, args: &[&str]) -> Output {
    crate::cli_helpers::dprp(dir, args)
}

/// The command line end to end on the bundled sample: Markdown on stdout, report files and plots
/// under --out; bad input refused with a message and no output directory.
#[test]
fn eval_commands_on_the_sample() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    native::write(&d.join("sample.bin"), &sample::generate()).unwrap();
    let args = [
        "eval",
        "retrieval",
        "--train",
        "sample.bin",
        "--test",
        "sample.bin",
        "--queries",
        "50",
        "--mechanisms",
        "dp-oporp,dp-signoporp-rr-smooth,idp-signrp-g",
        "--epsilon",
        "5,50",
        "--k",
        "32,128",
        "--seed",
        "abc",
        "--out",
        "ret",
    ];
    let out = dprp(d, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("dp-oporp") && stdout.contains("n/a"),
        "{stdout}"
    );
    for f in ["report.md", "report.csv", "report.json"] {
        assert!(d.join("ret").join(f).is_file(), "{f}");
    }
    let plots: Vec<_> = std::fs::read_dir(d.join("ret"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".svg") || n.ends_with(".png"))
        .collect();
    assert!(plots.len() >= 4, "{plots:?}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("ret/report.json")).unwrap()).unwrap();
    assert_eq!(json["meta"]["master_seed"].as_str().unwrap().len(), 64);
    // the guarantee kind on every row of every format, and its explanation once
    assert!(
        stdout.contains("| idp-signrp-g ") && stdout.contains("| iDP "),
        "{stdout}"
    );
    assert_eq!(stdout.matches("**iDP**").count(), 1, "{stdout}");
    let md = std::fs::read_to_string(d.join("ret/report.md")).unwrap();
    assert_eq!(md.matches("**iDP**").count(), 1);
    for row in json["rows"].as_array().unwrap() {
        let want = match row["mechanism"].as_str().unwrap() {
            "idp-signrp-g" => "individual-dp",
            "dp-oporp" => "approx-dp",
            "dp-signoporp-rr-smooth" => "pure-dp",
            _ => "none",
        };
        assert_eq!(row["guarantee"], want, "{row}");
    }
    let csv = std::fs::read_to_string(d.join("ret/report.csv")).unwrap();
    assert!(csv.starts_with("mechanism,guarantee,"), "{csv}");
    assert!(
        csv.lines().any(|l| l.starts_with("idp-signrp-g,iDP,")),
        "{csv}"
    );
    let svg = std::fs::read_to_string(d.join("ret/precision-at-10-private.svg")).unwrap();
    for s in [
        "idp-signrp-g (iDP)",
        "dp-oporp (DP)",
        "dp-signoporp-rr-smooth (DP)",
    ] {
        assert!(svg.contains(s), "{s} not in the legend");
    }

    let svm = dprp(
        d,
        &[
            "eval",
            "svm",
            "--train",
            "sample.bin",
            "--test",
            "sample.bin",
            "--mechanisms",
            "dp-rp-g-opt",
            "--epsilon",
            "10",
            "--k",
            "16",
            "--max-iter",
            "100",
        ],
    );
    let s = String::from_utf8_lossy(&svm.stdout);
    assert!(
        svm.status.success(),
        "{s}\n{}",
        String::from_utf8_lossy(&svm.stderr)
    );
    assert!(s.contains("accuracy") && s.contains("dp-rp-g-opt"), "{s}");

    // bad input: message, non-zero exit, no output directory
    for (bad, needle) in [
        (vec!["--epsilon", "0"], "--epsilon"),
        (vec!["--k", "0"], "--k"),
        (vec!["--mechanisms", "nope"], "nope"),
        (vec!["--queries", "0"], "--queries"),
        (vec!["--repeat", "0"], "--repeat"),
        (vec!["--query-mode", "sideways"], "query mode"),
        (vec!["--preset", "paper-cifar"], "preset"),
    ] {
        let mut a = vec![
            "eval",
            "retrieval",
            "--train",
            "sample.bin",
            "--test",
            "sample.bin",
            "--out",
            "bad",
        ];
        a.extend(bad.iter().copied());
        let o = dprp(d, &a);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{a:?} should fail");
        assert!(e.contains(needle), "{a:?}: {e}");
        assert!(!e.contains("panicked"), "{e}");
        assert!(!d.join("bad").exists(), "{a:?} left an output directory");
    }
    let o = dprp(
        d,
        &[
            "eval",
            "retrieval",
            "--train",
            "missing.bin",
            "--test",
            "sample.bin",
        ],
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.bin"));
    // svm without labels
    let mut nolab = sample::generate();
    nolab.labels = None;
    native::write(&d.join("nolab.bin"), &nolab).unwrap();
    let o = dprp(
        d,
        &[
            "eval",
            "svm",
            "--train",
            "nolab.bin",
            "--test",
            "nolab.bin",
            "--k",
            "16",
        ],
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("labels"));
}

/// The smallest row norm of the sample, for `dp-signrp-rr`'s public bound ν in these
/// simulations (below every row, so none is refused).
fn below_min_norm(d: &Dataset) -> f64 {
    let min = d
        .values
        .chunks(d.p)
        .map(|r| {
            r.iter()
                .map(|&v| (v as f64) * (v as f64))
                .sum::<f64>()
                .sqrt()
        })
        .fold(f64::INFINITY, f64::min);
    0.9 * min
}

/// The (mean, values) of `metric` in the row `m` at ε (`None`: a reference), k and query mode.
fn metric_of(
    rep: &dprp::eval::Report,
    m: &str,
    e: Option<f64>,
    k: usize,
    mode: &str,
    metric: &str,
) -> Option<f64> {
    rep.rows
        .iter()
        .find(|r| {
            r.mechanism == m && r.epsilon == e && r.k == k && r.query_mode.as_deref() == Some(mode)
        })
        .and_then(|r| r.metric(metric))
        .map(|x| x.mean)
}

/// On data with k = p, OPORP is a signed permutation, which keeps every cosine: its noiseless
/// reference retrieves the true top-10 exactly (precision@10 = 1), and `dp-oporp` is drawn
/// against it — not against the dense Rademacher map, which loses much more at the same k (the
/// reference the report used to show for every real-valued mechanism).
#[test]
fn oporp_reference_is_lossless_at_k_equal_p() {
    let (db, q) = split(&sample::generate(), 1700);
    let mut cfg = config("dp-oporp,dp-rp-g-opt", &[1e4], &[db.p]);
    cfg.repeat = 2;
    let rep = retrieval::run(&db, &q, &cfg, &|_, _| {}).unwrap();
    for mode in ["private", "raw"] {
        let row = rep
            .rows
            .iter()
            .find(|r| r.mechanism == "noiseless:oporp" && r.query_mode.as_deref() == Some(mode))
            .unwrap();
        let prec = row.metric("precision@10").unwrap();
        assert_eq!(prec.values.len(), 2);
        assert!(
            prec.values.iter().all(|&v| v > 0.9995),
            "{mode}: OPORP at k = p should be lossless: {:?}",
            prec.values
        );
        let dp_oporp = rep
            .rows
            .iter()
            .find(|r| r.mechanism == "dp-oporp" && r.query_mode.as_deref() == Some(mode))
            .unwrap();
        assert_eq!(dp_oporp.reference.as_deref(), Some("noiseless:oporp"));
        let dense = metric_of(
            &rep,
            "noiseless:rademacher",
            None,
            db.p,
            mode,
            "precision@10",
        )
        .unwrap();
        assert!(dense < 0.8, "the dense map at k = p is lossy: {dense}");
        let mech = metric_of(&rep, "dp-oporp", Some(1e4), db.p, mode, "precision@10").unwrap();
        assert!(mech > dense + 0.1, "{mech} vs {dense}");
    }
    let ceiling = metric_of(&rep, "unprojected", None, db.p, "private", "precision@10").unwrap();
    assert!(ceiling > 0.9995, "{ceiling}");
}

/// At a large ε every mechanism approaches its own family's noiseless reference and never
/// exceeds it by more than sampling noise — the property a reference from another family broke
/// (`dp-oporp` above the dense map's line). Tolerance: 3 standard errors of a mean of Q·R
/// values in [0, 1] (sd ≤ ½): 3·½/√(Q·R). Power: `dp-oporp` against the dense Rademacher
/// reference at k = p exceeds it by far more.
#[test]
fn no_mechanism_beats_its_own_reference_at_large_eps() {
    let (db, q) = split(&sample::generate(), 1700);
    let mut cfg = config(
        "all,dp-rp-g-opt:gaussian,dp-signrp-rr-smooth:gaussian",
        &[1e3],
        &[32, 64],
    );
    cfg.privacy.min_norm = Some(below_min_norm(&db));
    cfg.privacy.beta = 0.1;
    let rep = retrieval::run(&db, &q, &cfg, &|_, _| {}).unwrap();
    let tol = 3.0 * 0.5 / ((q.n * cfg.repeat) as f64).sqrt();
    let mut checked = 0;
    for r in rep.rows.iter().filter(|r| r.epsilon.is_some()) {
        let own = r
            .reference
            .as_deref()
            .expect("a mechanism names its reference");
        let mode = r.query_mode.as_deref().unwrap();
        for metric in ["precision@10", "recall@100"] {
            let Some(m) = r.metric(metric) else {
                panic!("{} k = {} {mode}: {:?}", r.mechanism, r.k, r.status);
            };
            let reference = metric_of(&rep, own, None, r.k, mode, metric)
                .unwrap_or_else(|| panic!("no reference {own} at k = {}", r.k));
            assert!(
                m.mean <= reference + tol,
                "{} k = {} {mode} {metric}: {} above its reference {own} {reference} (tol {tol})",
                r.mechanism,
                r.k,
                m.mean
            );
            checked += 1;
        }
    }
    assert_eq!(
        checked,
        (2 * 14 - 1) * 2 * 2,
        "every mechanism, k, mode and metric"
    );
    let oporp = metric_of(&rep, "dp-oporp", Some(1e3), 64, "raw", "precision@10").unwrap();
    let dense = metric_of(
        &rep,
        "noiseless:rademacher",
        None,
        64,
        "raw",
        "precision@10",
    )
    .unwrap();
    assert!(
        oporp > dense + tol,
        "power: {oporp} vs the dense map's {dense}"
    );
}

/// The SVM grid draws the same references: each mechanism names its own family's noiseless
/// sketch, the unprojected features give the ceiling (k = p), rows carry the guarantee kind, and
/// at a large ε no mechanism's accuracy exceeds its reference by more than 3 standard errors of
/// an accuracy over the test rows (3·½/√n).
#[test]
fn svm_references_per_family_and_guarantees() {
    use dprp::privacy::guarantee::GuaranteeKind;
    let (tr, te) = split(&sample::generate(), 1500);
    let cfg = svm::SvmConfig {
        mechanisms: MechanismSpec::parse_list(
            "raw-g-opt,dp-oporp,dp-rp-g-opt:gaussian,idp-signrp-g",
        )
        .unwrap(),
        epsilons: vec![1e3],
        ks: vec![32],
        privacy: Privacy {
            delta: 1e-6,
            beta: 0.1,
            min_norm: None,
        },
        cs: vec![1.0],
        pick_c: false,
        svm: SvmParams {
            max_iter: 200,
            ..Default::default()
        },
        repeat: 1,
        seeds: Seeds::new(Seed([6; 32])),
    };
    let rep = svm::run(&tr, &te, &cfg, &|_, _| {}).unwrap();
    let acc = |m: &str, k: usize| {
        rep.rows
            .iter()
            .find(|r| r.mechanism == m && r.k == k)
            .and_then(|r| r.metric("accuracy"))
            .map(|a| a.mean)
            .unwrap_or_else(|| panic!("no accuracy for {m} at k = {k}"))
    };
    let tol = 3.0 * 0.5 / (te.n as f64).sqrt();
    for (m, own, k, g) in [
        ("raw-g-opt", "unprojected", tr.p, GuaranteeKind::ApproxDp),
        ("dp-oporp", "noiseless:oporp", 32, GuaranteeKind::ApproxDp),
        (
            "dp-rp-g-opt:gaussian",
            "noiseless:gaussian",
            32,
            GuaranteeKind::ApproxDp,
        ),
        (
            "idp-signrp-g",
            "noiseless-signs:rademacher",
            32,
            GuaranteeKind::IndividualDp,
        ),
    ] {
        let row = rep.rows.iter().find(|r| r.mechanism == m).unwrap();
        assert_eq!(row.reference.as_deref(), Some(own), "{m}");
        assert_eq!(row.guarantee, Some(g), "{m}");
        assert_eq!(row.k, k, "{m}");
        let (a, r) = (acc(m, k), acc(own, k));
        assert!(a <= r + tol, "{m}: {a} above its reference {own} {r}");
    }
    let ceiling = rep
        .rows
        .iter()
        .find(|r| r.mechanism == "unprojected")
        .unwrap();
    assert_eq!(ceiling.guarantee, Some(GuaranteeKind::None));
    assert!(acc("unprojected", tr.p) > 0.5, "10 classes");
    assert!(!rep
        .rows
        .iter()
        .any(|r| r.mechanism == "noiseless:rademacher"));
}

/// Local-DP mechanisms in `eval retrieval`: each row privatised as its own user and decoded to its
/// unbiased estimate, ranked by cosine, every row labelled LDP. With (almost) no noise PrivUnit2's
/// decoded rows are the unit vectors themselves (precision of the ceiling). ProjUnit with a
/// rotation at k = p is PrivUnitG up to an isometry, so it must match PrivUnitG's precision — a
/// row decoded with another row's map (e.g. a private query given a database row's id) would fall
/// to chance (10/1900). At k < p each user's own random subspace costs accuracy even without
/// noise, so only its presence and k are checked there. Small ε loses utility.
#[test]
fn local_mechanisms_in_retrieval() {
    let (db, q) = split(&sample::generate(), 1900);
    let mut cfg = config(
        "privunit2,privunitg,projunit:rotation,privunit-inf",
        &[0.5, 400.0],
        &[32, db.p],
    );
    cfg.repeat = 1;
    let rep = retrieval::run(&db, &q, &cfg, &|_, _| {}).unwrap();
    let find = |m: &str, e: Option<f64>, k: usize, mode: &str| {
        rep.rows
            .iter()
            .find(|r| {
                r.mechanism == m
                    && r.epsilon == e
                    && r.k == k
                    && r.query_mode.as_deref() == Some(mode)
            })
            .unwrap_or_else(|| panic!("no row {m} {e:?} {k} {mode}"))
    };
    let prec = |m: &str, e: Option<f64>, k: usize, mode: &str| {
        let r = find(m, e, k, mode);
        assert_eq!(r.status, Status::Ok, "{m} {e:?} {mode}");
        r.metric("precision@10").unwrap().mean
    };
    let p = db.p;
    let ceiling = prec("unprojected", None, p, "private");
    assert!(ceiling > 0.95, "ceiling {ceiling}");
    for mode in ["private", "raw"] {
        for (m, k) in [
            ("privunit2", p),
            ("privunitg", p),
            ("projunit:rotation", 32),
            ("projunit:rotation", p),
            ("privunit-inf", p),
        ] {
            let r = find(m, Some(400.0), k, mode);
            assert_eq!(
                r.guarantee,
                Some(dprp::privacy::guarantee::GuaranteeKind::LocalDp),
                "{m}"
            );
            assert_eq!(r.reference.as_deref(), Some("unprojected"), "{m}");
        }
        let hi = prec("privunit2", Some(400.0), p, mode);
        assert!(hi > 0.9 * ceiling, "privunit2 at ε = 400, {mode}: {hi}");
        let lo = prec("privunit2", Some(0.5), p, mode);
        assert!(
            lo < hi - 0.2,
            "privunit2 {mode}: ε = 0.5 gives {lo}, ε = 400 {hi}"
        );
        let g = prec("privunitg", Some(400.0), p, mode);
        let pu = prec("projunit:rotation", Some(400.0), p, mode);
        assert!(g > 0.2, "privunitg at ε = 400, {mode}: {g}");
        assert!(
            pu > 0.8 * g,
            "projunit:rotation at k = p, ε = 400, {mode}: {pu} against privunitg's {g}"
        );
    }
    // the report states the guarantee kind and how LDP rows were made
    let md = dprp::eval::report::markdown(&rep);
    assert!(md.contains("**LDP**"), "{md}");
    assert!(
        md.lines()
            .any(|l| l.starts_with("| privunit2 ") && l.contains("| LDP ")),
        "{md}"
    );
    // reproducible from the master seed
    let again = retrieval::run(&db, &q, &cfg, &|_, _| {}).unwrap();
    for (a, b) in rep.rows.iter().zip(&again.rows) {
        assert_eq!(a.metrics, b.metrics, "{} {:?}", a.mechanism, a.epsilon);
    }
}

/// Which local mechanisms retrieval takes, and the SVM refusing them.
#[test]
fn local_mechanism_specs() {
    assert_eq!(MechanismSpec::parse_list("local").unwrap().len(), 6);
    let s = MechanismSpec::parse("projunit:rotation").unwrap();
    assert_eq!(s.local_map, Some(dprp::mechanism::LocalMap::Rotation));
    for bad in [
        "scalar-dp",
        "privunit2-norm",
        "privunit2:srht",
        "projunit:nope",
    ] {
        assert!(MechanismSpec::parse(bad).is_err(), "{bad}");
    }
    let (tr, te) = split(&sample::generate(), 1800);
    let cfg = svm::SvmConfig {
        mechanisms: MechanismSpec::parse_list("dp-oporp,privunit2").unwrap(),
        epsilons: vec![1.0],
        ks: vec![32],
        privacy: Privacy {
            delta: 1e-6,
            beta: 1.0,
            min_norm: None,
        },
        cs: vec![1.0],
        pick_c: false,
        svm: SvmParams::default(),
        repeat: 1,
        seeds: Seeds::new(Seed([3; 32])),
    };
    let e = svm::run(&tr, &te, &cfg, &|_, _| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("privunit2") && e.contains("eval retrieval"),
        "{e}"
    );
}

/// The command line with local-DP mechanisms: every format names the LDP guarantee; the SVM
/// evaluation and the mechanisms that do not estimate a direction are refused with no output.
#[test]
fn eval_retrieval_command_with_local_mechanisms() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    native::write(&d.join("sample.bin"), &sample::generate()).unwrap();
    let common = [
        "--train",
        "sample.bin",
        "--test",
        "sample.bin",
        "--queries",
        "50",
        "--epsilon",
        "5,500",
        "--k",
        "32",
        "--seed",
        "abc",
    ];
    let mut args = vec![
        "eval",
        "retrieval",
        "--mechanisms",
        "privunit2,projunit:srht,dp-oporp",
        "--out",
        "ret",
    ];
    args.extend(common);
    let out = dprp(d, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("| privunit2 ") && l.contains("| LDP ")),
        "{stdout}"
    );
    assert_eq!(stdout.matches("**LDP**").count(), 1, "{stdout}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("ret/report.json")).unwrap()).unwrap();
    for row in json["rows"].as_array().unwrap() {
        let want = match row["mechanism"].as_str().unwrap() {
            "privunit2" | "projunit:srht" => "local-dp",
            "dp-oporp" => "approx-dp",
            _ => "none",
        };
        assert_eq!(row["guarantee"], want, "{row}");
    }
    let csv = std::fs::read_to_string(d.join("ret/report.csv")).unwrap();
    assert!(
        csv.lines().any(|l| l.starts_with("privunit2,LDP,")),
        "{csv}"
    );
    let svg = std::fs::read_to_string(d.join("ret/precision-at-10-private.svg")).unwrap();
    assert!(svg.contains("privunit2 (LDP)"), "legend");

    for (eval, mech, needle) in [
        ("svm", "dp-oporp,privunit2", "eval retrieval"),
        ("retrieval", "scalar-dp", "scalar-dp"),
        ("retrieval", "privunit2-norm", "privunit2"),
        ("retrieval", "privunit2:srht", "projunit"),
    ] {
        let mut args = vec!["eval", eval, "--mechanisms", mech, "--out", "bad"];
        args.extend(
            common
                .iter()
                .filter(|a| eval == "retrieval" || **a != "--queries" && **a != "50"),
        );
        let out = dprp(d, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{eval} {mech}");
        assert!(stderr.contains(needle), "{eval} {mech}: {stderr}");
        assert!(!d.join("bad").exists(), "{eval} {mech}: output left behind");
    }
}
