//! Where the tests find the real datasets: the project's `data/` directory (MNIST under
//! `data/mnist/`, the LIBSVM sets under `data/libsvm/`, see `data/README.md`), or `$DPRP_DATA`
//! if set. The data ships with the project, so a missing file fails the test, naming the file,
//! instead of skipping it.

use std::path::PathBuf;

/// The file `rel` (e.g. `mnist/t10k-images-idx3-ubyte.gz`) of the data directory; panics with
/// the path and what to do when it is missing.
pub fn data_file(rel: &str) -> PathBuf {
    let dir = match std::env::var_os("DPRP_DATA") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        // the repository's data/: beside the library's manifest, one level up from the command's
        _ => std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .map(|a| a.join("data"))
            .find(|d| d.join("README.md").is_file())
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data")),
    };
    let path = dir.join(rel);
    assert!(
        path.is_file(),
        "{} not found: the datasets ship with the project in data/ (see data/README.md); \
         restore them, or set DPRP_DATA to a directory holding mnist/ and libsvm/",
        path.display()
    );
    path
}
