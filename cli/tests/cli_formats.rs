//! End-to-end round trips through every input format, run as a user would run them: the real
//! binary, small input files written by hand, one temporary directory per test.

use crate::cli_helpers;

#[allow(unused_imports)]
use cli_helpers::*;

// ---------------------------------------------------------------------------------------------
// 1. Round trips through every input format
// ---------------------------------------------------------------------------------------------

/// One input file and what it should decode to.
struct Case<'a> {
    input: &'a str,
    /// Reader and scaling flags, given to both convert and publish.
    flags: &'a [&'a str],
    n: usize,
    p: usize,
    /// Values after scaling.
    values: Vec<f32>,
    labels: Option<Vec<f32>>,
    /// Expected `scaling` record of the releases (JSON).
    scaling: Value,
}

/// convert → dataset.bin (checked byte for byte) → publish → info / info --json; then publish the
/// original file directly with the same flags and check that release too.
fn round_trip(dir: &Path, c: &Case) {
    assert_eq!(c.values.len(), c.n * c.p);
    let out = ok(dir, &with(&["convert", c.input, "-o", "d.bin"], c.flags));
    let summary = format!("{} rows × {} features", c.n, c.p);
    assert!(
        out.contains(&summary),
        "convert should say {summary:?}:\n{out}"
    );
    let (n, p, values, labels) = read_native(&dir.join("d.bin"));
    assert_eq!((n, p), (c.n, c.p), "dataset shape");
    assert_eq!(values, c.values, "dataset values");
    assert_eq!(labels, c.labels, "dataset labels");

    ok(dir, &with(&["publish", "d.bin", "-o", "r.dprp"], &PUBLISH));
    let j = check_release(dir, "r.dprp", (c.n, c.p, 4), "dp-oporp", c.labels.is_some());
    check_guarantee_5(&j);
    assert_eq!(j["scaling"], c.scaling, "scaling recorded via convert");
    assert_eq!(release_labels(&dir.join("r.dprp")), c.labels);
    let info = ok(dir, &["info", "r.dprp"]);
    assert!(info.contains("(5, 1e-6)-DP"), "{info}");

    // Publish the original file directly, with the same reader and scaling flags.
    let args = with(
        &with(&["publish", c.input, "-o", "direct.dprp"], &PUBLISH),
        c.flags,
    );
    ok(dir, &args);
    let j = check_release(
        dir,
        "direct.dprp",
        (c.n, c.p, 4),
        "dp-oporp",
        c.labels.is_some(),
    );
    check_guarantee_5(&j);
    assert_eq!(
        j["scaling"], c.scaling,
        "scaling recorded by a direct publish"
    );
    assert_eq!(release_labels(&dir.join("direct.dprp")), c.labels);
    assert!(temp_leftovers(dir).is_empty());
}

fn divide_by(v: &[f32], by: f64) -> Vec<f32> {
    v.iter().map(|&x| (x as f64 / by) as f32).collect()
}

#[test]
fn round_trip_npy_f32() {
    let d = tmp();
    let v = [
        0.5f32, -1.0, 0.25, 1.0, 0.0, -0.75, 0.125, 0.3, -0.3, 0.9, -0.9, 0.01,
    ];
    put(d.path(), "x.npy", &npy("<f4", 3, 4, &f32_le(&v)));
    round_trip(
        d.path(),
        &Case {
            input: "x.npy",
            flags: &[],
            n: 3,
            p: 4,
            values: v.to_vec(),
            labels: None,
            scaling: serde_json::json!([]),
        },
    );
}

#[test]
fn round_trip_npy_f64_with_clip() {
    let d = tmp();
    let v = [0.5f64, -2.0, 3.5, 0.25, -0.125, 1.0, -1.0, 7.0, 0.0, 0.75];
    put(d.path(), "x.npy", &npy("<f8", 2, 5, &f64_le(&v)));
    let want: Vec<f32> = v.iter().map(|&x| x.clamp(-1.0, 1.0) as f32).collect();
    // Without --clip the out-of-domain value is refused (row 0, column 1 is -2).
    fails_clean(
        d.path(),
        &with(&["publish", "x.npy", "-o", "r.dprp"], &PUBLISH),
        "r.dprp",
        &["row 0, column 1", "-2", "[-1,1]"],
    );
    round_trip(
        d.path(),
        &Case {
            input: "x.npy",
            flags: &["--clip"],
            n: 2,
            p: 5,
            values: want,
            labels: None,
            scaling: serde_json::json!([{"step": "clip"}]),
        },
    );
}

