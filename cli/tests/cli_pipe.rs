//! A closed standard output (`dprp … | head -1`) ends every printing command quietly, as a
//! process killed by SIGPIPE (status 141 in a shell), with no panic and no message — except a
//! command whose output files are complete before its report (publish, convert): it ends with
//! status 0, as its work is done (a failure status would invite running a publish twice).
//!
//! One test function, run serially, so that no other test's child process can briefly hold a copy
//! of a pipe's reading end.
#![cfg(unix)]

use crate::cli_helpers;
use cli_helpers::*;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Run `dprp args` with standard output a pipe whose reading end is already closed.
fn closed_stdout(dir: &Path, args: &[&str]) -> (std::process::ExitStatus, String) {
    // The reading end is closed before the child starts: closing it after `spawn` would race
    // with a fast command that writes all its output into the pipe's buffer and exits first.
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two new descriptors into `fds` on success (checked).
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just created and are owned by nothing else.
    let (reader, writer) = unsafe {
        use std::os::fd::FromRawFd;
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    drop(reader);
    let mut child = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "dprp {} did not exit",
            args.join(" ")
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut err = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (st, err)
}

#[test]
fn closed_pipes_end_every_printing_command_quietly() {
    closed_stdout_ends_every_printing_command_quietly();
    piped_into_head_with_stderr_too_gives_the_sigpipe_status();
}

fn closed_stdout_ends_every_printing_command_quietly() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("rows.csv"), rows_csv(300, 8)).unwrap();
    std::fs::write(d.path().join("q.csv"), rows_csv(1, 8)).unwrap();
    let publish = [
        "publish",
        "rows.csv",
        "-m",
        "dp-rp-g-opt",
        "-e",
        "5",
        "-d",
        "1e-6",
        "-k",
        "16",
        "-o",
        "r.dprp",
    ];
    // outputs first, then the report: done, status 0, quietly
    let writers: Vec<Vec<&str>> = vec![
        publish.to_vec(),
        vec!["convert", "rows.csv", "-o", "rows.bin"],
        "publish rows.csv -m privunit2 -e 4 --normalize l2 -o l.dprp"
            .split(' ')
            .collect(),
        vec!["mean", "l.dprp", "-o", "m.npy"],
    ];
    for args in &writers {
        let (st, err) = closed_stdout(d.path(), args);
        assert_eq!(
            st.code(),
            Some(0),
            "dprp {}: status {st}, stderr: {err}",
            args.join(" ")
        );
        assert!(err.is_empty(), "dprp {}: {err}", args.join(" "));
        assert!(temp_files(d.path()).is_empty());
    }
    for f in ["r.dprp", "rows.bin", "l.dprp", "m.npy"] {
        assert!(d.path().join(f).is_file(), "{f}");
    }
    let cases: Vec<Vec<&str>> = vec![
        vec!["query", "r.dprp", "--queries", "rows.csv", "--top", "5"],
        vec!["query", "r.dprp", "--queries", "rows.csv", "--json"],
        vec!["query", "r.dprp", "--queries", "rows.csv", "--csv"],
        vec!["info", "r.dprp"],
        vec!["info", "r.dprp", "--json"],
        vec!["estimate", "r.dprp", "--rows", "1,2"],
        vec!["estimate", "r.dprp", "--rows", "1,2", "--json"],
        vec![
            "estimate",
            "r.dprp",
            "--query-vector",
            "q.csv",
            "--rows",
            "1,2",
        ],
        vec!["calibrate", "-e", "1", "-d", "1e-6", "--sensitivity", "1"],
        vec![
            "calibrate",
            "-e",
            "1",
            "-d",
            "1e-6",
            "-m",
            "dp-rp-g-opt",
            "--dim",
            "8",
        ],
        vec!["demo"],
        vec!["mean", "l.dprp"],
        vec!["mean", "l.dprp", "--json"],
        "calibrate -m projunit -e 4 --dim 64".split(' ').collect(),
    ];
    for args in &cases {
        let (st, err) = closed_stdout(d.path(), args);
        assert_eq!(
            st.signal(),
            Some(libc::SIGPIPE),
            "dprp {}: status {st}, stderr: {err}",
            args.join(" ")
        );
        assert!(!err.contains("panicked"), "dprp {}: {err}", args.join(" "));
        assert!(!err.contains("error"), "dprp {}: {err}", args.join(" "));
        assert!(temp_files(d.path()).is_empty());
    }
}

fn piped_into_head_with_stderr_too_gives_the_sigpipe_status() {
    // The reproduction: stdout and stderr both into `head -1`.
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("rows.csv"), rows_csv(2000, 8)).unwrap();
    let ok = Command::new(bin())
        .args([
            "publish", "rows.csv", "-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "8", "-o",
            "r.dprp",
        ])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(ok.status.success());
    let script = format!(
        "'{}' query r.dprp --queries rows.csv --top 50 2>&1 | head -1; echo \"status=${{PIPESTATUS[0]}}\"",
        bin()
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(d.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        !lines[0].contains("panicked") && !lines[0].contains("error"),
        "{text}"
    );
    assert_eq!(lines[1], "status=141", "{text}");
}
