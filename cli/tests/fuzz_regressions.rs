//! Inputs found by fuzzing the parsers (`fuzz/`, see its README), kept as regression tests: each
//! one made a reader panic, hang or allocate what a hostile header asked for before its fix. The
//! fuzz targets repair checksums so that they reach past them; the inputs here are resealed the
//! same way (`reseal`), so that each test exercises the check that was missing.

use std::path::{Path, PathBuf};

use dprp::data::{open_reader, Format, InputOptions};
use dprp::release::Release;

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .join("tests/data/fuzz")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Write `bytes` into a fresh temporary directory as `name`.
fn file(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The error reading the Parquet fixture `name` (copied to a fresh `x.parquet`) gives.
fn parquet_error(name: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = file(&dir, "x.parquet", &fixture(name));
    read_all(&path, Format::Parquet)
        .expect_err("a damaged file")
        .to_string()
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

fn set_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Recompute a release's BLAKE3 checksum (bytes 80..112), as the fuzz target does.
fn reseal(b: &mut [u8]) {
    let mut h = blake3::Hasher::new();
    h.update(&b[128..]);
    h.update(&b[..80]);
    let sum = *h.finalize().as_bytes();
    b[80..112].copy_from_slice(&sum);
}

/// Replace a release's metadata by `edit` of it (the metadata runs to the end of the file).
fn edit_meta(b: &mut Vec<u8>, edit: impl FnOnce(&mut serde_json::Value)) {
    let off = u64_at(b, 64) as usize;
    let mut meta: serde_json::Value = serde_json::from_slice(&b[off..]).unwrap();
    edit(&mut meta);
    let json = serde_json::to_vec(&meta).unwrap();
    b.truncate(off);
    b.extend_from_slice(&json);
    set_u64(b, 72, json.len() as u64);
}

/// Read every row of a data file, as `publish` does.
fn read_all(path: &Path, format: Format) -> dprp::Result<(usize, u64)> {
    let opts = InputOptions {
        format: Some(format),
        ..Default::default()
    };
    let mut r = open_reader(path, &opts)?;
    let (mut v, mut l) = (Vec::new(), Vec::new());
    let mut rows = 0u64;
    loop {
        let got = r.read_chunk(64, &mut v, &mut l)?;
        if got == 0 {
            return Ok((r.dim(), rows));
        }
        rows += got as u64;
    }
}

#[test]
fn the_fixture_release_opens() {
    // The base of the release cases below: unedited, and resealed unedited, it opens.
    let dir = tempfile::tempdir().unwrap();
    let mut b = fixture("real.release");
    let r = Release::open(&file(&dir, "a.dprp", &b)).unwrap();
    assert_eq!((r.n(), r.k()), (40, 8));
    edit_meta(&mut b, |_| {});
    reseal(&mut b);
    let r = Release::open(&file(&dir, "b.dprp", &b)).unwrap();
    assert_eq!((r.n(), r.k()), (40, 8));
}

#[test]
fn release_with_k_whose_row_size_overflows_is_corrupt() {
    // k = 2^62 real values per row: k·4 bytes per row overflowed usize — a panic with overflow
    // checks, and without them it wrapped to 0, so a release with n rows, k = 2^62 and an empty
    // payload was accepted.
    let dir = tempfile::tempdir().unwrap();
    let mut b = fixture("real.release");
    let k = 1u64 << 62;
    set_u64(&mut b, 24, k);
    set_u64(&mut b, 40, 0);
    edit_meta(&mut b, |m| m["k"] = k.into());
    reseal(&mut b);
    let e = Release::open(&file(&dir, "k.dprp", &b))
        .err()
        .expect("a release with k = 2^62 and no payload must be refused")
        .to_string();
    assert!(
        e.contains("payload length 0") && e.contains("k = 4611686018427387904"),
        "{e}"
    );
}

#[test]
fn libsvm_index_beyond_the_inferred_dimension_limit_is_refused() {
    // One 16-byte line made the reader allocate a dense row as wide as the index: 16 GB here.
    let dir = tempfile::tempdir().unwrap();
    let e = read_all(&file(&dir, "a.svm", b"1 4000000000:1\n"), Format::Svm)
        .expect_err("an index of 4e9 must not be taken as the dimension")
        .render(dprp::error::Front::Cli);
    assert!(e.contains("line 1") && e.contains("--dim"), "{e}");
    // Just past the limit (a 256 MiB row had it been read), on the second example.
    let limit = dprp::data::libsvm::MAX_INFERRED_DIM;
    let text = format!("1 1:1\n-1 {}:1\n", limit + 1);
    let e = read_all(&file(&dir, "b.svm", text.as_bytes()), Format::Svm)
        .expect_err("an index just past the limit must be refused")
        .render(dprp::error::Front::Cli);
    assert!(e.contains("line 2") && e.contains("--dim"), "{e}");
    // Given explicitly, the dimension is the user's to choose; small ones read as before.
    let (dim, rows) = read_all(&file(&dir, "c.svm", b"1 3:1\n-1 1:2\n"), Format::Svm).unwrap();
    assert_eq!((dim, rows), (3, 2));
}

/// A native dataset header (64 bytes) with the given fields, no scaling record.
fn native_header(n: u64, p: u64, data_off: u64, meta_len: u64) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[0..8].copy_from_slice(b"DPRPDATA");
    h[8..12].copy_from_slice(&1u32.to_le_bytes());
    set_u64(&mut h, 16, n);
    set_u64(&mut h, 24, p);
    set_u64(&mut h, 32, data_off);
    set_u64(&mut h, 40, meta_len);
    h
}

#[test]
fn native_scaling_record_length_near_2_pow_64_is_a_bad_offset() {
    // Found by the `native` target: 64 + meta_len overflowed (a panic with overflow checks;
    // without them it wrapped to 0, passed the data-offset check, and the scaling record of
    // 2^64 − 64 bytes was allocated: a "capacity overflow" panic).
    let dir = tempfile::tempdir().unwrap();
    let mut b = native_header(1, 1, 64, u64::MAX - 63);
    b.extend_from_slice(&0.5f32.to_le_bytes());
    let e = read_all(&file(&dir, "a.bin", &b), Format::Native)
        .expect_err("a scaling record longer than the file must be refused")
        .to_string();
    assert!(e.contains("bad data offset 64"), "{e}");
    // The same file with an honest (empty) scaling record reads.
    let mut ok = native_header(1, 1, 64, 0);
    ok.extend_from_slice(&0.5f32.to_le_bytes());
    assert_eq!(
        read_all(&file(&dir, "b.bin", &ok), Format::Native).unwrap(),
        (1, 1)
    );
}

/// The metadata of a release of `name` (the `record` fuzz target's seeds, one per mechanism).
fn record_seed(name: &str) -> serde_json::Value {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .join("fuzz/corpus/record")
        .join(format!("{name}.json"));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// Rebuild the mechanism from metadata, as `query`/`estimate`/`mean` do after opening a release.
fn rebuild(meta: serde_json::Value) -> dprp::Result<Box<dyn dprp::mechanism::Mechanism>> {
    let meta: dprp::release::ReleaseMeta = serde_json::from_value(meta).unwrap();
    dprp::mechanism::from_record(&meta.mechanism, &meta.guarantee)
}

fn with_dims(mut meta: serde_json::Value, p: u64, k: Option<u64>) -> serde_json::Value {
    meta["p"] = p.into();
    meta["mechanism"]["p"] = p.into();
    if let Some(k) = k {
        meta["k"] = k.into();
        meta["mechanism"]["k"] = k.into();
    }
    meta
}

#[test]
fn every_record_seed_rebuilds() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("fuzz/corpus/record");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        rebuild(record_seed(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        n += 1;
    }
    assert!(n >= 20, "only {n} record seeds");
}

#[test]
fn privunit_inf_metadata_with_a_huge_d_is_refused_without_allocating() {
    // Found by the `record` target: d = 2^31 made the reader allocate a d-vector of ones (16 GiB)
    // for the closed-form error, d = 2^62 ran the threshold search for minutes, and d = 2^64 − 1
    // overflowed. Now d ≤ 2^32 for every local mechanism and the error needs no vector.
    for d in [1u64 << 33, 1 << 62, u64::MAX] {
        let err = rebuild(with_dims(record_seed("privunit-inf"), d, Some(d)))
            .err()
            .unwrap_or_else(|| panic!("d = {d} accepted"));
        assert!(err.to_string().contains("2^32"), "{err}");
    }
    // Control: a large but allowed d gets past the limit (and no d-sized allocation) to the
    // consistency checks of the record, which this edited record then fails: its recorded κ was
    // computed for d = 16.
    let err = rebuild(with_dims(
        record_seed("privunit-inf"),
        1 << 24,
        Some(1 << 24),
    ))
    .err()
    .unwrap();
    assert!(err.to_string().contains("kappa"), "{err}");
}

#[test]
fn sketch_metadata_asking_for_a_map_over_the_limit_is_refused() {
    // Dense: 2^16 × 2^16 entries = 16 GiB of f32; OPORP: p = 2^31 coordinates at 16 bytes each.
    for (name, p, k) in [
        ("dp-rp-g-opt", 1u64 << 16, 1u64 << 16),
        ("dp-oporp", 1 << 31, 8),
    ] {
        let err = rebuild(with_dims(record_seed(name), p, Some(k)))
            .err()
            .unwrap_or_else(|| panic!("{name} p = {p}, k = {k} accepted"));
        assert!(
            err.to_string().contains("public map") || err.to_string().contains("too large"),
            "{name}: {err}"
        );
    }
    // Control: the same mechanisms at a modest size rebuild.
    rebuild(with_dims(record_seed("dp-rp-g-opt"), 1 << 10, Some(64))).unwrap();
    rebuild(with_dims(record_seed("dp-oporp"), 1 << 20, Some(8))).unwrap();
}

/// A Parquet file whose embedded Arrow schema (`ARROW:schema`, an IPC flatbuffer in the
/// key-value metadata) names a type that does not exist: decoding it made the arrow-ipc crate
/// panic ("Type NONE not supported"; found by the `parquet` fuzz target, chunk selector 0x01).
/// dprp now ignores that hint (`data::parquet::reader_options`) and reads the Parquet schema.
#[test]
fn parquet_input_with_a_broken_arrow_schema_hint_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = fixture("parquet-arrow-schema-panic.parquet");
    let path = file(&dir, "x.parquet", &bytes);
    // the file is damaged further on too: an error naming it, where there was a panic
    let e = read_all(&path, Format::Parquet).expect_err("a damaged file");
    assert!(e.to_string().contains("x.parquet"), "{e}");
}

/// The same broken hint in a Parquet release (found by the `parquet_release` target).
#[test]
fn parquet_release_with_a_broken_arrow_schema_hint_does_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = fixture("parquet-release-arrow-schema-panic.parquet");
    let path = file(&dir, "r.parquet", &bytes);
    // not verified (the fuzz target opens without the checksum): the decoding is what broke
    match Release::open_with(&path, false) {
        Ok(r) => assert!(r.n() > 0),
        Err(e) => assert!(e.to_string().contains("r.parquet"), "{e}"),
    }
}

