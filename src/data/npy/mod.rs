//! NumPy `.npy` arrays (format versions 1.0, 2.0 and 3.0), plain or gzip-compressed.
//!
//! Accepted arrays are 2-D (`rows × features`) with one of the dtypes
//!
//! | descr  | type                  |
//! |--------|-----------------------|
//! | `<f2`  | little-endian f16 (IEEE binary16, converted exactly to f32) |
//! | `<f4`  | little-endian f32     |
//! | `<f8`  | little-endian f64 (converted to f32) |
//! | `\|u1` | u8 (converted to f32, no scaling) |
//!
//! Big-endian, structured and every other dtype, 0-D, 1-D and ≥3-D arrays and arrays with zero
//! columns are rejected with a message naming what was found.
//!
//! **Order.** C-order arrays (`fortran_order: False`, what NumPy writes by default) are streamed
//! chunk by chunk. Fortran-order arrays (`fortran_order: True`) are *supported by reading the whole
//! array into memory* (as f32, column-major) and transposing rows out of it on demand, since a
//! row is scattered over the whole file; they therefore need `4 × rows × features` bytes of memory.
//!
//! The size of the data must match the shape in the header: a short file is reported as
//! truncated, a longer one as having trailing bytes. For gzip input the check happens while
//! streaming (the decompressed size is not known up front), but a header claiming more data than
//! the compressed file could possibly hold is rejected when the file is opened. `.npy` files
//! carry no labels.

use std::fs::File;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use super::source::{open_maybe_gz, read_exact_or_truncated, read_up_to};
use super::RowReader;
use crate::error::{Error, Result};

mod header;

pub use header::shape_text;
use header::{DictParser, Dtype};

const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Largest header accepted (NumPy itself refuses headers above 10 000 bytes by default).
const MAX_HEADER: u64 = 1 << 20;
/// Largest chunk of raw bytes read at once (a single row may exceed it).
pub(crate) const CHUNK_BYTES: usize = 16 << 20;

/// What the file system says about the size of a file's (decompressed) content.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Payload {
    /// An uncompressed file of this many bytes.
    Plain(u64),
    /// A gzip file of this many compressed bytes.
    Gzip(u64),
}

impl Payload {
    /// Inspect `path`: its size and whether it starts with the gzip magic bytes.
    pub(crate) fn of(path: &Path) -> Result<Payload> {
        let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = f.metadata().map_err(|e| Error::io(path, e))?.len();
        let mut magic = [0u8; 2];
        let got = read_up_to(&mut f, &mut magic).map_err(|e| Error::io(path, e))?;
        Ok(if got == 2 && magic == [0x1f, 0x8b] {
            Payload::Gzip(len)
        } else {
            Payload::Plain(len)
        })
    }

    /// The exact size of a plain file, `None` for gzip.
    pub(crate) fn plain_len(self) -> Option<u64> {
        match self {
            Payload::Plain(n) => Some(n),
            Payload::Gzip(_) => None,
        }
    }

    /// Check that a header claiming `expected` bytes of content in total (header included) is
    /// consistent with the file: exactly equal for plain files, and at most what deflate can
    /// expand the compressed bytes to (ratio < 1032:1) for gzip files. `what` describes the
    /// claim for the message, e.g. "60000 rows × 784 features".
    pub(crate) fn check(self, path: &Path, expected: u64, what: &str) -> Result<()> {
        match self {
            Payload::Plain(len) if len < expected => Err(Error::format(
                path,
                format!(
                    "file is truncated: the header ({what}) implies {expected} bytes but the \
                     file has {len}"
                ),
            )),
            Payload::Plain(len) if len > expected => Err(Error::format(
                path,
                format!(
                    "file has {} unexpected bytes after the data: the header ({what}) implies \
                     {expected} bytes but the file has {len}",
                    len - expected
                ),
            )),
            Payload::Gzip(clen) if expected > clen.saturating_mul(1100).saturating_add(1 << 16) => {
                Err(Error::format(
                    path,
                    format!(
                        "file is truncated or corrupt: the header ({what}) implies {expected} \
                         bytes, more than a {clen}-byte gzip file can hold"
                    ),
                ))
            }
            _ => Ok(()),
        }
    }
}

