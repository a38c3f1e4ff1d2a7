//! Parquet in and out: `publish` reads a vector column (fixed_size_list or list of any number
//! type) with optional label and id columns, exactly as it reads the same rows from `.npy`;
//! `publish --output-format parquet` writes the release as columns whose native image has the
//! native release's bytes and checksum; every command that reads releases reads it; and every
//! way a Parquet input or release can be wrong is a clear error with no output.

use crate::cli_helpers;

use std::sync::Arc;

use arrow_array::builder::{ListBuilder, PrimitiveBuilder, StringBuilder};
use arrow_array::types::{Float64Type, Int32Type};
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, Float64Array, Int64Array, RecordBatch,
    StringArray,
};
use arrow_schema::{DataType, Field};
#[allow(unused_imports)]
use cli_helpers::*;
use dprp::release::Release;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

const N: usize = 600;
const P: usize = 8;

fn values() -> Vec<f32> {
    (0..N * P)
        .map(|i| ((i * 37 + i / 7) % 101) as f32 / 101.0 - 0.5)
        .collect()
}

fn write_parquet(path: &Path, cols: Vec<(&str, ArrayRef)>, group: usize) {
    let batch = RecordBatch::try_from_iter(cols).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(group))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn fsl(v: &[f32], d: usize) -> ArrayRef {
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    Arc::new(
        FixedSizeListArray::try_new(
            item,
            d as i32,
            Arc::new(Float32Array::from(v.to_vec())),
            None,
        )
        .unwrap(),
    )
}

/// A `list<double>` column of the rows (`row_len(i)` values in row i, `None` = a null list).
fn list_f64(rows: &[Option<Vec<Option<f64>>>]) -> ArrayRef {
    let mut b = ListBuilder::new(PrimitiveBuilder::<Float64Type>::new());
    for r in rows {
        match r {
            Some(v) => {
                for x in v {
                    b.values().append_option(*x);
                }
                b.append(true);
            }
            None => b.append(false),
        }
    }
    Arc::new(b.finish())
}

fn rows_of(v: &[f32]) -> Vec<Option<Vec<Option<f64>>>> {
    v.chunks(P)
        .map(|r| Some(r.iter().map(|&x| Some(f64::from(x))).collect()))
        .collect()
}

fn labels() -> Vec<f32> {
    (0..N).map(|i| (i % 3) as f32).collect()
}

fn ids() -> Vec<i64> {
    (0..N as i64).map(|i| 1_000_000 + 7 * i).collect()
}

/// The input fixtures: `x.npy`, `fsl.parquet` (fixed_size_list<float, 8> + label + id, row groups
/// of 250), `list.parquet` (list<double>, one other column).
fn fixtures(dir: &Path) {
    let v = values();
    put(dir, "x.npy", &npy("<f4", N, P, &f32_le(&v)));
    write_parquet(
        &dir.join("fsl.parquet"),
        vec![
            ("id", Arc::new(Int64Array::from(ids())) as ArrayRef),
            ("label", Arc::new(Float32Array::from(labels()))),
            ("emb", fsl(&v, P)),
        ],
        250,
    );
    write_parquet(
        &dir.join("list.parquet"),
        vec![
            (
                "name",
                Arc::new(StringArray::from_iter_values(
                    (0..N).map(|i| format!("r{i}")),
                )) as ArrayRef,
            ),
            ("vec", list_f64(&rows_of(&v))),
        ],
        1000,
    );
}

fn publish_args<'a>(
    input: &'a str,
    mech: &'a str,
    out: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut v = vec![
        "publish",
        input,
        "-m",
        mech,
        "-e",
        "5",
        "--projection-seed",
        "5eed",
        "--noise-seed",
        "n",
        "-o",
        out,
        // the tests publish the same names in loops
        "--overwrite",
    ];
    if mech.starts_with("dp-rp") || mech == "dp-oporp" {
        v.extend(["-d", "1e-6"]);
    }
    if mech != "privunitg" {
        v.extend(["-k", "6"]);
    }
    v.extend_from_slice(extra);
    v
}

