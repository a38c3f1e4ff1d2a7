//! LIBSVM / svmlight text, plain or gzip-compressed.
//!
//! One example per line: `label idx:value idx:value ...`, indices 1-based and strictly
//! ascending; a feature that is not listed is 0, and a line with only a label is an all-zero row.
//! The label is parsed as a float (`+1`, `-1`, `1.0`, `3`), so every row has a label.
//!
//! Tolerated: blank lines (skipped), trailing whitespace, `\r\n` line ends, comment lines starting
//! with `#` and trailing `# ...` comments, and svmlight `qid:n` tokens (ignored). Rejected, with
//! the 1-based line number and the offending token: index 0, non-ascending or duplicate indices,
//! an index above the dimension, unparsable tokens, and NaN or infinite labels or values
//! (including values too large for f32).
//!
//! The dimension is either given, or it is the largest index in the file, which needs a pre-scan
//! (the file is read twice; the pre-scan also validates every line and counts the rows, which
//! become the [`rows_hint`](RowReader::rows_hint)). An inferred dimension is at most
//! [`MAX_INFERRED_DIM`] = 2^26: rows are read dense, so a 15-byte line `1 4000000000:1` would
//! otherwise ask for 16 GB per row. The largest public LIBSVM sets stay below it (kdd2012,
//! 54 686 452 features); beyond it the dimension must be given explicitly (`--dim`).

use std::borrow::Cow;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::npy::CHUNK_BYTES;
use super::source::open_maybe_gz;
use super::RowReader;
use crate::error::{Error, Result};

/// Largest dimension inferred from the indices of a file (2^26 features, 256 MiB per dense row);
/// a larger one must be given explicitly.
pub const MAX_INFERRED_DIM: usize = 1 << 26;

/// The longest line the text readers (CSV, LIBSVM) accept: 64 MiB, a CSV row of about four
/// million numbers. A longer one — or a stream without line ends, such as `/dev/zero` — is
/// refused with its line number instead of growing a buffer until memory runs out.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// A line source with a reusable buffer and a 1-based line counter (shared with the CSV reader).
pub(crate) struct Lines {
    pub(crate) path: PathBuf,
    input: Box<dyn BufRead + Send>,
    buf: Vec<u8>,
    line: u64,
}

impl Lines {
    pub(crate) fn open(path: &Path) -> Result<Lines> {
        Ok(Lines {
            path: path.to_path_buf(),
            input: open_maybe_gz(path)?,
            buf: Vec::new(),
            line: 0,
        })
    }

    /// The next line and its 1-based number, or `None` at the end of the input; a line longer
    /// than [`MAX_LINE_BYTES`] is an error naming it.
    pub(crate) fn next_line(&mut self) -> Result<Option<(u64, Cow<'_, str>)>> {
        self.next_line_within(MAX_LINE_BYTES)
    }

    /// [`next_line`](Self::next_line) with the bound `max` (a test sets a small one).
    pub(crate) fn next_line_within(&mut self, max: usize) -> Result<Option<(u64, Cow<'_, str>)>> {
        self.buf.clear();
        loop {
            let avail = match self.input.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(&self.path, e)),
            };
            if avail.is_empty() {
                break;
            }
            let (take, end) = match avail.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (avail.len(), false),
            };
            if self.buf.len() + take > max {
                return Err(Error::format(
                    &self.path,
                    format!(
                        "line {} of the file is longer than {} (no line end within {max} bytes): \
                         not a table of rows, or a row too wide for a text format",
                        self.line + 1,
                        crate::data::human_mib(max)
                    ),
                ));
            }
            self.buf.extend_from_slice(&avail[..take]);
            self.input.consume(take);
            if end {
                break;
            }
        }
        if self.buf.is_empty() {
            return Ok(None);
        }
        self.line += 1;
        Ok(Some((self.line, String::from_utf8_lossy(&self.buf))))
    }
}

