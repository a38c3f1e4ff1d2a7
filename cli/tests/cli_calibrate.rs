//! End-to-end `calibrate` and `demo`.

use crate::cli_helpers;

#[allow(unused_imports)]
use cli_helpers::*;

// ---------------------------------------------------------------------------------------------
// 4. calibrate
// ---------------------------------------------------------------------------------------------

/// The number after the last `=` on the line containing `label`.
fn value_after(out: &str, label: &str) -> f64 {
    let line = out
        .lines()
        .find(|l| l.contains(label))
        .unwrap_or_else(|| panic!("no line with {label:?}:\n{out}"));
    let tail = line.rsplit('=').next().unwrap();
    tail.split_whitespace()
        .next()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no number in {line:?}"))
}

/// The numeric row of calibrate's table for `k`: (k, Δ₂, σ, σ classical, var both, sd both, var raw, sd raw).
/// The Gaussian table's row for `k`: k, Δ₂, Δ_r/Δ₂ − 1, σ, σ cost (%), σ classical, var both,
/// sd both, var raw-q, sd raw-q.
fn table_row(out: &str, k: usize) -> Vec<f64> {
    out.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.len() == 10 && w[0] == k.to_string())
        .unwrap_or_else(|| panic!("no table row for k = {k}:\n{out}"))
        .iter()
        .map(|t| t.trim_end_matches('%').parse().unwrap())
        .collect()
}

#[test]
fn calibrate_reference_sigmas() {
    let d = tmp();
    let out = ok(
        d.path(),
        &[
            "calibrate",
            "--epsilon",
            "1",
            "--delta",
            "1e-6",
            "--sensitivity",
            "1",
        ],
    );
    let analytic = value_after(&out, "analytic");
    let classical = value_after(&out, "classical");
    assert_eq!(format!("{analytic:.4}"), "4.2247", "{out}");
    assert_eq!(format!("{classical:.4}"), "5.2988", "{out}");
    // DESIGN.md §4 reference table, a few more entries; σ scales linearly with Δ₂.
    for (eps, delta, sigma) in [
        ("0.5", "1e-6", "8.0576"),
        ("5", "1e-6", "0.9800"),
        ("2", "1e-5", "1.9938"),
    ] {
        let out = ok(d.path(), &["calibrate", "--epsilon", eps, "--delta", delta]);
        assert_eq!(
            format!("{:.4}", value_after(&out, "analytic")),
            sigma,
            "{out}"
        );
    }
    let out = ok(
        d.path(),
        &[
            "calibrate",
            "--epsilon",
            "1",
            "--delta",
            "1e-6",
            "--sensitivity",
            "2",
        ],
    );
    assert_eq!(
        format!("{:.3}", value_after(&out, "analytic")),
        "8.449",
        "{out}"
    );
}

#[test]
fn calibrate_for_a_mechanism() {
    let d = tmp();
    let args = [
        "calibrate",
        "--epsilon",
        "5",
        "--delta",
        "1e-6",
        "--mechanism",
        "dp-rp-g-opt",
        "--dim",
        "784",
        "--k",
        "256",
    ];
    let out = ok(d.path(), &args);
    let row = table_row(&out, 256);
    assert_eq!(row[1], 1.0, "Rademacher Δ₂ = β = 1:\n{out}");
    // the analytic σ is 0.98 (float noise); the default lattice noise adds the input grid
    // (2^-12), the exact sums' error (≈ 10⁻¹³) and the lattice step (≤ 2^-12): Δ_r/Δ₂ − 1 ≤ 10⁻³
    // and σ within 0.1% of 0.9800 (dprp 0.2.0's f32 arithmetic gave 1.0525, +7.4%)
    assert!(row[2] > 0.0 && row[2] <= 1e-3, "Δ_r/Δ₂ − 1:\n{out}");
    assert!((row[3] / 0.98 - 1.0).abs() < 1e-3, "σ ≈ 0.98:\n{out}");
    assert!(row[4] > 0.0 && row[4] < 0.1, "σ cost in %:\n{out}");
    assert!(out.contains("lattice noise"), "{out}");
    // `--noise float` calibrates for the float sampler: the analytic σ of DESIGN.md §4
    let fl = ok(d.path(), &with(&args, &["--noise", "float"]));
    assert!(fl.contains("float noise"), "{fl}");
    // (for Δ₂ plus the input grid's 2^-12: 0.9800·(1 + 2.44·10⁻⁴))
    let row_fl = table_row(&fl, 256);
    assert!((row_fl[3] / 0.98 - 1.0).abs() < 1e-3, "{fl}");
    assert!((row_fl[2] - 1.0 / 4096.0).abs() < 1e-6, "{fl}");
    // and only where there is a Gaussian sampler to choose
    fails(
        d.path(),
        &[
            "calibrate",
            "-e",
            "5",
            "-d",
            "1e-6",
            "-m",
            "dp-signrp-rr",
            "--dim",
            "784",
            "-k",
            "256",
            "--noise",
            "float",
        ],
        &["--noise", "dp-signrp-rr"],
    );
    fails(
        d.path(),
        &with(&args, &["--noise", "exact"]),
        &["--noise", "exact"],
    );
    assert!(
        row[6] > 0.0 && row[9] > 0.0 && (row[7] * row[7] - row[6]).abs() < 1e-3 * row[6],
        "{out}"
    );

    let out = ok(
        d.path(),
        &with(
            &args,
            &["--projection", "gaussian", "--projection-seed", "1"],
        ),
    );
    let row = table_row(&out, 256);
    assert!(
        row[1] > 1.0,
        "Gaussian W: Δ₂ = max row norm / √k > 1:\n{out}"
    );
    assert!(row[3] > 0.98, "{out}");

    // dp-oporp: Δ₂ = β, default table of k ≤ p.
    let out = ok(
        d.path(),
        &[
            "calibrate",
            "-e",
            "5",
            "-d",
            "1e-6",
            "-m",
            "dp-oporp",
            "--dim",
            "784",
        ],
    );
    for k in [64, 128, 256, 512] {
        assert_eq!(table_row(&out, k)[1], 1.0, "{out}");
    }
    assert!(
        !out.lines().any(|l| l.trim_start().starts_with("1024")),
        "k ≤ p:\n{out}"
    );
}

