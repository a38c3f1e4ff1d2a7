use serde::{Deserialize, Serialize};

use crate::data::Scaling;
use crate::mechanism::{MechanismRecord, Payload};
use crate::privacy::guarantee::Guarantee;

/// Magic bytes of a release.
pub const MAGIC: &[u8; 8] = b"DPRPSKCH";
/// Current release format version.
pub const VERSION: u32 = 1;
/// Size of the fixed header (also the payload offset).
pub const HEADER_LEN: usize = 128;
/// Bytes covered by the checksum at the start of the header.
pub const HASHED_HEADER: usize = 80;

/// Where the secret noise came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseRecord {
    /// `os-csprng` (private) or `user-seed` (reproducible, NOT private).
    pub source: String,
    /// The generator and sampler.
    pub generator: String,
}

/// The metadata block of a release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseMeta {
    /// Release format version.
    pub format_version: u32,
    /// `dprp <version>`.
    pub tool: String,
    /// Creation time, UTC, RFC 3339.
    pub created: String,
    /// Number of rows.
    pub n: u64,
    /// Input dimension p.
    pub p: usize,
    /// Values (or bits) per row.
    pub k: usize,
    /// Payload element type.
    pub payload: Payload,
    /// The mechanism, its projection and calibration.
    pub mechanism: MechanismRecord,
    /// The guarantee the mechanism gives.
    pub guarantee: Guarantee,
    /// Whether the release is private (false when the noise came from a user seed).
    pub private: bool,
    /// The guarantee in one sentence.
    pub statement: String,
    /// Where the noise came from.
    pub noise: NoiseRecord,
    /// Preprocessing applied to the data before publishing.
    pub scaling: Scaling,
    /// Whether labels are stored.
    pub labels: bool,
    /// Whether explicit row ids are stored (otherwise row i has id i).
    pub ids: bool,
    /// The dataset fingerprint, when the release was published with `--ledger`
    /// (see [`crate::ledger`]); absent otherwise, and in releases written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<DatasetRecord>,
    /// Where this file sits in a sharded release (see [`crate::release::shards`]); absent for a
    /// release in one file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardRecord>,
    /// The format the rows were read from (`npy <f8`, `csv`, `parquet`, `python array`, …), so
    /// that an advisory about a reader can name the releases it concerns; absent in releases
    /// written before dprp 0.2.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_format: Option<String>,
}

/// One shard of a sharded release: shard `index` of `count`, holding the rows whose global ids
/// are `first_row, first_row + 1, …` (its noise streams and, for local mechanisms, its per-row
/// public maps are those of these global rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// Position of the shard, from 0.
    pub index: u32,
    /// Shards in the release.
    pub count: u32,
    /// Global id of the shard's first row.
    pub first_row: u64,
}

/// Which dataset a release was made from, as a *keyed* hash (see [`crate::ledger::fingerprint`]).
///
/// The fingerprint is public (it is in the release), the key is not: it stays in the ledger
/// directory of the data holder. A plain hash would let anyone who knows every row but one test a
/// candidate for the last row against it — a keyed hash cannot be computed without the key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatasetRecord {
    /// Keyed BLAKE3 multiset hash of the rows, 64 hex digits.
    pub fingerprint: String,
    /// Identifies the ledger key that made the fingerprint (a hash of the key, never the key):
    /// fingerprints made under different keys cannot be compared.
    pub key_id: String,
    /// What was hashed, in words.
    pub hashed: String,
}

/// Payload kind code in the fixed header.
pub fn payload_code(p: Payload) -> u32 {
    match p {
        Payload::F32 => 0,
        Payload::Bits => 1,
    }
}

/// Bytes per row of the payload.
pub fn row_bytes(p: Payload, k: usize) -> usize {
    // saturating: k may come from the command line before any check of its size
    match p {
        Payload::F32 => k.saturating_mul(4),
        Payload::Bits => k.div_ceil(64).saturating_mul(8),
    }
}

/// Current UTC time as RFC 3339 (seconds precision), without a date-time dependency.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d, rem) = utc_civil(secs);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// `(year, month, day, seconds into the day)` in UTC from Unix seconds (Howard Hinnant's
/// civil-from-days, proleptic Gregorian).
pub fn utc_civil(secs: u64) -> (i64, i64, i64, u64) {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    (y, m, d, rem)
}

/// The fields of the fixed header (all but the checksum).
#[derive(Debug, Clone, Copy)]
pub struct Header {
    /// Payload element type.
    pub payload: Payload,
    /// Rows.
    pub n: u64,
    /// Values (or bits) per row.
    pub k: u64,
    /// Payload bytes (the payload starts at [`HEADER_LEN`]).
    pub payload_len: u64,
    /// Offset of the row ids (0: none).
    pub ids_off: u64,
    /// Offset of the labels (0: none).
    pub labels_off: u64,
    /// Offset of the metadata JSON.
    pub meta_off: u64,
    /// Length of the metadata JSON.
    pub meta_len: u64,
}

/// The fixed header's bytes, with the checksum field zero.
pub fn header(h: &Header) -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    b[0..8].copy_from_slice(MAGIC);
    b[8..12].copy_from_slice(&VERSION.to_le_bytes());
    b[12..16].copy_from_slice(&payload_code(h.payload).to_le_bytes());
    b[16..24].copy_from_slice(&h.n.to_le_bytes());
    b[24..32].copy_from_slice(&h.k.to_le_bytes());
    b[32..40].copy_from_slice(&(HEADER_LEN as u64).to_le_bytes());
    b[40..48].copy_from_slice(&h.payload_len.to_le_bytes());
    b[48..56].copy_from_slice(&h.ids_off.to_le_bytes());
    b[56..64].copy_from_slice(&h.labels_off.to_le_bytes());
    b[64..72].copy_from_slice(&h.meta_off.to_le_bytes());
    b[72..80].copy_from_slice(&h.meta_len.to_le_bytes());
    b
}
