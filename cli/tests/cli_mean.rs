//! `dprp publish` with local-DP mechanisms, `dprp mean`, and what `info` and `calibrate` say about
//! them, run through the real binary; every bad input gets a clear error, a non-zero exit and no
//! output file.

use crate::cli_helpers;

use std::path::Path;

use cli_helpers::{dprp, stderr, temp_files};

/// `n` unit rows of dimension `d` (deterministic), as CSV, and their mean.
fn unit_rows(n: usize, d: usize) -> (String, Vec<f64>) {
    let mut s = String::new();
    let mut mean = vec![0.0; d];
    for i in 0..n {
        let v: Vec<f64> = (0..d)
            .map(|j| 1.0 + ((i * 31 + j * 17) % 23) as f64 / 23.0)
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        let v: Vec<f64> = v.iter().map(|x| x / norm).collect();
        mean.iter_mut()
            .zip(&v)
            .for_each(|(m, x)| *m += x / n as f64);
        s.push_str(
            &v.iter()
                .map(|x| format!("{x:.9}"))
                .collect::<Vec<_>>()
                .join(","),
        );
        s.push('\n');
    }
    (s, mean)
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let o = dprp(dir, args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    String::from_utf8(o.stdout).unwrap()
}

fn json(dir: &Path, args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&ok(dir, args)).unwrap()
}

