//! Advisory 2026-11: a row's secret noise (and its public per-row map) must be a function of its
//! absolute row id alone, whatever reader, read size, shard boundary or front end hands the
//! publishing pipeline its rows. dprp 0.1.0 failed every test here that reads rows in chunks that
//! are not a multiple of 256: rows after the first chunk re-read an earlier row's noise stream.
//!
//! Identical rows go in (values exact in every format), the real `dprp` binary publishes them from
//! every reader with each read forced to 1, 255 or 257 rows (`DPRP_CHUNK_ROWS`), for one mechanism
//! of every family, under one `--noise-seed`; every payload must be byte-identical to the same
//! file read whole, and to the native file's. The statistical half (no repeated outputs, no
//! correlation at lags 1–300, with its power check) is `dprp audit --pipeline`, run here for every
//! mechanism; the advisory's own reproduction (float64 `.npy`, d = 1000, whose reader returns
//! 2097-row chunks by itself) is run as the issue gave it.

use crate::cli_helpers;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use arrow_array::{ArrayRef, FixedSizeListArray, Float32Array, RecordBatch};
use arrow_schema::{DataType, Field};
use cli_helpers::{bvecs, f32_le, f64_le, fvecs, idx_images, npy, put, tmp, u64_at};
use dprp::audit::pipeline::{independence, rows_as_values};
use dprp::mechanism::Payload;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

/// Rows: more than two 256-row blocks, so reads of 255 and 257 rows cut across blocks.
const N: usize = 700;
/// Width: above 256 (0.1.0's float64 `.npy` reader chunked at ⌊2²¹/p⌋ rows for such widths).
const P: usize = 300;

/// One mechanism of every family, with the flags it needs (ε small enough that sign outputs
/// carry tens of random bits).
const FAMILIES: [(&str, &[&str]); 9] = [
    ("dp-rp-g-opt", &["-e", "5", "-d", "1e-6", "-k", "64"]), // dense Gaussian
    ("dp-oporp", &["-e", "5", "-d", "1e-6", "-k", "64"]),    // OPORP
    ("dp-signoporp-rr", &["-e", "1", "-k", "64"]),           // sign, randomised response
    ("dp-signrp-rr-smooth", &["-e", "1", "-k", "64"]),       // sign, smooth flipping
    ("idp-signrp-rr", &["-e", "1", "-k", "64", "--individual-dp"]), // individual DP
    ("privunit2", &["-e", "4"]),                             // local: PrivUnit2
    ("privunitg", &["-e", "4"]),                             // local: PrivUnitG
    ("projunit", &["-e", "8", "-k", "50"]),                  // local: per-row public maps
    ("projunit-correlated", &["-e", "8", "-k", "50"]),       // local: correlated maps
];

/// The row every input holds N times: multiples of 1/64 in [−1, 1] (exact in f16, f32, text).
fn row() -> Vec<f32> {
    (0..P)
        .map(|j| ((j * 37 % 129) as f32 - 64.0) / 64.0)
        .collect()
}

/// The byte row of the u8 formats (bvecs, IDX, `.npy` u8), published with `--scale 255`.
fn row_u8() -> Vec<u8> {
    (0..P).map(|j| (j * 37 % 256) as u8).collect()
}

fn f16_bits(v: f32) -> u16 {
    // exact for multiples of 1/64 in [−1, 1]: sign, exponent, 10-bit mantissa
    if v == 0.0 {
        return 0;
    }
    let (s, a) = (if v < 0.0 { 0x8000u16 } else { 0 }, v.abs());
    let e = a.log2().floor() as i32;
    let m = ((a / 2f32.powi(e) - 1.0) * 1024.0) as u16;
    s | (((e + 15) as u16) << 10) | m
}

