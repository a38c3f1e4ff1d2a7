//! A PostgreSQL session for `dprp export`, opened step by step so that a failure names its step
//! and no step waits forever:
//!
//! 1. **resolve** the host name (skipped for an IP address, a `hostaddr` or a socket directory);
//! 2. **connect** to each address in turn (TCP, or the socket `DIR/.s.PGSQL.PORT`);
//! 3. **TLS** (TCP only, as libpq: never over a unix socket): the SSLRequest and the server's
//!    answer, then the handshake ([`super::tls`]), as `sslmode` asks — `prefer` falls back to a
//!    plain connection when the server declines or the handshake fails, `allow` tries plain
//!    first;
//! 4. **authenticate**: the startup message and the authentication exchange (tokio-postgres).
//!
//! Steps 2–4 of one address share one deadline, `connect_timeout` (libpq's meaning: per host and
//! address; default [`super::conninfo::DEFAULT_CONNECT_TIMEOUT`] where libpq waits forever), and
//! resolution has its own. Every wait also polls `check_cancel` (Ctrl-C from Python) every
//! 100 ms. After connecting, statements have no deadline (an HNSW build may take minutes); a
//! server that stops answering is found by TCP keepalives, on by default as in libpq.
//!
//! The session runs on its own single-threaded tokio runtime; dropping it closes the connection,
//! and the server rolls back an open transaction.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use tokio::runtime::Runtime;
use tokio_postgres::tls::{MakeTlsConnect, NoTls, TlsConnect};
use tokio_postgres::{Client, Config};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::conninfo::{ChannelBinding, ConnInfo, SslMode, Target};
use super::tls;
use crate::error::{Error, Result};

/// How often a wait checks for cancellation.
const POLL: Duration = Duration::from_millis(100);

/// The step of an export that failed, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Resolving the host name.
    Resolve,
    /// Opening the TCP connection or the socket.
    Connect,
    /// The SSLRequest and the TLS handshake.
    Tls,
    /// The startup message and authentication.
    Authenticate,
    /// `CREATE EXTENSION vector`.
    Extension,
    /// `DROP TABLE` (`--replace`).
    Drop,
    /// `CREATE TABLE`.
    CreateTable,
    /// Loading the rows.
    Copy,
    /// Storing the stamp as the table's comment.
    Stamp,
    /// Building the HNSW index.
    Index,
    /// `BEGIN` / `COMMIT`.
    Commit,
}

impl Step {
    /// The step's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Step::Resolve => "resolve",
            Step::Connect => "connect",
            Step::Tls => "TLS",
            Step::Authenticate => "authenticate",
            Step::Extension => "CREATE EXTENSION vector",
            Step::Drop => "DROP TABLE",
            Step::CreateTable => "CREATE TABLE",
            Step::Copy => "COPY",
            Step::Stamp => "COMMENT ON TABLE",
            Step::Index => "CREATE INDEX",
            Step::Commit => "COMMIT",
        }
    }
}

/// One failed attempt: its step and what happened.
struct Failure {
    step: Step,
    msg: String,
    /// The deadline passed (no fallback is tried then: the server is not answering).
    timed_out: bool,
}

fn fail(step: Step, msg: impl Into<String>) -> Failure {
    Failure {
        step,
        msg: msg.into(),
        timed_out: false,
    }
}

/// A step that did not finish within `connect_timeout`.
fn late(step: Step, msg: impl Into<String>) -> Failure {
    Failure {
        timed_out: true,
        ..fail(step, msg)
    }
}

/// An error and its sources, as one line.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        let t = x.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = x.source();
    }
    s
}

/// A database error with the server's message, SQLSTATE, detail and hint; other errors with
/// their sources.
pub fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(d) => {
            let mut s = format!("{} ({})", d.message(), d.code().code());
            if let Some(detail) = d.detail() {
                s.push_str(&format!("; {detail}"));
            }
            if let Some(hint) = d.hint() {
                s.push_str(&format!("; hint: {hint}"));
            }
            s
        }
        None => chain(e),
    }
}

/// An open session.
pub struct Session {
    rt: Option<Runtime>,
    client: Client,
    /// The connection string, redacted, for messages.
    pub target: String,
    secrets: Vec<String>,
}

