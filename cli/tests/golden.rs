//! Golden outputs: the guard rail of the restructuring (issue 27). For every mechanism (all 20
//! kinds) a release of fixed rows with fixed projection and noise seeds — its payload's BLAKE3
//! hash and `info --json` without the timestamp — and the `calibrate` table; `mean --json` of each
//! local release; `aggregate --check --json` of each encoder without its noise-dependent fields,
//! and its `calibrate` plan.
//! Each is compared byte for byte with `tests/golden/<name>.txt`; a refactor that changes any
//! output fails here.
//!
//! A change that is meant to change outputs (a new release field, a version) re-records them:
//! `DPRP_BLESS=1 cargo test --release --test cli -- golden::`, then review `git diff tests/golden`. A
//! missing golden file is a failure, never a skip.
//!
//! The goldens were recorded on the project's x86-64 machine (AVX2 and FMA). The f64 sums of the
//! Gaussian and uniform maps and the f32 products of the queries go through `matrixmultiply`,
//! which picks its kernel at run time; on a CPU with other vector units their last bits (and so
//! a payload hash) can differ, which this test would report as a change.

use crate::cli_helpers;

#[allow(unused_imports)]
use cli_helpers::*;

use std::path::{Path, PathBuf};

use dprp::mechanism::MechanismKind;

fn golden_dir() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("tests/golden")
}

/// Compare `text` with `tests/golden/<name>.txt` (or write it under `DPRP_BLESS=1`); returns a
/// description of the mismatch.
fn check(name: &str, text: &str) -> Option<String> {
    let path = golden_dir().join(format!("{name}.txt"));
    if std::env::var_os("DPRP_BLESS").is_some() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, text).unwrap();
        return None;
    }
    match std::fs::read_to_string(&path) {
        Ok(want) if want == text => None,
        Ok(want) => {
            let line = want
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(want.lines().count().min(text.lines().count()));
            Some(format!(
                "{name}: differs from {} at line {} (re-record with DPRP_BLESS=1 if intended):\n  \
                 golden: {}\n  now:    {}",
                path.display(),
                line + 1,
                want.lines().nth(line).unwrap_or("<end>"),
                text.lines().nth(line).unwrap_or("<end>")
            ))
        }
        Err(e) => Some(format!(
            "{name}: no golden file {} ({e}); record it with DPRP_BLESS=1",
            path.display()
        )),
    }
}

/// Deterministic rows in [−1, 1]: `n × p`, float32 `.npy`.
fn rows(n: usize, p: usize) -> Vec<f32> {
    (0..n * p)
        .map(|t| (((t * 7919 + 13) % 2003) as f32 / 1001.0 - 1.0).clamp(-1.0, 1.0))
        .collect()
}

/// The payload of a release of any payload type (offset and length from the header).
fn payload_bytes(path: &Path) -> Vec<u8> {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[0..8], b"DPRPSKCH");
    let (off, len) = (u64_at(&b, 32) as usize, u64_at(&b, 40) as usize);
    b[off..off + len].to_vec()
}

/// `info --json` as a sorted JSON object without the creation time.
fn info_without_time(dir: &Path, release: &str) -> String {
    let mut v = info_json(dir, release);
    let o = v.as_object_mut().unwrap();
    o.remove("created");
    serde_json::to_string_pretty(&v).unwrap()
}

fn publish_args(kind: MechanismKind) -> Vec<String> {
    let mut a: Vec<String> = vec!["publish".into()];
    if kind.is_local() {
        a.extend(["u.npy", "-e", "4", "--normalize", "l2"].map(String::from));
        match kind {
            MechanismKind::Projunit | MechanismKind::ProjunitCorrelated => {
                a.extend(["-k", "8"].map(String::from))
            }
            MechanismKind::PrivunitInf => {
                // inputs in the cube, not on the sphere
                a.truncate(1);
                a.extend(["x.npy", "-e", "4"].map(String::from));
            }
            MechanismKind::ScalarDp => {
                // one value per row in [0, R]
                a.truncate(1);
                a.extend(["s.npy", "-e", "4", "--radius", "1"].map(String::from));
            }
            MechanismKind::Privunit2Norm => {
                // vectors in the ball of radius R
                a.truncate(1);
                a.extend(
                    ["b.npy", "-e", "4", "--epsilon-norm", "1", "--radius", "1"].map(String::from),
                );
            }
            _ => {}
        }
    } else {
        a.extend(["x.npy", "-e", "5"].map(String::from));
        if kind.needs_delta() {
            a.extend(["-d", "1e-6"].map(String::from));
        }
        if kind.projects() {
            a.extend(["-k", "16"].map(String::from));
        }
        if kind == MechanismKind::DpSignrpRr {
            a.extend(["--min-norm", "0.5"].map(String::from));
        }
        if kind.name().starts_with("idp-") {
            a.push("--individual-dp".into());
        }
    }
    a.extend(
        [
            "-m",
            kind.name(),
            "--projection-seed",
            "a1",
            "--noise-seed",
            "7",
            "-o",
            "r.dprp",
            // every mechanism is published to the same name in turn
            "--overwrite",
        ]
        .map(String::from),
    );
    a
}

