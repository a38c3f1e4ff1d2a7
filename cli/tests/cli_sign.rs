//! The sign mechanisms through the command line: every mechanism publishes a packed-bit release
//! that `info` describes, and their specific bad inputs fail cleanly with nothing left behind.

use std::path::Path;
use std::process::Output;

fn dprp(dir: &Path, args: &[&str]) -> Output {
    crate::cli_helpers::dprp(dir, args)
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// 300 rows × 40 features in [-1,1], row norms between about 1.4 and 3.6, with a label column.
fn write_csv(dir: &Path) {
    let mut s = String::from("label");
    for j in 0..40 {
        s.push_str(&format!(",f{j}"));
    }
    s.push('\n');
    for i in 0..300u64 {
        s.push_str(&format!("{}", i % 2));
        for j in 0..40u64 {
            let h = (i * 7919 + j * 104729 + 13) % 1000;
            let v = (h as f64 / 1000.0) * 1.2 - 0.6 + if j == i % 40 { 0.3 } else { 0.0 };
            s.push_str(&format!(",{:.4}", v.clamp(-1.0, 1.0)));
        }
        s.push('\n');
    }
    std::fs::write(dir.join("d.csv"), s).unwrap();
}

fn no_leftovers(dir: &Path, out: &str) {
    assert!(!dir.join(out).exists(), "{out} was left behind");
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().to_string();
        assert!(
            !name.starts_with(".dprp-tmp-"),
            "temporary file {name} left behind"
        );
    }
}

#[test]
fn every_sign_mechanism_publishes_packed_bits() {
    let d = tempfile::tempdir().unwrap();
    write_csv(d.path());
    let cases: &[(&str, &[&str])] = &[
        ("dp-signrp-rr", &["--min-norm", "1", "--delta", "1e-6"]),
        ("dp-signrp-rr-smooth", &[]),
        ("dp-signoporp-rr", &[]),
        ("dp-signoporp-rr-smooth", &[]),
        ("idp-signrp-g", &["--individual-dp", "--delta", "1e-6"]),
        ("idp-signrp-rr", &["--individual-dp"]),
        ("idp-signoporp-g", &["--individual-dp", "--delta", "1e-6"]),
        ("idp-signoporp-rr", &["--individual-dp"]),
    ];
    for (m, extra) in cases {
        let mut args = vec![
            "publish",
            "d.csv",
            "--label-column",
            "0",
            "-m",
            m,
            "-e",
            "4",
            "-k",
            "33",
            "-o",
            "r.dprp",
        ];
        args.extend_from_slice(extra);
        let _ = std::fs::remove_file(d.path().join("r.dprp"));
        let o = dprp(d.path(), &args);
        assert!(o.status.success(), "{m}: {}", text(&o));
        let bytes = std::fs::read(d.path().join("r.dprp")).unwrap();
        // 300 rows × ⌈33/64⌉ = 1 word each
        let payload_len = u64::from_le_bytes(bytes[40..48].try_into().unwrap());
        assert_eq!(payload_len, 300 * 8, "{m}");
        assert_eq!(
            u32::from_le_bytes(bytes[12..16].try_into().unwrap()),
            1,
            "{m}: payload kind"
        );
        // bits beyond k = 33 are zero in every word
        for w in bytes[128..128 + 2400].chunks(8) {
            assert_eq!(u64::from_le_bytes(w.try_into().unwrap()) >> 33, 0, "{m}");
        }
        let info = dprp(d.path(), &["info", "r.dprp", "--json"]);
        assert!(info.status.success());
        let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        assert_eq!(v["payload"], "bits");
        assert_eq!(v["mechanism"]["name"], *m);
        let kind = v["guarantee"]["kind"].as_str().unwrap().to_string();
        if m.starts_with("idp") {
            assert_eq!(kind, "individual-dp");
            let a = &v["mechanism"]["sign"]["noise_set"];
            assert!(a["min"].as_u64().unwrap() <= a["median"].as_u64().unwrap());
            assert!(a["median"].as_u64().unwrap() <= a["max"].as_u64().unwrap());
            assert!(a["max"].as_u64().unwrap() <= 33);
            let human = text(&dprp(d.path(), &["info", "r.dprp"]));
            assert!(
                human.contains("INDIVIDUAL") && human.contains("median"),
                "{human}"
            );
        } else if *m == "dp-signrp-rr" {
            assert_eq!(kind, "approx-dp");
            assert!(v["mechanism"]["sign"]["n_plus"]["n_plus"].as_u64().unwrap() >= 1);
            assert_eq!(v["mechanism"]["sign"]["min_norm"], 1.0);
        } else {
            assert_eq!(kind, "pure-dp");
        }
    }
}

