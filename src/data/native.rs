//! The native dataset format, `dataset.bin`: what `dprp convert` writes and `publish` reads
//! fastest.
//!
//! ```text
//! offset size  field
//!      0    8  magic "DPRPDATA"
//!      8    4  format version, u32 (= 1)
//!     12    4  flags, u32: bit 0 = labels present
//!     16    8  n, number of rows, u64
//!     24    8  p, features per row, u64
//!     32    8  data offset, u64 (a multiple of 64)
//!     40    8  length of the scaling record, u64 (UTF-8 JSON at offset 64)
//!     48   16  reserved, zero
//!     64    …  scaling record (JSON list of steps applied), zero-padded to the data offset
//!   data  4np  values, f32 little-endian, row-major
//!      …   4n  labels, f32 little-endian (only when flag bit 0 is set)
//! ```
//! All integers are little-endian. The file size must be exactly what the header implies.

use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::{RowReader, Scaling};
use crate::atomic::{AtomicFile, Existing};
use crate::data::source::{read_exact_or_truncated, READ_BUF};
use crate::error::{Error, Result};

/// Magic bytes of a native dataset.
pub const MAGIC: &[u8; 8] = b"DPRPDATA";
/// Current version of the native dataset format.
pub const VERSION: u32 = 1;
const HEADER: usize = 64;

/// Streaming reader for `dataset.bin`.
pub struct NativeReader {
    path: PathBuf,
    data: BufReader<File>,
    labels: Option<BufReader<File>>,
    n: u64,
    p: usize,
    pos: u64,
    scaling: Scaling,
    buf: Vec<u8>,
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_le_bytes(a)
}

impl NativeReader {
    /// Open and validate the header and file size.
    pub fn open(path: &Path) -> Result<NativeReader> {
        let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
        let size = f.metadata().map_err(|e| Error::io(path, e))?.len();
        let mut h = [0u8; HEADER];
        let got =
            crate::data::source::read_up_to(&mut f, &mut h).map_err(|e| Error::io(path, e))?;
        // A file too short for the magic that starts like it is a truncated dataset.
        let magic_ok = if got < 8 {
            got > 0 && MAGIC.starts_with(&h[..got])
        } else {
            &h[0..8] == MAGIC
        };
        if !magic_ok {
            return Err(Error::format(
                path,
                "not a dprp dataset (wrong magic bytes; expected \"DPRPDATA\")",
            ));
        }
        if got < HEADER {
            return Err(Error::format(
                path,
                format!("file is truncated: expected {HEADER} bytes for the dataset header, found {got}"),
            ));
        }
        let version = u32_at(&h, 8);
        if version != VERSION {
            return Err(Error::format(
                path,
                format!("unsupported dataset format version {version} (this dprp reads {VERSION})"),
            ));
        }
        let flags = u32_at(&h, 12);
        if flags & !1 != 0 {
            return Err(Error::format(path, format!("unknown flags {flags:#x}")));
        }
        let has_labels = flags & 1 == 1;
        let n = u64_at(&h, 16);
        let p = u64_at(&h, 24);
        let data_off = u64_at(&h, 32);
        let meta_len = u64_at(&h, 40);
        if p == 0 {
            return Err(Error::format(path, "header says 0 features per row"));
        }
        // Checked: `meta_len` comes from the file (near 2^64 it wrapped past this check and
        // then sized the allocation of the scaling record).
        let meta_end = (HEADER as u64).checked_add(meta_len);
        if !data_off.is_multiple_of(64) || meta_end.is_none_or(|end| data_off < end) {
            return Err(Error::format(
                path,
                format!("bad data offset {data_off} in header"),
            ));
        }
        let expect = n
            .checked_mul(p)
            .and_then(|np| np.checked_add(if has_labels { n } else { 0 }))
            .and_then(|c| c.checked_mul(4))
            .and_then(|b| b.checked_add(data_off))
            .ok_or_else(|| Error::format(path, "header sizes overflow"))?;
        if size != expect {
            return Err(Error::format(
                path,
                format!(
                    "file is {size} bytes but its header ({n} rows × {p} features{}) implies {expect}: truncated or corrupt",
                    if has_labels { " + labels" } else { "" }
                ),
            ));
        }
        let mut meta = vec![0u8; meta_len as usize];
        read_exact_or_truncated(&mut f, &mut meta, path, "the scaling record")?;
        let scaling: Scaling = if meta.is_empty() {
            Scaling::default()
        } else {
            serde_json::from_slice(&meta)
                .map_err(|e| Error::format(path, format!("bad scaling record: {e}")))?
        };
        f.seek(SeekFrom::Start(data_off))
            .map_err(|e| Error::io(path, e))?;
        let labels = if has_labels {
            let mut lf = File::open(path).map_err(|e| Error::io(path, e))?;
            lf.seek(SeekFrom::Start(data_off + n * p * 4))
                .map_err(|e| Error::io(path, e))?;
            Some(BufReader::with_capacity(READ_BUF / 16, lf))
        } else {
            None
        };
        Ok(NativeReader {
            path: path.to_path_buf(),
            data: BufReader::with_capacity(READ_BUF, f),
            labels,
            n,
            p: p as usize,
            pos: 0,
            scaling,
            buf: Vec::new(),
        })
    }
}

