//! PostgreSQL connection strings as libpq reads them — a URL
//! (`postgresql://user:password@host:port,host2/dbname?key=value&…`) or `key=value` pairs
//! (`host=/run/postgresql user=me password='a b'`) — parsed into what `dprp export` needs
//! ([`ConnInfo`]).
//!
//! The parsing follows libpq's documented syntax (PostgreSQL 16, "Connection Strings" and
//! "Parameter Key Words"): the URL's user information ends at the first `@` or `/`; hosts are a
//! comma-separated list (`[v6]:port` for IPv6, a host beginning with `/` being a socket
//! directory); URL components and query values are percent-decoded; `key=value` values may be
//! single-quoted, with `\` escaping the next character; a parameter given twice takes its last
//! value; `ssl=true` in a URL means `sslmode=require`. Parameters libpq knows that dprp does not
//! implement (client certificates, Kerberos, service files, …) are refused by name rather than
//! ignored; libpq's environment variables and password file are not read.
//!
//! [`ConnInfo::secrets`] lists the decoded passwords, so that text from elsewhere (the driver,
//! the operating system) can be scrubbed of them ([`super::redact::scrub`]); the string itself is
//! shown through [`super::redact::redact`].

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// libpq's default port.
pub const DEFAULT_PORT: u16 = 5432;
/// How long dprp waits for each address to accept a connection, answer the TLS request and
/// authenticate, when the connection string sets no `connect_timeout` (libpq waits forever).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// libpq's floor on `connect_timeout`: smaller positive values mean 2 s.
const MIN_CONNECT_TIMEOUT: u64 = 2;

/// `sslmode`, as libpq documents it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// Without TLS first; with TLS if the server refuses the plain connection.
    Allow,
    /// With TLS when the server offers it (libpq's default), else without.
    Prefer,
    /// TLS, the certificate not checked (unless a root certificate is at hand: then its chain).
    Require,
    /// TLS, the certificate chain checked against the root certificates.
    VerifyCa,
    /// TLS, the chain and the host name checked.
    VerifyFull,
}

impl SslMode {
    /// The value as written in a connection string.
    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// Where the root certificates come from (`sslrootcert`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCert {
    /// Not given: `~/.postgresql/root.crt` if it exists (libpq's default), else the system's
    /// roots for `verify-full`.
    Default,
    /// A PEM file of certificates.
    File(PathBuf),
    /// `sslrootcert=system`: the operating system's trusted roots.
    System,
}

/// One server to try: a host name, an IP address or a socket directory, and a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// As given (for messages, name resolution and the TLS server name).
    pub host: String,
    /// `hostaddr`: the address to connect to, skipping name resolution.
    pub addr: Option<IpAddr>,
    /// The port (also the socket file's suffix, `.s.PGSQL.<port>`).
    pub port: u16,
}

impl Target {
    /// Whether the host is a unix-domain socket directory.
    pub fn is_socket(&self) -> bool {
        self.addr.is_none() && self.host.starts_with('/')
    }
}

/// The TLS settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    /// `sslmode` (default `prefer`).
    pub mode: SslMode,
    /// `sslrootcert`.
    pub root: RootCert,
    /// `sslnegotiation=direct`: TLS from the first byte (PostgreSQL ≥ 17), no SSLRequest.
    pub direct: bool,
    /// `sslsni` (default on): send the host name in the handshake.
    pub sni: bool,
    /// `ssl_min_protocol_version=TLSv1.3`: refuse TLS 1.2.
    pub tls13_only: bool,
    /// `ssl_max_protocol_version=TLSv1.2`: refuse TLS 1.3.
    pub tls12_only: bool,
}

/// TCP keepalives (`keepalives`, `keepalives_idle`, `keepalives_interval`, `keepalives_count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalives {
    /// On unless `keepalives=0`.
    pub on: bool,
    /// Seconds of silence before the first probe (the system's default when `None`).
    pub idle: Option<Duration>,
    /// Seconds between probes.
    pub interval: Option<Duration>,
    /// Probes before the connection is considered dead.
    pub count: Option<u32>,
}

