//! The Parquet release reader on arbitrary bytes (`Release::open` of a file that starts with
//! `PAR1`): the columns and the key-value metadata are decoded into the native image, which is
//! then validated as a native release. The checksum is not verified (random bytes never match
//! it; the mismatch path is covered by `tests/cli_parquet.rs`), so that the fuzzer reaches the
//! decoding and the checks after it. An opened release is read as `query` reads one.
#![no_main]

use dprp::release::Release;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = dprp_fuzz::write("input.parquet", data);
    let Ok(r) = Release::open_with(&path, false) else {
        return;
    };
    dprp_fuzz::read_release(&r);
    let _ = r.verify();
});
