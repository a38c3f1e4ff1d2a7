//! Atomic output: write to a temporary file in the destination directory, then rename it over the
//! destination. A failed or interrupted run leaves no partial output (the temporary file is removed
//! when dropped without [`AtomicFile::commit`]).

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Check that `path` names an existing regular file (not a directory), with a clear error.
pub fn check_input_file(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(Error::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "is a directory, not a file",
            ),
        )),
        Ok(_) => Ok(()),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Refuse an output path that names the input file (it would be replaced by the output).
pub fn check_not_input(input: &Path, output: &Path) -> Result<()> {
    if let (Ok(a), Ok(b)) = (std::fs::canonicalize(input), std::fs::canonicalize(output)) {
        if a == b {
            return Err(Error::param(
                "--output",
                format!(
                    "{} is the input file; refusing to overwrite it",
                    output.display()
                ),
            ));
        }
    }
    Ok(())
}

/// A file being written that appears at its destination only on [`commit`](AtomicFile::commit).
pub struct AtomicFile {
    dest: PathBuf,
    tmp: tempfile::NamedTempFile,
    writer: Option<BufWriter<File>>,
    written: u64,
}

impl AtomicFile {
    /// Start writing `dest`. Fails early if the destination directory is missing or unwritable, or
    /// if `dest` is an existing directory.
    pub fn create(dest: &Path) -> Result<AtomicFile> {
        if dest.as_os_str().is_empty() {
            return Err(Error::param("output", "the output path is empty"));
        }
        if dest.is_dir() {
            return Err(Error::io(
                dest,
                std::io::Error::new(
                    std::io::ErrorKind::IsADirectory,
                    "output path is a directory",
                ),
            ));
        }
        let dir = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix(".dprp-tmp-");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // Ordinary output-file permissions (rw-r--r--), not the 0600 of temporary files.
            builder.permissions(std::fs::Permissions::from_mode(0o644));
        }
        if !dir.is_dir() {
            return Err(Error::io(
                dest,
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!(
                        "cannot write the output: directory {} does not exist",
                        dir.display()
                    ),
                ),
            ));
        }
        // Report failures against the destination, not the temporary name.
        let tmp = builder.tempfile_in(&dir).map_err(|e| {
            Error::io(
                dest,
                std::io::Error::new(e.kind(), format!("cannot write the output: {}", e.kind())),
            )
        })?;
        let file = tmp.reopen().map_err(|e| Error::io(dest, e))?;
        Ok(AtomicFile {
            dest: dest.to_path_buf(),
            tmp,
            writer: Some(BufWriter::with_capacity(1 << 20, file)),
            written: 0,
        })
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.written
    }

    /// Append bytes.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        let w = self
            .writer
            .as_mut()
            .ok_or_else(|| Error::param("output", "write after close"))?;
        w.write_all(bytes).map_err(|e| Error::io(&self.dest, e))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Append zero bytes until the position is a multiple of `align`.
    pub fn pad_to(&mut self, align: u64) -> Result<()> {
        let rem = self.written % align;
        if rem != 0 {
            let zeros = vec![0u8; (align - rem) as usize];
            self.write_all(&zeros)?;
        }
        Ok(())
    }

    /// Overwrite bytes at `offset` (already written), e.g. to patch a header.
    pub fn patch(&mut self, offset: u64, bytes: &[u8]) -> Result<()> {
        let w = self
            .writer
            .as_mut()
            .ok_or_else(|| Error::param("output", "write after close"))?;
        let dest = &self.dest;
        w.flush().map_err(|e| Error::io(dest, e))?;
        let f = w.get_mut();
        f.seek(SeekFrom::Start(offset))
            .map_err(|e| Error::io(dest, e))?;
        f.write_all(bytes).map_err(|e| Error::io(dest, e))?;
        f.seek(SeekFrom::Start(self.written))
            .map_err(|e| Error::io(dest, e))?;
        Ok(())
    }

    /// Flush, sync and rename into place.
    pub fn commit(mut self) -> Result<()> {
        if let Some(mut w) = self.writer.take() {
            w.flush().map_err(|e| Error::io(&self.dest, e))?;
            let f = w
                .into_inner()
                .map_err(|e| Error::io(&self.dest, e.into_error()))?;
            f.sync_all().map_err(|e| Error::io(&self.dest, e))?;
        }
        let dest = self.dest.clone();
        self.tmp
            .persist(&dest)
            .map_err(|e| Error::io(&dest, e.error))?;
        Ok(())
    }
}
