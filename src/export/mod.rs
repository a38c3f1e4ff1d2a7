//! Releases loaded where embeddings are served. A database table that holds a release's sketches
//! carries a [`Stamp`]: the release's fingerprint and shape, so that a query projected for
//! another release (or a table refilled from one) is refused rather than silently compared.
//!
//! - `postgres` (feature `postgres`): `dprp export --postgres` — one transaction, binary COPY into
//!   a pgvector `vector(k)` or a `bit(k)` column, the stamp as the table's comment; over `connect`
//!   (the session, opened step by step with deadlines), [`conninfo`] (libpq's connection
//!   strings), [`redact`] (passwords masked in messages), `tls` (rustls for each `sslmode`) and
//!   [`names`] (the table names accepted). The feature brings tokio, tokio-postgres and rustls.
//!
//! LanceDB needs no code here: it reads the release's Arrow form from Python
//! (`dprp.lancedb`), with the same stamp in the table's schema metadata.

#[cfg(feature = "postgres")]
pub mod connect;
pub mod conninfo;
pub mod names;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod redact;
#[cfg(feature = "postgres")]
pub mod tls;

use serde::{Deserialize, Serialize};

use crate::mechanism::Payload;
use crate::release::ReleaseSet;
use crate::search::Measure;

/// What a table records about the release it holds (JSON, under the key `dprp`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stamp {
    /// The release's fingerprint ([`crate::request::project::fingerprint`]'s 64 hex digits).
    pub fingerprint: String,
    /// Input dimension of the release (of raw queries).
    pub p: usize,
    /// Values, or signs, per row.
    pub k: usize,
    /// `f32` (a `vector(k)` column) or `bits` (a `bit(k)` column).
    pub payload: Payload,
    /// The measure the table was indexed for: `ip`, `cosine` or `hamming`.
    pub measure: String,
    /// Rows exported.
    pub rows: u64,
    /// `dprp <version>` that exported it.
    pub tool: String,
}

impl Stamp {
    /// The stamp of `set` exported for `measure`.
    pub fn of(set: &ReleaseSet, measure: Measure) -> Stamp {
        let meta = set.meta();
        Stamp {
            fingerprint: crate::release::parquet::hex(&set.checksum()),
            p: meta.p,
            k: meta.k,
            payload: meta.payload,
            measure: measure_name(measure).into(),
            rows: set.n() as u64,
            tool: format!("dprp {}", env!("CARGO_PKG_VERSION")),
        }
    }

    /// `{"dprp": {…}}`, the JSON a table carries.
    pub fn to_json(&self) -> String {
        serde_json::json!({ "dprp": self }).to_string()
    }

    /// Check a table's stamp (the object under `dprp`, as read back) against `set`: the same
    /// fingerprint (the table holds this release's sketches), then the same `k` and payload. Every
    /// front end and every database refuses through this check; `place` names the table in the
    /// message (`table 'docs'`, `LanceDB table 'docs'`).
    pub fn check(stamp: &serde_json::Value, set: &ReleaseSet, place: &str) -> crate::Result<()> {
        let ours = crate::release::parquet::hex(&set.checksum());
        let theirs = stamp
            .get("fingerprint")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        let short = |s: &str| s.chars().take(12).collect::<String>();
        if !theirs.eq_ignore_ascii_case(&ours) {
            return Err(crate::Error::param(
                "table",
                format!(
                    "{place} holds the sketches of another release (fingerprint {}…), not of \
                     this one (fingerprint {}…): search it with the release it was exported from",
                    short(theirs),
                    short(&ours)
                ),
            ));
        }
        let meta = set.meta();
        let payload = serde_json::to_value(meta.payload).unwrap_or_default();
        let (k, p) = (stamp.get("k"), stamp.get("payload"));
        if k.and_then(|v| v.as_u64()) != Some(meta.k as u64) || p != Some(&payload) {
            let show = |v: Option<&serde_json::Value>| match v {
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => "no".into(),
            };
            return Err(crate::Error::param(
                "table",
                format!(
                    "{place} holds {} sketches with k = {}; the release has {} sketches with \
                     k = {}",
                    show(p),
                    show(k),
                    show(Some(&payload)),
                    meta.k
                ),
            ));
        }
        Ok(())
    }
}

/// `ip`, `cosine` or `hamming`.
pub fn measure_name(m: Measure) -> &'static str {
    match m {
        Measure::Ip => "ip",
        Measure::Cosine => "cosine",
        Measure::Hamming => "hamming",
    }
}
