//! The ledger's key file: the secret key, and a commitment to the journal that makes a deleted,
//! truncated or rewritten journal a refusal instead of a budget that starts again from zero.
//!
//! **Layout.** Version 1 (dprp ≤ 0.3): the 32 key bytes. Version 2: the 32 key bytes, then
//! `DPRPJRNL` (8 bytes), the journal's committed length in bytes (u64, little endian) and the
//! BLAKE3 hash of those first bytes of the journal (32): 80 bytes. The file is written whole to a
//! temporary file (mode 0600) and renamed, so a reader sees either the old or the new commitment.
//!
//! **Why it holds.** The journal is append-only: every release recorded appends a line and syncs
//! it, then the commitment is rewritten to cover the whole journal. So the journal on disk always
//! *begins with* the bytes the key file commits to (a crash between the append and the rewrite
//! leaves a longer journal, which passes: the new line can only over-count). A journal that is
//! missing, shorter, or different within the committed bytes was deleted, truncated or edited —
//! its releases would stop counting toward their datasets' budgets — and is refused by name. The
//! commitment is not a secret and is not authenticated: it guards the data holder against losing
//! their own accounting, not against someone who rewrites the key file itself (who holds the key
//! and could start a ledger anyway). Removing the whole `.dprp-ledger` directory is caught apart
//! from this ([`super::Ledger::key`]): the releases in the directory still name the old key.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

use crate::error::{Error, Result};

/// The key's length.
pub const KEY_LEN: usize = 32;
const MAGIC: &[u8; 8] = b"DPRPJRNL";
/// The length of a version-2 key file.
pub const V2_LEN: usize = KEY_LEN + 8 + 8 + 32;

/// What the key file says of the journal: its first `len` bytes hash to `hash`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Commitment {
    /// Bytes of the journal committed.
    pub len: u64,
    /// BLAKE3 of those bytes.
    pub hash: [u8; 32],
}

impl Commitment {
    /// The commitment to the journal `bytes`, whole.
    pub fn of(bytes: &[u8]) -> Commitment {
        Commitment {
            len: bytes.len() as u64,
            hash: *blake3::hash(bytes).as_bytes(),
        }
    }

    /// Whether `journal` begins with the committed bytes.
    pub fn holds_for(&self, journal: &[u8]) -> bool {
        usize::try_from(self.len)
            .ok()
            .and_then(|n| journal.get(..n))
            .is_some_and(|head| blake3::hash(head).as_bytes() == &self.hash)
    }
}

/// The key file's contents: the key, and the commitment of a version-2 file.
pub struct KeyFile {
    /// The secret key bytes.
    pub key: [u8; KEY_LEN],
    /// The journal commitment (`None`: a version-1 file, written before commitments).
    pub commitment: Option<Commitment>,
}

/// Read the key file at `path` (`None` when it does not exist). `damaged` makes the error of a
/// file that is not a key file; a key file others can read is refused.
pub fn read(path: &Path, damaged: impl Fn(String) -> Error) -> Result<Option<KeyFile>> {
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = f
            .metadata()
            .map_err(|e| Error::io(path, e))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(damaged(format!(
                "{}: the ledger key is readable by others (mode {:o}); it must stay secret to the \
                 data holder: chmod 600 it",
                path.display(),
                mode & 0o777
            )));
        }
    }
    let mut bytes = Vec::new();
    // a key file is 80 bytes: read at most one more, to tell a longer file from a key file
    (&mut f)
        .take(V2_LEN as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    let mut key = [0u8; KEY_LEN];
    match bytes.len() {
        KEY_LEN => {
            key.copy_from_slice(&bytes);
            Ok(Some(KeyFile {
                key,
                commitment: None,
            }))
        }
        V2_LEN if &bytes[KEY_LEN..KEY_LEN + 8] == MAGIC => {
            key.copy_from_slice(&bytes[..KEY_LEN]);
            let mut len = [0u8; 8];
            len.copy_from_slice(&bytes[KEY_LEN + 8..KEY_LEN + 16]);
            let mut hash = [0u8; 32];
            hash.copy_from_slice(&bytes[KEY_LEN + 16..]);
            Ok(Some(KeyFile {
                key,
                commitment: Some(Commitment {
                    len: u64::from_le_bytes(len),
                    hash,
                }),
            }))
        }
        n => Err(damaged(format!(
            "{}: the ledger key file is {n}{} bytes, not 32 or 80: damaged",
            path.display(),
            if n > V2_LEN { "+" } else { "" }
        ))),
    }
}

/// Write the key file at `path` whole (temporary file, mode 0600, synced, renamed).
pub fn write(path: &Path, key: &[u8; KEY_LEN], commitment: &Commitment) -> Result<()> {
    let mut bytes = Vec::with_capacity(V2_LEN);
    bytes.extend_from_slice(key);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&commitment.len.to_le_bytes());
    bytes.extend_from_slice(&commitment.hash);
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut o = OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let mut f = o.open(&tmp).map_err(|e| Error::io(&tmp, e))?;
    f.write_all(&bytes).map_err(|e| Error::io(&tmp, e))?;
    f.sync_all().map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
    // the rename itself made durable
    if let Some(dir) = path.parent() {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commitments_hold_for_extensions_only() {
        let c = Commitment::of(b"line 1\nline 2\n");
        assert!(c.holds_for(b"line 1\nline 2\n"));
        assert!(c.holds_for(b"line 1\nline 2\nline 3\n"));
        assert!(!c.holds_for(b"line 1\n"));
        assert!(!c.holds_for(b""));
        assert!(!c.holds_for(b"line 1\nline X\n"));
        assert!(Commitment::of(b"").holds_for(b""));
    }

    #[test]
    fn key_files_round_trip_and_damage_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("key");
        let c = Commitment::of(b"abc");
        write(&p, &[7u8; 32], &c).unwrap();
        let k = read(&p, |m| Error::param("ledger", m)).unwrap().unwrap();
        assert_eq!((k.key, k.commitment), ([7u8; 32], Some(c)));
        assert_eq!(std::fs::read(&p).unwrap().len(), V2_LEN);
        std::fs::write(&p, [1u8; 32]).unwrap();
        let k = read(&p, |m| Error::param("ledger", m)).unwrap().unwrap();
        assert_eq!(k.commitment, None);
        for n in [0, 31, 33, 79, 81, 200] {
            std::fs::write(&p, vec![1u8; n]).unwrap();
            assert!(read(&p, |m| Error::param("ledger", m)).is_err(), "{n}");
        }
        assert!(read(&d.path().join("none"), |m| Error::param("ledger", m))
            .unwrap()
            .is_none());
    }
}
