//! Sharded releases: one release written as N shard files in a directory, with a manifest.
//!
//! ```text
//! DIR/
//!   shard-00000-of-00004.dprp   a complete release of its rows (header, payload, metadata), whose
//!   shard-00001-of-00004.dprp   metadata also records {index, count, first_row} (ShardRecord)
//!   …
//!   _manifest.json              {"format": "dprp-shards", "version": 1, "count": N, "n": total
//!                                rows, "shards": [{file, index, first_row, n, checksum}], "release":
//!                                the shared metadata once}
//! ```
//!
//! Every shard uses the same public randomness (the projection seed is in the shared metadata) and
//! its own secret noise: `publish --shards N` draws one OS key for the run and every row its own
//! ChaCha20 stream of it (the stream of its global id, as in a one-file release), and a
//! worker that writes one shard (`publish --shard i/N`) draws its own key. Shard `i` holds the rows
//! with global ids `first_row, …, first_row + n − 1`; ranges are disjoint and in shard order.
//!
//! **Privacy.** A sharded release *is* the one-file release of the same rows, split into files:
//! every mechanism in dprp privatises each row on its own (its value, the public map of its global
//! id, and noise from its own stream), so row `r`'s output has the same distribution whether it
//! is written to one file or to shard `i`, and independently of every other row's — with one noise
//! key (`publish --shards`: the same bytes) or one key per worker (independent streams, the same
//! joint distribution). The guarantee is therefore the one-file release's, for the same neighbour
//! relation, stated once in the manifest. (It is not a parallel-composition argument over a
//! data-dependent split: the split is by position, and a row's position is its global id.)
//! Shards made with different mechanisms, parameters, scalings or public seeds are not one release
//! and are refused.
//!
//! The manifest records each shard file's BLAKE3 checksum (the one in its header, which
//! [`Release::open`] verifies against the file), so a shard replaced after the manifest was written
//! is refused as well as a damaged one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Release, ReleaseMeta, ShardRecord};
use crate::atomic::AtomicFile;
use crate::error::{Error, Result};

/// The manifest's file name in a shard directory. The leading `_` makes Spark, pyarrow and Hive
/// skip it when they read the directory's Parquet shards as one table (as they skip `_SUCCESS`).
pub const MANIFEST: &str = "_manifest.json";
/// The manifest's name in shard directories written before it was [`MANIFEST`] (still read).
pub const LEGACY_MANIFEST: &str = "manifest.json";
/// The manifest's `format` field.
pub const MANIFEST_FORMAT: &str = "dprp-shards";
/// The manifest's version.
pub const MANIFEST_VERSION: u32 = 1;

/// File name of shard `index` of `count`: `shard-00003-of-00016.dprp`.
pub fn shard_file_name(index: u32, count: u32) -> String {
    shard_file_name_as(index, count, super::Container::Native)
}

/// File name of shard `index` of `count` in a container: `shard-00003-of-00016.dprp` or
/// `shard-00003-of-00016.parquet`.
pub fn shard_file_name_as(index: u32, count: u32, container: super::Container) -> String {
    let ext = match container {
        super::Container::Native => "dprp",
        super::Container::Parquet => "parquet",
    };
    format!("shard-{index:05}-of-{count:05}.{ext}")
}

/// Whether a directory entry is a shard file by its name (`*.dprp` or `*.parquet`, not hidden).
pub fn is_shard_file(name: &str) -> bool {
    (name.ends_with(".dprp") || name.ends_with(".parquet")) && !name.starts_with('.')
}

/// The manifest of a shard directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`MANIFEST_FORMAT`].
    pub format: String,
    /// [`MANIFEST_VERSION`].
    pub version: u32,
    /// Shards.
    pub count: u32,
    /// Rows in all shards.
    pub n: u64,
    /// The shards, in order.
    pub shards: Vec<ManifestShard>,
    /// The metadata the shards share (that of shard 0, with `n` the total and no shard record).
    pub release: ReleaseMeta,
}

/// One shard in the manifest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ManifestShard {
    /// File name in the directory.
    pub file: String,
    /// Position, from 0.
    pub index: u32,
    /// Global id of the first row.
    pub first_row: u64,
    /// Rows.
    pub n: u64,
    /// BLAKE3 checksum of the shard file (the one in its header), hex.
    pub checksum: String,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// What every shard of one release must share: everything in the metadata but the rows, the
/// creation time, the shard record and the dataset fingerprint.
fn shared_part(m: &ReleaseMeta) -> Result<serde_json::Value> {
    let mut v = serde_json::to_value(m)
        .map_err(|e| Error::param("metadata", format!("cannot encode: {e}")))?;
    if let Some(o) = v.as_object_mut() {
        for key in ["n", "created", "shard", "dataset", "labels", "ids"] {
            o.remove(key);
        }
    }
    Ok(v)
}