/// A footer whose column chunk has a negative start: the parquet crate asserts on it
/// (`ColumnChunkMetaData::byte_range`, "column start and length should not be negative"; found
/// by the `parquet` fuzz target). dprp runs every call into the crate on a file's bytes under
/// `data::parquet::guarded`, which turns such a panic into an error naming the file, quietly.
#[test]
fn parquet_footer_that_makes_the_parquet_crate_assert_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = fixture("parquet-negative-column-start.parquet");
    let path = file(&dir, "x.parquet", &bytes);
    let e = read_all(&path, Format::Parquet).expect_err("a damaged file");
    assert!(e.to_string().contains("x.parquet"), "{e}");
    // the same file through the CLI: an error, no panic message, no output
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dprp"))
        .args(["convert", "x.parquet", "-o", "x.bin"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        !err.contains("panicked") && err.contains("x.parquet"),
        "{err}"
    );
    assert!(!dir.path().join("x.bin").exists());
}

/// A 903-byte file whose page header claims a field far longer than the file: the parquet crate
/// skipped it with millions of empty reads at the end of the file (7 s in a release build, a
/// timeout under the fuzzer; found by the `parquet` target). dprp gives the crate a
/// `data::parquet::StrictFile`, whose reads past the end are errors: the file fails at once, and
/// the message says why (the old one was "failed to fill whole buffer", after the 7 s). Since
/// `data::parquet::check_pages` walks the page headers first, the field is refused there, before
/// the crate reads the page; the `StrictFile` defence is still tested by the same input read
/// through the crate alone (below).
#[test]
fn parquet_page_header_longer_than_the_file_fails_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = fixture("parquet-page-header-past-the-end.parquet");
    let path = file(&dir, "x.parquet", &bytes);
    let e = read_all(&path, Format::Parquet).expect_err("a damaged file");
    assert!(
        e.to_string()
            .contains("declares 22903541 elements but only 541 bytes remain"),
        "{e}"
    );
    // the crate on a StrictFile, without dprp's page walk: the read past the end is an error
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let reader = SerializedFileReader::new(dprp::data::parquet::StrictFile::open(&path).unwrap())
        .expect("the footer is sound");
    let rg = reader.get_row_group(0).expect("row group");
    let mut pages = rg.get_column_page_reader(0).expect("column");
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut n = 0;
        while let Ok(Some(_)) = pages.get_next_page() {
            n += 1;
        }
        pages
            .get_next_page()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
            + &n.to_string()
    }));
    let msg = err.expect("the crate returns an error, not a panic");
    assert!(msg.contains("past the end of the file"), "{msg}");
}

