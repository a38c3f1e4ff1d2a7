//! Sharded releases (`publish --shards N`, `publish --shard i/N`, `dprp shards finish`): the same
//! rows and payload bytes as the one-file release under one `--noise-seed`, the commands that read
//! a shard directory, and every way a shard directory can be wrong.

use crate::cli_helpers;

#[allow(unused_imports)]
use cli_helpers::*;

/// Rows × 8 features in [0, 1) as `.npy` (2000 rows in 3 shards: 666 + 667 + 667, rows split as
/// evenly as they go).
fn rows_npy(dir: &Path, name: &str, n: usize, first: usize) {
    let p = 8;
    let vals: Vec<f32> = (first * p..(first + n) * p)
        .map(|i| ((i * 37 + i / 7) % 101) as f32 / 101.0)
        .collect();
    put(dir, name, &npy("<f4", n, p, &f32_le(&vals)));
}

fn args<'a>(input: &'a str, mech: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "publish",
        input,
        "-m",
        mech,
        "-e",
        "5",
        "-k",
        "4",
        "--projection-seed",
        "5eed",
        "--noise-seed",
        "n",
        "-o",
        out,
    ];
    if mech.starts_with("dp-rp") {
        v.extend(["-d", "1e-6"]);
    }
    v.extend_from_slice(extra);
    v
}

fn shard_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "dprp"))
        .collect();
    v.sort();
    v
}

/// The payload bytes of a release file, whatever its kind (the header's offset and length).
fn payload_bytes(path: &Path) -> Vec<u8> {
    let b = std::fs::read(path).unwrap();
    let (off, len) = (u64_at(&b, 32) as usize, u64_at(&b, 40) as usize);
    b[off..off + len].to_vec()
}

/// The payloads of the shards, concatenated in shard order.
fn sharded_payload(dir: &Path) -> Vec<u8> {
    shard_files(dir)
        .iter()
        .flat_map(|f| payload_bytes(f))
        .collect()
}

#[test]
fn sharded_release_equals_the_one_file_release_under_one_noise_seed() {
    let d = tmp();
    rows_npy(d.path(), "x.npy", 2000, 0);
    put(d.path(), "q.npy", &npy("<f4", 3, 8, &f32_le(&[0.3f32; 24])));
    for mech in ["dp-rp-g-opt", "dp-signoporp-rr"] {
        let one = format!("{mech}.dprp");
        let dir = format!("{mech}-shards");
        ok(d.path(), &args("x.npy", mech, &one, &[]));
        let out = ok(d.path(), &args("x.npy", mech, &dir, &["--shards", "3"]));
        assert!(out.contains("shards: 3 files"), "{out}");
        let files = shard_files(&d.path().join(&dir));
        assert_eq!(files.len(), 3);
        // same rows in the same order, same bytes
        let single = payload_bytes(&d.path().join(&one));
        assert!(!single.is_empty());
        assert!(
            sharded_payload(&d.path().join(&dir)) == single,
            "{mech}: payloads differ"
        );
        // info: total rows, the shard ranges, the guarantee once
        let j = info_json(d.path(), &dir);
        assert_eq!(j["n"], 2000);
        let ranges: Vec<(u64, u64)> = j["shards"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["first_row"].as_u64().unwrap(), s["n"].as_u64().unwrap()))
            .collect();
        assert_eq!(ranges, vec![(0, 666), (666, 667), (1333, 667)]);
        let one_info = info_json(d.path(), &one);
        assert_eq!(j["guarantee"], one_info["guarantee"]);
        assert_eq!(j["mechanism"], one_info["mechanism"]);
        // query: the merged per-shard top-k is the one-file top-k, ids included
        for top in ["1", "10", "2000"] {
            let q = |rel: &str| {
                ok(
                    d.path(),
                    &["query", rel, "--queries", "q.npy", "--top", top],
                )
            };
            assert_eq!(q(&dir), q(&one), "{mech} top {top}");
        }
        // estimate across shards
        let e = |rel: &str| ok(d.path(), &["estimate", rel, "--rows", "5,1900"]);
        assert_eq!(e(&dir), e(&one));
        let bad = dprp(d.path(), &["estimate", &dir, "--rows", "5,2000"]);
        assert!(!bad.status.success());
        assert!(
            text(&bad.stderr).contains("1333..2000"),
            "{}",
            text(&bad.stderr)
        );
    }
}