/// Write the N identical rows in every format; returns (file, extra flags) per reader.
fn write_inputs(dir: &Path) -> Vec<(String, Vec<&'static str>)> {
    let r = row();
    let all: Vec<f32> = r.iter().copied().cycle().take(N * P).collect();
    let all64: Vec<f64> = all.iter().map(|&v| f64::from(v)).collect();
    put(dir, "x.f32.npy", &npy("<f4", N, P, &f32_le(&all)));
    put(dir, "x.f64.npy", &npy("<f8", N, P, &f64_le(&all64)));
    let h: Vec<u8> = all
        .iter()
        .flat_map(|&v| f16_bits(v).to_le_bytes())
        .collect();
    put(dir, "x.f16.npy", &npy("<f2", N, P, &h));
    let rows: Vec<&[f32]> = (0..N).map(|_| &r[..]).collect();
    put(dir, "x.fvecs", &fvecs(&rows));
    let line: Vec<String> = r.iter().map(|v| v.to_string()).collect();
    let csv = format!("{}\n", line.join(",")).repeat(N);
    put(dir, "x.csv", csv.as_bytes());
    let svm_line: Vec<String> = r
        .iter()
        .enumerate()
        .filter(|(_, v)| **v != 0.0)
        .map(|(j, v)| format!("{}:{v}", j + 1))
        .collect();
    let svm = format!("0 {}\n", svm_line.join(" ")).repeat(N);
    put(dir, "x.svm", svm.as_bytes());
    write_parquet(&dir.join("x.parquet"), &all);
    let native = cli_helpers::dprp(dir, &["convert", "x.f32.npy", "-o", "x.bin"]);
    assert!(native.status.success(), "{}", cli_helpers::stderr(&native));
    // the u8 group
    let b = row_u8();
    let brows: Vec<&[u8]> = (0..N).map(|_| &b[..]).collect();
    put(dir, "u.bvecs", &bvecs(&brows));
    let pix: Vec<u8> = b.iter().copied().cycle().take(N * P).collect();
    put(dir, "u-idx3-ubyte", &idx_images(N as u32, 15, 20, &pix));
    put(dir, "u.u8.npy", &npy("|u1", N, P, &pix));
    let f = vec![];
    let u8s = vec!["--scale", "255"];
    vec![
        ("x.bin".into(), f.clone()),
        ("x.f32.npy".into(), f.clone()),
        ("x.f64.npy".into(), f.clone()),
        ("x.f16.npy".into(), f.clone()),
        ("x.fvecs".into(), f.clone()),
        ("x.csv".into(), f.clone()),
        ("x.svm".into(), vec!["--dim", "300"]),
        ("x.parquet".into(), f.clone()),
        ("u.u8.npy".into(), u8s.clone()),
        ("u.bvecs".into(), u8s.clone()),
        (
            "u-idx3-ubyte".into(),
            vec!["--scale", "255", "--format", "idx"],
        ),
    ]
}

fn write_parquet(path: &Path, v: &[f32]) {
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let col: ArrayRef = Arc::new(
        FixedSizeListArray::try_new(
            item,
            P as i32,
            Arc::new(Float32Array::from(v.to_vec())),
            None,
        )
        .unwrap(),
    );
    let batch = RecordBatch::try_from_iter(vec![("embedding", col)]).unwrap();
    // row groups of 100 rows: the reader's batches do not line up with anything either
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(100))
        .build();
    let mut w = ArrowWriter::try_new(
        std::fs::File::create(path).unwrap(),
        batch.schema(),
        Some(props),
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// Publish `input` with `mech` under one noise and projection seed, every read at most `cap`
/// rows (`None`: the reader's own), and return the payload bytes.
fn publish(
    dir: &Path,
    input: &str,
    extra: &[&str],
    mech: &str,
    flags: &[&str],
    cap: Option<usize>,
) -> Vec<u8> {
    let out = format!("{input}.{mech}.{}.dprp", cap.unwrap_or(0));
    let mut args = seeded_args(input, mech, &out);
    args.extend_from_slice(flags);
    args.extend_from_slice(extra);
    let mut cmd = Command::new(cli_helpers::bin());
    cmd.args(&args).current_dir(dir);
    match cap {
        Some(c) => cmd.env("DPRP_CHUNK_ROWS", c.to_string()),
        None => cmd.env_remove("DPRP_CHUNK_ROWS"),
    };
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{args:?} (cap {cap:?}): {}",
        cli_helpers::stderr(&o)
    );
    payload_bytes(&dir.join(&out))
}

/// `publish INPUT -m MECH` with the tests' public and (not private) noise seeds, l2-normalised.
fn seeded_args<'a>(input: &'a str, mech: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        "publish",
        input,
        "-m",
        mech,
        "--normalize",
        "l2",
        "--projection-seed",
        "5eed",
        "--noise-seed",
        "pipeline",
        "-o",
        out,
        // the same settings are published again under other flags
        "--overwrite",
    ]
}

fn payload_bytes(path: &Path) -> Vec<u8> {
    let b = std::fs::read(path).unwrap();
    let (off, len) = (u64_at(&b, 32) as usize, u64_at(&b, 40) as usize);
    b[off..off + len].to_vec()
}

/// Pairs of identical rows in a payload of `N` rows.
fn identical_rows(payload: &[u8]) -> usize {
    let w = payload.len() / N;
    let mut rows: Vec<&[u8]> = payload.chunks_exact(w).collect();
    rows.sort();
    rows.windows(2).filter(|p| p[0] == p[1]).count()
}