#[test]
fn parquet_input_gives_the_rows_of_the_same_npy() {
    let d = tmp();
    let dir = d.path();
    fixtures(dir);
    ok(dir, &publish_args("x.npy", "dp-oporp", "npy.dprp", &[]));
    ok(
        dir,
        &publish_args("list.parquet", "dp-oporp", "list.dprp", &[]),
    );
    ok(
        dir,
        &publish_args(
            "fsl.parquet",
            "dp-oporp",
            "fsl.dprp",
            &[
                "--column",
                "emb",
                "--label-column",
                "label",
                "--id-column",
                "id",
            ],
        ),
    );
    let base = payload(&dir.join("npy.dprp"));
    assert_eq!(payload(&dir.join("list.dprp")), base, "list<double> input");
    assert_eq!(
        payload(&dir.join("fsl.dprp")),
        base,
        "fixed_size_list input"
    );
    let r = Release::open(&dir.join("fsl.dprp")).unwrap();
    assert!(r.meta().ids && r.meta().labels);
    assert_eq!(r.labels().unwrap(), &labels()[..]);
    let got: Vec<i64> = (0..N).map(|i| r.id(i) as i64).collect();
    assert_eq!(got, ids());
    // query answers with the stored ids
    put(
        dir,
        "q.npy",
        &npy("<f4", 1, P, &f32_le(&values()[P * 5..P * 6])),
    );
    let out = ok(
        dir,
        &["query", "fsl.dprp", "--queries", "q.npy", "--top", "3"],
    );
    for line in out.lines() {
        let id: i64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(ids().contains(&id), "{line}");
    }
    // `convert` reads Parquet too: the native dataset holds the same values and labels.
    ok(
        dir,
        &[
            "convert",
            "fsl.parquet",
            "-o",
            "fsl.bin",
            "--label-column",
            "label",
        ],
    );
    let (n, p, v, l) = read_native(&dir.join("fsl.bin"));
    assert_eq!((n, p), (N, P));
    assert_eq!(v, values());
    assert_eq!(l.unwrap(), labels());
}

#[test]
fn other_number_types_and_compressions_are_read() {
    let d = tmp();
    let dir = d.path();
    let ints: Vec<i32> = (0..N * P).map(|i| (i % 255) as i32).collect();
    let mut b = ListBuilder::new(PrimitiveBuilder::<Int32Type>::new());
    for r in ints.chunks(P) {
        for &x in r {
            b.values().append_value(x);
        }
        b.append(true);
    }
    let batch = RecordBatch::try_from_iter(vec![("px", Arc::new(b.finish()) as ArrayRef)]).unwrap();
    for (name, codec) in [
        ("snappy.parquet", parquet::basic::Compression::SNAPPY),
        (
            "zstd.parquet",
            parquet::basic::Compression::ZSTD(Default::default()),
        ),
        (
            "gzip.parquet",
            parquet::basic::Compression::GZIP(Default::default()),
        ),
        ("lz4.parquet", parquet::basic::Compression::LZ4_RAW),
    ] {
        let props = WriterProperties::builder().set_compression(codec).build();
        let mut w = ArrowWriter::try_new(
            std::fs::File::create(dir.join(name)).unwrap(),
            batch.schema(),
            Some(props),
        )
        .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        ok(dir, &["convert", name, "-o", "c.bin", "--overwrite"]);
        let (n, p, v, _) = read_native(&dir.join("c.bin"));
        assert_eq!((n, p), (N, P), "{name}");
        assert!(v.iter().zip(&ints).all(|(&a, &b)| a == b as f32), "{name}");
    }
}

