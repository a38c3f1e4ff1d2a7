//! The privacy budget ledger (issue 13): which releases were made of which dataset, what they
//! spend together, and a budget that `publish` refuses to exceed.
//!
//! **The ledger directory** `DIR` holds releases (`*.dprp` files, Parquet releases, and shard
//! directories of `publish --shards`, each counted once as one release; read directly in `DIR`,
//! not deeper) and a hidden `DIR/.dprp-ledger/` (mode 0700) with
//!
//! * `key` — the 32-byte secret ledger key, drawn from the OS CSPRNG on first use and written with
//!   mode 0600 (dprp refuses a key file that others can read). It fingerprints datasets
//!   ([`fingerprint`]) and is **never written into a release**: share the `.dprp` files, never
//!   this directory. A lost key is refused, not replaced, while anything shows it existed (the
//!   journal, or releases in the directory fingerprinted under it): a new key would give the same
//!   data a new fingerprint, and its budget would start again from zero. The key file also
//!   commits to the journal's length and hash ([`keyfile`]).
//! * `journal.jsonl` — one JSON line per release published with `--ledger DIR` (file, checksum,
//!   mechanism, guarantee, calibration, fingerprint, date), appended and synced *before* the
//!   release is moved into place. A release once written may have been shared, so deleting or
//!   overwriting its file never refunds its budget: the journal still counts it (a crash between
//!   the journal line and the rename can only over-count). Deleting, truncating or editing the
//!   journal itself is refused by every use of the ledger: the key file's commitment says how it
//!   began.
//! * `lock` — `publish --ledger` holds an exclusive lock on it (`flock`) from before it reads the
//!   ledger until the release is recorded and in place, so two publishes racing on one ledger are
//!   serialised and cannot both pass a budget that only one fits.
//!
//! **Which releases belong to a dataset.** A release published with `--ledger DIR` carries a
//! fingerprint of its rows under the ledger key ([`crate::release::DatasetRecord`]). `dprp ledger
//! DIR` reads the journal and every release in `DIR` (header, checksum and metadata), merges them
//! by checksum and groups them by fingerprint; releases without one (published without
//! `--ledger`) are listed as *unattributed* and counted toward no dataset, and releases
//! fingerprinted under another ledger's key are listed under their own fingerprint and marked so
//! (their fingerprints cannot be compared with this ledger's). A release in `DIR` that cannot
//! be read is reported by name: `dprp ledger` lists the rest and exits non-zero, and `publish
//! --budget` refuses (that file might be a release of the same dataset).
//!
//! **What the fingerprint tells the public.** Nothing about the rows (it is a PRF value), but two
//! releases with equal fingerprints are visibly of the same dataset, and a different fingerprint
//! says the data changed; publish without `--ledger` if that link must stay hidden.

pub mod compose;
pub mod fingerprint;
mod gate;
pub mod keyfile;

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::release::{DatasetRecord, ReleaseSet};
pub use compose::{Budget, Entry, Totals};
pub use fingerprint::DatasetKey;
pub use gate::{Admitted, Gate};

/// The hidden directory inside a ledger directory.
pub const LEDGER_SUBDIR: &str = ".dprp-ledger";
const KEY_FILE: &str = "key";
const LOCK_FILE: &str = "lock";
const JOURNAL_FILE: &str = "journal.jsonl";

/// A ledger directory.
#[derive(Debug, Clone)]
pub struct Ledger {
    dir: PathBuf,
}

/// An exclusive hold on a ledger, released when dropped (or when the process ends).
#[derive(Debug)]
pub struct LedgerLock {
    _file: File,
}

/// A release file in the ledger directory that could not be read.
#[derive(Debug, Clone, Serialize)]
pub struct Unreadable {
    /// The file.
    pub file: String,
    /// Why.
    pub error: String,
}

/// Where a release's file stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileStatus {
    /// The file is there and holds this release.
    Present,
    /// The journal records it; the file is gone (still counted).
    Missing,
    /// The journal records it; the path now holds another release (still counted).
    Replaced,
}