#[test]
fn workers_write_shards_and_finish_assembles_the_same_release() {
    let d = tmp();
    rows_npy(d.path(), "x.npy", 2000, 0);
    ok(
        d.path(),
        &args("x.npy", "dp-rp-g-opt", "all", &["--shards", "3"]),
    );
    // three workers, each with its own rows only, knowing its shard and first global row
    for (i, (first, n)) in [(0, 512), (512, 768), (1280, 720)].into_iter().enumerate() {
        let input = format!("x{i}.npy");
        rows_npy(d.path(), &input, n, first);
        let spec = format!("{i}/3");
        let first = first.to_string();
        let out = ok(
            d.path(),
            &args(
                &input,
                "dp-rp-g-opt",
                "w",
                &["--shard", &spec, "--first-row", &first],
            ),
        );
        assert!(out.contains("dprp shards finish"), "{out}");
    }
    // before the manifest, the directory is not a release
    fails(
        d.path(),
        &["info", "w"],
        &["without a _manifest.json", "shards finish"],
    );
    ok(d.path(), &["shards", "finish", "w"]);
    assert!(sharded_payload(&d.path().join("w")) == sharded_payload(&d.path().join("all")));
    let q = |rel: &str| ok(d.path(), &["estimate", rel, "--rows", "0,1999"]);
    assert_eq!(q("w"), q("all"));
}

#[test]
fn local_mean_over_a_shard_directory_equals_the_one_file_mean() {
    let d = tmp();
    // unit rows in 6 dimensions
    let mut csv = String::new();
    for i in 0..1000 {
        let a = i as f64 * 0.37;
        csv.push_str(&format!(
            "{},{},{},{},0,0\n",
            a.cos() * 0.6,
            a.sin() * 0.6,
            0.8 * (a * 0.5).cos(),
            0.8 * (a * 0.5).sin()
        ));
    }
    put(d.path(), "u.csv", csv.as_bytes());
    for mech in ["projunit", "privunitg"] {
        let base = |out: &'static str| {
            vec![
                "publish",
                "u.csv",
                "-m",
                mech,
                "-e",
                "4",
                "--projection-seed",
                "ab",
                "--noise-seed",
                "n",
                "--normalize",
                "l2",
                "-o",
                out,
            ]
        };
        let mut one = base("one.dprp");
        let mut sh = base("sh");
        if mech == "projunit" {
            one.extend(["-k", "3"]);
            sh.extend(["-k", "3"]);
        }
        sh.extend(["--shards", "2"]);
        let _ = std::fs::remove_dir_all(d.path().join("sh"));
        for f in ["one.dprp", "other.dprp"] {
            let _ = std::fs::remove_file(d.path().join(f));
        }
        ok(d.path(), &one);
        ok(d.path(), &sh);
        // the same estimate up to the order of the f64 sums (two accumulators merged vs one)
        let m = |rel: &str| -> Value {
            let mut v: Value =
                serde_json::from_str(&ok(d.path(), &["mean", rel, "--json"])).unwrap();
            v.as_object_mut().unwrap().remove("releases");
            v
        };
        let (mut a, mut b) = (m("sh"), m("one.dprp"));
        let (ma, mb) = (a["mean"].take(), b["mean"].take());
        assert_eq!(a, b, "{mech}");
        let (ma, mb) = (ma.as_array().unwrap(), mb.as_array().unwrap());
        assert_eq!(ma.len(), 6);
        for (x, y) in ma.iter().zip(mb) {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!((x - y).abs() <= 1e-12, "{mech}: {x} vs {y}");
        }
        // power: another noise seed moves the mean by far more than that
        let mut other = base("other.dprp");
        other[9] = "m";
        if mech == "projunit" {
            other.extend(["-k", "3"]);
        }
        ok(d.path(), &other);
        let mo = m("other.dprp")["mean"].take();
        let moved = mo
            .as_array()
            .unwrap()
            .iter()
            .zip(mb)
            .map(|(x, y)| (x.as_f64().unwrap() - y.as_f64().unwrap()).abs())
            .fold(0.0, f64::max);
        assert!(moved > 1e-6, "{mech}: {moved}");
    }
}

