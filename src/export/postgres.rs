//! `dprp export RELEASE --postgres URL --table T`: a release loaded into PostgreSQL with pgvector.
//!
//! Everything happens in one transaction, so that a failed or interrupted export leaves no table
//! (nor a half-filled one): `CREATE EXTENSION IF NOT EXISTS vector`; with `replace`, `DROP TABLE`;
//! `CREATE TABLE T (id bigint PRIMARY KEY, label real, sketch vector(k) | bit(k))`; the rows by
//! `COPY … FROM STDIN (FORMAT binary)`; the release's [`Stamp`] as the table's comment; an HNSW
//! index when asked for; `COMMIT`. A process killed midway closes its connection, and the server
//! rolls the open transaction back. The extension is created for sign releases too: the Hamming
//! operator `<~>` that searches a `bit(k)` column is pgvector's.
//!
//! A failure names its step ([`Step`]: resolve, connect, TLS, authenticate, then the statement)
//! as an [`Error::Database`] with the connection string redacted; "invalid --postgres" is kept
//! for a connection string that does not parse.
//!
//! Real sketches go to pgvector's `vector(k)` (inner product `<#>`, cosine `<=>`); sign sketches to
//! PostgreSQL's own `bit(k)`, bit `i` of the string being sign `i` of the sketch (`1` = positive),
//! searched by Hamming distance (pgvector's `<~>`, `bit_hamming_ops` for HNSW). Rankings by these
//! operators are the same as `dprp query`'s exact search on the release; the debiased estimates
//! with standard errors come from dprp's re-ranking ([`crate::search::rerank`]).
//!
//! Binary COPY: the header `PGCOPY\n\xff\r\n\0`, flags and extension length (0, 0), then per row
//! the field count and each field as a length-prefixed big-endian value: `int8`, `float4` (or
//! length −1 for NULL), pgvector's `vector` (`int16` dim, `int16` 0, dim `float4`s), or `varbit`
//! (`int32` bit length, the bits packed most significant first); the trailer `-1` (`int16`).

use bytes::Bytes;
use futures_util::SinkExt;
use tokio_postgres::error::SqlState;

use super::connect::{describe, Session, Step};
use super::conninfo::{self, ConnInfo};
pub use super::names::check_table_name;
pub use super::redact::redact;
use super::Stamp;
use crate::error::{Error, Result};
use crate::mechanism::Payload;
use crate::release::{Release, ReleaseSet};
use crate::search::Measure;

/// pgvector's largest `vector` dimension.
pub const VECTOR_MAX_DIM: usize = 16_000;
/// pgvector's largest dimension an HNSW index takes: `vector`, `bit`.
pub const HNSW_MAX_DIM: (usize, usize) = (2_000, 64_000);
/// Bytes of COPY data sent at a time.
const CHUNK_BYTES: usize = 1 << 20;

/// What to export where.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// A libpq connection string or URL (`postgresql://user@host/db`, a socket directory as
    /// `?host=/path`; TLS by `sslmode`, [`super::tls`]).
    pub url: String,
    /// The table: `name` or `schema.name`, lower-case letters, digits and `_`, not a keyword.
    pub table: String,
    /// Drop a table of that name first (in the same transaction).
    pub replace: bool,
    /// Build an HNSW index for `measure`.
    pub hnsw: bool,
    /// The measure the table is searched (and indexed) by.
    pub measure: Measure,
}

/// What an export did.
#[derive(Debug, Clone)]
pub struct Exported {
    /// The stamp stored with the table.
    pub stamp: Stamp,
    /// Whether an HNSW index was built.
    pub hnsw: bool,
    /// Seconds spent loading rows (COPY), and in all (with the index and the commit).
    pub copy_seconds: f64,
    /// Seconds from connecting to the commit.
    pub total_seconds: f64,
}

/// The connection string parsed; a string that does not parse is refused as `--postgres`, shown
/// redacted.
pub fn parse_url(url: &str) -> Result<ConnInfo> {
    conninfo::parse(url).map_err(|e| {
        Error::param(
            "‹postgres›",
            format!(
                "{} is not a connection string dprp can use: {e}",
                redact(url)
            ),
        )
    })
}

/// Check what the export needs of the release before connecting: the measure fits the payload,
/// the width fits pgvector, the index fits its limits.
fn check(set: &ReleaseSet, o: &ExportOptions) -> Result<()> {
    check_table_name(&o.table, "‹table›")?;
    let k = set.k();
    let bits = set.meta().payload == Payload::Bits;
    match (bits, o.measure) {
        (true, Measure::Hamming) | (false, Measure::Ip | Measure::Cosine) => {}
        (true, _) => {
            return Err(Error::param(
                "‹measure›",
                "a sign release is searched by hamming (bit(k) column)",
            ))
        }
        (false, _) => {
            return Err(Error::param(
                "‹measure›",
                "a real-valued release is searched by ip or cosine (vector(k) column)",
            ))
        }
    }
    if !bits && k > VECTOR_MAX_DIM {
        return Err(Error::param(
            "release",
            format!("k = {k} exceeds pgvector's vector limit of {VECTOR_MAX_DIM} dimensions"),
        ));
    }
    let limit = if bits { HNSW_MAX_DIM.1 } else { HNSW_MAX_DIM.0 };
    if o.hnsw && k > limit {
        return Err(Error::param(
            "‹index›",
            format!(
                "pgvector's HNSW index takes at most {limit} dimensions for this column type; the \
                 release has k = {k} (export without ‹index hnsw› and search exactly)"
            ),
        ));
    }
    Ok(())
}

