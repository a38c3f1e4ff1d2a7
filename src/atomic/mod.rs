//! Atomic output: write to a temporary file in the destination directory, then rename it over the
//! destination. A failed or interrupted run leaves no partial output:
//!
//! * an error, or a panic that unwinds, drops the [`AtomicFile`] without
//!   [`commit`](AtomicFile::commit), which removes the temporary file;
//! * a signal (SIGINT, SIGTERM, SIGHUP) does not unwind. Every temporary output not yet committed
//!   is therefore also listed in a process-wide registry, and the CLI's signal handler calls
//!   [`remove_pending`], which deletes them and hands back the registry's lock so that no commit
//!   can rename a file into place between the clean-up and the exit;
//! * a process killed outright (SIGKILL) leaves its temporary file, which holds a lock no living
//!   process holds: the next output written in that directory removes it ([`stale`]).
//!
//! What an output may replace is decided in one place, [`target`]: a regular file only, and only
//! when the caller says so ([`Existing::Replace`]); never a link, device, pipe, socket or
//! directory.
//!
//! Outputs made of several files (an evaluation's report directory) are written into a
//! [`StagingDir`] and moved into place together at the end.

pub mod stale;
pub mod target;

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::error::{Error, Result};
use target::output_parent;
pub use target::{
    check_dir_output, check_file_output, check_input_file, check_not_input, check_not_link,
    create_output_dir, free_space, Existing,
};

/// A temporary output not yet committed: (registry id, temporary path, destination).
type Pending = (u64, PathBuf, PathBuf);

static PENDING: Mutex<Vec<Pending>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

fn registry() -> MutexGuard<'static, Vec<Pending>> {
    // A panic while the lock was held cannot leave the list inconsistent (pushes and removals
    // are single operations), so a poisoned lock is still usable.
    PENDING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Create a temporary output with `make` and list it, under the registry's lock so that a signal
/// handler cannot run between the creation and the listing.
fn create_registered<T>(
    dest: &Path,
    make: impl FnOnce() -> std::io::Result<T>,
    path_of: impl Fn(&T) -> &Path,
) -> Result<(T, u64)> {
    let mut list = registry();
    // Report failures against the destination, not the temporary name.
    let made = make().map_err(|e| {
        Error::io(
            dest,
            std::io::Error::new(e.kind(), format!("cannot write the output: {}", e.kind())),
        )
    })?;
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    list.push((id, path_of(&made).to_path_buf(), dest.to_path_buf()));
    Ok((made, id))
}

fn unregister_locked(list: &mut Vec<Pending>, id: u64) {
    list.retain(|(i, _, _)| *i != id);
}

/// Delete every temporary output not yet committed (files, or staging directories with their
/// contents) and return the destinations they were meant for, with the registry's lock held:
/// while the caller keeps the guard, no output can be committed. Meant for a signal handler that
/// then exits the process.
pub fn remove_pending() -> (MutexGuard<'static, Vec<Pending>>, Vec<PathBuf>) {
    let mut list = registry();
    let mut dests = Vec::new();
    for (_, tmp, dest) in list.drain(..) {
        let _ = if tmp.is_dir() {
            std::fs::remove_dir_all(&tmp)
        } else {
            std::fs::remove_file(&tmp)
        };
        dests.push(dest);
    }
    (list, dests)
}

/// A file being written that appears at its destination only on [`commit`](AtomicFile::commit).
pub struct AtomicFile {
    dest: PathBuf,
    /// `None` only after commit or drop.
    tmp: Option<tempfile::NamedTempFile>,
    writer: Option<BufWriter<File>>,
    written: u64,
    /// Write-behind ([`WRITE_BEHIND`]): where the current window started, and the flush of the
    /// windows before it, if one is running.
    started: u64,
    flush: Option<Flush>,
    id: u64,
    /// Whether an existing regular file at `dest` is replaced.
    existing: Existing,
}