/// A release the ledger knows of.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    /// The release.
    #[serde(flatten)]
    pub entry: Entry,
    /// Its file.
    pub status: FileStatus,
    /// Whether the journal records it (otherwise it was only found in the directory).
    pub in_journal: bool,
}

/// Everything the ledger knows: journal and directory, merged by checksum.
#[derive(Debug, Clone, Default)]
pub struct Inventory {
    /// Every release, journal order first, then files found only in the directory (by name).
    pub releases: Vec<Listed>,
    /// Releases in the directory (`.dprp` files, Parquet files with dprp's metadata, shard
    /// directories) that could not be read.
    pub unreadable: Vec<Unreadable>,
}

impl Inventory {
    /// The releases of the dataset `rec` (same fingerprint under the same key).
    pub fn of_dataset(&self, rec: &DatasetRecord) -> Vec<&Entry> {
        self.releases
            .iter()
            .map(|l| &l.entry)
            .filter(|e| {
                e.dataset
                    .as_ref()
                    .is_some_and(|d| d.fingerprint == rec.fingerprint && d.key_id == rec.key_id)
            })
            .collect()
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

impl Ledger {
    /// An existing ledger directory (it need not hold a ledger yet: then it has no key and no
    /// journal, only whatever releases are in it).
    pub fn open(dir: &Path) -> Result<Ledger> {
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => Ok(Ledger {
                dir: dir.to_path_buf(),
            }),
            Ok(_) => Err(Error::ledger(dir, "not a directory")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::ledger(
                dir,
                "the ledger directory does not exist (publish ‹ledger› DIR creates it)",
            )),
            Err(e) => Err(Error::io(dir, e)),
        }
    }

    /// The ledger directory, created if missing (its parent must exist, as for every output).
    pub fn create(dir: &Path) -> Result<Ledger> {
        if !dir.exists() {
            std::fs::create_dir(dir).map_err(io_err(dir))?;
        }
        Ledger::open(dir)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn sub(&self) -> PathBuf {
        self.dir.join(LEDGER_SUBDIR)
    }

    fn ensure_sub(&self) -> Result<PathBuf> {
        let sub = self.sub();
        if !sub.is_dir() {
            let mut b = std::fs::DirBuilder::new();
            #[cfg(unix)]
            {
                use std::os::unix::fs::DirBuilderExt;
                b.mode(0o700);
            }
            match b.create(&sub) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io(&sub, e)),
            }
        }
        Ok(sub)
    }

