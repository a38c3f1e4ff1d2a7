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
