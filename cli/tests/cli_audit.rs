//! End-to-end `dprp audit`: a deliberately mis-calibrated mechanism of each family is flagged
//! (exit status 1, naming the mechanism and the event), its honest control is not, and bad input
//! is refused with the option named.
//!
//! **False alarms.** The audit reports ε̂_lower at 95% overall (Bonferroni over its bounds), so
//! for an honest mechanism the probability that a run is flagged is at most 5% *before* the seed
//! is fixed; each control below runs at a fixed `--seed` and is deterministic. The controls are
//! deliberately at the tight end: on the worst-case pairs of randomised response, smooth
//! flipping and Duchi et al. the true privacy loss equals the claimed ε exactly, so a bound that
//! over-covered (e.g. dropped the Clopper–Pearson correction) would flag them.
//!
//! **Power.** Every flagged case samples the mechanism built with σ × 0.7 or 1.5·ε while the claim
//! stays the honest one; the margins measured at the seeds used are in the comments.

use crate::cli_helpers;

#[allow(unused_imports)]
use cli_helpers::*;

/// Run `dprp audit … --json` at a fixed seed; returns (exited 0, the report, stderr).
fn audit(args: &[&str]) -> (bool, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec!["audit", "--json"];
    all.extend_from_slice(args);
    let out = dprp(dir.path(), &all);
    let desc = describe(&all, &out);
    let err = text(&out.stderr);
    assert!(!err.contains("panicked"), "panic:\n{desc}");
    assert!(out.status.code().is_some(), "killed by a signal:\n{desc}");
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{desc}"));
    (out.status.success(), v, err)
}

/// The mis-calibrated run is flagged with exit status 1 and a message naming the mechanism; the
/// honest run at the same seed passes and its bound stays below the claim.
fn flagged_and_control(mechanism: &str, hook: &str, extra: &[&str]) -> (f64, f64) {
    let mut bad = vec!["--mechanism", mechanism, "--miscalibrate", hook];
    bad.extend_from_slice(extra);
    let (ok, v, err) = audit(&bad);
    assert!(!ok, "{mechanism} with {hook} was not flagged: {v}");
    assert_eq!(v["flagged"], true, "{v}");
    assert!(
        err.contains("audit:") && err.contains(mechanism) && err.contains("exceeds the claimed ε"),
        "{err}"
    );
    let claim = v["claim"]["epsilon"].as_f64().unwrap();
    let bad_eps = v["epsilon_lower"].as_f64().unwrap();
    assert!(bad_eps > claim, "{v}");

    let mut honest = vec!["--mechanism", mechanism];
    honest.extend_from_slice(extra);
    let (ok, v, err) = audit(&honest);
    assert!(ok, "honest {mechanism} was flagged: {err}\n{v}");
    assert_eq!(v["flagged"], false);
    assert!(v["miscalibrate"].is_null());
    let good_eps = v["epsilon_lower"].as_f64().unwrap_or(f64::NEG_INFINITY);
    assert!(good_eps <= claim, "{v}");
    (bad_eps, good_eps)
}

/// Gaussian: dp-rp-g-opt with σ × 0.7 (β × 0.7, the same public map). Measured at seed 5:
/// ε̂_lower 1.143 against the claim ε = 1 (the best event's expected bound at this sample size
/// is 1.19 with a standard error of about 0.05; the event chosen on the selection half varies,
/// and seeds 1–5 gave 0.93, 1.01, 1.13, 1.04, 1.14 with dprp 0.3.0's grid arithmetic, 1.14, 1.14,
/// 1.08, 1.06, 1.13 with 0.2.0's f32 one); honest 0.78.
#[test]
fn gaussian_sigma_too_small_is_flagged() {
    let (bad, good) = flagged_and_control(
        "dp-rp-g-opt",
        "sigma=0.7",
        &[
            "--p",
            "8",
            "--k",
            "4",
            "-e",
            "1",
            "-d",
            "1e-5",
            "--trials",
            "4000000",
            "--random-pairs",
            "0",
            "--seed",
            "5",
        ],
    );
    assert!(bad > 1.05 && good > 0.5, "{bad} {good}");
}

