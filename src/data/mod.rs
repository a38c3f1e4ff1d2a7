//! Data in and out: the supported input formats, the native `dataset.bin` format, validation of
//! the privacy domain and explicit scaling.
//!
//! Every reader is *streaming*: it implements [`RowReader`] and hands out rows in chunks, so that
//! `publish` can process datasets far larger than memory. [`read_all`] collects a whole file when
//! that is what the caller wants (e.g. `convert` with `--scale max-abs`, evaluation).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub mod csv;
pub mod domain;
pub mod idx;
pub mod libsvm;
pub mod native;
pub mod npy;
pub mod parquet;
pub mod sample;
pub mod scale;
pub mod source;
pub mod synthetic;
pub mod vecs;

pub use scale::{Scaling, ScalingStep};

/// A dense dataset held in memory: `n` rows of `p` features, row-major, with optional labels.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// Number of rows.
    pub n: usize,
    /// Number of features per row.
    pub p: usize,
    /// Row-major values, `n * p` of them.
    pub values: Vec<f32>,
    /// One label per row, if the input had labels.
    pub labels: Option<Vec<f32>>,
    /// Preprocessing already applied to these values (recorded in releases).
    pub scaling: Scaling,
}

impl Dataset {
    /// Row `i` as a slice.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.values[i * self.p..(i + 1) * self.p]
    }
}

/// The input formats dprp reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// dprp's own `dataset.bin` (see [`native`]).
    Native,
    /// NumPy `.npy` (2-D, f32/f64/u8, C or Fortran order).
    Npy,
    /// `.fvecs`: per row a little-endian i32 dimension then that many f32.
    Fvecs,
    /// `.bvecs`: per row a little-endian i32 dimension then that many u8.
    Bvecs,
    /// LIBSVM / svmlight text, optionally gzip-compressed.
    Svm,
    /// MNIST IDX (u8 images, `0x00000803`), optionally gzip-compressed.
    Idx,
    /// Comma-separated numbers, one row per line.
    Csv,
    /// Apache Parquet: one vector per row in a list column (see [`parquet`]).
    Parquet,
}

impl Format {
    /// Guess the format from the file name (after stripping a `.gz` suffix).
    pub fn from_path(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
        let name = name.strip_suffix(".gz").unwrap_or(&name);
        let ext = name.rsplit('.').next().unwrap_or("");
        Some(match ext {
            "bin" => Format::Native,
            "npy" => Format::Npy,
            "fvecs" => Format::Fvecs,
            "bvecs" => Format::Bvecs,
            "svm" | "svmlight" | "libsvm" | "t" | "trn" | "tst" => Format::Svm,
            "csv" => Format::Csv,
            "parquet" | "parq" | "pq" => Format::Parquet,
            _ if name.contains("idx1-ubyte") || name.contains("idx3-ubyte") => Format::Idx,
            "idx" | "idx3" | "ubyte" => Format::Idx,
            _ => return None,
        })
    }

    /// The format's name as `--format` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Native => "native",
            Format::Npy => "npy",
            Format::Fvecs => "fvecs",
            Format::Bvecs => "bvecs",
            Format::Svm => "svm",
            Format::Idx => "idx",
            Format::Csv => "csv",
            Format::Parquet => "parquet",
        }
    }

    /// Parse a format name as given to `--format`.
    pub fn parse(s: &str) -> Result<Format> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "native" | "bin" | "dataset" => Format::Native,
            "npy" => Format::Npy,
            "fvecs" => Format::Fvecs,
            "bvecs" => Format::Bvecs,
            "svm" | "libsvm" | "svmlight" => Format::Svm,
            "idx" | "mnist" => Format::Idx,
            "csv" => Format::Csv,
            "parquet" | "pq" => Format::Parquet,
            other => {
                return Err(Error::param(
                    "‹format›",
                    format!(
                        "unknown format '{other}' (expected native, npy, fvecs, bvecs, svm, idx, csv or parquet)"
                    ),
                ))
            }
        })
    }
}

