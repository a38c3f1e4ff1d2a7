//! The LIBSVM reader on arbitrary bytes: byte 0 picks the chunk size, byte 1 the dimension
//! (0 = inferred by the pre-scan, otherwise `--dim` = that value), the rest is the file.
#![no_main]

use dprp::data::{Format, InputOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [chunk, dim, file @ ..] = data else {
        return;
    };
    let opts = InputOptions {
        format: Some(Format::Svm),
        dim: (*dim != 0).then_some(*dim as usize),
        ..Default::default()
    };
    dprp_fuzz::read_all("input.svm", file, &opts, dprp_fuzz::chunk_rows(*chunk));
});
