//! A release as Apache Parquet (`publish --output-format parquet`), for DuckDB, Spark, pandas and
//! LanceDB to read directly.
//!
//! One row per released row, with the columns
//!
//! ```text
//! id      int64, not null        the row's id: the explicit id (--id-column), or its global
//!                                 position (a shard's first row + its position in the shard)
//! label   float, not null        only when the release stores labels
//! sketch  fixed_size_list<float, k> not null   (real-valued mechanisms), or
//!         fixed_size_binary(8·⌈k/64⌉) not null (sign mechanisms: the packed sign words,
//!                                 little-endian, bit j of word w is sign 64w + j: 1 = +)
//! ```
//!
//! and the release metadata in the file's key-value metadata: `dprp.release` holds the same JSON
//! ([`ReleaseMeta`]) as a native release, byte for byte, and `dprp.checksum` the BLAKE3 checksum of
//! the **equivalent native release** — the file `publish` would have written with
//! `--output-format native` from the same rows and noise. A reader rebuilds that native image in
//! memory from the columns and the metadata and checks the checksum against it, so a Parquet
//! release is verified exactly as a native one (a changed value, id, label or metadata byte is a
//! checksum mismatch), and everything that reads releases (`info`, `query`, `estimate`, `mean`,
//! the Python module, sharded directories) reads both. Unlike a native release, a Parquet
//! release is decoded into memory on opening (not memory-mapped).
//!
//! The pages are written uncompressed and without dictionaries (noise does not compress) in row
//! groups of about [`ROW_GROUP_BYTES`].

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, FixedSizeBinaryArray, FixedSizeListArray, Float32Array, Int64Array,
    RecordBatch,
};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use super::format::*;
use crate::atomic::AtomicFile;
use crate::error::{Error, Result};
use crate::mechanism::Payload;

/// Key of the release metadata (the JSON of [`ReleaseMeta`]) in the Parquet key-value metadata.
pub const META_KEY: &str = "dprp.release";
/// Key of the checksum (64 hex digits) of the equivalent native release.
pub const CHECKSUM_KEY: &str = "dprp.checksum";
/// Bytes of sketches per row group (the row group is buffered in memory before it is written).
pub const ROW_GROUP_BYTES: usize = 32 << 20;

/// The Arrow schema of a release's rows.
pub fn schema(payload: Payload, k: usize, labels: bool) -> Result<SchemaRef> {
    let mut fields = vec![Field::new("id", DataType::Int64, false)];
    if labels {
        fields.push(Field::new("label", DataType::Float32, false));
    }
    let sketch = match payload {
        Payload::F32 => DataType::FixedSizeList(
            Arc::new(Field::new("item", DataType::Float32, false)),
            i32::try_from(k).map_err(|_| Error::param("k", "too large for Parquet"))?,
        ),
        Payload::Bits => DataType::FixedSizeBinary(
            i32::try_from(row_bytes(payload, k))
                .map_err(|_| Error::param("k", "too large for Parquet"))?,
        ),
    };
    fields.push(Field::new("sketch", sketch, false));
    Ok(Arc::new(Schema::new(fields)))
}