impl Drop for Session {
    fn drop(&mut self) {
        // don't wait for a name lookup still running in the blocking pool
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Run `fut` to completion on `rt`, checking `cancel` every [`POLL`]; `Ok(None)` when
/// `deadline` passes first.
fn drive<T>(
    rt: &Runtime,
    fut: impl Future<Output = T>,
    deadline: Option<Instant>,
    cancel: &dyn Fn() -> Result<()>,
) -> Result<Option<T>> {
    rt.block_on(async {
        let mut fut = std::pin::pin!(fut);
        loop {
            let slice = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()).min(POLL),
                None => POLL,
            };
            match tokio::time::timeout(slice, fut.as_mut()).await {
                Ok(v) => return Ok(Some(v)),
                Err(_) => {
                    cancel()?;
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(None);
                    }
                }
            }
        }
    })
}

/// "within 15 s (connect_timeout)".
fn within(info: &ConnInfo) -> String {
    match info.connect_timeout {
        Some(t) => format!("within {} s (connect_timeout)", t.as_secs()),
        None => "(connect_timeout=0: no limit)".into(),
    }
}

/// A TLS connector that notes when its handshake completed, so that a later failure is known to
/// be authentication's.
struct Marked<T> {
    inner: T,
    done: Arc<AtomicBool>,
}

impl<S, T> TlsConnect<S> for Marked<T>
where
    T: TlsConnect<S>,
    T::Future: Send + 'static,
    T::Stream: 'static,
    T::Error: 'static,
{
    type Stream = T::Stream;
    type Error = T::Error;
    type Future = Pin<Box<dyn Future<Output = std::result::Result<T::Stream, T::Error>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        let done = self.done;
        let f = self.inner.connect(stream);
        Box::pin(async move {
            let r = f.await;
            if r.is_ok() {
                done.store(true, Ordering::SeqCst);
            }
            r
        })
    }
}

/// tokio-postgres's configuration for the startup message (who, which database); TLS and
/// addresses are handled here.
fn startup_config(info: &ConnInfo, tls_direct: bool) -> Config {
    let mut c = Config::new();
    c.user(&info.user);
    if let Some(p) = &info.password {
        c.password(p);
    }
    if let Some(d) = &info.dbname {
        c.dbname(d);
    }
    if let Some(o) = &info.options {
        c.options(o);
    }
    if let Some(a) = &info.application_name {
        c.application_name(a);
    }
    c.channel_binding(match info.channel_binding {
        ChannelBinding::Disable => tokio_postgres::config::ChannelBinding::Disable,
        ChannelBinding::Prefer => tokio_postgres::config::ChannelBinding::Prefer,
        ChannelBinding::Require => tokio_postgres::config::ChannelBinding::Require,
    });
    if tls_direct {
        // the stream is already past the SSLRequest (or direct): TLS from its first byte
        c.ssl_mode(tokio_postgres::config::SslMode::Require);
        c.ssl_negotiation(tokio_postgres::config::SslNegotiation::Direct);
    } else {
        c.ssl_mode(tokio_postgres::config::SslMode::Disable);
    }
    c
}

/// The startup and authentication over an established plain stream.
fn startup_plain<S>(
    rt: &Runtime,
    info: &ConnInfo,
    stream: S,
    deadline: Option<Instant>,
    cancel: &dyn Fn() -> Result<()>,
) -> Result<std::result::Result<Client, Failure>>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let config = startup_config(info, false);
    match drive(rt, config.connect_raw(stream, NoTls), deadline, cancel)? {
        None => Ok(Err(late(
            Step::Authenticate,
            format!(
                "the server accepted the connection but did not complete the startup {}",
                within(info)
            ),
        ))),
        Some(Err(e)) => Ok(Err(fail(Step::Authenticate, describe(&e)))),
        Some(Ok((client, connection))) => {
            rt.spawn(async move {
                let _ = connection.await;
            });
            Ok(Ok(client))
        }
    }
}

/// Ask for TLS (SSLRequest) on `stream`: `Ok(true)` if the server agreed.
async fn ssl_request(stream: &mut TcpStream) -> std::io::Result<u8> {
    // length 8, code 80877103 (1234 << 16 | 5679)
    stream
        .write_all(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f])
        .await?;
    let mut answer = [0u8];
    stream.read_exact(&mut answer).await?;
    Ok(answer[0])
}

