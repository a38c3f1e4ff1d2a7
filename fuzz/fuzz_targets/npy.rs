//! The npy reader on arbitrary bytes: byte 0 picks the chunk size, the rest is the file.
#![no_main]

use dprp::data::{Format, InputOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, file)) = data.split_first() else {
        return;
    };
    let opts = InputOptions {
        format: Some(Format::Npy),
        ..Default::default()
    };
    dprp_fuzz::read_all("input.npy", file, &opts, dprp_fuzz::chunk_rows(chunk));
});