/// Every column of two releases' native images agrees: payload, labels, ids, and the metadata
/// but for its creation time.
fn same_release(a: &Path, b: &Path) {
    let (ra, rb) = (Release::open(a).unwrap(), Release::open(b).unwrap());
    let (mut ma, mut mb) = (ra.meta().clone(), rb.meta().clone());
    ma.created.clear();
    mb.created.clear();
    assert_eq!(ma, mb);
    match ra.meta().payload {
        dprp::mechanism::Payload::F32 => assert_eq!(ra.values().unwrap(), rb.values().unwrap()),
        dprp::mechanism::Payload::Bits => assert_eq!(ra.bits().unwrap(), rb.bits().unwrap()),
    }
    assert_eq!(ra.labels(), rb.labels());
    assert_eq!(
        (0..ra.n()).map(|i| ra.id(i)).collect::<Vec<_>>(),
        (0..rb.n()).map(|i| rb.id(i)).collect::<Vec<_>>()
    );
}

#[test]
fn a_parquet_release_is_the_native_release_as_columns() {
    let d = tmp();
    let dir = d.path();
    fixtures(dir);
    let extra = ["--label-column", "label", "--id-column", "id"];
    for (mech, more) in [
        ("dp-oporp", &[][..]),
        ("dp-signrp-rr", &["--normalize", "l2", "-d", "1e-6"][..]),
        ("privunitg", &["--normalize", "l2"][..]),
    ] {
        let mut e: Vec<&str> = extra.to_vec();
        e.extend_from_slice(more);
        ok(dir, &publish_args("fsl.parquet", mech, "n.dprp", &e));
        // the format follows the name, or --output-format
        ok(dir, &publish_args("fsl.parquet", mech, "p.parquet", &e));
        let mut e2 = e.clone();
        e2.extend(["--output-format", "parquet"]);
        ok(dir, &publish_args("fsl.parquet", mech, "p2.out", &e2));
        same_release(&dir.join("n.dprp"), &dir.join("p.parquet"));
        same_release(&dir.join("n.dprp"), &dir.join("p2.out"));
        assert!(Release::open(&dir.join("p2.out")).unwrap().is_parquet());
        // what a data tool sees: id, label, sketch columns; the metadata as JSON
        let f = std::fs::File::open(dir.join("p.parquet")).unwrap();
        let b = ParquetRecordBatchReaderBuilder::try_new(f).unwrap();
        let names: Vec<String> = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names, ["id", "label", "sketch"], "{mech}");
        let kv = b.metadata().file_metadata().key_value_metadata().unwrap();
        let json = kv.iter().find(|e| e.key == "dprp.release").unwrap();
        let meta: Value = serde_json::from_str(json.value.as_deref().unwrap()).unwrap();
        assert_eq!(meta["n"], N as u64, "{mech}");
        let batches: Vec<RecordBatch> = b.build().unwrap().map(|b| b.unwrap()).collect();
        let id = batches[0]
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(id.value(1), ids()[1]);
        // info, query, estimate read it
        let info = ok(dir, &["info", "p.parquet"]);
        assert!(
            info.contains("as Parquet") && info.contains("checksum verified"),
            "{info}"
        );
        assert_eq!(info_json(dir, "p.parquet")["file_format"], "parquet");
    }
    put(dir, "q.npy", &npy("<f4", 2, P, &f32_le(&values()[..2 * P])));
    ok(
        dir,
        &publish_args("fsl.parquet", "dp-oporp", "n.dprp", &extra),
    );
    ok(
        dir,
        &publish_args("fsl.parquet", "dp-oporp", "p.parquet", &extra),
    );
    let q = ["--queries", "q.npy", "--top", "5"];
    assert_eq!(
        ok(dir, &with(&["query", "n.dprp"], &q)),
        ok(dir, &with(&["query", "p.parquet"], &q))
    );
    assert_eq!(
        ok(dir, &["estimate", "n.dprp", "--rows", "3,4"]),
        ok(dir, &["estimate", "p.parquet", "--rows", "3,4"])
    );
    // a local mechanism's mean decodes from Parquet as from the native file
    ok(
        dir,
        &publish_args("x.npy", "privunitg", "m.dprp", &["--normalize", "l2"]),
    );
    ok(
        dir,
        &publish_args("x.npy", "privunitg", "m.parquet", &["--normalize", "l2"]),
    );
    let mean = |f: &str| ok(dir, &["mean", f, "--json"]);
    let (a, b): (Value, Value) = (
        serde_json::from_str(&mean("m.dprp")).unwrap(),
        serde_json::from_str(&mean("m.parquet")).unwrap(),
    );
    assert_eq!(a["mean"], b["mean"]);
}