/// The first field where two shards' shared metadata differ, for the error message.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value) -> String {
    let path = difference_path(a, b).unwrap_or_else(|| "metadata".into());
    if path.ends_with(".seed") || path == "seed" {
        format!("public projection seed ({path})")
    } else {
        path
    }
}

/// The dotted path of the first field where `a` and `b` differ, descending into objects.
fn difference_path(a: &serde_json::Value, b: &serde_json::Value) -> Option<String> {
    let (x, y) = (a.as_object()?, b.as_object()?);
    let key = x
        .iter()
        .find(|(k, v)| y.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .or_else(|| y.keys().find(|k| !x.contains_key(*k)).cloned())?;
    match (x.get(&key), y.get(&key)) {
        (Some(u), Some(v)) => Some(match difference_path(u, v) {
            Some(inner) => format!("{key}.{inner}"),
            None => key,
        }),
        _ => Some(key),
    }
}

/// Open every `.dprp` file of `dir` and check that they are the complete, consistent shards of
/// one release: returns them in shard order.
fn open_shards(dir: &Path, verify: bool) -> Result<Vec<(String, Release)>> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| is_shard_file(f))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::format(
            dir,
            "no shard files (*.dprp or *.parquet) in the directory",
        ));
    }
    let mut by_index: BTreeMap<u32, (String, Release)> = BTreeMap::new();
    let mut count = None;
    for f in files {
        let path = dir.join(&f);
        let r = Release::open_with(&path, verify)?;
        let Some(s) = r.meta().shard else {
            return Err(Error::format(
                &path,
                "is a release in one file, not a shard: a shard directory holds only the shards \
                 of one release",
            ));
        };
        match count {
            None => count = Some(s.count),
            Some(c) if c != s.count => {
                return Err(Error::format(
                    &path,
                    format!(
                        "is shard {} of {}, but other shards here are of {c}",
                        s.index, s.count
                    ),
                ))
            }
            Some(_) => {}
        }
        if let Some((other, _)) = by_index.get(&s.index) {
            return Err(Error::format(
                &path,
                format!("is shard {} of {}, and so is {other}", s.index, s.count),
            ));
        }
        by_index.insert(s.index, (f, r));
    }
    let count = count.unwrap_or(0);
    if let Some(missing) = (0..count).find(|i| !by_index.contains_key(i)) {
        return Err(Error::format(
            dir,
            format!(
                "shard {missing} of {count} is missing ({} expected)",
                shard_file_name(missing, count)
            ),
        ));
    }
    let shards: Vec<(String, Release)> = by_index.into_values().collect();
    let base = shared_part(shards[0].1.meta())?;
    let mut next_free = 0u64;
    for (f, r) in &shards {
        let path = dir.join(f);
        let here = shared_part(r.meta())?;
        if here != base {
            return Err(Error::format(
                &path,
                format!(
                    "is not a shard of the same release as {}: its {} differs (mechanism, \
                     parameters, public seed, scaling and guarantee must be the same)",
                    shards[0].0,
                    first_difference(&base, &here)
                ),
            ));
        }
        let s = r.meta().shard.unwrap_or(ShardRecord {
            index: 0,
            count,
            first_row: 0,
        });
        if s.first_row < next_free {
            return Err(Error::format(
                &path,
                format!(
                    "its rows start at {}, which overlaps the shard before it (rows before {})",
                    s.first_row, next_free
                ),
            ));
        }
        next_free = s.first_row.checked_add(r.n() as u64).ok_or_else(|| {
            Error::format(
                &path,
                format!(
                    "its row ids {}.. + {} rows overflow 64 bits",
                    s.first_row,
                    r.n()
                ),
            )
        })?;
    }
    if shards.iter().any(|(_, r)| r.meta().labels) != shards.iter().all(|(_, r)| r.meta().labels) {
        return Err(Error::format(
            dir,
            "some shards carry labels and others do not",
        ));
    }
    Ok(shards)
}

/// Check the shards in `dir` and write its manifest (`dprp shards finish`; `publish --shards`
/// does this itself). Returns the manifest.
pub fn finish(dir: &Path) -> Result<Manifest> {
    let shards = open_shards(dir, true)?;
    let manifest = manifest_of(&shards)?;
    let json = serde_json::to_vec_pretty(&manifest)
        .map_err(|e| Error::param("manifest", format!("cannot encode: {e}")))?;
    let mut f = AtomicFile::create(&dir.join(MANIFEST), crate::atomic::Existing::Refuse)?;
    f.write_all(&json)?;
    f.commit()?;
    Ok(manifest)
}