    /// Take the ledger's exclusive lock, waiting for another holder (after calling `on_wait`).
    pub fn lock(&self, on_wait: impl FnOnce()) -> Result<LedgerLock> {
        let path = self.ensure_sub()?.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io_err(&path))?;
        if !flock_exclusive(&file, true).map_err(io_err(&path))? {
            on_wait();
            flock_exclusive(&file, false).map_err(io_err(&path))?;
        }
        Ok(LedgerLock { _file: file })
    }

    fn key_path(&self) -> PathBuf {
        self.sub().join(KEY_FILE)
    }

    fn journal_path(&self) -> PathBuf {
        self.sub().join(JOURNAL_FILE)
    }

    /// The key file, if there is one.
    fn read_key_file(&self) -> Result<Option<keyfile::KeyFile>> {
        keyfile::read(&self.key_path(), |m| Error::ledger(&self.dir, m))
    }

    fn read_key(&self) -> Result<Option<DatasetKey>> {
        Ok(self
            .read_key_file()?
            .map(|k| DatasetKey::from_bytes(&k.key)))
    }

    /// The key id of the ledger's key, if it has one yet.
    pub fn key_id(&self) -> Result<Option<String>> {
        Ok(self.read_key()?.map(|k| k.key_id()))
    }

    /// The ledger key, created on first use (from the OS CSPRNG, mode 0600, written to a
    /// temporary file and renamed, so a reader never sees half a key). Needs the lock. A new key
    /// is refused where the old one is known to have existed: a journal of fingerprinted
    /// releases, or releases in the directory fingerprinted under another key (the whole
    /// `.dprp-ledger` was removed) — a new key would give the same data a new fingerprint and
    /// its budget would start again from zero.
    pub fn key(&self, _lock: &LedgerLock) -> Result<DatasetKey> {
        if let Some(k) = self.read_key()? {
            return Ok(k);
        }
        let journal = self.journal()?;
        if let Some(d) = journal.iter().find_map(|e| e.dataset.as_ref()) {
            return Err(Error::ledger(
                &self.dir,
                format!(
                    "the ledger's key ({LEDGER_SUBDIR}/{KEY_FILE}) is missing, but its journal \
                     records {} release(s) fingerprinted under key {}: a new key would give the \
                     same data a new fingerprint and its budget would start again from zero. \
                     Restore the key file from a backup; to start a new ledger on purpose, use \
                     a new ledger directory",
                    journal.len(),
                    d.key_id
                ),
            ));
        }
        let inventory = self.inventory()?;
        let fingerprinted: Vec<&Listed> = inventory
            .releases
            .iter()
            .filter(|l| l.entry.dataset.is_some())
            .collect();
        if let Some(first) = fingerprinted.first() {
            let kid = first
                .entry
                .dataset
                .as_ref()
                .map_or("", |d| d.key_id.as_str());
            return Err(Error::ledger(
                &self.dir,
                format!(
                    "the ledger has no key and no journal ({LEDGER_SUBDIR} was removed?), but the \
                     directory holds {} release(s) fingerprinted under key {kid} ({} first): a \
                     new key would give the same data a new fingerprint and its budget would \
                     start again from zero. Restore {LEDGER_SUBDIR} from a backup; to start a \
                     new ledger on purpose, use a new ledger directory",
                    fingerprinted.len(),
                    first.entry.file
                ),
            ));
        }
        let sub = self.ensure_sub()?;
        let (bytes, key) = DatasetKey::generate()?;
        let journal = self.journal_bytes()?;
        keyfile::write(
            &sub.join(KEY_FILE),
            &bytes,
            &keyfile::Commitment::of(&journal),
        )?;
        Ok(key)
    }

    /// The journal's bytes (empty when there is none).
    fn journal_bytes(&self) -> Result<Vec<u8>> {
        let path = self.journal_path();
        match std::fs::read(&path) {
            Ok(b) => Ok(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// The journal's entries, in order. Refused when the key file commits to journal bytes the
    /// journal does not begin with (it was deleted, truncated or edited: see [`keyfile`]).
    pub fn journal(&self) -> Result<Vec<Entry>> {
        let path = self.journal_path();
        let bytes = self.journal_bytes()?;
        if let Some(c) = self.read_key_file()?.and_then(|k| k.commitment) {
            if !c.holds_for(&bytes) {
                let what = if !path.exists() {
                    "is missing".to_string()
                } else if (bytes.len() as u64) < c.len {
                    format!(
                        "holds {} bytes, fewer than the {} recorded",
                        bytes.len(),
                        c.len
                    )
                } else {
                    format!("differs within the first {} bytes recorded", c.len)
                };
                return Err(Error::ledger(
                    &self.dir,
                    format!(
                        "the journal ({LEDGER_SUBDIR}/{JOURNAL_FILE}) {what}: it was deleted, \
                         truncated or edited since the last release was recorded, and the \
                         budget its releases spent would be forgotten. Restore it from a \
                         backup; to start a new ledger on purpose, use a new ledger directory"
                    ),
                ));
            }
        }
        self.parse_journal(&bytes).map(fold_reservations)
    }

    /// The entries of the journal `bytes`, without the commitment check.
    fn parse_journal(&self, bytes: &[u8]) -> Result<Vec<Entry>> {
        let path = self.journal_path();
        let text = String::from_utf8_lossy(bytes);
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l).map_err(|e| {
                    Error::format(
                        &path,
                        format!("line {} of the file is not a ledger entry: {e}", i + 1),
                    )
                })
            })
            .collect()
    }

    /// Append `entry` to the journal and sync it, then commit the key file to the whole journal.
    /// Needs the lock.
    pub fn record(&self, _lock: &LedgerLock, entry: &Entry) -> Result<()> {
        let path = self.ensure_sub()?.join(JOURNAL_FILE);
        // the journal as it stands must match the key file's commitment before it grows
        self.journal()?;
        let mut line = serde_json::to_string(entry)
            .map_err(|e| Error::param("ledger entry", format!("cannot encode: {e}")))?;
        line.push('\n');
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io_err(&path))?;
        f.write_all(line.as_bytes()).map_err(io_err(&path))?;
        f.sync_all().map_err(io_err(&path))?;
        drop(f);
        // (a ledger has its key before anything is recorded; without one there is nothing to
        // commit with, and a journal without its key is refused anyway: see `key`)
        match self.read_key_file()? {
            Some(key) => keyfile::write(
                &self.key_path(),
                &key.key,
                &keyfile::Commitment::of(&self.journal_bytes()?),
            ),
            None => Ok(()),
        }
    }

    /// How a release at `path` is named in the ledger: relative to the directory when it lies
    /// directly in it, else as an absolute path (the file itself need not exist yet).
    pub fn name_of(&self, path: &Path) -> String {
        let file = path.file_name().map(|f| f.to_os_string());
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let (Ok(parent), Some(file)) = (parent.canonicalize(), file) else {
            return path.display().to_string();
        };
        match self.dir.canonicalize() {
            Ok(d) if d == parent => PathBuf::from(file).display().to_string(),
            _ => parent.join(file).display().to_string(),
        }
    }

    fn resolve(&self, name: &str) -> PathBuf {
        let p = Path::new(name);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.dir.join(p)
        }
    }

    /// Every release in the journal or in the directory, merged by checksum.
    pub fn inventory(&self) -> Result<Inventory> {
        let mut inv = Inventory::default();
        let mut scanned: Vec<Entry> = Vec::new();
        let rd = std::fs::read_dir(&self.dir).map_err(io_err(&self.dir))?;
        // (path, whether it is a Parquet file)
        let mut found: Vec<(PathBuf, bool)> = Vec::new();
        for e in rd {
            let e = e.map_err(io_err(&self.dir))?;
            let name = e.file_name();
            let name = name.to_string_lossy();
            // Hidden entries: the ledger's own directory, staging files and directories.
            if name.starts_with('.') {
                continue;
            }
            let path = e.path();
            let (is_release, parquet) = if path.is_dir() {
                let manifest = path.join(crate::release::shards::MANIFEST).exists()
                    || path.join(crate::release::shards::LEGACY_MANIFEST).exists();
                (manifest, false)
            } else {
                let parquet = crate::release::parquet::is_parquet(&path);
                (name.ends_with(".dprp") || parquet, parquet)
            };
            if is_release {
                found.push((path, parquet));
            }
        }
        found.sort();
        for (path, parquet) in found {
            let name = path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            if parquet {
                // A Parquet file without dprp's metadata is not a release (a dataset, say).
                match crate::release::parquet::recorded_checksum(&path) {
                    Ok(None) => continue,
                    Ok(Some(_)) => {}
                    Err(e) => {
                        inv.unreadable.push(Unreadable {
                            file: name,
                            error: e.to_string(),
                        });
                        continue;
                    }
                }
            }
            match ReleaseSet::open(&path) {
                Ok(r) => scanned.push(Entry::from_meta(name, r.meta(), &r.checksum())),
                Err(e) => inv.unreadable.push(Unreadable {
                    file: name,
                    error: e.to_string(),
                }),
            }
        }
        for entry in self.journal()? {
            if inv
                .releases
                .iter()
                .any(|l| l.entry.checksum == entry.checksum)
            {
                continue;
            }
            let status = if scanned.iter().any(|s| s.checksum == entry.checksum) {
                FileStatus::Present
            } else {
                match stored_checksum(&self.resolve(&entry.file)) {
                    None => FileStatus::Missing,
                    Some(c) if fingerprint::hex(&c) == entry.checksum => FileStatus::Present,
                    Some(_) => FileStatus::Replaced,
                }
            };
            inv.releases.push(Listed {
                entry,
                status,
                in_journal: true,
            });
        }
        for entry in scanned {
            if inv
                .releases
                .iter()
                .any(|l| l.entry.checksum == entry.checksum)
            {
                continue;
            }
            inv.releases.push(Listed {
                entry,
                status: FileStatus::Present,
                in_journal: false,
            });
        }
        Ok(inv)
    }
}

