//! `dprp aggregate`: a secure-aggregation round with the distributed discrete Gaussian through the
//! real binary — the guarantee stated, the private mean written, its measured error against the
//! planned one, and every bad input refused with no output file.

use crate::cli_helpers;

use cli_helpers::{dprp, dprp_json as json, stderr, temp_files};

/// Synthetic clients: the guarantee and parameters are printed, the mean is written, nothing
/// wraps, and the measured squared error matches the planned E‖μ̂ − μ‖² (noise-dominated: at
/// d = 8192 its relative s.e. is about √(2/8192) = 1.6%, so 10% is > 6 s.e.; a σ 20% off would
/// move it by 44%).
#[test]
fn synthetic_round_with_check() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = dprp(
        d,
        &[
            "aggregate",
            "--synthetic",
            "200,8192",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--clip",
            "1",
            "--bits",
            "18",
            "--check",
            "-o",
            "mean.npy",
        ],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    for needle in [
        "200 clients",
        "-DP for the sum",
        "added or removed",
        "Theorem E.1",
        "bits per client",
        "wrapped: 0",
        "wrote mean.npy (8192 values)",
    ] {
        assert!(out.contains(needle), "{needle} not in\n{out}");
    }
    let bytes = std::fs::read(d.join("mean.npy")).unwrap();
    assert!(bytes.starts_with(b"\x93NUMPY"));
    assert!(bytes.len() > 8192 * 8);

    let v = json(
        d,
        &[
            "aggregate",
            "--synthetic",
            "200,8192",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--clip",
            "1",
            "--bits",
            "18",
            "--check",
            "--json",
        ],
    );
    assert_eq!(v["clients"], 200);
    assert_eq!(v["mean"].as_array().unwrap().len(), 8192);
    assert_eq!(v["bits_per_client"], 8192 * 18);
    assert!((v["epsilon"].as_f64().unwrap() - 1.0).abs() < 1e-9);
    let want = v["expected_squared_error"].as_f64().unwrap();
    let got = v["check"]["squared_error"].as_f64().unwrap();
    assert!(
        (got - want).abs() < 0.1 * want,
        "measured {got}, planned {want}"
    );
    assert_eq!(v["check"]["wrapped_coordinates"], 0);
}

/// Count sketch + DDG: m chosen within the bit cap, the message is m residues, the measured error
/// lies between the noise term and the planned total (whose sketch term is the worst case
/// ‖μ‖ = c); the cap without sketch-ddg, or a non-positive cap, is refused.
#[test]
fn sketch_ddg_round() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let v = json(
        d,
        &[
            "aggregate",
            "-m",
            "sketch-ddg",
            "--bits-per-parameter",
            "1.2",
            "--synthetic",
            "300,20000",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--clip",
            "1",
            "--bits",
            "16",
            "--check",
            "--json",
        ],
    );
    assert_eq!(v["mechanism"], "sketch-ddg");
    let m = v["sketch_m"].as_u64().unwrap();
    assert_eq!(
        m, 1024,
        "the largest power of two within 1.2 bits per parameter"
    );
    assert_eq!(v["bits_per_client"], m * 16);
    assert!(v["bits_per_parameter"].as_f64().unwrap() <= 1.2);
    assert_eq!(v["mean"].as_array().unwrap().len(), 20000);
    let got = v["check"]["squared_error"].as_f64().unwrap();
    let planned = v["expected_squared_error"].as_f64().unwrap();
    assert!(got < 1.1 * planned, "measured {got}, planned {planned}");
    assert_eq!(v["check"]["wrapped_coordinates"], 0);
    for (args, needle) in [
        (
            vec!["-m", "ddg", "--bits-per-parameter", "1"],
            "--bits-per-parameter",
        ),
        (
            vec!["-m", "sketch-ddg", "--bits-per-parameter", "0"],
            "bits per parameter",
        ),
        (vec!["-m", "nope"], "nope"),
    ] {
        let mut full = vec!["aggregate", "--synthetic", "10,64", "--epsilon", "1"];
        full.extend(["--delta", "1e-5", "--clip", "1", "-o", "x.npy"]);
        full.extend(&args);
        let o = dprp(d, &full);
        assert!(!o.status.success(), "{full:?}");
        assert!(stderr(&o).contains(needle), "{full:?}: {}", stderr(&o));
        assert!(!d.join("x.npy").exists());
    }
}