fn manifest_of(shards: &[(String, Release)]) -> Result<Manifest> {
    let n: u64 = shards.iter().map(|(_, r)| r.n() as u64).sum();
    let mut release = shards[0].1.meta().clone();
    release.n = n;
    release.shard = None;
    // The dataset fingerprint when every shard records the same one (`publish --shards N
    // --ledger`: the whole dataset's); none when they differ or have none.
    let first = &shards[0].1.meta().dataset;
    if !shards.iter().all(|(_, r)| &r.meta().dataset == first) {
        release.dataset = None;
    }
    Ok(Manifest {
        format: MANIFEST_FORMAT.into(),
        version: MANIFEST_VERSION,
        count: shards.len() as u32,
        n,
        shards: shards
            .iter()
            .map(|(f, r)| ManifestShard {
                file: f.clone(),
                index: r.meta().shard.map_or(0, |s| s.index),
                first_row: r.meta().shard.map_or(0, |s| s.first_row),
                n: r.n() as u64,
                checksum: hex(&r.checksum()),
            })
            .collect(),
        release,
    })
}

/// A release opened for reading: one file, or the shards of a shard directory (checked against
/// its manifest). Rows are addressed by global id: `first_row(part) + local row`.
pub struct ReleaseSet {
    path: PathBuf,
    parts: Vec<Release>,
    first_rows: Vec<u64>,
    meta: ReleaseMeta,
    sharded: bool,
}

impl ReleaseSet {
    /// Open a release file or a shard directory, verifying every file's checksum.
    pub fn open(path: &Path) -> Result<ReleaseSet> {
        ReleaseSet::open_with(path, true)
    }

