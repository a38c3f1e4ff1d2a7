//! `dprp.Release`: an opened release (memory-mapped, checksum verified), its payload as a
//! read-only numpy view, search and pairwise estimates.
//!
//! **Truncated files.** A native release is memory-mapped, and reading a page of a map beyond the
//! end of its file raises SIGBUS, which kills the interpreter. dprp writes a release to a
//! temporary file and renames it, so dprp itself never changes an open release; another program
//! that truncates (or rewrites in place) a release while it is open can. Every entry point that
//! reads the map ([`FileGuard::check`]: `sketches`, `unpack_signs`, `labels`, `ids`, `verify`,
//! `search`, `estimate`) first compares the file's current length with the length its header
//! records and raises `DprpError` ("the file was truncated while open") instead. A numpy view
//! handed out before the file was truncated cannot be protected: that is documented.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use numpy::ndarray::{Array2, ArrayView2};
use numpy::{IntoPyArray, PyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use dprp::release::{Mechanism, Payload, ReleaseSet};
use dprp::request::estimate::EstimateRequest;
use dprp::request::project::{stamp, Stamp};
use dprp::request::query::RawQueries;
use dprp::request::search::search_raw;

use crate::interrupt::{self, Outcome};
use crate::ints::{self, Int};
use crate::{err, param};

/// Where the native header (`src/release/reader.rs`) records the metadata's offset and length
/// (little-endian u64 each; the metadata ends the file, so their sum is the file's length) and
/// the BLAKE3 checksum of the file.
const META_OFF_AT: usize = 64;
const META_LEN_AT: usize = 72;
const CHECKSUM_AT: std::ops::Range<usize> = 80..112;

/// The file a native release part is mapped from, the length its header records and the file's
/// identity (device, inode). No descriptor is kept open (a sharded release may have thousands of
/// parts): each check `stat`s the path. A path that now names another file (a release published
/// again to the same name is renamed over it) or none leaves the mapped file intact, since nobody
/// can truncate it by its name any more; the same file shorter than its header says is refused.
struct FileGuard {
    path: PathBuf,
    len: u64,
    id: Option<(u64, u64)>,
}

/// A file's (device, inode), where the platform has them.
fn file_id(m: &std::fs::Metadata) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        None
    }
}

impl FileGuard {
    /// The guard of one part; `None` for a Parquet part (decoded into memory, not mapped).
    fn new(part: &dprp::release::Release) -> PyResult<Option<FileGuard>> {
        if part.is_parquet() {
            return Ok(None);
        }
        let path = part.path().to_path_buf();
        let io = |e: std::io::Error| err(dprp::Error::io(&path, e));
        let mut file = File::open(&path).map_err(io)?;
        let mut head = [0u8; CHECKSUM_AT.end];
        if file.read_exact(&mut head).is_err() {
            return Err(truncated(&path, None));
        }
        // the header read here must be the mapped file's (the checksum covers every byte)
        if head[CHECKSUM_AT] != part.checksum() {
            return Err(param(
                "release",
                format!(
                    "{}: the file changed while it was being opened; open it again",
                    path.display()
                ),
            ));
        }
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&head[at..at + 8]);
            u64::from_le_bytes(w)
        };
        let len = word(META_OFF_AT).saturating_add(word(META_LEN_AT));
        let id = file_id(&file.metadata().map_err(io)?);
        Ok(Some(FileGuard { path, len, id }))
    }

    /// `DprpError` when the mapped file is now shorter than its header says: reading the map
    /// would raise SIGBUS.
    fn check(&self) -> PyResult<()> {
        let Ok(m) = std::fs::metadata(&self.path) else {
            return Ok(()); // removed (or unreadable): the map keeps the file it was made from
        };
        if file_id(&m) != self.id {
            return Ok(()); // another file now has the name; the mapped one is untouched
        }
        if m.len() < self.len {
            return Err(truncated(&self.path, Some((m.len(), self.len))));
        }
        Ok(())
    }
}

/// The error for a release file truncated while open.
fn truncated(path: &Path, lens: Option<(u64, u64)>) -> PyErr {
    let sizes = lens.map_or(String::new(), |(now, want)| {
        format!(" (now {now} bytes, the release is {want})")
    });
    param(
        "release",
        format!(
            "{}: the file was truncated while open{sizes}; its memory-mapped payload can no \
             longer be read. Do not modify or truncate a release while it is open; open it again \
             once it is complete",
            path.display()
        ),
    )
}

