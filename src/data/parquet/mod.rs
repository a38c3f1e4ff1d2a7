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

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::{
    ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use parquet::arrow::ProjectionMask;

use super::RowReader;
use crate::error::{Error, Result};

mod footer;
mod guard;
mod schema;

pub use guard::{check_pages, guarded, reader_options, StrictFile, StrictRead};
use schema::{dataset_files, describe, inspect, FilePart, Resolved};

/// Most rows per decoded Arrow batch (a row group is decoded in batches of this many rows, fewer
/// for wide rows: see [`BATCH_BYTES`]).
pub const BATCH_ROWS: usize = 8192;

/// About the most bytes of one decoded batch: rows wider than `BATCH_BYTES / BATCH_ROWS` (8 KiB,
/// 2048 float32 values) are decoded in batches of fewer rows.
pub const BATCH_BYTES: usize = 64 << 20;

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

/// Streaming reader of the vectors (and labels and ids) in a Parquet file, or in the Parquet
/// files of a directory (`*.parquet` in name order, as Spark, DuckDB and pyarrow write datasets:
/// one table whose rows are the files' rows in that order, every file with the same columns).
pub struct ParquetReader {
    /// The input as given (a file or a directory).
    input: PathBuf,
    files: Vec<FilePart>,
    /// The file being read, and where in it reading starts when its reader is (re)built.
    file: usize,
    from: u64,
    batches: Option<ParquetRecordBatchReader>,
    /// The batch being handed out and the next row in it.
    batch: Option<RecordBatch>,
    at: usize,
    vectors: String,
    label: Option<String>,
    id: Option<String>,
    dim: usize,
    rows: u64,
    /// Rows handed out (or skipped) so far: the global index of the next row.
    pos: u64,
    /// The global index after the last row decoded from the current file: checked against the
    /// rows its row groups declare when its batches end (a page may hold fewer or more rows).
    decoded: u64,
}

impl ParquetReader {
    /// Open `path` (a Parquet file, or a directory of them), check the named columns' types in
    /// every file and read the first batch (a `list<T>` column has its dimension in its first
    /// row).
    pub fn open(path: &Path, cols: &Columns) -> Result<ParquetReader> {
        let paths = if path.is_dir() {
            dataset_files(path)?
        } else {
            vec![path.to_path_buf()]
        };
        let mut files = Vec::with_capacity(paths.len());
        let mut first: Option<Resolved> = None;
        let mut rows = 0u64;
        for p in &paths {
            let (mut part, resolved) = inspect(p, cols, first.as_ref())?;
            part.start = rows;
            rows = rows
                .checked_add(part.rows)
                .ok_or_else(|| Error::format(path, "more than 2^64 rows"))?;
            files.push(part);
            first.get_or_insert(resolved);
        }
        let Some(first) = first else {
            return Err(Error::format(path, "no Parquet files"));
        };
        let dim = match &first.types[0] {
            DataType::FixedSizeList(_, d) => usize::try_from(*d).unwrap_or(0),
            _ => 0,
        };
        let mut reader = ParquetReader {
            input: path.to_path_buf(),
            files,
            file: 0,
            from: 0,
            batches: None,
            batch: None,
            at: 0,
            vectors: first.vectors,
            label: first.label,
            id: first.id,
            dim,
            rows,
            pos: 0,
            decoded: 0,
        };
        if reader.dim == 0 {
            // A list<T> column: the first row says the dimension.
            reader.next_batch()?;
            let first = match &reader.batch {
                Some(b) => list_len(b.column_by_name(&reader.vectors), 0),
                None => None,
            };
            let fail = |m: String| Error::format(path, m);
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

    /// A reader of file `f` from its row `from` on (whole row groups before it are not read).
    fn build(&self, f: usize, from: u64) -> Result<ParquetRecordBatchReader> {
        let part = &self.files[f];
        guarded(&part.path, || Self::build_unguarded(part, from))
    }

    fn build_unguarded(part: &FilePart, from: u64) -> Result<ParquetRecordBatchReader> {
        let fail = |e: parquet::errors::ParquetError| {
            Error::format(&part.path, format!("cannot read the Parquet file: {e}"))
        };
        let file = StrictFile::open(&part.path)?;
        let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(file, reader_options())
            .map_err(fail)?;
        let mask = ProjectionMask::roots(builder.parquet_schema(), part.roots.iter().copied());
        let mut builder = builder
            .with_projection(mask)
            .with_batch_size(part.batch_rows);
        if from > 0 {
            // the row group holding row `from`, and the rows to skip in it
            let (mut g, mut start) = (0, 0u64);
            while g < part.groups.len() && start + part.groups[g] <= from {
                start += part.groups[g];
                g += 1;
            }
            let rest: u64 = part.groups[g..].iter().sum();
            let skip = usize::try_from(from - start).unwrap_or(usize::MAX);
            let take = usize::try_from(rest.saturating_sub(from - start)).unwrap_or(usize::MAX);
            builder = builder
                .with_row_groups((g..part.groups.len()).collect())
                .with_row_selection(RowSelection::from(vec![
                    RowSelector::skip(skip),
                    RowSelector::select(take),
                ]));
        }
        builder.build().map_err(fail)
    }

    /// Fetch the next non-empty batch into `self.batch` (`None` at the end of the input).
    fn next_batch(&mut self) -> Result<()> {
        self.batch = None;
        self.at = 0;
        loop {
            if self.batches.is_none() {
                if self.file >= self.files.len() {
                    return Ok(());
                }
                self.batches = Some(self.build(self.file, self.from)?);
                self.decoded = self.files[self.file].start + self.from;
                self.from = 0;
            }
            let part = &self.files[self.file];
            let (path, end) = (part.path.clone(), part.start + part.rows);
            let batches = &mut self.batches;
            let next = guarded(&path, || Ok(batches.as_mut().and_then(|b| b.next())))?;
            let short = |decoded: u64| {
                Error::format(
                    &path,
                    format!(
                        "its row groups declare {} rows but their pages hold {}: the file is \
                         damaged",
                        end - part.start,
                        decoded - part.start
                    ),
                )
            };
            match next {
                Some(Ok(b)) if b.num_rows() > 0 => {
                    self.decoded += b.num_rows() as u64;
                    if self.decoded > end {
                        return Err(short(self.decoded));
                    }
                    self.batch = Some(b);
                    return Ok(());
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    return Err(Error::format(
                        &self.files[self.file].path,
                        format!("cannot decode the rows after row {}: {e}", self.pos),
                    ))
                }
                None => {
                    if self.decoded != end {
                        return Err(short(self.decoded));
                    }
                    self.batches = None;
                    self.file += 1;
                }
            }
        }
    }

    /// Continue from global row `row` (clamped to the end): files and row groups before it are
    /// not read.
    fn seek(&mut self, row: u64) {
        let row = row.min(self.rows);
        self.batch = None;
        self.batches = None;
        self.at = 0;
        self.pos = row;
        self.file = self
            .files
            .iter()
            .position(|f| row < f.start + f.rows)
            .unwrap_or(self.files.len());
        self.from = self.files.get(self.file).map_or(0, |f| row - f.start);
    }

    /// The file that holds global row `row`.
    fn file_of(&self, row: u64) -> Option<&FilePart> {
        self.files
            .iter()
            .find(|f| row < f.start + f.rows)
            .or(self.files.last())
    }

    /// Where global row `row` is, for messages: the input, and for a directory the file too.
    fn place(&self, row: u64, msg: String) -> (PathBuf, String) {
        match self.file_of(row) {
            Some(f) if self.files.len() > 1 => (
                self.input.clone(),
                format!(
                    "{msg} (in {}, its row {})",
                    f.path.file_name().map_or_else(
                        || f.path.display().to_string(),
                        |n| n.to_string_lossy().into_owned()
                    ),
                    row - f.start
                ),
            ),
            _ => (self.input.clone(), msg),
        }
    }

    fn row_error(&self, row: u64, msg: String) -> Error {
        let (path, msg) = self.place(row, msg);
        Error::Row { path, row, msg }
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
            .ok_or_else(|| Error::format(&self.input, "the vector column vanished"))?;
        self.vectors_of(col, at, take, values)?;
        if let Some(name) = &self.label {
            let c = batch
                .column_by_name(name)
                .ok_or_else(|| Error::format(&self.input, "the label column vanished"))?;
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
                .ok_or_else(|| Error::format(&self.input, "the id column vanished"))?;
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
                    &self.input,
                    format!("{what} is {}, not a list", describe(t)),
                ))
            }
        };
        let before = values.len();
        let sliced = child.slice(start, take * d);
        if sliced.null_count() > 0 {
            let j = (0..take * d).find(|&j| sliced.is_null(j)).unwrap_or(0);
            let row = self.pos + (j / d) as u64;
            let (path, msg) = self.place(row, format!("null value in {what}"));
            return Err(Error::Value {
                path,
                row,
                col: (j % d) as u64,
                msg,
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
                    &self.input,
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
                    &self.input,
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
    fn format(&self) -> String {
        "parquet".into()
    }
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
    fn skip_rows(&mut self, n: u64) -> Result<u64> {
        let before = self.pos;
        let target = before.saturating_add(n).min(self.rows);
        let left_in_batch = self
            .batch
            .as_ref()
            .map_or(0, |b| (b.num_rows() - self.at) as u64);
        if target - before < left_in_batch {
            self.at += (target - before) as usize;
            self.pos = target;
        } else {
            self.seek(target);
        }
        Ok(target - before)
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
