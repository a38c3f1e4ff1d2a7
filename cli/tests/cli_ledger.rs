//! The privacy budget ledger through the command line: `publish --ledger DIR [--budget ε[,δ]]`,
//! `dprp ledger DIR [--json]` and the fingerprint in `info`.

use crate::cli_helpers;

use std::path::Path;
use std::process::{Command, Output};

use cli_helpers::{bin, dprp, rows_csv, stderr, temp_files};
use serde_json::Value;

fn ok(o: &Output) {
    assert!(o.status.success(), "dprp failed: {}", stderr(o));
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Publish `input` with pure-ε randomised response on OPORP signs (fast; k = 4 ≤ p = 6).
fn publish_rr(dir: &Path, input: &str, eps: &str, out: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "publish",
        input,
        "-m",
        "dp-signoporp-rr",
        "-e",
        eps,
        "-k",
        "4",
        "-o",
        out,
    ];
    args.extend_from_slice(extra);
    dprp(dir, &args)
}

fn info_json(dir: &Path, release: &str) -> Value {
    let o = dprp(dir, &["info", release, "--json"]);
    ok(&o);
    serde_json::from_slice(&o.stdout).unwrap()
}

fn fingerprint(dir: &Path, release: &str) -> (String, String) {
    let v = info_json(dir, release);
    let d = &v["dataset"];
    (
        d["fingerprint"].as_str().unwrap().to_string(),
        d["key_id"].as_str().unwrap().to_string(),
    )
}

