//! Issue 37 §1: what a command may do at its output path, through every command that writes one.
//!
//! An output replaces nothing that is not a regular file (a named pipe, a socket, a symbolic
//! link — dangling or not —, a directory where a file is meant), and a regular file only with
//! `--overwrite`; the refused entry is left exactly as it was. A command whose output is complete
//! says so with status 0 even when its report cannot be printed. A temporary file left by a killed
//! run is removed by the next run in the directory. Every special file is made in a temporary
//! directory (mkfifo, a bound socket, symlink): no test writes near a real device.
#![cfg(unix)]

use crate::cli_helpers;
use cli_helpers::*;
use std::os::unix::fs::FileTypeExt;
use std::process::Stdio;

/// A directory with the inputs every output-writing command needs: `s.bin` (the sample), a real
/// release `r.dprp`, a local release `l.dprp` and queries `q.csv` of the sample's width.
fn workspace() -> tempfile::TempDir {
    let d = tmp();
    let p = d.path();
    ok(p, &["sample", "-o", "s.bin"]);
    ok(
        p,
        &[
            "publish", "s.bin", "-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "8", "-o",
            "r.dprp",
        ],
    );
    ok(
        p,
        &[
            "publish",
            "s.bin",
            "-m",
            "privunitg",
            "-e",
            "4",
            "--normalize",
            "l2",
            "-o",
            "l.dprp",
        ],
    );
    std::fs::write(p.join("q.csv"), rows_csv(2, 64)).unwrap();
    d
}

/// Every command that writes a file, with `OUT` standing for the output path.
fn writers() -> Vec<Vec<&'static str>> {
    vec![
        vec![
            "publish", "s.bin", "-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "8", "-o", "OUT",
        ],
        vec!["convert", "s.bin", "-o", "OUT"],
        vec!["project", "r.dprp", "--queries", "q.csv", "-o", "OUT"],
        vec!["mean", "l.dprp", "-o", "OUT"],
        vec!["index", "r.dprp", "-o", "OUT"],
        vec![
            "aggregate",
            "--synthetic",
            "20,4",
            "-e",
            "2",
            "--delta",
            "1e-5",
            "--clip",
            "1",
            "-o",
            "OUT",
        ],
        vec!["sample", "-o", "OUT"],
    ]
}

/// The output name each command accepts (its extension).
fn name_for(cmd: &str, stem: &str) -> String {
    match cmd {
        "convert" | "sample" => format!("{stem}.bin"),
        "project" | "mean" | "aggregate" => format!("{stem}.npy"),
        "index" => format!("{stem}.hnsw"),
        _ => format!("{stem}.dprp"),
    }
}

fn args_with<'a>(cmd: &[&'a str], out: &'a str) -> Vec<&'a str> {
    cmd.iter()
        .map(|&a| if a == "OUT" { out } else { a })
        .collect()
}

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

#[test]
fn no_command_replaces_a_pipe_a_socket_a_link_or_a_directory() {
    let d = workspace();
    let p = d.path();
    std::fs::write(p.join("target.txt"), b"keep me").unwrap();
    let mut sockets = Vec::new();
    for cmd in writers() {
        let name = |kind: &str| name_for(cmd[0], kind);
        let (fifo, sock, link, dangling, dir) = (
            name("fifo"),
            name("sock"),
            name("link"),
            name("dangling"),
            name("dir"),
        );
        for n in [&fifo, &sock, &link, &dangling, &dir] {
            let _ = std::fs::remove_file(p.join(n));
            let _ = std::fs::remove_dir(p.join(n));
        }
        mkfifo(&p.join(&fifo));
        sockets.push(std::os::unix::net::UnixListener::bind(p.join(&sock)).unwrap());
        std::os::unix::fs::symlink(p.join("target.txt"), p.join(&link)).unwrap();
        std::os::unix::fs::symlink(p.join("nowhere"), p.join(&dangling)).unwrap();
        std::fs::create_dir(p.join(&dir)).unwrap();
        let cases = [
            (&fifo, "named pipe"),
            (&sock, "socket"),
            (&link, "symbolic link"),
            (&dangling, "symbolic link"),
            (&dir, "directory"),
        ];
        for (out, says) in cases {
            for extra in [&[][..], &["--overwrite"][..]] {
                let mut args = args_with(&cmd, out);
                args.extend_from_slice(extra);
                fails(p, &args, &[out.as_str(), says]);
                assert!(temp_files(p).is_empty(), "{args:?}");
            }
        }
        let ft = |n: &str| std::fs::symlink_metadata(p.join(n)).unwrap().file_type();
        assert!(ft(&fifo).is_fifo() && ft(&sock).is_socket() && ft(&dir).is_dir());
        assert!(ft(&link).is_symlink() && ft(&dangling).is_symlink());
        assert!(
            !p.join("nowhere").exists(),
            "{cmd:?} wrote through a dangling link"
        );
        assert_eq!(std::fs::read(p.join("target.txt")).unwrap(), b"keep me");
        assert_eq!(std::fs::read_dir(p.join(&dir)).unwrap().count(), 0);
    }
}