/// A release opened for reading. Its payload stays memory-mapped for the object's lifetime:
/// `sketches` is a view of the map, never a copy.
///
/// Do not modify or truncate a release file while it is open (dprp itself replaces files only by
/// renaming): reading a memory-mapped file that was truncated kills the process with SIGBUS.
/// `sketches`, `unpack_signs`, `labels`, `ids`, `verify`, `search` and `estimate` check the file's
/// length first and raise `DprpError` ("the file was truncated while open"); a `sketches` array
/// already handed out cannot be checked.
#[pyclass(module = "dprp", frozen)]
pub struct Release {
    inner: ReleaseSet,
    mech: Box<dyn Mechanism>,
    /// One per part (`None` for Parquet parts).
    guards: Vec<Option<FileGuard>>,
}

impl Release {
    /// Open `path`, a release file or a sharded release's directory (the one place a release is
    /// opened from Python).
    pub fn open_path(py: Python<'_>, path: &Path, verify: bool) -> PyResult<Release> {
        let inner = py
            .detach(|| ReleaseSet::open_with(path, verify))
            .map_err(err)?;
        let mech = inner.mechanism().map_err(err)?;
        let guards = inner
            .parts()
            .iter()
            .map(FileGuard::new)
            .collect::<PyResult<_>>()?;
        Ok(Release {
            inner,
            mech,
            guards,
        })
    }

    /// `DprpError` when a file of the release was truncated since it was opened (reading its map
    /// would kill the process with SIGBUS): called before every read of the payload, labels or
    /// ids.
    fn check_files(&self) -> PyResult<()> {
        self.guards.iter().flatten().try_for_each(FileGuard::check)
    }

    /// The part and local row of the row with id `i` (global ids in a sharded release).
    fn locate(&self, i: u64, what: &str) -> PyResult<(usize, usize)> {
        self.inner.locate(i).map_err(|e| param(what, e.detail()))
    }

    /// The one payload of a release in one file; a sharded release has one per shard.
    fn single(&self) -> PyResult<&dprp::release::Release> {
        match self.inner.parts() {
            [one] => Ok(one),
            parts => Err(param(
                "release",
                format!(
                    "a sharded release has one payload per shard ({} shards): use .shards, a \
                     list of per-shard Releases (each with its own zero-copy .sketches)",
                    parts.len()
                ),
            )),
        }
    }
}

/// Search results: row ids and scores, `queries × top` each.
type Hits<'py> = (Bound<'py, PyArray2<u64>>, Bound<'py, PyArray2<f32>>);

/// Queries per search batch: between batches the search checks for Ctrl-C; a batch scans the
/// release about once per 64 queries, so at most a few release scans pass before an interrupt
/// takes effect.
const SEARCH_BATCH: usize = 256;

#[pymethods]
impl Release {
    /// Open a release file (payload memory-mapped). With `verify=True` (the default) the whole
    /// file is read once to check its BLAKE3 checksum; `verify=False` reads only the header and
    /// the metadata (still checked), for an instant open of a large release — call `verify()`
    /// later to check the payload.
    #[staticmethod]
    #[pyo3(signature = (path, verify = true))]
    fn open(py: Python<'_>, path: PathBuf, verify: bool) -> PyResult<Release> {
        let r = Release::open_path(py, &path, verify)?;
        // An advisory about the writer of this release (e.g. 2026-11 noise reuse) is a
        // UserWarning: shown once by default, an error under `-W error`.
        for a in r.inner.advisories() {
            let msg = std::ffi::CString::new(crate::py_text(&a))
                .map_err(|e| param("release", e.to_string()))?;
            PyErr::warn(
                py,
                &py.get_type::<pyo3::exceptions::PyUserWarning>(),
                &msg,
                1,
            )?;
        }
        Ok(r)
    }

    /// The advisories about this release's writer that apply to it (empty for most releases;
    /// `Release.open` also issues each as a `UserWarning`).
    #[getter]
    fn advisories(&self) -> Vec<String> {
        self.inner.advisories()
    }