/// Parse one line into `feats` (1-based index, value). Returns the label, or `None` for a blank
/// or comment line. Errors are messages naming the line and token.
fn parse_line(
    text: &str,
    line: u64,
    dim: Option<usize>,
    feats: &mut Vec<(usize, f32)>,
) -> std::result::Result<Option<f32>, String> {
    feats.clear();
    let text = match text.find('#') {
        Some(i) => &text[..i],
        None => text,
    };
    let mut tokens = text.split_ascii_whitespace();
    let Some(label_tok) = tokens.next() else {
        return Ok(None);
    };
    let label: f32 = label_tok.parse().map_err(|_| {
        format!("line {line} of the file: cannot parse the label '{label_tok}' as a number")
    })?;
    if !label.is_finite() {
        return Err(format!(
            "line {line} of the file: the label '{label_tok}' is not a finite number"
        ));
    }
    let mut prev = 0usize;
    for tok in tokens {
        let Some((idx_s, val_s)) = tok.split_once(':') else {
            return Err(format!(
                "line {line} of the file: expected 'index:value', found '{tok}'"
            ));
        };
        if idx_s == "qid" {
            continue;
        }
        let idx: usize = idx_s
            .parse()
            .map_err(|_| format!("line {line} of the file: bad feature index in '{tok}'"))?;
        if idx == 0 {
            return Err(format!(
                "line {line} of the file: feature index 0 in '{tok}' (indices start at 1)"
            ));
        }
        if idx <= prev {
            return Err(format!(
                "line {line} of the file: feature index {idx} in '{tok}' is not greater than the previous \
                 index {prev} (indices must be strictly ascending, without duplicates)"
            ));
        }
        if let Some(d) = dim {
            if idx > d {
                return Err(format!(
                    "line {line} of the file: feature index {idx} in '{tok}' exceeds the dimension {d}"
                ));
            }
        }
        let val: f32 = val_s.parse().map_err(|_| {
            format!("line {line} of the file: cannot parse the value in '{tok}' as a number")
        })?;
        if !val.is_finite() {
            return Err(format!(
                "line {line} of the file: the value in '{tok}' is not a finite number (as f32)"
            ));
        }
        feats.push((idx, val));
        prev = idx;
    }
    Ok(Some(label))
}

/// Streaming reader for LIBSVM / svmlight files.
pub struct SvmReader {
    lines: Lines,
    dim: usize,
    rows_hint: Option<u64>,
    feats: Vec<(usize, f32)>,
    done: bool,
}

impl SvmReader {
    /// Open `path`. With `dim` = `None` the file is pre-scanned to find the largest index.
    pub fn open(path: &Path, dim: Option<usize>) -> Result<SvmReader> {
        let mut feats = Vec::new();
        let (dim, rows_hint) = match dim {
            Some(0) => return Err(Error::param("‹dim›", "the dimension must be at least 1")),
            Some(d) => (d, None),
            None => {
                let mut lines = Lines::open(path)?;
                let (mut rows, mut max_idx) = (0u64, 0usize);
                while let Some((line, text)) = lines.next_line()? {
                    let parsed = parse_line(&text, line, None, &mut feats)
                        .map_err(|m| Error::format(path, m))?;
                    if parsed.is_some() {
                        rows += 1;
                        if let Some(&(idx, _)) = feats.last() {
                            if idx > MAX_INFERRED_DIM {
                                return Err(Error::format(
                                    path,
                                    format!(
                                        "line {line} of the file: feature index {idx} implies \
                                         more than {MAX_INFERRED_DIM} features per (dense) row; \
                                         if that is really the dimension, set it explicitly \
                                         (‹dim›)"
                                    ),
                                ));
                            }
                            max_idx = max_idx.max(idx);
                        }
                    }
                }
                if rows == 0 {
                    return Err(Error::format(
                        path,
                        "the file has no examples, so the dimension cannot be inferred",
                    ));
                }
                if max_idx == 0 {
                    return Err(Error::format(
                        path,
                        format!(
                            "none of the {rows} examples has a feature, so the dimension cannot \
                             be inferred; set it explicitly (‹dim›)"
                        ),
                    ));
                }
                (max_idx, Some(rows))
            }
        };
        Ok(SvmReader {
            lines: Lines::open(path)?,
            dim,
            rows_hint,
            feats,
            done: false,
        })
    }
}

