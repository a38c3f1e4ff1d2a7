//! `dprp query`, `dprp index` and `dprp estimate` as a user runs them, on the bundled sample.

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

fn ok(dir: &Path, args: &[&str]) -> String {
    let o = dprp(dir, args);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn fails(dir: &Path, args: &[&str], needle: &str) {
    let o = dprp(dir, args);
    let t = text(&o);
    assert!(!o.status.success(), "{args:?} succeeded: {t}");
    assert!(t.contains(needle), "{args:?}: expected '{needle}' in: {t}");
    assert!(!t.contains("panicked"), "{t}");
}

fn setup() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let sample = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("data/sample.bin");
    std::fs::copy(sample, d.path().join("s.bin")).unwrap();
    // near-noiseless releases (ε = 1000) so that each row's nearest neighbour is itself
    ok(
        d.path(),
        &[
            "publish",
            "s.bin",
            "-m",
            "dp-oporp",
            "-e",
            "1000",
            "-d",
            "1e-6",
            "-k",
            "48",
            "--projection-seed",
            "11",
            "--noise-seed",
            "a",
            "-o",
            "r.dprp",
        ],
    );
    ok(
        d.path(),
        &[
            "publish",
            "s.bin",
            "-m",
            "dp-oporp",
            "-e",
            "1000",
            "-d",
            "1e-6",
            "-k",
            "48",
            "--projection-seed",
            "11",
            "--noise-seed",
            "b",
            "-o",
            "r2.dprp",
        ],
    );
    ok(
        d.path(),
        &[
            "publish",
            "s.bin",
            "-m",
            "dp-oporp",
            "-e",
            "1000",
            "-d",
            "1e-6",
            "-k",
            "48",
            "--projection-seed",
            "12",
            "-o",
            "other-seed.dprp",
        ],
    );
    ok(
        d.path(),
        &[
            "publish",
            "s.bin",
            "-m",
            "dp-signoporp-rr",
            "-e",
            "20",
            "-k",
            "64",
            "--projection-seed",
            "11",
            "--noise-seed",
            "c",
            "-o",
            "bits.dprp",
        ],
    );
    d
}

fn self_hits(out: &str) -> f64 {
    let lines: Vec<&str> = out.lines().collect();
    let hits = lines
        .iter()
        .filter(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w[0] == w[1]
        })
        .count();
    hits as f64 / lines.len() as f64
}

