//! `.fvecs` and `.bvecs` (the TEXMEX / ANN-benchmark formats), plain or gzip-compressed.
//!
//! Every row is a little-endian `i32` dimension `d` followed by `d` values: `f32` little-endian
//! in `.fvecs`, `u8` in `.bvecs` (converted to f32 without scaling). All rows must have the same
//! `d > 0`; a row with a different dimension is reported with its (zero-based) row index, and a
//! file that ends inside a row is reported as truncated. The files carry no labels.
//!
//! The row count is known up front only for uncompressed files whose size is a whole number of
//! rows.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use super::native::extend_f32_le;
use super::npy::{Payload, CHUNK_BYTES};
use super::source::{open_maybe_gz, read_up_to};
use super::RowReader;
use crate::error::{Error, Result};

/// The element type of a `.*vecs` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `.fvecs`: f32 little-endian values.
    F32,
    /// `.bvecs`: u8 values.
    U8,
}

impl Kind {
    fn size(self) -> usize {
        match self {
            Kind::F32 => 4,
            Kind::U8 => 1,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::F32 => "fvecs",
            Kind::U8 => "bvecs",
        }
    }
}

/// Streaming reader for `.fvecs` / `.bvecs`.
pub struct VecsReader {
    path: PathBuf,
    input: Box<dyn BufRead + Send>,
    kind: Kind,
    d: usize,
    /// Bytes per row including the 4-byte dimension prefix.
    row_bytes: usize,
    rows_hint: Option<u64>,
    /// Rows read so far.
    pos: u64,
    /// The first row's 4-byte prefix, consumed by `open` and not yet returned.
    pending_prefix: Option<[u8; 4]>,
    done: bool,
    buf: Vec<u8>,
}

fn le_i32(b: &[u8]) -> Option<i32> {
    Some(i32::from_le_bytes(b.get(..4)?.try_into().ok()?))
}

impl VecsReader {
    /// Open `path` and read the dimension from the first row.
    pub fn open(path: &Path, kind: Kind) -> Result<VecsReader> {
        let payload = Payload::of(path)?;
        let mut input = open_maybe_gz(path)?;
        let mut first = [0u8; 4];
        let got = read_up_to(&mut input, &mut first).map_err(|e| Error::io(path, e))?;
        if got == 0 {
            return Err(Error::format(
                path,
                format!("empty .{} file: no rows", kind.name()),
            ));
        }
        if got < 4 {
            return Err(Error::format(
                path,
                format!("file is truncated: row 0 has only {got} bytes, not even its dimension"),
            ));
        }
        let d_raw = i32::from_le_bytes(first);
        if d_raw <= 0 {
            return Err(Error::format(
                path,
                format!(
                    "row 0 has dimension {d_raw}: the dimension must be positive \
                     (is this really an .{} file?)",
                    kind.name()
                ),
            ));
        }
        let d = d_raw as usize;
        let row_bytes = d
            .checked_mul(kind.size())
            .and_then(|b| b.checked_add(4))
            .ok_or_else(|| Error::format(path, format!("row 0 has dimension {d}: too large")))?;
        let rows_hint = payload
            .plain_len()
            .filter(|len| len % row_bytes as u64 == 0)
            .map(|len| len / row_bytes as u64);
        Ok(VecsReader {
            path: path.to_path_buf(),
            input,
            kind,
            d,
            row_bytes,
            rows_hint,
            pos: 0,
            pending_prefix: Some(first),
            done: false,
            buf: Vec::new(),
        })
    }

    fn ragged(&self, row: u64, d: Option<i32>) -> Error {
        let d = d.map_or_else(|| "?".to_string(), |d| d.to_string());
        Error::format(
            &self.path,
            format!(
                "row {row} has dimension {d} but row 0 has {}: all rows of an .{} file must \
                 have the same dimension",
                self.d,
                self.kind.name()
            ),
        )
    }
}