/// The sigma hook realises σ × F exactly (σ ∝ Δ₂ ∝ β) and reports the ratio.
#[test]
fn sigma_hook_scales_sigma_exactly() {
    for m in ["raw-g-opt", "dp-rp-g", "dp-rp-g-opt", "dp-oporp"] {
        let (_, v, _) = audit(&[
            "--mechanism",
            m,
            "--miscalibrate",
            "sigma=0.7",
            "--trials",
            "200",
            "--random-pairs",
            "0",
            "--seed",
            "2",
            "-e",
            "0.5",
        ]);
        let r = v["sigma_ratio"]
            .as_f64()
            .unwrap_or_else(|| panic!("{m}: {v}"));
        assert!((r - 0.7).abs() < 1e-6, "{m}: {r}");
        assert_eq!(
            v["claim"]["epsilon"], 0.5,
            "{m}: the claim stays the honest one"
        );
    }
}

/// Randomised response on OPORP signs (one bin moves: the single flipped sign has loss exactly
/// ε). At 1.5ε: ε̂_lower ≈ 1.48; honest ≈ 0.99 (seed 3).
#[test]
fn randomised_response_with_too_much_epsilon_is_flagged() {
    let (bad, good) = flagged_and_control(
        "dp-signoporp-rr",
        "epsilon=1.5",
        &["--trials", "200000", "--seed", "3"],
    );
    assert!(bad > 1.3 && good > 0.9, "{bad} {good}");
}

/// Smooth flipping on a dense projection: the worst-case pair flips all k = 8 signs at level 1,
/// total loss exactly ε; the count family sees it. At 1.5ε: ε̂_lower 1.253; honest 0.801 (seed 3).
#[test]
fn smooth_flipping_with_too_much_epsilon_is_flagged() {
    let (bad, good) = flagged_and_control(
        "dp-signrp-rr-smooth",
        "epsilon=1.5",
        &["--trials", "200000", "--seed", "3"],
    );
    assert!(bad > 1.1 && good > 0.6, "{bad} {good}");
}

/// Local DP: Duchi et al.'s hemisphere mechanism on x and −x (the hemisphere event has ratio
/// exactly e^ε). At 1.5ε: ε̂_lower 1.454; honest 0.975 (seed 4).
#[test]
fn local_dp_with_too_much_epsilon_is_flagged() {
    let (bad, good) = flagged_and_control(
        "duchi",
        "epsilon=1.5",
        &[
            "--p",
            "4",
            "--trials",
            "100000",
            "--random-pairs",
            "0",
            "--seed",
            "4",
        ],
    );
    assert!(bad > 1.3 && good > 0.85, "{bad} {good}");
}

/// The JSON report: one bound per (pair, family), the worst case first, Bonferroni divisor.
#[test]
fn json_report_shape() {
    let (ok, v, _) = audit(&[
        "--mechanism",
        "dp-oporp",
        "-e",
        "2",
        "-d",
        "1e-6",
        "--trials",
        "2000",
        "--seed",
        "5",
    ]);
    assert!(ok);
    assert_eq!(v["mechanism"], "dp-oporp");
    assert_eq!(v["claim"]["delta"], 1e-6);
    let pairs = v["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 3);
    assert_eq!(pairs[0]["pair"]["name"], "worst case");
    assert_eq!(v["bounds"], 9);
    let fams: Vec<&str> = pairs[0]["families"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["family"].as_str().unwrap())
        .collect();
    assert_eq!(fams, ["direction", "coordinate", "sign"]);
    // the worst-case pair: x = −β/2·e_i and x' = +β/2·e_i
    let x = pairs[0]["pair"]["x"].as_array().unwrap();
    let y = pairs[0]["pair"]["x_prime"].as_array().unwrap();
    let diff: Vec<f64> = x
        .iter()
        .zip(y)
        .map(|(a, b)| b.as_f64().unwrap() - a.as_f64().unwrap())
        .filter(|d| *d != 0.0)
        .collect();
    assert_eq!(diff, [1.0]);
}

/// The text report names every family and the verdict; the hook is not in --help.
#[test]
fn text_report_and_hidden_hook() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(
        dir.path(),
        &[
            "audit",
            "-m",
            "dp-signoporp-rr",
            "--trials",
            "2000",
            "--seed",
            "6",
        ],
    );
    for needle in [
        "worst case",
        "bit",
        "count",
        "ε̂_lower",
        "no violation found",
    ] {
        assert!(out.contains(needle), "{needle}:\n{out}");
    }
    let help = ok(dir.path(), &["audit", "--help"]);
    assert!(
        help.contains("--trials") && help.contains("--all"),
        "{help}"
    );
    assert!(!help.contains("miscalibrate"), "{help}");
}