/// Load `set` into the table `o.table` of the database at `o.url` in one transaction.
/// `check_cancel` is called while waiting and between chunks of rows; an error it returns aborts
/// the export (the connection is closed, and the server rolls the transaction back).
pub fn export(
    set: &ReleaseSet,
    o: &ExportOptions,
    check_cancel: &dyn Fn() -> Result<()>,
) -> Result<Exported> {
    check(set, o)?;
    let info = parse_url(&o.url)?;
    let start = std::time::Instant::now();
    let s = Session::open(&info, redact(&o.url), check_cancel)?;
    let run = |step: Step, sql: &str| -> Result<()> {
        s.execute(sql, check_cancel)?
            .map_err(|e| s.error(step, describe(&e)))
    };
    run(Step::Commit, "BEGIN")?;
    create(&s, set, o, check_cancel)?;
    let copy_start = std::time::Instant::now();
    copy_rows(&s, set, &o.table, check_cancel)?;
    let copy_seconds = copy_start.elapsed().as_secs_f64();
    let stamp = Stamp::of(set, o.measure);
    run(
        Step::Stamp,
        &format!(
            "COMMENT ON TABLE {} IS {}",
            o.table,
            literal(&stamp.to_json())
        ),
    )?;
    if o.hnsw {
        check_cancel()?;
        let ops = match o.measure {
            Measure::Ip => "vector_ip_ops",
            Measure::Cosine => "vector_cosine_ops",
            Measure::Hamming => "bit_hamming_ops",
        };
        run(
            Step::Index,
            &format!("CREATE INDEX ON {} USING hnsw (sketch {ops})", o.table),
        )?;
    }
    check_cancel()?;
    run(Step::Commit, "COMMIT")?;
    Ok(Exported {
        stamp,
        hnsw: o.hnsw,
        copy_seconds,
        total_seconds: start.elapsed().as_secs_f64(),
    })
}