/// Read up to `n` bytes into `buf` (cleared first), growing it only as data actually arrives, so a
/// header claiming a huge size cannot force a huge allocation. Returns the number of bytes read.
pub(crate) fn read_bounded(
    r: &mut dyn BufRead,
    n: u64,
    buf: &mut Vec<u8>,
    path: &Path,
) -> Result<usize> {
    buf.clear();
    r.take(n).read_to_end(buf).map_err(|e| Error::io(path, e))
}

/// Fail unless the stream is at its end (used after the last row).
pub(crate) fn expect_eof(r: &mut dyn BufRead, path: &Path) -> Result<()> {
    let mut extra = Vec::new();
    let got = read_bounded(r, 4096, &mut extra, path)?;
    if got > 0 {
        return Err(Error::format(
            path,
            format!(
                "unexpected bytes after the data ({}{got} more)",
                if got == 4096 { "at least " } else { "" }
            ),
        ));
    }
    Ok(())
}

/// Where rows come from.
enum Body {
    /// C order: rows are consecutive in the stream.
    Stream {
        input: Box<dyn BufRead + Send>,
        buf: Vec<u8>,
        checked_eof: bool,
    },
    /// Fortran order: the whole array, column-major, already converted.
    Columns(Vec<f32>),
}

/// Streaming reader for 2-D `.npy` arrays (see the module documentation).
pub struct NpyReader {
    path: PathBuf,
    dtype: Dtype,
    n: u64,
    p: usize,
    row_bytes: usize,
    pos: u64,
    body: Body,
}

impl NpyReader {
    /// Open `path` (`.npy` or gzip-compressed `.npy.gz`), parse and validate the header.
    pub fn open(path: &Path) -> Result<NpyReader> {
        let payload = Payload::of(path)?;
        let mut input = open_maybe_gz(path)?;
        let mut pre = [0u8; 8];
        read_exact_or_truncated(&mut input, &mut pre, path, "the .npy preamble")?;
        if &pre[0..6] != MAGIC {
            return Err(Error::format(
                path,
                "not a NumPy .npy file (missing the \\x93NUMPY magic bytes)",
            ));
        }
        let (major, minor) = (pre[6], pre[7]);
        let (len_bytes, header_len) = match major {
            1 => {
                let mut l = [0u8; 2];
                read_exact_or_truncated(&mut input, &mut l, path, "the header length")?;
                (2u64, u64::from(u16::from_le_bytes(l)))
            }
            2 | 3 => {
                let mut l = [0u8; 4];
                read_exact_or_truncated(&mut input, &mut l, path, "the header length")?;
                (4u64, u64::from(u32::from_le_bytes(l)))
            }
            _ => {
                return Err(Error::format(
                    path,
                    format!("unsupported .npy format version {major}.{minor} (expected 1, 2 or 3)"),
                ))
            }
        };
        if header_len > MAX_HEADER {
            return Err(Error::format(
                path,
                format!("implausible .npy header length {header_len} bytes (corrupt file?)"),
            ));
        }
        let mut header = Vec::new();
        let got = read_bounded(&mut input, header_len, &mut header, path)?;
        if (got as u64) < header_len {
            return Err(Error::format(
                path,
                format!("file is truncated: expected {header_len} bytes of header, found {got}"),
            ));
        }
        let h = DictParser::parse(&header)
            .map_err(|m| Error::format(path, format!("bad .npy header: {m}")))?;
        let dtype = Dtype::from_descr(&h.descr).map_err(|m| Error::format(path, m))?;
        let (n, p) = match h.shape[..] {
            [n, p] => (n, p),
            [n] => {
                return Err(Error::format(
                    path,
                    format!(
                        "1-D array of shape ({n},): dprp needs a 2-D array (rows × features); \
                         reshape it to (1, {n}) or ({n}, 1) first"
                    ),
                ))
            }
            _ => {
                return Err(Error::format(
                    path,
                    format!(
                        "{}-D array of shape {}: dprp needs a 2-D array (rows × features)",
                        h.shape.len(),
                        shape_text(&h.shape)
                    ),
                ))
            }
        };
        if p == 0 {
            return Err(Error::format(
                path,
                format!("array of shape ({n}, 0) has no features"),
            ));
        }
        let what = format!("{n} rows × {p} features of {}", h.descr);
        let data_bytes = n
            .checked_mul(p)
            .and_then(|np| np.checked_mul(dtype.size() as u64))
            .filter(|&b| usize::try_from(b).is_ok())
            .ok_or_else(|| Error::format(path, format!("array size overflows ({what})")))?;
        let expected = (6 + 2 + len_bytes + header_len)
            .checked_add(data_bytes)
            .ok_or_else(|| Error::format(path, format!("array size overflows ({what})")))?;
        payload.check(path, expected, &what)?;
        let too_many = || Error::format(path, format!("too many features ({what})"));
        let p = usize::try_from(p).map_err(|_| too_many())?;
        let row_bytes = p.checked_mul(dtype.size()).ok_or_else(too_many)?;

        let body = if h.fortran_order {
            Body::Columns(read_columns(&mut input, dtype, data_bytes, path)?)
        } else {
            Body::Stream {
                input,
                buf: Vec::new(),
                checked_eof: false,
            }
        };
        Ok(NpyReader {
            path: path.to_path_buf(),
            dtype,
            n,
            p,
            row_bytes,
            pos: 0,
            body,
        })
    }
}

