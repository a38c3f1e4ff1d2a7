//! One rule for undefined cosines through the command a user runs (issue 37 §4): a zero query
//! vector has no cosine and no sign direction, so `dprp query` prints no neighbours for it under
//! the cosine and hamming measures, says so on stderr, and `--json` gives it `"neighbours": []`
//! with a note; `--measure ip` ranks it (every inner product is 0, the right estimate). Before,
//! rows 0 and 1 were printed with cosine 0 and no warning.

use crate::cli_helpers;
use cli_helpers::*;

/// `q.csv`: query 0 is zero, query 1 is a real row.
fn setup(dir: &std::path::Path) {
    let mut csv = String::from("a,b,c,d\n");
    for i in 0..40 {
        let x = |j: usize| ((i * 7 + j * 3) % 11) as f32 / 11.0 - 0.5;
        csv += &format!("{},{},{},{}\n", x(0), x(1), x(2), x(3));
    }
    put(dir, "rows.csv", csv.as_bytes());
    put(dir, "q.csv", b"a,b,c,d\n0,0,0,0\n0.3,-0.2,0.1,0.4\n");
    ok(dir, &["convert", "rows.csv", "-o", "rows.bin"]);
}

fn publish(dir: &std::path::Path, mechanism: &str, out: &str) {
    let mut args = vec![
        "publish", "rows.bin", "-m", mechanism, "-e", "5", "-k", "4", "-o", out,
    ];
    if mechanism == "dp-oporp" {
        args.extend(["-d", "1e-6"]);
    }
    ok(dir, &args);
}

/// Query ids of the printed `query_id neighbour_id score` lines.
fn queries_printed(stdout: &str) -> Vec<u64> {
    stdout
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect()
}

#[test]
fn a_zero_query_has_no_cosine_or_sign_neighbours() {
    let d = tmp();
    setup(d.path());
    publish(d.path(), "dp-oporp", "r.dprp");
    publish(d.path(), "dp-signoporp-rr", "s.dprp");
    for (release, measure) in [
        ("r.dprp", None),
        ("s.dprp", None),
        ("r.dprp", Some("cosine")),
    ] {
        let mut args = vec!["query", release, "--queries", "q.csv", "--top", "3"];
        if let Some(m) = measure {
            args.extend(["--measure", m]);
        }
        let (out, err) = ok2(d.path(), &args);
        let printed = queries_printed(&out);
        assert_eq!(printed, vec![1, 1, 1], "{release}: {out}");
        assert!(
            err.contains("1 of the queries (the first: query 0) are zero vectors")
                && err.contains("cosine undefined"),
            "{release}: {err}"
        );
        args.push("--json");
        let json: serde_json::Value = serde_json::from_str(&ok(d.path(), &args)).unwrap();
        let results = json["results"].as_array().unwrap();
        let first = &results[0];
        assert_eq!(first["neighbours"], serde_json::json!([]), "{json}");
        assert!(first["note"].as_str().unwrap().contains("cosine undefined"));
        let second = &results[1];
        assert_eq!(second["neighbours"].as_array().unwrap().len(), 3, "{json}");
    }
    // the inner product of a zero query is defined: 0 for every row, ranked as any query is
    let (out, err) = ok2(
        d.path(),
        &[
            "query",
            "r.dprp",
            "--queries",
            "q.csv",
            "--top",
            "3",
            "--measure",
            "ip",
        ],
    );
    assert_eq!(queries_printed(&out), vec![0, 0, 0, 1, 1, 1], "{out}");
    assert!(!err.contains("zero vectors"), "{err}");
    for l in out.lines().take(3) {
        assert_eq!(
            l.split_whitespace().nth(2).unwrap().parse::<f64>().unwrap(),
            0.0,
            "{l}"
        );
    }
}
