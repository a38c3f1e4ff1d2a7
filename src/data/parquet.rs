//! Apache Parquet input: one vector per row in a list column, streamed row group by row group.
//!
//! The vectors are one column (`--column NAME`, or the file's only list column): a
//! `fixed_size_list<T, d>` (what dprp, pyarrow's `pa.list_(pa.float32(), d)` and LanceDB write) or a
//! variable `list<T>` / `large_list<T>` (what pandas, Spark and DuckDB write for arrays) whose rows
//! must all have the same length. `T` is any float or integer type; values are converted to f32
//! (f64 and integers above 2²⁴ round to the nearest f32, as from `.npy`). An optional
//! `--label-column` holds one number per row (stored with the release, as MNIST labels are) and an
//! optional `--id-column` one non-negative integer per row, unique (checked by `publish`; stored as the release's row
//! ids, so a search answers with the caller's ids instead of positions).
//!
//! Nothing is guessed: a null list, a null value, a row of another length, a non-numeric column,
//! a missing column, a negative or repeated id are errors naming the column and the row (counted
//! from 0 across the whole file). Only the named columns are decoded (a projection), one row group
//! at a time in batches of at most [`BATCH_ROWS`] rows, so memory does not grow with the file.
//! Compression: uncompressed, Snappy, Zstandard, LZ4 and gzip pages (what pyarrow, Spark, DuckDB and
//! Polars write by default); Brotli is refused with a message saying so.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;

use super::RowReader;
use crate::error::{Error, Result};

/// Rows per decoded Arrow batch (a row group is decoded in batches of this many rows).
pub const BATCH_ROWS: usize = 8192;

/// The magic bytes at the start (and end) of every Parquet file.
pub const MAGIC: &[u8; 4] = b"PAR1";

/// Which columns to read, by name (`None`: the vectors are the only list column; no labels or
/// ids).
#[derive(Debug, Clone, Default)]
pub struct Columns {
    /// The vector column (`--column`).
    pub vectors: Option<String>,
    /// A numeric label column (`--label-column`).
    pub label: Option<String>,
    /// A non-negative integer id column (`--id-column`).
    pub id: Option<String>,
}

/// Streaming reader of the vectors (and labels and ids) in a Parquet file.
pub struct ParquetReader {
    path: PathBuf,
    batches: ParquetRecordBatchReader,
    /// The batch being handed out and the next row in it.
    batch: Option<RecordBatch>,
    at: usize,
    vectors: String,
    label: Option<String>,
    id: Option<String>,
    dim: usize,
    rows: u64,
    /// Rows handed out so far (the index of the next row in the file).
    pos: u64,
}

fn is_number(t: &DataType) -> bool {
    t.is_integer() || t.is_floating()
}

fn describe(t: &DataType) -> String {
    match t {
        DataType::FixedSizeList(f, d) => format!("fixed_size_list<{}, {d}>", f.data_type()),
        DataType::List(f) => format!("list<{}>", f.data_type()),
        DataType::LargeList(f) => format!("large_list<{}>", f.data_type()),
        other => other.to_string(),
    }
}

/// The element field of a list type.
fn list_item(t: &DataType) -> Option<&Field> {
    match t {
        DataType::FixedSizeList(f, _) | DataType::List(f) | DataType::LargeList(f) => Some(f),
        _ => None,
    }
}

