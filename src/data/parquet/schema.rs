//! The columns of a Parquet input: the files of a dataset directory, and each file's footer
//! resolved against the columns asked for (names, types, row groups), checked to agree across
//! files.

use std::path::{Path, PathBuf};

use arrow_schema::{DataType, Field};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::{check_pages, guarded, reader_options, Columns, StrictFile};
use crate::error::{Error, Result};

/// One Parquet file of the input.
pub(super) struct FilePart {
    pub(super) path: PathBuf,
    /// Rows in each row group.
    pub(super) groups: Vec<u64>,
    pub(super) rows: u64,
    /// Global id of the file's first row.
    pub(super) start: u64,
    /// The projected root columns (vectors, then label and id when asked for).
    pub(super) roots: Vec<usize>,
    /// Rows per decoded batch: [`super::BATCH_ROWS`], fewer when the file's rows are wide
    /// ([`batch_rows`]).
    pub(super) batch_rows: usize,
}

/// The columns of the input, resolved by the first file: names and types.
#[derive(Clone)]
pub(super) struct Resolved {
    pub(super) vectors: String,
    pub(super) label: Option<String>,
    pub(super) id: Option<String>,
    pub(super) types: Vec<DataType>,
}

pub(super) fn is_number(t: &DataType) -> bool {
    t.is_integer() || t.is_floating()
}

pub(super) fn describe(t: &DataType) -> String {
    match t {
        DataType::FixedSizeList(f, d) => format!("fixed_size_list<{}, {d}>", f.data_type()),
        DataType::List(f) => format!("list<{}>", f.data_type()),
        DataType::LargeList(f) => format!("large_list<{}>", f.data_type()),
        other => other.to_string(),
    }
}

/// The element field of a list type.
pub(super) fn list_item(t: &DataType) -> Option<&Field> {
    match t {
        DataType::FixedSizeList(f, _) | DataType::List(f) | DataType::LargeList(f) => Some(f),
        _ => None,
    }
}

/// The Parquet files of a directory: `*.parquet` (not hidden, not `_`-prefixed), sorted by name.
pub(super) fn dataset_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().to_ascii_lowercase();
            name.ends_with(".parquet") && !name.starts_with(['.', '_'])
        })
        .map(|e| e.path())
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::format(
            dir,
            "a directory without Parquet files (*.parquet): nothing to read",
        ));
    }
    Ok(files)
}

/// Open one file's footer and resolve the columns in it (`want`: the first file's, to compare).
pub(super) fn inspect(
    path: &Path,
    cols: &Columns,
    want: Option<&Resolved>,
) -> Result<(FilePart, Resolved)> {
    guarded(path, || inspect_unguarded(path, cols, want))
}

pub(super) fn inspect_unguarded(
    path: &Path,
    cols: &Columns,
    want: Option<&Resolved>,
) -> Result<(FilePart, Resolved)> {
    let fail = |m: String| Error::format(path, m);
    let file = StrictFile::open(path)?;
    let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(file, reader_options())
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
    let vectors = vector_column(&schema, cols, want, &listing, &fail)?;
    let vi = find("‹column›", &vectors)?;
    let vtype = schema.field(vi).data_type();
    check_vector_type(vtype, &vectors, &fail)?;
    let mut roots = vec![vi];
    let mut types = vec![vtype.clone()];
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
        types.push(t.clone());
        Ok(Some(name.clone()))
    };
    let label = scalar("‹label_column›", &cols.label, is_number, "a number")?;
    let id = scalar("‹id_column›", &cols.id, DataType::is_integer, "an integer")?;
    if let (Some(l), Some(i)) = (&label, &id) {
        if l == i {
            return Err(Error::param(
                "‹id_column›",
                format!("'{i}' is also the label column"),
            ));
        }
    }
    let resolved = Resolved {
        vectors,
        label,
        id,
        types,
    };
    if let Some(w) = want {
        if w.types != resolved.types {
            let show = |t: &[DataType]| t.iter().map(describe).collect::<Vec<_>>().join(", ");
            return Err(fail(format!(
                "the columns are {} here but {} in the dataset's first file: every file of a \
                 directory must have the same columns",
                show(&resolved.types),
                show(&w.types)
            )));
        }
    }
    let md = builder.metadata();
    let (groups, rows) = row_groups(md, &fail)?;
    let schema_descr = builder.parquet_schema();
    let leaves: Vec<usize> = (0..schema_descr.num_columns())
        .filter(|&i| roots.contains(&schema_descr.get_column_root_idx(i)))
        .collect();
    check_pages(path, md, &leaves)?;
    let part = FilePart {
        path: path.to_path_buf(),
        batch_rows: batch_rows(md, &leaves),
        groups,
        rows,
        start: 0,
        roots,
    };
    Ok((part, resolved))
}

