//! Temporary outputs left by processes that died (SIGKILL, a power cut, an out-of-memory kill):
//! found and removed by the next output written in the same directory.
//!
//! Every temporary output (`.dprp-tmp-*`, a file or a staging directory) is created and then, at
//! once, locked (`flock`, exclusive) by the process writing it, which holds the lock until the
//! output is renamed into place or removed. The operating system drops the lock when the process
//! ends, however it ends. So a `.dprp-tmp-*` entry whose lock can be taken belongs to no running
//! process: it is removed, and the front end is told ([`set_notice`]). A lock is only tried on
//! entries older than [`MIN_AGE`], so an entry another process has just created and is about to
//! lock is never taken for stale.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// The name every temporary output starts with.
pub const PREFIX: &str = ".dprp-tmp-";

/// Entries younger than this are left alone (their writer may be between creating and locking).
pub const MIN_AGE: Duration = Duration::from_secs(5);

/// A stale temporary output that was removed: its path and size in bytes (a directory's: the
/// sum of its files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    /// The removed entry.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
}

static NOTICE: Mutex<Option<fn(&Removed)>> = Mutex::new(None);

/// Where removals are reported (the command line prints a note); without a notice they are silent.
pub fn set_notice(f: fn(&Removed)) {
    *NOTICE.lock().unwrap_or_else(|p| p.into_inner()) = Some(f);
}

/// Take an exclusive lock on `file` for as long as it (or a clone of its descriptor) stays open.
/// `Ok(false)`: another process holds it.
#[cfg(unix)]
pub fn try_lock(file: &File) -> std::io::Result<bool> {
    use std::os::unix::io::AsRawFd;
    loop {
        // SAFETY: flock on a file descriptor owned by `file`, which outlives the call.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) => return Ok(false),
            Some(libc::EINTR) => continue,
            _ => return Err(e),
        }
    }
}

/// Without `flock`, no temporary output can be told from a live one: none is removed.
#[cfg(not(unix))]
pub fn try_lock(_file: &File) -> std::io::Result<bool> {
    Ok(false)
}

/// The total size of the files under `path` (not following links).
fn size_of(path: &Path) -> u64 {
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !m.is_dir() {
        return m.len();
    }
    std::fs::read_dir(path)
        .map(|rd| rd.flatten().map(|e| size_of(&e.path())).sum())
        .unwrap_or(0)
}

/// Whether the temporary entry at `path` belongs to no running process: old enough, and its lock
/// free (taken and dropped here).
fn is_stale(path: &Path, now: SystemTime) -> bool {
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !(m.is_file() || m.is_dir()) {
        return false;
    }
    let young = m
        .modified()
        .ok()
        .and_then(|t| now.duration_since(t).ok())
        .is_none_or(|age| age < MIN_AGE);
    if young {
        return false;
    }
    match File::open(path) {
        Ok(f) => try_lock(&f).unwrap_or(false),
        Err(_) => false,
    }
}

/// Remove the stale temporary outputs in `dir` and report each; returns them. Best effort: an
/// entry that cannot be read, locked or removed is left as it is.
pub fn sweep(dir: &Path) -> Vec<Removed> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let now = SystemTime::now();
    let mut removed = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let path = e.path();
        if !is_stale(&path, now) {
            continue;
        }
        let bytes = size_of(&path);
        let gone = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        if gone.is_ok() {
            removed.push(Removed { path, bytes });
        }
    }
    if !removed.is_empty() {
        let notice = *NOTICE.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = notice {
            removed.iter().for_each(f);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn age(path: &Path, secs: u64) {
        let t = SystemTime::now() - Duration::from_secs(secs);
        let f = File::options()
            .write(true)
            .open(path)
            .or_else(|_| File::open(path))
            .unwrap();
        f.set_modified(t).unwrap();
    }

    /// An old unlocked temporary file and directory are removed; a locked one, a young one and
    /// other names are kept.
    #[test]
    fn sweep_removes_only_unlocked_old_temporaries() {
        let d = tempfile::tempdir().unwrap();
        let p = |n: &str| d.path().join(n);
        std::fs::write(p(".dprp-tmp-dead"), vec![7u8; 1000]).unwrap();
        age(&p(".dprp-tmp-dead"), 60);
        std::fs::create_dir(p(".dprp-tmp-deaddir")).unwrap();
        std::fs::write(p(".dprp-tmp-deaddir/report.md"), b"abc").unwrap();
        age(&p(".dprp-tmp-deaddir"), 60);
        std::fs::write(p(".dprp-tmp-live"), b"x").unwrap();
        age(&p(".dprp-tmp-live"), 60);
        let held = File::open(p(".dprp-tmp-live")).unwrap();
        assert!(try_lock(&held).unwrap());
        std::fs::write(p(".dprp-tmp-young"), b"x").unwrap();
        std::fs::write(p("release.dprp"), b"x").unwrap();
        age(&p("release.dprp"), 60);

        let mut got = sweep(d.path());
        got.sort_by(|a, b| a.path.cmp(&b.path));
        assert_eq!(
            got,
            vec![
                Removed {
                    path: p(".dprp-tmp-dead"),
                    bytes: 1000
                },
                Removed {
                    path: p(".dprp-tmp-deaddir"),
                    bytes: 3
                },
            ]
        );
        for kept in [".dprp-tmp-live", ".dprp-tmp-young", "release.dprp"] {
            assert!(p(kept).exists(), "{kept} was removed");
        }
        // the lock is what keeps a live one: released, it goes too
        drop(held);
        let got = sweep(d.path());
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].path, p(".dprp-tmp-live"));
    }
}
