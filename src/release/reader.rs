use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::format::*;
use crate::error::{Error, Result};
use crate::mechanism::Payload;

/// The bytes of a release: a native file mapped into memory, or the native image of a Parquet
/// release decoded into memory (8-byte-aligned words and the length in bytes).
enum Bytes {
    Mapped(Mmap),
    Decoded(Vec<u64>, usize),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Decoded(w, len) => &bytemuck::cast_slice::<u64, u8>(w)[..*len],
        }
    }
}

/// A release opened for reading: header and checksum verified, metadata parsed. A native release
/// is memory-mapped and its payload borrowed from the map, never copied; a Parquet release
/// ([`super::parquet`]) is decoded into memory once, on opening.
pub struct Release {
    path: PathBuf,
    map: Bytes,
    meta: ReleaseMeta,
    payload_off: usize,
    payload_len: usize,
    ids_off: usize,
    labels_off: usize,
    verified: std::sync::atomic::AtomicBool,
}

/// Whether the BLAKE3 checksum in the header matches the file (`map`, at least a header long).
fn checksum_matches(map: &[u8]) -> bool {
    let mut hasher = blake3::Hasher::new();
    hasher.update_rayon(&map[HEADER_LEN..]);
    hasher.update(&map[..HASHED_HEADER]);
    hasher.finalize().as_bytes() == &map[80..112]
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

impl Release {
    /// Open, validate and verify the checksum of a release file.
    pub fn open(path: &Path) -> Result<Release> {
        Release::open_with(path, true)
    }

    /// Open and validate a release file, verifying its checksum only when `verify` is true.
    /// Without it, opening reads the header and the metadata only (a 10⁷-row release maps in
    /// milliseconds instead of being read once to hash it); the header, sizes, offsets and
    /// metadata are still checked, so a damaged payload can go unnoticed until
    /// [`verify`](Self::verify) is called.
    pub fn open_with(path: &Path, verify: bool) -> Result<Release> {
        crate::atomic::check_input_file(path)?;
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        if len < HEADER_LEN as u64 {
            if len >= 8 {
                // still say "not a release" for foreign files
                let head = std::fs::read(path).map_err(|e| Error::io(path, e))?;
                if &head[..8] != MAGIC {
                    return Err(Error::format(
                        path,
                        "not a dprp release (wrong magic bytes)",
                    ));
                }
            }
            return Err(Error::corrupt(
                path,
                format!(
                    "file is truncated: {len} bytes, shorter than the {HEADER_LEN}-byte header"
                ),
            ));
        }
        // SAFETY: the map is read-only; dprp never writes a release in place (writes go to a
        // temporary file that is renamed), so the mapped bytes do not change under us unless
        // another program truncates the file, which the checksum check below would then catch
        // only for the part read so far. This is the usual contract of memory-mapped readers.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
        if map.get(..4) == Some(crate::data::parquet::MAGIC.as_slice()) {
            let (words, len) = super::parquet::native_image(path)?;
            return Release::from_bytes(path, Bytes::Decoded(words, len), verify);
        }
        Release::from_bytes(path, Bytes::Mapped(map), verify)
    }

    /// Validate a release's bytes.
    fn from_bytes(path: &Path, map: Bytes, verify: bool) -> Result<Release> {
        let len = map.len() as u64;
        let h = &map[..HEADER_LEN];
        if &h[0..8] != MAGIC {
            return Err(Error::format(
                path,
                "not a dprp release (wrong magic bytes; expected \"DPRPSKCH\")",
            ));
        }
        let version = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
        if version != VERSION {
            return Err(Error::format(
                path,
                format!("unsupported release format version {version} (this dprp reads version {VERSION})"),
            ));
        }
        let code = u32::from_le_bytes([h[12], h[13], h[14], h[15]]);
        let payload = match code {
            0 => Payload::F32,
            1 => Payload::Bits,
            c => return Err(Error::corrupt(path, format!("unknown payload kind {c}"))),
        };
        let n = u64_at(h, 16);
        let k = u64_at(h, 24);
        let payload_off = u64_at(h, 32);
        let payload_len = u64_at(h, 40);
        let ids_off = u64_at(h, 48);
        let labels_off = u64_at(h, 56);
        let meta_off = u64_at(h, 64);
        let meta_len = u64_at(h, 72);
        let bad = |m: String| Err(Error::corrupt(path, m));
        if payload_off != HEADER_LEN as u64 {
            return bad(format!(
                "payload offset {payload_off} (expected {HEADER_LEN})"
            ));
        }
        // In u128 and checked: k and n come from the file, and `k·4·n` overflows u64 (and
        // `row_bytes` overflows usize) for a hostile header.
        let row = match payload {
            Payload::F32 => u128::from(k) * 4,
            Payload::Bits => u128::from(k).div_ceil(64) * 8,
        };
        let expect_payload = row.checked_mul(u128::from(n));
        if usize::try_from(k).is_err() || expect_payload != Some(u128::from(payload_len)) {
            return bad(format!(
                "payload length {payload_len} does not match {n} rows × k = {k}"
            ));
        }
        let payload_end = payload_off.checked_add(payload_len);
        let meta_end = meta_off.checked_add(meta_len);
        if meta_end != Some(len) {
            return bad(format!(
                "file is {len} bytes, but its header says the metadata ends at {}: truncated or extended",
                meta_off as u128 + meta_len as u128
            ));
        }
        let Some(payload_end) = payload_end.filter(|&e| e <= meta_off) else {
            return bad("payload overlaps the metadata".into());
        };
        let side_ok = |off: u64, bytes_per: u64| {
            off == 0
                || (off.is_multiple_of(64)
                    && off >= payload_end
                    && n.checked_mul(bytes_per)
                        .and_then(|b| b.checked_add(off))
                        .is_some_and(|e| e <= meta_off))
        };
        if !side_ok(ids_off, 8) || !side_ok(labels_off, 4) {
            return bad("row-id or label section out of bounds".into());
        }
        if verify && !checksum_matches(&map) {
            return bad("checksum mismatch: the file was modified or damaged".into());
        }
        let meta: ReleaseMeta = serde_json::from_slice(&map[meta_off as usize..])
            .map_err(|e| Error::corrupt(path, format!("bad metadata: {e}")))?;
        if meta.n != n || meta.k as u64 != k || meta.payload != payload {
            return bad("metadata disagrees with the header".into());
        }
        if meta.labels != (labels_off != 0) || meta.ids != (ids_off != 0) {
            return bad("metadata disagrees with the header about labels or ids".into());
        }
        if cfg!(target_endian = "big") {
            return Err(Error::format(
                path,
                "reading releases on big-endian machines is not supported",
            ));
        }
        Ok(Release {
            path: path.to_path_buf(),
            map,
            meta,
            payload_off: payload_off as usize,
            payload_len: payload_len as usize,
            ids_off: ids_off as usize,
            labels_off: labels_off as usize,
            verified: std::sync::atomic::AtomicBool::new(verify),
        })
    }

    /// Verify the checksum now (for a release opened with `verify = false`).
    pub fn verify(&self) -> Result<()> {
        use std::sync::atomic::Ordering;
        if !self.verified.load(Ordering::Acquire) {
            if !checksum_matches(&self.map) {
                return Err(Error::corrupt(
                    &self.path,
                    "checksum mismatch: the file was modified or damaged",
                ));
            }
            self.verified.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Whether the checksum has been verified (always, unless opened with `verify = false` and
    /// [`verify`](Self::verify) not yet called).
    pub fn verified(&self) -> bool {
        self.verified.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether the release was read from Parquet (decoded into memory) rather than mapped from
    /// a native file.
    pub fn is_parquet(&self) -> bool {
        matches!(self.map, Bytes::Decoded(..))
    }

    /// The file this release was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// The BLAKE3 checksum recorded in (and verified against) the header.
    pub fn checksum(&self) -> [u8; 32] {
        let mut c = [0u8; 32];
        c.copy_from_slice(&self.map[80..112]);
        c
    }

    /// The metadata.
    pub fn meta(&self) -> &ReleaseMeta {
        &self.meta
    }
    /// Number of rows.
    pub fn n(&self) -> usize {
        self.meta.n as usize
    }
    /// Values (or bits) per row.
    pub fn k(&self) -> usize {
        self.meta.k
    }

    /// The real-valued payload, `n×k` row-major (memory-mapped, not copied).
    pub fn values(&self) -> Result<&[f32]> {
        if self.meta.payload != Payload::F32 {
            return Err(Error::param(
                "release",
                "this release holds sign bits, not values",
            ));
        }
        bytemuck::try_cast_slice(&self.map[self.payload_off..self.payload_off + self.payload_len])
            .map_err(|e| Error::corrupt(&self.path, format!("payload misaligned: {e}")))
    }

    /// The packed-bit payload, `n×⌈k/64⌉` words.
    pub fn bits(&self) -> Result<&[u64]> {
        if self.meta.payload != Payload::Bits {
            return Err(Error::param(
                "release",
                "this release holds values, not sign bits",
            ));
        }
        bytemuck::try_cast_slice(&self.map[self.payload_off..self.payload_off + self.payload_len])
            .map_err(|e| Error::corrupt(&self.path, format!("payload misaligned: {e}")))
    }

    /// Row `i` of a real-valued release.
    pub fn row(&self, i: usize) -> Result<&[f32]> {
        let k = self.k();
        let v = self.values()?;
        v.get(i * k..(i + 1) * k).ok_or_else(|| {
            Error::param(
                "row",
                format!(
                    "row {i} is out of range (the release has {} rows)",
                    self.n()
                ),
            )
        })
    }

    /// Labels, if stored.
    pub fn labels(&self) -> Option<&[f32]> {
        if self.labels_off == 0 {
            return None;
        }
        bytemuck::try_cast_slice(&self.map[self.labels_off..self.labels_off + 4 * self.n()]).ok()
    }

    /// Id of row `i` (its index in the published input).
    pub fn id(&self, i: usize) -> u64 {
        if self.ids_off == 0 {
            return i as u64;
        }
        let off = self.ids_off + 8 * i;
        self.map
            .get(off..off + 8)
            .map(|b| u64_at(b, 0))
            .unwrap_or(i as u64)
    }
}
