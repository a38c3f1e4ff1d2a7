//! Comma-separated numbers, one row per line, plain or gzip-compressed.
//!
//! Every field is trimmed of surrounding whitespace and parsed as a number; quoting is not
//! supported (the format is for numeric matrices). Blank lines are skipped, `\r\n` line ends and a
//! UTF-8 byte-order mark are tolerated. Every data row must have as many fields as the first one.
//!
//! **Header.** `Some(true)` skips the first non-blank line, `Some(false)` never skips, and `None`
//! skips the first non-blank line if any of its fields does not parse as a number.
//!
//! **Labels.** With a label column (zero-based), that column is removed from the features and
//! returned as the row's label.
//!
//! Errors name the 1-based line number and, for bad values, the 1-based column (field) number.
//! NaN and infinite values (including numbers too large for f32) are rejected.

use std::path::Path;

use super::libsvm::Lines;
use super::npy::CHUNK_BYTES;
use super::RowReader;
use crate::error::{Error, Result};

/// The first data row, parsed by `open` and handed out by the first `read_chunk`.
struct FirstRow {
    values: Vec<f32>,
    label: Option<f32>,
}

/// Streaming reader for numeric CSV.
pub struct CsvReader {
    lines: Lines,
    /// Fields per line (features plus the label column, if any).
    fields: usize,
    /// Line number of the first data row (for ragged-row messages).
    first_line: u64,
    label_column: Option<usize>,
    pending: Option<FirstRow>,
    done: bool,
}

/// Strip a UTF-8 byte-order mark and surrounding whitespace.
fn clean(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text).trim()
}

fn field_count(text: &str) -> usize {
    text.bytes().filter(|&b| b == b',').count() + 1
}

impl CsvReader {
    /// Open `path`, handle the header and read the first data row to learn the number of fields.
    pub fn open(
        path: &Path,
        header: Option<bool>,
        label_column: Option<usize>,
    ) -> Result<CsvReader> {
        let mut lines = Lines::open(path)?;
        let mut header_pending = header != Some(false);
        let (line, fields, first) = loop {
            let Some((line, raw)) = lines.next_line()? else {
                return Err(Error::format(path, "the file has no data rows"));
            };
            let text = clean(&raw);
            if text.is_empty() {
                continue;
            }
            if header_pending {
                header_pending = false;
                let is_header = header == Some(true)
                    || text.split(',').any(|f| f.trim().parse::<f32>().is_err());
                if is_header {
                    continue;
                }
            }
            let fields = field_count(text);
            if let Some(c) = label_column {
                if c >= fields {
                    return Err(Error::format(
                        path,
                        format!(
                            "label column {c} (counted from 0) does not exist: line {line} of \
                             the file, the first data row, has {fields} field(s)"
                        ),
                    ));
                }
                if fields == 1 {
                    return Err(Error::format(
                        path,
                        format!(
                            "line {line} of the file has only the label column: no features \
                             would be left"
                        ),
                    ));
                }
            }
            let mut values = Vec::with_capacity(fields);
            let mut labels = Vec::with_capacity(1);
            parse_row(text, line, label_column, &mut values, &mut labels)
                .map_err(|m| Error::format(path, m))?;
            let first = FirstRow {
                values,
                label: labels.first().copied(),
            };
            break (line, fields, first);
        };
        Ok(CsvReader {
            lines,
            fields,
            first_line: line,
            label_column,
            pending: Some(first),
            done: false,
        })
    }
}

/// Parse the fields of one (non-blank, field-count-checked) line.
fn parse_row(
    text: &str,
    line: u64,
    label_column: Option<usize>,
    values: &mut Vec<f32>,
    labels: &mut Vec<f32>,
) -> std::result::Result<(), String> {
    for (col, field) in text.split(',').enumerate() {
        let field = field.trim();
        let v: f32 = field.parse().map_err(|_| {
            format!(
                "line {line} of the file, column {col} (counted from 0): cannot parse '{field}' \
                 as a number"
            )
        })?;
        if !v.is_finite() {
            return Err(format!(
                "line {line} of the file, column {col} (counted from 0): '{field}' is not a \
                 finite number (as f32)"
            ));
        }
        if Some(col) == label_column {
            labels.push(v);
        } else {
            values.push(v);
        }
    }
    Ok(())
}

