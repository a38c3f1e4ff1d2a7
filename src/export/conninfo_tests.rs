//! Tests of [`super`]: connection strings read as libpq reads them, and refused with the reason.

use super::*;

#[test]
fn url_parts_are_read_as_libpq_reads_them() {
    let c = parse("postgresql://me:p%40ss@db.example:6000/items?sslmode=require").unwrap();
    assert_eq!(c.user, "me");
    assert_eq!(c.password.as_deref(), Some("p@ss"));
    assert_eq!(c.dbname.as_deref(), Some("items"));
    assert_eq!(
        c.targets,
        vec![Target {
            host: "db.example".into(),
            addr: None,
            port: 6000
        }]
    );
    assert_eq!(c.tls.mode, SslMode::Require);
    assert_eq!(c.connect_timeout, Some(DEFAULT_CONNECT_TIMEOUT));
    // socket directory in the query, several hosts, IPv6, per-host ports
    let c = parse("postgres://u@/db?host=/var/run/postgresql").unwrap();
    assert!(c.targets[0].is_socket() && c.targets[0].host == "/var/run/postgresql");
    assert_eq!(c.targets[0].port, DEFAULT_PORT);
    let c = parse("postgresql://u@a:1,[::1]:2,b/db").unwrap();
    let t: Vec<(&str, u16)> = c.targets.iter().map(|t| (&t.host[..], t.port)).collect();
    assert_eq!(t, [("a", 1), ("::1", 2), ("b", DEFAULT_PORT)]);
    let c = parse("postgresql://u@%2Ftmp%2Fsock/db").unwrap();
    assert_eq!(c.targets[0].host, "/tmp/sock");
    // ssl=true (JDBC) is sslmode=require; a later parameter wins
    assert_eq!(
        parse("postgresql://u@h/d?ssl=true").unwrap().tls.mode,
        SslMode::Require
    );
    assert_eq!(
        parse("postgresql://u@h/d?sslmode=disable&sslmode=verify-full")
            .unwrap()
            .tls
            .mode,
        SslMode::VerifyFull
    );
}

#[test]
fn key_value_form_with_quotes_and_escapes() {
    let c =
        parse(r"host=h port=5433 user=me password='a b\'c' dbname = d  connect_timeout=1").unwrap();
    assert_eq!(c.password.as_deref(), Some("a b'c"));
    assert_eq!((c.targets[0].port, c.dbname.as_deref()), (5433, Some("d")));
    // below libpq's floor of 2 s
    assert_eq!(c.connect_timeout, Some(Duration::from_secs(2)));
    assert_eq!(
        parse("host=h user=u connect_timeout=0")
            .unwrap()
            .connect_timeout,
        None
    );
    let c = parse("host=h,h2 hostaddr=10.0.0.1,::1 user=u port=1,2").unwrap();
    assert_eq!(c.targets[1].addr, Some("::1".parse().unwrap()));
    assert_eq!(c.targets[1].port, 2);
}

#[test]
fn bad_strings_say_what_is_wrong() {
    for (s, want) in [
        (
            "postgresql://u@h/d?sslmode=sometimes",
            "sslmode=sometimes: expected",
        ),
        (
            "postgresql://u@h/d?connect_timeout=soon",
            "connect_timeout=soon",
        ),
        ("postgresql://u@h/d?foo=1", "unknown parameter 'foo'"),
        (
            "postgresql://u@h/d?sslcert=c.pem",
            "sslcert= is not supported",
        ),
        ("postgresql://h/d", "no user name"),
        ("postgresql://u@/d", "no host"),
        ("postgresql://u@h:99999/d", "port 99999"),
        ("postgresql://u@h/d%zz", "percent-encoding"),
        ("host=h user='u", "no closing quote"),
        ("host=h user", "not followed by '='"),
        (
            "postgresql://u@h/d?sslrootcert=system&sslmode=require",
            "verify-full",
        ),
        (
            "postgresql://u@h/d?sslnegotiation=direct",
            "sslnegotiation=direct needs",
        ),
        ("host=a,b user=u port=1,2,3", "2 hosts but 3 ports"),
        ("host=a user=u hostaddr=not-an-ip", "hostaddr=not-an-ip"),
    ] {
        let e = parse(s).unwrap_err();
        assert!(e.contains(want), "{s}: {e}");
    }
}

#[test]
fn tls_settings() {
    let c = parse("postgresql://u@h/d?sslrootcert=system").unwrap();
    assert_eq!(
        (c.tls.mode, c.tls.root),
        (SslMode::VerifyFull, RootCert::System)
    );
    let c = parse("postgresql://u@h/d?sslmode=verify-ca&sslrootcert=%2Fca.pem").unwrap();
    assert_eq!(c.tls.root, RootCert::File("/ca.pem".into()));
    assert_eq!(parse("host=h user=u").unwrap().tls.mode, SslMode::Prefer);
    let c = parse("host=h user=u ssl_min_protocol_version=TLSv1.3 sslsni=0").unwrap();
    assert!(c.tls.tls13_only && !c.tls.sni);
    assert!(parse("host=h user=u ssl_max_protocol_version=TLSv1.1").is_err());
}