    /// Check the file's BLAKE3 checksum now (a no-op when it was checked at open); raises
    /// `DprpError` when the file was modified or damaged.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        self.check_files()?;
        py.detach(|| self.inner.verify()).map_err(err)
    }

    /// Whether the checksum has been checked.
    #[getter]
    fn verified(&self) -> bool {
        self.inner.verified()
    }

    /// The shards of a sharded release, in order, as Releases of one file each (their `ids` are
    /// the rows' global ids); a release in one file is its own only shard.
    #[getter]
    fn shards(&self, py: Python<'_>) -> PyResult<Vec<Release>> {
        self.inner
            .parts()
            .iter()
            .map(|p| Release::open_path(py, p.path(), false))
            .collect()
    }

    /// Whether this is a sharded release (a directory of shards with a manifest).
    #[getter]
    fn sharded(&self) -> bool {
        self.inner.is_sharded()
    }

    /// The file the release was read from.
    #[getter]
    fn path(&self) -> PathBuf {
        self.inner.path().to_path_buf()
    }

    /// Rows.
    #[getter]
    fn n(&self) -> usize {
        self.inner.n()
    }

    /// Values (or signs) per row.
    #[getter]
    fn k(&self) -> usize {
        self.inner.k()
    }

    /// Input dimension p.
    #[getter]
    fn p(&self) -> usize {
        self.inner.meta().p
    }

    fn __len__(&self) -> usize {
        self.inner.n()
    }

    fn __repr__(&self) -> String {
        let m = self.inner.meta();
        format!(
            "<dprp.Release {}: {} rows, p = {} → k = {} {}, {}>",
            self.inner.path().display(),
            m.n,
            m.p,
            m.k,
            m.payload.noun(),
            m.mechanism.name.name()
        )
    }

    /// The payload as a read-only numpy array backed by the memory map (no copy): `n × k`
    /// float32 for real-valued releases, `n × ⌈k/64⌉` uint64 packed sign words for sign releases
    /// (bit j of a row is word j/64, bit j%64 from the least significant; set = sign ≥ 0). The
    /// array's `base` is this Release, which keeps the mapping alive. `DprpError` when the file
    /// was truncated since it was opened; truncating it while the array is in use kills the
    /// process (SIGBUS), as for any memory-mapped file.
    #[getter]
    fn sketches<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let me = slf.get();
        let one = me.single()?;
        me.check_files()?;
        let n = one.n();
        let arr = match me.inner.meta().payload {
            Payload::F32 => {
                let k = one.k();
                let v = one.values().map_err(err)?;
                let view = ArrayView2::from_shape((n, k), v).map_err(|e| param("release", e))?;
                // SAFETY: the view borrows the release's memory map, which lives as long as the
                // Release object; that object becomes the array's base, so it outlives the array.
                // The map is never written or remapped, and the array is made read-only below.
                // (A file truncated by another program after this check makes reads of the view
                // fault, as for every memory-mapped reader; see the module documentation.)
                unsafe { PyArray2::borrow_from_array(&view, slf.clone().into_any()) }.into_any()
            }
            Payload::Bits => {
                let w = one.k().div_ceil(64);
                let b = one.bits().map_err(err)?;
                let view = ArrayView2::from_shape((n, w), b).map_err(|e| param("release", e))?;
                // SAFETY: as above.
                unsafe { PyArray2::borrow_from_array(&view, slf.clone().into_any()) }.into_any()
            }
        };
        let kw = PyDict::new(slf.py());
        kw.set_item("write", false)?;
        arr.call_method("setflags", (), Some(&kw))?;
        Ok(arr)
    }

    /// Signs of a sign release as an `n × k` int8 array of ±1 (a copy; `sketches` holds the
    /// packed words).
    fn unpack_signs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<i8>>> {
        self.check_files()?;
        let mut bits: Vec<&[u64]> = Vec::new();
        for p in self.inner.parts() {
            bits.push(p.bits().map_err(err)?);
        }
        let (n, k) = (self.inner.n(), self.inner.k());
        let w = k.div_ceil(64);
        let mut out = Array2::<i8>::zeros((n, k));
        let rows = bits.iter().flat_map(|b| b.chunks_exact(w.max(1)));
        for (mut row, words) in out.rows_mut().into_iter().zip(rows) {
            for (j, s) in row.iter_mut().enumerate() {
                *s = if (words[j / 64] >> (j % 64)) & 1 == 1 {
                    1
                } else {
                    -1
                };
            }
        }
        Ok(out.into_pyarray(py))
    }

    /// Labels stored with the rows (a float32 copy), or None.
    #[getter]
    fn labels<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, numpy::PyArray1<f32>>>> {
        self.check_files()?;
        Ok(self
            .inner
            .labels()
            .map(|l| numpy::PyArray1::from_slice(py, &l)))
    }

    /// Row ids (index in the published input) as uint64.
    #[getter]
    fn ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray1<u64>>> {
        self.check_files()?;
        let ids: Vec<u64> = (0..self.inner.parts().len())
            .flat_map(|p| (0..self.inner.parts()[p].n()).map(move |i| (p, i)))
            .map(|(p, i)| self.inner.id(p, i))
            .collect();
        Ok(ids.into_pyarray(py))
    }

    /// The release metadata as a dict (the JSON `dprp info --json` prints, without its
    /// `file`/`checksum_verified` additions).
    #[getter]
    fn meta<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::to_py_json(py, self.inner.meta())
    }

    /// The privacy guarantee, as the sentence `dprp info` prints.
    #[getter]
    fn guarantee(&self) -> String {
        self.inner.meta().statement.clone()
    }

    /// Nearest released rows to raw query vectors, as `dprp query` (raw mode) finds them: the
    /// queries (2-D float array, p columns) are brought to the release's recorded scale (unless
    /// `no_scale`), projected with its public map (signs packed for sign releases) and ranked by
    /// `measure` (ip, cosine — the default for real sketches — or hamming for sign sketches).
    /// Returns `(ids, scores)`: uint64 row ids and float32 scores, each `queries × top`, best
    /// first.
    #[pyo3(signature = (queries, top=10, measure=None, no_scale=false))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        queries: &Bound<'py, PyAny>,
        #[pyo3(from_py_with = ints::int)] top: i128,
        measure: Option<&str>,
        no_scale: bool,
    ) -> PyResult<Hits<'py>> {
        let top: usize = ints::unsigned(top, "top")?;
        let m = crate::arrays::matrix(queries, "queries")?;
        let view = m.view();
        let p = view.cols();
        self.check_files()?;
        let nq = view.rows();
        let mech = self.mech.as_ref();
        let set = &self.inner;
        let outcome = interrupt::run(py, |cancel| -> dprp::Result<(Vec<u64>, Vec<f32>)> {
            let mut values = Vec::with_capacity(nq * p);
            view.append_rows(0, nq, &mut values);
            let raw = RawQueries {
                values,
                p,
                scaling: Default::default(),
                file: None,
            };
            // the search `dprp query` runs: the same refusals, ids and undefined queries
            let between = || cancel.check();
            search_raw(
                set,
                mech,
                raw,
                no_scale,
                (measure, top),
                SEARCH_BATCH,
                &between,
            )
        })?;
        let (ids, scores) = match outcome {
            Outcome::Done(r) => r.map_err(err)?,
            Outcome::Interrupted { exc, .. } => return Err(exc),
        };
        let ids = Array2::from_shape_vec((nq, top), ids).map_err(|e| param("search", e))?;
        let scores = Array2::from_shape_vec((nq, top), scores).map_err(|e| param("search", e))?;
        Ok((ids.into_pyarray(py), scores.into_pyarray(py)))
    }

    /// The release's fingerprint: 64 hex digits of its BLAKE3 checksum (over its shards' for a
    /// shard directory). A database table loaded from the release records it and is checked
    /// against it (`dprp.postgres`, `dprp.lancedb`).
    #[getter]
    fn fingerprint(&self) -> String {
        dprp::request::project::fingerprint(&self.inner)
    }

    /// The stamp a database table holding this release's sketches carries (`dprp export
    /// --postgres` writes it as the table's comment, `dprp.lancedb` in its schema metadata):
    /// fingerprint, p, k, payload, the `measure` it is indexed for (default: cosine, hamming for
    /// signs), rows and tool.
    #[pyo3(signature = (measure=None))]
    fn stamp<'py>(&self, py: Python<'py>, measure: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        crate::to_py_json(py, &stamp(&self.inner, measure).map_err(err)?)
    }

    /// Check a table's stamp (a dict, as `stamp()` gives it) against this release: its
    /// fingerprint, then its k and payload; `DprpError` naming `place` when the table holds
    /// another release's sketches.
    fn check_stamp(&self, stamp: &Bound<'_, PyAny>, place: &str) -> PyResult<()> {
        let json: String = stamp
            .py()
            .import("json")?
            .call_method1("dumps", (stamp,))?
            .extract()?;
        let value: serde_json::Value =
            serde_json::from_str(&json).map_err(|e| param("stamp", e))?;
        Stamp::check(&value, &self.inner, place).map_err(err)
    }

    /// Raw query vectors (2-D float array, p columns) as `dprp project` writes them: brought to
    /// the release's recorded scale (unless `no_scale`) and projected with its public map,
    /// without noise. Returns float32 `queries × k`, or for a sign release uint64
    /// `queries × ⌈k/64⌉` packed signs (bit j mod 64 of word j/64, set = positive) — the form
    /// a database holding the release's sketches compares with its rows. Costs no privacy: the
    /// map and the scaling are public.
    #[pyo3(signature = (queries, no_scale=false))]
    fn project<'py>(
        &self,
        py: Python<'py>,
        queries: &Bound<'py, PyAny>,
        no_scale: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::serve::project(py, &self.inner, self.mech.as_ref(), queries, no_scale)
    }

    /// Re-rank candidate rows for raw queries by dprp's debiased estimates (the numbers
    /// `dprp estimate --query-vector` prints): `candidates` is a 2-D integer array of row ids,
    /// `queries × c` (2**64 − 1 = no candidate; repeats count once), from any first stage — a
    /// database's ANN or exact search, an HNSW index. `measure`: "cosine" (default) or "ip"
    /// for real sketches; sign sketches are re-ranked by the debiased cosine. Returns
    /// `(ids, estimates, se)`, uint64 / float64 / float64 `queries × top`, best first; an
    /// undefined cosine (estimated norm not positive) is NaN and ranks last, an empty slot has
    /// id 2**64 − 1.
    #[pyo3(signature = (queries, candidates, top=10, measure=None, no_scale=false))]
    #[allow(clippy::too_many_arguments)]
    fn rerank<'py>(
        &self,
        py: Python<'py>,
        queries: &Bound<'py, PyAny>,
        candidates: &Bound<'py, PyAny>,
        #[pyo3(from_py_with = ints::int)] top: i128,
        measure: Option<&str>,
        no_scale: bool,
    ) -> PyResult<crate::serve::RerankedArrays<'py>> {
        let top: usize = ints::unsigned(top, "top")?;
        self.check_files()?;
        crate::serve::rerank(
            py,
            &self.inner,
            self.mech.as_ref(),
            queries,
            candidates,
            top,
            measure,
            no_scale,
        )
    }

    /// Load the release into PostgreSQL with pgvector, as `dprp export --postgres URL --table
    /// TABLE` does: in one transaction (an error or an interrupt leaves no table), a table
    /// `(id bigint primary key, label real, sketch vector(k) | bit(k))` filled by binary COPY,
    /// the release's fingerprint stored as the table's comment, and with `index="hnsw"` an HNSW
    /// index for `measure` ("cosine" or "ip" for real sketches, default cosine; "hamming" for
    /// signs). `replace=True` drops an existing table of that name in the same transaction.
    /// `url` is a libpq connection string (URL or key=value; TLS by `sslmode`, `sslrootcert`;
    /// `connect_timeout` default 15 s); a failure names its step (resolve, connect, TLS,
    /// authenticate, COPY, …) with every password masked (docs/databases.md).
    /// Returns a dict: rows, table, fingerprint, measure, hnsw, copy_seconds, total_seconds.
    #[pyo3(signature = (url, table, replace=false, index=None, measure=None))]
    fn to_postgres<'py>(
        &self,
        py: Python<'py>,
        url: String,
        table: String,
        replace: bool,
        index: Option<&str>,
        measure: Option<&str>,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.check_files()?;
        crate::serve::to_postgres(py, &self.inner, url, table, replace, index, measure)
    }

    /// Estimate between released rows `i` and `j` (row indices), as `dprp estimate --rows i,j`
    /// computes it (the request layer's `EstimateRequest`): for real-valued sketches the inner
    /// product ⟨u_i, u_j⟩ with the plug-in standard error of DESIGN.md §6 (Theorems C.1–C.3) —
    /// for `i == j` the row's squared norm with its noise energy removed; for sign sketches with
    /// randomised response the cosine debiased from the sign agreements (Theorem 4.5) and its
    /// delta-method standard error. Returns `(value, standard_error)`, or with `full=True` the
    /// object `dprp estimate --json` prints for the pair (the 95% intervals `ip_lo`/`ip_hi`,
    /// `cosine_lo`/`cosine_hi`, the cosine and why it may be undefined).
    #[pyo3(signature = (i, j, full = false))]
    fn estimate<'py>(
        &self,
        py: Python<'py>,
        i: Int,
        j: Int,
        full: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let i = i.get("i")?;
        let j = j.get("j")?;
        self.locate(i, "i")?;
        self.locate(j, "j")?;
        self.check_files()?;
        let rows = [i as usize, j as usize];
        let request = EstimateRequest::new(&self.inner, self.mech.as_ref(), &rows).map_err(err)?;
        if full {
            let line = request.pair().map_err(err)?.to_json()[0].take();
            let text = serde_json::to_string(&line).map_err(|e| param("estimate", e))?;
            return py.import("json")?.call_method1("loads", (text,));
        }
        let pair = request.pair_value().map_err(err)?;
        pair.into_pyobject(py).map(|t| t.into_any())
    }
}