/// Append little-endian f32s decoded from `bytes` to `out`.
pub fn extend_f32_le(out: &mut Vec<f32>, bytes: &[u8]) {
    out.extend(
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
    );
}

impl RowReader for NativeReader {
    fn has_ids(&self) -> bool {
        false // row i has id i
    }
    fn format(&self) -> String {
        "native".into()
    }
    fn dim(&self) -> usize {
        self.p
    }
    fn rows_hint(&self) -> Option<u64> {
        Some(self.n)
    }
    fn has_labels(&self) -> bool {
        self.labels.is_some()
    }
    fn scaling(&self) -> Scaling {
        self.scaling.clone()
    }
    fn read_chunk(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f32>,
        labels: &mut Vec<f32>,
    ) -> Result<usize> {
        let take = (max_rows as u64).min(self.n - self.pos) as usize;
        if take == 0 {
            return Ok(0);
        }
        if cfg!(target_endian = "little") {
            // Read the little-endian payload straight into the f32 buffer (no second copy).
            let start = values.len();
            values.resize(start + take * self.p, 0.0);
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut values[start..]);
            read_exact_or_truncated(&mut self.data, bytes, &self.path, "row data")?;
        } else {
            self.buf.resize(take * self.p * 4, 0);
            read_exact_or_truncated(&mut self.data, &mut self.buf, &self.path, "row data")?;
            extend_f32_le(values, &self.buf);
        }
        if let Some(lf) = self.labels.as_mut() {
            self.buf.resize(take * 4, 0);
            read_exact_or_truncated(lf, &mut self.buf, &self.path, "labels")?;
            extend_f32_le(labels, &self.buf);
        }
        self.pos += take as u64;
        Ok(take)
    }
}

/// Streaming writer for `dataset.bin` (atomic: nothing appears at the path unless
/// [`finish`](NativeWriter::finish) succeeds).
pub struct NativeWriter {
    out: AtomicFile,
    p: usize,
    n: u64,
    has_labels: bool,
    labels: Vec<f32>,
    data_off: u64,
}

impl NativeWriter {
    /// Start a dataset with `p` features per row (an existing regular file at `path` is
    /// replaced only with [`Existing::Replace`]).
    pub fn create(
        path: &Path,
        existing: Existing,
        p: usize,
        has_labels: bool,
        scaling: &Scaling,
    ) -> Result<NativeWriter> {
        if p == 0 {
            return Err(Error::param(
                "dimension",
                "a dataset needs at least one feature",
            ));
        }
        let meta = serde_json::to_vec(scaling)
            .map_err(|e| Error::format(path, format!("cannot encode scaling record: {e}")))?;
        let data_off = ((HEADER + meta.len()) as u64).div_ceil(64) * 64;
        let mut out = AtomicFile::create(path, existing)?;
        let mut h = [0u8; HEADER];
        h[0..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&(has_labels as u32).to_le_bytes());
        h[24..32].copy_from_slice(&(p as u64).to_le_bytes());
        h[32..40].copy_from_slice(&data_off.to_le_bytes());
        h[40..48].copy_from_slice(&(meta.len() as u64).to_le_bytes());
        out.write_all(&h)?;
        out.write_all(&meta)?;
        out.pad_to(64)?;
        Ok(NativeWriter {
            out,
            p,
            n: 0,
            has_labels,
            labels: Vec::new(),
            data_off,
        })
    }