/// The output file under the Parquet writer, keeping the first error of the release's own kind.
struct Out {
    file: AtomicFile,
    error: Option<Error>,
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.file.write_all(buf) {
            Ok(()) => Ok(buf.len()),
            Err(e) => {
                let msg = e.to_string();
                self.error.get_or_insert(e);
                Err(std::io::Error::other(msg))
            }
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The Parquet side of a [`ReleaseWriter`](super::ReleaseWriter): each appended chunk of rows
/// becomes a record batch.
pub struct ParquetSink {
    path: PathBuf,
    writer: ArrowWriter<Out>,
    schema: SchemaRef,
    k: usize,
    /// Id of the next row when ids are implicit (the shard's first row + rows so far).
    next_id: u64,
}

impl ParquetSink {
    /// Start a Parquet release at `path`.
    pub fn create(
        path: &Path,
        existing: crate::atomic::Existing,
        payload: Payload,
        k: usize,
        labels: bool,
        first_row: u64,
    ) -> Result<ParquetSink> {
        let schema = schema(payload, k, labels)?;
        let file = AtomicFile::create(path, existing)?;
        let group = (ROW_GROUP_BYTES / row_bytes(payload, k).max(1)).clamp(1024, 1 << 20);
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(group))
            .set_dictionary_enabled(false)
            .set_statistics_enabled(EnabledStatistics::None)
            .set_column_statistics_enabled("id".into(), EnabledStatistics::Chunk)
            .set_created_by(format!("dprp {}", env!("CARGO_PKG_VERSION")))
            .build();
        let out = Out { file, error: None };
        let writer = ArrowWriter::try_new(out, schema.clone(), Some(props))
            .map_err(|e| Error::format(path, format!("cannot start the Parquet file: {e}")))?;
        Ok(ParquetSink {
            path: path.to_path_buf(),
            writer,
            schema,
            k,
            next_id: first_row,
        })
    }

    fn fail(&mut self, e: parquet::errors::ParquetError) -> Error {
        match self.writer.inner_mut().error.take() {
            Some(own) => own,
            None => Error::format(&self.path, format!("cannot write Parquet: {e}")),
        }
    }

    /// Append rows: `payload` holds their sketches as the native payload bytes (f32 values or
    /// packed sign words, little-endian), `labels` one per row when stored, `ids` one per row
    /// when explicit (else the ids continue from the shard's first row).
    pub fn append(
        &mut self,
        payload: &[u8],
        rows: usize,
        labels: &[f32],
        ids: &[u64],
    ) -> Result<()> {
        if rows == 0 {
            return Ok(());
        }
        let id: Int64Array = if ids.is_empty() {
            let start = self.next_id;
            (start..start + rows as u64).map(|i| i as i64).collect()
        } else {
            let mut v = Vec::with_capacity(rows);
            for &i in ids {
                v.push(i64::try_from(i).map_err(|_| {
                    Error::param("ids", format!("id {i} does not fit Parquet's int64"))
                })?);
            }
            Int64Array::from(v)
        };
        self.next_id += rows as u64;
        let mut cols: Vec<ArrayRef> = vec![Arc::new(id)];
        if self.schema.fields().len() == 3 {
            cols.push(Arc::new(Float32Array::from(labels.to_vec())));
        }
        let bytes = Buffer::from(payload.to_vec());
        let sketch: ArrayRef = match self
            .schema
            .field(self.schema.fields().len() - 1)
            .data_type()
        {
            DataType::FixedSizeList(item, k) => {
                let values = Float32Array::new(bytes.into(), None);
                Arc::new(
                    FixedSizeListArray::try_new(item.clone(), *k, Arc::new(values), None)
                        .map_err(|e| Error::param("payload", e.to_string()))?,
                )
            }
            _ => {
                let width = payload.len() / rows;
                Arc::new(
                    FixedSizeBinaryArray::try_new(width as i32, bytes, None)
                        .map_err(|e| Error::param("payload", e.to_string()))?,
                )
            }
        };
        cols.push(sketch);
        let batch = RecordBatch::try_new(self.schema.clone(), cols)
            .map_err(|e| Error::param("payload", e.to_string()))?;
        debug_assert_eq!(batch.num_rows(), rows);
        let _ = self.k;
        match self.writer.write(&batch) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Write the footer with the metadata JSON and the checksum; the file, not yet in place.
    pub fn close(self, json: &[u8], checksum: &[u8; 32]) -> Result<AtomicFile> {
        let json =
            String::from_utf8(json.to_vec()).map_err(|_| Error::param("metadata", "not UTF-8"))?;
        self.close_with(&[(META_KEY, json), (CHECKSUM_KEY, hex(checksum))])
    }

    /// Write the footer with the key-value metadata `kv` (a file of sketches that is not a
    /// release, such as projected queries, has no [`META_KEY`]); the file, not yet in place.
    pub fn close_with(mut self, kv: &[(&str, String)]) -> Result<AtomicFile> {
        for (key, value) in kv {
            self.writer
                .append_key_value_metadata(KeyValue::new(key.to_string(), value.clone()));
        }
        if let Err(e) = self.writer.flush() {
            return Err(self.fail(e));
        }
        let path = self.path;
        match self.writer.into_inner() {
            Ok(out) => Ok(out.file),
            Err(e) => Err(Error::format(path, format!("cannot write Parquet: {e}"))),
        }
    }
}

/// Lower-case hex digits of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<[u8; 32]> {
    let s = s.as_bytes();
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        let pair = std::str::from_utf8(&s[2 * i..2 * i + 2]).ok()?;
        *o = u8::from_str_radix(pair, 16).ok()?;
    }
    Some(out)
}