fn journal_lines(ledger: &Path) -> usize {
    std::fs::read_to_string(ledger.join(".dprp-ledger/journal.jsonl"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[test]
fn fingerprint_is_the_rows_as_read_keyed_and_absent_without_a_ledger() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let csv = rows_csv(300, 6);
    std::fs::write(d.join("a.csv"), &csv).unwrap();
    // The same rows in another order, and converted to the native format.
    let rev: Vec<&str> = csv.lines().rev().collect();
    std::fs::write(d.join("rev.csv"), rev.join("\n") + "\n").unwrap();
    ok(&dprp(d, &["convert", "a.csv", "-o", "a.bin"]));
    // One value changed.
    let mut lines: Vec<String> = csv.lines().map(String::from).collect();
    let mut cells: Vec<String> = lines[17].split(',').map(String::from).collect();
    cells[2] = if cells[2] == "0.500" {
        "0.501"
    } else {
        "0.500"
    }
    .into();
    lines[17] = cells.join(",");
    std::fs::write(d.join("edit.csv"), lines.join("\n") + "\n").unwrap();

    ok(&publish_rr(d, "a.csv", "1", "L/a.dprp", &["--ledger", "L"]));
    ok(&publish_rr(
        d,
        "rev.csv",
        "1",
        "L/rev.dprp",
        &["--ledger", "L"],
    ));
    ok(&publish_rr(
        d,
        "a.bin",
        "1",
        "L/bin.dprp",
        &["--ledger", "L"],
    ));
    // publish's own scaling is not part of the dataset.
    ok(&publish_rr(
        d,
        "a.csv",
        "1",
        "L/scaled.dprp",
        &["--ledger", "L", "--scale", "2"],
    ));
    ok(&publish_rr(
        d,
        "edit.csv",
        "1",
        "L/edit.dprp",
        &["--ledger", "L"],
    ));
    // Another ledger: another key.
    ok(&publish_rr(d, "a.csv", "1", "M/a.dprp", &["--ledger", "M"]));
    ok(&publish_rr(d, "a.csv", "1", "plain.dprp", &[]));

    let a = fingerprint(d, "L/a.dprp");
    assert_eq!(a.0.len(), 64);
    for same in ["L/rev.dprp", "L/bin.dprp", "L/scaled.dprp"] {
        assert_eq!(fingerprint(d, same), a, "{same}");
    }
    let edit = fingerprint(d, "L/edit.dprp");
    assert_eq!(edit.1, a.1);
    assert_ne!(edit.0, a.0, "one value changed must change the fingerprint");
    let m = fingerprint(d, "M/a.dprp");
    assert_ne!(
        m.0, a.0,
        "another ledger's key must give another fingerprint"
    );
    assert_ne!(m.1, a.1);
    // The fingerprint is not a plain hash of the rows anyone could recompute.
    let plain = blake3::hash(std::fs::read(d.join("a.bin")).unwrap().as_slice());
    assert_ne!(a.0, plain.to_hex().to_string());

    // The key never reaches a release.
    let key = std::fs::read(d.join("L/.dprp-ledger/key")).unwrap();
    // the key, then the journal's commitment (not secret)
    assert_eq!(key.len(), 80);
    let key = key[..32].to_vec();
    let key_hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    for r in ["L/a.dprp", "L/edit.dprp", "L/scaled.dprp"] {
        let bytes = std::fs::read(d.join(r)).unwrap();
        assert!(!bytes.windows(32).any(|w| w == key.as_slice()), "{r}");
        assert!(!String::from_utf8_lossy(&bytes).contains(&key_hex), "{r}");
    }

    // Without --ledger: no fingerprint, and info says so.
    assert!(info_json(d, "plain.dprp").get("dataset").is_none());
    let text = stdout(&dprp(d, &["info", "plain.dprp"]));
    assert!(
        text.contains("no fingerprint (published without --ledger)"),
        "{text}"
    );
    let text = stdout(&dprp(d, &["info", "L/a.dprp"]));
    assert!(
        text.contains(&format!("fingerprint {}", &a.0[..16])) && !text.contains(&key_hex),
        "{text}"
    );
}

#[test]
fn budget_refusal_leaves_no_file_and_an_exactly_met_budget_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("x.csv"), rows_csv(200, 6)).unwrap();
    let budget = ["--ledger", "L", "--budget", "0.3"];
    ok(&publish_rr(d, "x.csv", "0.1", "L/a.dprp", &budget));
    // 0.1 + 0.2 meets 0.3 exactly (in decimal; the binary sum is 0.30000000000000004).
    let o = publish_rr(d, "x.csv", "0.2", "L/b.dprp", &budget);
    ok(&o);
    assert!(
        stdout(&o).contains("2 release(s) of this dataset"),
        "{}",
        stdout(&o)
    );
    assert_eq!(journal_lines(&d.join("L")), 2);
    // One more ε = 0.1 is past the budget: refused, nothing written, nothing recorded.
    let o = publish_rr(d, "x.csv", "0.1", "L/c.dprp", &budget);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("exceed the privacy budget ε = 0.3")
            && e.contains("2 earlier release(s)")
            && e.contains("(Σε, Σδ) = (0.4")
            && e.contains("L/c.dprp not written"),
        "{e}"
    );
    assert!(!d.join("L/c.dprp").exists());
    assert!(temp_files(&d.join("L")).is_empty());
    assert_eq!(journal_lines(&d.join("L")), 2);
    // A release that alone exceeds the budget is refused before the data is read.
    let o = publish_rr(d, "x.csv", "0.5", "L/d.dprp", &budget);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("by this release alone"),
        "{}",
        stderr(&o)
    );
    assert!(!d.join("L/d.dprp").exists());
    // Another dataset in the same ledger has its own budget.
    std::fs::write(d.join("y.csv"), rows_csv(201, 6)).unwrap();
    ok(&publish_rr(d, "y.csv", "0.3", "L/y.dprp", &budget));
    // Deleting a release does not refund its budget: the journal still counts it.
    std::fs::remove_file(d.join("L/a.dprp")).unwrap();
    let o = publish_rr(d, "x.csv", "0.1", "L/e.dprp", &budget);
    assert!(!o.status.success(), "a deleted release must still count");
    let listing = stdout(&dprp(d, &["ledger", "L"]));
    assert!(
        listing.contains("file missing: recorded in the journal, still counted"),
        "{listing}"
    );
}

/// Canonne–Kamath–Steinke's ε(ρ, δ) by a dense scan over α (independent of the library).
fn cks_epsilon_by_scan(rho: f64, delta: f64) -> f64 {
    (0..=400_000)
        .map(|i| {
            let am1 = (-12.0 + 24.0 * i as f64 / 400_000.0).exp();
            let a = 1.0 + am1;
            a * rho + (am1 / a).ln() - (delta.ln() + a.ln()) / am1
        })
        .fold(f64::INFINITY, f64::min)
}

