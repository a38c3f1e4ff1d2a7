use std::path::PathBuf;

use clap::Args;

use super::{InputArgs, ScaleArgs};
use crate::data::native::NativeWriter;
use crate::data::open_reader;
use crate::data::scale::{check_finite, column_max_abs, Scaler};
use crate::error::Result;

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Input file.
    input: PathBuf,
    /// Output dataset (.bin).
    #[arg(short, long)]
    output: PathBuf,
    #[command(flatten)]
    input_args: InputArgs,
    #[command(flatten)]
    scale: ScaleArgs,
}

pub fn run(a: ConvertArgs) -> Result<()> {
    let opts = a.input_args.options()?;
    let req = a.scale.request()?;
    crate::atomic::check_not_input(&a.input, &a.output)?;
    let mut reader = open_reader(&a.input, &opts)?;
    let p = reader.dim();
    let col = if req.needs_column_stats() {
        super::output::note(format_args!(
            "warning: --scale max-abs derives per-column factors from the data; they are not \
             covered by any privacy guarantee of later releases"
        ));
        let mut acc = vec![0f32; p];
        let (mut v, mut l) = (Vec::new(), Vec::new());
        let mut row0 = 0u64;
        loop {
            v.clear();
            l.clear();
            let got = reader.read_chunk(8192, &mut v, &mut l)?;
            if got == 0 {
                break;
            }
            check_finite(&v, p, row0, &a.input)?;
            column_max_abs(&v, p, &mut acc);
            row0 += got as u64;
        }
        reader = open_reader(&a.input, &opts)?;
        Some(acc)
    } else {
        None
    };
    let scaler = Scaler::new(&req, col.as_deref())?;
    let mut scaling = reader.scaling();
    scaling.0.extend(scaler.steps.iter().cloned());
    let mut w = NativeWriter::create(&a.output, p, reader.has_labels(), &scaling)?;
    let (mut v, mut l) = (Vec::new(), Vec::new());
    let mut row0 = 0u64;
    loop {
        v.clear();
        l.clear();
        let got = reader.read_chunk(8192, &mut v, &mut l)?;
        if got == 0 {
            break;
        }
        check_finite(&v, p, row0, &a.input)?;
        scaler.apply(&mut v, p);
        w.write_rows(&v, &l)?;
        row0 += got as u64;
    }
    if row0 == 0 {
        return Err(crate::error::Error::format(
            &a.input,
            "the input has no rows",
        ));
    }
    let n = w.finish()?;
    outln!(
        "wrote {}: {n} rows × {p} features{}; scaling: {}",
        a.output.display(),
        if reader.has_labels() {
            " with labels"
        } else {
            ""
        },
        scaling.describe()
    )?;
    Ok(())
}