#[test]
fn parquet_shards_are_the_one_file_release() {
    let d = tmp();
    let dir = d.path();
    fixtures(dir);
    ok(dir, &publish_args("x.npy", "dp-oporp", "one.dprp", &[]));
    ok(
        dir,
        &publish_args("x.npy", "dp-oporp", "set.parquet", &["--shards", "2"]),
    );
    let mut files: Vec<String> = std::fs::read_dir(dir.join("set.parquet"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "_manifest.json",
            "shard-00000-of-00002.parquet",
            "shard-00001-of-00002.parquet"
        ]
    );
    let set = dprp::release::ReleaseSet::open(&dir.join("set.parquet")).unwrap();
    let one = Release::open(&dir.join("one.dprp")).unwrap();
    let mut all = Vec::new();
    for part in set.parts() {
        all.extend_from_slice(part.values().unwrap());
    }
    assert_eq!(all, one.values().unwrap());
    // every id column holds the global row ids, so the files read as one table
    let mut ids = Vec::new();
    for f in &files[1..] {
        let b = ParquetRecordBatchReaderBuilder::try_new(
            std::fs::File::open(dir.join("set.parquet").join(f)).unwrap(),
        )
        .unwrap();
        for batch in b.build().unwrap() {
            let batch = batch.unwrap();
            let c = batch
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            ids.extend(c.values().iter().copied());
        }
    }
    assert_eq!(ids, (0..N as i64).collect::<Vec<_>>());
    ok(dir, &["info", "set.parquet"]);
}

/// Rewrite a Parquet release with `edit` applied to its batches and key-value metadata.
fn rewrite(
    src: &Path,
    dst: &Path,
    edit_batch: impl Fn(RecordBatch) -> RecordBatch,
    edit_kv: impl Fn(&mut Vec<parquet::file::metadata::KeyValue>),
) {
    let b = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(src).unwrap()).unwrap();
    let mut kv = b
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .cloned()
        .unwrap_or_default();
    kv.retain(|e| e.key != "ARROW:schema");
    edit_kv(&mut kv);
    let schema = b.schema().clone();
    let batches: Vec<RecordBatch> = b.build().unwrap().map(|x| edit_batch(x.unwrap())).collect();
    let props = WriterProperties::builder()
        .set_key_value_metadata(Some(kv))
        .build();
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(dst).unwrap(), schema, Some(props)).unwrap();
    for b in batches {
        w.write(&b).unwrap();
    }
    w.close().unwrap();
}