/// Read the whole (Fortran-order) array body, converting to f32 piece by piece.
fn read_columns(
    input: &mut Box<dyn BufRead + Send>,
    dtype: Dtype,
    data_bytes: u64,
    path: &Path,
) -> Result<Vec<f32>> {
    let mut cols = Vec::new();
    let mut buf = Vec::new();
    let piece = (CHUNK_BYTES / 8 * 8) as u64;
    let mut done = 0u64;
    while done < data_bytes {
        let want = piece.min(data_bytes - done);
        let got = read_bounded(input.as_mut(), want, &mut buf, path)?;
        if (got as u64) < want {
            return Err(Error::format(
                path,
                format!(
                    "file is truncated: expected {data_bytes} bytes of array data, found {}",
                    done + got as u64
                ),
            ));
        }
        dtype.extend(&mut cols, &buf);
        done += want;
    }
    expect_eof(input.as_mut(), path)?;
    Ok(cols)
}

impl RowReader for NpyReader {
    fn has_ids(&self) -> bool {
        false // row i has id i
    }
    fn format(&self) -> String {
        format!("npy {}", self.dtype.descr())
    }
    fn dim(&self) -> usize {
        self.p
    }
    fn rows_hint(&self) -> Option<u64> {
        Some(self.n)
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
        let row_bytes = self.row_bytes;
        let left = self.n - self.pos;
        match &mut self.body {
            Body::Stream {
                input,
                buf,
                checked_eof,
            } => {
                let cap = (CHUNK_BYTES / row_bytes).max(1);
                let take = (max_rows.min(cap) as u64).min(left) as usize;
                if take == 0 {
                    if !*checked_eof {
                        *checked_eof = true;
                        expect_eof(input.as_mut(), &self.path)?;
                    }
                    return Ok(0);
                }
                let want = take * row_bytes;
                let got = read_bounded(input.as_mut(), want as u64, buf, &self.path)?;
                if got < want {
                    return Err(Error::format(
                        &self.path,
                        format!(
                            "file is truncated: row {} of {} is incomplete",
                            self.pos + (got / row_bytes) as u64,
                            self.n
                        ),
                    ));
                }
                self.dtype.extend(values, buf);
                self.pos += take as u64;
                Ok(take)
            }
            Body::Columns(cols) => {
                let take = (max_rows as u64).min(left) as usize;
                if take == 0 {
                    return Ok(0);
                }
                let n = self.n as usize;
                let start = self.pos as usize;
                values.reserve(take * self.p);
                for i in start..start + take {
                    values.extend(cols.iter().skip(i).step_by(n).take(self.p));
                }
                self.pos += take as u64;
                if self.pos == self.n {
                    *cols = Vec::new();
                }
                Ok(take)
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::header::{f16_to_f32, Header};
    use super::*;
    use crate::data::collect;
    use std::io::Write;

    /// Build `.npy` bytes with the given header fields and raw data.
    pub(crate) fn npy_bytes(
        major: u8,
        descr: &str,
        fortran: bool,
        shape: &str,
        data: &[u8],
    ) -> Vec<u8> {
        let dict = format!(
            "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
            if fortran { "True" } else { "False" }
        );
        let len_bytes = if major == 1 { 2 } else { 4 };
        let unpadded = 6 + 2 + len_bytes + dict.len() + 1;
        let pad = (64 - unpadded % 64) % 64;
        let header = format!("{dict}{}\n", " ".repeat(pad));
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[major, 0]);
        if major == 1 {
            out.extend_from_slice(&(header.len() as u16).to_le_bytes());
        } else {
            out.extend_from_slice(&(header.len() as u32).to_le_bytes());
        }
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    /// A version 1.0 file with the header text `dict` and 4 data bytes.
    fn raw_npy(dict: &str) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&[1, 0]);
        b.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        b.extend_from_slice(dict.as_bytes());
        b.extend_from_slice(&[0; 4]);
        b
    }

    fn f32_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn gz(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn read(bytes: &[u8]) -> Result<(usize, Vec<f32>, Option<u64>)> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.npy");
        std::fs::write(&path, bytes).unwrap();
        let mut r = NpyReader::open(&path)?;
        let hint = r.rows_hint();
        let d = collect(&mut r)?;
        assert!(d.labels.is_none());
        assert_eq!(d.values.len(), d.n * d.p);
        Ok((d.p, d.values, hint))
    }

    fn err(bytes: &[u8]) -> String {
        match read(bytes) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        }
    }

