//! The Parquet input reader on arbitrary bytes: byte 0 picks the chunk size and which of the
//! columns `v` (vectors), `l` (labels) and `i` (ids) are asked for by name (or the vector column
//! left to detection); the rest is the file. Every row is read with its labels and ids.
#![no_main]

use dprp::data::parquet::Columns;
use dprp::data::{Format, InputOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, file)) = data.split_first() else {
        return;
    };
    let opts = InputOptions {
        format: Some(Format::Parquet),
        columns: Columns {
            vectors: (sel & 0x10 != 0).then(|| "v".to_string()),
            label: (sel & 0x20 != 0).then(|| "l".to_string()),
            id: (sel & 0x40 != 0).then(|| "i".to_string()),
        },
        ..Default::default()
    };
    let path = dprp_fuzz::write("input.parquet", file);
    if let Ok(mut r) = dprp::data::open_reader(&path, &opts) {
        let _ = dprp_fuzz::drain_with_ids(r.as_mut(), dprp_fuzz::chunk_rows(sel & 0x0f));
    }
});