#[test]
fn exact_queries_in_every_mode_and_format() {
    let d = setup();
    let dir = d.path();
    // raw queries: the sample's own rows, top-1 is (almost always) the row itself
    let out = ok(
        dir,
        &["query", "r.dprp", "--queries", "s.bin", "--top", "1"],
    );
    assert_eq!(out.lines().count(), 2000);
    assert!(self_hits(&out) > 0.95, "{}", self_hits(&out));
    // queries from another release with the same projection
    let out = ok(
        dir,
        &[
            "query",
            "r.dprp",
            "--queries",
            "r2.dprp",
            "--query-mode",
            "release",
            "--top",
            "1",
        ],
    );
    assert!(self_hits(&out) > 0.9, "{}", self_hits(&out));
    let out = ok(
        dir,
        &[
            "query",
            "r.dprp",
            "--queries",
            "r2.dprp",
            "--query-mode",
            "release",
            "--measure",
            "ip",
        ],
    );
    assert_eq!(out.lines().count(), 20000);
    // sign release: hamming by default
    let out = ok(
        dir,
        &["query", "bits.dprp", "--queries", "s.bin", "--top", "3"],
    );
    assert_eq!(out.lines().count(), 6000);
    // JSON and CSV
    let out = ok(
        dir,
        &[
            "query",
            "r.dprp",
            "--queries",
            "s.bin",
            "--top",
            "2",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["measure"], "cosine");
    assert_eq!(v["results"].as_array().unwrap().len(), 2000);
    assert_eq!(v["results"][0]["neighbours"].as_array().unwrap().len(), 2);
    let out = ok(
        dir,
        &[
            "query",
            "r.dprp",
            "--queries",
            "s.bin",
            "--top",
            "2",
            "--csv",
        ],
    );
    assert_eq!(
        out.lines().next().unwrap(),
        "query_id,rank,neighbour_id,score"
    );
    assert_eq!(out.lines().count(), 4001);
}

#[test]
fn hnsw_index_round_trip_and_mismatches() {
    let d = setup();
    let dir = d.path();
    ok(dir, &["index", "r.dprp", "-o", "r.hnsw"]);
    let o = dprp(
        dir,
        &[
            "query",
            "r.dprp",
            "--queries",
            "s.bin",
            "--top",
            "10",
            "--index",
            "r.hnsw",
            "--check-recall",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let recall: f64 = err
        .split("scan: ")
        .nth(1)
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no recall in {err}"));
    assert!(recall >= 0.95, "recall {recall}");
    // an index of another release is refused
    ok(dir, &["index", "r2.dprp", "-o", "r2.hnsw"]);
    fails(
        dir,
        &[
            "query",
            "r.dprp",
            "--queries",
            "s.bin",
            "--index",
            "r2.hnsw",
        ],
        "index",
    );
    // a corrupt index is refused
    let mut b = std::fs::read(dir.join("r.hnsw")).unwrap();
    let mid = b.len() / 2;
    b.truncate(mid);
    std::fs::write(dir.join("bad.hnsw"), &b).unwrap();
    let o = dprp(
        dir,
        &[
            "query",
            "r.dprp",
            "--queries",
            "s.bin",
            "--index",
            "bad.hnsw",
        ],
    );
    assert!(
        !o.status.success() && !text(&o).contains("panicked"),
        "{}",
        text(&o)
    );
    // sign releases index with Hamming
    ok(dir, &["index", "bits.dprp", "-o", "b.hnsw"]);
    ok(
        dir,
        &[
            "query",
            "bits.dprp",
            "--queries",
            "s.bin",
            "--index",
            "b.hnsw",
            "--top",
            "5",
        ],
    );
}

#[test]
fn bad_queries_are_refused() {
    let d = setup();
    let dir = d.path();
    std::fs::write(dir.join("wrong-dim.csv"), "0.1,0.2,0.3\n0.3,0.2,0.1\n").unwrap();
    fails(
        dir,
        &["query", "r.dprp", "--queries", "wrong-dim.csv"],
        "features",
    );
    std::fs::write(dir.join("empty.csv"), "a,b\n").unwrap();
    let o = dprp(dir, &["query", "r.dprp", "--queries", "empty.csv"]);
    assert!(
        !o.status.success() && !text(&o).contains("panicked"),
        "{}",
        text(&o)
    );
    fails(
        dir,
        &["query", "r.dprp", "--queries", "s.bin", "--top", "0"],
        "--top",
    );
    fails(
        dir,
        &["query", "r.dprp", "--queries", "s.bin", "--top", "2001"],
        "--top",
    );
    fails(
        dir,
        &[
            "query",
            "r.dprp",
            "--queries",
            "s.bin",
            "--measure",
            "hamming",
        ],
        "--measure",
    );
    fails(
        dir,
        &[
            "query",
            "bits.dprp",
            "--queries",
            "s.bin",
            "--measure",
            "ip",
        ],
        "--measure",
    );
    fails(
        dir,
        &["query", "r.dprp", "--queries", "s.bin", "--measure", "l7"],
        "--measure",
    );
    fails(
        dir,
        &[
            "query",
            "r.dprp",
            "--queries",
            "other-seed.dprp",
            "--query-mode",
            "release",
        ],
        "projection",
    );
    fails(
        dir,
        &[
            "query",
            "r.dprp",
            "--queries",
            "bits.dprp",
            "--query-mode",
            "release",
        ],
        "kind",
    );
    fails(
        dir,
        &[
            "query",
            "r.dprp",
            "--queries",
            "s.bin",
            "--query-mode",
            "both",
        ],
        "--query-mode",
    );
    fails(
        dir,
        &["query", "missing.dprp", "--queries", "s.bin"],
        "missing.dprp",
    );
    fails(dir, &["index", "r.dprp", "-o", "r.dprp"], "--output");
}

#[test]
fn estimates_with_standard_errors() {
    let d = setup();
    let dir = d.path();
    let out = ok(dir, &["estimate", "r.dprp", "--rows", "3,1000"]);
    assert!(
        out.contains("inner product") && out.contains("Theorem C.3"),
        "{out}"
    );
    let out = ok(dir, &["estimate", "r.dprp", "--rows", "3,1000", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v[0]["se"].as_f64().unwrap() > 0.0);
    // both sides of a pair carry the same type
    assert_eq!(
        v[0]["a"],
        serde_json::json!({"kind": "row", "row": 3}),
        "{out}"
    );
    assert_eq!(
        v[0]["b"],
        serde_json::json!({"kind": "row", "row": 1000}),
        "{out}"
    );
    assert!(
        v[0]["cosine"].is_f64() && v[0]["cosine_note"].is_null(),
        "{out}"
    );
    let out = ok(
        dir,
        &[
            "estimate",
            "r.dprp",
            "--query-vector",
            "s.bin",
            "--rows",
            "0,1,2",
        ],
    );
    assert_eq!(out.lines().count(), 3);
    assert!(out.contains("raw query"));
    let out = ok(
        dir,
        &[
            "estimate",
            "r.dprp",
            "--query-vector",
            "s.bin",
            "--rows",
            "2",
            "--json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v[0]["a"],
        serde_json::json!({"kind": "query", "file": "s.bin"}),
        "{out}"
    );
    assert_eq!(
        v[0]["b"],
        serde_json::json!({"kind": "row", "row": 2}),
        "{out}"
    );
    let out = ok(dir, &["estimate", "bits.dprp", "--rows", "0,1"]);
    assert!(
        out.contains("Theorem 4.5") && out.contains("signs agree"),
        "{out}"
    );
    assert!(out.contains("95% interval ["), "{out}");
    // sign releases: the Clopper–Pearson interval around the estimate, in JSON too
    for args in [
        vec!["estimate", "bits.dprp", "--rows", "0,1", "--json"],
        vec![
            "estimate",
            "bits.dprp",
            "--query-vector",
            "s.bin",
            "--rows",
            "0,5",
            "--json",
        ],
    ] {
        let out = ok(dir, &args);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        for l in v.as_array().unwrap() {
            let f = |key: &str| l[key].as_f64().unwrap_or_else(|| panic!("{key}: {out}"));
            assert!(
                f("cosine_lo") <= f("cosine") && f("cosine") <= f("cosine_hi"),
                "{out}"
            );
            assert!(
                f("theta_lo") <= f("theta") && f("theta") <= f("theta_hi"),
                "{out}"
            );
            assert!(f("cosine_hi") - f("cosine_lo") > 0.0, "{out}");
            assert_eq!(f("interval_level"), 0.95);
            assert!(l["cosine_note"].is_null(), "{out}");
            assert_eq!(l["b"]["kind"], "row", "{out}");
        }
    }
    fails(
        dir,
        &["estimate", "r.dprp", "--rows", "3,2000"],
        "out of range",
    );
    fails(dir, &["estimate", "r.dprp", "--rows", "1,2,3"], "two rows");
    std::fs::write(dir.join("q.csv"), "0.1,0.2\n").unwrap();
    fails(
        dir,
        &[
            "estimate",
            "r.dprp",
            "--query-vector",
            "q.csv",
            "--rows",
            "1",
        ],
        "features",
    );
}

/// Raw queries are put on the release's scale: the public steps the release records are replayed
/// (less those a converted query file records as done), `--no-scale` opts out, values outside the
/// domain afterwards are refused, and max-abs releases (whose factors are not stored) need
/// queries scaled by the user.
#[test]
fn raw_queries_get_the_release_scaling() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    // 40 rows of "pixels" in [0, 255], 6 features
    let row = |i: usize| -> Vec<f64> { (0..6).map(|j| ((i * 37 + j * 91) % 256) as f64).collect() };
    let csv = |rows: &[Vec<f64>]| -> String {
        rows.iter()
            .map(|r| {
                r.iter()
                    .map(|v| format!("{v}"))
                    .collect::<Vec<_>>()
                    .join(",")
                    + "\n"
            })
            .collect()
    };
    let data: Vec<Vec<f64>> = (0..40).map(row).collect();
    std::fs::write(dir.join("px.csv"), csv(&data)).unwrap();
    let q: Vec<Vec<f64>> = (100..103).map(row).collect();
    std::fs::write(dir.join("q.csv"), csv(&q)).unwrap();
    let q_scaled: Vec<Vec<f64>> = q
        .iter()
        .map(|r| {
            r.iter()
                .map(|v| ((*v as f32 as f64) / 255.0) as f32 as f64)
                .collect()
        })
        .collect();
    std::fs::write(dir.join("q255.csv"), csv(&q_scaled)).unwrap();
    let publish = |extra: &[&str], out: &str| {
        let mut args = vec![
            "publish",
            "px.csv",
            "-m",
            "dp-oporp",
            "-e",
            "5",
            "-d",
            "1e-6",
            "-k",
            "4",
            "--noise-seed",
            "s",
            "--projection-seed",
            "5",
            "-o",
            out,
        ];
        args.extend_from_slice(extra);
        ok(dir, &args);
    };
    publish(&["--scale", "255"], "r.dprp");
    let query = |extra: &[&str]| {
        let mut args = vec!["query", "r.dprp", "--measure", "ip", "--top", "3"];
        args.extend_from_slice(extra);
        ok(dir, &args)
    };
    let raw = query(&["--queries", "q.csv"]);
    let pre = query(&["--queries", "q255.csv", "--no-scale"]);
    assert_eq!(
        raw, pre,
        "raw queries must be divided by 255 as the rows were"
    );
    // scores are on the scale of unit-range data (the inner product of two rows of 6 values in
    // [0,1] is at most 6), not 255² times larger
    let top: f64 = raw
        .lines()
        .next()
        .unwrap()
        .split(' ')
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    assert!(top.abs() < 20.0, "{raw}");
    // a query file converted with --scale 255 records it: no second division
    ok(dir, &["convert", "q.csv", "--scale", "255", "-o", "q.bin"]);
    assert_eq!(query(&["--queries", "q.bin"]), raw);
    // --no-scale on raw pixels: outside the domain, refused with row and column
    fails(
        dir,
        &["query", "r.dprp", "--queries", "q.csv", "--no-scale"],
        "row 0, column 0 (counted from 0): value 116 is outside the privacy domain",
    );
    // a query value that is outside the domain even after the division (300 / 255 > 1)
    std::fs::write(dir.join("big.csv"), "1,2,3,4,5,300\n").unwrap();
    fails(
        dir,
        &["query", "r.dprp", "--queries", "big.csv"],
        "column 5 (counted from 0): value 1.17",
    );
    // estimate --query-vector applies the same scaling
    let e_raw = ok(
        dir,
        &[
            "estimate",
            "r.dprp",
            "--query-vector",
            "q.csv",
            "--rows",
            "1",
        ],
    );
    let e_pre = ok(
        dir,
        &[
            "estimate",
            "r.dprp",
            "--query-vector",
            "q255.csv",
            "--rows",
            "1",
            "--no-scale",
        ],
    );
    assert_eq!(e_raw, e_pre);
    // l2-normalised release: queries are normalised too
    publish(&["--normalize", "l2"], "n.dprp");
    let a = ok(
        dir,
        &["query", "n.dprp", "--queries", "q.csv", "--measure", "ip"],
    );
    let b = ok(
        dir,
        &[
            "query",
            "n.dprp",
            "--queries",
            "q255.csv",
            "--measure",
            "ip",
        ],
    );
    let scores = |s: &str| -> Vec<f64> {
        s.lines()
            .map(|l| l.split(' ').nth(2).unwrap().parse().unwrap())
            .collect()
    };
    for (x, y) in scores(&a).iter().zip(scores(&b)) {
        assert!((x - y).abs() < 1e-4, "{a}\n{b}");
    }
    // max-abs: the factors are not in the release, so raw queries are refused
    publish(&["--scale", "max-abs"], "m.dprp");
    fails(
        dir,
        &["query", "m.dprp", "--queries", "q.csv"],
        "not stored in the release",
    );
    ok(
        dir,
        &["query", "m.dprp", "--queries", "q255.csv", "--no-scale"],
    );
}

/// Results are searched and printed batch by batch under `--memory`; a small budget (many
/// batches) prints exactly what one batch prints, in every format, exact or with an index.
#[test]
fn batched_results_equal_one_batch() {
    let d = setup();
    let dir = d.path();
    ok(dir, &["index", "r.dprp", "-o", "r.hnsw"]);
    for extra in [
        vec![],
        vec!["--csv"],
        vec!["--json"],
        vec!["--index", "r.hnsw", "--check-recall"],
    ] {
        let mut base = vec!["query", "r.dprp", "--queries", "s.bin", "--top", "100"];
        base.extend_from_slice(&extra);
        let one = dprp(dir, &base);
        let mut small = base.clone();
        // 1 MiB holds the results of 1 MiB / (2·100·16 B) = 327 queries: 7 batches of 2000
        small.extend_from_slice(&["--memory", "1"]);
        let many = dprp(dir, &small);
        assert!(
            one.status.success() && many.status.success(),
            "{}",
            text(&many)
        );
        assert_eq!(one.stdout, many.stdout, "{extra:?}");
        assert_eq!(one.stderr, many.stderr, "{extra:?}");
        if extra == ["--json"] {
            let v: serde_json::Value = serde_json::from_slice(&many.stdout).unwrap();
            assert_eq!(v["results"].as_array().unwrap().len(), 2000);
            assert_eq!(v["measure"], "cosine");
        }
    }
    fails(
        dir,
        &["query", "r.dprp", "--queries", "s.bin", "--memory", "0"],
        "--memory",
    );
}

/// At a small ε the noise outweighs some rows (‖x̃‖² − kσ² ≤ 0): `estimate` still prints the inner
/// product and its se, and says why the cosine is undefined (text), or writes `"cosine": null` with a
/// `cosine_note` (JSON) — never NaN.
#[test]
fn estimate_says_why_a_cosine_is_undefined() {
    let d = setup();
    let dir = d.path();
    ok(
        dir,
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
            "32",
            "--projection-seed",
            "11",
            "--noise-seed",
            "d",
            "-o",
            "noisy.dprp",
        ],
    );
    let rows: Vec<String> = (0..60).map(|i| i.to_string()).collect();
    let rows = rows.join(",");
    let out = ok(
        dir,
        &[
            "estimate",
            "noisy.dprp",
            "--query-vector",
            "s.bin",
            "--rows",
            &rows,
            "--json",
        ],
    );
    assert!(!out.contains("NaN"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let (mut undefined, mut defined) = (Vec::new(), 0);
    for (j, l) in v.as_array().unwrap().iter().enumerate() {
        assert_eq!(l["b"], serde_json::json!({"kind": "row", "row": j}), "{l}");
        assert!(
            l["inner_product"].is_f64() && l["se"].as_f64().unwrap() > 0.0,
            "{l}"
        );
        let nv = l["norm_v_sq"].as_f64().unwrap();
        if nv <= 0.0 {
            assert!(l["cosine"].is_null() && l["se_cosine"].is_null(), "{l}");
            let note = l["cosine_note"].as_str().unwrap();
            assert!(
                note.contains(&format!("of row {j} ")) && note.contains("not positive"),
                "{note}"
            );
            undefined.push(j);
        } else {
            assert!(l["cosine"].is_f64() && l["cosine_note"].is_null(), "{l}");
            defined += 1;
        }
    }
    // the release was chosen to have both kinds of rows among the first 60
    assert!(
        !undefined.is_empty() && defined > 0,
        "undefined {undefined:?}, defined {defined}"
    );
    let j = undefined[0];
    let pair = format!("{j},{}", if j == 0 { 1 } else { 0 });
    let out = ok(dir, &["estimate", "noisy.dprp", "--rows", &pair]);
    assert!(
        out.contains("inner product")
            && out.contains(&format!("cosine undefined: the estimated ‖u‖² of row {j} "))
            && !out.contains("NaN"),
        "{out}"
    );
    let out = ok(dir, &["estimate", "noisy.dprp", "--rows", &pair, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v[0]["a"],
        serde_json::json!({"kind": "row", "row": j}),
        "{out}"
    );
    assert!(v[0]["cosine"].is_null(), "{out}");
}
