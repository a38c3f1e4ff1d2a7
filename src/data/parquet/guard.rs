//! Reading Parquet files that may be damaged or hostile: the `parquet` crate is handed a file that
//! ends strictly ([`StrictFile`]) whose footer has been checked ([`super::footer`]), never the
//! embedded Arrow schema ([`reader_options`]), and
//! every page header of the columns read is checked before the crate sizes a buffer or a
//! dictionary from it ([`check_pages`]); a panic inside the crate becomes an error ([`guarded`]). Each of these
//! answers an input the fuzzer found (`fuzz/README.md`, `cli/tests/fuzz_regressions.rs`).

use std::fs::File;
use std::path::Path;

use parquet::arrow::arrow_reader::ArrowReaderOptions;

use crate::error::{Error, Result};

/// How dprp opens Parquet files: the Arrow schema that Arrow writers embed in the key-value
/// metadata (`ARROW:schema`, an IPC-encoded flatbuffer) is ignored and the Arrow types come from
/// the Parquet schema alone. That hint only restores types Parquet lacks (a `fixed_size_list`
/// reads back as a `list` of the same values, which dprp reads alike), and decoding it is where
/// a hostile file made the `arrow-ipc` crate panic (`fuzz/`, target `parquet`); without it the
/// same file is an error.
pub fn reader_options() -> ArrowReaderOptions {
    ArrowReaderOptions::new().with_skip_arrow_metadata(true)
}

/// Run `f`, which calls the `parquet` crate on a file, turning a panic inside that crate into an
/// error naming `path`. The crate checks some footer fields with assertions (fuzzing found
/// "column start and length should not be negative" in `ColumnChunkMetaData::byte_range` for a
/// hostile footer): dprp must not panic on any input, so every call into it on a file's bytes runs
/// here. While `f` runs, the panic message is kept for the error instead of being printed.
pub fn guarded<T>(path: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
    quiet_panics::install();
    let _quiet = quiet_panics::Quiet::enter();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => Err(Error::format(
            path,
            format!(
                "the Parquet reader failed on this file ({}): it is damaged or not Parquet",
                quiet_panics::last().unwrap_or_else(|| "an internal check".into())
            ),
        )),
    }
}

/// A panic hook that stays silent on the threads inside [`guarded`] and keeps the message.
mod quiet_panics {
    use std::cell::{Cell, RefCell};
    use std::sync::Once;

    thread_local! {
        static DEPTH: Cell<u32> = const { Cell::new(0) };
        static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
    }

    /// Chain the hook in front of the one installed before (once per process).
    pub fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if DEPTH.with(|d| d.get()) > 0 {
                    let msg = info
                        .payload()
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| info.payload().downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "a panic".into());
                    LAST.with(|l| *l.borrow_mut() = Some(msg));
                } else {
                    previous(info);
                }
            }));
        });
    }

    /// Marks the current thread as inside [`super::guarded`] while alive.
    pub struct Quiet;

    impl Quiet {
        pub fn enter() -> Quiet {
            DEPTH.with(|d| d.set(d.get() + 1));
            LAST.with(|l| *l.borrow_mut() = None);
            Quiet
        }
    }

    impl Drop for Quiet {
        fn drop(&mut self) {
            DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
        }
    }

    /// The message of the last panic caught on this thread.
    pub fn last() -> Option<String> {
        LAST.with(|l| l.borrow_mut().take())
    }
}

/// A Parquet file as the `parquet` crate reads it, strict about its end: a read that starts at
/// or past the end of the file is an error, not the `Ok(0)` of a plain file. Parquet always
/// knows how many bytes it wants, so a read past the end only happens on a damaged file — where
/// the crate, told that a thrift field or page is gigabytes long, would otherwise retry empty
/// reads millions of times (fuzzing found a 900-byte file that took 7 s of `read` calls, 3.4
/// million of them). `get_bytes` checks the range against the file's length before allocating.
pub struct StrictFile {
    file: File,
    len: u64,
}