impl RowReader for CsvReader {
    fn has_ids(&self) -> bool {
        false // row i has id i
    }
    fn format(&self) -> String {
        "csv".into()
    }
    fn dim(&self) -> usize {
        self.fields - usize::from(self.label_column.is_some())
    }
    fn rows_hint(&self) -> Option<u64> {
        None
    }
    fn has_labels(&self) -> bool {
        self.label_column.is_some()
    }
    fn read_chunk(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f32>,
        labels: &mut Vec<f32>,
    ) -> Result<usize> {
        let take = max_rows.min((CHUNK_BYTES / 4 / self.fields).max(1));
        let mut rows = 0;
        if take > 0 {
            if let Some(first) = self.pending.take() {
                values.extend_from_slice(&first.values);
                labels.extend(first.label);
                rows += 1;
            }
        }
        while rows < take && !self.done {
            let Some((line, text)) = self.lines.next_line()? else {
                self.done = true;
                break;
            };
            let text = clean(&text);
            if text.is_empty() {
                continue;
            }
            let n = field_count(text);
            if n != self.fields {
                return Err(Error::format(
                    &self.lines.path,
                    format!(
                        "line {line} of the file has {n} field(s) but the first data row (line {}) \
                         has {}",
                        self.first_line, self.fields
                    ),
                ));
            }
            if let Err(m) = parse_row(text, line, self.label_column, values, labels) {
                return Err(Error::format(&self.lines.path, m));
            }
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

    type Read = (usize, usize, Vec<f32>, Option<Vec<f32>>);

    fn read(bytes: &[u8], header: Option<bool>, label: Option<usize>) -> Result<Read> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.csv");
        std::fs::write(&path, bytes).unwrap();
        let mut r = CsvReader::open(&path, header, label)?;
        let d = collect(&mut r)?;
        assert_eq!(d.values.len(), d.n * d.p);
        Ok((d.n, d.p, d.values, d.labels))
    }

    fn err(bytes: &[u8], header: Option<bool>, label: Option<usize>) -> String {
        match read(bytes, header, label) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn parses_with_header_detection() {
        let text = b"a, b ,c\n1,2,3\n\n 4 , -5.5,6e1 \r\n";
        let want = (2, 3, vec![1.0, 2.0, 3.0, 4.0, -5.5, 60.0], None);
        assert_eq!(read(text, None, None).unwrap(), want);
        assert_eq!(read(text, Some(true), None).unwrap(), want);
        assert_eq!(read(&gz(text), None, None).unwrap(), want);
        let e = err(text, Some(false), None);
        assert!(
            e.contains("line 1 of the file, column 0") && e.contains("'a'"),
            "{e}"
        );
        // Numeric first line: not a header unless forced.
        let text = b"\n1,2\n3,4\n";
        assert_eq!(read(text, None, None).unwrap().0, 2);
        assert_eq!(read(text, Some(false), None).unwrap().0, 2);
        assert_eq!(
            read(text, Some(true), None).unwrap(),
            (1, 2, vec![3.0, 4.0], None)
        );
        // A byte-order mark does not turn the first data row into a header.
        assert_eq!(read("\u{feff}1,2\n".as_bytes(), None, None).unwrap().0, 1);
    }

    #[test]
    fn label_column() {
        let text = b"x,label,y\n1,7,2\n3,8,4\n";
        assert_eq!(
            read(text, None, Some(1)).unwrap(),
            (2, 2, vec![1.0, 2.0, 3.0, 4.0], Some(vec![7.0, 8.0]))
        );
        assert_eq!(
            read(&gz(text), None, Some(2)).unwrap(),
            (2, 2, vec![1.0, 7.0, 3.0, 8.0], Some(vec![2.0, 4.0]))
        );
        let e = err(text, None, Some(3));
        assert!(e.contains("label column 3") && e.contains("3 field"), "{e}");
        let e = err(b"1\n2\n", None, Some(0));
        assert!(e.contains("no features"), "{e}");
    }

    #[test]
    fn chunked_reads_match() {
        let text: String = (0..30).map(|i| format!("{i},{}\n", i * 2)).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.csv.gz");
        std::fs::write(&path, gz(text.as_bytes())).unwrap();
        let mut r = CsvReader::open(&path, None, Some(0)).unwrap();
        assert_eq!((r.dim(), r.has_labels()), (1, true));
        let (mut v, mut l) = (Vec::new(), Vec::new());
        assert_eq!(r.read_chunk(0, &mut v, &mut l).unwrap(), 0);
        let mut total = 0;
        loop {
            let got = r.read_chunk(7, &mut v, &mut l).unwrap();
            assert!(got <= 7);
            if got == 0 {
                break;
            }
            total += got;
        }
        assert_eq!(total, 30);
        assert_eq!(l, (0..30).map(|i| i as f32).collect::<Vec<_>>());
        assert_eq!(v, (0..30).map(|i| (2 * i) as f32).collect::<Vec<_>>());
    }

    #[test]
    fn rejects_ragged_rows() {
        let e = err(b"h1,h2\n1,2\n3,4\n5,6,7\n", None, None);
        assert!(
            e.contains("line 4 of the file has 3 field(s)") && e.contains("(line 2) has 2"),
            "{e}"
        );
        let e = err(&gz(b"1,2,3\n\n4,5\n"), None, None);
        assert!(
            e.contains("line 3 of the file has 2") && e.contains("has 3"),
            "{e}"
        );
    }

    #[test]
    fn rejects_bad_values() {
        let e = err(b"1,2\n3,abc\n", None, None);
        assert!(
            e.contains("line 2 of the file, column 1") && e.contains("'abc'"),
            "{e}"
        );
        let e = err(b"1,2\n3,\n", None, None);
        assert!(
            e.contains("line 2 of the file, column 1") && e.contains("''"),
            "{e}"
        );
        let e = err(b"1,2\nnan,4\n", None, None);
        assert!(
            e.contains("line 2 of the file, column 0") && e.contains("finite"),
            "{e}"
        );
        let e = err(b"1,inf\n", None, None);
        assert!(
            e.contains("line 1 of the file, column 1") && e.contains("finite"),
            "{e}"
        );
        let e = err(b"1,2\n3,1e39\n", Some(false), None);
        assert!(
            e.contains("line 2 of the file, column 1") && e.contains("finite"),
            "{e}"
        );
        let e = err(b"1,2\n3,-inf\n", None, Some(1));
        assert!(
            e.contains("line 2 of the file, column 1") && e.contains("finite"),
            "{e}"
        );
    }

    #[test]
    fn rejects_empty() {
        let e = err(b"", None, None);
        assert!(e.contains("no data rows"), "{e}");
        let e = err(b"a,b\n\n", None, None);
        assert!(e.contains("no data rows"), "{e}");
        let e = err(&gz(b"1,2\n"), Some(true), None);
        assert!(e.contains("no data rows"), "{e}");
    }
}