/// How to read an input file.
#[derive(Debug, Clone, Default)]
pub struct InputOptions {
    /// Force a format instead of guessing it from the file name.
    pub format: Option<Format>,
    /// Number of features for LIBSVM input (otherwise the largest index seen, which needs a
    /// pre-scan of the file).
    pub dim: Option<usize>,
    /// A label file to pair with the input (MNIST IDX `idx1-ubyte` labels, `.gz` or raw).
    pub labels: Option<PathBuf>,
    /// CSV: the first line is a header to skip. `None` = detect (skip if it is not numeric).
    pub csv_header: Option<bool>,
    /// CSV: zero-based column holding the label (removed from the features).
    pub csv_label_column: Option<usize>,
    /// Parquet: the vector, label and id columns, by name.
    pub columns: parquet::Columns,
}

/// A streaming source of rows.
pub trait RowReader: Send {
    /// The input format, as recorded in a release (`npy <f8`, `csv`, `parquet`, …). Required,
    /// not defaulted: a wrapper forwards its inner reader's (advisories name affected formats).
    fn format(&self) -> String;
    /// Number of features per row.
    fn dim(&self) -> usize;
    /// Number of rows, when the format says it up front.
    fn rows_hint(&self) -> Option<u64>;
    /// Whether rows carry labels.
    fn has_labels(&self) -> bool;
    /// Preprocessing already applied to the values (native files record it).
    fn scaling(&self) -> Scaling {
        Scaling::default()
    }
    /// Append up to `max_rows` rows to `values` (row-major, `dim()` each) and, when
    /// [`has_labels`](RowReader::has_labels), one label per row to `labels`. Returns the number of
    /// rows appended; 0 means the end of the input.
    fn read_chunk(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f32>,
        labels: &mut Vec<f32>,
    ) -> Result<usize>;
    /// Whether rows carry explicit ids (a Parquet `--id-column`); otherwise row `i` of the input
    /// has id `i`. Required, not defaulted: a reader that wraps another must forward it (and
    /// [`read_rows`](RowReader::read_rows)), or the ids of the reader inside would be dropped
    /// silently; the publishing pipeline checks one id per row whenever this says there are ids.
    fn has_ids(&self) -> bool;
    /// [`read_chunk`](RowReader::read_chunk) that also appends one id per row to `ids` when
    /// [`has_ids`](RowReader::has_ids).
    fn read_rows(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f32>,
        labels: &mut Vec<f32>,
        _ids: &mut Vec<u64>,
    ) -> Result<usize> {
        self.read_chunk(max_rows, values, labels)
    }
    /// Skip the next `n` rows (fewer at the end of the input); returns how many were skipped.
    /// By default they are read and dropped; a reader that can seek (Parquet: by row group)
    /// does better.
    fn skip_rows(&mut self, n: u64) -> Result<u64> {
        let (mut v, mut l) = (Vec::new(), Vec::new());
        let mut done = 0u64;
        while done < n {
            v.clear();
            l.clear();
            let want = (n - done).min(4096) as usize;
            let got = self.read_chunk(want, &mut v, &mut l)?;
            if got == 0 {
                break;
            }
            done += got as u64;
        }
        Ok(done)
    }
}