#[test]
fn a_changed_parquet_release_is_refused() {
    let d = tmp();
    let dir = d.path();
    fixtures(dir);
    ok(
        dir,
        &publish_args(
            "fsl.parquet",
            "dp-oporp",
            "p.parquet",
            &["--label-column", "label"],
        ),
    );
    let src = dir.join("p.parquet");
    // an unchanged rewrite (another writer, other page layout) still verifies
    rewrite(&src, &dir.join("same.parquet"), |b| b, |_| {});
    ok(dir, &["info", "same.parquet"]);
    // power: one sketch value changed by one ulp
    let bump = |b: RecordBatch| {
        let mut cols: Vec<ArrayRef> = b.columns().to_vec();
        let list = cols[2]
            .as_any()
            .downcast_ref::<FixedSizeListArray>()
            .unwrap();
        let vals = list
            .values()
            .as_any()
            .downcast_ref::<Float32Array>()
            .unwrap();
        let mut v: Vec<f32> = vals.values().to_vec();
        v[3] = f32::from_bits(v[3].to_bits() + 1);
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        cols[2] = Arc::new(
            FixedSizeListArray::try_new(item, 6, Arc::new(Float32Array::from(v)), None).unwrap(),
        );
        RecordBatch::try_new(b.schema(), cols).unwrap()
    };
    rewrite(&src, &dir.join("value.parquet"), bump, |_| {});
    fails(
        dir,
        &["info", "value.parquet"],
        &["value.parquet", "checksum mismatch"],
    );
    // a label changed
    let relabel = |b: RecordBatch| {
        let mut cols: Vec<ArrayRef> = b.columns().to_vec();
        let l = cols[1].as_any().downcast_ref::<Float32Array>().unwrap();
        let mut v: Vec<f32> = l.values().to_vec();
        v[0] += 1.0;
        cols[1] = Arc::new(Float32Array::from(v));
        RecordBatch::try_new(b.schema(), cols).unwrap()
    };
    rewrite(&src, &dir.join("label.parquet"), relabel, |_| {});
    fails(
        dir,
        &["query", "label.parquet", "--queries", "x.npy", "--top", "1"],
        &["checksum mismatch"],
    );
    // the metadata's ε changed
    let eps = |kv: &mut Vec<parquet::file::metadata::KeyValue>| {
        for e in kv.iter_mut() {
            if e.key == "dprp.release" {
                e.value = e
                    .value
                    .take()
                    .map(|v| v.replacen("\"epsilon\": 5.0", "\"epsilon\": 9.0", 1));
            }
        }
    };
    rewrite(&src, &dir.join("eps.parquet"), |b| b, eps);
    fails(dir, &["info", "eps.parquet"], &["checksum mismatch"]);
    // rows dropped
    rewrite(
        &src,
        &dir.join("short.parquet"),
        |b| b.slice(0, b.num_rows() - 1),
        |_| {},
    );
    fails(
        dir,
        &["info", "short.parquet"],
        &["corrupt release", "rows"],
    );
    // the metadata removed: not a release (an input)
    rewrite(
        &src,
        &dir.join("bare.parquet"),
        |b| b,
        |kv| kv.retain(|e| !e.key.starts_with("dprp.")),
    );
    fails(
        dir,
        &["info", "bare.parquet"],
        &["bare.parquet", "dprp.release", "dprp publish"],
    );
    // an input file is not a release
    fails(dir, &["info", "fsl.parquet"], &["dprp.release"]);
}