#[test]
fn every_reader_at_every_read_size_gives_the_same_bytes() {
    let d = tmp();
    let inputs = write_inputs(d.path());
    for (mech, flags) in FAMILIES {
        let reference = publish(d.path(), "x.bin", &[], mech, flags, None);
        assert_eq!(
            identical_rows(&reference),
            0,
            "{mech}: identical outputs from identical rows"
        );
        let reference_u8 = publish(d.path(), "u.u8.npy", &["--scale", "255"], mech, flags, None);
        for (input, extra) in &inputs {
            let want = if input.starts_with('u') {
                &reference_u8
            } else {
                &reference
            };
            for cap in [None, Some(1), Some(255), Some(257)] {
                let got = publish(d.path(), input, extra, mech, flags, cap);
                assert!(
                    got == *want,
                    "{mech} from {input} read {cap:?} rows at a time: not the bytes of the whole \
                     read ({} of {N} rows differ; {} identical pairs)",
                    got.chunks(got.len() / N)
                        .zip(want.chunks(want.len() / N))
                        .filter(|(a, b)| a != b)
                        .count(),
                    identical_rows(&got)
                );
            }
        }
    }
}

#[test]
fn shards_may_start_at_any_row_and_are_the_one_file_release() {
    let d = tmp();
    let r = row();
    let all: Vec<f32> = r.iter().copied().cycle().take(N * P).collect();
    put(d.path(), "x.npy", &npy("<f4", N, P, &f32_le(&all)));
    // workers: rows 0..301 and 301..700 (301 is on no block boundary)
    let cut = 301;
    put(
        d.path(),
        "a.npy",
        &npy("<f4", cut, P, &f32_le(&all[..cut * P])),
    );
    put(
        d.path(),
        "b.npy",
        &npy("<f4", N - cut, P, &f32_le(&all[cut * P..])),
    );
    for (mech, flags) in FAMILIES {
        let whole = publish(d.path(), "x.npy", &[], mech, flags, None);
        let dir = format!("{mech}-shards");
        let first = cut.to_string();
        for (input, spec, first_row) in [("a.npy", "0/2", "0"), ("b.npy", "1/2", first.as_str())] {
            let mut args = seeded_args(input, mech, &dir);
            args.extend(["--shard", spec, "--first-row", first_row]);
            args.extend_from_slice(flags);
            let o = cli_helpers::dprp(d.path(), &args);
            assert!(o.status.success(), "{args:?}: {}", cli_helpers::stderr(&o));
        }
        let o = cli_helpers::dprp(d.path(), &["shards", "finish", &dir]);
        assert!(o.status.success(), "{mech}: {}", cli_helpers::stderr(&o));
        let mut files: Vec<_> = std::fs::read_dir(d.path().join(&dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "dprp"))
            .collect();
        files.sort();
        let joined: Vec<u8> = files.iter().flat_map(|f| payload_bytes(f)).collect();
        assert!(
            joined == whole,
            "{mech}: shards from row {cut} differ from the one-file release"
        );
    }
}