/// Bytes of new output after which [`AtomicFile`] has them made durable in the background (a
/// thread calls `fdatasync` on the file while the writer goes on), waiting first for the previous
/// such flush: the device works while the pipeline computes, dirty pages stay bounded by about two
/// windows, and the final `fsync` of [`commit`](AtomicFile::commit) has at most two windows left
/// instead of the whole file. On a 2-core VM whose disk caches writes, the final `fsync` of a
/// 123 MB release took 0.095 s at the end of a 0.85 s publish without this. Durability is still
/// the final `fsync`'s job; this only moves the device work earlier.
pub const WRITE_BEHIND: u64 = 16 << 20;

/// The background flush of a window (see [`WRITE_BEHIND`]).
type Flush = std::thread::JoinHandle<std::io::Result<()>>;

impl AtomicFile {
    /// Start writing `dest`. Fails early if the destination directory is missing or unwritable,
    /// or if `dest` exists and may not be replaced ([`check_file_output`]: a regular file only,
    /// with [`Existing::Replace`]). Stale temporary outputs of dead processes in the directory
    /// are removed first ([`stale::sweep`]).
    pub fn create(dest: &Path, existing: Existing) -> Result<AtomicFile> {
        check_file_output(dest, existing)?;
        let mut builder = tempfile::Builder::new();
        builder.prefix(stale::PREFIX);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // Ordinary output-file permissions (rw-r--r--), not the 0600 of temporary files.
            builder.permissions(std::fs::Permissions::from_mode(0o644));
        }
        let dir = output_parent(dest)?;
        stale::sweep(&dir);
        let (tmp, id) = create_registered(dest, || builder.tempfile_in(&dir), |t| t.path())?;
        // held until the file is renamed into place or removed: a killed process's file is
        // then known for stale by the next run (stale.rs)
        stale::try_lock(tmp.as_file()).map_err(|e| Error::io(dest, e))?;
        let file = tmp.reopen().map_err(|e| Error::io(dest, e))?;
        Ok(AtomicFile {
            dest: dest.to_path_buf(),
            tmp: Some(tmp),
            writer: Some(BufWriter::with_capacity(1 << 20, file)),
            written: 0,
            started: 0,
            flush: None,
            id,
            existing,
        })
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.written
    }

    /// Append bytes.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        if self.writer.is_none() {
            return Err(Error::param("output", "write after close"));
        }
        let mut rest = bytes;
        while !rest.is_empty() {
            let w = self
                .writer
                .as_mut()
                .ok_or_else(|| Error::param("output", "write after close"))?;
            // Pieces that end on window boundaries, so the device starts on each window as soon
            // as it is complete, also within one large write.
            let room = (WRITE_BEHIND - (self.written - self.started)) as usize;
            let (piece, tail) = rest.split_at(room.min(rest.len()));
            w.write_all(piece).map_err(|e| Error::io(&self.dest, e))?;
            self.written += piece.len() as u64;
            rest = tail;
            if self.written - self.started >= WRITE_BEHIND {
                w.flush().map_err(|e| Error::io(&self.dest, e))?;
                self.settle()?;
                let file = self
                    .writer
                    .as_ref()
                    .map(|w| w.get_ref().try_clone())
                    .transpose()
                    .map_err(|e| Error::io(&self.dest, e))?;
                if let Some(file) = file {
                    self.flush = Some(std::thread::spawn(move || file.sync_data()));
                }
                self.started = self.written;
            }
        }
        Ok(())
    }

    /// Wait for the background flush, if one is running, and pass on its error.
    fn settle(&mut self) -> Result<()> {
        if let Some(f) = self.flush.take() {
            f.join()
                .map_err(|_| Error::param("output", "the flushing thread panicked"))?
                .map_err(|e| Error::io(&self.dest, e))?;
        }
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
        self.settle()?;
        if let Some(mut w) = self.writer.take() {
            w.flush().map_err(|e| Error::io(&self.dest, e))?;
            let f = w
                .into_inner()
                .map_err(|e| Error::io(&self.dest, e.into_error()))?;
            f.sync_all().map_err(|e| Error::io(&self.dest, e))?;
        }
        let dest = self.dest.clone();
        let Some(tmp) = self.tmp.take() else {
            return Err(Error::param("output", "commit after close"));
        };
        // Rename under the registry's lock: a signal handler either removed the temporary file
        // before this (the rename then fails and the process is exiting anyway) or waits until
        // the output is complete and in place. The destination is checked again (something may
        // have appeared there while the output was written); without leave to replace, the
        // rename itself refuses an existing entry (renameat2 RENAME_NOREPLACE, or link + unlink).
        let mut list = registry();
        let persisted = check_file_output(&dest, self.existing).and_then(|()| {
            let done = match self.existing {
                Existing::Replace => tmp.persist(&dest),
                Existing::Refuse => tmp.persist_noclobber(&dest),
            };
            done.map(drop).map_err(|e| {
                if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                    Error::output(
                        &dest,
                        "appeared while the output was written; not replaced",
                        true,
                    )
                } else {
                    Error::io(&dest, e.error)
                }
            })
        });
        unregister_locked(&mut list, self.id);
        drop(list);
        persisted
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        // Remove the temporary file first, then forget it: a signal in between finds the entry
        // and removes nothing more.
        self.writer.take();
        if let Some(tmp) = self.tmp.take() {
            drop(tmp);
            unregister_locked(&mut registry(), self.id);
        }
    }
}