/// The outcome of a TLS attempt on one connection.
enum TlsOutcome {
    /// Connected and authenticated.
    Done(Client),
    /// The server declined TLS (`N`); the stream is usable for a plain startup.
    Declined(TcpStream),
    /// The attempt failed at this step.
    Failed(Failure),
}

/// SSLRequest (unless direct), handshake, startup over TLS.
fn startup_tls(
    rt: &Runtime,
    info: &ConnInfo,
    mut stream: TcpStream,
    host: &str,
    checked: &tls::Checked,
    deadline: Option<Instant>,
    cancel: &dyn Fn() -> Result<()>,
) -> Result<TlsOutcome> {
    if !info.tls.direct {
        match drive(rt, ssl_request(&mut stream), deadline, cancel)? {
            None => {
                return Ok(TlsOutcome::Failed(late(
                    Step::Tls,
                    format!(
                        "the server accepted the connection but did not answer the TLS request {}",
                        within(info)
                    ),
                )))
            }
            Some(Err(e)) => {
                return Ok(TlsOutcome::Failed(fail(
                    Step::Tls,
                    format!("the TLS request failed: {}", chain(&e)),
                )))
            }
            Some(Ok(b'S')) => {}
            Some(Ok(b'N')) => return Ok(TlsOutcome::Declined(stream)),
            Some(Ok(other)) => {
                return Ok(TlsOutcome::Failed(fail(
                    Step::Tls,
                    format!(
                        "unexpected answer {:?} to the TLS request: is this a PostgreSQL server?",
                        other as char
                    ),
                )))
            }
        }
    }
    let mut make = MakeRustlsConnect::new(checked.config.clone());
    let connector =
        <MakeRustlsConnect as MakeTlsConnect<TcpStream>>::make_tls_connect(&mut make, host)
            .map_err(|e| Error::param("‹postgres›", format!("host {host}: {e}")))?;
    let done = Arc::new(AtomicBool::new(false));
    let marked = Marked {
        inner: connector,
        done: done.clone(),
    };
    let config = startup_config(info, true);
    let r = drive(rt, config.connect_raw(stream, marked), deadline, cancel)?;
    let handshake = done.load(Ordering::SeqCst);
    Ok(match r {
        None if handshake => TlsOutcome::Failed(late(
            Step::Authenticate,
            format!(
                "the server completed TLS but not the startup {}",
                within(info)
            ),
        )),
        None => TlsOutcome::Failed(late(
            Step::Tls,
            format!("the TLS handshake did not complete {}", within(info)),
        )),
        Some(Err(e)) if handshake => TlsOutcome::Failed(fail(Step::Authenticate, describe(&e))),
        Some(Err(e)) => TlsOutcome::Failed(fail(
            Step::Tls,
            format!("{} ({})", describe(&e), checked.how),
        )),
        Some(Ok((client, connection))) => {
            rt.spawn(async move {
                let _ = connection.await;
            });
            TlsOutcome::Done(client)
        }
    })
}

/// TCP options: keepalives (as libpq, on unless `keepalives=0`) and `tcp_user_timeout`.
fn tune(stream: &TcpStream, info: &ConnInfo) {
    let sock = socket2::SockRef::from(stream);
    let _ = sock.set_tcp_nodelay(true);
    let k = &info.keepalives;
    if k.on {
        let mut ka = socket2::TcpKeepalive::new();
        if let Some(t) = k.idle {
            ka = ka.with_time(t);
        }
        if let Some(t) = k.interval {
            ka = ka.with_interval(t);
        }
        if let Some(n) = k.count {
            ka = ka.with_retries(n);
        }
        let _ = sock.set_tcp_keepalive(&ka);
    }
    if let Some(t) = info.tcp_user_timeout {
        let _ = sock.set_tcp_user_timeout(Some(t));
    }
}