/// Open `path` as a streaming row reader, guessing its format from the name unless
/// `opts.format` says otherwise.
pub fn open_reader(path: &Path, opts: &InputOptions) -> Result<Box<dyn RowReader>> {
    if path.is_dir() && matches!(opts.format, None | Some(Format::Parquet)) {
        // a directory of Parquet files (a Spark, DuckDB or pyarrow dataset)
        return Ok(Box::new(parquet::ParquetReader::open(path, &opts.columns)?));
    }
    crate::atomic::check_input_file(path)?;
    let format = match opts.format {
        Some(f) => f,
        None => Format::from_path(path).ok_or_else(|| {
            Error::format(
                path,
                "unknown input format: expected a name ending in .bin, .npy, .fvecs, .bvecs, \
                 .svm, .csv, .parquet or an MNIST idx*-ubyte file (optionally .gz), or pass ‹format›",
            )
        })?,
    };
    if opts.labels.is_some() && format != Format::Idx {
        return Err(Error::param(
            "‹labels›",
            "a separate label file is only used with MNIST IDX input",
        ));
    }
    if opts.dim.is_some() && format != Format::Svm {
        return Err(Error::param(
            "‹dim›",
            "the dimension can only be set for LIBSVM/svmlight input",
        ));
    }
    let cols = &opts.columns;
    if format != Format::Parquet {
        if cols.vectors.is_some() || cols.id.is_some() {
            let flag = if cols.vectors.is_some() {
                "‹column›"
            } else {
                "‹id_column›"
            };
            return Err(Error::param(
                flag,
                "columns are named only in Parquet input",
            ));
        }
        if cols.label.is_some() && format != Format::Csv {
            return Err(Error::param(
                "‹label_column›",
                "a label column is read only from CSV (a column number) and Parquet (a column \
                 name) input",
            ));
        }
    }
    if format == Format::Csv {
        if let (Some(l), None) = (&cols.label, opts.csv_label_column) {
            return Err(Error::param(
                "‹label_column›",
                format!("'{l}': for CSV input the label column is a number, counted from 0"),
            ));
        }
    }
    Ok(match format {
        Format::Parquet => Box::new(parquet::ParquetReader::open(path, cols)?),
        Format::Native => Box::new(native::NativeReader::open(path)?),
        Format::Npy => Box::new(npy::NpyReader::open(path)?),
        Format::Fvecs => Box::new(vecs::VecsReader::open(path, vecs::Kind::F32)?),
        Format::Bvecs => Box::new(vecs::VecsReader::open(path, vecs::Kind::U8)?),
        Format::Svm => Box::new(libsvm::SvmReader::open(path, opts.dim)?),
        Format::Idx => Box::new(idx::IdxReader::open(path, opts.labels.as_deref())?),
        Format::Csv => Box::new(csv::CsvReader::open(
            path,
            opts.csv_header,
            opts.csv_label_column,
        )?),
    })
}

/// Read a whole input file into memory.
pub fn read_all(path: &Path, opts: &InputOptions) -> Result<Dataset> {
    let mut reader = open_reader(path, opts)?;
    collect(reader.as_mut())
}

/// Drain a reader into a [`Dataset`].
pub fn collect(reader: &mut dyn RowReader) -> Result<Dataset> {
    let p = reader.dim();
    let mut values = Vec::new();
    let mut labels = Vec::new();
    if let Some(n) = reader.rows_hint() {
        // A hint is only a hint: never let a header's claim abort the process.
        let _ = values.try_reserve((n as usize).saturating_mul(p));
    }
    let mut n = 0usize;
    loop {
        let got = reader.read_chunk(8192, &mut values, &mut labels)?;
        if got == 0 {
            break;
        }
        n += got;
    }
    let labels = if reader.has_labels() {
        Some(labels)
    } else {
        None
    };
    Ok(Dataset {
        n,
        p,
        values,
        labels,
        scaling: reader.scaling(),
    })
}

/// An in-memory dataset as a [`RowReader`] (used by evaluation and tests).
pub struct MemReader<'a> {
    data: &'a Dataset,
    pos: usize,
}

impl<'a> MemReader<'a> {
    /// Stream the rows of `data`.
    pub fn new(data: &'a Dataset) -> Self {
        MemReader { data, pos: 0 }
    }
}

impl RowReader for MemReader<'_> {
    fn has_ids(&self) -> bool {
        false // row i has id i
    }
    fn format(&self) -> String {
        "memory".into()
    }
    fn dim(&self) -> usize {
        self.data.p
    }
    fn rows_hint(&self) -> Option<u64> {
        Some(self.data.n as u64)
    }
    fn has_labels(&self) -> bool {
        self.data.labels.is_some()
    }
    fn scaling(&self) -> Scaling {
        self.data.scaling.clone()
    }
    fn read_chunk(
        &mut self,
        max_rows: usize,
        values: &mut Vec<f32>,
        labels: &mut Vec<f32>,
    ) -> Result<usize> {
        let take = max_rows.min(self.data.n - self.pos);
        let p = self.data.p;
        values.extend_from_slice(&self.data.values[self.pos * p..(self.pos + take) * p]);
        if let Some(l) = &self.data.labels {
            labels.extend_from_slice(&l[self.pos..self.pos + take]);
        }
        self.pos += take;
        Ok(take)
    }
}

/// `n` bytes as whole MiB for messages (`64 MiB`), or bytes below one MiB.
pub fn human_mib(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{} MiB", n >> 20)
    } else {
        format!("{n} bytes")
    }
}