/// `--out` writes report.md and report.json (whole or not at all).
#[test]
fn out_writes_markdown_and_json() {
    let dir = tempfile::tempdir().unwrap();
    ok(
        dir.path(),
        &[
            "audit",
            "-m",
            "scalar-dp",
            "--trials",
            "2000",
            "--seed",
            "7",
            "--out",
            "rep",
        ],
    );
    let md = std::fs::read_to_string(dir.path().join("rep/report.md")).unwrap();
    assert!(md.contains("| `scalar-dp` |"), "{md}");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("rep/report.json")).unwrap())
            .unwrap();
    assert_eq!(v["reports"][0]["mechanism"], "scalar-dp");
    assert!(v["command"].as_str().unwrap().starts_with("dprp audit"));
}

#[test]
fn bad_input_is_refused_with_the_option_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: &[(&[&str], &[&str])] = &[
        (&["audit"], &["--mechanism"]),
        (&["audit", "-m", "dp-magic"], &["--mechanism", "dp-magic"]),
        (&["audit", "--all", "-k", "4"], &["--k", "--all"]),
        (&["audit", "-m", "dp-oporp", "--trials", "1"], &["--trials"]),
        (&["audit", "-m", "dp-oporp", "-e", "0"], &["--epsilon"]),
        (&["audit", "-m", "dp-oporp", "-e", "nan"], &["--epsilon"]),
        (&["audit", "-m", "dp-oporp", "-d", "2"], &["--delta"]),
        (
            &["audit", "-m", "dp-signoporp-rr", "-d", "1e-5"],
            &["--delta", "pure"],
        ),
        (&["audit", "-m", "dp-oporp", "-b", "3"], &["--beta"]),
        (&["audit", "-m", "duchi", "-b", "1"], &["--beta"]),
        (&["audit", "-m", "raw-g-opt", "-k", "4"], &["--k"]),
        (&["audit", "-m", "dp-oporp", "-k", "40"], &["k"]),
        (&["audit", "-m", "dp-oporp", "--p", "0"], &["--p"]),
        (
            &["audit", "-m", "dp-signrp-rr", "--min-norm", "100"],
            &["--min-norm"],
        ),
        (
            &[
                "audit",
                "-m",
                "dp-signoporp-rr",
                "--miscalibrate",
                "sigma=0.7",
            ],
            &[
                "--miscalibrate",
                "Gaussian sketches (raw-g-opt, dp-rp-g, dp-rp-g-opt, dp-oporp)",
            ],
        ),
        (
            &["audit", "-m", "dp-oporp", "--miscalibrate", "sigma=-1"],
            &["--miscalibrate"],
        ),
        (
            &["audit", "-m", "dp-oporp", "--miscalibrate", "noise"],
            &["--miscalibrate"],
        ),
        (
            &[
                "audit", "-m", "dp-oporp", "--trials", "10000000", "-k", "16",
            ],
            &["--trials", "values"],
        ),
        (
            &["audit", "-m", "dp-oporp", "--trials", "100000000"],
            &["--trials", "at most"],
        ),
    ];
    for (args, needles) in cases {
        fails(d, args, needles);
    }
}