/// `channel_binding`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelBinding {
    /// Never.
    Disable,
    /// When TLS and the server allow it (the default).
    Prefer,
    /// Always: fail without it.
    Require,
}

/// A parsed connection string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnInfo {
    /// The servers, tried in order.
    pub targets: Vec<Target>,
    /// `user`.
    pub user: String,
    /// `password`.
    pub password: Option<String>,
    /// `dbname` (the server's default: the user name).
    pub dbname: Option<String>,
    /// `options` (command-line options sent to the server).
    pub options: Option<String>,
    /// `application_name` (or `fallback_application_name`).
    pub application_name: Option<String>,
    /// `connect_timeout` per address; `None` waits indefinitely (`connect_timeout=0`).
    pub connect_timeout: Option<Duration>,
    /// `tcp_user_timeout`.
    pub tcp_user_timeout: Option<Duration>,
    /// TCP keepalives.
    pub keepalives: Keepalives,
    /// TLS.
    pub tls: Tls,
    /// `channel_binding`.
    pub channel_binding: ChannelBinding,
}

/// Parameters libpq knows that dprp does not implement, with what to do instead.
const UNSUPPORTED: &[(&str, &str)] = &[
    ("sslcert", "client certificates are not supported"),
    ("sslkey", "client certificates are not supported"),
    ("sslpassword", "client certificates are not supported"),
    ("sslcertmode", "client certificates are not supported"),
    ("sslcrl", "certificate revocation lists are not supported"),
    (
        "sslcrldir",
        "certificate revocation lists are not supported",
    ),
    ("sslcompression", "TLS compression is not supported"),
    ("requiressl", "write sslmode=require"),
    ("requirepeer", "peer credentials are not checked"),
    (
        "require_auth",
        "authentication methods cannot be restricted",
    ),
    ("krbsrvname", "Kerberos (GSSAPI) is not supported"),
    ("gsslib", "Kerberos (GSSAPI) is not supported"),
    ("gssdelegation", "Kerberos (GSSAPI) is not supported"),
    (
        "service",
        "service files are not read: write the parameters out",
    ),
    ("passfile", "password files are not read: give password="),
    ("replication", "replication connections are not supported"),
];

/// Parse a connection string (URL or `key=value` form). The error says what is wrong, without
/// the string itself (the caller prints it redacted).
pub fn parse(s: &str) -> Result<ConnInfo, String> {
    let params = match url_rest(s) {
        Some(rest) => url_params(rest)?,
        None => kv_params(s)?,
    };
    build(&params)
}

/// `key → value` in order of appearance (later ones win), decoded.
type Params = Vec<(String, String)>;

/// The part after `postgresql://` or `postgres://`, if `s` is a URL.
pub(super) fn url_rest(s: &str) -> Option<&str> {
    let t = s.trim_start();
    ["postgresql://", "postgres://"]
        .iter()
        .find_map(|p| t.strip_prefix(p))
}

/// Percent-decoding (`%XX`), strict as libpq: a `%` not followed by two hex digits is an error.
fn decode(s: &str, what: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(v) => {
                    out.push(v);
                    i += 3;
                }
                None => return Err(format!("invalid percent-encoding in the {what}")),
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("the {what} is not UTF-8 once percent-decoded"))
}