#[test]
fn two_gaussian_releases_compose_basic_and_zcdp() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("x.csv"), rows_csv(100, 6)).unwrap();
    for (m, e, out) in [
        ("dp-rp-g-opt", "1", "L/g1.dprp"),
        ("dp-oporp", "2", "L/g2.dprp"),
    ] {
        let args = [
            "publish", "x.csv", "-m", m, "-e", e, "-d", "1e-6", "-k", "4", "-o", out, "--ledger",
            "L",
        ];
        ok(&dprp(d, &args));
    }
    // ρ = Δ²/(2σ²) from each release's recorded calibration, by hand.
    let rhos: Vec<f64> = ["L/g1.dprp", "L/g2.dprp"]
        .iter()
        .map(|r| {
            let g = &info_json(d, r)["mechanism"]["gaussian"];
            let (s, sigma) = (
                g["sensitivity"].as_f64().unwrap(),
                g["sigma"].as_f64().unwrap(),
            );
            s * s / (2.0 * sigma * sigma)
        })
        .collect();
    let rho = rhos[0] + rhos[1];
    let o = dprp(d, &["ledger", "L", "--json"]);
    ok(&o);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let ds = v["datasets"].as_array().unwrap();
    assert_eq!(ds.len(), 1);
    assert_eq!(ds[0]["releases"].as_array().unwrap().len(), 2);
    assert_eq!(ds[0]["this_ledger"], true);
    let t = &ds[0]["total"];
    assert_eq!(t["epsilon"].as_f64().unwrap(), 3.0);
    assert!((t["delta"].as_f64().unwrap() - 2e-6).abs() < 1e-18);
    assert!((t["rho"].as_f64().unwrap() - rho).abs() <= 1e-12 * rho);
    let want = cks_epsilon_by_scan(rho, 2e-6);
    let got = t["zcdp_epsilon"].as_f64().unwrap();
    assert!((got - want).abs() <= 1e-6 * want, "{got} vs {want}");
    // Power: one release's ρ alone would be far off.
    assert!((cks_epsilon_by_scan(rho / 2.0, 2e-6) - want).abs() > 1e-2);
    let text = stdout(&dprp(d, &["ledger", "L"]));
    assert!(
        text.contains("total, basic composition (Σε, Σδ): (3, 2e-6)-DP")
            && text.contains("total, zCDP composition: ρ =")
            && text.contains("Canonne, Kamath & Steinke"),
        "{text}"
    );
    // A third release like the first (same ε, δ, Δ₂ = 1, so the same ρ) under a budget only zCDP
    // meets: Σε = 4 is over it, the zCDP ε at the budget's δ is not.
    let zc = cks_epsilon_by_scan(rho + rhos[0], 1e-6);
    assert!(zc < 3.9, "{zc}");
    let budget = format!("{:.4},1e-6", zc * 1.001);
    let o = dprp(
        d,
        &[
            "publish",
            "x.csv",
            "-m",
            "dp-oporp",
            "-e",
            "1",
            "-d",
            "1e-6",
            "-k",
            "4",
            "-o",
            "L/g3.dprp",
            "--ledger",
            "L",
            "--budget",
            &budget,
        ],
    );
    ok(&o);
    assert!(stdout(&o).contains("by zCDP composition"), "{}", stdout(&o));
    // Power: 1% under the zCDP figure is refused.
    let budget = format!("{:.4},1e-6", zc * 0.99);
    let o = dprp(
        d,
        &[
            "publish",
            "x.csv",
            "-m",
            "dp-oporp",
            "-e",
            "0.001",
            "-d",
            "1e-6",
            "-k",
            "4",
            "-o",
            "L/g4.dprp",
            "--ledger",
            "L",
            "--budget",
            &budget,
        ],
    );
    assert!(!o.status.success(), "{}", stdout(&o));
}

