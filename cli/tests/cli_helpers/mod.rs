//! Helpers of every test that runs the real binary (one module since issue 27 merged
//! `cli_common` into it): running dprp, writing input files by hand in every format, reading
//! releases back. Every failure helper checks four things: a non-zero exit status, a
//! message on stderr naming what is wrong, no panic, and no output (nor leftover `.dprp-tmp-*`
//! temporary file) left behind.
#![allow(dead_code)]

pub use std::io::Write;
pub use std::path::{Path, PathBuf};
pub use std::process::{Command, Output};

pub use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// Running the binary
// ---------------------------------------------------------------------------------------------

/// Run `dprp args...` with `dir` as the working directory. Whatever the command prints spells
/// the options it names as flags: no option is left marked as the library marks it
/// (`‹min_norm›`, `dprp::error::field`) on either stream.
pub fn dprp(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_dprp"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("failed to start the dprp binary");
    assert_spelt(args, &out);
    out
}

/// Fails when the command's output still holds an option marked by the library.
pub fn assert_spelt(args: &[&str], out: &Output) {
    let (open, _) = dprp::error::FIELD_MARKS;
    assert!(
        !text(&out.stdout).contains(open) && !text(&out.stderr).contains(open),
        "an option left unspelt in the output of {}",
        describe(args, out)
    );
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn describe(args: &[&str], out: &Output) -> String {
    format!(
        "dprp {}\nstatus: {}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    )
}

/// Run and require success; returns stdout.
pub fn ok(dir: &Path, args: &[&str]) -> String {
    let out = dprp(dir, args);
    assert!(
        out.status.success(),
        "expected success:\n{}",
        describe(args, &out)
    );
    assert!(
        !text(&out.stderr).contains("panicked"),
        "panic:\n{}",
        describe(args, &out)
    );
    text(&out.stdout)
}

/// Run and require success; returns (stdout, stderr).
pub fn ok2(dir: &Path, args: &[&str]) -> (String, String) {
    let out = dprp(dir, args);
    assert!(
        out.status.success(),
        "expected success:\n{}",
        describe(args, &out)
    );
    (text(&out.stdout), text(&out.stderr))
}

/// Run and require a clean failure: non-zero exit, no panic, and every one of `needles` in stderr.
/// Returns stderr.
pub fn fails(dir: &Path, args: &[&str], needles: &[&str]) -> String {
    let out = dprp(dir, args);
    let all = describe(args, &out);
    assert!(!out.status.success(), "expected failure:\n{all}");
    assert!(
        out.status.code().is_some(),
        "killed by a signal (crash?):\n{all}"
    );
    let err = text(&out.stderr);
    assert!(!err.contains("panicked"), "panic:\n{all}");
    assert!(!err.trim().is_empty(), "no message on stderr:\n{all}");
    for n in needles {
        assert!(err.contains(n), "stderr should mention {n:?}:\n{all}");
    }
    err
}

/// Every `.dprp-tmp-*` file below `dir`.
pub fn temp_leftovers(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if e.file_name().to_string_lossy().starts_with(".dprp-tmp-") {
                found.push(path.clone());
            }
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                stack.push(path);
            }
        }
    }
    found
}

/// The output was not created and no temporary file is left anywhere in `dir`.
pub fn assert_no_output(dir: &Path, output: &str) {
    assert!(
        !dir.join(output).exists(),
        "{output} must not exist after a failed run"
    );
    let left = temp_leftovers(dir);
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
}

/// Run `args` (whose output is `output`), require a clean failure mentioning `needles`, and
/// require that nothing was written.
pub fn fails_clean(dir: &Path, args: &[&str], output: &str, needles: &[&str]) -> String {
    let err = fails(dir, args, needles);
    assert_no_output(dir, output);
    err
}

pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temporary directory")
}

// ---------------------------------------------------------------------------------------------
// Writing input files by hand
// ---------------------------------------------------------------------------------------------

pub fn put(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).expect("write fixture");
}

pub fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