/// Client vectors from a file (CSV, counted in a first pass), the same statement.
#[test]
fn round_over_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("clients.csv"), cli_helpers::rows_csv(50, 12)).unwrap();
    let v = json(
        d,
        &[
            "aggregate",
            "clients.csv",
            "--epsilon",
            "2",
            "--delta",
            "1e-6",
            "--clip",
            "3",
            "--check",
            "--json",
            "-o",
            "m.csv",
        ],
    );
    assert_eq!(v["clients"], 50);
    assert_eq!(v["d"], 12);
    assert_eq!(v["d_rotated"], 16);
    let csv = std::fs::read_to_string(d.join("m.csv")).unwrap();
    assert_eq!(csv.trim().split(',').count(), 12);
}

#[test]
fn bad_input_is_refused_without_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("ok.csv"), cli_helpers::rows_csv(5, 4)).unwrap();
    std::fs::write(d.join("nan.csv"), "0.1,0.2\n0.3,nan\n").unwrap();
    std::fs::write(d.join("ragged.csv"), "0.1,0.2\n0.3\n").unwrap();
    std::fs::write(d.join("empty.csv"), "").unwrap();
    let base = ["--epsilon", "1", "--delta", "1e-5", "--clip", "1"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["ok.csv", "--epsilon", "0", "--delta", "1e-5", "--clip", "1"],
            "--epsilon",
        ),
        (
            vec![
                "ok.csv",
                "--epsilon",
                "-1",
                "--delta",
                "1e-5",
                "--clip",
                "1",
            ],
            "--epsilon",
        ),
        (
            vec![
                "ok.csv",
                "--epsilon",
                "nan",
                "--delta",
                "1e-5",
                "--clip",
                "1",
            ],
            "--epsilon",
        ),
        (
            vec!["ok.csv", "--epsilon", "1", "--delta", "0", "--clip", "1"],
            "--delta",
        ),
        (
            vec!["ok.csv", "--epsilon", "1", "--delta", "1", "--clip", "1"],
            "--delta",
        ),
        (
            vec!["ok.csv", "--epsilon", "1", "--delta", "1e-5", "--clip", "0"],
            "--clip",
        ),
        (
            vec![
                "ok.csv",
                "--epsilon",
                "1",
                "--delta",
                "1e-5",
                "--clip",
                "inf",
            ],
            "--clip",
        ),
        ([&["ok.csv", "--bits", "1"][..], &base].concat(), "--bits"),
        ([&["ok.csv", "--bits", "63"][..], &base].concat(), "--bits"),
        (
            [&["--synthetic", "0,10"][..], &base].concat(),
            "--synthetic",
        ),
        ([&["--synthetic", "10"][..], &base].concat(), "--synthetic"),
        (
            [&["ok.csv", "--synthetic", "10,10"][..], &base].concat(),
            "--synthetic",
        ),
        (base.to_vec(), "input"),
        ([&["nan.csv"][..], &base].concat(), "nan"),
        ([&["ragged.csv"][..], &base].concat(), "ragged.csv"),
        ([&["empty.csv"][..], &base].concat(), "empty"),
        ([&["missing.csv"][..], &base].concat(), "missing.csv"),
        (
            [&["ok.csv", "-m", "nonesuch"][..], &base].concat(),
            "nonesuch",
        ),
        // issue 25: one client is refused (no masks would hide its message)
        (
            [&["--synthetic", "1,8"][..], &base].concat(),
            "at least two clients",
        ),
        // a dimension past the machine's memory is refused before anything is allocated
        (
            [&["--synthetic", "10,100000000000"][..], &base].concat(),
            "GiB is available",
        ),
        // the sketch cap is named as the flag it is
        (
            vec![
                "--synthetic",
                "10,1000",
                "-m",
                "sketch-ddg",
                "--bits-per-parameter",
                "0.001",
                "--epsilon",
                "1",
                "--delta",
                "1e-5",
                "--clip",
                "1",
            ],
            "--bits-per-parameter",
        ),
        (
            vec![
                "ok.csv",
                "--epsilon",
                "1",
                "--delta",
                "1e-5",
                "--clip",
                "1e298",
            ],
            "outside [1e-30, 1e30]",
        ),
    ];
    for (args, needle) in cases {
        let mut full = vec!["aggregate"];
        full.extend(&args);
        full.extend(["-o", "out.npy"]);
        let o = dprp(d, &full);
        let err = stderr(&o);
        assert!(!o.status.success(), "{full:?} succeeded");
        assert!(err.contains(needle), "{full:?}: {err}");
        assert!(!err.contains("panicked"), "{full:?}: {err}");
        assert!(!d.join("out.npy").exists(), "{full:?} left out.npy");
        assert!(temp_files(d).is_empty(), "{full:?} left temporaries");
    }
    // an output that is not .npy or .csv
    let mut full = vec!["aggregate", "ok.csv"];
    full.extend(base);
    full.extend(["-o", "out.txt"]);
    let o = dprp(d, &full);
    assert!(
        !o.status.success() && stderr(&o).contains(".npy"),
        "{}",
        stderr(&o)
    );
}