/// A string literal: single quotes doubled (standard_conforming_strings, on since PostgreSQL 9.1).
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The extension (always: the Hamming operator `<~>` of a sign table is pgvector's too) and the
/// (new, or replacing) table.
fn create(
    s: &Session,
    set: &ReleaseSet,
    o: &ExportOptions,
    cancel: &dyn Fn() -> Result<()>,
) -> Result<()> {
    let bits = set.meta().payload == Payload::Bits;
    s.execute("CREATE EXTENSION IF NOT EXISTS vector", cancel)?
        .map_err(|e| {
            let why = if bits {
                "pgvector ≥ 0.7 is needed for the Hamming operator <~> that searches a sign \
                 table (install pgvector on the server, or ask its administrator to run CREATE \
                 EXTENSION vector in this database)"
            } else {
                "the server has no pgvector extension (install pgvector on it, or ask its \
                 administrator to run CREATE EXTENSION vector in this database)"
            };
            s.error(Step::Extension, format!("{why}: {}", describe(&e)))
        })?;
    if o.replace {
        s.execute(&format!("DROP TABLE IF EXISTS {}", o.table), cancel)?
            .map_err(|e| s.error(Step::Drop, format!("table {}: {}", o.table, describe(&e))))?;
    }
    let column = if bits { "bit" } else { "vector" };
    let sql = format!(
        "CREATE TABLE {} (id bigint PRIMARY KEY, label real, sketch {column}({}) NOT NULL)",
        o.table,
        set.k()
    );
    s.execute(&sql, cancel)?.map_err(|e| match e.code() {
        Some(c) if c == &SqlState::DUPLICATE_TABLE => Error::param(
            "‹table›",
            format!(
                "table {} already exists; choose another name, or ‹replace› to drop it and load \
                 this release in its place (in one transaction)",
                o.table
            ),
        ),
        // a keyword of a newer server than dprp's list knows
        Some(c) if c == &SqlState::SYNTAX_ERROR => Error::param(
            "‹table›",
            format!(
                "the server's SQL does not take {} as a table name ({}); choose another name",
                o.table,
                describe(&e)
            ),
        ),
        _ => s.error(
            Step::CreateTable,
            format!("table {}: {}", o.table, describe(&e)),
        ),
    })
}

/// Every row of every part through binary COPY.
fn copy_rows(
    s: &Session,
    set: &ReleaseSet,
    table: &str,
    check_cancel: &dyn Fn() -> Result<()>,
) -> Result<()> {
    let stmt = format!("COPY {table} (id, label, sketch) FROM STDIN (FORMAT binary)");
    let sink = s
        .run(|c| c.copy_in::<_, Bytes>(stmt.as_str()), check_cancel)?
        .map_err(|e| s.error(Step::Copy, describe(&e)))?;
    let mut sink = Box::pin(sink);
    let capacity = CHUNK_BYTES + 64 * 1024;
    let mut buf = Vec::with_capacity(capacity);
    buf.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
    buf.extend_from_slice(&0i32.to_be_bytes());
    buf.extend_from_slice(&0i32.to_be_bytes());
    for part in set.parts() {
        let labels = part.labels();
        for i in 0..part.n() {
            encode_row(&mut buf, part, i, labels)?;
            if buf.len() >= CHUNK_BYTES {
                check_cancel()?;
                let chunk = Bytes::from(std::mem::replace(&mut buf, Vec::with_capacity(capacity)));
                s.run(|_| sink.send(chunk), check_cancel)?
                    .map_err(|e| s.error(Step::Copy, describe(&e)))?;
            }
        }
    }
    buf.extend_from_slice(&(-1i16).to_be_bytes());
    let chunk = Bytes::from(buf);
    s.run(|_| sink.send(chunk), check_cancel)?
        .map_err(|e| s.error(Step::Copy, describe(&e)))?;
    s.run(|_| sink.as_mut().finish(), check_cancel)?
        .map_err(|e| {
            s.error(
                Step::Copy,
                format!("the server refused the rows: {}", describe(&e)),
            )
        })?;
    Ok(())
}

/// Row `i` of `part` as one binary COPY tuple.
fn encode_row(buf: &mut Vec<u8>, part: &Release, i: usize, labels: Option<&[f32]>) -> Result<()> {
    let id = part.id(i);
    let id = i64::try_from(id).map_err(|_| {
        Error::param(
            "release",
            format!("row id {id} does not fit PostgreSQL's bigint"),
        )
    })?;
    buf.extend_from_slice(&3i16.to_be_bytes());
    buf.extend_from_slice(&8i32.to_be_bytes());
    buf.extend_from_slice(&id.to_be_bytes());
    match labels {
        Some(l) => {
            buf.extend_from_slice(&4i32.to_be_bytes());
            buf.extend_from_slice(&l[i].to_be_bytes());
        }
        None => buf.extend_from_slice(&(-1i32).to_be_bytes()),
    }
    let k = part.k();
    match part.meta().payload {
        Payload::F32 => {
            let row = part.row(i)?;
            buf.extend_from_slice(&((4 + 4 * k) as i32).to_be_bytes());
            buf.extend_from_slice(&(k as i16).to_be_bytes());
            buf.extend_from_slice(&0i16.to_be_bytes());
            for v in row {
                buf.extend_from_slice(&v.to_be_bytes());
            }
        }
        Payload::Bits => {
            let w = k.div_ceil(64);
            let words = &part.bits()?[i * w..(i + 1) * w];
            buf.extend_from_slice(&((4 + k.div_ceil(8)) as i32).to_be_bytes());
            buf.extend_from_slice(&(k as i32).to_be_bytes());
            push_bit_string(buf, words, k);
        }
    }
    Ok(())
}

/// The first `k` bits of `words` (bit `j mod 64` of word `j/64`) packed most significant first,
/// as PostgreSQL's `bit(k)` stores them.
pub fn push_bit_string(buf: &mut Vec<u8>, words: &[u64], k: usize) {
    for byte in 0..k.div_ceil(8) {
        let mut b = 0u8;
        for bit in 0..8 {
            let j = byte * 8 + bit;
            if j < k && (words[j / 64] >> (j % 64)) & 1 == 1 {
                b |= 0x80 >> bit;
            }
        }
        buf.push(b);
    }
}

/// The measure the export is for: `--measure` or the release's default (cosine for real
/// sketches, hamming for signs).
pub fn measure_for(set: &ReleaseSet, given: Option<&str>) -> Result<Measure> {
    Measure::or_default(given, set.meta().payload == Payload::Bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_become_a_bit_string_in_order() {
        // signs 0, 2 and 64 positive of k = 66: bits 1010_0000 … then bit 64 → byte 8, MSB
        let words = [0b101u64, 0b1];
        let mut buf = Vec::new();
        push_bit_string(&mut buf, &words, 66);
        assert_eq!(buf.len(), 9);
        assert_eq!(buf[0], 0b1010_0000);
        assert!(buf[1..8].iter().all(|&b| b == 0));
        assert_eq!(buf[8], 0b1000_0000);
        let literal_of = |b: &[u8]| {
            b.iter()
                .map(|x| format!("{x:08b}"))
                .collect::<String>()
                .chars()
                .take(66)
                .collect::<String>()
        };
        let s = literal_of(&buf);
        assert_eq!(&s[..4], "1010");
        assert_eq!(s.chars().nth(64), Some('1'));
        assert_eq!(s.chars().filter(|&c| c == '1').count(), 3);
    }
}