pub fn f32_le(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn f64_le(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A version 1.0 `.npy` file: magic, version, u16 header length, the header dict padded with
/// spaces and a newline so that the data starts at a multiple of 64 bytes.
pub fn npy(descr: &str, rows: usize, cols: usize, data: &[u8]) -> Vec<u8> {
    let dict =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    let pad = (64 - (10 + dict.len() + 1) % 64) % 64;
    let header = format!("{dict}{}\n", " ".repeat(pad));
    assert_eq!((10 + header.len()) % 64, 0);
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

pub fn fvecs(rows: &[&[f32]]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in rows {
        out.extend_from_slice(&(r.len() as i32).to_le_bytes());
        out.extend_from_slice(&f32_le(r));
    }
    out
}

pub fn bvecs(rows: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in rows {
        out.extend_from_slice(&(r.len() as i32).to_le_bytes());
        out.extend_from_slice(r);
    }
    out
}

/// MNIST IDX images (`0x00000803`, big-endian header), `n` images of `rows × cols` bytes.
pub fn idx_images(n: u32, rows: u32, cols: u32, pixels: &[u8]) -> Vec<u8> {
    assert_eq!(pixels.len(), (n * rows * cols) as usize);
    let mut out = 0x0803u32.to_be_bytes().to_vec();
    for v in [n, rows, cols] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out.extend_from_slice(pixels);
    out
}

/// MNIST IDX labels (`0x00000801`).
pub fn idx_labels(labels: &[u8]) -> Vec<u8> {
    let mut out = 0x0801u32.to_be_bytes().to_vec();
    out.extend_from_slice(&(labels.len() as u32).to_be_bytes());
    out.extend_from_slice(labels);
    out
}

/// A small valid CSV (3 rows × 4 features, header, all values in the privacy domain).
pub const OK_CSV: &str = "a,b,c,d\n0.1,0.2,0.3,0.4\n-0.5,0.5,-1,1\n0,0.25,-0.25,0.75\n";

/// Write `ok.csv` and convert it to `d.bin` (a valid native dataset, 3 × 4).
pub fn valid_dataset(dir: &Path) {
    put(dir, "ok.csv", OK_CSV.as_bytes());
    ok(dir, &["convert", "ok.csv", "-o", "d.bin"]);
}

// ---------------------------------------------------------------------------------------------
// Reading outputs
// ---------------------------------------------------------------------------------------------

pub fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

pub fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// A native `dataset.bin` as (n, p, values, labels), parsed from its documented layout.
pub fn read_native(path: &Path) -> (usize, usize, Vec<f32>, Option<Vec<f32>>) {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[0..8], b"DPRPDATA");
    assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 1);
    let flags = u32::from_le_bytes(b[12..16].try_into().unwrap());
    let n = u64_at(&b, 16) as usize;
    let p = u64_at(&b, 24) as usize;
    let off = u64_at(&b, 32) as usize;
    assert_eq!(off % 64, 0);
    let values = f32s(&b[off..off + 4 * n * p]);
    let labels = (flags & 1 == 1).then(|| f32s(&b[off + 4 * n * p..off + 4 * n * p + 4 * n]));
    assert_eq!(
        b.len(),
        off + 4 * n * p + if flags & 1 == 1 { 4 * n } else { 0 }
    );
    (n, p, values, labels)
}

/// The payload bytes of a release (`n·k` f32 at offset 128).
pub fn payload(path: &Path) -> Vec<u8> {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[0..8], b"DPRPSKCH");
    let n = u64_at(&b, 16) as usize;
    let k = u64_at(&b, 24) as usize;
    assert_eq!(u64_at(&b, 32), 128, "payload offset");
    assert_eq!(u64_at(&b, 40) as usize, n * k * 4, "payload length");
    b[128..128 + n * k * 4].to_vec()
}

/// The labels stored in a release, if any.
pub fn release_labels(path: &Path) -> Option<Vec<f32>> {
    let b = std::fs::read(path).unwrap();
    let n = u64_at(&b, 16) as usize;
    let off = u64_at(&b, 56) as usize;
    (off != 0).then(|| f32s(&b[off..off + 4 * n]))
}

pub fn info_json(dir: &Path, release: &str) -> Value {
    let out = ok(dir, &["info", release, "--json"]);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("info --json is not JSON ({e}):\n{out}"))
}

/// Check a release with `info` and `info --json`; returns the JSON.
pub fn check_release(
    dir: &Path,
    release: &str,
    (n, p, k): (usize, usize, usize),
    mechanism: &str,
    labels: bool,
) -> Value {
    let info = ok(dir, &["info", release]);
    for want in [
        "checksum verified".to_string(),
        format!("p = {p} → k = {k}"),
        format!("{n} (labels: {}", if labels { "yes" } else { "no" }),
        format!("mechanism    {mechanism} "),
        "guarantee".to_string(),
    ] {
        assert!(info.contains(&want), "info should say {want:?}:\n{info}");
    }
    let j = info_json(dir, release);
    assert_eq!(j["n"], n as u64, "{j}");
    assert_eq!(j["p"], p as u64, "{j}");
    assert_eq!(j["k"], k as u64, "{j}");
    assert_eq!(j["mechanism"]["name"], mechanism, "{j}");
    assert_eq!(j["mechanism"]["p"], p as u64, "{j}");
    assert_eq!(j["mechanism"]["k"], k as u64, "{j}");
    assert_eq!(j["labels"], labels, "{j}");
    assert_eq!(j["payload"], "f32", "{j}");
    assert_eq!(j["format_version"], 1, "{j}");
    assert_eq!(j["checksum_verified"], true, "{j}");
    assert_eq!(payload(&dir.join(release)).len(), n * k * 4);
    j
}

/// The guarantee of a default (ε = 5, δ = 1e-6) private release.
pub fn check_guarantee_5(j: &Value) {
    assert_eq!(j["guarantee"]["kind"], "approx-dp", "{j}");
    assert_eq!(j["guarantee"]["epsilon"].as_f64(), Some(5.0), "{j}");
    assert_eq!(j["guarantee"]["delta"].as_f64(), Some(1e-6), "{j}");
    assert_eq!(j["guarantee"]["beta"].as_f64(), Some(1.0), "{j}");
    assert_eq!(j["private"], true, "{j}");
    assert_eq!(j["noise"]["source"], "os-csprng", "{j}");
}

pub const PUBLISH: [&str; 8] = [
    "--mechanism",
    "dp-oporp",
    "--epsilon",
    "5",
    "--delta",
    "1e-6",
    "--k",
    "4",
];

pub fn with<'a>(head: &[&'a str], tail: &[&'a str]) -> Vec<&'a str> {
    head.iter().chain(tail).copied().collect()
}

/// The dprp binary cargo built for these tests.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_dprp")
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

/// The `.dprp-tmp-*` temporary outputs left in `dir` itself ([`temp_leftovers`] searches the
/// subdirectories too).
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

// ---------------------------------------------------------------------------------------------
// Test data

/// SplitMix64: a small deterministic generator for test data.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1), 53 bits.
    pub fn unif(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Standard normal (Box–Muller).
    pub fn gauss(&mut self) -> f32 {
        let (u, v) = (self.unif().max(1e-300), self.unif());
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    }
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.unif() * n as f64) as usize % n
    }
}