#[test]
fn a_wrong_shard_directory_is_refused_naming_the_shard() {
    let d = tmp();
    rows_npy(d.path(), "x.npy", 2000, 0);
    ok(
        d.path(),
        &args("x.npy", "dp-rp-g-opt", "good", &["--shards", "3"]),
    );
    let copy = |name: &str| {
        let to = d.path().join(name);
        std::fs::create_dir(&to).unwrap();
        for e in std::fs::read_dir(d.path().join("good")).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
        to
    };
    fn query(rel: &str) -> Vec<&str> {
        vec!["query", rel, "--queries", "x.npy", "--top", "3"]
    }
    // a missing shard
    let dir = copy("missing");
    std::fs::remove_file(dir.join("shard-00001-of-00003.dprp")).unwrap();
    fails(
        d.path(),
        &query("missing"),
        &["shard-00001-of-00003.dprp", "missing"],
    );
    // an extra shard file
    let dir = copy("extra");
    std::fs::copy(
        d.path().join("good/shard-00000-of-00003.dprp"),
        dir.join("stray.dprp"),
    )
    .unwrap();
    fails(d.path(), &query("extra"), &["stray.dprp", "not listed"]);
    // a damaged shard (one payload bit)
    let dir = copy("damaged");
    let f = dir.join("shard-00002-of-00003.dprp");
    let mut b = std::fs::read(&f).unwrap();
    b[200] ^= 1;
    std::fs::write(&f, b).unwrap();
    fails(
        d.path(),
        &query("damaged"),
        &["shard-00002-of-00003.dprp", "checksum"],
    );
    // a shard replaced by another release's shard (other noise): its checksum is not the
    // manifest's
    ok(
        d.path(),
        &[
            "publish",
            "x.npy",
            "-m",
            "dp-rp-g-opt",
            "-e",
            "5",
            "-d",
            "1e-6",
            "-k",
            "4",
            "--projection-seed",
            "5eed",
            "--noise-seed",
            "other",
            "--shards",
            "3",
            "-o",
            "other",
        ],
    );
    let dir = copy("replaced");
    std::fs::copy(
        d.path().join("other/shard-00001-of-00003.dprp"),
        dir.join("shard-00001-of-00003.dprp"),
    )
    .unwrap();
    fails(
        d.path(),
        &query("replaced"),
        &["shard-00001-of-00003.dprp", "does not match _manifest.json"],
    );
    // a worker with another public seed: finish refuses it
    for (i, seed) in [(0, "5eed"), (1, "beef")] {
        let spec = format!("{i}/2");
        let first = (i * 1024).to_string();
        ok(
            d.path(),
            &[
                "publish",
                "x.npy",
                "-m",
                "dp-rp-g-opt",
                "-e",
                "5",
                "-d",
                "1e-6",
                "-k",
                "4",
                "--projection-seed",
                seed,
                "--shard",
                &spec,
                "--first-row",
                &first,
                "-o",
                "mixed",
            ],
        );
    }
    fails(
        d.path(),
        &["shards", "finish", "mixed"],
        &[
            "shard-00001-of-00002.dprp",
            "not a shard of the same release",
            "mechanism",
        ],
    );
    assert!(!d.path().join("mixed/_manifest.json").exists());
    // overlapping rows (shard 1 starts inside shard 0's 2000 rows)
    for i in 0..2 {
        let spec = format!("{i}/2");
        let first = (i * 1024).to_string();
        ok(
            d.path(),
            &args(
                "x.npy",
                "dp-rp-g-opt",
                "overlap",
                &["--shard", &spec, "--first-row", &first],
            ),
        );
    }
    fails(
        d.path(),
        &["shards", "finish", "overlap"],
        &["shard-00001-of-00002.dprp", "overlaps"],
    );
    // row ids past 2⁶⁴ − 1 (they would wrap onto other rows' noise streams and maps)
    fails(
        d.path(),
        &args(
            "x.npy",
            "dp-rp-g-opt",
            "off",
            &["--shard", "0/2", "--first-row", "18446744073709551360"],
        ),
        &["--first-row", "overflow"],
    );
    assert!(shard_files(&d.path().join("off")).is_empty());
    // bad --shard specs and shard counts
    for spec in ["3/3", "1", "a/2", "0/0"] {
        fails(
            d.path(),
            &args("x.npy", "dp-rp-g-opt", "s", &["--shard", spec]),
            &["--shard", "i/N"],
        );
    }
    fails_clean(
        d.path(),
        &args("x.npy", "dp-rp-g-opt", "many", &["--shards", "2001"]),
        "many",
        &["leave a shard empty", "at most 2000"],
    );
    // a directory written before the manifest was renamed (manifest.json) still opens
    std::fs::rename(
        d.path().join("good/_manifest.json"),
        d.path().join("good/manifest.json"),
    )
    .unwrap();
    ok(d.path(), &["info", "good"]);
    // the output directory must be new or empty
    fails(
        d.path(),
        &args("x.npy", "dp-rp-g-opt", "good", &["--shards", "2"]),
        &["not empty"],
    );
    // without --projection-seed, every shard still gets the one seed drawn for the release
    ok(
        d.path(),
        &[
            "publish", "x.npy", "-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "4", "--shards",
            "3", "-o", "fresh",
        ],
    );
    let seeds: Vec<Value> = shard_files(&d.path().join("fresh"))
        .iter()
        .map(|f| info_json(d.path(), f.to_str().unwrap())["mechanism"]["projection"].clone())
        .collect();
    assert_eq!(seeds.len(), 3);
    assert!(seeds.iter().all(|s| *s == seeds[0]), "{seeds:?}");
    ok(d.path(), &["info", "fresh"]);
    // a worker must be given the release's public seed
    fails(
        d.path(),
        &[
            "publish", "x.npy", "-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "4", "--shard",
            "0/2", "-o", "noseed",
        ],
        &["--projection-seed", "public seed"],
    );
    assert!(!d.path().join("noseed").exists());
    // --shards reads its input more than once: not from a pipe
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let fifo = d.path().join("rows.fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo has no other preconditions.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        fails_clean(
            d.path(),
            &args(
                "rows.fifo",
                "dp-rp-g-opt",
                "pipe",
                &["--shards", "2", "--format", "csv"],
            ),
            "pipe",
            &["not a regular file", "once per shard"],
        );
    }
    // a worker's shard cannot be recorded in a ledger (it sees only its rows)
    fails_clean(
        d.path(),
        &args(
            "x.npy",
            "dp-rp-g-opt",
            "led",
            &["--shard", "0/2", "--ledger", "."],
        ),
        "led",
        &["--ledger", "a worker's shard", "--shards N on one machine"],
    );
    // refused before the ledger is opened: no ledger directory is created
    fails_clean(
        d.path(),
        &args(
            "x.npy",
            "dp-rp-g-opt",
            "led2",
            &["--shard", "0/2", "--ledger", "new-ledger"],
        ),
        "led2",
        &["--ledger", "a worker's shard"],
    );
    assert!(!d.path().join("new-ledger").exists());
}