impl RowReader for SvmReader {
    fn has_ids(&self) -> bool {
        false // row i has id i
    }
    fn format(&self) -> String {
        "libsvm".into()
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn rows_hint(&self) -> Option<u64> {
        self.rows_hint
    }
    fn has_labels(&self) -> bool {
        true
    }
    fn read_chunk(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f32>,
        labels: &mut Vec<f32>,
    ) -> Result<usize> {
        let take = max_rows.min((CHUNK_BYTES / 4 / self.dim).max(1));
        let mut rows = 0;
        while rows < take && !self.done {
            let Some((line, text)) = self.lines.next_line()? else {
                self.done = true;
                break;
            };
            let parsed = parse_line(&text, line, Some(self.dim), &mut self.feats);
            drop(text);
            let label = parsed.map_err(|m| Error::format(&self.lines.path, m))?;
            let Some(label) = label else { continue };
            let base = values.len();
            values.try_reserve(self.dim).map_err(|_| {
                Error::format(
                    &self.lines.path,
                    format!(
                        "line {line} of the file: cannot allocate a row of {} features",
                        self.dim
                    ),
                )
            })?;
            values.resize(base + self.dim, 0.0);
            let row = &mut values[base..];
            for &(idx, v) in &self.feats {
                // `parse_line` checked 1 ≤ idx ≤ dim.
                if let Some(slot) = row.get_mut(idx - 1) {
                    *slot = v;
                }
            }
            labels.push(label);
            rows += 1;
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::collect;
    use std::io::Write;

    fn gz(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    type Read = (usize, usize, Vec<f32>, Vec<f32>, Option<u64>);

    /// Lines up to the bound are read whole (with their line end), across the reader's buffer
    /// boundaries; one byte more is refused with its line number, also without any line end.
    #[test]
    fn lines_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.csv");
        let max = 20_000;
        let mut text = vec![b'1'; max - 1];
        text.push(b'\n');
        text.extend(vec![b'2'; max]);
        text.push(b'\n');
        std::fs::write(&path, &text).unwrap();
        let mut lines = Lines::open(&path).unwrap();
        let (n, first) = lines.next_line_within(max).unwrap().unwrap();
        assert_eq!((n, first.len()), (1, max));
        let e = lines.next_line_within(max).unwrap_err().to_string();
        assert!(e.contains("line 2 of the file is longer than"), "{e}");
        std::fs::write(&path, vec![0u8; max + 1]).unwrap();
        let mut lines = Lines::open(&path).unwrap();
        let e = lines.next_line_within(max).unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("no line end"), "{e}");
        // a last line without its line end, within the bound, is a line
        std::fs::write(&path, b"1,2\n3,4").unwrap();
        let mut lines = Lines::open(&path).unwrap();
        assert_eq!(lines.next_line_within(max).unwrap().unwrap().1, "1,2\n");
        assert_eq!(lines.next_line_within(max).unwrap().unwrap().1, "3,4");
        assert!(lines.next_line_within(max).unwrap().is_none());
    }

    fn read(bytes: &[u8], dim: Option<usize>) -> Result<Read> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.svm");
        std::fs::write(&path, bytes).unwrap();
        let mut r = SvmReader::open(&path, dim)?;
        let hint = r.rows_hint();
        let d = collect(&mut r)?;
        let labels = d.labels.expect("labels");
        assert_eq!(labels.len(), d.n);
        Ok((d.n, d.p, d.values, labels, hint))
    }

    fn err(bytes: &[u8], dim: Option<usize>) -> String {
        match read(bytes, dim) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.render(crate::error::Front::Cli),
        }
    }

    const TEXT: &str = "# a comment line\n\
                        +1 1:0.5 3:-2 \n\
                        -1 \n\
                        \n\
                        1.0 2:1e-3 4:7 # trailing comment\r\n\
                        3 qid:4 1:1\n\
                        \n";

