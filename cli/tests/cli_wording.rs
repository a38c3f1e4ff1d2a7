//! How dprp words what it tells a user: one numbering convention, empty files called empty,
//! missing options called missing, ignored options warned about once, and the noise source a
//! release actually used.

use crate::cli_helpers;
use cli_helpers::*;
use std::path::Path;

fn sample(dir: &Path) {
    let s = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("data/sample.bin");
    std::fs::copy(s, dir.join("s.bin")).unwrap();
}

#[test]
fn positions_are_counted_from_zero_and_say_so() {
    let d = tempfile::tempdir().unwrap();
    // a value outside the domain at row 1, column 2
    std::fs::write(d.path().join("x.csv"), "0.1,0.2,0.3\n0.1,0.2,3.0\n").unwrap();
    let o = dprp(
        d.path(),
        &[
            "publish", "x.csv", "-m", "dp-oporp", "-e", "1", "-d", "1e-6", "-k", "2", "-o",
            "r.dprp",
        ],
    );
    let e = stderr(&o);
    assert!(!o.status.success());
    assert!(e.contains("row 1, column 2 (counted from 0)"), "{e}");
    // a parse error: the file's line (as editors number it) and the column counted from 0
    std::fs::write(d.path().join("y.csv"), "0.1,0.2,0.3\n0.1,abc,0.3\n").unwrap();
    let o = dprp(d.path(), &["convert", "y.csv", "-o", "y.bin"]);
    let e = stderr(&o);
    assert!(
        e.contains("line 2 of the file, column 1 (counted from 0)"),
        "{e}"
    );
    assert!(!d.path().join("y.bin").exists());
}

#[test]
fn empty_files_are_called_empty() {
    let d = tempfile::tempdir().unwrap();
    for name in ["e.bin", "e.csv", "e.npy", "e.dprp"] {
        std::fs::write(d.path().join(name), b"").unwrap();
    }
    for args in [
        vec![
            "publish", "e.bin", "-m", "dp-oporp", "-e", "1", "-d", "1e-6", "-k", "2", "-o",
            "r.dprp",
        ],
        vec!["convert", "e.csv", "-o", "o.bin"],
        vec!["convert", "e.npy", "-o", "o.bin"],
        vec!["info", "e.dprp"],
        vec!["query", "e.dprp", "--queries", "e.csv"],
    ] {
        let o = dprp(d.path(), &args);
        let e = stderr(&o);
        assert!(!o.status.success(), "{args:?}");
        assert!(e.contains("the file is empty (0 bytes)"), "{args:?}: {e}");
        assert!(!e.contains("magic"), "{args:?}: {e}");
    }
    assert!(!d.path().join("r.dprp").exists() && !d.path().join("o.bin").exists());
}