/// `dprp index DIR` builds one HNSW graph over every shard's rows; `query DIR --index` answers
/// with global ids, as the exact sharded search does, and an index no longer matches once any
/// shard is replaced.
#[test]
fn an_index_over_a_shard_directory_answers_with_global_ids() {
    let d = tmp();
    let dir = d.path();
    rows_npy(dir, "x.npy", 2000, 0);
    rows_npy(dir, "q.npy", 20, 5000);
    ok(
        dir,
        &args("x.npy", "dp-oporp", "set", &["-d", "1e-6", "--shards", "3"]),
    );
    ok(dir, &args("x.npy", "dp-oporp", "one.dprp", &["-d", "1e-6"]));
    let out = ok(dir, &["index", "set", "-o", "set.hnsw"]);
    assert!(out.contains("indexed 2000 rows"), "{out}");
    ok(dir, &["index", "one.dprp", "-o", "one.hnsw"]);
    let q = |rel: &str, idx: Option<&str>| {
        let mut a = vec![
            "query",
            rel,
            "--queries",
            "q.npy",
            "--top",
            "5",
            "--ef",
            "400",
        ];
        if let Some(i) = idx {
            a.extend(["--index", i, "--check-recall"]);
        }
        let (out, err) = ok2(dir, &a);
        let hits: Vec<(u64, u64)> = out
            .lines()
            .map(|l| {
                let mut w = l.split_whitespace();
                (
                    w.next().unwrap().parse().unwrap(),
                    w.next().unwrap().parse().unwrap(),
                )
            })
            .collect();
        (hits, err)
    };
    let (exact, _) = q("set", None);
    let (indexed, err) = q("set", Some("set.hnsw"));
    let (one, _) = q("one.dprp", Some("one.hnsw"));
    assert_eq!(indexed.len(), 100);
    // global ids: the exact search's answers, in every shard (recall measured on the same rows)
    let same = indexed.iter().filter(|h| exact.contains(h)).count();
    assert!(same >= 95, "{same} of 100 index hits are exact hits\n{err}");
    assert!(
        indexed.iter().any(|h| h.1 >= 1024),
        "hits in the last shard"
    );
    assert!(err.contains("recall@5 of the index"), "{err}");
    let same_one = indexed.iter().filter(|h| one.contains(h)).count();
    assert!(same_one >= 95, "{same_one}");
    // an index is bound to the shards' rows and checksums: other shards are caught, and so is
    // the one-file release's index on the directory (the same rows, another release)
    ok(
        dir,
        &args(
            "x.npy",
            "dp-oporp",
            "other",
            &["-d", "1e-6", "--shards", "3"],
        ),
    );
    let mut other = args(
        "x.npy",
        "dp-oporp",
        "other2",
        &["-d", "1e-6", "--shards", "3"],
    );
    other[11] = "m"; // another noise seed: other bytes in every shard
    ok(dir, &other);
    ok(dir, &["index", "other", "-o", "other.hnsw"]);
    fails(
        dir,
        &[
            "query",
            "other2",
            "--queries",
            "q.npy",
            "--index",
            "other.hnsw",
        ],
        &["other.hnsw", "different sketches"],
    );
    fails(
        dir,
        &["query", "set", "--queries", "q.npy", "--index", "one.hnsw"],
        &["--index", "different release"],
    );
}