#[test]
fn publish_info_calibrate_and_mean_of_a_local_release() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (csv, mean) = unit_rows(3000, 16);
    std::fs::write(d.join("u.csv"), csv).unwrap();
    let out = ok(
        d,
        &[
            "publish",
            "u.csv",
            "-m",
            "privunit2",
            "-e",
            "4",
            "-o",
            "a.dprp",
        ],
    );
    assert!(out.contains("gamma = "), "{out}");
    assert!(
        out.contains("ε-LDP (replace-one: any two inputs in the unit ball)"),
        "{out}"
    );
    let info = ok(d, &["info", "a.dprp"]);
    assert!(
        info.contains("4-LDP (replace-one: any two inputs in the unit ball)"),
        "{info}"
    );
    assert!(info.contains("eps_cap = "), "{info}");
    let cal = ok(
        d,
        &[
            "calibrate",
            "-m",
            "privunit2",
            "-e",
            "4",
            "--dim",
            "16",
            "--users",
            "3000",
        ],
    );
    assert!(
        cal.contains("ε-LDP (replace-one: any two inputs in the unit ball)"),
        "{cal}"
    );
    // The same constants as the release.
    let meta = json(d, &["info", "a.dprp", "--json"]);
    let mse = meta["mechanism"]["local"]["mse_per_user"].as_f64().unwrap();
    assert!(cal.contains(&format!("{mse:.6}")), "{cal} vs {mse}");

    // The mean: text, JSON and the two file formats agree.
    let text = ok(d, &["mean", "a.dprp"]);
    assert!(text.contains("mean of 3000 rows"), "{text}");
    let j = json(d, &["mean", "a.dprp", "--json", "-o", "m.csv"]);
    let got: Vec<f64> = j["mean"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(got.len(), 16);
    let expected = j["expected_sq_error"].as_f64().unwrap();
    assert!((expected - mse / 3000.0).abs() < 1e-12 * expected.max(1.0));
    // one draw: the squared error is within a wide multiple of its expectation (P(fail) < 1e-6 by
    // Markov's inequality at 1e6× would be loose; a 50× band on a sum of 16 squared errors of
    // independent users is effectively never crossed)
    let err: f64 = got.iter().zip(&mean).map(|(a, b)| (a - b) * (a - b)).sum();
    assert!(err < 50.0 * expected, "{err} vs {expected}");
    let csv: Vec<f64> = std::fs::read_to_string(d.join("m.csv"))
        .unwrap()
        .trim()
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(csv, got);
    ok(d, &["mean", "a.dprp", "-o", "m.npy"]);
    let npy = std::fs::read(d.join("m.npy")).unwrap();
    let hl = u16::from_le_bytes([npy[8], npy[9]]) as usize;
    let vals: Vec<f64> = npy[10 + hl..]
        .chunks(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(vals, got);
}

#[test]
fn projunit_shards_merge_and_correlated_decodes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (csv, _) = unit_rows(500, 20);
    std::fs::write(d.join("u.csv"), csv).unwrap();
    let pubargs = |out: &'static str, first: &'static str| {
        vec![
            "publish",
            "u.csv",
            "-m",
            "projunit",
            "-e",
            "4",
            "-k",
            "6",
            "--projection",
            "rotation",
            "--projection-seed",
            "ab",
            "--first-row",
            first,
            "-o",
            out,
        ]
    };
    ok(d, &pubargs("s0.dprp", "0"));
    ok(d, &pubargs("s1.dprp", "500"));
    let j = json(d, &["mean", "s0.dprp", "s1.dprp", "--json"]);
    assert_eq!(j["n"], 1000);
    // overlapping row ids (same seed) are refused
    ok(d, &pubargs("s2.dprp", "250"));
    let o = dprp(d, &["mean", "s0.dprp", "s2.dprp", "-o", "m.npy"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("overlap"), "{}", stderr(&o));
    assert!(!d.join("m.npy").exists());
    // correlated ProjUnit and PrivUnitInf publish and decode
    ok(
        d,
        &[
            "publish",
            "u.csv",
            "-m",
            "projunit-correlated",
            "-e",
            "4",
            "-k",
            "6",
            "-o",
            "c.dprp",
        ],
    );
    let info = ok(d, &["info", "c.dprp"]);
    assert!(info.contains("correlated SRHT"), "{info}");
    assert_eq!(json(d, &["mean", "c.dprp", "--json"])["d"], 20);
    ok(
        d,
        &[
            "publish",
            "u.csv",
            "-m",
            "privunit-inf",
            "-e",
            "4",
            "-o",
            "i.dprp",
        ],
    );
    assert!(ok(d, &["info", "i.dprp"]).contains("cube"));
}

/// Every bad input of issue 11: a clear error naming the problem, a non-zero exit, no output file,
/// no temporary left behind, no panic.
#[test]
fn bad_input_is_refused_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (csv, _) = unit_rows(50, 8);
    std::fs::write(d.join("u.csv"), &csv).unwrap();
    std::fs::write(d.join("long.csv"), "0.1,0.2\n3,4\n").unwrap();
    std::fs::write(d.join("nan.csv"), "0.1,0.2\n0.3,nan\n").unwrap();
    std::fs::write(d.join("one.csv"), "0.5\n0.25\n").unwrap();
    // the releases the cases below read
    for cmd in [
        "publish u.csv -m privunit2 -e 2 -o a.dprp",
        "publish u.csv -m privunit2 -e 3 -o b.dprp",
        "publish u.csv -m projunit -e 2 -k 3 --projection-seed 1 -o p1.dprp",
        "publish u.csv -m projunit -e 2 -k 3 --projection-seed 2 -o p2.dprp",
        "publish u.csv -m dp-rp-g-opt -e 2 -d 1e-6 -k 4 -o s.dprp",
    ] {
        ok(d, &cmd.split(' ').collect::<Vec<_>>());
    }
    let publish = |extra: &[&'static str]| {
        let mut v = vec!["publish", "-o", "out.dprp"];
        v.extend_from_slice(extra);
        v
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            publish(&["u.csv", "-m", "privunit2", "-e", "0"]),
            "--epsilon",
        ),
        (
            publish(&["u.csv", "-m", "privunit2", "-e", "-1"]),
            "--epsilon",
        ),
        (
            publish(&["u.csv", "-m", "privunitg", "-e", "NaN"]),
            "--epsilon",
        ),
        (
            publish(&["u.csv", "-m", "privunitg", "-e", "inf"]),
            "--epsilon",
        ),
        (
            publish(&["long.csv", "-m", "privunit2", "-e", "1"]),
            "row 1 (counted from 0): its ℓ₂ norm 5.000000",
        ),
        (
            publish(&["nan.csv", "-m", "privunit2", "-e", "1"]),
            "line 2 of the file, column 1",
        ),
        (
            publish(&["u.csv", "-m", "projunit", "-e", "1", "-k", "0"]),
            "--k",
        ),
        (
            publish(&["u.csv", "-m", "projunit", "-e", "1", "-k", "9"]),
            "k ≤ d = 8",
        ),
        (publish(&["u.csv", "-m", "projunit", "-e", "1"]), "--k"),
        (publish(&["one.csv", "-m", "privunit2", "-e", "1"]), "d ≥ 2"),
        (
            publish(&["u.csv", "-m", "privunit2", "-e", "1", "--beta", "2"]),
            "--beta",
        ),
        (
            publish(&[
                "u.csv",
                "-m",
                "projunit",
                "-e",
                "1",
                "-k",
                "2",
                "--projection",
                "sparse:3",
            ]),
            "--projection",
        ),
        (
            publish(&["u.csv", "-m", "scalar-dp", "-e", "1", "--radius", "1"]),
            "one value per row",
        ),
        (
            publish(&["u.csv", "-m", "privunit2-norm", "-e", "1", "--radius", "1"]),
            "--epsilon-norm",
        ),
        (
            publish(&[
                "u.csv",
                "-m",
                "dp-rp-g-opt",
                "-e",
                "1",
                "-d",
                "1e-6",
                "-k",
                "2",
                "--radius",
                "1",
            ]),
            "--radius",
        ),
        (vec!["mean", "s.dprp", "-o", "out.npy"], "no mean decoder"),
        (
            vec!["mean", "a.dprp", "b.dprp", "-o", "out.npy"],
            "different mechanism configuration",
        ),
        (
            vec!["mean", "p1.dprp", "p2.dprp", "-o", "out.npy"],
            "different mechanism configuration",
        ),
        (vec!["mean", "a.dprp", "-o", "out.txt"], ".npy or .csv"),
        (
            vec!["mean", "missing.dprp", "-o", "out.npy"],
            "missing.dprp",
        ),
        (vec!["mean", "u.csv", "-o", "out.npy"], "u.csv"),
        (vec!["mean", "a.dprp", "-o", "a.dprp"], ".npy or .csv"),
        (
            vec![
                "calibrate",
                "-m",
                "projunit",
                "-e",
                "1",
                "--dim",
                "8",
                "-k",
                "9",
            ],
            "k ≤ d",
        ),
        (
            vec![
                "calibrate",
                "-m",
                "dp-rp-g-opt",
                "-e",
                "1",
                "-d",
                "1e-6",
                "--dim",
                "8",
                "--users",
                "5",
            ],
            "--users",
        ),
    ];
    for (args, want) in cases {
        let o = dprp(d, &args);
        let err = stderr(&o);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: expected '{want}' in: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!d.join("out.dprp").exists(), "{args:?} left an output");
        assert!(!d.join("out.npy").exists(), "{args:?} left an output");
        assert!(temp_files(d).is_empty(), "{args:?} left a temporary file");
    }
    // --clip-norm and --normalize map long rows into the ball
    ok(
        d,
        &publish(&["long.csv", "-m", "privunit2", "-e", "1", "--clip-norm", "1"]),
    );
    std::fs::remove_file(d.join("out.dprp")).unwrap();
    ok(
        d,
        &publish(&[
            "long.csv",
            "-m",
            "privunit2",
            "-e",
            "1",
            "--normalize",
            "l2",
        ]),
    );
}