#[test]
fn missing_options_are_called_missing() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    let o = dprp(
        d.path(),
        &[
            "publish",
            "s.bin",
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
    let e = stderr(&o);
    assert!(e.starts_with("error: missing --individual-dp:"), "{e}");
    assert!(!e.contains("invalid"), "{e}");
    let o = dprp(
        d.path(),
        &[
            "publish", "s.bin", "-m", "dp-oporp", "-e", "1", "-k", "8", "-o", "r.dprp",
        ],
    );
    assert!(
        stderr(&o).starts_with("error: missing --delta:"),
        "{}",
        stderr(&o)
    );
    let o = dprp(
        d.path(),
        &[
            "publish", "s.bin", "-m", "dp-oporp", "-e", "1", "-d", "1e-6", "-o", "r.dprp",
        ],
    );
    assert!(
        stderr(&o).starts_with("error: missing --k:"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn warnings_once_and_for_ignored_options() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    // --delta with a pure-ε mechanism: said, not silently dropped
    let o = dprp(
        d.path(),
        &[
            "publish",
            "s.bin",
            "-m",
            "dp-signoporp-rr",
            "-e",
            "1",
            "-d",
            "1e-6",
            "-k",
            "8",
            "-o",
            "a.dprp",
        ],
    );
    // issue 37: an option that does not apply is refused, not ignored
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("invalid --delta: dp-signoporp-rr gives pure ε-DP, without δ"),
        "{}",
        stderr(&o)
    );
    assert!(!d.path().join("a.dprp").exists());
    let o = dprp(
        d.path(),
        &[
            "publish",
            "s.bin",
            "-m",
            "dp-signoporp-rr",
            "-e",
            "1",
            "-k",
            "8",
            "-o",
            "b.dprp",
        ],
    );
    assert!(!stderr(&o).contains("--delta"), "{}", stderr(&o));
    // --noise-seed: one warning
    let o = dprp(
        d.path(),
        &[
            "publish",
            "s.bin",
            "-m",
            "dp-oporp",
            "-e",
            "1",
            "-d",
            "1e-6",
            "-k",
            "8",
            "--noise-seed",
            "x",
            "-o",
            "c.dprp",
        ],
    );
    let e = stderr(&o);
    assert_eq!(e.matches("NOT private").count(), 1, "{e}");
}

#[test]
fn info_names_the_noise_a_release_used() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    let run = |m: &str, extra: &[&str], out: &str| {
        let mut a = vec![
            "publish", "s.bin", "-m", m, "-e", "5", "-k", "16", "-o", out,
        ];
        a.extend_from_slice(extra);
        assert!(dprp(d.path(), &a).status.success());
        String::from_utf8_lossy(&dprp(d.path(), &["info", out]).stdout).into_owned()
    };
    let signs = run("dp-signoporp-rr", &[], "s.dprp");
    assert!(!signs.contains("ziggurat"), "{signs}");
    assert!(signs.contains("64-bit word"), "{signs}");
    // lattice noise by default; the ziggurat only with --noise float
    let gauss = run("dp-oporp", &["-d", "1e-6"], "g.dprp");
    assert!(
        !gauss.contains("ziggurat") && gauss.contains("N_ℤ(0, s²)"),
        "{gauss}"
    );
    let gauss = run("dp-oporp", &["-d", "1e-6", "--noise", "float"], "gf.dprp");
    assert!(gauss.contains("ziggurat"), "{gauss}");
    let idp = run(
        "idp-signoporp-g",
        &["-d", "1e-6", "--individual-dp"],
        "i.dprp",
    );
    assert!(
        idp.contains("exact CKS sampler") && idp.contains("noise set"),
        "{idp}"
    );
    let idp = run(
        "idp-signoporp-g",
        &["-d", "1e-6", "--individual-dp", "--noise", "float"],
        "if.dprp",
    );
    assert!(
        idp.contains("ziggurat") && idp.contains("noise set"),
        "{idp}"
    );
}

#[test]
fn unit_norm_bound_within_rounding_of_one() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    let base = [
        "publish",
        "s.bin",
        "-m",
        "dp-signrp-rr",
        "-e",
        "5",
        "-d",
        "1e-6",
        "-k",
        "16",
        "--normalize",
        "l2",
        "-o",
    ];
    let mut a = base.to_vec();
    a.extend_from_slice(&["a.dprp", "--min-norm", "1"]);
    let o = dprp(d.path(), &a);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("taken as 0.99999"), "{}", stderr(&o));
    let info = dprp(d.path(), &["info", "a.dprp", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(v["mechanism"]["sign"]["min_norm"], 0.99999, "{v}");
    let mut b = base.to_vec();
    b.extend_from_slice(&["b.dprp", "--min-norm", "1.5"]);
    let o = dprp(d.path(), &b);
    assert!(!o.status.success() && stderr(&o).contains("every row would be refused"));
    assert!(!d.path().join("b.dprp").exists());
}

#[test]
fn output_directories_are_created_but_not_their_parents() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    let eval = |out: &str, extra: &[&str]| {
        let mut args = vec![
            "eval",
            "retrieval",
            "--train",
            "s.bin",
            "--test",
            "s.bin",
            "--mechanisms",
            "dp-oporp",
            "--epsilon",
            "5",
            "--k",
            "16",
            "--queries",
            "20",
            "--out",
            out,
        ];
        args.extend_from_slice(extra);
        dprp(d.path(), &args)
    };
    // as for publish -o, a missing parent is refused (before any work), nothing is created
    let o = eval("no/such/report", &[]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    assert!(!d.path().join("no").exists());
    let o = dprp(
        d.path(),
        &[
            "publish",
            "s.bin",
            "-m",
            "dp-oporp",
            "-e",
            "1",
            "-d",
            "1e-6",
            "-k",
            "4",
            "-o",
            "no/r.dprp",
        ],
    );
    assert!(!o.status.success() && stderr(&o).contains("does not exist"));
    let o = dprp(d.path(), &["demo", "--out-dir", "no/demo"]);
    assert!(!o.status.success() && stderr(&o).contains("does not exist"));
    assert!(!d.path().join("no").exists());
    // the directory itself is created, and holds the whole report; no staging left behind
    let o = eval("report", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["report.md", "report.csv", "report.json"] {
        assert!(d.path().join("report").join(f).exists(), "{f}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".dprp-tmp-"))
        .collect();
    assert!(leftovers.is_empty());
    // an existing directory that holds files is refused, untouched, unless --overwrite; then
    // its reports are replaced
    let before = std::fs::read(d.path().join("report/report.json")).unwrap();
    let o = eval("report", &[]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("not empty") && stderr(&o).contains("--overwrite"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read(d.path().join("report/report.json")).unwrap(),
        before
    );
    let o = eval("report", &["--overwrite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_ne!(
        std::fs::read(d.path().join("report/report.json")).unwrap(),
        before
    );
}

/// Issue 25: `publish --help` names every mechanism, and a sketch release given to `mean` lists
/// every local mechanism (the lists were missing projunit-correlated and privunit-inf).
#[test]
fn mechanism_lists_are_complete() {
    let d = tempfile::tempdir().unwrap();
    let o = dprp(d.path(), &["publish", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    let words: Vec<&str> = help
        .split(|c: char| c.is_whitespace() || c == ',' || c == '.' || c == ':')
        .collect();
    for k in dprp::mechanism::MechanismKind::all() {
        assert!(
            words.contains(&k.name()),
            "publish --help does not name {}",
            k.name()
        );
    }
    sample(d.path());
    let o = dprp(
        d.path(),
        &[
            "publish", "s.bin", "-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "8", "-o",
            "r.dprp",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = dprp(d.path(), &["mean", "r.dprp", "-o", "m.npy"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    for k in dprp::mechanism::MechanismKind::LOCAL {
        assert!(e.contains(k.name()), "{} missing from: {e}", k.name());
    }
}

/// The flags the command has: every `--flag` its help pages (each subcommand's, each nested
/// subcommand's) list.
fn flags_of_the_command(dir: &Path) -> std::collections::BTreeSet<String> {
    let mut pages = vec![vec!["--help"]];
    for sub in [
        "convert",
        "publish",
        "info",
        "calibrate",
        "estimate",
        "query",
        "project",
        "export",
        "mean",
        "aggregate",
        "ledger",
        "audit",
        "index",
        "demo",
    ] {
        pages.push(vec![sub, "--help"]);
    }
    for nested in [
        ["eval", "retrieval"],
        ["eval", "svm"],
        ["eval", "mean"],
        ["shards", "finish"],
    ] {
        pages.push(vec![nested[0], nested[1], "--help"]);
    }
    let mut flags = std::collections::BTreeSet::new();
    for args in pages {
        let o = dprp(dir, &args);
        assert!(o.status.success(), "{}", describe(&args, &o));
        for line in text(&o.stdout).lines() {
            // an option's line of a help page: `  -e, --epsilon <EPSILON>  …` or `      --all  …`
            let Some(rest) = line.trim_start().split("--").nth(1) else {
                continue;
            };
            if line.trim_start().starts_with('-') {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                flags.insert(name);
            }
        }
    }
    flags
}

/// Issue 41: the library names an option by key (`‹min_norm›`) and the command prints it as a
/// flag (`--min-norm`); every key the library may mark ([`dprp::error::OPTION_KEYS`], which a
/// library test keeps complete) is a flag the command has, so no message sends a user to an
/// option that does not exist.
#[test]
fn every_option_the_library_names_is_a_flag_of_the_command() {
    let d = tempfile::tempdir().unwrap();
    let flags = flags_of_the_command(d.path());
    // power: the help pages were read
    for known in [
        "epsilon",
        "min-norm",
        "bits-per-parameter",
        "ef-construction",
        "pipeline",
    ] {
        assert!(
            flags.contains(known),
            "{known} not read from the help: {flags:?}"
        );
    }
    assert!(!flags.contains("no-such-flag"));
    // a hidden flag (left out of the help: `audit --miscalibrate` exists to test the audit
    // itself) is one the command accepts
    let hidden = ["miscalibrate"];
    for h in hidden {
        let args = ["audit", "-m", "dp-rp-g", &format!("--{h}"), "bad"];
        let o = dprp(d.path(), &args);
        let e = text(&o.stderr);
        assert!(
            !o.status.success() && e.contains(&format!("invalid --{h}")),
            "{}",
            describe(&args, &o)
        );
    }
    let missing: Vec<String> = dprp::error::OPTION_KEYS
        .iter()
        .map(|k| k.replace('_', "-"))
        .filter(|f| !flags.contains(f) && !hidden.contains(&f.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "the library names options the command does not have: --{}",
        missing.join(", --")
    );
}
