//! The CSV reader on arbitrary bytes: byte 0 picks the chunk size, byte 1 the header option
//! (detect / skip / never, by its value mod 3), byte 2 the label column (none when ≥ 8), the
//! rest is the file.
#![no_main]

use dprp::data::{Format, InputOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [chunk, header, label, file @ ..] = data else {
        return;
    };
    let opts = InputOptions {
        format: Some(Format::Csv),
        csv_header: [None, Some(true), Some(false)][*header as usize % 3],
        csv_label_column: (*label < 8).then_some(*label as usize),
        ..Default::default()
    };
    dprp_fuzz::read_all("input.csv", file, &opts, dprp_fuzz::chunk_rows(*chunk));
});
