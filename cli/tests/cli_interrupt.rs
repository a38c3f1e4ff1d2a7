//! What happens when a run is interrupted, tested on the real binary: a signal (SIGINT, SIGTERM)
//! during any command that writes (publish, convert, index, eval --out) removes the temporary
//! output, prints one line, and exits with 128 + the signal. (Closed pipes: `cli_pipe.rs`.)
//!
//! To catch `publish` in the middle of writing, its input is a named pipe (FIFO) that the test
//! keeps open: the release's temporary file exists, the reader waits for more rows, and the
//! signal arrives at a moment the test controls.
#![cfg(unix)]

use crate::cli_helpers;
use cli_helpers::*;
use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo has no other preconditions.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(rc, 0, "mkfifo failed: {}", std::io::Error::last_os_error());
}

/// Open the FIFO for writing once the child has opened it for reading (non-blocking open fails
/// with ENXIO until then), failing the test if the child exits first.
fn open_fifo_writer(path: &Path, child: &mut Child) -> std::fs::File {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Ok(f) => return f,
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {}
            Err(e) => panic!("opening the FIFO: {e}"),
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!("dprp exited ({st}) before reading its input");
        }
        assert!(Instant::now() < deadline, "dprp never opened its input");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn wait_with_deadline(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("dprp did not exit after the signal");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn send(child: &Child, sig: i32) {
    // SAFETY: kill with a pid we spawned and a valid signal number.
    let rc = unsafe { libc::kill(child.id() as i32, sig) };
    assert_eq!(rc, 0);
}

fn stderr_of(child: &mut Child) -> String {
    let mut s = String::new();
    use std::io::Read;
    child.stderr.take().unwrap().read_to_string(&mut s).unwrap();
    s
}

/// Start `dprp args` in `dir` reading the FIFO `input` (already created), feed it `rows`, wait
/// until `ready(dir)` holds, send `sig`; return (status, stderr).
fn interrupt(
    dir: &Path,
    args: &[&str],
    input: &Path,
    rows: &str,
    ready: impl Fn(&Path) -> bool,
    sig: i32,
) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut w = open_fifo_writer(input, &mut child);
    w.write_all(rows.as_bytes()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready(dir) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "dprp exited before the signal: {}",
            stderr_of(&mut child)
        );
        assert!(
            Instant::now() < deadline,
            "dprp never reached the point to interrupt"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    send(&child, sig);
    let st = wait_with_deadline(&mut child);
    drop(w);
    (st, stderr_of(&mut child))
}

fn check_interrupted(st: std::process::ExitStatus, err: &str, sig: i32, name: &str) {
    assert_eq!(st.code(), Some(128 + sig), "status {st}, stderr: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr, got: {err}");
    assert!(
        lines[0].starts_with(&format!("error: interrupted by {name}")),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn publish_interrupted_mid_write_removes_its_temporary_file() {
    for (sig, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let d = tempfile::tempdir().unwrap();
        let input = d.path().join("rows.csv");
        mkfifo(&input);
        let (st, err) = interrupt(
            d.path(),
            &[
                "publish", "rows.csv", "-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "4", "-o",
                "out.dprp",
            ],
            &input,
            &rows_csv(10, 8),
            // the release's temporary file exists: publish is writing
            |dir| !temp_files(dir).is_empty(),
            sig,
        );
        check_interrupted(st, &err, sig, name);
        assert!(err.contains("out.dprp not written"), "{err}");
        assert!(!d.path().join("out.dprp").exists());
        assert!(
            temp_files(d.path()).is_empty(),
            "{:?}",
            temp_files(d.path())
        );
    }
}

#[test]
fn convert_and_eval_interrupted_leave_no_output() {
    let d = tempfile::tempdir().unwrap();
    let input = d.path().join("rows.csv");
    mkfifo(&input);
    let started = |_: &Path| true;
    let (st, err) = interrupt(
        d.path(),
        &["convert", "rows.csv", "-o", "out.bin"],
        &input,
        &rows_csv(10, 8),
        started,
        libc::SIGINT,
    );
    check_interrupted(st, &err, libc::SIGINT, "SIGINT");
    assert!(!d.path().join("out.bin").exists());
    assert!(temp_files(d.path()).is_empty());

    let (st, err) = interrupt(
        d.path(),
        &[
            "eval",
            "retrieval",
            "--train",
            "rows.csv",
            "--test",
            "rows.csv",
            "--mechanisms",
            "dp-oporp",
            "--epsilon",
            "5",
            "--k",
            "4",
            "--out",
            "report",
        ],
        &input,
        &rows_csv(10, 8),
        started,
        libc::SIGTERM,
    );
    check_interrupted(st, &err, libc::SIGTERM, "SIGTERM");
    assert!(!d.path().join("report").exists());
    assert!(temp_files(d.path()).is_empty());
}

#[test]
fn index_interrupted_while_building_leaves_no_output() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("rows.csv"), rows_csv(40000, 16)).unwrap();
    let st = Command::new(bin())
        .args([
            "publish",
            "rows.csv",
            "-m",
            "dp-rp-g-opt",
            "-e",
            "5",
            "-d",
            "1e-6",
            "-k",
            "64",
            "-o",
            "r.dprp",
            "--noise-seed",
            "1",
        ])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let mut child = Command::new(bin())
        .args(["index", "r.dprp", "-o", "r.hnsw"])
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the index was built too fast to interrupt: {}",
        stderr_of(&mut child)
    );
    send(&child, libc::SIGINT);
    let st = wait_with_deadline(&mut child);
    let err = stderr_of(&mut child);
    check_interrupted(st, &err, libc::SIGINT, "SIGINT");
    assert!(!d.path().join("r.hnsw").exists());
    assert!(temp_files(d.path()).is_empty());
}

/// `publish --shards` writes into a staging directory: interrupted while its shards are being
/// written, it leaves neither the output directory nor the staging directory.
#[test]
fn sharded_publish_interrupted_leaves_no_directory() {
    let d = tempfile::tempdir().unwrap();
    let (n, p) = (200_000usize, 32usize);
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({n}, {p}), }}");
    let pad = (64 - (10 + dict.len() + 1) % 64) % 64;
    let header = format!("{dict}{}\n", " ".repeat(pad));
    b.extend_from_slice(&(header.len() as u16).to_le_bytes());
    b.extend_from_slice(header.as_bytes());
    for i in 0..n * p {
        b.extend_from_slice(&(((i * 31) % 97) as f32 / 97.0).to_le_bytes());
    }
    std::fs::write(d.path().join("x.npy"), b).unwrap();
    let mut child = Command::new(bin())
        .args([
            "publish",
            "x.npy",
            "-m",
            "dp-rp-g-opt",
            "-e",
            "5",
            "-d",
            "1e-6",
            "-k",
            "512",
            "--shards",
            "4",
            "-o",
            "out",
        ])
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // the staging directory exists: the shards are being written
    let deadline = Instant::now() + Duration::from_secs(30);
    while temp_files(d.path()).is_empty() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "dprp finished before the signal: {}",
            stderr_of(&mut child)
        );
        assert!(Instant::now() < deadline, "no staging directory appeared");
        std::thread::sleep(Duration::from_millis(2));
    }
    send(&child, libc::SIGINT);
    let st = wait_with_deadline(&mut child);
    let err = stderr_of(&mut child);
    check_interrupted(st, &err, libc::SIGINT, "SIGINT");
    assert!(!d.path().join("out").exists());
    assert!(
        temp_files(d.path()).is_empty(),
        "{:?}",
        temp_files(d.path())
    );
}
