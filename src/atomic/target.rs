//! What an output path may be before dprp writes it, and the checks of inputs beside outputs.
//!
//! **The rule** (docs/commands.md#outputs): an output is a regular file (or, for a report or a
//! sharded release, a directory) that dprp creates. An existing path of that name is
//!
//! * refused when it is a symbolic link (dangling or not), a device, a named pipe, a socket, or a
//!   directory where a file is meant: dprp never replaces what it did not make, and it does not
//!   write through links (the output is renamed into place from a temporary file beside it; a
//!   link's target may live on another file system, where that rename is impossible, and
//!   replacing the link itself would silently detach it from its target);
//! * refused when it is a regular file, unless the caller asked to replace it
//!   ([`Existing::Replace`]; `--overwrite` on the command line, `overwrite=True` in Python): a
//!   release once written may have been shared, and a second one in its place is gone for good.

use std::fs::FileType;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// What an output may do to an existing regular file of its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Existing {
    /// Refuse it (the default).
    #[default]
    Refuse,
    /// Replace it, atomically. Links, devices, pipes, sockets and directories are refused all the
    /// same.
    Replace,
}

impl Existing {
    /// `Replace` when `overwrite` is set.
    pub fn replace_if(overwrite: bool) -> Existing {
        if overwrite {
            Existing::Replace
        } else {
            Existing::Refuse
        }
    }
}