/// A 939-byte footer that the parquet crate's thrift decoder takes about a second to reject in
/// a release build (over 10 s under the fuzzer's AddressSanitizer and coverage: reported as a
/// timeout by the `parquet` target): its schema list declares 475 739 881 elements in 642 bytes.
/// Since `data::parquet::footer` walks the footer first, it is refused in milliseconds, before
/// the crate decodes it; checked here: an error naming the file and the count, no panic.
#[test]
fn parquet_footer_that_is_slow_to_reject_is_an_error() {
    let e = parquet_error("parquet-slow-footer.parquet");
    assert!(
        e.to_string().contains("x.parquet") && e.to_string().contains("475739881 elements"),
        "{e}"
    );
}

/// A 1.4 KB file whose footer schema gives an element a child count far beyond the elements
/// there are: the parquet crate (59.3) reserved `Vec::with_capacity(count)` schema nodes, 16 GB,
/// before failing — an abort wherever the allocator refuses (found by the `parquet` target; an
/// out-of-memory report under the fuzzer's 2 GiB limit). `data::parquet::footer` now walks the
/// footer before the crate decodes it and refuses counts larger than what follows them (this
/// file also has a varint longer than 64 bits, which the crate wraps and dprp refuses).
#[test]
fn parquet_footer_child_count_cannot_make_the_crate_reserve_gigabytes() {
    let e = parquet_error("parquet-schema-children-16gb.parquet");
    assert!(
        e.to_string().contains("x.parquet") && e.to_string().contains("footer is damaged"),
        "{e}"
    );
}