impl ParquetReader {
    /// Open `path`, check the named columns' types and read the first batch (a `list<T>` column
    /// has its dimension in its first row).
    pub fn open(path: &Path, cols: &Columns) -> Result<ParquetReader> {
        let fail = |m: String| Error::format(path, m);
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| fail(format!("not a readable Parquet file: {e}")))?;
        let schema = builder.schema().clone();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        let listing = names.join(", ");
        let find = |flag: &str, name: &str| -> Result<usize> {
            schema.index_of(name).map_err(|_| {
                fail(format!(
                    "no column '{name}' (given with {flag}); the file has: {listing}"
                ))
            })
        };
        let vectors = match &cols.vectors {
            Some(name) => name.clone(),
            None => {
                let lists: Vec<&str> = schema
                    .fields()
                    .iter()
                    .filter(|f| list_item(f.data_type()).is_some())
                    .map(|f| f.name().as_str())
                    .collect();
                match lists.as_slice() {
                    [one] => one.to_string(),
                    [] => {
                        return Err(fail(format!(
                            "no list column to read vectors from (columns: {listing}); dprp reads \
                             one vector per row from a fixed_size_list or list column of numbers"
                        )))
                    }
                    many => {
                        return Err(fail(format!(
                            "{} list columns ({}): say which holds the vectors with --column",
                            many.len(),
                            many.join(", ")
                        )))
                    }
                }
            }
        };
        let vi = find("--column", &vectors)?;
        let vtype = schema.field(vi).data_type();
        match list_item(vtype) {
            Some(item) if is_number(item.data_type()) => {}
            Some(item) => {
                return Err(fail(format!(
                    "column '{vectors}' is a list of {}, not of numbers",
                    item.data_type()
                )))
            }
            None => {
                return Err(fail(format!(
                    "column '{vectors}' is {}, not a list of numbers (dprp reads one vector per \
                     row from a fixed_size_list or list column; name it with --column)",
                    describe(vtype)
                )))
            }
        }
        let mut roots = vec![vi];
        let mut scalar = |flag: &str, name: &Option<String>, ok: fn(&DataType) -> bool, want| {
            let Some(name) = name else {
                return Ok(None);
            };
            let i = find(flag, name)?;
            let t = schema.field(i).data_type();
            if !ok(t) {
                return Err(fail(format!(
                    "column '{name}' (given with {flag}) is {}, not {want}",
                    describe(t)
                )));
            }
            if name == &vectors {
                return Err(Error::param(flag, format!("'{name}' is the vector column")));
            }
            roots.push(i);
            Ok(Some(name.clone()))
        };
        let label = scalar("--label-column", &cols.label, is_number, "a number")?;
        let id = scalar("--id-column", &cols.id, DataType::is_integer, "an integer")?;
        if let (Some(l), Some(i)) = (&label, &id) {
            if l == i {
                return Err(Error::param(
                    "--id-column",
                    format!("'{i}' is also the label column"),
                ));
            }
        }
        // The rows are those of the row groups (what the reader yields, or fails on); the
        // footer's total must agree with them.
        let md = builder.metadata();
        let rows = md
            .row_groups()
            .iter()
            .try_fold(0u64, |acc, g| {
                u64::try_from(g.num_rows())
                    .ok()
                    .and_then(|r| acc.checked_add(r))
            })
            .ok_or_else(|| fail("a row group of the footer has a negative row count".into()))?;
        if u64::try_from(md.file_metadata().num_rows()).ok() != Some(rows) {
            return Err(fail(format!(
                "the footer says {} rows but its row groups hold {rows}",
                md.file_metadata().num_rows()
            )));
        }
        let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
        let batches = builder
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| fail(format!("cannot read the Parquet file: {e}")))?;
        let dim = match vtype {
            DataType::FixedSizeList(_, d) => usize::try_from(*d).unwrap_or(0),
            _ => 0,
        };
        let mut reader = ParquetReader {
            path: path.to_path_buf(),
            batches,
            batch: None,
            at: 0,
            vectors,
            label,
            id,
            dim,
            rows,
            pos: 0,
        };
        if reader.dim == 0 {
            // A list<T> column: the first row says the dimension.
            reader.next_batch()?;
            let first = match &reader.batch {
                Some(b) => list_len(b.column_by_name(&reader.vectors), 0),
                None => None,
            };
            reader.dim = match first {
                Some(d) if d > 0 => d,
                Some(_) => {
                    return Err(fail(format!(
                        "row 0 of column '{}' is an empty list: vectors need at least one value",
                        reader.vectors
                    )))
                }
                None if rows == 0 => return Err(fail("the file has no rows".into())),
                None => {
                    return Err(fail(format!(
                        "row 0 of column '{}' is null",
                        reader.vectors
                    )))
                }
            };
        }
        Ok(reader)
    }

    /// Fetch the next non-empty batch into `self.batch` (`None` at the end of the file).
    fn next_batch(&mut self) -> Result<()> {
        self.batch = None;
        self.at = 0;
        for b in self.batches.by_ref() {
            let b = b.map_err(|e| {
                Error::format(
                    &self.path,
                    format!("cannot decode the rows after row {}: {e}", self.pos),
                )
            })?;
            if b.num_rows() > 0 {
                self.batch = Some(b);
                break;
            }
        }
        Ok(())
    }

    fn row_error(&self, row: u64, msg: String) -> Error {
        Error::Row {
            path: self.path.clone(),
            row,
            msg,
        }
    }

    /// Rows `at..at + take` of `batch`, appended.
    fn take_rows(
        &mut self,
        batch: &RecordBatch,
        at: usize,
        take: usize,
        values: &mut Vec<f32>,
        labels: &mut Vec<f32>,
        ids: &mut Vec<u64>,
    ) -> Result<()> {
        let col = batch
            .column_by_name(&self.vectors)
            .ok_or_else(|| Error::format(&self.path, "the vector column vanished"))?;
        self.vectors_of(col, at, take, values)?;
        if let Some(name) = &self.label {
            let c = batch
                .column_by_name(name)
                .ok_or_else(|| Error::format(&self.path, "the label column vanished"))?;
            let start = labels.len();
            self.numbers(c, at, take, labels, &format!("label column '{name}'"))?;
            if let Some(j) = labels[start..].iter().position(|l| !l.is_finite()) {
                return Err(self.row_error(
                    self.pos + j as u64,
                    format!("the label in column '{name}' is not finite"),
                ));
            }
        }
        if let Some(name) = self.id.clone() {
            let c = batch
                .column_by_name(&name)
                .ok_or_else(|| Error::format(&self.path, "the id column vanished"))?;
            self.ids_of(c, at, take, ids, &name)?;
        }
        Ok(())
    }

    /// The vectors of rows `at..at + take` of the list column `col`.
    fn vectors_of(
        &self,
        col: &ArrayRef,
        at: usize,
        take: usize,
        values: &mut Vec<f32>,
    ) -> Result<()> {
        let d = self.dim;
        if let Some(r) = (at..at + take).find(|&r| col.is_null(r)) {
            return Err(self.row_error(
                self.pos + (r - at) as u64,
                format!("the vector in column '{}' is null", self.vectors),
            ));
        }
        let what = format!("column '{}'", self.vectors);
        let (child, start) = match col.data_type() {
            DataType::FixedSizeList(..) => {
                let a = col.as_fixed_size_list();
                (a.values(), a.value_offset(at) as usize)
            }
            DataType::List(_) => {
                let a = col.as_list::<i32>();
                let off = a.value_offsets();
                self.check_lengths(off[at..=at + take].iter().map(|&o| o as i64))?;
                (a.values(), off[at] as usize)
            }
            DataType::LargeList(_) => {
                let a = col.as_list::<i64>();
                let off = a.value_offsets();
                self.check_lengths(off[at..=at + take].iter().copied())?;
                (a.values(), off[at] as usize)
            }
            t => {
                return Err(Error::format(
                    &self.path,
                    format!("{what} is {}, not a list", describe(t)),
                ))
            }
        };
        let before = values.len();
        let sliced = child.slice(start, take * d);
        if sliced.null_count() > 0 {
            let j = (0..take * d).find(|&j| sliced.is_null(j)).unwrap_or(0);
            return Err(Error::Value {
                path: self.path.clone(),
                row: self.pos + (j / d) as u64,
                col: (j % d) as u64,
                msg: format!("null value in {what}"),
            });
        }
        self.numbers(&sliced, 0, take * d, values, &what)?;
        debug_assert_eq!(values.len() - before, take * d);
        Ok(())
    }

    /// Every list in a run of offsets has `dim` values.
    fn check_lengths(&self, offsets: impl Iterator<Item = i64>) -> Result<()> {
        let mut prev = None;
        for (r, o) in offsets.enumerate() {
            if let Some(p) = prev {
                let len = o - p;
                if len != self.dim as i64 {
                    return Err(self.row_error(
                        self.pos + r as u64 - 1,
                        format!(
                            "the vector in column '{}' has {len} values but row 0 has {}: all \
                             rows must have the same length",
                            self.vectors, self.dim
                        ),
                    ));
                }
            }
            prev = Some(o);
        }
        Ok(())
    }

    /// Values `at..at + take` of a numeric array, as f32 (nulls refused).
    fn numbers(
        &self,
        a: &ArrayRef,
        at: usize,
        take: usize,
        out: &mut Vec<f32>,
        what: &str,
    ) -> Result<()> {
        if let Some(r) = (at..at + take).find(|&r| a.is_null(r)) {
            return Err(self.row_error(self.pos + (r - at) as u64, format!("null in {what}")));
        }
        macro_rules! conv {
            ($t:ty) => {
                out.extend(
                    a.as_primitive::<$t>().values()[at..at + take]
                        .iter()
                        .map(|&v| v as f32),
                )
            };
        }
        match a.data_type() {
            DataType::Float32 => {
                out.extend_from_slice(&a.as_primitive::<Float32Type>().values()[at..at + take])
            }
            DataType::Float64 => conv!(Float64Type),
            DataType::Float16 => out.extend(
                a.as_primitive::<Float16Type>().values()[at..at + take]
                    .iter()
                    .map(|v| v.to_f32()),
            ),
            DataType::Int8 => conv!(Int8Type),
            DataType::Int16 => conv!(Int16Type),
            DataType::Int32 => conv!(Int32Type),
            DataType::Int64 => conv!(Int64Type),
            DataType::UInt8 => conv!(UInt8Type),
            DataType::UInt16 => conv!(UInt16Type),
            DataType::UInt32 => conv!(UInt32Type),
            DataType::UInt64 => conv!(UInt64Type),
            t => {
                return Err(Error::format(
                    &self.path,
                    format!("{what} holds {t}, not numbers"),
                ))
            }
        }
        Ok(())
    }

    /// Ids `at..at + take` of an integer column: non-negative, unique.
    fn ids_of(
        &self,
        a: &ArrayRef,
        at: usize,
        take: usize,
        ids: &mut Vec<u64>,
        name: &str,
    ) -> Result<()> {
        if let Some(r) = (at..at + take).find(|&r| a.is_null(r)) {
            return Err(self.row_error(
                self.pos + (r - at) as u64,
                format!("the id in column '{name}' is null"),
            ));
        }
        macro_rules! signed {
            ($t:ty) => {
                for (j, &v) in a.as_primitive::<$t>().values()[at..at + take]
                    .iter()
                    .enumerate()
                {
                    let v = i64::from(v);
                    if v < 0 {
                        return Err(self.row_error(
                            self.pos + j as u64,
                            format!("the id in column '{name}' is {v}: ids must be ≥ 0"),
                        ));
                    }
                    ids.push(v as u64);
                }
            };
        }
        macro_rules! unsigned {
            ($t:ty) => {
                ids.extend(
                    a.as_primitive::<$t>().values()[at..at + take]
                        .iter()
                        .map(|&v| u64::from(v)),
                )
            };
        }
        match a.data_type() {
            DataType::Int8 => signed!(Int8Type),
            DataType::Int16 => signed!(Int16Type),
            DataType::Int32 => signed!(Int32Type),
            DataType::Int64 => signed!(Int64Type),
            DataType::UInt8 => unsigned!(UInt8Type),
            DataType::UInt16 => unsigned!(UInt16Type),
            DataType::UInt32 => unsigned!(UInt32Type),
            DataType::UInt64 => unsigned!(UInt64Type),
            t => {
                return Err(Error::format(
                    &self.path,
                    format!("the id column '{name}' holds {t}, not integers"),
                ))
            }
        }
        Ok(())
    }
}