    const M: [f32; 6] = [1.0, -2.0, 3.5, 0.25, 5.0, -6.0];

    #[test]
    fn reads_f32_c_order_all_versions() {
        for major in [1, 2, 3] {
            let b = npy_bytes(major, "<f4", false, "(2, 3)", &f32_bytes(&M));
            assert_eq!(read(&b).unwrap(), (3, M.to_vec(), Some(2)), "v{major}");
        }
    }

    #[test]
    fn reads_f64_and_u8() {
        let data: Vec<u8> = M.iter().flat_map(|&x| f64::from(x).to_le_bytes()).collect();
        let b = npy_bytes(1, "<f8", false, "(3, 2)", &data);
        assert_eq!(read(&b).unwrap(), (2, M.to_vec(), Some(3)));
        let b = npy_bytes(1, "|u1", false, "(2, 2)", &[0, 7, 128, 255]);
        assert_eq!(read(&b).unwrap().1, vec![0.0, 7.0, 128.0, 255.0]);
    }

    #[test]
    fn reads_f16_exactly() {
        // bit patterns and the values NumPy gives for them (np.frombuffer(..., '<f2'))
        let cases: [(u16, f32); 9] = [
            (0x0000, 0.0),
            (0x3c00, 1.0),
            (0xc000, -2.0),
            (0x3800, 0.5),
            (0x7bff, 65504.0),
            (0x0001, 5.960_464_5e-8), // smallest subnormal, 2⁻²⁴
            (0x83ff, -6.097_555e-5),  // largest negative subnormal, −1023·2⁻²⁴
            (0x0400, 6.103_515_6e-5), // smallest normal, 2⁻¹⁴
            (0x3555, 0.333_251_95),
        ];
        let bytes: Vec<u8> = cases.iter().flat_map(|c| c.0.to_le_bytes()).collect();
        let b = npy_bytes(1, "<f2", false, "(3, 3)", &bytes);
        let (p, v, _) = read(&b).unwrap();
        assert_eq!(p, 3);
        for ((h, want), got) in cases.iter().zip(&v) {
            assert_eq!(got.to_bits(), want.to_bits(), "{h:#06x}: {got} vs {want}");
        }
        assert!(f16_to_f32(0x7c00) == f32::INFINITY && f16_to_f32(0xfc00) == f32::NEG_INFINITY);
        assert!(f16_to_f32(0x7e00).is_nan());
        // every finite f16 round-trips through f64 arithmetic: value = (−1)^s·m·2^(e−25)
        for h in 0..=u16::MAX {
            let e = (h >> 10) & 0x1f;
            if e == 31 {
                continue;
            }
            let m = f64::from(h & 0x3ff) + if e == 0 { 0.0 } else { 1024.0 };
            let v = m * 2f64.powi(i32::from(e.max(1)) - 25);
            let v = if h & 0x8000 != 0 { -v } else { v };
            assert_eq!(f64::from(f16_to_f32(h)), v, "{h:#06x}");
        }
    }

