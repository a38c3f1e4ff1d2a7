//! The MNIST IDX reader on arbitrary bytes, with or without a label file: byte 0 picks the chunk
//! size; bytes 1–2 (little-endian u16) are the length L of a label file, 0 for none; then L bytes
//! of label file (fewer if the input ends) and the rest is the image file.
#![no_main]

use dprp::data::{Format, InputOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [chunk, l0, l1, rest @ ..] = data else {
        return;
    };
    let label_len = (u16::from_le_bytes([*l0, *l1]) as usize).min(rest.len());
    let (labels, images) = rest.split_at(label_len);
    let labels = (label_len > 0).then(|| dprp_fuzz::write("labels.idx1-ubyte", labels));
    let opts = InputOptions {
        format: Some(Format::Idx),
        labels,
        ..Default::default()
    };
    dprp_fuzz::read_all(
        "images.idx3-ubyte",
        images,
        &opts,
        dprp_fuzz::chunk_rows(*chunk),
    );
});