/// The name of the vector column: the dataset's (a later file of a directory), the one given
/// with `--column`, or the file's only list column.
fn vector_column(
    schema: &arrow_schema::Schema,
    cols: &Columns,
    want: Option<&Resolved>,
    listing: &str,
    fail: &dyn Fn(String) -> Error,
) -> Result<String> {
    Ok(match (&cols.vectors, want) {
        (_, Some(w)) => w.vectors.clone(),
        (Some(name), None) => name.clone(),
        (None, None) => {
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
                        "{} list columns ({}): say which holds the vectors with ‹column›",
                        many.len(),
                        many.join(", ")
                    )))
                }
            }
        }
    })
}

/// The vector column holds lists of numbers.
fn check_vector_type(
    vtype: &DataType,
    vectors: &str,
    fail: &dyn Fn(String) -> Error,
) -> Result<()> {
    match list_item(vtype) {
        Some(item) if is_number(item.data_type()) => Ok(()),
        Some(item) => Err(fail(format!(
            "column '{vectors}' is a list of {}, not of numbers",
            item.data_type()
        ))),
        None => Err(fail(format!(
            "column '{vectors}' is {}, not a list of numbers (dprp reads one vector per \
             row from a fixed_size_list or list column; name it with ‹column›)",
            describe(vtype)
        ))),
    }
}

/// The rows of each row group and their total, which must be the footer's.
/// Rows per decoded batch, so that a batch of the widest row group's rows takes about
/// [`super::BATCH_BYTES`] at most (the uncompressed bytes of the projected columns per row, which
/// the footer states and [`check_pages`] bounds), between 1 and [`super::BATCH_ROWS`]: wide
/// vectors are decoded a few rows at a time, not 8192 rows of them.
fn batch_rows(md: &parquet::file::metadata::ParquetMetaData, leaves: &[usize]) -> usize {
    let widest = md
        .row_groups()
        .iter()
        .filter(|g| g.num_rows() > 0)
        .map(|g| {
            let bytes: u64 = leaves
                .iter()
                .filter(|&&c| c < g.num_columns())
                .map(|&c| u64::try_from(g.column(c).uncompressed_size()).unwrap_or(0))
                .fold(0u64, u64::saturating_add);
            bytes.div_ceil(g.num_rows() as u64)
        })
        .max()
        .unwrap_or(0)
        .max(1);
    usize::try_from(super::BATCH_BYTES as u64 / widest)
        .unwrap_or(usize::MAX)
        .clamp(1, super::BATCH_ROWS)
}

fn row_groups(
    md: &parquet::file::metadata::ParquetMetaData,
    fail: &dyn Fn(String) -> Error,
) -> Result<(Vec<u64>, u64)> {
    // The rows are those of the row groups (what the reader yields, or fails on); the footer's
    // total must agree with them.
    let groups = md
        .row_groups()
        .iter()
        .map(|g| u64::try_from(g.num_rows()).ok())
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| fail("a row group of the footer has a negative row count".into()))?;
    let rows = groups
        .iter()
        .try_fold(0u64, |acc, &r| acc.checked_add(r))
        .ok_or_else(|| fail("the row groups hold more than 2^64 rows".into()))?;
    if u64::try_from(md.file_metadata().num_rows()).ok() != Some(rows) {
        return Err(fail(format!(
            "the footer says {} rows but its row groups hold {rows}",
            md.file_metadata().num_rows()
        )));
    }
    Ok((groups, rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, FixedSizeListArray, Float32Array, RecordBatch};
    use std::sync::Arc;

    /// Rows of `p` float32 values, `n` of them in one row group, as a Parquet file in memory.
    fn file(n: usize, p: usize) -> bytes::Bytes {
        let values = Float32Array::from((0..n * p).map(|i| i as f32).collect::<Vec<_>>());
        let item = Arc::new(arrow_schema::Field::new("item", DataType::Float32, false));
        let list = FixedSizeListArray::new(item, p as i32, Arc::new(values), None);
        let batch = RecordBatch::try_from_iter([("v", Arc::new(list) as ArrayRef)]).unwrap();
        let mut out = Vec::new();
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        out.into()
    }

    /// Narrow rows are decoded 8192 at a time; wide ones in batches of about 64 MiB: 32 768
    /// values per row (128 KiB) → 512 rows; 625 000 values (2.4 MiB) → the file's own figure.
    #[test]
    fn wide_rows_are_decoded_a_few_at_a_time() {
        for (n, p, want) in [(10_000, 4, super::super::BATCH_ROWS), (600, 32_768, 512)] {
            let b = ParquetRecordBatchReaderBuilder::try_new(file(n, p)).unwrap();
            let got = batch_rows(b.metadata(), &[0]);
            // the file's own bytes per row include a little page overhead: within 1%
            assert!(
                got <= want && got * 101 >= want * 100,
                "p {p}: {got} vs {want}"
            );
        }
        let b = ParquetRecordBatchReaderBuilder::try_new(file(2, 625_000)).unwrap();
        let md = b.metadata();
        let bytes_per_row = md.row_group(0).column(0).uncompressed_size() as usize / 2;
        assert_eq!(
            batch_rows(md, &[0]),
            (super::super::BATCH_BYTES / bytes_per_row).clamp(1, super::super::BATCH_ROWS)
        );
    }
}
