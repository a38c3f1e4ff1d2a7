//! `dprp export RELEASE --postgres URL --table T`: a release loaded into PostgreSQL with pgvector.
//!
//! Everything happens in one transaction, so that a failed or interrupted export leaves no table
//! (nor a half-filled one): `CREATE EXTENSION IF NOT EXISTS vector`; with `replace`, `DROP TABLE`;
//! `CREATE TABLE T (id bigint PRIMARY KEY, label real, sketch vector(k) | bit(k))`; the rows by
//! `COPY … FROM STDIN (FORMAT binary)`; the release's [`Stamp`] as the table's comment; an HNSW
//! index when asked for; `COMMIT`. A process killed midway closes its connection, and the server
//! rolls the open transaction back.
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

use std::io::Write;

use postgres::{Client, NoTls, Transaction};

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
    /// `?host=/path`).
    pub url: String,
    /// The table: `name` or `schema.name`, lower-case letters, digits and `_`.
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

/// The table name checked: `name` or `schema.name`, each part a lower-case SQL identifier (so that
/// it needs no quoting and means the same in every client). `option` names the option.
pub fn check_table_name(table: &str, option: &str) -> Result<()> {
    let parts: Vec<&str> = table.split('.').collect();
    let ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 63
            && s.bytes()
                .next()
                .is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    if parts.len() > 2 || !parts.iter().all(|p| ok(p)) {
        return Err(Error::param(
            option,
            format!(
                "'{table}' is not a table name dprp accepts: use `name` or `schema.name` made of \
                 lower-case letters, digits and _ (starting with a letter or _), at most 63 \
                 characters each"
            ),
        ));
    }
    Ok(())
}

/// The connection string with any password replaced by `***`, for messages.
pub fn redact(url: &str) -> String {
    // URL form: scheme://user:password@host…
    if let Some(scheme_end) = url.find("://") {
        let rest = &url[scheme_end + 3..];
        if let Some(at) = rest.find('@') {
            if let Some(colon) = rest[..at].find(':') {
                return format!(
                    "{}{}:***{}",
                    &url[..scheme_end + 3],
                    &rest[..colon],
                    &rest[at..]
                );
            }
        }
        return url.to_string();
    }
    // key=value form
    url.split_whitespace()
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
            _ => kv.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A database error with the server's message, detail and hint when it sent them.
fn db_error(what: &str, e: postgres::Error) -> Error {
    let text = match e.as_db_error() {
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
        None => e.to_string(),
    };
    Error::param("--postgres", format!("{what}: {text}"))
}

/// Connect to `url` (no TLS: a local socket or a trusted network), refusing with the reason.
pub fn connect(url: &str) -> Result<Client> {
    Client::connect(url, NoTls).map_err(|e| {
        let mut msg = format!("cannot connect to {}: {e}", redact(url));
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            msg.push_str(&format!(": {s}"));
            src = s.source();
        }
        Error::param("--postgres", msg)
    })
}