/// Every list between consecutive `offsets` has `k` values (rows counted from `first`).
fn check_lengths(
    offsets: impl Iterator<Item = i64>,
    k: usize,
    first: u64,
    corrupt: &dyn Fn(String) -> Error,
) -> Result<()> {
    let mut prev = None;
    for (r, o) in offsets.enumerate() {
        if let Some(p) = prev {
            if o - p != k as i64 {
                return Err(corrupt(format!(
                    "row {} has {} sketch values, not k = {k}",
                    first + r as u64 - 1,
                    o - p
                )));
            }
        }
        prev = Some(o);
    }
    Ok(())
}

/// Whether the file at `path` starts with Parquet's magic bytes.
pub fn is_parquet(path: &Path) -> bool {
    let mut head = [0u8; 4];
    File::open(path)
        .ok()
        .and_then(|mut f| crate::data::source::read_up_to(&mut f, &mut head).ok())
        == Some(4)
        && &head == crate::data::parquet::MAGIC
}

/// The checksum a Parquet release at `path` records (`dprp.checksum`), read from its footer alone
/// (the columns are not decoded nor verified): `Ok(None)` for a Parquet file that is not a dprp
/// release (no `dprp.release` metadata), e.g. a dataset kept beside the releases.
pub fn recorded_checksum(path: &Path) -> Result<Option<[u8; 32]>> {
    crate::data::parquet::guarded(path, || {
        let file = crate::data::parquet::StrictFile::open(path)?;
        let md = parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&file)
            .map_err(|e| Error::format(path, format!("not a readable Parquet file: {e}")))?;
        let kv = md.file_metadata().key_value_metadata();
        let get = |key: &str| {
            kv.and_then(|kv| kv.iter().find(|e| e.key == key))
                .and_then(|e| e.value.clone())
        };
        if get(META_KEY).is_none() {
            return Ok(None);
        }
        get(CHECKSUM_KEY)
            .as_deref()
            .and_then(unhex)
            .map(Some)
            .ok_or_else(|| {
                Error::corrupt(
                    path,
                    format!("missing or malformed '{CHECKSUM_KEY}' metadata"),
                )
            })
    })
}

/// The native image of the Parquet release at `path` (header, payload, ids, labels, metadata,
/// laid out as [`ReleaseWriter`](super::ReleaseWriter) writes them, with the recorded checksum
/// in the header), as 8-byte-aligned words and its length in bytes. The caller validates it as
/// a native release.
pub fn native_image(path: &Path) -> Result<(Vec<u64>, usize)> {
    crate::data::parquet::guarded(path, || native_image_unguarded(path))
}

fn native_image_unguarded(path: &Path) -> Result<(Vec<u64>, usize)> {
    let corrupt = |m: String| Error::corrupt(path, m);
    let file = crate::data::parquet::StrictFile::open(path)?;
    let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(
        file,
        crate::data::parquet::reader_options(),
    )
    .map_err(|e| Error::format(path, format!("not a readable Parquet file: {e}")))?;
    let (json, checksum, meta) = recorded_meta(path, &builder)?;
    check_columns(path, &builder, &meta)?;
    let rows = builder.metadata().file_metadata().num_rows();
    if u64::try_from(rows).ok() != Some(meta.n) {
        return Err(corrupt(format!(
            "the file holds {rows} rows but its metadata says {}",
            meta.n
        )));
    }
    let reader = builder
        .with_batch_size(8192)
        .build()
        .map_err(|e| corrupt(format!("cannot read: {e}")))?;
    let mut rows = DecodedRows::default();
    rows.image.resize(HEADER_LEN);
    rows.decode(path, reader, &meta)?;
    Ok(rows.into_image(&meta, &json, &checksum))
}

/// The release's metadata (its JSON text and parsed) and recorded checksum, from the Parquet
/// file's key–value metadata.
fn recorded_meta(
    path: &Path,
    builder: &ParquetRecordBatchReaderBuilder<crate::data::parquet::StrictFile>,
) -> Result<(String, [u8; 32], ReleaseMeta)> {
    let corrupt = |m: String| Error::corrupt(path, m);
    let kv = builder.metadata().file_metadata().key_value_metadata();
    let get = |key: &str| {
        kv.and_then(|kv| kv.iter().find(|e| e.key == key))
            .and_then(|e| e.value.clone())
    };
    let Some(json) = get(META_KEY) else {
        return Err(Error::format(
            path,
            format!(
                "a Parquet file without the '{META_KEY}' metadata of a dprp release (to publish its \
                 vectors, give it to `dprp publish` as input)"
            ),
        ));
    };
    let checksum = get(CHECKSUM_KEY)
        .as_deref()
        .and_then(unhex)
        .ok_or_else(|| corrupt(format!("missing or malformed '{CHECKSUM_KEY}' metadata")))?;
    let meta: ReleaseMeta = serde_json::from_str(&json)
        .map_err(|e| corrupt(format!("bad metadata in '{META_KEY}': {e}")))?;
    Ok((json, checksum, meta))
}