/// The length of row `r` of a list column (`None` when it is null or not a list).
fn list_len(col: Option<&ArrayRef>, r: usize) -> Option<usize> {
    let col = col?;
    if col.is_null(r) {
        return None;
    }
    match col.data_type() {
        DataType::FixedSizeList(_, d) => usize::try_from(*d).ok(),
        DataType::List(_) => {
            let o = col.as_list::<i32>().value_offsets();
            usize::try_from(o[r + 1] - o[r]).ok()
        }
        DataType::LargeList(_) => {
            let o = col.as_list::<i64>().value_offsets();
            usize::try_from(o[r + 1] - o[r]).ok()
        }
        _ => None,
    }
}

impl RowReader for ParquetReader {
    fn dim(&self) -> usize {
        self.dim
    }
    fn rows_hint(&self) -> Option<u64> {
        Some(self.rows)
    }
    fn has_labels(&self) -> bool {
        self.label.is_some()
    }
    fn has_ids(&self) -> bool {
        self.id.is_some()
    }
    fn read_chunk(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f32>,
        labels: &mut Vec<f32>,
    ) -> Result<usize> {
        let mut ids = Vec::new();
        self.read_rows(max_rows, values, labels, &mut ids)
    }
    fn read_rows(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f32>,
        labels: &mut Vec<f32>,
        ids: &mut Vec<u64>,
    ) -> Result<usize> {
        let mut got = 0;
        while got < max_rows {
            if self.batch.is_none() {
                self.next_batch()?;
            }
            let Some(batch) = self.batch.take() else {
                break;
            };
            let take = (max_rows - got).min(batch.num_rows() - self.at);
            self.take_rows(&batch, self.at, take, values, labels, ids)?;
            self.at += take;
            self.pos += take as u64;
            got += take;
            if self.at < batch.num_rows() {
                self.batch = Some(batch);
            } else {
                self.at = 0;
            }
        }
        Ok(got)
    }
}