#[test]
fn bad_parquet_input_is_refused_by_name_and_row() {
    let d = tmp();
    let dir = d.path();
    fixtures(dir);
    let v = values();
    let pubs = |input: &str, extra: &[&str], needles: &[&str]| {
        let a = publish_args(input, "dp-oporp", "out.dprp", extra);
        fails_clean(dir, &a, "out.dprp", needles);
    };
    // ragged: row 7 has one value too many
    let mut rows = rows_of(&v);
    rows[7].as_mut().unwrap().push(Some(0.0));
    write_parquet(
        &dir.join("ragged.parquet"),
        vec![("v", list_f64(&rows))],
        1000,
    );
    pubs(
        "ragged.parquet",
        &[],
        &["ragged.parquet", "row 7", "9 values", "row 0 has 8"],
    );
    // ragged in a later row group
    let mut rows = rows_of(&v);
    rows[450].as_mut().unwrap().pop();
    write_parquet(
        &dir.join("ragged2.parquet"),
        vec![("v", list_f64(&rows))],
        200,
    );
    pubs("ragged2.parquet", &[], &["row 450", "7 values"]);
    // a null list, a null value
    let mut rows = rows_of(&v);
    rows[12] = None;
    write_parquet(
        &dir.join("nulllist.parquet"),
        vec![("v", list_f64(&rows))],
        1000,
    );
    pubs("nulllist.parquet", &[], &["row 12", "null"]);
    let mut rows = rows_of(&v);
    rows[5].as_mut().unwrap()[3] = None;
    write_parquet(
        &dir.join("nullval.parquet"),
        vec![("v", list_f64(&rows))],
        1000,
    );
    pubs("nullval.parquet", &[], &["row 5, column 3", "null value"]);
    // not numbers
    let mut sb = ListBuilder::new(StringBuilder::new());
    for _ in 0..3 {
        sb.values().append_value("a");
        sb.append(true);
    }
    write_parquet(
        &dir.join("strings.parquet"),
        vec![("v", Arc::new(sb.finish()) as ArrayRef)],
        1000,
    );
    pubs(
        "strings.parquet",
        &[],
        &["column 'v' is a list of Utf8, not of numbers"],
    );
    // not a list; a missing column; no list column; two list columns
    pubs(
        "fsl.parquet",
        &["--column", "id"],
        &["column 'id' is Int64, not a list of numbers"],
    );
    pubs(
        "fsl.parquet",
        &["--column", "embedding"],
        &["no column 'embedding'", "id, label, emb"],
    );
    write_parquet(
        &dir.join("scalars.parquet"),
        vec![(
            "a",
            Arc::new(Float64Array::from(vec![1.0, 2.0])) as ArrayRef,
        )],
        10,
    );
    pubs("scalars.parquet", &[], &["no list column", "a"]);
    write_parquet(
        &dir.join("two.parquet"),
        vec![("u", list_f64(&rows_of(&v))), ("w", list_f64(&rows_of(&v)))],
        1000,
    );
    pubs("two.parquet", &[], &["2 list columns (u, w)", "--column"]);
    ok(
        dir,
        &publish_args("two.parquet", "dp-oporp", "w.dprp", &["--column", "w"]),
    );
    // an empty first vector
    let mut rows = rows_of(&v);
    rows[0] = Some(vec![]);
    write_parquet(
        &dir.join("empty0.parquet"),
        vec![("v", list_f64(&rows))],
        1000,
    );
    pubs("empty0.parquet", &[], &["row 0", "empty list"]);
    // labels and ids: wrong types, nulls, negative and repeated ids
    pubs(
        "fsl.parquet",
        &["--label-column", "emb"],
        &["'emb'", "not a number"],
    );
    pubs(
        "list.parquet",
        &["--label-column", "name"],
        &["column 'name' (given with --label-column) is Utf8, not a number"],
    );
    pubs(
        "fsl.parquet",
        &["--id-column", "label"],
        &["column 'label' (given with --id-column) is Float32, not an integer"],
    );
    let mut dup = ids();
    dup[300] = dup[17];
    let mut neg = ids();
    neg[9] = -4;
    for (name, idcol) in [("dup.parquet", dup), ("neg.parquet", neg)] {
        write_parquet(
            &dir.join(name),
            vec![
                ("id", Arc::new(Int64Array::from(idcol)) as ArrayRef),
                ("emb", fsl(&v, P)),
            ],
            1000,
        );
    }
    pubs(
        "dup.parquet",
        &["--id-column", "id"],
        &["row 300", "id 1000119", "row 17", "unique"],
    );
    pubs(
        "neg.parquet",
        &["--id-column", "id"],
        &["row 9", "-4", "≥ 0"],
    );
    let mut lab: Vec<Option<f32>> = labels().into_iter().map(Some).collect();
    lab[44] = None;
    write_parquet(
        &dir.join("nulllabel.parquet"),
        vec![
            ("label", Arc::new(Float32Array::from(lab)) as ArrayRef),
            ("emb", fsl(&v, P)),
        ],
        1000,
    );
    pubs(
        "nulllabel.parquet",
        &["--label-column", "label"],
        &["row 44", "null"],
    );
    // ids with shards; column flags on other formats; a CSV label column by name
    fails_clean(
        dir,
        &publish_args(
            "fsl.parquet",
            "dp-oporp",
            "sh",
            &["--id-column", "id", "--shards", "2"],
        ),
        "sh",
        &["--id-column", "sharded"],
    );
    pubs(
        "x.npy",
        &["--column", "v"],
        &["--column", "only in Parquet"],
    );
    pubs(
        "x.npy",
        &["--label-column", "3"],
        &["--label-column", "CSV", "Parquet"],
    );
    put(dir, "t.csv", b"1,2,3\n4,5,6\n");
    pubs("t.csv", &["--label-column", "lab"], &["'lab'", "number"]);
    // not Parquet at all, or cut short
    put(dir, "fake.parquet", b"PAR1 this is not parquet at all");
    pubs(
        "fake.parquet",
        &[],
        &["fake.parquet", "not a readable Parquet file"],
    );
    let whole = std::fs::read(dir.join("fsl.parquet")).unwrap();
    put(dir, "cut.parquet", &whole[..whole.len() / 2]);
    pubs("cut.parquet", &[], &["cut.parquet", "Parquet"]);
    // no rows
    write_parquet(&dir.join("none.parquet"), vec![("v", list_f64(&[]))], 1000);
    pubs("none.parquet", &[], &["no rows"]);
}