/// The URL form's parameters, in libpq's order: user information, hosts and ports, database,
/// then the query's parameters.
fn url_params(rest: &str) -> Result<Params, String> {
    let mut p = Params::new();
    // user information: up to the first '@', unless a '/' comes first (libpq)
    let rest = match rest.find(['@', '/']) {
        Some(i) if rest.as_bytes()[i] == b'@' => {
            let (user, password) = match rest[..i].split_once(':') {
                Some((u, pw)) => (u, Some(pw)),
                None => (&rest[..i], None),
            };
            if !user.is_empty() {
                p.push(("user".into(), decode(user, "user name")?));
            }
            if let Some(pw) = password {
                p.push(("password".into(), decode(pw, "password")?));
            }
            &rest[i + 1..]
        }
        _ => rest,
    };
    let host_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let hosts = &rest[..host_end];
    if !hosts.is_empty() {
        let (mut names, mut ports) = (Vec::new(), Vec::new());
        for chunk in hosts.split(',') {
            let (host, port) = if let Some(v6) = chunk.strip_prefix('[') {
                let close = v6
                    .find(']')
                    .ok_or_else(|| format!("host '{chunk}': '[' without ']'"))?;
                let after = &v6[close + 1..];
                let port = match after.strip_prefix(':') {
                    Some(port) => port,
                    None if after.is_empty() => "",
                    None => return Err(format!("host '{chunk}': unexpected text after ']'")),
                };
                (v6[..close].to_string(), port)
            } else {
                match chunk.split_once(':') {
                    Some((h, port)) => (decode(h, "host")?, port),
                    None => (decode(chunk, "host")?, ""),
                }
            };
            names.push(host);
            ports.push(decode(port, "port")?);
        }
        p.push(("host".into(), names.join(",")));
        if ports.iter().any(|x| !x.is_empty()) {
            p.push(("port".into(), ports.join(",")));
        }
    }
    let mut rest = &rest[host_end..];
    if let Some(path) = rest.strip_prefix('/') {
        let end = path.find('?').unwrap_or(path.len());
        if end > 0 {
            p.push(("dbname".into(), decode(&path[..end], "database name")?));
        }
        rest = &path[end..];
    }
    if let Some(query) = rest.strip_prefix('?') {
        for pair in query.split('&').filter(|x| !x.is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| format!("parameter '{}' has no '='", decode_lossy(pair)))?;
            let key = decode(k, "parameter name")?;
            let value = decode(v, &format!("value of {key}"))?;
            // JDBC's ssl=true, which libpq takes as sslmode=require
            if key == "ssl" {
                if value != "true" {
                    return Err(format!("ssl={value}: libpq takes only ssl=true"));
                }
                p.push(("sslmode".into(), "require".into()));
            } else {
                p.push((key, value));
            }
        }
    }
    Ok(p)
}

pub(super) fn decode_lossy(s: &str) -> String {
    decode(s, "").unwrap_or_else(|_| s.to_string())
}

/// One `key=value` token: key, value, and the value's byte range in the string (raw, with its
/// quotes).
pub(super) struct KvToken {
    pub(super) key: std::ops::Range<usize>,
    pub(super) value: Option<std::ops::Range<usize>>,
    decoded: String,
}

/// The `key=value` tokens of `s`, leniently (a missing `=` or an unterminated quote ends the
/// scan), and the first syntax error met.
pub(super) fn kv_tokens(s: &str) -> (Vec<KvToken>, Option<String>) {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    loop {
        skip_ws(&mut i);
        if i >= b.len() {
            return (out, None);
        }
        let k0 = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'=' {
            i += 1;
        }
        let key = k0..i;
        skip_ws(&mut i);
        if i >= b.len() || b[i] != b'=' {
            let msg = format!("'{}' is not followed by '='", &s[key.clone()]);
            out.push(KvToken {
                key,
                value: None,
                decoded: String::new(),
            });
            return (out, Some(msg));
        }
        i += 1;
        skip_ws(&mut i);
        let v0 = i;
        let mut decoded = Vec::new();
        let mut error = None;
        if i < b.len() && b[i] == b'\'' {
            i += 1;
            loop {
                match b.get(i) {
                    None => {
                        error = Some(format!(
                            "the quoted value of {} has no closing quote",
                            &s[key.clone()]
                        ));
                        break;
                    }
                    Some(b'\'') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') if i + 1 < b.len() => {
                        decoded.push(b[i + 1]);
                        i += 2;
                    }
                    Some(&c) => {
                        decoded.push(c);
                        i += 1;
                    }
                }
            }
        } else {
            while i < b.len() && !b[i].is_ascii_whitespace() {
                if b[i] == b'\\' && i + 1 < b.len() {
                    decoded.push(b[i + 1]);
                    i += 2;
                } else {
                    decoded.push(b[i]);
                    i += 1;
                }
            }
        }
        out.push(KvToken {
            key,
            value: Some(v0..i),
            decoded: String::from_utf8_lossy(&decoded).into_owned(),
        });
        if error.is_some() {
            return (out, error);
        }
    }
}

