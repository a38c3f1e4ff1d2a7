//! Opening input files: plain or gzip-compressed (detected by the gzip magic bytes, not the name).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use crate::error::{Error, Result};

/// Capacity of the read buffers of input files (1 MiB). Fuzz builds (`cfg(fuzzing)`, see
/// `fuzz/README.md`) use 4 KiB: the parsing is the same, buffer refills fall inside the small
/// fuzz inputs, and the fuzzer is not slowed down by zeroing a mebibyte per input.
pub const READ_BUF: usize = if cfg!(fuzzing) { 4 << 10 } else { 1 << 20 };

/// Open `path` for buffered reading, transparently decompressing gzip.
pub fn open_maybe_gz(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut magic = [0u8; 2];
    let got = read_up_to(&mut file, &mut magic).map_err(|e| Error::io(path, e))?;
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    if got == 2 && magic == [0x1f, 0x8b] {
        Ok(Box::new(BufReader::with_capacity(
            READ_BUF,
            MultiGzDecoder::new(BufReader::with_capacity(READ_BUF, file)),
        )))
    } else {
        Ok(Box::new(BufReader::with_capacity(READ_BUF, file)))
    }
}

/// Read as many bytes as are available, up to `buf.len()`; returns the count.
pub fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(m) => filled += m,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Read exactly `buf.len()` bytes or report a truncated file naming `what` was being read.
pub fn read_exact_or_truncated(
    r: &mut impl Read,
    buf: &mut [u8],
    path: &Path,
    what: &str,
) -> Result<()> {
    let got = read_up_to(r, buf).map_err(|e| Error::io(path, e))?;
    if got < buf.len() {
        return Err(Error::format(
            path,
            format!(
                "file is truncated: expected {} bytes for {what}, found {got}",
                buf.len()
            ),
        ));
    }
    Ok(())
}

/// The rows `skip..skip + take` of another reader (a shard's part of an input): the first `skip`
/// rows are read and dropped, then at most `take` rows are passed on.
pub struct Window<'r> {
    inner: Box<dyn super::RowReader + 'r>,
    skip: u64,
    left: Option<u64>,
}

impl<'r> Window<'r> {
    /// Rows `skip..skip + take` of `inner` (`take = None`: to the end).
    pub fn new(inner: Box<dyn super::RowReader + 'r>, skip: u64, take: Option<u64>) -> Self {
        Window {
            inner,
            skip,
            left: take,
        }
    }

    fn skip_ahead(&mut self) -> Result<()> {
        self.inner.skip_rows(self.skip)?;
        self.skip = 0;
        Ok(())
    }
}

impl super::RowReader for Window<'_> {
    fn format(&self) -> String {
        self.inner.format()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn rows_hint(&self) -> Option<u64> {
        let rest = self.inner.rows_hint()?.saturating_sub(self.skip);
        Some(self.left.map_or(rest, |t| rest.min(t)))
    }
    fn has_labels(&self) -> bool {
        self.inner.has_labels()
    }
    fn scaling(&self) -> super::Scaling {
        self.inner.scaling()
    }
    fn has_ids(&self) -> bool {
        self.inner.has_ids()
    }
    fn read_chunk(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f32>,
        labels: &mut Vec<f32>,
    ) -> Result<usize> {
        self.read_rows(max_rows, values, labels, &mut Vec::new())
    }
    fn read_rows(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f32>,
        labels: &mut Vec<f32>,
        ids: &mut Vec<u64>,
    ) -> Result<usize> {
        if self.skip > 0 {
            self.skip_ahead()?;
        }
        let want = match self.left {
            Some(left) => (max_rows as u64).min(left) as usize,
            None => max_rows,
        };
        if want == 0 {
            return Ok(0);
        }
        let got = self.inner.read_rows(want, values, labels, ids)?;
        if let Some(left) = self.left.as_mut() {
            *left -= got as u64;
        }
        Ok(got)
    }
}