    /// [`open`](Self::open), verifying the files' checksums only when `verify` is true (see
    /// [`Release::open_with`]; the manifest is still checked against every shard's header).
    pub fn open_with(path: &Path, verify: bool) -> Result<ReleaseSet> {
        if !path.is_dir() {
            let r = Release::open_with(path, verify)?;
            let meta = r.meta().clone();
            return Ok(ReleaseSet {
                path: path.to_path_buf(),
                first_rows: vec![r.meta().shard.map_or(0, |s| s.first_row)],
                parts: vec![r],
                meta,
                sharded: false,
            });
        }
        let mut mpath = path.join(MANIFEST);
        if !mpath.exists() && path.join(LEGACY_MANIFEST).exists() {
            mpath = path.join(LEGACY_MANIFEST);
        }
        let bytes = match std::fs::read(&mpath) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::format(
                    path,
                    format!(
                        "is a directory without a {MANIFEST}: not a sharded release (if its \
                         shards were written by workers with ‹shard›, run `dprp shards finish \
                         {}`)",
                        path.display()
                    ),
                ))
            }
            Err(e) => return Err(Error::io(&mpath, e)),
        };
        let manifest: Manifest = serde_json::from_slice(&bytes)
            .map_err(|e| Error::format(&mpath, format!("bad manifest: {e}")))?;
        if manifest.format != MANIFEST_FORMAT || manifest.version != MANIFEST_VERSION {
            return Err(Error::format(
                &mpath,
                format!(
                    "not a dprp shard manifest of version {MANIFEST_VERSION} (format '{}', \
                     version {})",
                    manifest.format, manifest.version
                ),
            ));
        }
        let listed: std::collections::BTreeSet<&str> =
            manifest.shards.iter().map(|s| s.file.as_str()).collect();
        for e in std::fs::read_dir(path).map_err(|e| Error::io(path, e))? {
            let f = e.map_err(|e| Error::io(path, e))?.file_name();
            let f = f.to_string_lossy();
            if is_shard_file(&f) && !listed.contains(f.as_ref()) {
                return Err(Error::format(
                    path.join(f.as_ref()),
                    format!("is not listed in {MANIFEST}: an extra or foreign shard"),
                ));
            }
        }
        for s in &manifest.shards {
            if s.file.contains('/') || s.file.contains('\\') || s.file.starts_with('.') {
                return Err(Error::format(
                    &mpath,
                    format!("bad shard file name '{}'", s.file),
                ));
            }
            let f = path.join(&s.file);
            if !f.exists() {
                return Err(Error::format(
                    &f,
                    format!("shard {} of {} is missing", s.index, manifest.count),
                ));
            }
        }
        let shards = open_shards(path, verify)?;
        let now = manifest_of(&shards)?;
        for (want, got) in manifest.shards.iter().zip(&now.shards) {
            if want != got {
                return Err(Error::format(
                    path.join(&got.file),
                    format!(
                        "does not match {MANIFEST} (checksum, rows or position differ): the shard \
                         was replaced or modified after the manifest was written"
                    ),
                ));
            }
        }
        if manifest.shards.len() != now.shards.len()
            || shared_part(&manifest.release)? != shared_part(&now.release)?
        {
            return Err(Error::format(
                &mpath,
                "does not describe the shards in the directory",
            ));
        }
        Ok(ReleaseSet {
            path: path.to_path_buf(),
            first_rows: now.shards.iter().map(|s| s.first_row).collect(),
            parts: shards.into_iter().map(|(_, r)| r).collect(),
            meta: now.release,
            sharded: true,
        })
    }

    /// Verify the checksum of every part not verified yet.
    pub fn verify(&self) -> Result<()> {
        self.parts.iter().try_for_each(|p| p.verify())
    }
    /// Whether every part's checksum has been verified.
    pub fn verified(&self) -> bool {
        self.parts.iter().all(|p| p.verified())
    }
    /// The labels of all rows in order, when the release has labels (borrowed for one part, a
    /// copy for several).
    pub fn labels(&self) -> Option<std::borrow::Cow<'_, [f32]>> {
        if self.parts.len() == 1 {
            return self.parts[0].labels().map(std::borrow::Cow::Borrowed);
        }
        let mut all = Vec::with_capacity(self.n());
        for p in &self.parts {
            all.extend_from_slice(p.labels()?);
        }
        Some(std::borrow::Cow::Owned(all))
    }

    /// The parts with the global id of each one's first row.
    pub fn into_parts(self) -> Vec<(Release, u64)> {
        self.parts.into_iter().zip(self.first_rows).collect()
    }

    /// The path given to [`open`](Self::open).
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Whether this is a shard directory.
    pub fn is_sharded(&self) -> bool {
        self.sharded
    }
    /// The shared metadata (for a shard directory: `n` is the total, no shard record).
    pub fn meta(&self) -> &ReleaseMeta {
        &self.meta
    }
    /// The mechanism that made the release, rebuilt from its record (its public map from the
    /// recorded seed): what estimates, queries and means of the release need.
    pub fn mechanism(&self) -> Result<Box<dyn crate::mechanism::Mechanism>> {
        crate::mechanism::from_record(&self.meta.mechanism, &self.meta.guarantee)
    }
    /// Whether the payload is packed sign bits (else float32 values).
    pub fn is_bits(&self) -> bool {
        self.meta.payload == crate::mechanism::Payload::Bits
    }
    /// Rows in all parts.
    pub fn n(&self) -> usize {
        self.parts.iter().map(|r| r.n()).sum()
    }
    /// Values (or bits) per row.
    pub fn k(&self) -> usize {
        self.meta.k
    }
    /// The parts: one release, or the shards in order.
    pub fn parts(&self) -> &[Release] {
        &self.parts
    }

    /// The advisories ([`crate::release::advisory`]) that apply to this release (a shard's rows
    /// are among the whole release's, so the release's metadata decides).
    pub fn advisories(&self) -> Vec<String> {
        crate::release::advisory::advisories(self.meta())
    }
    /// Global id of part `i`'s first row.
    pub fn first_row(&self, i: usize) -> u64 {
        self.first_rows[i]
    }
    /// Global id of row `row` of part `part` (a shard file opened on its own keeps the global
    /// ids of its rows).
    pub fn id(&self, part: usize, row: usize) -> u64 {
        self.first_rows[part] + self.parts[part].id(row)
    }
    /// A checksum of the whole release: the release's own for one file; for a shard directory,
    /// BLAKE3 of `dprp-shards` followed by every shard's checksum in shard order (what an HNSW
    /// index over the directory is bound to: it changes when any shard does).
    pub fn checksum(&self) -> [u8; 32] {
        if !self.sharded {
            return self.parts[0].checksum();
        }
        let mut h = blake3::Hasher::new();
        h.update(b"dprp-shards");
        for p in &self.parts {
            h.update(&p.checksum());
        }
        *h.finalize().as_bytes()
    }

    /// Global id of row `row` of all parts' rows taken one after the other (shard order).
    pub fn id_of_concatenated(&self, row: usize) -> u64 {
        let mut row = row;
        for (i, p) in self.parts.iter().enumerate() {
            if row < p.n() {
                return self.id(i, row);
            }
            row -= p.n();
        }
        row as u64
    }

    /// The part and row of the row with global id `id` (for a one-file release, its row index).
    pub fn locate(&self, id: u64) -> Result<(usize, usize)> {
        for (i, r) in self.parts.iter().enumerate() {
            let lo = self.first_rows[i];
            if id >= lo && id - lo < r.n() as u64 {
                return Ok((i, (id - lo) as usize));
            }
        }
        let ranges = |what: &str| {
            format!(
                "row {id} is not in the release ({what} rows {})",
                self.parts
                    .iter()
                    .zip(&self.first_rows)
                    .map(|(r, &f)| format!("{f}..{}", f + r.n() as u64))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let msg = if self.sharded {
            ranges("its shards hold")
        } else if self.first_rows[0] > 0 {
            ranges("this shard holds")
        } else {
            format!(
                "row {id} is out of range (the release has {} rows, 0..{})",
                self.n(),
                self.n()
            )
        };
        Err(Error::param("row", msg))
    }
}