#[test]
fn unattributed_unreadable_and_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("x.csv"), rows_csv(50, 6)).unwrap();
    // A ledger directory that does not exist.
    let o = dprp(d, &["ledger", "nope"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    std::fs::create_dir(d.join("L")).unwrap();
    ok(&publish_rr(d, "x.csv", "1", "L/u.dprp", &[]));
    ok(&publish_rr(d, "x.csv", "1", "L/f.dprp", &["--ledger", "L"]));
    let o = dprp(d, &["ledger", "L"]);
    ok(&o);
    let text = stdout(&o);
    assert!(
        text.contains("1 dataset(s), 1 unattributed") && text.contains("u.dprp"),
        "{text}"
    );
    let v: Value = serde_json::from_slice(&dprp(d, &["ledger", "L", "--json"]).stdout).unwrap();
    assert_eq!(v["unattributed"][0]["file"], "u.dprp");
    assert_eq!(v["datasets"][0]["releases"][0]["file"], "f.dprp");
    // A damaged release in the directory: listed by name, the rest still shown, status 1; a
    // budget cannot be checked past it.
    std::fs::write(d.join("L/junk.dprp"), b"not a release").unwrap();
    let o = dprp(d, &["ledger", "L"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("junk.dprp could not be read"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("f.dprp"));
    let o = publish_rr(
        d,
        "x.csv",
        "0.1",
        "L/g.dprp",
        &["--ledger", "L", "--budget", "100"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("cannot check the budget: junk.dprp"),
        "{}",
        stderr(&o)
    );
    assert!(!d.join("L/g.dprp").exists());
    // Bad budgets, and a budget without a ledger.
    for (b, msg) in [
        ("0", "ε must be a positive"),
        ("-1", "ε must be a positive"),
        ("1,1", "δ must lie in [0, 1)"),
        ("1,-1e-6", "δ must lie in [0, 1)"),
        ("x", "is not a number"),
    ] {
        let o = publish_rr(
            d,
            "x.csv",
            "0.1",
            "M/a.dprp",
            &["--ledger", "M", "--budget", b],
        );
        assert!(!o.status.success());
        assert!(stderr(&o).contains(msg), "{b}: {}", stderr(&o));
    }
    let o = publish_rr(d, "x.csv", "0.1", "a.dprp", &["--budget", "1"]);
    assert!(
        stderr(&o).contains("--budget needs the ledger"),
        "{}",
        stderr(&o)
    );
    // A not-private release (--noise-seed) fits no budget.
    let o = publish_rr(
        d,
        "x.csv",
        "0.1",
        "N/a.dprp",
        &["--ledger", "N", "--budget", "100", "--noise-seed", "7"],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("not private"), "{}", stderr(&o));
}

#[test]
fn racing_publishes_cannot_both_pass_the_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("x.csv"), rows_csv(3000, 6)).unwrap();
    std::fs::create_dir(d.join("L")).unwrap();
    // Each release spends ε = 1; the budget 1.5 fits one of them.
    for round in 0..3 {
        let spawn = |out: String| {
            Command::new(bin())
                .args([
                    "publish",
                    "x.csv",
                    "-m",
                    "dp-signoporp-rr",
                    "-e",
                    "1",
                    "-k",
                    "4",
                    "-o",
                ])
                .arg(&out)
                .args(["--ledger", &format!("L{round}"), "--budget", "1.5"])
                .current_dir(d)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        };
        std::fs::create_dir(d.join(format!("L{round}"))).unwrap();
        let mut a = spawn(format!("L{round}/a.dprp"));
        let mut b = spawn(format!("L{round}/b.dprp"));
        let (sa, sb) = (a.wait().unwrap(), b.wait().unwrap());
        assert!(
            sa.success() != sb.success(),
            "round {round}: exactly one of two racing publishes must pass ({sa}, {sb})"
        );
        let files = ["a", "b"]
            .iter()
            .filter(|n| d.join(format!("L{round}/{n}.dprp")).exists())
            .count();
        assert_eq!(files, 1);
        assert_eq!(journal_lines(&d.join(format!("L{round}"))), 1);
    }
}

/// `publish --shards N --ledger DIR`: the shard directory is one release of the whole dataset —
/// every shard and the manifest record the fingerprint of all rows (the same as a one-file
/// release of the same rows), the directory is checked against the budget and recorded once.
/// Parquet releases count like native ones; a Parquet file without dprp's metadata (a dataset)
/// is not a release and is ignored.
#[test]
fn a_shard_directory_and_a_parquet_release_count_once_each() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("x.csv"), rows_csv(900, 6)).unwrap();
    let budget = ["--ledger", "L", "--budget", "2.5"];
    let mut extra = vec!["--shards", "3"];
    extra.extend_from_slice(&budget);
    ok(&publish_rr(d, "x.csv", "1", "L/set", &extra));
    ok(&publish_rr(d, "x.csv", "1", "L/one.parquet", &budget));
    let (whole, key) = fingerprint(d, "L/one.parquet");
    assert_eq!(fingerprint(d, "L/set"), (whole.clone(), key.clone()));
    for i in 0..3 {
        let shard = format!("L/set/shard-0000{i}-of-00003.dprp");
        assert_eq!(fingerprint(d, &shard).0, whole, "{shard}");
    }
    assert_eq!(journal_lines(&d.join("L")), 2);
    // A third release of ε = 1 would pass 2.5: refused, nothing written (no directory).
    let mut extra = vec!["--shards", "2"];
    extra.extend_from_slice(&budget);
    let o = publish_rr(d, "x.csv", "1", "L/more", &extra);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("2 earlier release(s)") && stderr(&o).contains("L/more not written"),
        "{}",
        stderr(&o)
    );
    assert!(!d.join("L/more").exists());
    assert_eq!(journal_lines(&d.join("L")), 2);
    // A Parquet file beside the releases that is no release (projected queries: the same
    // columns, without a release's metadata) is not counted.
    ok(&dprp(
        d,
        &[
            "project",
            "L/one.parquet",
            "--queries",
            "x.csv",
            "-o",
            "L/data.parquet",
        ],
    ));
    let v: Value = serde_json::from_slice(&dprp(d, &["ledger", "L", "--json"]).stdout).unwrap();
    let rel = v["datasets"][0]["releases"].as_array().unwrap();
    let files: Vec<&str> = rel.iter().map(|r| r["file"].as_str().unwrap()).collect();
    assert_eq!(files, ["set", "one.parquet"], "{v}");
    assert!(rel.iter().all(|r| r["status"] == "present"), "{v}");
    assert_eq!(v["datasets"].as_array().unwrap().len(), 1, "{v}");
    // Gone and replaced are still counted, and shown.
    std::fs::remove_dir_all(d.join("L/set")).unwrap();
    std::fs::remove_file(d.join("L/one.parquet")).unwrap();
    ok(&publish_rr(d, "x.csv", "0.5", "L/one.parquet", &[]));
    let v: Value = serde_json::from_slice(&dprp(d, &["ledger", "L", "--json"]).stdout).unwrap();
    let rel = v["datasets"][0]["releases"].as_array().unwrap();
    let status: Vec<&str> = rel.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(status, ["missing", "replaced"], "{v}");
    // A damaged Parquet release is reported, and blocks a budget check.
    let mut bytes = std::fs::read(d.join("L/one.parquet")).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 1;
    std::fs::write(d.join("L/one.parquet"), &bytes).unwrap();
    let o = dprp(d, &["ledger", "L"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("one.parquet could not be read"),
        "{}",
        stderr(&o)
    );
}

