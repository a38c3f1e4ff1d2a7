//! `dprp convert`: vectors in any supported input format, scaled as asked, written as a native
//! dataset — with a first pass over the data when the scaling needs column statistics.

use std::path::{Path, PathBuf};

use crate::data::native::NativeWriter;
use crate::data::scale::{check_finite, column_max_abs, Scaler, ScalingRequest};
use crate::data::{open_reader, InputOptions, RowReader, Scaling};
use crate::error::{Error, Result};

/// Rows read per chunk.
const CHUNK: usize = 8192;

/// An input opened for conversion, with the scaling asked for and the output.
pub struct Conversion {
    input: PathBuf,
    opts: InputOptions,
    request: ScalingRequest,
    output: PathBuf,
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
    /// Open `input` to be converted into `output` (refused when `output` is the input).
    pub fn open(
        input: &Path,
        opts: InputOptions,
        request: ScalingRequest,
        output: &Path,
    ) -> Result<Conversion> {
        crate::atomic::check_not_input(input, output)?;
        let reader = open_reader(input, &opts)?;
        Ok(Conversion {
            input: input.to_path_buf(),
            opts,
            request,
            output: output.to_path_buf(),
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
            let got = self.reader.read_chunk(CHUNK, &mut v, &mut l)?;
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
        let mut w = NativeWriter::create(&self.output, p, reader.has_labels(), &scaling)?;
        let (mut v, mut l) = (Vec::new(), Vec::new());
        let mut row0 = 0u64;
        loop {
            v.clear();
            l.clear();
            let got = reader.read_chunk(CHUNK, &mut v, &mut l)?;
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