#[test]
fn round_trip_npy_u8_with_scale() {
    let d = tmp();
    let raw: Vec<u8> = vec![0, 1, 2, 127, 128, 200, 250, 255, 17, 34];
    put(d.path(), "x.npy", &npy("|u1", 2, 5, &raw));
    let as_f32: Vec<f32> = raw.iter().map(|&b| f32::from(b)).collect();
    fails_clean(
        d.path(),
        &with(&["publish", "x.npy", "-o", "r.dprp"], &PUBLISH),
        "r.dprp",
        &["row 0, column 2", "[-1,1]"],
    );
    round_trip(
        d.path(),
        &Case {
            input: "x.npy",
            flags: &["--scale", "255"],
            n: 2,
            p: 5,
            values: divide_by(&as_f32, 255.0),
            labels: None,
            scaling: serde_json::json!([{"step": "divide", "by": 255.0}]),
        },
    );
}

#[test]
fn round_trip_fvecs() {
    let d = tmp();
    let rows: [&[f32]; 3] = [
        &[0.5, -0.5, 0.25, 1.0],
        &[-1.0, 0.0, 0.125, 0.875],
        &[0.1, 0.2, 0.3, 0.4],
    ];
    put(d.path(), "x.fvecs", &fvecs(&rows));
    round_trip(
        d.path(),
        &Case {
            input: "x.fvecs",
            flags: &[],
            n: 3,
            p: 4,
            values: rows.concat(),
            labels: None,
            scaling: serde_json::json!([]),
        },
    );
}

#[test]
fn round_trip_bvecs_with_scale() {
    let d = tmp();
    let rows: [&[u8]; 3] = [&[0, 255, 128, 1], &[10, 20, 30, 40], &[250, 251, 252, 253]];
    put(d.path(), "x.bvecs", &bvecs(&rows));
    let as_f32: Vec<f32> = rows.concat().iter().map(|&b| f32::from(b)).collect();
    round_trip(
        d.path(),
        &Case {
            input: "x.bvecs",
            flags: &["--scale", "255"],
            n: 3,
            p: 4,
            values: divide_by(&as_f32, 255.0),
            labels: None,
            scaling: serde_json::json!([{"step": "divide", "by": 255.0}]),
        },
    );
}

const SVM: &str = "+1 1:0.5 3:-0.25\n-1 2:1 6:0.75\n2 4:-1 5:0.125 # comment\n";

fn svm_case(input: &str) -> Case<'_> {
    #[rustfmt::skip]
    let values = vec![
        0.5, 0.0, -0.25, 0.0, 0.0, 0.0, 0.0,
        0.0, 1.0, 0.0, 0.0, 0.0, 0.75, 0.0,
        0.0, 0.0, 0.0, -1.0, 0.125, 0.0, 0.0,
    ];
    Case {
        input,
        flags: &["--dim", "7"],
        n: 3,
        p: 7,
        values,
        labels: Some(vec![1.0, -1.0, 2.0]),
        scaling: serde_json::json!([]),
    }
}

#[test]
fn round_trip_svm_with_labels_and_dim() {
    let d = tmp();
    put(d.path(), "x.svm", SVM.as_bytes());
    round_trip(d.path(), &svm_case("x.svm"));
}

#[test]
fn round_trip_svm_gz_with_labels_and_dim() {
    let d = tmp();
    put(d.path(), "x.svm.gz", &gz(SVM.as_bytes()));
    round_trip(d.path(), &svm_case("x.svm.gz"));
}

#[test]
fn svm_dimension_inferred_without_dim() {
    let d = tmp();
    put(d.path(), "x.svm", SVM.as_bytes());
    let out = ok(d.path(), &["convert", "x.svm", "-o", "d.bin"]);
    assert!(out.contains("3 rows × 6 features with labels"), "{out}");
}

fn idx_case<'a>(input: &'a str, flags: &'a [&'a str]) -> Case<'a> {
    let pixels: Vec<f32> = (0u8..18).map(|i| f32::from(i * 14)).collect();
    Case {
        input,
        flags,
        n: 3,
        p: 6,
        values: divide_by(&pixels, 255.0),
        labels: Some(vec![7.0, 0.0, 9.0]),
        scaling: serde_json::json!([{"step": "divide", "by": 255.0}]),
    }
}