impl StrictFile {
    /// Open `path`.
    pub fn open(path: &Path) -> Result<StrictFile> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let mut f = StrictFile { file, len };
        f.check_footer(path)?;
        Ok(f)
    }

    /// Check the footer before the crate decodes it ([`super::footer`]): the crate reserves
    /// memory by counts in it that a hostile file sets to billions.
    fn check_footer(&mut self, path: &Path) -> Result<()> {
        use std::io::{Read, Seek, SeekFrom};
        if self.len < 8 {
            return Ok(());
        }
        let io = |e| Error::io(path, e);
        let mut last8 = [0u8; 8];
        self.file.seek(SeekFrom::End(-8)).map_err(io)?;
        self.file.read_exact(&mut last8).map_err(io)?;
        let Some(n) = super::footer::tail_len(&last8).filter(|&n| n <= self.len) else {
            return Ok(());
        };
        let mut tail = vec![0u8; n as usize];
        self.file.seek(SeekFrom::End(-(n as i64))).map_err(io)?;
        self.file.read_exact(&mut tail).map_err(io)?;
        self.file.rewind().map_err(io)?;
        super::footer::check_tail(path, &tail, self.len)
    }
}

/// A reader of a [`StrictFile`] from some offset on.
pub struct StrictRead {
    file: File,
    pos: u64,
    len: u64,
}

impl std::io::Read for StrictRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.pos >= self.len {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "a read past the end of the file",
            ));
        }
        let got = self.file.read(buf)?;
        self.pos += got as u64;
        Ok(got)
    }
}

impl parquet::file::reader::Length for StrictFile {
    fn len(&self) -> u64 {
        self.len
    }
}

impl parquet::file::reader::ChunkReader for StrictFile {
    type T = std::io::BufReader<StrictRead>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        use std::io::Seek;
        let mut file = self.file.try_clone()?;
        file.seek(std::io::SeekFrom::Start(start))?;
        Ok(std::io::BufReader::new(StrictRead {
            file,
            pos: start,
            len: self.len,
        }))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        use std::io::{Read, Seek};
        let end = start.checked_add(length as u64).filter(|&e| e <= self.len);
        if end.is_none() {
            return Err(parquet::errors::ParquetError::EOF(format!(
                "{length} bytes at offset {start} run past the end of the {}-byte file",
                self.len
            )));
        }
        let mut file = self.file.try_clone()?;
        file.seek(std::io::SeekFrom::Start(start))?;
        let mut buf = vec![0u8; length];
        file.read_exact(&mut buf)?;
        Ok(buf.into())
    }
}

/// The largest page dprp lets the `parquet` crate decompress: the crate reserves a page's
/// declared uncompressed size before decompressing it, and a few hundred bytes of Zstandard or
/// LZ4 can legitimately expand to that size (fuzzing found ~1 KB files that made it reserve and
/// fill 2 GB). Writers cut pages at about 1 MiB (pyarrow, Spark, DuckDB) — a page holds at least
/// one row, so this also bounds a row at 64M float32 values.
pub const MAX_PAGE_BYTES: i64 = 256 << 20;