/// The journal's lines as releases: each reservation ([`compose::Reservation`]) folded into the
/// release it became. A confirmation takes its reservation's place (a confirmation without one
/// is kept too: over-counting is the safe side); a withdrawal removes its reservation, and never
/// a confirmed release; a reservation left alone stays, counted.
fn fold_reservations(lines: Vec<Entry>) -> Vec<Entry> {
    use compose::ReservationState::{Confirmed, Reserved, Withdrawn};
    let mut out: Vec<Entry> = Vec::with_capacity(lines.len());
    let pending = |out: &[Entry], id: &str| {
        out.iter().position(|e| {
            e.reservation
                .as_ref()
                .is_some_and(|r| r.id == id && r.state == Reserved)
        })
    };
    for e in lines {
        match e.reservation.as_ref().map(|r| (r.id.clone(), r.state)) {
            None | Some((_, Reserved)) => out.push(e),
            Some((id, Confirmed)) => match pending(&out, &id) {
                Some(i) => out[i] = e,
                None => out.push(e),
            },
            Some((id, Withdrawn)) => {
                if let Some(i) = pending(&out, &id) {
                    out.remove(i);
                }
            }
        }
    }
    out
}

/// Take an exclusive `flock` on `file` (released when the file is closed, also when the process
/// dies). Non-blocking: `Ok(false)` when another holder has it. (`File::lock` would do, but needs
/// Rust 1.89, above the crate's MSRV.)
#[cfg(unix)]
fn flock_exclusive(file: &File, nonblocking: bool) -> std::io::Result<bool> {
    use std::os::unix::io::AsRawFd;
    let op = libc::LOCK_EX | if nonblocking { libc::LOCK_NB } else { 0 };
    loop {
        // SAFETY: flock on a file descriptor owned by `file`, which outlives the call.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) if nonblocking => return Ok(false),
            Some(libc::EINTR) => continue,
            _ => return Err(e),
        }
    }
}

#[cfg(not(unix))]
fn flock_exclusive(_file: &File, _nonblocking: bool) -> std::io::Result<bool> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "the ledger's lock (flock) needs a Unix system",
    ))
}

/// The checksum a release records, without verifying it: a native release's header (112 bytes),
/// a Parquet release's footer, a shard directory's set checksum from its shards' headers.
fn stored_checksum(path: &Path) -> Option<[u8; 32]> {
    if path.is_dir() {
        return ReleaseSet::open_with(path, false)
            .ok()
            .map(|s| s.checksum());
    }
    let mut f = File::open(path).ok()?;
    let mut h = [0u8; 112];
    if f.read_exact(&mut h).is_ok() && &h[..8] == crate::release::MAGIC {
        let mut c = [0u8; 32];
        c.copy_from_slice(&h[80..112]);
        return Some(c);
    }
    if crate::release::parquet::is_parquet(path) {
        return crate::release::parquet::recorded_checksum(path)
            .ok()
            .flatten();
    }
    None
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
mod tests;