/// An 889-byte file past the first version of that footer walk, which skipped fields by the
/// type their header declares: here field 3 of a schema element is declared a string, but the
/// parquet crate reads a field it knows by its Parquet type (an integer) whatever the header
/// says, so from there on it read other bytes than the walk did — and met a child count the
/// walk never saw (6.3 GB reserved; found by the `parquet` target in 66 s). The walk now
/// follows Parquet's thrift IDL and refuses a known field declared with another type.
#[test]
fn parquet_footer_field_with_another_type_is_refused() {
    let e = parquet_error("parquet-footer-mistyped-field.parquet");
    assert!(
        e.to_string().contains("x.parquet")
            && e.to_string().contains("not the type Parquet gives it"),
        "{e}"
    );
}

/// A row group whose footer declares 20 rows while its pages hold 4: the Arrow reader (and
/// pyarrow) return the 4 and stop, so dprp read 4 rows without a word while announcing 20
/// (found by the `parquet` target, whose harness compares the rows read with the rows
/// announced). Each file's decoded rows are now checked against its row groups' declared count.
#[test]
fn parquet_row_group_with_fewer_rows_than_declared_is_an_error() {
    let e = parquet_error("parquet-row-group-short.parquet");
    assert!(
        e.to_string()
            .contains("declare 20 rows but their pages hold 4"),
        "{e}"
    );
}

/// A 900-byte file whose dictionary page header declares about 2.1 GB uncompressed: the parquet
/// crate reserves a page's declared size before decompressing it (2 GB under the fuzzer, over its
/// limit; found with a lower RSS limit over the `parquet` corpus after runs peaked at 2 GB).
/// `data::parquet::check_pages` now reads every page header of the columns read before the
/// crate does, as the crate does, and refuses pages over `MAX_PAGE_BYTES` (here the size field
/// is also an over-long varint, which the crate wraps).
#[test]
fn parquet_page_that_would_decompress_to_gigabytes_is_refused() {
    let e = parquet_error("parquet-page-decompression-bomb.parquet");
    assert!(
        e.to_string().contains("page header") && e.to_string().contains("damaged"),
        "{e}"
    );
}

/// A 2.6 KB file whose dictionary page header (column `i`) claims about 6·10⁸ values: the parquet
/// crate sized the dictionary from the header and allocated and filled 4.7 GB (9.9 s) before
/// failing (found by the `parquet` target with `--column v --label-column l --id-column i`).
/// `data::parquet::check_dictionaries` now reads each dictionary page header first and refuses
/// the file (here the page reader already rejects its sizes).
#[test]
fn parquet_dictionary_page_header_cannot_make_the_crate_allocate_gigabytes() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = fixture("parquet-dictionary-oom.parquet");
    let path = file(&dir, "x.parquet", &bytes);
    let opts = InputOptions {
        format: Some(Format::Parquet),
        columns: dprp::data::parquet::Columns {
            vectors: Some("v".into()),
            label: Some("l".into()),
            id: Some("i".into()),
        },
        ..Default::default()
    };
    let e = open_reader(&path, &opts)
        .and_then(|mut r| {
            let (mut v, mut l, mut i) = (Vec::new(), Vec::new(), Vec::new());
            while r.read_rows(64, &mut v, &mut l, &mut i)? > 0 {}
            Ok(())
        })
        .expect_err("a damaged file");
    // refused by the dictionary check, before the crate decodes the column (its own error, after
    // the 4.7 GB, was "Not enough bytes to decode")
    let msg = e.to_string();
    assert!(
        msg.contains("x.parquet") && msg.contains("row group 0"),
        "{msg}"
    );
}
