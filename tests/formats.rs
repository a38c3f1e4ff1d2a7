//! Input formats end to end through `dprp::data::read_all`: small synthetic files for every
//! format, and the real public datasets in the project's `data/` (or `$DPRP_DATA`).

use crate::data_common;

use std::io::Write;
use std::path::{Path, PathBuf};

use dprp::data::{read_all, Dataset, Format, InputOptions};

use data_common::data_file;

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn check(d: &Dataset, n: usize, p: usize, values: &[f32], labels: Option<&[f32]>) {
    assert_eq!((d.n, d.p), (n, p));
    assert_eq!(d.values, values);
    assert_eq!(d.labels.as_deref(), labels);
}

const M: [f32; 6] = [0.5, -1.0, 0.25, 1.0, 0.0, -0.75];

fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let pad = (64 - (10 + dict.len() + 1) % 64) % 64;
    let header = format!("{dict}{}\n", " ".repeat(pad));
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn npy_files() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = M.iter().flat_map(|x| x.to_le_bytes()).collect();
    let bytes = npy("<f4", "(2, 3)", &data);
    for (name, b) in [("a.npy", bytes.clone()), ("a.npy.gz", gz(&bytes))] {
        let path = write(dir.path(), name, &b);
        let d = read_all(&path, &InputOptions::default()).unwrap();
        check(&d, 2, 3, &M, None);
    }
    let data: Vec<u8> = M.iter().flat_map(|&x| f64::from(x).to_le_bytes()).collect();
    let path = write(dir.path(), "b.npy", &npy("<f8", "(3, 2)", &data));
    check(
        &read_all(&path, &InputOptions::default()).unwrap(),
        3,
        2,
        &M,
        None,
    );
    let path = write(dir.path(), "c.npy", &npy("|u1", "(1, 3)", &[1, 2, 255]));
    check(
        &read_all(&path, &InputOptions::default()).unwrap(),
        1,
        3,
        &[1.0, 2.0, 255.0],
        None,
    );
    let path = write(dir.path(), "d.npy", &npy("<f4", "(6,)", &[0; 24]));
    let e = read_all(&path, &InputOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("1-D"), "{e}");
}

#[test]
fn fvecs_and_bvecs_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = Vec::new();
    for row in M.chunks(3) {
        f.extend_from_slice(&3i32.to_le_bytes());
        for x in row {
            f.extend_from_slice(&x.to_le_bytes());
        }
    }
    for (name, b) in [("a.fvecs", f.clone()), ("a.fvecs.gz", gz(&f))] {
        let path = write(dir.path(), name, &b);
        check(
            &read_all(&path, &InputOptions::default()).unwrap(),
            2,
            3,
            &M,
            None,
        );
    }
    let mut b = Vec::new();
    for row in [[1u8, 2], [3, 250]] {
        b.extend_from_slice(&2i32.to_le_bytes());
        b.extend_from_slice(&row);
    }
    let path = write(dir.path(), "a.bvecs.gz", &gz(&b));
    check(
        &read_all(&path, &InputOptions::default()).unwrap(),
        2,
        2,
        &[1.0, 2.0, 3.0, 250.0],
        None,
    );
    // Ragged fvecs.
    f.extend_from_slice(&2i32.to_le_bytes());
    f.extend_from_slice(&[0; 8]);
    let path = write(dir.path(), "r.fvecs", &f);
    let e = read_all(&path, &InputOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("row 2 has dimension 2"), "{e}");
}

#[test]
fn svm_files() {
    let dir = tempfile::tempdir().unwrap();
    let text = b"+1 1:0.5 3:1 \n-1 \n1.0 2:-0.25 # comment\n\n";
    let want = [0.5, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, -0.25, 0.0];
    let labels = [1.0, -1.0, 1.0];
    for (name, b) in [("a.svm", text.to_vec()), ("a.svm.gz", gz(text))] {
        let path = write(dir.path(), name, &b);
        let d = read_all(&path, &InputOptions::default()).unwrap();
        check(&d, 3, 3, &want, Some(&labels));
        let opts = InputOptions {
            dim: Some(4),
            ..Default::default()
        };
        let d = read_all(&path, &opts).unwrap();
        assert_eq!((d.n, d.p), (3, 4));
        assert_eq!(&d.values[..4], &[0.5, 0.0, 1.0, 0.0]);
        let opts = InputOptions {
            dim: Some(2),
            ..Default::default()
        };
        let e = read_all(&path, &opts).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("index 3"), "{e}");
    }
}