/// One TCP address: connect, then TLS and startup as `sslmode` says.
fn attempt_tcp(
    rt: &Runtime,
    info: &ConnInfo,
    target: &Target,
    addr: SocketAddr,
    checked: Option<&tls::Checked>,
    cancel: &dyn Fn() -> Result<()>,
) -> Result<std::result::Result<Client, Failure>> {
    let open = |deadline: Option<Instant>| -> Result<std::result::Result<TcpStream, Failure>> {
        Ok(
            match drive(rt, TcpStream::connect(addr), deadline, cancel)? {
                None => Err(late(
                    Step::Connect,
                    format!("{addr} did not accept the connection {}", within(info)),
                )),
                Some(Err(e)) => Err(fail(Step::Connect, format!("{addr}: {e}"))),
                Some(Ok(s)) => {
                    tune(&s, info);
                    Ok(s)
                }
            },
        )
    };
    let deadline = || info.connect_timeout.map(|t| Instant::now() + t);
    let with_tls = |deadline: Option<Instant>, stream: TcpStream| -> Result<TlsOutcome> {
        match checked {
            Some(c) => startup_tls(rt, info, stream, &target.host, c, deadline, cancel),
            None => Err(Error::param("‹postgres›", "TLS is not configured")),
        }
    };
    match info.tls.mode {
        SslMode::Disable => {
            let d = deadline();
            match open(d)? {
                Ok(s) => startup_plain(rt, info, s, d, cancel),
                Err(f) => Ok(Err(f)),
            }
        }
        SslMode::Allow => {
            let d = deadline();
            let plain = match open(d)? {
                Ok(s) => startup_plain(rt, info, s, d, cancel)?,
                Err(f) => return Ok(Err(f)),
            };
            match plain {
                // the server refused the plain connection: try again with TLS
                Err(f) if f.step == Step::Authenticate && !f.timed_out => {
                    let d = deadline();
                    let s = match open(d)? {
                        Ok(s) => s,
                        Err(f) => return Ok(Err(f)),
                    };
                    Ok(match with_tls(d, s)? {
                        TlsOutcome::Done(c) => Ok(c),
                        TlsOutcome::Declined(_) => Err(f),
                        TlsOutcome::Failed(f2) => Err(f2),
                    })
                }
                other => Ok(other),
            }
        }
        SslMode::Prefer => {
            let d = deadline();
            let s = match open(d)? {
                Ok(s) => s,
                Err(f) => return Ok(Err(f)),
            };
            match with_tls(d, s)? {
                TlsOutcome::Done(c) => Ok(Ok(c)),
                TlsOutcome::Declined(s) => startup_plain(rt, info, s, d, cancel),
                // libpq: a failed TLS attempt is retried without TLS on a new connection
                TlsOutcome::Failed(f) if f.step == Step::Tls && !f.timed_out => {
                    let d = deadline();
                    match open(d)? {
                        Ok(s) => startup_plain(rt, info, s, d, cancel),
                        Err(f) => Ok(Err(f)),
                    }
                }
                TlsOutcome::Failed(f) => Ok(Err(f)),
            }
        }
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
            let d = deadline();
            let s = match open(d)? {
                Ok(s) => s,
                Err(f) => return Ok(Err(f)),
            };
            Ok(match with_tls(d, s)? {
                TlsOutcome::Done(c) => Ok(c),
                TlsOutcome::Declined(_) => Err(fail(
                    Step::Tls,
                    format!(
                        "the server does not support TLS (sslmode={} requires it)",
                        info.tls.mode.name()
                    ),
                )),
                TlsOutcome::Failed(f) => Err(f),
            })
        }
    }
}

/// One target: its addresses (resolved when needed), each tried in turn.
fn attempt(
    rt: &Runtime,
    info: &ConnInfo,
    target: &Target,
    checked: Option<&tls::Checked>,
    cancel: &dyn Fn() -> Result<()>,
) -> Result<std::result::Result<Client, Vec<Failure>>> {
    if target.is_socket() {
        let path = std::path::Path::new(&target.host).join(format!(".s.PGSQL.{}", target.port));
        let d = info.connect_timeout.map(|t| Instant::now() + t);
        let stream = match drive(rt, UnixStream::connect(&path), d, cancel)? {
            None => {
                return Ok(Err(vec![late(
                    Step::Connect,
                    format!(
                        "{} did not accept the connection {}",
                        path.display(),
                        within(info)
                    ),
                )]))
            }
            Some(Err(e)) => {
                return Ok(Err(vec![fail(
                    Step::Connect,
                    format!("{}: {e}", path.display()),
                )]))
            }
            Some(Ok(s)) => s,
        };
        // libpq never uses TLS over a unix socket, whatever sslmode says
        return Ok(startup_plain(rt, info, stream, d, cancel)?.map_err(|f| vec![f]));
    }
    let addrs: Vec<SocketAddr> = match target.addr {
        Some(ip) => vec![SocketAddr::new(ip, target.port)],
        None => {
            let d = info.connect_timeout.map(|t| Instant::now() + t);
            let host = target.host.clone();
            let lookup = tokio::net::lookup_host((host, target.port));
            match drive(rt, lookup, d, cancel)? {
                None => {
                    return Ok(Err(vec![late(
                        Step::Resolve,
                        format!("host name {} did not resolve {}", target.host, within(info)),
                    )]))
                }
                Some(Err(e)) => {
                    return Ok(Err(vec![fail(
                        Step::Resolve,
                        format!("cannot resolve host name {}: {e}", target.host),
                    )]))
                }
                Some(Ok(a)) => a.collect(),
            }
        }
    };
    let mut failures = Vec::new();
    for addr in addrs {
        match attempt_tcp(rt, info, target, addr, checked, cancel)? {
            Ok(c) => return Ok(Ok(c)),
            Err(f) => failures.push(f),
        }
    }
    if failures.is_empty() {
        failures.push(fail(
            Step::Resolve,
            format!("host name {} has no address", target.host),
        ));
    }
    Ok(Err(failures))
}

