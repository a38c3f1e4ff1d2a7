//! `dprp convert`: vectors in any supported input format, scaled as asked, written as a native
//! dataset — with a first pass over the data when the scaling needs column statistics.

use std::path::{Path, PathBuf};

use crate::atomic::Existing;
use crate::data::native::NativeWriter;
use crate::data::scale::{check_finite, column_max_abs, Scaler, ScalingRequest};
use crate::data::{open_reader, InputOptions, RowReader, Scaling};
use crate::error::{Error, Result};

/// Most rows read per chunk.
const CHUNK: usize = 8192;

/// About the most bytes of rows read per chunk: wide rows are read a few at a time.
const CHUNK_BYTES: usize = 64 << 20;

/// Rows per chunk for rows of `p` values.
fn chunk_rows(p: usize) -> usize {
    (CHUNK_BYTES / p.saturating_mul(4).max(1)).clamp(1, CHUNK)
}

/// An input opened for conversion, with the scaling asked for and the output.
pub struct Conversion {
    input: PathBuf,
    opts: InputOptions,
    request: ScalingRequest,
    output: PathBuf,
    existing: Existing,
    reader: Box<dyn RowReader>,
}

/// What a conversion wrote.
#[derive(Debug)]
pub struct Converted {
    output: PathBuf,
    n: u64,
    p: usize,
    labels: bool,
    scaling: Scaling,
}

impl Conversion {
    /// Open `input` to be converted into `output`, a native dataset: refused when `output` is
    /// the input, when its name says another format (`.npy`, `.csv`, `.gz`, a `.dprp`
    /// release, …: the file would be misread by every tool that trusts the name), and when it
    /// exists and `existing` does not allow replacing it.
    pub fn open(
        input: &Path,
        opts: InputOptions,
        request: ScalingRequest,
        (output, existing): (&Path, Existing),
    ) -> Result<Conversion> {
        crate::atomic::check_not_input(input, output)?;
        check_native_name(output)?;
        crate::atomic::check_file_output(output, existing)?;
        let reader = open_reader(input, &opts)?;
        Ok(Conversion {
            input: input.to_path_buf(),
            opts,
            request,
            output: output.to_path_buf(),
            existing,
            reader,
        })
    }

    /// Whether the scaling is derived from the data (`--scale max-abs`): a first pass reads
    /// every column's largest magnitude, which no later release's guarantee covers.
    pub fn needs_column_stats(&self) -> bool {
        self.request.needs_column_stats()
    }

    /// Each column's largest magnitude, from a pass over the input (which is then reopened).
    fn column_stats(&mut self) -> Result<Vec<f32>> {
        let p = self.reader.dim();
        let mut acc = vec![0f32; p];
        let (mut v, mut l) = (Vec::new(), Vec::new());
        let mut row0 = 0u64;
        loop {
            v.clear();
            l.clear();
            let got = self.reader.read_chunk(chunk_rows(p), &mut v, &mut l)?;
            if got == 0 {
                break;
            }
            check_finite(&v, p, row0, &self.input)?;
            column_max_abs(&v, p, &mut acc);
            row0 += got as u64;
        }
        self.reader = open_reader(&self.input, &self.opts)?;
        Ok(acc)
    }

    /// Scale every row and write the dataset (refused when the input has no rows).
    pub fn write(mut self) -> Result<Converted> {
        let col = if self.needs_column_stats() {
            Some(self.column_stats()?)
        } else {
            None
        };
        let scaler = Scaler::new(&self.request, col.as_deref())?;
        let reader = &mut self.reader;
        let p = reader.dim();
        let mut scaling = reader.scaling();
        scaling.0.extend(scaler.steps.iter().cloned());
        let mut w = NativeWriter::create(
            &self.output,
            self.existing,
            p,
            reader.has_labels(),
            &scaling,
        )?;
        let (mut v, mut l) = (Vec::new(), Vec::new());
        let mut row0 = 0u64;
        loop {
            v.clear();
            l.clear();
            let got = reader.read_chunk(chunk_rows(p), &mut v, &mut l)?;
            if got == 0 {
                break;
            }
            check_finite(&v, p, row0, &self.input)?;
            scaler.apply(&mut v, p);
            w.write_rows(&v, &l)?;
            row0 += got as u64;
        }
        if row0 == 0 {
            return Err(Error::format(&self.input, "the input has no rows"));
        }
        Ok(Converted {
            n: w.finish()?,
            p,
            labels: reader.has_labels(),
            scaling,
            output: self.output,
        })
    }
}

/// Refuse an output name that says another format than the native dataset `convert` writes.
fn check_native_name(output: &Path) -> Result<()> {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let says = if name.ends_with(".gz") {
        Some("gzip")
    } else if name.ends_with(".dprp") {
        Some("a dprp release")
    } else {
        match crate::data::Format::from_path(output) {
            None | Some(crate::data::Format::Native) => None,
            Some(f) => Some(f.name()),
        }
    };
    match says {
        None => Ok(()),
        Some(what) => {
            Err(Error::param(
                "‹output›",
                format!(
                "{}: the name says {what}, but convert writes dprp's native dataset format; name \
                 it .bin (e.g. {}.bin)",
                output.display(),
                name.split('.').next().filter(|s| !s.is_empty()).unwrap_or("data")
            ),
            ))
        }
    }
}

impl Converted {
    /// `wrote x.bin: 40 rows × 24 features; scaling: …`.
    pub fn to_text(&self) -> String {
        format!(
            "wrote {}: {} rows × {} features{}; scaling: {}\n",
            self.output.display(),
            self.n,
            self.p,
            if self.labels { " with labels" } else { "" },
            self.scaling.describe()
        )
    }
}