    #[test]
    fn reads_fortran_order() {
        // The 2×3 matrix M (row-major) stored column-major.
        let cols = [M[0], M[3], M[1], M[4], M[2], M[5]];
        let b = npy_bytes(1, "<f4", true, "(2, 3)", &f32_bytes(&cols));
        assert_eq!(read(&b).unwrap(), (3, M.to_vec(), Some(2)));
        // Chunked reads of a Fortran array.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.npy");
        std::fs::write(&path, &b).unwrap();
        let mut r = NpyReader::open(&path).unwrap();
        let (mut v, mut l) = (Vec::new(), Vec::new());
        assert_eq!(r.read_chunk(1, &mut v, &mut l).unwrap(), 1);
        assert_eq!(v, &M[..3]);
        assert_eq!(r.read_chunk(5, &mut v, &mut l).unwrap(), 1);
        assert_eq!(r.read_chunk(5, &mut v, &mut l).unwrap(), 0);
        assert_eq!(v, M);
        // Truncated Fortran data.
        let e = err(&b[..b.len() - 4]);
        assert!(e.contains("truncated"), "{e}");
    }

    #[test]
    fn reads_gzip_and_empty() {
        let b = npy_bytes(1, "<f4", false, "(3, 2)", &f32_bytes(&M));
        assert_eq!(read(&gz(&b)).unwrap(), (2, M.to_vec(), Some(3)));
        let b = npy_bytes(1, "<f4", false, "(0, 5)", &[]);
        assert_eq!(read(&b).unwrap(), (5, vec![], Some(0)));
        // Python 2 style long integers.
        let b = npy_bytes(1, "<f4", false, "(3L, 2L)", &f32_bytes(&M));
        assert_eq!(read(&b).unwrap().0, 2);
    }

    #[test]
    fn chunked_reads_match() {
        let data: Vec<f32> = (0..700).map(|i| i as f32).collect();
        let b = npy_bytes(1, "<f4", false, "(100, 7)", &f32_bytes(&data));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.npy.gz");
        std::fs::write(&path, gz(&b)).unwrap();
        let mut r = NpyReader::open(&path).unwrap();
        let (mut v, mut l) = (Vec::new(), Vec::new());
        let mut total = 0;
        loop {
            let got = r.read_chunk(33, &mut v, &mut l).unwrap();
            if got == 0 {
                break;
            }
            assert!(got <= 33);
            total += got;
        }
        assert_eq!(total, 100);
        assert_eq!(v, data);
        assert!(l.is_empty());
    }

    #[test]
    fn rejects_bad_dtypes() {
        let e = err(&npy_bytes(1, ">f4", false, "(1, 1)", &[0; 4]));
        assert!(e.contains("big-endian") && e.contains("'>f4'"), "{e}");
        let e = err(&npy_bytes(1, "<i4", false, "(1, 1)", &[0; 4]));
        assert!(e.contains("unsupported dtype '<i4'"), "{e}");
        let e = err(&npy_bytes(1, "<i2", false, "(1, 1)", &[0; 2]));
        assert!(e.contains("'<i2'") && e.contains("'<f2' float16"), "{e}");
        let e = err(&npy_bytes(1, ">f2", false, "(1, 1)", &[0; 2]));
        assert!(e.contains("big-endian"), "{e}");
        let e = err(&raw_npy(
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1, 1), }",
        ));
        assert!(e.contains("structured"), "{e}");
    }

    #[test]
    fn rejects_bad_shapes() {
        let e = err(&npy_bytes(1, "<f4", false, "(6,)", &f32_bytes(&M)));
        assert!(e.contains("1-D") && e.contains("(6,)"), "{e}");
        let e = err(&npy_bytes(1, "<f4", false, "(1, 2, 3)", &f32_bytes(&M)));
        assert!(e.contains("3-D") && e.contains("(1, 2, 3)"), "{e}");
        let e = err(&npy_bytes(1, "<f4", false, "()", &f32_bytes(&M[..1])));
        assert!(e.contains("0-D"), "{e}");
        let e = err(&npy_bytes(1, "<f4", false, "(3, 0)", &[]));
        assert!(e.contains("no features"), "{e}");
        let e = err(&npy_bytes(
            1,
            "<f4",
            false,
            "(18446744073709551615, 18446744073709551615)",
            &[],
        ));
        assert!(e.contains("overflow"), "{e}");
        let e = err(&npy_bytes(1, "<f4", false, "(2, -3)", &[]));
        assert!(e.contains("shape"), "{e}");
    }

    #[test]
    fn rejects_truncated_and_trailing() {
        let b = npy_bytes(1, "<f4", false, "(2, 3)", &f32_bytes(&M));
        let e = err(&b[..b.len() - 1]);
        assert!(e.contains("truncated"), "{e}");
        let e = err(&gz(&b[..b.len() - 1]));
        assert!(e.contains("truncated") && e.contains("row 1"), "{e}");
        let mut long = b.clone();
        long.push(0);
        let e = err(&long);
        assert!(e.contains("unexpected bytes"), "{e}");
        let e = err(&gz(&long));
        assert!(e.contains("unexpected bytes"), "{e}");
        // Header cut short.
        let e = err(&b[..20]);
        assert!(e.contains("truncated"), "{e}");
        let e = err(&b[..4]);
        assert!(e.contains("truncated"), "{e}");
        // A gzip file whose header claims far more data than it can hold.
        let huge = npy_bytes(1, "<f4", false, "(1000000000, 1000)", &[]);
        let e = err(&gz(&huge));
        assert!(e.contains("truncated or corrupt"), "{e}");
    }

    #[test]
    fn rejects_bad_headers() {
        let e = err(b"not numpy at all");
        assert!(e.contains("magic"), "{e}");
        let mut b = npy_bytes(1, "<f4", false, "(1, 1)", &[0; 4]);
        b[6] = 9;
        let e = err(&b);
        assert!(e.contains("version 9.0"), "{e}");
        for bad in [
            "{'descr': '<f4', 'shape': (1, 1), }",
            "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1, 1), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), 'x': 1}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1) ",
            "{'descr: '<f4'",
            "",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1 1), } junk",
        ] {
            let e = err(&raw_npy(bad));
            assert!(e.contains("header"), "{bad}: {e}");
        }
        // v2 header length claiming gigabytes.
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&[2, 0]);
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        let e = err(&b);
        assert!(e.contains("header length"), "{e}");
    }

    #[test]
    fn parses_header_dict() {
        let h =
            DictParser::parse(b"{\"shape\": (10,3),\"fortran_order\":True ,'descr':'|u1'}   \n")
                .unwrap();
        assert_eq!(
            h,
            Header {
                descr: "|u1".into(),
                fortran_order: true,
                shape: vec![10, 3]
            }
        );
    }
}