    #[test]
    fn parses_with_and_without_dim() {
        let want_v = vec![
            0.5, 0.0, -2.0, 0.0, //
            0.0, 0.0, 0.0, 0.0, //
            0.0, 1e-3, 0.0, 7.0, //
            1.0, 0.0, 0.0, 0.0,
        ];
        let want_l = vec![1.0, -1.0, 1.0, 3.0];
        let (n, p, v, l, hint) = read(TEXT.as_bytes(), None).unwrap();
        assert_eq!((n, p, &v, &l, hint), (4, 4, &want_v, &want_l, Some(4)));
        let (n, p, v, l, hint) = read(&gz(TEXT.as_bytes()), None).unwrap();
        assert_eq!((n, p, &v, &l, hint), (4, 4, &want_v, &want_l, Some(4)));
        let (n, p, v, l, hint) = read(&gz(TEXT.as_bytes()), Some(6)).unwrap();
        assert_eq!((n, p, l, hint), (4, 6, want_l, None));
        assert_eq!(&v[6..12], &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(v[12 + 3], 7.0);
        // No final newline.
        let (n, p, v, _, _) = read(b"1 2:3", None).unwrap();
        assert_eq!((n, p, v), (1, 2, vec![0.0, 3.0]));
    }

    #[test]
    fn chunked_reads_match() {
        let text: String = (1..=25).map(|i| format!("{i} {i}:{i}\n")).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.svm.gz");
        std::fs::write(&path, gz(text.as_bytes())).unwrap();
        let mut r = SvmReader::open(&path, None).unwrap();
        assert_eq!(
            (r.dim(), r.rows_hint(), r.has_labels()),
            (25, Some(25), true)
        );
        let (mut v, mut l) = (Vec::new(), Vec::new());
        let mut total = 0;
        loop {
            let got = r.read_chunk(4, &mut v, &mut l).unwrap();
            assert!(got <= 4);
            if got == 0 {
                break;
            }
            total += got;
        }
        assert_eq!(total, 25);
        assert_eq!(v.len(), 25 * 25);
        for i in 0..25 {
            assert_eq!(v[i * 25 + i], (i + 1) as f32);
            assert_eq!(l[i], (i + 1) as f32);
        }
    }

    #[test]
    fn rejects_index_above_dim() {
        let e = err(b"1 1:1\n-1 2:1 5:1\n", Some(4));
        assert!(
            e.contains("line 2") && e.contains("index 5") && e.contains("dimension 4"),
            "{e}"
        );
        let e = err(&gz(b"1 1:1\n-1 2:1 5:1\n"), Some(4));
        assert!(e.contains("line 2") && e.contains("index 5"), "{e}");
    }

    #[test]
    fn rejects_bad_indices() {
        let e = err(b"1 1:1\n\n1 0:1\n", None);
        assert!(
            e.contains("line 3") && e.contains("'0:1'") && e.contains("index 0"),
            "{e}"
        );
        let e = err(b"1 3:1 2:1\n", Some(5));
        assert!(
            e.contains("line 1") && e.contains("'2:1'") && e.contains("ascending"),
            "{e}"
        );
        let e = err(b"1 2:1 2:1\n", None);
        assert!(
            e.contains("line 1") && e.contains("'2:1'") && e.contains("duplicates"),
            "{e}"
        );
        let e = err(b"1 -2:1\n", None);
        assert!(e.contains("line 1") && e.contains("'-2:1'"), "{e}");
        let e = err(b"1 99999999999999999999999:1\n", None);
        assert!(
            e.contains("line 1") && e.contains("bad feature index"),
            "{e}"
        );
    }

    #[test]
    fn rejects_bad_tokens_and_values() {
        let e = err(b"1 1:1\nabc 1:1\n", None);
        assert!(e.contains("line 2") && e.contains("'abc'"), "{e}");
        let e = err(b"1 1:1\n1 1:x\n", Some(3));
        assert!(e.contains("line 2") && e.contains("'1:x'"), "{e}");
        let e = err(b"1 1:1 junk\n", None);
        assert!(e.contains("line 1") && e.contains("'junk'"), "{e}");
        let e = err(b"1 1:nan\n", None);
        assert!(
            e.contains("line 1") && e.contains("'1:nan'") && e.contains("finite"),
            "{e}"
        );
        let e = err(b"1 1:inf\n", Some(2));
        assert!(
            e.contains("line 1") && e.contains("'1:inf'") && e.contains("finite"),
            "{e}"
        );
        let e = err(b"1 1:1e40\n", Some(2));
        assert!(e.contains("'1:1e40'") && e.contains("finite"), "{e}");
        let e = err(b"1 1:1\n\nnan 1:1\n", Some(2));
        assert!(e.contains("line 3") && e.contains("label 'nan'"), "{e}");
        let e = err(b"-inf 1:1\n", None);
        assert!(e.contains("line 1") && e.contains("label '-inf'"), "{e}");
    }

    #[test]
    fn rejects_uninferable_dimension() {
        let e = err(b"1\n-1\n", None);
        assert!(e.contains("--dim"), "{e}");
        let e = err(b"\n# only comments\n", None);
        assert!(e.contains("no examples"), "{e}");
        let e = err(b"1 1:1\n", Some(0));
        assert!(e.contains("--dim"), "{e}");
        // With a dimension, label-only rows and empty files are fine.
        assert_eq!(read(b"1\n-1\n", Some(2)).unwrap().2, vec![0.0; 4]);
        assert_eq!(read(b"", Some(2)).unwrap().0, 0);
    }
}