#[test]
fn idx_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut img = 0x0803u32.to_be_bytes().to_vec();
    for v in [2u32, 2, 3] {
        img.extend_from_slice(&v.to_be_bytes());
    }
    img.extend_from_slice(&[0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255]);
    let mut lab = 0x0801u32.to_be_bytes().to_vec();
    lab.extend_from_slice(&2u32.to_be_bytes());
    lab.extend_from_slice(&[9, 4]);
    let ip = write(dir.path(), "x-images-idx3-ubyte.gz", &gz(&img));
    let lp = write(dir.path(), "x-labels-idx1-ubyte", &lab);
    let opts = InputOptions {
        labels: Some(lp.clone()),
        ..Default::default()
    };
    let want: Vec<f32> = [0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255]
        .iter()
        .map(|&b: &u8| f32::from(b))
        .collect();
    check(
        &read_all(&ip, &opts).unwrap(),
        2,
        6,
        &want,
        Some(&[9.0, 4.0]),
    );
    check(
        &read_all(&ip, &InputOptions::default()).unwrap(),
        2,
        6,
        &want,
        None,
    );
    // Images and labels swapped.
    let opts = InputOptions {
        format: Some(Format::Idx),
        labels: Some(ip.clone()),
        ..Default::default()
    };
    let e = read_all(&lp, &opts).unwrap_err().to_string();
    assert!(e.contains("0x00000801") && e.contains("label file"), "{e}");
}

#[test]
fn csv_files() {
    let dir = tempfile::tempdir().unwrap();
    let text = b"f1,label,f2\n0.5,1,-1\n\n0.25, 0 ,1\n";
    for (name, b) in [("a.csv", text.to_vec()), ("a.csv.gz", gz(text))] {
        let path = write(dir.path(), name, &b);
        // The header is detected and skipped; without a label column every column is a feature.
        let d = read_all(&path, &InputOptions::default()).unwrap();
        check(&d, 2, 3, &[0.5, 1.0, -1.0, 0.25, 0.0, 1.0], None);
        let opts = InputOptions {
            csv_label_column: Some(1),
            ..Default::default()
        };
        let d = read_all(&path, &opts).unwrap();
        check(&d, 2, 2, &[0.5, -1.0, 0.25, 1.0], Some(&[1.0, 0.0]));
        let opts = InputOptions {
            csv_header: Some(false),
            ..Default::default()
        };
        let e = read_all(&path, &opts).unwrap_err().to_string();
        assert!(
            e.contains("line 1 of the file, column 0 (counted from 0)"),
            "{e}"
        );
    }
}

#[test]
fn real_mnist_test_set() {
    let images = data_file("mnist/t10k-images-idx3-ubyte.gz");
    let labels = data_file("mnist/t10k-labels-idx1-ubyte.gz");
    let opts = InputOptions {
        labels: Some(labels),
        ..Default::default()
    };
    let d = read_all(&images, &opts).unwrap();
    assert_eq!((d.n, d.p, d.values.len()), (10000, 784, 10000 * 784));
    let l = d.labels.as_ref().unwrap();
    assert_eq!(l.len(), 10000);
    assert_eq!(
        &l[..10],
        &[7.0, 2.0, 1.0, 0.0, 4.0, 1.0, 4.0, 9.0, 5.0, 9.0]
    );
    assert!(l
        .iter()
        .all(|&x| (0.0..=9.0).contains(&x) && x.fract() == 0.0));
    assert!(d.values.iter().all(|&v| (0.0..=255.0).contains(&v)));
    assert_eq!(d.values.iter().copied().fold(0.0f32, f32::max), 255.0);
}

fn count_labels(d: &Dataset) -> (usize, usize) {
    let l = d.labels.as_ref().unwrap();
    let pos = l.iter().filter(|&&x| x == 1.0).count();
    let neg = l.iter().filter(|&&x| x == -1.0).count();
    assert_eq!(pos + neg, l.len());
    (pos, neg)
}

#[test]
fn real_a9a_test_set() {
    let path = data_file("libsvm/a9a.t.svm.gz");
    let opts = InputOptions {
        dim: Some(123),
        ..Default::default()
    };
    let d = read_all(&path, &opts).unwrap();
    assert_eq!((d.n, d.p), (16281, 123));
    assert_eq!(count_labels(&d), (3846, 12435));
    // a9a is binary: every value is 0 or 1, and feature 123 never occurs in the test split.
    assert!(d.values.iter().all(|&v| v == 0.0 || v == 1.0));
    assert!((0..d.n).all(|i| d.row(i)[122] == 0.0));
    // Without a dimension, the pre-scan finds the largest index, 122.
    let d2 = read_all(&path, &InputOptions::default()).unwrap();
    assert_eq!((d2.n, d2.p), (16281, 122));
    assert_eq!(d2.labels, d.labels);
    assert!((0..d.n).all(|i| d.row(i)[..122] == *d2.row(i)));
}

#[test]
fn real_w8a() {
    let path = data_file("libsvm/w8a.svm.gz");
    let opts = InputOptions {
        dim: Some(300),
        ..Default::default()
    };
    let d = read_all(&path, &opts).unwrap();
    assert_eq!((d.n, d.p), (49749, 300));
    assert_eq!(count_labels(&d), (1479, 48270));
    let nnz = d.values.iter().filter(|&&v| v != 0.0).count();
    assert_eq!(nnz, 579586);
}