impl Session {
    /// Connect as `info` says; `target` is the connection string redacted (for messages).
    pub fn open(info: &ConnInfo, target: String, cancel: &dyn Fn() -> Result<()>) -> Result<Self> {
        let secrets = info.secrets();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| Error::database(&target, "start", format!("no async runtime: {e}")))?;
        let needs_tls =
            info.tls.mode != SslMode::Disable && info.targets.iter().any(|t| !t.is_socket());
        let checked =
            if needs_tls {
                Some(tls::client_config(&info.tls).map_err(|e| {
                    Error::database(&target, Step::Tls.name(), scrub_all(&e, &secrets))
                })?)
            } else {
                None
            };
        let mut failures = Vec::new();
        for t in &info.targets {
            match attempt(&rt, info, t, checked.as_ref(), cancel) {
                Ok(Ok(client)) => {
                    return Ok(Session {
                        rt: Some(rt),
                        client,
                        target,
                        secrets,
                    })
                }
                Ok(Err(f)) => failures.extend(f.into_iter().map(|f| (t, f))),
                Err(e) => {
                    rt.shutdown_background();
                    return Err(e);
                }
            }
        }
        rt.shutdown_background();
        let err = match failures.as_slice() {
            [(_, f)] => Error::database(&target, f.step.name(), scrub_all(&f.msg, &secrets)),
            many => {
                let step = many.last().map_or("connect", |(_, f)| f.step.name());
                let list: Vec<String> = many
                    .iter()
                    .map(|(t, f)| {
                        format!("{}:{}: {} failed: {}", t.host, t.port, f.step.name(), f.msg)
                    })
                    .collect();
                Error::database(
                    &target,
                    step,
                    scrub_all(
                        &format!("no server answered: {}", list.join("; ")),
                        &secrets,
                    ),
                )
            }
        };
        Err(err)
    }

    /// The error of `step`, scrubbed of secrets.
    pub fn error(&self, step: Step, msg: impl AsRef<str>) -> Error {
        Error::database(
            &self.target,
            step.name(),
            scrub_all(msg.as_ref(), &self.secrets),
        )
    }

    /// Run `f` (given the client) to completion, checking `cancel` meanwhile.
    pub fn run<'a, T, F, Fut>(&'a self, f: F, cancel: &dyn Fn() -> Result<()>) -> Result<T>
    where
        F: FnOnce(&'a Client) -> Fut,
        Fut: Future<Output = T> + 'a,
    {
        let rt = self
            .rt
            .as_ref()
            .ok_or_else(|| self.error(Step::Commit, "the session is closed"))?;
        match drive(rt, f(&self.client), None, cancel)? {
            Some(v) => Ok(v),
            None => Err(self.error(Step::Commit, "timed out")),
        }
    }

    /// `sql` (statements without results); the server's error as it came, for the caller to
    /// name.
    pub fn execute(
        &self,
        sql: &str,
        cancel: &dyn Fn() -> Result<()>,
    ) -> Result<std::result::Result<(), tokio_postgres::Error>> {
        self.run(|c| c.batch_execute(sql), cancel)
    }
}

fn scrub_all(msg: &str, secrets: &[String]) -> String {
    super::redact::scrub(msg, secrets)
}