/// The columns are those of the release the metadata describes, and their pages are sound.
fn check_columns(
    path: &Path,
    builder: &ParquetRecordBatchReaderBuilder<crate::data::parquet::StrictFile>,
    meta: &ReleaseMeta,
) -> Result<()> {
    let (payload, k, n) = (meta.payload, meta.k, meta.n);
    let want = schema(payload, k, meta.labels)?;
    let got = builder.schema();
    // Read without the Arrow schema hint (see `crate::data::parquet::reader_options`), the
    // fixed_size_list of a real-valued sketch comes back as a list: its lengths are checked below.
    let same = got.fields().len() == want.fields().len()
        && got.fields().iter().zip(want.fields()).all(|(g, w)| {
            g.name() == w.name()
                && (g.data_type() == w.data_type()
                    || matches!((g.data_type(), payload),
                        (DataType::List(f) | DataType::LargeList(f), Payload::F32)
                            if f.data_type() == &DataType::Float32))
        });
    if !same {
        return Err(Error::corrupt(
            path,
            format!(
                "the columns ({}) are not those of a {}-row release with k = {k}{}",
                got.fields()
                    .iter()
                    .map(|f| format!("{}: {}", f.name(), f.data_type()))
                    .collect::<Vec<_>>()
                    .join(", "),
                n,
                if meta.labels { " and labels" } else { "" }
            ),
        ));
    }
    let columns = builder.parquet_schema().num_columns();
    crate::data::parquet::check_pages(path, builder.metadata(), &(0..columns).collect::<Vec<_>>())
}

/// The rows of a Parquet release decoded into the native layout: the payload (after the header
/// space) in `image`, the ids and labels beside it.
#[derive(Default)]
struct DecodedRows {
    image: Image,
    ids: Vec<u64>,
    labels: Vec<f32>,
    seen: u64,
}

impl DecodedRows {
    /// Every batch of `reader`, checked (no nulls, ids in place or non-negative, `n` rows of
    /// `k` values).
    fn decode(
        &mut self,
        path: &Path,
        reader: parquet::arrow::arrow_reader::ParquetRecordBatchReader,
        meta: &ReleaseMeta,
    ) -> Result<()> {
        let corrupt = |m: String| Error::corrupt(path, m);
        let n = meta.n;
        for batch in reader {
            let seen = self.seen;
            let batch =
                batch.map_err(|e| corrupt(format!("cannot decode rows after {seen}: {e}")))?;
            let m = batch.num_rows();
            let cols = batch.columns();
            if cols.iter().any(|c| c.null_count() > 0) {
                return Err(corrupt(format!(
                    "null values in rows {seen}..{}",
                    seen + m as u64
                )));
            }
            self.ids(cols[0].as_primitive::<Int64Type>().values(), meta, &corrupt)?;
            if meta.labels {
                self.labels
                    .extend_from_slice(cols[1].as_primitive::<Float32Type>().values());
            }
            self.sketches(&cols[cols.len() - 1], m, meta, &corrupt)?;
            self.seen += m as u64;
            if self.seen > n {
                break;
            }
        }
        if self.seen != n
            || self.image.len - HEADER_LEN != row_bytes(meta.payload, meta.k) * n as usize
        {
            return Err(corrupt(format!(
                "{} rows decoded, the metadata says {n}",
                self.seen
            )));
        }
        Ok(())
    }

    /// A batch's ids: kept (a release with ids; never negative) or checked to be the rows'
    /// positions from the shard's first row.
    fn ids(
        &mut self,
        id: &[i64],
        meta: &ReleaseMeta,
        corrupt: &dyn Fn(String) -> Error,
    ) -> Result<()> {
        let first_row = meta.shard.map_or(0, |s| s.first_row);
        for (j, &v) in id.iter().enumerate() {
            let row = self.seen + j as u64;
            if meta.ids {
                self.ids.push(
                    u64::try_from(v)
                        .map_err(|_| corrupt(format!("row {row} has the negative id {v}")))?,
                );
            } else if u64::try_from(v).ok() != Some(first_row + row) {
                return Err(corrupt(format!(
                    "row {row} has id {v}, but its position makes it {}",
                    first_row + row
                )));
            }
        }
        Ok(())
    }