#[test]
fn a_directory_of_parquet_files_is_one_table_and_shards_skip_row_groups() {
    let d = tmp();
    let dir = d.path();
    fixtures(dir);
    let v = values();
    std::fs::create_dir(dir.join("ds")).unwrap();
    // three files of 250, 100 and 250 rows in row groups of 64, read in name order
    let cuts = [0, 250, 350, N];
    for f in 0..3 {
        let (a, b) = (cuts[f], cuts[f + 1]);
        write_parquet(
            &dir.join(format!("ds/part-{f}.parquet")),
            vec![("emb", fsl(&v[a * P..b * P], P))],
            64,
        );
    }
    put(&dir.join("ds"), "_SUCCESS", b"");
    put(&dir.join("ds"), ".hidden.parquet", b"not read");
    ok(dir, &publish_args("x.npy", "dp-oporp", "npy.dprp", &[]));
    ok(dir, &publish_args("ds", "dp-oporp", "ds.dprp", &[]));
    assert_eq!(
        payload(&dir.join("ds.dprp")),
        payload(&dir.join("npy.dprp"))
    );
    // a worker's shard read from the whole dataset (rows 300..600 span files 1 and 2) equals
    // the same shard of `publish --shards`, and to the one-file payload's rows
    ok(
        dir,
        &publish_args("x.npy", "dp-oporp", "all", &["--shards", "2"]),
    );
    let lib = dprp::publish::PublishOptions {
        part: Some(dprp::publish::Part {
            shard: dprp::release::ShardRecord {
                index: 1,
                count: 2,
                first_row: 300,
            },
            skip: 300,
            take: Some(300),
        }),
        ..Default::default()
    };
    let req = dprp::publish::PublishRequest {
        input: dir.join("ds"),
        input_opts: Default::default(),
        scaling: Default::default(),
        params: dprp::mechanism::MechanismParams {
            kind: dprp::mechanism::MechanismKind::DpOporp,
            epsilon: 5.0,
            delta: Some(1e-6),
            beta: 1.0,
            neighbour: dprp::privacy::guarantee::Neighbour::Coordinate,
            p: 0,
            k: Some(6),
            projection: None,
            seed: Some(dprp::projection::Seed::parse_hex("5eed").unwrap()),
            min_norm: None,
            individual_dp: false,
            local: Default::default(),
        },
        output: dir.join("w1.dprp"),
    };
    dprp::publish::publish_with(
        &req,
        &dprp::privacy::samplers::noise::NoiseSource::from_seed("n"),
        &lib,
    )
    .unwrap();
    assert_eq!(
        payload(&dir.join("w1.dprp")),
        payload(&dir.join("all/shard-00001-of-00002.dprp"))
    );
    // a file whose columns differ from the first file's is named
    write_parquet(
        &dir.join("ds/part-3.parquet"),
        vec![("emb", list_f64(&rows_of(&v[..10 * P])))],
        64,
    );
    let a = publish_args("ds", "dp-oporp", "out.dprp", &[]);
    fails_clean(dir, &a, "out.dprp", &["part-3.parquet", "same columns"]);
    std::fs::remove_file(dir.join("ds/part-3.parquet")).unwrap();
    // a bad row in the second file names the file and the row in it
    let mut rows = rows_of(&v[..100 * P]);
    rows[40] = None;
    std::fs::create_dir(dir.join("ds2")).unwrap();
    write_parquet(
        &dir.join("ds2/a.parquet"),
        vec![("emb", list_f64(&rows_of(&v[..300 * P])))],
        64,
    );
    write_parquet(
        &dir.join("ds2/b.parquet"),
        vec![("emb", list_f64(&rows))],
        64,
    );
    let a = publish_args("ds2", "dp-oporp", "out.dprp", &[]);
    fails_clean(
        dir,
        &a,
        "out.dprp",
        &["row 340", "in b.parquet, its row 40", "null"],
    );
    // an empty directory
    std::fs::create_dir(dir.join("empty")).unwrap();
    let a = publish_args("empty", "dp-oporp", "out.dprp", &[]);
    fails_clean(dir, &a, "out.dprp", &["empty", "without Parquet files"]);
}