/// Check what the export needs of the release before connecting: the measure fits the payload,
/// the width fits pgvector, the index fits its limits.
fn check(set: &ReleaseSet, o: &ExportOptions) -> Result<()> {
    check_table_name(&o.table, "--table")?;
    let k = set.k();
    let bits = set.meta().payload == Payload::Bits;
    match (bits, o.measure) {
        (true, Measure::Hamming) | (false, Measure::Ip | Measure::Cosine) => {}
        (true, _) => {
            return Err(Error::param(
                "--measure",
                "a sign release is searched by hamming (bit(k) column)",
            ))
        }
        (false, _) => {
            return Err(Error::param(
                "--measure",
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
            "--index",
            format!(
                "pgvector's HNSW index takes at most {limit} dimensions for this column type; the \
                 release has k = {k} (export without --index hnsw and search exactly)"
            ),
        ));
    }
    Ok(())
}

/// Load `set` into the table `o.table` of the database at `o.url` in one transaction.
/// `check_cancel` is called between chunks of rows; an error it returns aborts the export (the
/// transaction is rolled back).
pub fn export(
    set: &ReleaseSet,
    o: &ExportOptions,
    check_cancel: &dyn Fn() -> Result<()>,
) -> Result<Exported> {
    check(set, o)?;
    let start = std::time::Instant::now();
    let mut client = connect(&o.url)?;
    let mut tx = client
        .transaction()
        .map_err(|e| db_error("cannot start a transaction", e))?;
    create(&mut tx, set, o)?;
    let copy_start = std::time::Instant::now();
    copy_rows(&mut tx, set, &o.table, check_cancel)?;
    let copy_seconds = copy_start.elapsed().as_secs_f64();
    let stamp = Stamp::of(set, o.measure);
    tx.batch_execute(&format!(
        "COMMENT ON TABLE {} IS {}",
        o.table,
        literal(&stamp.to_json())
    ))
    .map_err(|e| db_error("cannot store the release's fingerprint", e))?;
    if o.hnsw {
        check_cancel()?;
        let ops = match o.measure {
            Measure::Ip => "vector_ip_ops",
            Measure::Cosine => "vector_cosine_ops",
            Measure::Hamming => "bit_hamming_ops",
        };
        tx.batch_execute(&format!(
            "CREATE INDEX ON {} USING hnsw (sketch {ops})",
            o.table
        ))
        .map_err(|e| db_error("cannot build the HNSW index", e))?;
    }
    check_cancel()?;
    tx.commit()
        .map_err(|e| db_error("cannot commit the export", e))?;
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

/// The extension and the (new, or replacing) table.
fn create(tx: &mut Transaction<'_>, set: &ReleaseSet, o: &ExportOptions) -> Result<()> {
    let bits = set.meta().payload == Payload::Bits;
    if !bits {
        tx.batch_execute("CREATE EXTENSION IF NOT EXISTS vector")
            .map_err(|e| {
                db_error(
                    "the server has no pgvector extension (install pgvector on it, or ask its \
                     administrator to run CREATE EXTENSION vector)",
                    e,
                )
            })?;
    } else if o.hnsw {
        tx.batch_execute("CREATE EXTENSION IF NOT EXISTS vector")
            .map_err(|e| db_error("an HNSW index on bit(k) needs pgvector ≥ 0.7", e))?;
    }
    if o.replace {
        tx.batch_execute(&format!("DROP TABLE IF EXISTS {}", o.table))
            .map_err(|e| db_error(&format!("cannot drop table {}", o.table), e))?;
    }
    let column = if bits { "bit" } else { "vector" };
    tx.batch_execute(&format!(
        "CREATE TABLE {} (id bigint PRIMARY KEY, label real, sketch {column}({}) NOT NULL)",
        o.table,
        set.k()
    ))
    .map_err(|e| {
        let exists = e
            .as_db_error()
            .is_some_and(|d| d.code() == &postgres::error::SqlState::DUPLICATE_TABLE);
        if exists {
            Error::param(
                "--table",
                format!(
                    "table {} already exists; choose another name, or --replace to drop it and \
                     load this release in its place (in one transaction)",
                    o.table
                ),
            )
        } else {
            db_error(&format!("cannot create table {}", o.table), e)
        }
    })
}

/// Every row of every part through binary COPY.
fn copy_rows(
    tx: &mut Transaction<'_>,
    set: &ReleaseSet,
    table: &str,
    check_cancel: &dyn Fn() -> Result<()>,
) -> Result<()> {
    let mut w = tx
        .copy_in(&format!(
            "COPY {table} (id, label, sketch) FROM STDIN (FORMAT binary)"
        ))
        .map_err(|e| db_error("cannot start COPY", e))?;
    let mut buf = Vec::with_capacity(CHUNK_BYTES + 64 * 1024);
    buf.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
    buf.extend_from_slice(&0i32.to_be_bytes());
    buf.extend_from_slice(&0i32.to_be_bytes());
    let send = |w: &mut dyn Write, buf: &mut Vec<u8>| -> Result<()> {
        w.write_all(buf)
            .map_err(|e| Error::param("--postgres", format!("COPY failed: {e}")))?;
        buf.clear();
        Ok(())
    };
    for part in set.parts() {
        let labels = part.labels();
        for i in 0..part.n() {
            encode_row(&mut buf, part, i, labels)?;
            if buf.len() >= CHUNK_BYTES {
                check_cancel()?;
                send(&mut w, &mut buf)?;
            }
        }
    }
    buf.extend_from_slice(&(-1i16).to_be_bytes());
    send(&mut w, &mut buf)?;
    w.finish()
        .map_err(|e| db_error("the server refused the rows", e))?;
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
    fn table_names_are_plain_lower_case_identifiers() {
        for ok in ["t", "docs_2", "public.docs", "_x.y1"] {
            check_table_name(ok, "--table").unwrap();
        }
        for bad in [
            "",
            "Docs",
            "a.b.c",
            "1t",
            "t;drop table x",
            "a b",
            "t\"",
            ".t",
        ] {
            let e = check_table_name(bad, "--table").unwrap_err().to_string();
            assert!(
                e.contains("--table") && e.contains("lower-case"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn passwords_are_not_repeated_in_messages() {
        assert_eq!(
            redact("postgresql://u:secret@h:5/db"),
            "postgresql://u:***@h:5/db"
        );
        assert_eq!(redact("postgresql://u@h/db"), "postgresql://u@h/db");
        assert_eq!(
            redact("host=/tmp user=u password=secret"),
            "host=/tmp user=u password=***"
        );
    }

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