/// The reproduction: float64 `.npy` at d = 1000, 4096 identical unit rows, OS noise. The
/// reader returns 2097-row chunks by itself; 0.1.0 gave 49 identical PrivUnit2 pairs and a
/// ProjUnit mean with ⟨mean, v⟩ = 0.51.
#[test]
fn the_advisory_reproduction_publishes_independent_rows_and_an_unbiased_mean() {
    let d = tmp();
    let (n, p) = (4096, 1000);
    let mut v: Vec<f64> = (0..p)
        .map(|j| ((j * 7919 % 1000) as f64 / 1000.0) - 0.5)
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    let all: Vec<f64> = v.iter().copied().cycle().take(n * p).collect();
    put(d.path(), "x.npy", &npy("<f8", n, p, &f64_le(&all)));
    let o = cli_helpers::dprp(
        d.path(),
        &[
            "publish",
            "x.npy",
            "-m",
            "privunit2",
            "-e",
            "4",
            "-o",
            "pu.dprp",
        ],
    );
    assert!(o.status.success(), "{}", cli_helpers::stderr(&o));
    let pu = payload_bytes(&d.path().join("pu.dprp"));
    let w = pu.len() / n;
    let mut rows: Vec<&[u8]> = pu.chunks_exact(w).collect();
    rows.sort();
    assert_eq!(rows.windows(2).filter(|r| r[0] == r[1]).count(), 0);
    let o = cli_helpers::dprp(
        d.path(),
        &[
            "publish", "x.npy", "-m", "projunit", "-k", "100", "-e", "16", "-o", "pj.dprp",
        ],
    );
    assert!(o.status.success(), "{}", cli_helpers::stderr(&o));
    let j = cli_helpers::dprp_json(d.path(), &["mean", "pj.dprp", "-o", "pj.npy", "--json"]);
    let mse = j["expected_sq_error"].as_f64().unwrap();
    let mean: Vec<f64> = j["mean"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(mean.len(), p);
    let err: f64 = mean.iter().zip(&v).map(|(a, b)| (a - b).powi(2)).sum();
    let ip: f64 = mean.iter().zip(&v).map(|(a, b)| a * b).sum();
    // ‖mean − v‖² is a sum over 1000 coordinates of independent-row averages: it concentrates
    // at its expectation (relative spread ≈ √(2/1000) ≈ 4.5%); 1.5× is 11 spreads away, and the
    // 0.1.0 bias (⟨mean, v⟩ = 0.51 adds ≈ 0.24) is 40× the expected error here.
    assert!(
        err <= 1.5 * mse,
        "‖mean − v‖² = {err:.4} against E = {mse:.4} (⟨mean, v⟩ = {ip:.3})"
    );
    assert!(
        (ip - 1.0).abs() <= 6.0 * (mse / p as f64).sqrt() + 0.05,
        "⟨mean, v⟩ = {ip:.3}"
    );
}

/// `dprp audit --pipeline` (as the README writes it: no mechanism named runs every one) passes for
/// every mechanism, and `--out` writes the pipeline's report (issue 37: it wrote nothing, and the
/// bare command was refused for a missing --mechanism).
#[test]
fn audit_pipeline_passes_for_every_mechanism() {
    let d = tmp();
    let o = cli_helpers::dprp(
        d.path(),
        &[
            "audit",
            "--pipeline",
            "--seed",
            "7",
            "--json",
            "--out",
            "rep",
        ],
    );
    assert!(o.status.success(), "{}", cli_helpers::stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let reports = j.as_array().unwrap();
    assert_eq!(reports.len(), 20, "{j}");
    for r in reports {
        assert_eq!(r["identical_across_caps"], true, "{r}");
        assert_eq!(r["flagged"], false, "{r}");
        assert_eq!(r["independence"]["lags"], 300, "{r}");
    }
    let md = std::fs::read_to_string(d.path().join("rep/report.md")).unwrap();
    assert!(md.starts_with("# `dprp audit --pipeline`"), "{md}");
    assert!(
        md.contains("dprp audit --pipeline --seed 7 --out rep"),
        "{md}"
    );
    assert_eq!(md.matches("| ok |").count(), 20, "{md}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("rep/report.json")).unwrap()).unwrap();
    assert_eq!(json["pipeline"].as_array().unwrap().len(), 20);
}

/// Power: the statistic flags the pattern 0.1.0 produced — at a 2097-row chunk boundary, rows
/// 2097..2146 repeat rows 2048..2097 — on an otherwise independent release, and flags a
/// correlation at one lag without exact repeats (half of each row's noise shared).
#[test]
fn the_independence_check_flags_the_old_pattern() {
    // independent N(0,1)-like rows (2500 × 64, as the pipeline check's), then their corruptions
    let (n, k) = (2500usize, 64usize);
    let mut z = vec![0f32; n * k];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for x in z.iter_mut() {
        // a fixed sequence of N(0,1)-like values: sums of 12 uniforms
        let mut s = 0.0;
        for _ in 0..12 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            s += (state >> 11) as f64 / (1u64 << 53) as f64;
        }
        *x = (s - 6.0) as f32;
    }
    let ok = independence(&rows_as_values(Payload::F32, k, &z, &[]), k, 300);
    assert!(ok.passed(), "{ok:?}");
    let mut old = z.clone();
    for i in 0..49 {
        let (dst, src) = ((2097 + i) * k, (2048 + i) * k);
        old.copy_within(src..src + k, dst);
    }
    let bad = independence(&rows_as_values(Payload::F32, k, &old, &[]), k, 300);
    assert!(
        !bad.passed() && bad.duplicate_pairs == 49 && bad.worst_lag == 49,
        "{bad:?}"
    );
    let mut half = z.clone();
    for i in 0..200 {
        for j in 0..k / 2 {
            half[(1000 + i) * k + j] = z[(700 + i) * k + j];
        }
    }
    let corr = independence(&rows_as_values(Payload::F32, k, &half, &[]), k, 300);
    assert_eq!(corr.duplicate_pairs, 0);
    assert!(!corr.passed() && corr.worst_lag == 300, "{corr:?}");
    // sign rows: the same repeats in packed bits
    let bits: Vec<u64> = z
        .chunks(k)
        .map(|r| {
            r.iter()
                .enumerate()
                .fold(0u64, |w, (j, v)| w | (u64::from(*v > 0.0) << j))
        })
        .collect();
    let mut old_bits = bits.clone();
    old_bits[2097..2146].copy_from_slice(&bits[2048..2097]);
    assert!(independence(&rows_as_values(Payload::Bits, k, &[], &bits), k, 300).passed());
    assert!(!independence(&rows_as_values(Payload::Bits, k, &[], &old_bits), k, 300).passed());
}

/// Rewrite a native release's writer (same length) and its checksum, as if `tool` wrote it.
fn as_written_by(path: &Path, tool: &str) {
    let mut b = std::fs::read(path).unwrap();
    let (from, to) = (
        format!("\"dprp {}\"", env!("CARGO_PKG_VERSION")),
        format!("\"{tool}\""),
    );
    assert_eq!(from.len(), to.len());
    let at = b
        .windows(from.len())
        .position(|w| w == from.as_bytes())
        .expect("the writer's version in the metadata");
    b[at..at + to.len()].copy_from_slice(to.as_bytes());
    let mut h = blake3::Hasher::new();
    h.update(&b[128..]);
    h.update(&b[..80]);
    b[80..112].copy_from_slice(h.finalize().as_bytes());
    std::fs::write(path, b).unwrap();
}

/// `dprp info` names the advisory for a release dprp 0.1.0 wrote that is wide and long enough
/// to have been affected, and for no other.
#[test]
fn info_warns_about_releases_the_advisory_concerns() {
    let d = tmp();
    let r = row();
    let all: Vec<f32> = r.iter().copied().cycle().take(N * P).collect();
    put(d.path(), "x.npy", &npy("<f4", N, P, &f32_le(&all)));
    // narrow (p = 200 ≤ 256): never affected
    let narrow: Vec<f32> = all.chunks(P).flat_map(|c| c[..200].to_vec()).collect();
    put(d.path(), "n.npy", &npy("<f4", N, 200, &f32_le(&narrow)));
    for (input, file) in [("x.npy", "x.dprp"), ("n.npy", "n.dprp")] {
        let o = cli_helpers::dprp(
            d.path(),
            &[
                "publish",
                input,
                "-m",
                "privunit2",
                "-e",
                "4",
                "--normalize",
                "l2",
                "-o",
                file,
            ],
        );
        assert!(o.status.success(), "{}", cli_helpers::stderr(&o));
    }
    let info = |file: &str| {
        let o = cli_helpers::dprp(d.path(), &["info", file, "--json"]);
        assert!(o.status.success(), "{}", cli_helpers::stderr(&o));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (j, cli_helpers::stderr(&o))
    };
    let (j, e) = info("x.dprp");
    assert_eq!(j["advisories"], serde_json::json!([]), "{e}");
    assert_eq!(j["input_format"], "npy <f4");
    assert!(!e.contains("ADVISORY"), "{e}");
    // 700 rows at p = 300 fit in one read even as float64 (⌊2²¹/300⌋ = 6990 rows): a 0.1.0
    // release of this shape was not affected
    as_written_by(&d.path().join("x.dprp"), "dprp 0.1.0");
    let (j, e) = info("x.dprp");
    assert_eq!(j["advisories"], serde_json::json!([]), "700 rows: {e}");
    as_written_by(&d.path().join("n.dprp"), "dprp 0.1.0");
    assert_eq!(info("n.dprp").0["advisories"], serde_json::json!([]));
    // a long one: 7000 rows (> 6990)
    let long: Vec<f32> = r.iter().copied().cycle().take(7000 * P).collect();
    put(d.path(), "l.npy", &npy("<f4", 7000, P, &f32_le(&long)));
    let o = cli_helpers::dprp(
        d.path(),
        &[
            "publish", "l.npy", "-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "64", "-o",
            "l.dprp",
        ],
    );
    assert!(o.status.success(), "{}", cli_helpers::stderr(&o));
    assert_eq!(info("l.dprp").0["advisories"], serde_json::json!([]));
    as_written_by(&d.path().join("l.dprp"), "dprp 0.1.0");
    let (j, e) = info("l.dprp");
    assert_eq!(j["advisories"].as_array().unwrap().len(), 1, "{j}");
    assert!(
        e.contains("warning: ADVISORY 2026-11") && e.contains("withdraw it"),
        "{e}"
    );
    let o = cli_helpers::dprp(d.path(), &["info", "l.dprp"]);
    assert!(o.status.success() && cli_helpers::stderr(&o).contains("ADVISORY 2026-11"));
}