#[test]
fn eval_reads_parquet_with_its_column_flags() {
    let d = tmp();
    let dir = d.path();
    fixtures(dir);
    // two list columns: --column picks one; --label-column gives the SVM its classes
    write_parquet(
        &dir.join("two.parquet"),
        vec![
            ("y", Arc::new(Float32Array::from(labels())) as ArrayRef),
            ("emb", fsl(&values(), P)),
            ("other", list_f64(&rows_of(&values()))),
        ],
        1000,
    );
    let common = [
        "--mechanisms",
        "dp-oporp",
        "--epsilon",
        "50",
        "--k",
        "4",
        "--delta",
        "1e-6",
    ];
    let mut a = vec![
        "eval",
        "retrieval",
        "--train",
        "two.parquet",
        "--test",
        "two.parquet",
    ];
    a.extend(["--queries", "10", "--out", "r"]);
    fails(dir, &with(&a, &common), &["2 list columns", "--column"]);
    a.extend(["--column", "emb"]);
    ok(dir, &with(&a, &common));
    let mut s = vec![
        "eval",
        "svm",
        "--train",
        "two.parquet",
        "--test",
        "two.parquet",
    ];
    s.extend(["--column", "emb", "--label-column", "y", "--out", "s"]);
    ok(dir, &with(&s, &common));
    let report = std::fs::read_to_string(dir.join("s/report.json")).unwrap();
    assert!(report.contains("dp-oporp"), "{report}");
}

/// A dictionary page whose header claims more values than its bytes hold is refused before the
/// parquet crate decodes it (the crate sizes the dictionary from the header alone: a fuzzed
/// 2.6 KB file made it allocate 4.7 GB — `fuzz/known/parquet-dictionary-oom`). Here the header of
/// a real 3-value dictionary is edited to claim 60.
#[test]
fn a_dictionary_page_claiming_more_values_than_its_bytes_is_refused() {
    let d = tmp();
    let dir = d.path();
    let v = values();
    let ids: Vec<i64> = (0..N as i64).map(|i| [5, 7, 9][i as usize % 3]).collect();
    write_parquet(
        &dir.join("dict.parquet"),
        vec![
            ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
            ("emb", fsl(&v, P)),
        ],
        1000,
    );
    let a = publish_args(
        "dict.parquet",
        "dp-oporp",
        "out.dprp",
        &["--label-column", "id"],
    );
    ok(dir, &a);
    std::fs::remove_file(dir.join("out.dprp")).unwrap();
    let mut bytes = std::fs::read(dir.join("dict.parquet")).unwrap();
    let b = ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(dir.join("dict.parquet")).unwrap(),
    )
    .unwrap();
    let off = b
        .metadata()
        .row_group(0)
        .column(0)
        .dictionary_page_offset()
        .unwrap() as usize;
    // compact thrift: field 7 (dictionary_page_header, a struct) then its field 1 (num_values,
    // an i32 as a zigzag varint): 3 values are the byte 6; 60 values the byte 120.
    let at = (off..off + 64)
        .find(|&i| matches!(bytes[i], 0x3C | 0x4C) && bytes[i + 1] == 0x15 && bytes[i + 2] == 6)
        .expect("the dictionary page header's value count");
    bytes[at + 2] = 120;
    put(dir, "dict.parquet", &bytes);
    fails_clean(
        dir,
        &a,
        "out.dprp",
        &[
            "dict.parquet",
            "row group 0",
            "claims 60 values in 24 bytes",
        ],
    );
}