/// The bytes of a 1-D little-endian `f64` `.npy` (format 1.0) holding `values`.
pub fn f64_vector_bytes(values: &[f64]) -> Vec<u8> {
    array_bytes("<f8", &format!("({},)", values.len()), &le_bytes(values))
}

/// The bytes of a 2-D little-endian `f64` `.npy` (format 1.0, C order) holding `rows × cols`
/// row-major `values`.
pub fn f64_matrix_bytes(values: &[f64], rows: usize, cols: usize) -> Vec<u8> {
    debug_assert_eq!(values.len(), rows * cols);
    array_bytes("<f8", &format!("({rows}, {cols})"), &le_bytes(values))
}

/// The bytes of a 2-D `.npy` (format 1.0, C order) of `rows × cols` elements of type `descr`
/// (`<f4`, `<u8`, …), whose little-endian bytes are `data`.
pub fn matrix_bytes(descr: &str, rows: usize, cols: usize, data: &[u8]) -> Vec<u8> {
    array_bytes(descr, &format!("({rows}, {cols})"), data)
}

fn le_bytes(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn array_bytes(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Magic (6) + version (2) + header length (2) + dict, padded with spaces and a final newline
    // to a multiple of 64 bytes.
    let unpadded = 10 + dict.len() + 1;
    let pad = (64 - unpadded % 64) % 64;
    let header_len = dict.len() + pad + 1;
    let mut out = Vec::with_capacity(10 + header_len + data.len());
    out.extend_from_slice(b"\x93NUMPY\x01\x00");
    out.extend_from_slice(&(header_len as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend(std::iter::repeat_n(b' ', pad));
    out.push(b'\n');
    out.extend_from_slice(data);
    out
}

#[cfg(test)]
mod vector_tests {
    use super::*;

    #[test]
    fn f64_vector_header_is_aligned_and_parsable() {
        let b = f64_vector_bytes(&[1.5, -2.0, 0.25]);
        let hl = u16::from_le_bytes([b[8], b[9]]) as usize;
        assert_eq!((10 + hl) % 64, 0);
        assert_eq!(b[10 + hl - 1], b'\n');
        let header = std::str::from_utf8(&b[10..10 + hl]).unwrap();
        assert!(header.contains("'shape': (3,)"), "{header}");
        assert_eq!(b.len(), 10 + hl + 24);
        assert_eq!(
            f64::from_le_bytes(b[10 + hl..10 + hl + 8].try_into().unwrap()),
            1.5
        );
    }
}