fn kv_params(s: &str) -> Result<Params, String> {
    let (tokens, error) = kv_tokens(s);
    if let Some(e) = error {
        return Err(e);
    }
    Ok(tokens
        .into_iter()
        .map(|t| (s[t.key].to_string(), t.decoded))
        .collect())
}

fn seconds(key: &str, v: &str) -> Result<Option<Duration>, String> {
    let n: i64 = v
        .trim()
        .parse()
        .map_err(|_| format!("{key}={v}: expected a whole number of seconds"))?;
    Ok((n > 0).then(|| Duration::from_secs(n as u64)))
}

fn one_of<T: Copy>(key: &str, v: &str, choices: &[(&str, T)]) -> Result<T, String> {
    choices
        .iter()
        .find(|(name, _)| *name == v)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
            format!("{key}={v}: expected {}", names.join(", "))
        })
}

/// The parameters dprp reads (libpq's names).
const KNOWN: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "connect_timeout",
    "options",
    "application_name",
    "fallback_application_name",
    "sslmode",
    "sslrootcert",
    "sslnegotiation",
    "sslsni",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "channel_binding",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "target_session_attrs",
    "gssencmode",
    "load_balance_hosts",
];

/// The last value of each parameter.
type Last<'a> = std::collections::BTreeMap<&'a str, &'a str>;

/// TCP keepalives, as libpq's parameters set them.
fn keepalives(last: &Last<'_>) -> Result<Keepalives, String> {
    let get = |k: &str| last.get(k).copied();
    Ok(Keepalives {
        on: match get("keepalives") {
            None => true,
            Some(v) => {
                v.trim()
                    .parse::<i64>()
                    .map_err(|_| format!("keepalives={v}: expected 1 (on) or 0 (off)"))?
                    != 0
            }
        },
        idle: get("keepalives_idle")
            .map(|v| seconds("keepalives_idle", v))
            .transpose()?
            .flatten(),
        interval: get("keepalives_interval")
            .map(|v| seconds("keepalives_interval", v))
            .transpose()?
            .flatten(),
        count: get("keepalives_count")
            .map(|v| {
                v.trim()
                    .parse::<u32>()
                    .map_err(|_| format!("keepalives_count={v}: expected a whole number"))
            })
            .transpose()?,
    })
}

/// Values of known parameters that dprp does not implement.
fn refuse_unsupported_values(last: &Last<'_>) -> Result<(), String> {
    let get = |k: &str| last.get(k).copied();
    if let Some(v) = get("target_session_attrs").filter(|v| *v != "any") {
        return Err(format!(
            "target_session_attrs={v} is not supported by dprp export (only any): name the \
             primary server"
        ));
    }
    if let Some(v) = get("gssencmode").filter(|v| !["disable", "prefer"].contains(v)) {
        return Err(format!(
            "gssencmode={v}: Kerberos (GSSAPI) encryption is not supported by dprp export \
             (disable or prefer; use sslmode for TLS)"
        ));
    }
    if let Some(v) = get("load_balance_hosts").filter(|v| *v != "disable") {
        return Err(format!(
            "load_balance_hosts={v} is not supported by dprp export (hosts are tried in order)"
        ));
    }
    Ok(())
}

