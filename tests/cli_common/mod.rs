//! Helpers shared by the command-line tests that run the real binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The dprp binary cargo built for these tests.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_dprp")
}

/// Run `dprp args…` in `dir`.
pub fn dprp(dir: &Path, args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("failed to start the dprp binary")
}

/// A process's standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Run `dprp args…` in `dir`, expect success, and parse its standard output as JSON.
pub fn dprp_json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let o = dprp(dir, args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `dprp eval mean --seed 1 --out out args…` must fail with `needle` in its error, without a
/// panic, an `out` directory or temporary files.
pub fn eval_mean_refused(dir: &Path, args: &[&str], needle: &str) {
    let mut all = vec!["eval", "mean", "--seed", "1", "--out", "out"];
    all.extend_from_slice(args);
    let o = dprp(dir, &all);
    assert!(!o.status.success(), "{args:?} succeeded");
    let e = stderr(&o);
    assert!(e.contains(needle), "{args:?}: {e}");
    assert!(!e.contains("panicked"), "{e}");
    assert!(!dir.join("out").exists(), "{args:?} left --out");
    assert!(temp_files(dir).is_empty(), "{args:?} left temporary files");
}

/// The `.dprp-tmp-*` temporary outputs left in `dir`.
pub fn temp_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(".dprp-tmp-"))
        })
        .collect()
}

/// `n` rows of `p` values in [0, 1) as CSV text, deterministic.
pub fn rows_csv(n: usize, p: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        let row: Vec<String> = (0..p)
            .map(|j| format!("{:.3}", ((i * 7 + j * 13) % 19) as f32 / 19.0))
            .collect();
        s.push_str(&row.join(","));
        s.push('\n');
    }
    s
}