    /// Append rows (`values.len()` a multiple of `p`) and, if the dataset has labels, one label per
    /// row.
    pub fn write_rows(&mut self, values: &[f32], labels: &[f32]) -> Result<()> {
        let rows = values.len() / self.p;
        debug_assert_eq!(rows * self.p, values.len());
        if self.has_labels {
            if labels.len() != rows {
                return Err(Error::param(
                    "labels",
                    format!("{} labels for {rows} rows", labels.len()),
                ));
            }
            self.labels.extend_from_slice(labels);
        }
        let mut bytes = Vec::with_capacity(values.len() * 4);
        for v in values {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        self.out.write_all(&bytes)?;
        self.n += rows as u64;
        Ok(())
    }

    /// Write the labels, patch the header with the row count and move the file into place.
    pub fn finish(mut self) -> Result<u64> {
        debug_assert_eq!(
            self.out.position(),
            self.data_off + self.n * self.p as u64 * 4
        );
        if self.has_labels {
            let mut bytes = Vec::with_capacity(self.labels.len() * 4);
            for v in &self.labels {
                bytes.extend_from_slice(&v.to_le_bytes());
            }
            self.out.write_all(&bytes)?;
        }
        self.out.patch(16, &self.n.to_le_bytes())?;
        self.out.commit()?;
        Ok(self.n)
    }
}

/// Write a whole in-memory dataset to a new file.
pub fn write(path: &Path, data: &super::Dataset) -> Result<()> {
    write_as(path, data, Existing::Refuse)
}

/// Write a whole in-memory dataset, replacing an existing regular file with
/// [`Existing::Replace`].
pub fn write_as(path: &Path, data: &super::Dataset, existing: Existing) -> Result<()> {
    let mut w = NativeWriter::create(path, existing, data.p, data.labels.is_some(), &data.scaling)?;
    w.write_rows(&data.values, data.labels.as_deref().unwrap_or(&[]))?;
    w.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{collect, Dataset, ScalingStep};

    #[test]
    fn round_trip_with_labels_and_scaling() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.bin");
        let d = Dataset {
            n: 3,
            p: 2,
            values: vec![0.1, -0.2, 0.3, 0.4, -1.0, 1.0],
            labels: Some(vec![1.0, -1.0, 7.0]),
            scaling: Scaling(vec![ScalingStep::Divide { by: 255.0 }]),
        };
        write(&path, &d).unwrap();
        let mut r = NativeReader::open(&path).unwrap();
        assert_eq!(collect(&mut r).unwrap(), d);
    }

    #[test]
    fn truncated_and_bad_magic_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.bin");
        let d = Dataset {
            n: 2,
            p: 2,
            values: vec![0.0; 4],
            labels: None,
            scaling: Scaling::default(),
        };
        write(&path, &d).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let e = NativeReader::open(&path).err().unwrap().to_string();
        assert!(e.contains("truncated"), "{e}");
        let mut b2 = bytes.clone();
        b2[0] = b'X';
        std::fs::write(&path, &b2).unwrap();
        let e = NativeReader::open(&path).err().unwrap().to_string();
        assert!(e.contains("magic"), "{e}");
        std::fs::write(&path, &bytes[..10]).unwrap();
        let e = NativeReader::open(&path).err().unwrap().to_string();
        assert!(e.contains("truncated"), "{e}");
    }
}
