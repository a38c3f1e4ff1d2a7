//! MNIST-style IDX files, plain or gzip-compressed.
//!
//! All header integers are big-endian u32. Accepted data files:
//!
//! | magic        | content                                                   |
//! |--------------|-----------------------------------------------------------|
//! | `0x00000803` | u8 images: count, rows, cols, then `count·rows·cols` bytes |
//! | `0x00000802` | u8 matrix: count, dim, then `count·dim` bytes              |
//!
//! Each image becomes one row of `rows·cols` features with the raw pixel values 0..255 as f32
//! (no scaling here; see [`super::scale`]). Labels come from a separate IDX label file (magic
//! `0x00000801`: count, then `count` u8 labels) whose count must equal the image count.
//!
//! The size of each file must match its header (checked up front for uncompressed files and while
//! streaming for gzip files).

use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::npy::{expect_eof, read_bounded, Payload, CHUNK_BYTES};
use super::source::{open_maybe_gz, read_exact_or_truncated};
use super::RowReader;
use crate::error::{Error, Result};

/// Magic number of an IDX label file (u8, 1 dimension).
pub const MAGIC_LABELS: u32 = 0x0000_0801;
/// Magic number of an IDX u8 matrix (2 dimensions).
pub const MAGIC_MATRIX: u32 = 0x0000_0802;
/// Magic number of an IDX u8 image file (3 dimensions).
pub const MAGIC_IMAGES: u32 = 0x0000_0803;

fn be_u32(b: [u8; 4]) -> u32 {
    u32::from_be_bytes(b)
}

/// Describe an unexpected magic number.
fn describe_magic(magic: u32) -> String {
    let [z0, z1, ty, nd] = magic.to_be_bytes();
    if z0 != 0 || z1 != 0 {
        return format!("magic number 0x{magic:08x} is not an IDX magic number");
    }
    let ty = match ty {
        0x08 => "u8",
        0x09 => "i8",
        0x0b => "i16",
        0x0c => "i32",
        0x0d => "f32",
        0x0e => "f64",
        _ => return format!("magic number 0x{magic:08x} has an unknown IDX element type"),
    };
    format!("magic number 0x{magic:08x} is an IDX file of {ty} with {nd} dimension(s)")
}

/// The label stream paired with the images.
struct Labels {
    path: PathBuf,
    input: Box<dyn BufRead + Send>,
}

/// Streaming reader for IDX image files (with an optional IDX label file).
pub struct IdxReader {
    path: PathBuf,
    input: Box<dyn BufRead + Send>,
    labels: Option<Labels>,
    count: u64,
    dim: usize,
    pos: u64,
    checked_eof: bool,
    buf: Vec<u8>,
}

impl IdxReader {
    /// Open the image file `path` and, if given, the label file `labels`.
    pub fn open(path: &Path, labels: Option<&Path>) -> Result<IdxReader> {
        let payload = Payload::of(path)?;
        let mut input = open_maybe_gz(path)?;
        let mut m = [0u8; 4];
        read_exact_or_truncated(&mut input, &mut m, path, "the IDX magic number")?;
        let magic = be_u32(m);
        let ndims = match magic {
            MAGIC_IMAGES => 3,
            MAGIC_MATRIX => 2,
            MAGIC_LABELS => {
                return Err(Error::format(
                    path,
                    "this is an IDX label file (magic number 0x00000801), not an image file: \
                     pass the images (idx3-ubyte) as the input and this file as the labels",
                ))
            }
            other => {
                return Err(Error::format(
                    path,
                    format!(
                        "{}; dprp reads u8 images (magic 0x00000803) or u8 matrices \
                         (0x00000802)",
                        describe_magic(other)
                    ),
                ))
            }
        };
        let mut dims = [0u64; 3];
        for d in dims.iter_mut().take(ndims) {
            let mut b = [0u8; 4];
            read_exact_or_truncated(&mut input, &mut b, path, "the IDX header")?;
            *d = u64::from(be_u32(b));
        }
        let count = dims[0];
        let dim = if ndims == 3 {
            dims[1] * dims[2]
        } else {
            dims[1]
        };
        let shape = if ndims == 3 {
            format!("{count} images of {}×{}", dims[1], dims[2])
        } else {
            format!("{count} rows × {dim} features")
        };
        if dim == 0 {
            return Err(Error::format(
                path,
                format!("the header ({shape}) has no features per row"),
            ));
        }
        let header = 4 + 4 * ndims as u64;
        // dim ≤ 2^64 - 2^33 and count < 2^32, so this cannot overflow u64; check usize anyway.
        let expected = count
            .checked_mul(dim)
            .and_then(|b| b.checked_add(header))
            .ok_or_else(|| Error::format(path, format!("the header ({shape}) overflows")))?;
        payload.check(path, expected, &shape)?;
        let dim = usize::try_from(dim)
            .map_err(|_| Error::format(path, format!("the header ({shape}) is too large")))?;

        let labels = match labels {
            None => None,
            Some(lp) => Some(open_labels(lp, count)?),
        };
        Ok(IdxReader {
            path: path.to_path_buf(),
            input,
            labels,
            count,
            dim,
            pos: 0,
            checked_eof: false,
            buf: Vec::new(),
        })
    }
}