    /// A batch's `m` sketches appended to the payload: `k` f32 values (a fixed-size or checked
    /// variable-length list) or the packed sign bytes.
    fn sketches(
        &mut self,
        sketch: &ArrayRef,
        m: usize,
        meta: &ReleaseMeta,
        corrupt: &dyn Fn(String) -> Error,
    ) -> Result<()> {
        let (k, seen) = (meta.k, self.seen);
        match meta.payload {
            Payload::F32 => {
                let (child, start) = match sketch.data_type() {
                    DataType::FixedSizeList(..) => {
                        let list = sketch.as_fixed_size_list();
                        (list.values().clone(), list.value_offset(0) as usize)
                    }
                    DataType::List(_) => {
                        let off = sketch.as_list::<i32>().value_offsets();
                        check_lengths(off.iter().map(|&o| o as i64), k, seen, corrupt)?;
                        (sketch.as_list::<i32>().values().clone(), off[0] as usize)
                    }
                    _ => {
                        let off = sketch.as_list::<i64>().value_offsets();
                        check_lengths(off.iter().copied(), k, seen, corrupt)?;
                        (sketch.as_list::<i64>().values().clone(), off[0] as usize)
                    }
                };
                if child.len() < start + m * k {
                    return Err(corrupt(format!("short sketch values in rows {seen}..")));
                }
                let values = child.slice(start, m * k);
                if values.null_count() > 0 {
                    return Err(corrupt(format!("null sketch values in rows {seen}..")));
                }
                let v = values.as_primitive::<Float32Type>().values();
                self.image.extend(bytemuck::cast_slice::<f32, u8>(v));
            }
            Payload::Bits => {
                let bin = sketch.as_fixed_size_binary();
                for r in 0..m {
                    self.image.extend(bin.value(r));
                }
            }
        }
        Ok(())
    }

    /// The native image: the payload, then (64-byte aligned) the ids, the labels and the
    /// metadata, and the header with the recorded checksum; as words and a length in bytes.
    fn into_image(self, meta: &ReleaseMeta, json: &str, checksum: &[u8; 32]) -> (Vec<u64>, usize) {
        let mut image = self.image;
        let payload_len = (image.len - HEADER_LEN) as u64;
        let pad = |image: &mut Image| image.resize(image.len.next_multiple_of(64));
        let mut ids_off = 0u64;
        if meta.ids {
            pad(&mut image);
            ids_off = image.len as u64;
            for i in &self.ids {
                image.extend(&i.to_le_bytes());
            }
        }
        let mut labels_off = 0u64;
        if meta.labels {
            pad(&mut image);
            labels_off = image.len as u64;
            image.extend(bytemuck::cast_slice(&self.labels));
        }
        pad(&mut image);
        let meta_off = image.len as u64;
        image.extend(json.as_bytes());
        let h = header(&Header {
            payload: meta.payload,
            n: meta.n,
            k: meta.k as u64,
            payload_len,
            ids_off,
            labels_off,
            meta_off,
            meta_len: json.len() as u64,
        });
        image.bytes_mut()[..HEADER_LEN].copy_from_slice(&h);
        image.bytes_mut()[80..112].copy_from_slice(checksum);
        (image.words, image.len)
    }
}

/// A byte buffer kept in 8-byte words (so the payload can be viewed as f32 or u64 in place).
#[derive(Default)]
struct Image {
    words: Vec<u64>,
    len: usize,
}

impl Image {
    fn resize(&mut self, len: usize) {
        self.words.resize(len.div_ceil(8), 0);
        if len < self.len {
            let tail = self.len.min(self.words.len() * 8);
            self.bytes_mut_all()[len..tail].fill(0);
        }
        self.len = len;
    }
    fn extend(&mut self, b: &[u8]) {
        let at = self.len;
        self.resize(at + b.len());
        self.bytes_mut()[at..].copy_from_slice(b);
    }
    fn bytes_mut_all(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.words)
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        &mut self.bytes_mut_all()[..len]
    }
}