/// The parameters checked and gathered.
fn build(params: &Params) -> Result<ConnInfo, String> {
    let mut last = Last::new();
    for (k, v) in params {
        if let Some((_, why)) = UNSUPPORTED.iter().find(|(u, _)| u == k) {
            return Err(format!("{k}= is not supported by dprp export ({why})"));
        }
        last.insert(k.as_str(), v.as_str());
    }
    let get = |k: &str| last.get(k).copied();
    if let Some(k) = last.keys().find(|k| !KNOWN.contains(k)) {
        return Err(format!("unknown parameter '{k}'"));
    }
    let user = match get("user") {
        Some(u) if !u.is_empty() => u.to_string(),
        _ => return Err("no user name: give one as postgresql://USER@host/db or user=USER".into()),
    };
    let targets = targets(get("host"), get("hostaddr"), get("port"))?;
    let connect_timeout = match get("connect_timeout") {
        None => Some(DEFAULT_CONNECT_TIMEOUT),
        Some(v) => {
            seconds("connect_timeout", v)?.map(|d| d.max(Duration::from_secs(MIN_CONNECT_TIMEOUT)))
        }
    };
    let tls = tls(&last)?;
    let channel_binding = match get("channel_binding") {
        None => ChannelBinding::Prefer,
        Some(v) => one_of(
            "channel_binding",
            v,
            &[
                ("disable", ChannelBinding::Disable),
                ("prefer", ChannelBinding::Prefer),
                ("require", ChannelBinding::Require),
            ],
        )?,
    };
    let keepalives = keepalives(&last)?;
    let tcp_user_timeout = match get("tcp_user_timeout") {
        None => None,
        Some(v) => {
            let ms: i64 = v
                .trim()
                .parse()
                .map_err(|_| format!("tcp_user_timeout={v}: expected milliseconds"))?;
            (ms > 0).then(|| Duration::from_millis(ms as u64))
        }
    };
    refuse_unsupported_values(&last)?;
    Ok(ConnInfo {
        targets,
        user,
        password: get("password").map(str::to_string),
        dbname: get("dbname").filter(|d| !d.is_empty()).map(str::to_string),
        options: get("options").map(str::to_string),
        application_name: get("application_name")
            .or(get("fallback_application_name"))
            .map(str::to_string),
        connect_timeout,
        tcp_user_timeout,
        keepalives,
        tls,
        channel_binding,
    })
}

/// The hosts, their `hostaddr`s and ports, as libpq pairs them: one port for all, or one each.
fn targets(
    host: Option<&str>,
    hostaddr: Option<&str>,
    port: Option<&str>,
) -> Result<Vec<Target>, String> {
    let split = |v: Option<&str>| -> Vec<String> {
        v.filter(|v| !v.is_empty())
            .map(|v| v.split(',').map(|x| x.trim().to_string()).collect())
            .unwrap_or_default()
    };
    let hosts = split(host);
    let addrs = split(hostaddr);
    let ports = split(port);
    let n = hosts.len().max(addrs.len());
    if n == 0 {
        return Err(
            "no host: give one as postgresql://user@HOST/db, ?host=/socket/directory or host=HOST"
                .into(),
        );
    }
    if !hosts.is_empty() && !addrs.is_empty() && hosts.len() != addrs.len() {
        return Err(format!(
            "{} hosts but {} hostaddr values: give one address per host",
            hosts.len(),
            addrs.len()
        ));
    }
    if ports.len() > 1 && ports.len() != n {
        return Err(format!(
            "{n} hosts but {} ports: give one port, or one per host",
            ports.len()
        ));
    }
    (0..n)
        .map(|i| {
            let addr = match addrs.get(i).filter(|a| !a.is_empty()) {
                Some(a) => Some(
                    a.parse::<IpAddr>()
                        .map_err(|_| format!("hostaddr={a}: not an IP address"))?,
                ),
                None => None,
            };
            let host = match hosts.get(i).filter(|h| !h.is_empty()) {
                Some(h) => h.clone(),
                None => match addr {
                    Some(a) => a.to_string(),
                    None => return Err("an empty host in the host list".to_string()),
                },
            };
            let port = match ports.get(if ports.len() == 1 { 0 } else { i }) {
                None => DEFAULT_PORT,
                Some(p) if p.is_empty() => DEFAULT_PORT,
                Some(p) => match p.parse::<u16>() {
                    Ok(v) if v > 0 => v,
                    _ => return Err(format!("port {p}: expected a number from 1 to 65535")),
                },
            };
            Ok(Target { host, addr, port })
        })
        .collect()
}