#[test]
fn calibrate_rejects_bad_parameters() {
    let d = tmp();
    for eps in ["0", "-1", "nan", "inf"] {
        fails(
            d.path(),
            &[
                "calibrate",
                "--epsilon",
                eps,
                "--delta",
                "1e-6",
                "--sensitivity",
                "1",
            ],
            &["--epsilon"],
        );
        fails(
            d.path(),
            &[
                "calibrate",
                "--epsilon",
                eps,
                "--delta",
                "1e-6",
                "-m",
                "dp-oporp",
                "--dim",
                "784",
                "--k",
                "256",
            ],
            &["--epsilon"],
        );
    }
    for delta in ["0", "1", "1.5", "-0.5", "nan"] {
        fails(
            d.path(),
            &[
                "calibrate",
                "--epsilon",
                "1",
                "--delta",
                delta,
                "--sensitivity",
                "1",
            ],
            &["--delta"],
        );
        fails(
            d.path(),
            &[
                "calibrate",
                "--epsilon",
                "1",
                "--delta",
                delta,
                "-m",
                "dp-rp-g",
                "--dim",
                "784",
                "--k",
                "256",
            ],
            &["--delta"],
        );
    }
    for s in ["0", "-1", "nan"] {
        fails(
            d.path(),
            &[
                "calibrate",
                "--epsilon",
                "1",
                "--delta",
                "1e-6",
                "--sensitivity",
                s,
            ],
            &["--sensitivity"],
        );
    }
    fails(
        d.path(),
        &[
            "calibrate",
            "--epsilon",
            "1",
            "--delta",
            "1e-6",
            "-m",
            "dp-nope",
            "--dim",
            "10",
        ],
        &["--mechanism", "dp-nope"],
    );
    fails(
        d.path(),
        &[
            "calibrate",
            "--epsilon",
            "1",
            "--delta",
            "1e-6",
            "-m",
            "dp-oporp",
            "--dim",
            "0",
        ],
        &["--dim"],
    );
    fails(
        d.path(),
        &[
            "calibrate",
            "--epsilon",
            "1",
            "--delta",
            "1e-6",
            "-m",
            "dp-oporp",
            "--dim",
            "10",
            "--k",
            "20",
        ],
        &["--k"],
    );
    fails(
        d.path(),
        &[
            "calibrate",
            "--epsilon",
            "1",
            "--delta",
            "1e-6",
            "--beta",
            "0",
        ],
        &["--beta"],
    );
    assert!(temp_leftovers(d.path()).is_empty());
}

#[test]

fn calibrate_prints_nothing_when_parameters_are_invalid() {
    let d = tmp();
    for args in [
        [
            "calibrate",
            "--epsilon",
            "0",
            "--delta",
            "1e-6",
            "-m",
            "dp-oporp",
            "--dim",
            "784",
            "--k",
            "256",
        ],
        [
            "calibrate",
            "--epsilon",
            "1",
            "--delta",
            "2",
            "-m",
            "dp-oporp",
            "--dim",
            "784",
            "--k",
            "256",
        ],
    ] {
        let out = dprp(d.path(), &args);
        assert!(!out.status.success(), "{}", describe(&args, &out));
        assert!(
            out.stdout.is_empty(),
            "a rejected run should print no results:\n{}",
            describe(&args, &out)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 5. demo
// ---------------------------------------------------------------------------------------------

#[test]
fn demo_runs() {
    let d = tmp();
    let out = ok(d.path(), &["demo"]);
    for want in [
        "dp-oporp",
        "dp-rp-g-opt",
        "dp-signoporp-rr",
        "guarantee",
        "checksum verified",
        "95% Clopper–Pearson interval",
        "95% score interval",
        "90% of runs fell between",
        "meaning:",
    ] {
        assert!(out.contains(want), "demo should print {want:?}:\n{out}");
    }
    // With --out-dir the releases are kept and readable.
    ok(d.path(), &["demo", "--out-dir", "demo"]);
    for f in ["sample-dp-oporp.dprp", "sample-dp-rp-g-opt.dprp"] {
        let j = info_json(&d.path().join("demo"), f);
        assert_eq!(j["p"], 64, "{j}");
        assert_eq!(j["k"], 32, "{j}");
        assert_eq!(j["labels"], true, "{j}");
    }
    assert!(temp_leftovers(d.path()).is_empty());
}