/// A release with no rows (written through the library, since publish refuses empty input) has no
/// mean.
#[test]
fn the_mean_of_an_empty_release_is_refused() {
    use dprp::mechanism::{self, LocalOptions, MechanismKind, MechanismParams};
    use dprp::privacy::guarantee::Neighbour;
    use dprp::release::{now_rfc3339, NoiseRecord, ReleaseMeta, ReleaseWriter, VERSION};
    let dir = tempfile::tempdir().unwrap();
    let m = mechanism::build(&MechanismParams {
        kind: MechanismKind::Privunitg,
        epsilon: 2.0,
        delta: None,
        beta: 1.0,
        neighbour: Neighbour::ReplaceOne,
        p: 4,
        k: None,
        projection: None,
        seed: None,
        min_norm: None,
        individual_dp: false,
        local: LocalOptions::default(),
    })
    .unwrap();
    let path = dir.path().join("empty.dprp");
    let w = ReleaseWriter::create(&path, m.payload(), m.output_dim(), false, false).unwrap();
    let g = m.guarantee();
    let meta = ReleaseMeta {
        format_version: VERSION,
        tool: "test".into(),
        created: now_rfc3339(),
        n: 0,
        p: 4,
        k: m.output_dim(),
        payload: m.payload(),
        mechanism: m.record(),
        statement: g.sentence(),
        guarantee: g,
        private: true,
        noise: NoiseRecord {
            source: "os-csprng".into(),
            generator: "test".into(),
        },
        scaling: Default::default(),
        labels: false,
        ids: false,
        dataset: None,
        shard: None,
        input_format: None,
    };
    w.finish(meta).unwrap();
    let o = dprp(dir.path(), &["mean", "empty.dprp", "-o", "m.npy"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no rows"), "{}", stderr(&o));
    assert!(!dir.path().join("m.npy").exists());
}