#[test]
fn an_existing_file_is_replaced_only_with_overwrite() {
    let d = workspace();
    let p = d.path();
    for cmd in writers() {
        let out = name_for(cmd[0], "existing");
        std::fs::write(p.join(&out), b"someone's file").unwrap();
        let args = args_with(&cmd, &out);
        let e = fails(p, &args, &[&out, "already exists", "--overwrite"]);
        assert!(!e.contains("panicked"));
        assert_eq!(std::fs::read(p.join(&out)).unwrap(), b"someone's file");
        let mut args = args.clone();
        args.push("--overwrite");
        ok(p, &args);
        assert_ne!(std::fs::read(p.join(&out)).unwrap(), b"someone's file");
        assert!(temp_files(p).is_empty());
    }
    // report directories: an existing one that holds files needs --overwrite too
    std::fs::create_dir(p.join("demo")).unwrap();
    std::fs::write(p.join("demo/notes.txt"), b"mine").unwrap();
    fails(
        p,
        &["demo", "--out-dir", "demo"],
        &["not empty", "--overwrite"],
    );
    assert_eq!(std::fs::read_dir(p.join("demo")).unwrap().count(), 1);
    ok(p, &["demo", "--out-dir", "demo", "--overwrite"]);
    assert_eq!(std::fs::read(p.join("demo/notes.txt")).unwrap(), b"mine");
    assert!(p.join("demo/sample.bin").is_file());
}

#[test]
fn convert_writes_what_the_name_says_or_refuses_it() {
    let d = workspace();
    let p = d.path();
    for bad in [
        "cv.npy",
        "cv.csv",
        "cv.parquet",
        "cv.svm",
        "cv.bin.gz",
        "cv.dprp",
    ] {
        fails(
            p,
            &["convert", "s.bin", "-o", bad],
            &[bad, "native dataset format", ".bin"],
        );
        assert!(!p.join(bad).exists());
    }
    ok(p, &["convert", "s.bin", "-o", "cv.bin"]);
    // and what it wrote is read back by the name it has
    ok(
        p,
        &[
            "publish", "cv.bin", "-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "8", "-o",
            "cv.dprp",
        ],
    );
}

/// Standard output that cannot take a byte: a non-blocking pipe filled up and never read (every
/// write fails with EAGAIN, as a full disk fails with ENOSPC — without writing near a device).
/// Returns the reading end (kept open, so the writes do not fail as a closed pipe) and the
/// writing end for the child.
fn full_stdout() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two new descriptors into `fds` on success (checked).
    assert_eq!(
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) },
        0
    );
    // SAFETY: both descriptors were just created and are owned by nothing else.
    let (r, w) = unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    let mut f = std::fs::File::from(w);
    let block = [b'x'; 4096];
    loop {
        match f.write(&block) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
    }
    (r, f.into())
}

/// A complete release whose report cannot be printed: status 0 and a warning that names the
/// release, which is whole (the issue's `> /dev/full`).
#[test]
fn a_lost_report_does_not_fail_a_complete_release() {
    let d = workspace();
    let p = d.path();
    let run = |args: &[&str]| {
        let (_reader, writer) = full_stdout();
        std::process::Command::new(bin())
            .args(args)
            .current_dir(p)
            .stdout(Stdio::from(writer))
            .stderr(Stdio::piped())
            .output()
            .unwrap()
    };
    let o = run(&[
        "publish", "s.bin", "-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "8", "-o", "x1.dprp",
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("x1.dprp written and complete"), "{err}");
    ok(p, &["info", "x1.dprp"]);
    assert!(temp_files(p).is_empty());
    // power: the same standard output fails a command whose report is all it makes
    let o = run(&["info", "x1.dprp"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("standard output"));
}

/// A publish killed outright (SIGKILL: no handler runs) leaves its temporary file; the next
/// output written in that directory removes it and says so. A temporary file whose writer is
/// alive is left alone.
#[test]
fn a_killed_publish_leaves_a_temporary_file_the_next_run_removes() {
    let d = workspace();
    let p = d.path();
    mkfifo(&p.join("in.csv"));
    let mut child = std::process::Command::new(bin())
        .args([
            "publish",
            "in.csv",
            "-m",
            "dp-oporp",
            "-e",
            "5",
            "-d",
            "1e-6",
            "-k",
            "4",
            "-o",
            "slow.dprp",
        ])
        .current_dir(p)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // rows in, the pipe kept open: the publish waits for more with its temporary output made
    let mut w = std::fs::OpenOptions::new()
        .write(true)
        .open(p.join("in.csv"))
        .unwrap();
    w.write_all(rows_csv(300, 5).as_bytes()).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while temp_files(p).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "no temporary output appeared"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // alive: another run in the directory leaves it alone, however old it looks
    let live = temp_files(p);
    age(&live[0]);
    ok(
        p,
        &[
            "publish", "s.bin", "-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "8", "-o",
            "a.dprp",
        ],
    );
    assert_eq!(temp_files(p), live);
    child.kill().unwrap();
    child.wait().unwrap();
    drop(w);
    assert_eq!(temp_files(p), live, "SIGKILL runs no clean-up");
    age(&live[0]);
    let (_, err) = ok2(
        p,
        &[
            "publish", "s.bin", "-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "8", "-o",
            "b.dprp",
        ],
    );
    assert!(
        err.contains("removed") && err.contains("no longer running"),
        "{err}"
    );
    assert!(temp_files(p).is_empty());
    assert!(!p.join("slow.dprp").exists());
}

/// Make a file look a minute old (stale temporaries younger than a few seconds are left alone).
fn age(path: &Path) {
    let t = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}