/// `calibrate --mechanism ddg|sketch-ddg|binomial` prints the plan and its guarantee; missing or
/// bad parameters are refused; the distributed options are refused for other mechanisms.
#[test]
fn calibrate_distributed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = [
        "calibrate",
        "--dim",
        "1000",
        "--users",
        "1000",
        "-e",
        "1",
        "-d",
        "1e-5",
        "--clip",
        "1",
        "--bits",
        "20",
    ];
    for (m, needles) in [
        (
            "ddg",
            vec!["Theorem E.1", "d' = 1024", "P(the modular sum wraps)"],
        ),
        (
            "sketch-ddg",
            vec!["Theorem E.1", "count sketch to m = ", "sketch ≤"],
        ),
        ("binomial", vec!["cpSGD Theorem 1", "k = ", "never wraps"]),
    ] {
        let mut args = base.to_vec();
        args.extend(["-m", m]);
        let o = dprp(d, &args);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{m}: {}", stderr(&o));
        for n in needles {
            assert!(out.contains(n), "{m}: {n} not in {out}");
        }
    }
    // each case changes (or drops, with None) one option of a complete ddg request
    let full = [
        ("-m", "ddg"),
        ("--dim", "10"),
        ("--users", "5"),
        ("-e", "1"),
        ("-d", "1e-5"),
        ("--clip", "1"),
    ];
    for (key, value, needle) in [
        ("--users", None, "--users"),
        ("-d", None, "--delta"),
        ("--clip", None, "--clip"),
        ("--clip", Some("0"), "--clip"),
        ("-e", Some("0"), "--epsilon"),
        ("--bits", Some("70"), "--bits"),
        ("-m", Some("dp-oporp"), "--clip"),
    ] {
        let mut args = vec!["calibrate"];
        let mut seen = false;
        for (k, v) in full {
            if k == key {
                seen = true;
                if let Some(v) = value {
                    args.extend([k, v]);
                }
            } else {
                args.extend([k, v]);
            }
        }
        if !seen {
            args.extend([key, value.unwrap()]);
        }
        let o = dprp(d, &args);
        assert!(!o.status.success(), "{args:?}");
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

/// Issue 25: moduli up to the documented 62 bits plan and run (the integer noise variance is
/// capped inside the exact sampler's range), and a binomial plan at 62 bits stays within its
/// work limit instead of running unbounded.
#[test]
fn wide_moduli_run_and_binomial_work_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for bits in ["38", "52", "62"] {
        let j = json(
            d,
            &[
                "aggregate",
                "--synthetic",
                "50,64",
                "--epsilon",
                "1",
                "--delta",
                "1e-5",
                "--clip",
                "1",
                "--bits",
                bits,
                "--check",
                "--json",
            ],
        );
        assert_eq!(j["check"]["wrapped_coordinates"], 0, "{bits}: {j}");
    }
    let req = dprp::mechanism::distributed::accountant::params::DistributedRequest {
        n: 10,
        d: 100,
        epsilon: 0.01,
        delta: 1e-5,
        clip: 1.0,
        bits: 62,
        max_wrap_probability: 1e-6,
    };
    let plan = dprp::mechanism::distributed::accountant::params::plan_binomial(&req).unwrap();
    let words = 10.0 * plan.d_rot as f64 * plan.m as f64 / 64.0;
    assert!(
        words <= dprp::mechanism::distributed::accountant::params::MAX_BINOMIAL_WORDS,
        "{plan:?}"
    );
    assert!(plan.epsilon <= 0.01, "{plan:?}");
}