/// A directory of outputs written together (e.g. an evaluation report): files are written under
/// [`path`](StagingDir::path), a hidden temporary directory beside the destination, and moved
/// into the destination directory by [`commit`](StagingDir::commit). Dropped without commit (an
/// error) or interrupted by a signal, it is removed with its contents.
pub struct StagingDir {
    dest: PathBuf,
    dir: Option<tempfile::TempDir>,
    /// The staging directory opened and locked while it exists (see [`stale`]).
    _lock: Option<File>,
    id: u64,
    existing: Existing,
}

impl StagingDir {
    /// Stage outputs for the directory `dest`. The parent of `dest` must exist (as for every
    /// output file, dprp does not create missing parent directories); `dest` itself is created
    /// on commit if needed. An existing `dest` must be a directory (not a link to one); unless
    /// `existing` is [`Existing::Replace`] it must be empty, and with it the staged files replace
    /// regular files (and directories, directories) of the same names, nothing else.
    pub fn create(dest: &Path, existing: Existing) -> Result<StagingDir> {
        check_dir_output(dest)?;
        if existing == Existing::Refuse && dest.is_dir() && target::dir_has_entries(dest)? {
            return Err(Error::output(
                dest,
                "is a directory that is not empty; dprp does not replace files it finds there",
                true,
            ));
        }
        let parent = output_parent(dest)?;
        stale::sweep(&parent);
        let (dir, id) = create_registered(
            dest,
            || {
                tempfile::Builder::new()
                    .prefix(stale::PREFIX)
                    .tempdir_in(&parent)
            },
            |d| d.path(),
        )?;
        let lock = File::open(dir.path()).map_err(|e| Error::io(dest, e))?;
        stale::try_lock(&lock).map_err(|e| Error::io(dest, e))?;
        Ok(StagingDir {
            dest: dest.to_path_buf(),
            dir: Some(dir),
            _lock: Some(lock),
            id,
            existing,
        })
    }

    /// Where to write the staged files.
    pub fn path(&self) -> &Path {
        self.dir.as_ref().map(|d| d.path()).unwrap_or(&self.dest)
    }

    /// The final directory.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Check that the staged entry `from` may be moved to `to`: nothing there, or (with leave to
    /// replace) a regular file for a file, a directory for a directory.
    fn may_replace(&self, from: &Path, to: &Path) -> Result<()> {
        let Ok(m) = std::fs::symlink_metadata(to) else {
            return Ok(());
        };
        let ft = m.file_type();
        let same_kind = (ft.is_file() && from.is_file()) || (ft.is_dir() && from.is_dir());
        if self.existing == Existing::Replace && same_kind && !ft.is_symlink() {
            return Ok(());
        }
        Err(Error::output(
            to,
            format!(
                "is {}; dprp does not replace it with its output",
                target::kind_name(&ft)
            ),
            self.existing == Existing::Refuse && same_kind,
        ))
    }