#[test]
fn idp_needs_the_explicit_flag() {
    let d = tempfile::tempdir().unwrap();
    write_csv(d.path());
    let o = dprp(
        d.path(),
        &[
            "publish",
            "d.csv",
            "--label-column",
            "0",
            "-m",
            "idp-signrp-rr",
            "-e",
            "1",
            "-k",
            "8",
            "-o",
            "r.dprp",
        ],
    );
    assert!(!o.status.success());
    let t = text(&o);
    assert!(t.contains("--individual-dp") && t.contains("weaker"), "{t}");
    no_leftovers(d.path(), "r.dprp");
}

#[test]
fn min_norm_is_required_and_enforced() {
    let d = tempfile::tempdir().unwrap();
    write_csv(d.path());
    let base = [
        "publish",
        "d.csv",
        "--label-column",
        "0",
        "-m",
        "dp-signrp-rr",
        "-e",
        "1",
        "-d",
        "1e-6",
        "-k",
        "8",
        "-o",
        "r.dprp",
    ];
    let o = dprp(d.path(), &base);
    assert!(!o.status.success());
    assert!(text(&o).contains("--min-norm"), "{}", text(&o));
    no_leftovers(d.path(), "r.dprp");
    // a bound above some rows' norms: the first such row is named
    let mut args = base.to_vec();
    args.extend_from_slice(&["--min-norm", "2.5"]);
    let o = dprp(d.path(), &args);
    assert!(!o.status.success());
    let t = text(&o);
    assert!(
        t.contains("row ") && t.contains("below the public bound"),
        "{t}"
    );
    assert!(!t.contains("panicked"));
    no_leftovers(d.path(), "r.dprp");
    // with --normalize l2 the bound defaults to (just under) 1
    let mut args = base.to_vec();
    args.extend_from_slice(&["--normalize", "l2"]);
    let o = dprp(d.path(), &args);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&dprp(d.path(), &["info", "r.dprp", "--json"]).stdout).unwrap();
    assert!(v["mechanism"]["sign"]["min_norm"].as_f64().unwrap() > 0.9999);
    std::fs::remove_file(d.path().join("r.dprp")).unwrap();
    for bad in ["0", "-1", "nan", "inf"] {
        let mut args = base.to_vec();
        args.extend_from_slice(&["--min-norm", bad]);
        let o = dprp(d.path(), &args);
        assert!(!o.status.success(), "--min-norm {bad} accepted");
        assert!(text(&o).contains("--min-norm"));
    }
}

#[test]
fn almost_useless_releases_are_warned_about() {
    let d = tempfile::tempdir().unwrap();
    write_csv(d.path());
    let o = dprp(
        d.path(),
        &[
            "publish",
            "d.csv",
            "--label-column",
            "0",
            "-m",
            "dp-signrp-rr",
            "-e",
            "0.05",
            "-d",
            "1e-6",
            "-k",
            "64",
            "--min-norm",
            "1",
            "-o",
            "r.dprp",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("almost no signal"), "{}", text(&o));
    let o = dprp(
        d.path(),
        &[
            "calibrate",
            "-e",
            "0.05",
            "-d",
            "1e-6",
            "-m",
            "dp-signrp-rr",
            "--dim",
            "784",
            "-k",
            "256",
            "--min-norm",
            "1",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("N₊") && t.contains("flip probability") && t.contains("almost no signal"),
        "{t}"
    );
}

#[test]
fn calibrate_reports_f_n_plus_and_flip_probability() {
    let d = tempfile::tempdir().unwrap();
    let o = dprp(
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
            "512",
            "--min-norm",
            "10",
            "--projection",
            "gaussian",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    // The paper's F_{0.1,784} = 0.26362 is not an upper bound in general; dprp uses eq. (5) at the
    // corrected r' = r/(1 − r·min(1, 1/ν)) = 0.1/0.99: F = 0.26618 (src/privacy/nplus.rs).
    assert!(t.contains("P = 0.2661"), "{t}");
    assert!(t.contains("paper"), "{t}");
    assert!(t.contains("N₊ = "), "{t}");
    let o = dprp(
        d.path(),
        &[
            "calibrate",
            "-e",
            "5",
            "-m",
            "dp-signoporp-rr-smooth",
            "--dim",
            "784",
            "-k",
            "256",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("q(L=1)"));
}

#[test]
fn per_bin_budgets_refuse_l1_neighbours() {
    let d = tempfile::tempdir().unwrap();
    write_csv(d.path());
    for m in ["dp-signoporp-rr", "dp-signoporp-rr-smooth"] {
        let o = dprp(
            d.path(),
            &[
                "publish",
                "d.csv",
                "--label-column",
                "0",
                "-m",
                m,
                "-e",
                "1",
                "-k",
                "8",
                "--neighbour",
                "l1",
                "-o",
                "r.dprp",
            ],
        );
        assert!(!o.status.success(), "{m}");
        assert!(text(&o).contains("--neighbour"), "{}", text(&o));
        no_leftovers(d.path(), "r.dprp");
    }
}
