//! `dprp export --postgres` against what needs no PostgreSQL server: a refused port, a host that
//! does not resolve, a server that accepts TCP and never answers, connection strings that do not
//! parse, and table names SQL cannot take. Each must end with a non-zero exit and one message
//! that names the step that failed (resolve, connect, TLS, authenticate) — "invalid --postgres"
//! only for a string that does not parse — and never shows a password, in any of the forms a
//! connection string can carry one. (The exports that reach a server, TLS included, are tested
//! from Python against a throwaway server: tests/python/test_postgres*.py.)

use crate::cli_helpers;

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cli_helpers::*;

/// A small release of the bundled sample in `dir`.
fn release(dir: &Path) -> String {
    let sample = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("data/sample.bin");
    ok(
        dir,
        &[
            "publish",
            sample.to_str().unwrap(),
            "--mechanism",
            "dp-oporp",
            "--epsilon",
            "8",
            "--delta",
            "1e-6",
            "--k",
            "16",
            "-o",
            "r.dprp",
        ],
    );
    "r.dprp".into()
}

/// The passwords the tests put in connection strings; none may appear in any message.
const SECRETS: [&str; 3] = ["secretpw", "s3cr3t-two", "keypass99"];

fn export_fails(dir: &Path, url: &str, needles: &[&str]) -> String {
    let rel = release_once(dir);
    let err = fails(
        dir,
        &["export", &rel, "--postgres", url, "--table", "t"],
        needles,
    );
    for s in SECRETS {
        assert!(!err.contains(s), "{s} shown for {url}:\n{err}");
    }
    assert!(
        err.contains("***"),
        "the password is not shown masked:\n{err}"
    );
    err
}

fn release_once(dir: &Path) -> String {
    if dir.join("r.dprp").exists() {
        "r.dprp".into()
    } else {
        release(dir)
    }
}