    /// Move every staged entry into the destination directory (replacing files of the same
    /// name when allowed), then remove the staging directory. Every entry is checked before the
    /// first is moved.
    pub fn commit(mut self) -> Result<()> {
        let Some(dir) = self.dir.take() else {
            return Err(Error::param("output", "commit after close"));
        };
        let mut list = registry();
        let result = (|| {
            // list the staged entries first: if the staging directory is gone (removed by a
            // signal handler), nothing is created
            let entries = std::fs::read_dir(dir.path())
                .and_then(|rd| rd.collect::<std::io::Result<Vec<_>>>())
                .map_err(|e| Error::io(dir.path(), e))?;
            check_dir_output(&self.dest)?;
            for entry in &entries {
                self.may_replace(&entry.path(), &self.dest.join(entry.file_name()))?;
            }
            if !self.dest.is_dir() {
                std::fs::create_dir(&self.dest).map_err(|e| Error::io(&self.dest, e))?;
            }
            for entry in entries {
                let to = self.dest.join(entry.file_name());
                if to.is_dir() && entry.path().is_dir() {
                    std::fs::remove_dir_all(&to).map_err(|e| Error::io(&to, e))?;
                }
                std::fs::rename(entry.path(), &to).map_err(|e| Error::io(&to, e))?;
            }
            Ok(())
        })();
        drop(dir);
        unregister_locked(&mut list, self.id);
        result
    }
}

impl Drop for StagingDir {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            drop(dir);
            unregister_locked(&mut registry(), self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// Bytes written in pieces of awkward sizes across several write-behind windows (one write
    /// larger than two windows, writes straddling boundaries, a header patched at the end) come
    /// out exactly as written: the window splitting loses, repeats or reorders nothing.
    #[test]
    fn write_behind_keeps_every_byte_in_order() {
        let d = tempfile::tempdir().unwrap();
        let dest = d.path().join("out.bin");
        let w = WRITE_BEHIND as usize;
        let total = 3 * w + 12345;
        let data: Vec<u8> = (0..total).map(|i| (i * 7 + i / 251) as u8).collect();
        let mut f = AtomicFile::create(&dest, Existing::Refuse).unwrap();
        let cuts = [0, 17, w - 3, w + 5, 3 * w - 1, total];
        for c in cuts.windows(2) {
            f.write_all(&data[c[0]..c[1]]).unwrap();
            assert_eq!(f.position(), c[1] as u64);
        }
        f.patch(0, b"HEAD").unwrap();
        f.write_all(b"tail").unwrap();
        f.commit().unwrap();
        let got = std::fs::read(&dest).unwrap();
        let mut want = data.clone();
        want[..4].copy_from_slice(b"HEAD");
        want.extend_from_slice(b"tail");
        assert_eq!(got.len(), want.len());
        assert!(got == want, "the file differs from what was written");
        assert_eq!(entries(d.path()), vec!["out.bin".to_string()]);
    }

    /// An output dropped without commit after several windows (a background flush possibly still
    /// running) leaves nothing behind.
    #[test]
    fn write_behind_output_dropped_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let mut f = AtomicFile::create(&d.path().join("out.bin"), Existing::Refuse).unwrap();
        let piece = vec![3u8; WRITE_BEHIND as usize + 1];
        for _ in 0..3 {
            f.write_all(&piece).unwrap();
        }
        assert_eq!(
            entries(d.path()).len(),
            1,
            "the temporary file exists while writing"
        );
        drop(f);
        assert!(entries(d.path()).is_empty(), "{:?}", entries(d.path()));
    }
}