fn idx_files(dir: &Path, compress: bool) {
    let pixels: Vec<u8> = (0u8..18).map(|i| i * 14).collect();
    let images = idx_images(3, 2, 3, &pixels);
    let labels = idx_labels(&[7, 0, 9]);
    if compress {
        put(dir, "t-images-idx3-ubyte.gz", &gz(&images));
        put(dir, "t-labels-idx1-ubyte.gz", &gz(&labels));
    } else {
        put(dir, "t-images-idx3-ubyte", &images);
        put(dir, "t-labels-idx1-ubyte", &labels);
    }
}

#[test]
fn round_trip_idx_raw_with_labels() {
    let d = tmp();
    idx_files(d.path(), false);
    round_trip(
        d.path(),
        &idx_case(
            "t-images-idx3-ubyte",
            &["--labels", "t-labels-idx1-ubyte", "--scale", "255"],
        ),
    );
}

#[test]
fn round_trip_idx_gz_with_labels() {
    let d = tmp();
    idx_files(d.path(), true);
    round_trip(
        d.path(),
        &idx_case(
            "t-images-idx3-ubyte.gz",
            &["--labels", "t-labels-idx1-ubyte.gz", "--scale", "255"],
        ),
    );
}

#[test]
fn round_trip_idx_without_labels() {
    let d = tmp();
    idx_files(d.path(), true);
    let mut c = idx_case("t-images-idx3-ubyte.gz", &["--scale", "255"]);
    c.labels = None;
    round_trip(d.path(), &c);
}

#[test]
fn round_trip_csv_with_header() {
    let d = tmp();
    put(d.path(), "x.csv", OK_CSV.as_bytes());
    round_trip(
        d.path(),
        &Case {
            input: "x.csv",
            flags: &[],
            n: 3,
            p: 4,
            values: vec![
                0.1, 0.2, 0.3, 0.4, -0.5, 0.5, -1.0, 1.0, 0.0, 0.25, -0.25, 0.75,
            ],
            labels: None,
            scaling: serde_json::json!([]),
        },
    );
}

#[test]
fn round_trip_csv_with_label_column() {
    let d = tmp();
    put(
        d.path(),
        "x.csv",
        b"f1,label,f2,f3,f4\r\n0.5,3,-1,0,0.25\r\n\r\n-0.5,1,1,0.5,-0.25\r\n0,8,0.125,-0.125,1\r\n",
    );
    round_trip(
        d.path(),
        &Case {
            input: "x.csv",
            flags: &["--label-column", "1"],
            n: 3,
            p: 4,
            values: vec![
                0.5, -1.0, 0.0, 0.25, -0.5, 1.0, 0.5, -0.25, 0.0, 0.125, -0.125, 1.0,
            ],
            labels: Some(vec![3.0, 1.0, 8.0]),
            scaling: serde_json::json!([]),
        },
    );
}

#[test]
fn round_trip_csv_with_scale_and_normalize() {
    let d = tmp();
    put(d.path(), "x.csv", b"3,4,0,0\n0,0,-6,8\n");
    // Divide by 10, then l2-normalise each row.
    let want = vec![0.6f32, 0.8, 0.0, 0.0, 0.0, 0.0, -0.6, 0.8];
    ok(
        d.path(),
        &[
            "convert",
            "x.csv",
            "--scale",
            "10",
            "--normalize",
            "l2",
            "-o",
            "d.bin",
        ],
    );
    let (n, p, values, _) = read_native(&d.path().join("d.bin"));
    assert_eq!((n, p), (2, 4));
    for (a, b) in values.iter().zip(&want) {
        assert!((a - b).abs() < 1e-6, "{values:?} vs {want:?}");
    }
    ok(
        d.path(),
        &with(&["publish", "d.bin", "-o", "r.dprp"], &PUBLISH),
    );
    let j = check_release(d.path(), "r.dprp", (2, 4, 4), "dp-oporp", false);
    assert_eq!(
        j["scaling"],
        serde_json::json!([{"step": "divide", "by": 10.0}, {"step": "normalize-l2"}])
    );
    let info = ok(d.path(), &["info", "r.dprp"]);
    assert!(
        info.contains("divide by 10, then l2-normalise rows"),
        "{info}"
    );
}

#[test]
fn format_flag_overrides_the_file_name() {
    let d = tmp();
    put(d.path(), "data.txt", OK_CSV.as_bytes());
    fails_clean(
        d.path(),
        &["convert", "data.txt", "-o", "d.bin"],
        "d.bin",
        &["data.txt", "unknown input format"],
    );
    let out = ok(
        d.path(),
        &["convert", "data.txt", "--format", "csv", "-o", "d.bin"],
    );
    assert!(out.contains("3 rows × 4 features"), "{out}");
}
