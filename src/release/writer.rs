use std::path::Path;

use super::format::*;
use crate::atomic::AtomicFile;
use crate::error::{Error, Result};
use crate::mechanism::Payload;

/// Streams a release to disk: rows are appended as they are produced, hashed on the way, and the
/// file appears at its path only when [`finish`](ReleaseWriter::finish) succeeds.
pub struct ReleaseWriter {
    out: AtomicFile,
    hasher: blake3::Hasher,
    payload: Payload,
    k: usize,
    n: u64,
    labels: Option<Vec<f32>>,
    ids: Option<Vec<u64>>,
}

impl ReleaseWriter {
    /// Start a release of `k` values (or bits) per row.
    pub fn create(
        path: &Path,
        payload: Payload,
        k: usize,
        has_labels: bool,
        explicit_ids: bool,
    ) -> Result<ReleaseWriter> {
        let mut out = AtomicFile::create(path)?;
        out.write_all(&[0u8; HEADER_LEN])?;
        Ok(ReleaseWriter {
            out,
            hasher: blake3::Hasher::new(),
            payload,
            k,
            n: 0,
            labels: has_labels.then(Vec::new),
            ids: explicit_ids.then(Vec::new),
        })
    }

    fn body(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.len() >= 1 << 20 {
            self.hasher.update_rayon(bytes);
        } else {
            self.hasher.update(bytes);
        }
        self.out.write_all(bytes)
    }

    /// Append real-valued rows (`values.len()` a multiple of k).
    pub fn write_f32(&mut self, values: &[f32], labels: &[f32], ids: &[u64]) -> Result<()> {
        if self.payload != Payload::F32 || values.len() % self.k.max(1) != 0 {
            return Err(Error::param(
                "payload",
                "rows do not match the release's payload",
            ));
        }
        let rows = values.len() / self.k;
        self.side(rows, labels, ids)?;
        self.body(bytemuck::cast_slice(values))?;
        self.n += rows as u64;
        Ok(())
    }

    /// Append packed-bit rows (`words.len()` a multiple of ⌈k/64⌉).
    pub fn write_bits(&mut self, words: &[u64], labels: &[f32], ids: &[u64]) -> Result<()> {
        let wpr = self.k.div_ceil(64);
        if self.payload != Payload::Bits || words.len() % wpr.max(1) != 0 {
            return Err(Error::param(
                "payload",
                "rows do not match the release's payload",
            ));
        }
        let rows = words.len() / wpr;
        self.side(rows, labels, ids)?;
        if cfg!(target_endian = "little") {
            self.body(bytemuck::cast_slice(words))?;
        } else {
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            self.body(&bytes)?;
        }
        self.n += rows as u64;
        Ok(())
    }

    fn side(&mut self, rows: usize, labels: &[f32], ids: &[u64]) -> Result<()> {
        if let Some(l) = self.labels.as_mut() {
            if labels.len() != rows {
                return Err(Error::param(
                    "labels",
                    format!("{} labels for {rows} rows", labels.len()),
                ));
            }
            l.extend_from_slice(labels);
        }
        if let Some(v) = self.ids.as_mut() {
            if ids.len() != rows {
                return Err(Error::param(
                    "ids",
                    format!("{} ids for {rows} rows", ids.len()),
                ));
            }
            v.extend_from_slice(ids);
        }
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.n
    }

    /// Write ids, labels and metadata, the header and checksum, and move the file into place.
    /// `meta.n`, `meta.labels` and `meta.ids` are filled in here.
    pub fn finish(self, meta: ReleaseMeta) -> Result<ReleaseMeta> {
        self.finish_gated(meta, |_, _| Ok(()))
    }

    /// [`finish`](Self::finish), with `gate` called on the final metadata and checksum after
    /// everything is written and synced to the temporary file but *before* the file is moved into
    /// place: when `gate` fails, the release never appears (the temporary file is removed) and its
    /// error is returned. The privacy budget ledger refuses and records releases here.
    pub fn finish_gated(
        mut self,
        mut meta: ReleaseMeta,
        gate: impl FnOnce(&ReleaseMeta, &[u8; 32]) -> Result<()>,
    ) -> Result<ReleaseMeta> {
        meta.n = self.n;
        meta.k = self.k;
        meta.payload = self.payload;
        meta.labels = self.labels.is_some();
        meta.ids = self.ids.is_some();
        let payload_len = self.out.position() - HEADER_LEN as u64;
        let mut ids_off = 0u64;
        if let Some(ids) = self.ids.take() {
            self.pad()?;
            ids_off = self.out.position();
            let bytes: Vec<u8> = ids.iter().flat_map(|w| w.to_le_bytes()).collect();
            self.body(&bytes)?;
        }
        let mut labels_off = 0u64;
        if let Some(labels) = self.labels.take() {
            self.pad()?;
            labels_off = self.out.position();
            self.body(bytemuck::cast_slice(&labels))?;
        }
        self.pad()?;
        let meta_off = self.out.position();
        let json = serde_json::to_vec_pretty(&meta)
            .map_err(|e| Error::param("metadata", format!("cannot encode: {e}")))?;
        self.body(&json)?;
        let mut h = [0u8; HEADER_LEN];
        h[0..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&payload_code(self.payload).to_le_bytes());
        h[16..24].copy_from_slice(&self.n.to_le_bytes());
        h[24..32].copy_from_slice(&(self.k as u64).to_le_bytes());
        h[32..40].copy_from_slice(&(HEADER_LEN as u64).to_le_bytes());
        h[40..48].copy_from_slice(&payload_len.to_le_bytes());
        h[48..56].copy_from_slice(&ids_off.to_le_bytes());
        h[56..64].copy_from_slice(&labels_off.to_le_bytes());
        h[64..72].copy_from_slice(&meta_off.to_le_bytes());
        h[72..80].copy_from_slice(&(json.len() as u64).to_le_bytes());
        self.hasher.update(&h[..HASHED_HEADER]);
        let sum = self.hasher.finalize();
        h[80..112].copy_from_slice(sum.as_bytes());
        self.out.patch(0, &h)?;
        gate(&meta, sum.as_bytes())?;
        self.out.commit()?;
        Ok(meta)
    }

    fn pad(&mut self) -> Result<()> {
        let rem = self.out.position() % 64;
        if rem != 0 {
            let zeros = vec![0u8; (64 - rem) as usize];
            self.body(&zeros)?;
        }
        Ok(())
    }
}