/// Issue 25: a deleted (or replaced) ledger key must not reset a dataset's budget; a refusal
/// names δ when δ is what the budget lacks; a refused first publish leaves no ledger behind.
#[test]
fn a_lost_key_a_pure_budget_and_a_refused_first_publish() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("x.csv"), rows_csv(200, 6)).unwrap();
    let budget = ["--ledger", "L", "--budget", "4"];
    ok(&publish_rr(d, "x.csv", "3", "L/a.dprp", &budget));
    let key = d.join("L/.dprp-ledger/key");
    let saved = std::fs::read(&key).unwrap();
    // the key deleted: ε 3 + 3 > 4 must not pass under a fresh key
    std::fs::remove_file(&key).unwrap();
    let o = publish_rr(d, "x.csv", "3", "L/b.dprp", &budget);
    assert!(!o.status.success(), "a new key let the budget start again");
    let e = stderr(&o);
    assert!(
        e.contains("key") && e.contains("missing") && e.contains("Restore the key file"),
        "{e}"
    );
    assert!(!d.join("L/b.dprp").exists() && !key.exists());
    // the key replaced by another (e.g. copied from another ledger): refused too
    std::fs::write(d.join("M.csv"), rows_csv(10, 6)).unwrap();
    ok(&publish_rr(d, "M.csv", "1", "M/m.dprp", &["--ledger", "M"]));
    std::fs::copy(d.join("M/.dprp-ledger/key"), &key).unwrap();
    let o = publish_rr(d, "x.csv", "3", "L/b.dprp", &budget);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("fingerprinted under key"),
        "{}",
        stderr(&o)
    );
    // restored: the budget counts the first release again
    std::fs::write(&key, &saved).unwrap();
    let o = publish_rr(d, "x.csv", "3", "L/b.dprp", &budget);
    assert!(!o.status.success() && stderr(&o).contains("exceed the privacy budget"));
    ok(&publish_rr(d, "x.csv", "1", "L/b.dprp", &budget));
    // a pure-ε budget and a release with δ: the message names δ, not ε
    let o = dprp(
        d,
        &[
            "publish",
            "x.csv",
            "-m",
            "dp-oporp",
            "-e",
            "1",
            "-d",
            "1e-6",
            "-k",
            "4",
            "--ledger",
            "nodir",
            "--budget",
            "5",
            "-o",
            "nodir/g.dprp",
        ],
    );
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("ε is within the budget, δ is not") && e.contains("pure ε"),
        "{e}"
    );
    // and the refused first publish left no ledger (no key) behind
    assert!(
        !d.join("nodir").exists(),
        "{:?}",
        std::fs::read_dir(d.join("nodir")).map(|r| r.count())
    );
}