fn tls(last: &Last<'_>) -> Result<Tls, String> {
    let get = |k: &str| last.get(k).copied();
    let given = get("sslmode")
        .map(|v| {
            one_of(
                "sslmode",
                v,
                &[
                    ("disable", SslMode::Disable),
                    ("allow", SslMode::Allow),
                    ("prefer", SslMode::Prefer),
                    ("require", SslMode::Require),
                    ("verify-ca", SslMode::VerifyCa),
                    ("verify-full", SslMode::VerifyFull),
                ],
            )
        })
        .transpose()?;
    let root = match get("sslrootcert") {
        None | Some("") => RootCert::Default,
        Some("system") => RootCert::System,
        Some(path) => RootCert::File(PathBuf::from(path)),
    };
    // libpq (PostgreSQL 16): sslrootcert=system implies verify-full and refuses a weaker mode,
    // which would accept any certificate a public authority issued
    let mode = match (given, &root) {
        (None, RootCert::System) => SslMode::VerifyFull,
        (Some(m), RootCert::System) if m != SslMode::VerifyFull => {
            return Err(format!(
                "sslrootcert=system needs sslmode=verify-full, not {}: checking a certificate \
                 against the system's public roots without its host name would accept any \
                 certificate a public authority issued",
                m.name()
            ))
        }
        (m, _) => m.unwrap_or(SslMode::Prefer),
    };
    let direct = match get("sslnegotiation") {
        None | Some("postgres") => false,
        Some("direct") => true,
        Some(v) => return Err(format!("sslnegotiation={v}: expected postgres or direct")),
    };
    if direct && matches!(mode, SslMode::Disable | SslMode::Allow | SslMode::Prefer) {
        return Err(format!(
            "sslnegotiation=direct needs sslmode=require, verify-ca or verify-full, not {}",
            mode.name()
        ));
    }
    let sni = match get("sslsni") {
        None | Some("1") => true,
        Some("0") => false,
        Some(v) => return Err(format!("sslsni={v}: expected 1 or 0")),
    };
    let version = |k: &str| -> Result<Option<u8>, String> {
        match get(k) {
            None | Some("") => Ok(None),
            Some("TLSv1") => Ok(Some(10)),
            Some("TLSv1.1") => Ok(Some(11)),
            Some("TLSv1.2") => Ok(Some(12)),
            Some("TLSv1.3") => Ok(Some(13)),
            Some(v) => Err(format!(
                "{k}={v}: expected TLSv1, TLSv1.1, TLSv1.2 or TLSv1.3"
            )),
        }
    };
    let min = version("ssl_min_protocol_version")?;
    let max = version("ssl_max_protocol_version")?;
    if max.is_some_and(|m| m < 12) {
        return Err(
            "ssl_max_protocol_version below TLSv1.2: dprp speaks TLS 1.2 and 1.3 only".into(),
        );
    }
    if let (Some(a), Some(b)) = (min, max) {
        if a > b {
            return Err("ssl_min_protocol_version is above ssl_max_protocol_version".into());
        }
    }
    Ok(Tls {
        mode,
        root,
        direct,
        sni,
        tls13_only: min == Some(13),
        tls12_only: max == Some(12),
    })
}

impl ConnInfo {
    /// The secrets of the connection string (its passwords), decoded, for [`super::redact::scrub`].
    pub fn secrets(&self) -> Vec<String> {
        self.password.iter().cloned().collect()
    }
}

#[cfg(test)]
#[path = "conninfo_tests.rs"]
mod tests;
