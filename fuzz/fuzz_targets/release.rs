//! The release reader on arbitrary bytes. A release carries a BLAKE3 checksum of itself, which
//! random bytes never match; so that the fuzzer gets past it to the header checks and the
//! metadata, the target writes the right checksum into bytes 80..112 of every input of at least
//! the header's 128 bytes (the mismatch path is covered by the unit tests). An opened release is
//! then read as `query`/`estimate` read one: every row, id and label. (Rebuilding the mechanism
//! from the metadata, `mechanism::from_record`, is not fuzzed here: it regenerates the public
//! map at the p and k the metadata states, see `fuzz/README.md`.)
#![no_main]

use dprp::release::{Release, HASHED_HEADER, HEADER_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.to_vec();
    if bytes.len() >= HEADER_LEN {
        let mut h = blake3::Hasher::new();
        h.update(&bytes[HEADER_LEN..]);
        h.update(&bytes[..HASHED_HEADER]);
        bytes[80..112].copy_from_slice(h.finalize().as_bytes());
    }
    let path = dprp_fuzz::write("input.dprp", &bytes);
    let Ok(r) = Release::open(&path) else {
        return;
    };
    dprp_fuzz::read_release(&r);
});