/// Issue 37: deleting, truncating or editing the journal must not reset a dataset's budget (the
/// key file commits to the journal); removing the whole `.dprp-ledger` while releases fingerprinted
/// under its key remain in the directory is refused too; a key file of dprp ≤ 0.3 (the bare key)
/// is still read and gains its commitment at the next release.
#[test]
fn a_deleted_or_truncated_journal_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("x.csv"), rows_csv(200, 6)).unwrap();
    let budget = ["--ledger", "L", "--budget", "4"];
    ok(&publish_rr(d, "x.csv", "2", "L/a.dprp", &budget));
    ok(&publish_rr(d, "x.csv", "1", "out-a.dprp", &budget));
    let journal = d.join("L/.dprp-ledger/journal.jsonl");
    let saved = std::fs::read(&journal).unwrap();
    assert_eq!(saved.iter().filter(|&&b| b == b'\n').count(), 2);
    let key = d.join("L/.dprp-ledger/key");
    assert_eq!(std::fs::read(&key).unwrap().len(), 80);
    // deleted: ε 3 + 3 > 4 must not pass
    std::fs::remove_file(&journal).unwrap();
    let o = publish_rr(d, "x.csv", "1", "L/b.dprp", &budget);
    assert!(
        !o.status.success(),
        "a deleted journal let the budget start again"
    );
    let e = stderr(&o);
    assert!(
        e.contains("journal") && e.contains("is missing") && e.contains("Restore"),
        "{e}"
    );
    assert!(!d.join("L/b.dprp").exists());
    // `dprp ledger` says so too
    let o = dprp(d, &["ledger", "L"]);
    assert!(
        !o.status.success() && stderr(&o).contains("is missing"),
        "{}",
        stderr(&o)
    );
    // truncated to its first line, and edited: refused
    let first = saved.iter().position(|&b| b == b'\n').unwrap() + 1;
    std::fs::write(&journal, &saved[..first]).unwrap();
    let o = publish_rr(d, "x.csv", "1", "L/b.dprp", &budget);
    assert!(
        !o.status.success() && stderr(&o).contains("fewer than"),
        "{}",
        stderr(&o)
    );
    let mut edited = saved.clone();
    let at = edited
        .windows(3)
        .position(|w| w == b"2.0" || w == b"\"2\"")
        .unwrap_or(10);
    edited[at] ^= 1;
    std::fs::write(&journal, &edited).unwrap();
    let o = publish_rr(d, "x.csv", "1", "L/b.dprp", &budget);
    assert!(
        !o.status.success() && stderr(&o).contains("differs"),
        "{}",
        stderr(&o)
    );
    // restored: the budget holds (2 + 1 spent, 1 more fits, 1.5 does not)
    std::fs::write(&journal, &saved).unwrap();
    let o = publish_rr(d, "x.csv", "1.5", "L/b.dprp", &budget);
    assert!(!o.status.success() && stderr(&o).contains("exceed the privacy budget"));
    ok(&publish_rr(d, "x.csv", "1", "L/b.dprp", &budget));
    // the whole .dprp-ledger removed, the releases still in L: refused, no new key made
    std::fs::remove_dir_all(d.join("L/.dprp-ledger")).unwrap();
    let o = publish_rr(d, "x.csv", "1", "L/c.dprp", &budget);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("no key and no journal") && e.contains("a.dprp"),
        "{e}"
    );
    assert!(!d.join("L/.dprp-ledger/key").exists() && !d.join("L/c.dprp").exists());
    // a key file of dprp ≤ 0.3 (32 bytes, no commitment) with its journal: read, and committed
    // again at the next release
    let tmp2 = tempfile::tempdir().unwrap();
    let d2 = tmp2.path();
    std::fs::write(d2.join("x.csv"), rows_csv(50, 6)).unwrap();
    ok(&publish_rr(
        d2,
        "x.csv",
        "1",
        "M/a.dprp",
        &["--ledger", "M"],
    ));
    let key2 = d2.join("M/.dprp-ledger/key");
    let bytes = std::fs::read(&key2).unwrap();
    std::fs::write(&key2, &bytes[..32]).unwrap();
    ok(&publish_rr(
        d2,
        "x.csv",
        "1",
        "M/b.dprp",
        &["--ledger", "M"],
    ));
    assert_eq!(std::fs::read(&key2).unwrap().len(), 80);
    assert_eq!(&std::fs::read(&key2).unwrap()[..32], &bytes[..32]);
}