impl RowReader for VecsReader {
    fn has_ids(&self) -> bool {
        false // row i has id i
    }
    fn format(&self) -> String {
        match self.kind {
            Kind::F32 => "fvecs".into(),
            Kind::U8 => "bvecs".into(),
        }
    }
    fn dim(&self) -> usize {
        self.d
    }
    fn rows_hint(&self) -> Option<u64> {
        self.rows_hint
    }
    fn has_labels(&self) -> bool {
        false
    }
    fn read_chunk(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f32>,
        _labels: &mut Vec<f32>,
    ) -> Result<usize> {
        if self.done || max_rows == 0 {
            return Ok(0);
        }
        let rb = self.row_bytes;
        let take = max_rows.min((CHUNK_BYTES / rb).max(1));
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        // The first row's prefix was consumed by `open`: put it back so `buf` holds whole rows.
        if let Some(prefix) = self.pending_prefix.take() {
            buf.extend_from_slice(&prefix);
        }
        let want = (take * rb - buf.len()) as u64;
        let result = match Read::take(self.input.as_mut(), want).read_to_end(&mut buf) {
            Ok(_) => self.decode(&buf, values),
            Err(e) => Err(Error::io(&self.path, e)),
        };
        self.buf = buf;
        result
    }
}

impl VecsReader {
    /// Check the dimension prefixes of the whole rows in `buf` and convert them.
    fn decode(&mut self, buf: &[u8], values: &mut Vec<f32>) -> Result<usize> {
        let rb = self.row_bytes;
        if buf.is_empty() {
            self.done = true;
            return Ok(0);
        }
        let full = buf.len() / rb;
        values.reserve(full * self.d);
        for (r, row) in buf.chunks_exact(rb).enumerate() {
            let d = le_i32(row);
            if d != Some(self.d as i32) {
                return Err(self.ragged(self.pos + r as u64, d));
            }
            let body = row.get(4..).unwrap_or(&[]);
            match self.kind {
                Kind::F32 => extend_f32_le(values, body),
                Kind::U8 => values.extend(body.iter().map(|&b| f32::from(b))),
            }
        }
        let rest = buf.chunks_exact(rb).remainder();
        if !rest.is_empty() {
            let row = self.pos + full as u64;
            // A partial row that starts with a different dimension makes a ragged file, not a
            // truncated one.
            if let Some(d) = le_i32(rest) {
                if d != self.d as i32 {
                    return Err(self.ragged(row, Some(d)));
                }
            }
            return Err(Error::format(
                &self.path,
                format!(
                    "file is truncated: row {row} has {} of its {rb} bytes",
                    rest.len()
                ),
            ));
        }
        self.pos += full as u64;
        Ok(full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::collect;
    use std::io::Write;

    fn fvecs(rows: &[&[f32]]) -> Vec<u8> {
        let mut out = Vec::new();
        for r in rows {
            out.extend_from_slice(&(r.len() as i32).to_le_bytes());
            for x in *r {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        out
    }

    fn bvecs(rows: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for r in rows {
            out.extend_from_slice(&(r.len() as i32).to_le_bytes());
            out.extend_from_slice(r);
        }
        out
    }

    fn gz(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn read(bytes: &[u8], kind: Kind) -> Result<(usize, usize, Vec<f32>, Option<u64>)> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.vecs");
        std::fs::write(&path, bytes).unwrap();
        let mut r = VecsReader::open(&path, kind)?;
        let hint = r.rows_hint();
        let d = collect(&mut r)?;
        assert!(d.labels.is_none());
        Ok((d.n, d.p, d.values, hint))
    }

    fn err(bytes: &[u8], kind: Kind) -> String {
        match read(bytes, kind) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn reads_fvecs_and_bvecs() {
        let b = fvecs(&[&[1.0, 2.0, 3.0], &[-4.0, 0.5, 6.0]]);
        assert_eq!(
            read(&b, Kind::F32).unwrap(),
            (2, 3, vec![1.0, 2.0, 3.0, -4.0, 0.5, 6.0], Some(2))
        );
        assert_eq!(
            read(&gz(&b), Kind::F32).unwrap(),
            (2, 3, vec![1.0, 2.0, 3.0, -4.0, 0.5, 6.0], None)
        );
        let b = bvecs(&[&[0, 255], &[7, 8], &[9, 10]]);
        assert_eq!(
            read(&b, Kind::U8).unwrap(),
            (3, 2, vec![0.0, 255.0, 7.0, 8.0, 9.0, 10.0], Some(3))
        );
        assert_eq!(read(&gz(&b), Kind::U8).unwrap().2.len(), 6);
    }

    #[test]
    fn chunked_reads_match() {
        let rows: Vec<Vec<f32>> = (0..50)
            .map(|i| (0..5).map(|j| (i * 5 + j) as f32).collect())
            .collect();
        let refs: Vec<&[f32]> = rows.iter().map(|r| r.as_slice()).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.fvecs.gz");
        std::fs::write(&path, gz(&fvecs(&refs))).unwrap();
        let mut r = VecsReader::open(&path, Kind::F32).unwrap();
        let (mut v, mut l) = (Vec::new(), Vec::new());
        let mut sizes = Vec::new();
        loop {
            let got = r.read_chunk(7, &mut v, &mut l).unwrap();
            if got == 0 {
                break;
            }
            sizes.push(got);
        }
        assert_eq!(sizes.iter().sum::<usize>(), 50);
        assert!(sizes.iter().all(|&s| s <= 7));
        assert_eq!(v, rows.concat());
        assert_eq!(r.read_chunk(7, &mut v, &mut l).unwrap(), 0);
    }

    #[test]
    fn rejects_ragged_rows() {
        let b = fvecs(&[&[1.0, 2.0], &[3.0, 4.0], &[5.0, 6.0, 7.0], &[1.0, 1.0]]);
        let e = err(&b, Kind::F32);
        assert!(e.contains("row 2 has dimension 3 but row 0 has 2"), "{e}");
        let e = err(&gz(&b), Kind::F32);
        assert!(e.contains("row 2 has dimension 3"), "{e}");
        // Ragged as the last, shorter row.
        let b = bvecs(&[&[1, 2, 3], &[4, 5]]);
        let e = err(&b, Kind::U8);
        assert!(e.contains("row 1 has dimension 2 but row 0 has 3"), "{e}");
        // Ragged in row 1 detected across chunk boundaries.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.bvecs");
        std::fs::write(&path, bvecs(&[&[1, 2], &[3, 4], &[5]])).unwrap();
        let mut r = VecsReader::open(&path, Kind::U8).unwrap();
        let (mut v, mut l) = (Vec::new(), Vec::new());
        assert_eq!(r.read_chunk(1, &mut v, &mut l).unwrap(), 1);
        assert_eq!(r.read_chunk(1, &mut v, &mut l).unwrap(), 1);
        let e = r.read_chunk(1, &mut v, &mut l).unwrap_err().to_string();
        assert!(e.contains("row 2 has dimension 1"), "{e}");
    }

    #[test]
    fn rejects_bad_dimension_and_empty() {
        let mut b = (-3i32).to_le_bytes().to_vec();
        b.extend_from_slice(&[0; 12]);
        let e = err(&b, Kind::F32);
        assert!(e.contains("dimension -3") && e.contains("positive"), "{e}");
        let e = err(&0i32.to_le_bytes(), Kind::U8);
        assert!(e.contains("dimension 0"), "{e}");
        let e = err(&[], Kind::F32);
        assert!(e.contains("empty"), "{e}");
        let e = err(&gz(&[]), Kind::F32);
        assert!(e.contains("empty"), "{e}");
        // A claimed dimension far beyond the file is a truncation, with no huge allocation.
        let mut b = i32::MAX.to_le_bytes().to_vec();
        b.extend_from_slice(&[0; 8]);
        let e = err(&b, Kind::F32);
        assert!(e.contains("truncated") && e.contains("row 0"), "{e}");
    }

    #[test]
    fn rejects_truncated() {
        let b = fvecs(&[&[1.0, 2.0], &[3.0, 4.0]]);
        for cut in [1, 3, 4, 7, 11] {
            let e = err(&b[..b.len() - cut], Kind::F32);
            assert!(
                e.contains("truncated") && e.contains("row 1"),
                "cut {cut}: {e}"
            );
            let e = err(&gz(&b[..b.len() - cut]), Kind::F32);
            assert!(
                e.contains("truncated") && e.contains("row 1"),
                "cut {cut}: {e}"
            );
        }
        for cut in [13, 16, 19] {
            let e = err(&b[..b.len() - cut], Kind::F32);
            assert!(
                e.contains("truncated") && e.contains("row 0"),
                "cut {cut}: {e}"
            );
        }
        let b = bvecs(&[&[1, 2, 3]]);
        let e = err(&b[..6], Kind::U8);
        assert!(e.contains("truncated") && e.contains("row 0"), "{e}");
        let e = err(&b[..2], Kind::U8);
        assert!(e.contains("truncated") && e.contains("row 0"), "{e}");
    }
}