/// What an existing entry is, for messages ("is a named pipe (FIFO)").
pub fn kind_name(ft: &FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if ft.is_socket() {
            return "a socket";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
    }
    if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_dir() {
        "a directory"
    } else if ft.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

fn link_target(dest: &Path) -> String {
    std::fs::read_link(dest)
        .map(|t| t.display().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Refuse a symbolic link at `dest`, naming its target.
fn refuse_link(dest: &Path) -> Error {
    let target = link_target(dest);
    let dangling = if dest.exists() {
        ""
    } else {
        ", which does not exist"
    };
    Error::output(
        dest,
        format!(
            "is a symbolic link to {target}{dangling}; dprp does not write through links: give \
             the path of the file itself, or remove the link"
        ),
        false,
    )
}

/// What is at an output path: `None` when nothing is; a link (to anything, or nothing) and an
/// empty path are refused.
fn what_is_at(dest: &Path) -> Result<Option<FileType>> {
    if dest.as_os_str().is_empty() {
        return Err(Error::param("output", "the output path is empty"));
    }
    match std::fs::symlink_metadata(dest) {
        Ok(m) if m.file_type().is_symlink() => Err(refuse_link(dest)),
        Ok(m) => Ok(Some(m.file_type())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(dest, e)),
    }
}

/// Check the destination of a file output before anything is written: absent, or a regular file
/// the caller may replace.
pub fn check_file_output(dest: &Path, existing: Existing) -> Result<()> {
    let Some(ft) = what_is_at(dest)? else {
        return Ok(());
    };
    if ft.is_file() {
        return match existing {
            Existing::Replace => Ok(()),
            Existing::Refuse => Err(Error::output(
                dest,
                "already exists; dprp does not replace an existing file (a release once \
                 written may have been shared)",
                true,
            )),
        };
    }
    Err(Error::output(
        dest,
        format!(
            "is {}, not a regular file: dprp writes only regular files it creates",
            kind_name(&ft)
        ),
        false,
    ))
}

/// Check the destination of a directory output (a report, a sharded release): absent, or an
/// existing directory (not a link to one); whether it may hold files already is the caller's
/// rule.
pub fn check_dir_output(dest: &Path) -> Result<()> {
    let ft = match what_is_at(dest)? {
        None => return Ok(()),
        Some(ft) if ft.is_dir() => return Ok(()),
        Some(ft) => ft,
    };
    Err(Error::output(
        dest,
        format!("is {}, where the output is a directory", kind_name(&ft)),
        false,
    ))
}

/// Whether the directory `dir` has any entry.
pub fn dir_has_entries(dir: &Path) -> Result<bool> {
    let mut entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    Ok(entries.next().is_some())
}

/// Refuse a symbolic link at `dest` (also one to an existing file or directory).
pub fn check_not_link(dest: &Path) -> Result<()> {
    let is_link = std::fs::symlink_metadata(dest).is_ok_and(|m| m.file_type().is_symlink());
    if is_link {
        return Err(refuse_link(dest));
    }
    Ok(())
}

/// Check that `path` names an existing file (not a directory) that is not empty, with a clear
/// error.
pub fn check_input_file(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        // (a named pipe reports length 0 and is read as a stream)
        Ok(m) if m.is_file() && m.len() == 0 => {
            Err(Error::format(path, "the file is empty (0 bytes)"))
        }
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
                "‹output›",
                format!(
                    "{} is the input file; refusing to overwrite it",
                    output.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Bytes available to an unprivileged writer on the file system that will hold `dest` (its parent
/// directory), when the operating system says.
pub fn free_space(dest: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let dir = parent_of(dest);
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
        // SAFETY: `c` is a valid NUL-terminated path and `st` points to writable memory of the
        // right type; statvfs fills it on success (return 0) and we read it only then.
        let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
        if rc != 0 {
            return None;
        }
        // SAFETY: statvfs returned 0, so the struct is initialised.
        let st = unsafe { st.assume_init() };
        // The field types differ between platforms (u32 on some 32-bit systems).
        #[allow(clippy::unnecessary_cast)]
        Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
    }
    #[cfg(not(unix))]
    {
        let _ = dest;
        None
    }
}

/// The directory `dest` is in (`.` for a bare name).
fn parent_of(dest: &Path) -> PathBuf {
    match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The directory an output path will be written in; it must exist.
pub(super) fn output_parent(dest: &Path) -> Result<PathBuf> {
    let dir = parent_of(dest);
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
    Ok(dir)
}

/// Create the output directory `dir` if it does not exist; like every output, its parent must
/// exist (dprp does not create missing parents, so a mistyped path is an error, not a new tree).
/// A link, or anything else that is not a directory, is refused.
pub fn create_output_dir(dir: &Path) -> Result<()> {
    check_dir_output(dir)?;
    if dir.is_dir() {
        return Ok(());
    }
    output_parent(dir)?;
    std::fs::create_dir(dir).map_err(|e| Error::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomic::{AtomicFile, StagingDir};

    /// A named pipe, made with mkfifo(3) in a temporary directory (never a real device).
    #[cfg(unix)]
    fn fifo(path: &Path) {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }

    /// Every kind of entry that is not a regular file is refused, with or without leave to
    /// replace, and left as it was; a regular file is refused unless replaced, then replaced.
    #[cfg(unix)]
    #[test]
    fn outputs_refuse_what_is_not_a_regular_file() {
        use std::os::unix::fs::FileTypeExt;
        let d = tempfile::tempdir().unwrap();
        let p = |n: &str| d.path().join(n);
        fifo(&p("fifo"));
        let _sock = std::os::unix::net::UnixListener::bind(p("sock")).unwrap();
        std::fs::create_dir(p("dir")).unwrap();
        std::fs::write(p("target.txt"), b"keep me").unwrap();
        std::os::unix::fs::symlink(p("target.txt"), p("link")).unwrap();
        std::os::unix::fs::symlink(p("nowhere"), p("dangling")).unwrap();
        let cases = [
            ("fifo", "named pipe"),
            ("sock", "socket"),
            ("dir", "directory"),
            ("link", "symbolic link"),
            ("dangling", "does not exist"),
        ];
        for existing in [Existing::Refuse, Existing::Replace] {
            for (name, says) in cases {
                let e = AtomicFile::create(&p(name), existing).err().unwrap();
                let msg = e.to_string();
                assert!(msg.contains(says), "{name}: {msg}");
                assert!(
                    matches!(
                        e,
                        crate::Error::Output {
                            replaceable: false,
                            ..
                        }
                    ),
                    "{name}: {e:?}"
                );
            }
        }
        let ft = |n: &str| std::fs::symlink_metadata(p(n)).unwrap().file_type();
        assert!(ft("fifo").is_fifo() && ft("sock").is_socket() && ft("dir").is_dir());
        assert!(ft("link").is_symlink() && ft("dangling").is_symlink());
        assert!(!p("nowhere").exists());
        assert_eq!(std::fs::read(p("target.txt")).unwrap(), b"keep me");
        // a regular file: refused without leave, replaced with it
        let e = AtomicFile::create(&p("target.txt"), Existing::Refuse)
            .err()
            .unwrap();
        assert!(
            matches!(
                e,
                crate::Error::Output {
                    replaceable: true,
                    ..
                }
            ),
            "{e:?}"
        );
        let mut f = AtomicFile::create(&p("target.txt"), Existing::Replace).unwrap();
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(p("target.txt")).unwrap(), b"new");
        // nothing but what was made is in the directory (no temporary file left)
        let mut names: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["dangling", "dir", "fifo", "link", "sock", "target.txt"]
        );
    }

    /// What appears at the destination while the output is written: a file is not replaced
    /// without leave (the rename itself refuses), a pipe is never replaced, and the temporary
    /// file goes either way.
    #[cfg(unix)]
    #[test]
    fn outputs_check_again_at_commit() {
        let d = tempfile::tempdir().unwrap();
        let dest = d.path().join("out.dprp");
        let mut f = AtomicFile::create(&dest, Existing::Refuse).unwrap();
        f.write_all(b"release").unwrap();
        std::fs::write(&dest, b"someone else's").unwrap();
        let e = f.commit().unwrap_err();
        assert!(e.to_string().contains("already exists"), "{e}");
        assert_eq!(std::fs::read(&dest).unwrap(), b"someone else's");
        std::fs::remove_file(&dest).unwrap();
        let mut f = AtomicFile::create(&dest, Existing::Replace).unwrap();
        f.write_all(b"release").unwrap();
        fifo(&dest);
        let e = f.commit().unwrap_err();
        assert!(e.to_string().contains("named pipe"), "{e}");
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    /// A report directory: an existing non-empty one needs leave; a link to a directory, and a
    /// staged file over a pipe, are refused.
    #[cfg(unix)]
    #[test]
    fn staging_dirs_follow_the_same_rule() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("report");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("report.md"), b"old").unwrap();
        let e = StagingDir::create(&out, Existing::Refuse).err().unwrap();
        assert!(e.to_string().contains("not empty"), "{e}");
        let s = StagingDir::create(&out, Existing::Replace).unwrap();
        std::fs::write(s.path().join("report.md"), b"new").unwrap();
        s.commit().unwrap();
        assert_eq!(std::fs::read(out.join("report.md")).unwrap(), b"new");
        std::os::unix::fs::symlink(&out, d.path().join("link")).unwrap();
        let e = StagingDir::create(&d.path().join("link"), Existing::Replace)
            .err()
            .unwrap();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        std::fs::remove_file(out.join("report.md")).unwrap();
        fifo(&out.join("report.md"));
        let s = StagingDir::create(&out, Existing::Replace).unwrap();
        std::fs::write(s.path().join("report.md"), b"new").unwrap();
        let e = s.commit().unwrap_err();
        assert!(e.to_string().contains("named pipe"), "{e}");
        // nothing staged is left beside the output
        let names: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|n| !n.starts_with(".dprp-tmp-")),
            "{names:?}"
        );
    }
}