/// Open an IDX label file and check its count against the images.
fn open_labels(path: &Path, images: u64) -> Result<Labels> {
    let payload = Payload::of(path)?;
    let mut input = open_maybe_gz(path)?;
    let mut b = [0u8; 4];
    read_exact_or_truncated(&mut input, &mut b, path, "the IDX magic number")?;
    let magic = be_u32(b);
    if magic != MAGIC_LABELS {
        let hint = if magic == MAGIC_IMAGES || magic == MAGIC_MATRIX {
            " (this looks like an image file, not a label file)"
        } else {
            ""
        };
        return Err(Error::format(
            path,
            format!(
                "not an IDX label file: {}, expected 0x00000801{hint}",
                describe_magic(magic)
            ),
        ));
    }
    read_exact_or_truncated(&mut input, &mut b, path, "the IDX header")?;
    let count = u64::from(be_u32(b));
    if count != images {
        return Err(Error::format(
            path,
            format!("the label file has {count} labels but the image file has {images} images"),
        ));
    }
    payload.check(path, 8 + count, &format!("{count} labels"))?;
    Ok(Labels {
        path: path.to_path_buf(),
        input,
    })
}

impl RowReader for IdxReader {
    fn has_ids(&self) -> bool {
        false // row i has id i
    }
    fn format(&self) -> String {
        "idx".into()
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn rows_hint(&self) -> Option<u64> {
        Some(self.count)
    }
    fn has_labels(&self) -> bool {
        self.labels.is_some()
    }
    fn read_chunk(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f32>,
        labels: &mut Vec<f32>,
    ) -> Result<usize> {
        let cap = (CHUNK_BYTES / self.dim).max(1);
        let take = (max_rows.min(cap) as u64).min(self.count - self.pos) as usize;
        if take == 0 {
            if !self.checked_eof && max_rows > 0 {
                self.checked_eof = true;
                expect_eof(self.input.as_mut(), &self.path)?;
                if let Some(l) = self.labels.as_mut() {
                    expect_eof(l.input.as_mut(), &l.path)?;
                }
            }
            return Ok(0);
        }
        let want = take * self.dim;
        let got = read_bounded(self.input.as_mut(), want as u64, &mut self.buf, &self.path)?;
        if got < want {
            return Err(Error::format(
                &self.path,
                format!(
                    "file is truncated: image {} of {} is incomplete",
                    self.pos + (got / self.dim) as u64,
                    self.count
                ),
            ));
        }
        values.extend(self.buf.iter().map(|&b| f32::from(b)));
        if let Some(l) = self.labels.as_mut() {
            let got = read_bounded(l.input.as_mut(), take as u64, &mut self.buf, &l.path)?;
            if got < take {
                return Err(Error::format(
                    &l.path,
                    format!(
                        "file is truncated: label {} of {} is missing",
                        self.pos + got as u64,
                        self.count
                    ),
                ));
            }
            labels.extend(self.buf.iter().map(|&b| f32::from(b)));
        }
        self.pos += take as u64;
        Ok(take)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::collect;
    use std::io::Write;

    fn images(count: u32, rows: u32, cols: u32, pixels: &[u8]) -> Vec<u8> {
        let mut out = MAGIC_IMAGES.to_be_bytes().to_vec();
        for v in [count, rows, cols] {
            out.extend_from_slice(&v.to_be_bytes());
        }
        out.extend_from_slice(pixels);
        out
    }

    fn label_file(labels: &[u8]) -> Vec<u8> {
        let mut out = MAGIC_LABELS.to_be_bytes().to_vec();
        out.extend_from_slice(&(labels.len() as u32).to_be_bytes());
        out.extend_from_slice(labels);
        out
    }

    fn gz(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    type Read = (usize, usize, Vec<f32>, Option<Vec<f32>>);

    fn read(img: &[u8], lab: Option<&[u8]>) -> Result<Read> {
        let dir = tempfile::tempdir().unwrap();
        let ip = dir.path().join("images-idx3-ubyte");
        std::fs::write(&ip, img).unwrap();
        let lp = dir.path().join("labels-idx1-ubyte");
        if let Some(l) = lab {
            std::fs::write(&lp, l).unwrap();
        }
        let mut r = IdxReader::open(&ip, lab.map(|_| lp.as_path()))?;
        assert_eq!(r.has_labels(), lab.is_some());
        let hint = r.rows_hint();
        let d = collect(&mut r)?;
        assert_eq!(hint, Some(d.n as u64));
        Ok((d.n, d.p, d.values, d.labels))
    }

    fn err(img: &[u8], lab: Option<&[u8]>) -> String {
        match read(img, lab) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        }
    }

    const PIX: [u8; 12] = [0, 1, 2, 3, 255, 128, 7, 8, 9, 10, 11, 12];

    #[test]
    fn reads_images_and_labels() {
        let img = images(3, 2, 2, &PIX);
        let lab = label_file(&[7, 2, 1]);
        let want_v: Vec<f32> = PIX.iter().map(|&b| f32::from(b)).collect();
        let want = (3, 4, want_v.clone(), Some(vec![7.0, 2.0, 1.0]));
        assert_eq!(read(&img, Some(&lab)).unwrap(), want);
        assert_eq!(read(&gz(&img), Some(&gz(&lab))).unwrap(), want);
        assert_eq!(read(&gz(&img), Some(&lab)).unwrap(), want);
        assert_eq!(read(&img, None).unwrap(), (3, 4, want_v, None));
        // Zero images.
        assert_eq!(
            read(&images(0, 28, 28, &[]), Some(&label_file(&[]))).unwrap(),
            (0, 784, vec![], Some(vec![]))
        );
    }

    #[test]
    fn reads_u8_matrix_and_chunks() {
        let mut m = MAGIC_MATRIX.to_be_bytes().to_vec();
        m.extend_from_slice(&4u32.to_be_bytes());
        m.extend_from_slice(&3u32.to_be_bytes());
        m.extend_from_slice(&PIX);
        let (n, p, v, l) = read(&m, None).unwrap();
        assert_eq!((n, p, v.len(), l), (4, 3, 12, None));

        let dir = tempfile::tempdir().unwrap();
        let ip = dir.path().join("i.gz");
        let lp = dir.path().join("l");
        std::fs::write(&ip, gz(&images(3, 2, 2, &PIX))).unwrap();
        std::fs::write(&lp, label_file(&[1, 2, 3])).unwrap();
        let mut r = IdxReader::open(&ip, Some(&lp)).unwrap();
        let (mut v, mut l) = (Vec::new(), Vec::new());
        assert_eq!(r.read_chunk(2, &mut v, &mut l).unwrap(), 2);
        assert_eq!((v.len(), l.clone()), (8, vec![1.0, 2.0]));
        assert_eq!(r.read_chunk(2, &mut v, &mut l).unwrap(), 1);
        assert_eq!(r.read_chunk(2, &mut v, &mut l).unwrap(), 0);
        assert_eq!(l, vec![1.0, 2.0, 3.0]);
    }

    #[test]
    fn rejects_wrong_magic() {
        let lab = label_file(&[1, 2, 3]);
        let e = err(&lab, None);
        assert!(e.contains("0x00000801") && e.contains("label file"), "{e}");
        let mut bad = images(3, 2, 2, &PIX);
        bad[3] = 0x04;
        let e = err(&bad, None);
        assert!(e.contains("0x00000804"), "{e}");
        bad[2] = 0x0d;
        let e = err(&bad, None);
        assert!(e.contains("0x00000d04") && e.contains("f32"), "{e}");
        let e = err(b"hello world, not idx", None);
        assert!(e.contains("0x68656c6c"), "{e}");
        // Image file given as the label file.
        let img = images(3, 2, 2, &PIX);
        let e = err(&img, Some(&img));
        assert!(e.contains("0x00000803") && e.contains("image file"), "{e}");
    }

    #[test]
    fn rejects_label_count_mismatch() {
        let img = images(3, 2, 2, &PIX);
        let e = err(&img, Some(&label_file(&[1, 2])));
        assert!(e.contains("2 labels") && e.contains("3 images"), "{e}");
        let e = err(&gz(&img), Some(&gz(&label_file(&[1, 2, 3, 4]))));
        assert!(e.contains("4 labels") && e.contains("3 images"), "{e}");
    }

    #[test]
    fn rejects_truncated() {
        let img = images(3, 2, 2, &PIX);
        let lab = label_file(&[1, 2, 3]);
        let e = err(&img[..img.len() - 1], None);
        assert!(e.contains("truncated"), "{e}");
        let e = err(&gz(&img[..img.len() - 1]), None);
        assert!(e.contains("truncated") && e.contains("image 2 of 3"), "{e}");
        let e = err(&img[..10], None);
        assert!(e.contains("truncated"), "{e}");
        let e = err(&img, Some(&lab[..lab.len() - 1]));
        assert!(e.contains("truncated"), "{e}");
        let e = err(&img, Some(&gz(&lab[..lab.len() - 1])));
        assert!(e.contains("truncated") && e.contains("label 2 of 3"), "{e}");
        let e = err(&img, Some(&lab[..6]));
        assert!(e.contains("truncated"), "{e}");
        // Trailing bytes.
        let mut long = img.clone();
        long.push(1);
        let e = err(&long, None);
        assert!(e.contains("unexpected bytes"), "{e}");
        let e = err(&gz(&long), None);
        assert!(e.contains("unexpected bytes"), "{e}");
        // Huge claimed sizes are rejected without allocating.
        let huge = images(u32::MAX, u32::MAX, u32::MAX, &[]);
        let e = err(&huge, None);
        assert!(e.contains("truncated") || e.contains("overflow"), "{e}");
        let e = err(&gz(&huge), None);
        assert!(e.contains("truncated") || e.contains("overflow"), "{e}");
        let e = err(&images(5, 0, 28, &[]), None);
        assert!(e.contains("no features"), "{e}");
    }
}
