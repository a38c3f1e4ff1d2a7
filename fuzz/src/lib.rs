//! Helpers shared by the fuzz targets (see `fuzz/README.md`).
//!
//! dprp's readers open files by path (they look at the file size, reopen the file for a second
//! section, detect gzip by its magic bytes), so each target writes its input to a file on tmpfs
//! (`/dev/shm`, one directory per process) and runs the real entry point on it: the code fuzzed is
//! exactly the code `dprp` runs.

use std::path::PathBuf;
use std::sync::OnceLock;

use dprp::data::{InputOptions, RowReader};

/// The per-process scratch directory (tmpfs when there is one).
fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("dprp-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the fuzz scratch directory");
        dir
    })
}

/// Write `bytes` to the scratch file `name` and return its path.
pub fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let path = scratch().join(name);
    std::fs::write(&path, bytes).expect("write the fuzz input to the scratch directory");
    path
}

/// Chunk sizes the targets ask readers for (chosen by an input byte), so that chunk boundaries
/// fall everywhere.
pub fn chunk_rows(selector: u8) -> usize {
    [1, 2, 3, 5, 8, 64, 8192][selector as usize % 7]
}

/// Read every row of `reader` in chunks of `max_rows`, checking the [`RowReader`] contract on the
/// way (a broken contract panics: that is a bug the fuzzer must report). Returns the number of rows
/// read, or the reader's error.
pub fn drain(reader: &mut dyn RowReader, max_rows: usize) -> dprp::Result<u64> {
    drain_rows(reader, max_rows, false)
}

/// [`drain`] through `read_rows`, also checking that a reader with ids gives one per row.
pub fn drain_with_ids(reader: &mut dyn RowReader, max_rows: usize) -> dprp::Result<u64> {
    drain_rows(reader, max_rows, true)
}

fn drain_rows(reader: &mut dyn RowReader, max_rows: usize, with_ids: bool) -> dprp::Result<u64> {
    let dim = reader.dim();
    assert!(dim > 0, "a reader opened with 0 features per row");
    let hint = reader.rows_hint();
    let labelled = reader.has_labels();
    let has_ids = with_ids && reader.has_ids();
    let (mut values, mut labels, mut ids) = (Vec::new(), Vec::new(), Vec::new());
    let mut total = 0u64;
    loop {
        values.clear();
        labels.clear();
        ids.clear();
        let got = if with_ids {
            reader.read_rows(max_rows, &mut values, &mut labels, &mut ids)?
        } else {
            reader.read_chunk(max_rows, &mut values, &mut labels)?
        };
        assert!(
            got <= max_rows,
            "{got} rows returned for a chunk of {max_rows}"
        );
        assert_eq!(values.len(), got * dim, "values of {got} rows × {dim}");
        assert_eq!(labels.len(), if labelled { got } else { 0 }, "labels");
        assert_eq!(ids.len(), if has_ids { got } else { 0 }, "ids");
        if got == 0 {
            break;
        }
        total += got as u64;
    }
    if let Some(n) = hint {
        assert_eq!(
            total, n,
            "the reader announced {n} rows and returned {total}"
        );
    }
    Ok(total)
}

/// Open `bytes` (written to the scratch file `name`) with `opts` and read it all.
pub fn read_all(name: &str, bytes: &[u8], opts: &InputOptions, max_rows: usize) {
    let path = write(name, bytes);
    if let Ok(mut r) = dprp::data::open_reader(&path, opts) {
        let _ = drain(r.as_mut(), max_rows);
    }
}

/// Read an opened release as `query`/`estimate` read one — every row's values or sign words,
/// every id and label — checking the sizes agree with `n` and `k`.
pub fn read_release(r: &dprp::release::Release) {
    use dprp::mechanism::Payload;
    let n = r.n();
    match r.meta().payload {
        Payload::F32 => {
            let v = r.values().expect("values of an f32 release");
            assert_eq!(v.len(), n * r.k());
            for i in 0..n {
                assert_eq!(r.row(i).expect("row in range").len(), r.k());
            }
            assert!(r.row(n).is_err());
        }
        Payload::Bits => {
            let b = r.bits().expect("bits of a sign release");
            assert_eq!(b.len(), n * r.k().div_ceil(64));
        }
    }
    for i in 0..n {
        let _ = r.id(i);
    }
    if let Some(l) = r.labels() {
        assert_eq!(l.len(), n);
    }
}