/// A port on 127.0.0.1 that refuses connections (bound, then closed).
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A listener that accepts connections and never answers, until dropped.
struct Silent {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Silent {
    fn start() -> Silent {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !s.load(Ordering::Relaxed) {
                if let Ok((c, _)) = l.accept() {
                    held.push(c); // kept open, never read
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        Silent { port, stop }
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[test]
fn a_refused_port_is_a_connect_failure_and_no_password_form_is_shown() {
    let d = tmp();
    let port = closed_port();
    for url in [
        // the case: a password as a URL parameter
        format!("postgresql://u@127.0.0.1:{port}/db?password=secretpw"),
        format!("postgresql://u@127.0.0.1:{port}/db?pass%77ord=secretpw"),
        format!("postgresql://u:secretpw@127.0.0.1:{port}/db"),
        format!("postgresql://u:s3cr3t-two@127.0.0.1:{port}/db?password=secretpw"),
        format!("host=127.0.0.1 port={port} user=u password=secretpw"),
        format!("host=127.0.0.1 port={port} user=u password = 's3cr3t-two'"),
    ] {
        let err = export_fails(
            d.path(),
            &url,
            &[
                "PostgreSQL at ",
                "connect failed",
                &format!("127.0.0.1:{port}"),
            ],
        );
        assert!(!err.contains("invalid --postgres"), "{err}");
        assert!(err.contains("refused"), "{err}");
    }
}

#[test]
fn a_host_that_does_not_resolve_is_a_resolve_failure() {
    let d = tmp();
    // .invalid never resolves (RFC 6761); without DNS at all, the lookup fails or times out —
    // the step is named either way
    let err = export_fails(
        d.path(),
        "postgresql://u:secretpw@no-such-host.invalid/db?connect_timeout=5",
        &["resolve failed", "no-such-host.invalid"],
    );
    assert!(!err.contains("invalid --postgres"), "{err}");
}

#[test]
fn a_server_that_never_answers_times_out_naming_the_step() {
    let d = tmp();
    let silent = Silent::start();
    let p = silent.port;
    // default sslmode (prefer): the TLS request is what goes unanswered
    let err = export_fails(
        d.path(),
        &format!("postgresql://u@127.0.0.1:{p}/db?connect_timeout=2&password=secretpw"),
        &["TLS failed", "did not answer the TLS request within 2 s"],
    );
    assert!(
        !err.contains("authenticate"),
        "prefer fell back after a timeout: {err}"
    );
    // without TLS: the startup message is what goes unanswered
    export_fails(
        d.path(),
        &format!(
            "host=127.0.0.1 port={p} user=u sslmode=disable connect_timeout=2 password=secretpw"
        ),
        &[
            "authenticate failed",
            "did not complete the startup within 2 s",
        ],
    );
    // libpq's floor: connect_timeout=1 means 2 s
    export_fails(
        d.path(),
        &format!("postgresql://u:secretpw@127.0.0.1:{p}/db?sslmode=disable&connect_timeout=1"),
        &["within 2 s"],
    );
}

#[test]
fn without_connect_timeout_a_silent_server_is_given_up_after_the_default() {
    let d = tmp();
    let silent = Silent::start();
    export_fails(
        d.path(),
        &format!("postgresql://u:secretpw@127.0.0.1:{}/db", silent.port),
        &["TLS failed", "within 15 s (connect_timeout)"],
    );
}

#[test]
fn several_hosts_are_tried_in_order_and_each_failure_is_listed() {
    let d = tmp();
    let (a, b) = (closed_port(), closed_port());
    export_fails(
        d.path(),
        &format!("postgresql://u:secretpw@127.0.0.1:{a},127.0.0.1:{b}/db"),
        &[
            "no server answered",
            &format!("127.0.0.1:{a}: connect failed"),
            &format!("127.0.0.1:{b}: connect failed"),
        ],
    );
}

#[test]
fn strings_that_do_not_parse_are_invalid_postgres_and_masked() {
    let d = tmp();
    for (url, why) in [
        (
            "postgresql://u@h/db?sslmode=sometimes&password=secretpw",
            "sslmode=sometimes",
        ),
        (
            "postgresql://u:secretpw@h/db?connect_timeout=soon",
            "connect_timeout=soon",
        ),
        (
            "postgresql://u@h/db?sslcert=c.pem&sslpassword=keypass99&password=secretpw",
            "sslcert= is not supported",
        ),
        (
            "postgresql://u:secretpw@h/db?colour=blue",
            "unknown parameter 'colour'",
        ),
        // libpq's names are lower case: another case is an unknown parameter, still masked
        (
            "postgresql://u@h/db?sslmode=disable&PASSWORD=secretpw",
            "unknown parameter 'PASSWORD'",
        ),
        ("host=h password='secretpw", "no closing quote"),
        (
            "postgresql://u:secretpw@h/db?sslrootcert=system&sslmode=require",
            "needs sslmode=verify-full",
        ),
    ] {
        export_fails(d.path(), url, &["invalid --postgres", why]);
    }
}

#[test]
fn tls_settings_that_cannot_work_are_refused_before_sending_anything() {
    let d = tmp();
    let silent = Silent::start();
    let p = silent.port;
    // verify-ca without root certificates: libpq refuses it too
    export_fails(
        d.path(),
        &format!("postgresql://u:secretpw@127.0.0.1:{p}/db?sslmode=verify-ca"),
        &["TLS failed", "verify-ca needs root certificates"],
    );
    let missing = d.path().join("no-such-ca.pem");
    export_fails(
        d.path(),
        &format!(
            "postgresql://u:secretpw@127.0.0.1:{p}/db?sslmode=verify-full&sslrootcert={}",
            missing.display()
        ),
        &["TLS failed", "cannot read it"],
    );
    std::fs::write(d.path().join("empty.pem"), "not a certificate\n").unwrap();
    export_fails(
        d.path(),
        &format!(
            "postgresql://u:secretpw@127.0.0.1:{p}/db?sslmode=require&sslrootcert={}",
            d.path().join("empty.pem").display()
        ),
        &["TLS failed", "no certificate in it"],
    );
}

#[test]
fn keywords_are_refused_as_table_names_before_connecting() {
    let d = tmp();
    let rel = release(d.path());
    let port = closed_port();
    for table in ["select", "user", "public.table", "order"] {
        fails(
            d.path(),
            &[
                "export",
                &rel,
                "--postgres",
                &format!("postgresql://u@127.0.0.1:{port}/db"),
                "--table",
                table,
            ],
            &["invalid --table", "is a PostgreSQL keyword"],
        );
    }
}

#[test]
fn an_unknown_index_or_a_measure_of_the_other_payload_is_refused_before_connecting() {
    let d = tmp();
    let rel = release(d.path());
    let url = format!("postgresql://u@127.0.0.1:{}/db", closed_port());
    let base = ["export", &rel, "--postgres", &url, "--table", "t"];
    let err = fails(
        d.path(),
        &[&base[..], &["--index", "ivf"]].concat(),
        &[
            "invalid --index",
            "unknown index 'ivf' (expected hnsw or none)",
        ],
    );
    assert!(!err.contains("connect"), "{err}");
    let err = fails(
        d.path(),
        &[&base[..], &["--measure", "hamming"]].concat(),
        &["--measure"],
    );
    assert!(!err.contains("connect"), "{err}");
    // power: with the index and measure accepted, the same command does reach the network
    fails(
        d.path(),
        &[&base[..], &["--index", "hnsw", "--measure", "cosine"]].concat(),
        &["connect"],
    );
}