/// Check every page header of the columns `leaves` (leaf column indices) in every row group of
/// the file before the `parquet` crate reads them, walking each column chunk as the crate does
/// (header, then `compressed_page_size` bytes, until the chunk's bytes are used):
///
/// - a page must be a data, data v2 or dictionary page (the crate's page reader steps over an
///   index page differently when peeking and when reading, so its next header is not where a
///   walk can check it; no writer produces index pages);
/// - sizes non-negative, the compressed size within the chunk, the uncompressed size at most
///   `MAX_PAGE_BYTES` (see there);
/// - a dictionary page of n values must have the bytes for them: the crate sizes a dictionary by
///   its header's value count without looking at the page (fuzzing found a 2.6 KB file whose
///   header claimed 6·10⁸ values: 4.7 GB allocated and filled). A plain-encoded dictionary of n
///   values needs at least n × (value width) bytes — 4 for a byte array's length prefix, one bit
///   for a boolean.
///
/// Headers are read with `footer::page_header`, which reads their thrift as the crate
/// does. Nothing here is decompressed.
pub fn check_pages(
    path: &Path,
    md: &parquet::file::metadata::ParquetMetaData,
    leaves: &[usize],
) -> Result<()> {
    use parquet::basic::{Compression, Type as Physical};
    use std::io::{Read, Seek, SeekFrom};
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let file_len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut buf = Vec::new();
    for (g, rg) in md.row_groups().iter().enumerate() {
        for &c in leaves {
            let Some(col) = rg.columns().get(c) else {
                continue;
            };
            let bad = |m: String| {
                Error::format(
                    path,
                    format!(
                        "row group {g}, column {}: {m}: the file is damaged",
                        col.column_path()
                    ),
                )
            };
            let start = col
                .dictionary_page_offset()
                .unwrap_or(col.data_page_offset());
            let (Ok(mut pos), Ok(len)) =
                (u64::try_from(start), u64::try_from(col.compressed_size()))
            else {
                return Err(bad("a negative offset or size".into()));
            };
            let end = pos
                .checked_add(len)
                .filter(|&e| e <= file_len)
                .ok_or_else(|| {
                    bad(format!(
                        "its {len} bytes at {pos} run past the end of the file"
                    ))
                })?;
            while pos < end {
                let page = {
                    let mut want = (end - pos).min(16 << 10);
                    loop {
                        buf.resize(want as usize, 0);
                        file.seek(SeekFrom::Start(pos))
                            .map_err(|e| Error::io(path, e))?;
                        file.read_exact(&mut buf).map_err(|e| Error::io(path, e))?;
                        match super::footer::page_header(&buf) {
                            Ok(p) => break p,
                            Err(m)
                                if m.contains("ends early") && want < (end - pos).min(1 << 20) =>
                            {
                                want = (end - pos).min(1 << 20);
                            }
                            Err(m) => return Err(bad(format!("a page header at byte {pos}: {m}"))),
                        }
                    }
                };
                if !matches!(page.kind, 0 | 2 | 3) {
                    return Err(bad(format!(
                        "a page of type {} at byte {pos} (dprp reads data and dictionary pages only)",
                        page.kind
                    )));
                }
                let body = pos + page.header_len as u64;
                if page.compressed < 0
                    || page.uncompressed < 0
                    || page.compressed as u64 > end.saturating_sub(body)
                {
                    return Err(bad(format!(
                        "the page at byte {pos} claims {} compressed and {} uncompressed bytes",
                        page.compressed, page.uncompressed
                    )));
                }
                if page.uncompressed > MAX_PAGE_BYTES {
                    return Err(bad(format!(
                        "the page at byte {pos} would decompress to {} bytes, more than the {} \
                         MiB dprp accepts for one page",
                        page.uncompressed,
                        MAX_PAGE_BYTES >> 20
                    )));
                }
                if let (2, Some(n)) = (page.kind, page.dictionary_values) {
                    let bits_per_value: i128 = match col.column_type() {
                        Physical::BOOLEAN => 1,
                        Physical::INT32 | Physical::FLOAT | Physical::BYTE_ARRAY => 32,
                        Physical::INT64 | Physical::DOUBLE => 64,
                        Physical::INT96 => 96,
                        Physical::FIXED_LEN_BYTE_ARRAY => {
                            8 * i128::from(col.column_descr().type_length().max(0))
                        }
                    };
                    // the page's bytes after decompression (none for an uncompressed chunk)
                    let bytes = if col.compression() == Compression::UNCOMPRESSED {
                        page.compressed
                    } else {
                        page.uncompressed
                    };
                    if n < 0 || i128::from(n) * bits_per_value > i128::from(bytes) * 8 {
                        return Err(bad(format!(
                            "its dictionary page claims {n} values in {bytes} bytes"
                        )));
                    }
                }
                pos = body + page.compressed as u64;
            }
        }
    }
    Ok(())
}