/// Every mechanism's release (payload hash and `info --json`), its `calibrate` table, and
/// (local) `mean --json`.
#[test]
fn every_mechanism_matches_its_golden_outputs() {
    let d = tmp();
    let (n, p) = (40, 24);
    let x = rows(n, p);
    put(d.path(), "x.npy", &npy("<f4", n, p, &f32_le(&x)));
    // rows for the local mechanisms: normalised by publish (--normalize l2)
    put(d.path(), "u.npy", &npy("<f4", n, p, &f32_le(&x)));
    // scalar-dp: one value per row in [0, 1]; privunit2-norm: rows inside the unit ball
    let s: Vec<f32> = (0..n).map(|i| x[i * p].abs()).collect();
    put(d.path(), "s.npy", &npy("<f4", n, 1, &f32_le(&s)));
    let b: Vec<f32> = x.iter().map(|v| v / (p as f32).sqrt()).collect();
    put(d.path(), "b.npy", &npy("<f4", n, p, &f32_le(&b)));
    let mut failures = Vec::new();
    let kinds: Vec<MechanismKind> = MechanismKind::SKETCH
        .iter()
        .chain(MechanismKind::LOCAL.iter())
        .copied()
        .collect();
    assert_eq!(kinds.len(), 20);
    for kind in kinds {
        let args = publish_args(kind);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (_, stderr) = ok2(d.path(), &args);
        let payload = payload_bytes(&d.path().join("r.dprp"));
        let mut text = format!("payload blake3 {}\n", blake3::hash(&payload).to_hex());
        text.push_str(&info_without_time(d.path(), "r.dprp"));
        text.push('\n');
        text.push_str("--- publish stderr\n");
        text.push_str(&stderr);
        if kind.is_local() {
            text.push_str("--- mean --json\n");
            let mean = ok(d.path(), &["mean", "r.dprp", "--json"]);
            let mut v: Value = serde_json::from_str(&mean).unwrap();
            if let Some(o) = v.as_object_mut() {
                o.remove("seconds");
            }
            text.push_str(&serde_json::to_string_pretty(&v).unwrap());
            text.push('\n');
        }
        failures.extend(check(&format!("publish-{}", kind.name()), &text));

        let dim = if kind == MechanismKind::ScalarDp {
            "1"
        } else {
            "24"
        };
        let mut cal = vec!["calibrate", "-m", kind.name(), "--dim", dim, "-e", "5"];
        match kind {
            MechanismKind::ScalarDp => cal.extend(["--radius", "1"]),
            MechanismKind::Privunit2Norm => cal.extend(["--radius", "1", "--epsilon-norm", "1"]),
            MechanismKind::DpSignrpRr => cal.extend(["--min-norm", "0.5"]),
            _ => {}
        }
        if kind.is_local() {
            if matches!(
                kind,
                MechanismKind::Projunit | MechanismKind::ProjunitCorrelated
            ) {
                cal.extend(["--k", "8"]);
            }
        } else {
            if kind.needs_delta() {
                cal.extend(["-d", "1e-6"]);
            }
            if kind.projects() {
                cal.extend(["--k", "16", "--projection-seed", "a1"]);
            }
        }
        let out = dprp(d.path(), &cal);
        let text = format!(
            "status {}\n--- stdout\n{}--- stderr\n{}",
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        failures.extend(check(&format!("calibrate-{}", kind.name()), &text));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // power: a changed output is reported
    if std::env::var_os("DPRP_BLESS").is_none() {
        assert!(check("publish-dp-rp-g-opt", "payload blake3 0\n").is_some());
    }
}

/// `aggregate --check --json` of each encoder on synthetic clients with a fixed public seed,
/// and the `calibrate` plan of the same round,
/// without the fields the secret randomness decides (the mean, the check's error, the random
/// rounding's draws, and with them the clipping it causes and its bias bound) and the timing.
#[test]
fn every_encoder_matches_its_golden_plan() {
    let d = tmp();
    let mut failures = Vec::new();
    for m in ["ddg", "sketch-ddg", "binomial"] {
        let out = ok(
            d.path(),
            &[
                "aggregate",
                "--synthetic",
                "60,32",
                "-m",
                m,
                "-e",
                "2",
                "--delta",
                "1e-5",
                "--clip",
                "1",
                "--seed",
                "5",
                "--check",
                "--json",
            ],
        );
        let mut v: Value = serde_json::from_str(&out).unwrap();
        let o = v.as_object_mut().unwrap();
        for noisy in [
            "mean",
            "check",
            "seconds",
            "rounding_draws",
            "clip_bias_bound",
            "clipped_clients",
        ] {
            o.remove(noisy);
        }
        failures.extend(check(
            &format!("aggregate-{m}"),
            &(serde_json::to_string_pretty(&v).unwrap() + "\n"),
        ));
        // the plan `dprp calibrate` prints for the same round (no secret randomness in it)
        let mut cal = vec![
            "calibrate",
            "-m",
            m,
            "--users",
            "60",
            "--dim",
            "32",
            "-e",
            "2",
            "-d",
            "1e-5",
            "--clip",
            "1",
        ];
        if m == "sketch-ddg" {
            cal.extend(["--bits-per-parameter", "4"]);
        }
        failures.extend(check(&format!("calibrate-{m}"), &ok(d.path(), &cal)));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