/// Issue 25: a worker never replaces a written shard or writes into a finished release, creates
/// the shard directory but not its parents, refuses a dangling symbolic link by name; `info` on
/// one shard file gives its global row ids; a shard with another public seed is named as such.
#[test]
fn workers_do_not_replace_shards_and_info_gives_global_ids() {
    let d = tmp();
    rows_npy(d.path(), "x.npy", 600, 0);
    rows_npy(d.path(), "a.npy", 300, 0);
    rows_npy(d.path(), "b.npy", 300, 300);
    let w = |input: &str, spec: &str, first: &str, out: &str| {
        args(
            input,
            "dp-rp-g-opt",
            out,
            &["--shard", spec, "--first-row", first],
        )
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()
    };
    let run = |v: Vec<String>| dprp(d.path(), &v.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(run(w("a.npy", "0/2", "0", "w")).status.success());
    // the same shard again, before the release is finished: refused, the first kept
    let first = std::fs::read(d.path().join("w/shard-00000-of-00002.dprp")).unwrap();
    let o = run(w("a.npy", "0/2", "0", "w"));
    assert!(
        !o.status.success() && text(&o.stderr).contains("already written"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(
        std::fs::read(d.path().join("w/shard-00000-of-00002.dprp")).unwrap(),
        first
    );
    assert!(run(w("b.npy", "1/2", "300", "w")).status.success());
    ok(d.path(), &["shards", "finish", "w"]);
    // into the finished release: refused
    let o = run(w("a.npy", "0/2", "0", "w"));
    assert!(
        !o.status.success() && text(&o.stderr).contains("finished sharded release"),
        "{}",
        text(&o.stderr)
    );
    // info on one shard file: its global ids
    let info = ok(d.path(), &["info", "w/shard-00001-of-00002.dprp"]);
    assert!(info.contains("row ids: 300..599 (shard 1 of 2)"), "{info}");
    // missing parents are not created
    let o = run(w("a.npy", "0/2", "0", "no/such/dir"));
    assert!(
        !o.status.success() && text(&o.stderr).contains("parent"),
        "{}",
        text(&o.stderr)
    );
    assert!(!d.path().join("no").exists());
    // a dangling symbolic link as the output
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("gone", d.path().join("link")).unwrap();
        let o = run(w("a.npy", "0/2", "0", "link"));
        assert!(
            !o.status.success() && text(&o.stderr).contains("symbolic link"),
            "{}",
            text(&o.stderr)
        );
        let o = dprp(
            d.path(),
            &args("x.npy", "dp-rp-g-opt", "link", &["--shards", "2"]),
        );
        assert!(
            !o.status.success() && text(&o.stderr).contains("symbolic link"),
            "{}",
            text(&o.stderr)
        );
    }
    // a shard of another public seed swapped in: named as the seed
    let mut other = args(
        "b.npy",
        "dp-rp-g-opt",
        "o",
        &["--shard", "1/2", "--first-row", "300"],
    );
    let seed = other.iter().position(|a| *a == "5eed").unwrap();
    other[seed] = "beef";
    assert!(dprp(d.path(), &other).status.success());
    std::fs::remove_file(d.path().join("w/_manifest.json")).unwrap();
    std::fs::copy(
        d.path().join("o/shard-00001-of-00002.dprp"),
        d.path().join("w/shard-00001-of-00002.dprp"),
    )
    .unwrap();
    fails(
        d.path(),
        &["shards", "finish", "w"],
        &["public projection seed"],
    );
}

/// A shard directory of one shard whose rows start at a global id other than 0 (a worker's
/// `--shard 0/1 --first-row 1000`): `dprp query` names the rows by their global ids, as Python's
/// `Release.search` does (it printed the row's index in the shard, 0.., before the search was one
/// request function for both front ends).
#[test]
fn a_one_shard_directory_is_searched_with_global_ids() {
    let d = tmp();
    rows_npy(d.path(), "a.npy", 300, 0);
    let a = args(
        "a.npy",
        "dp-rp-g-opt",
        "w",
        &["--shard", "0/1", "--first-row", "1000"],
    );
    assert!(dprp(d.path(), &a).status.success());
    ok(d.path(), &["shards", "finish", "w"]);
    let out = ok(
        d.path(),
        &["query", "w", "--queries", "a.npy", "--top", "5", "--csv"],
    );
    let ids: Vec<u64> = out
        .lines()
        .filter_map(|l| l.split(',').nth(2)?.parse().ok())
        .collect();
    // power: 300 queries × 5 neighbours were printed, and every id is a global one
    assert_eq!(ids.len(), 1500, "{out}");
    assert!(ids.iter().all(|&i| (1000..1300).contains(&i)), "{out}");
}
