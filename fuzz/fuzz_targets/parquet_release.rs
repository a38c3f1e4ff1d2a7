//! The Parquet release reader on arbitrary bytes (`Release::open` of a file that starts with
//! `PAR1`): the columns and the key-value metadata are decoded into the native image, which is
//! then validated as a native release. The checksum is not verified (random bytes never match
//! it; the mismatch path is covered by `tests/cli_parquet.rs`), so that the fuzzer reaches the
//! decoding and the checks after it. An opened release is read as `query` reads one.
#![no_main]

use dprp::mechanism::Payload;
use dprp::release::Release;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = dprp_fuzz::write("input.parquet", data);
    let Ok(r) = Release::open_with(&path, false) else {
        return;
    };
    let n = r.n();
    match r.meta().payload {
        Payload::F32 => {
            let v = r.values().expect("values of an f32 release");
            assert_eq!(v.len(), n * r.k());
        }
        Payload::Bits => {
            let b = r.bits().expect("bits of a sign release");
            assert_eq!(b.len(), n * r.k().div_ceil(64));
        }
    }
    for i in 0..n {
        let _ = r.id(i);
    }
    if let Some(l) = r.labels() {
        assert_eq!(l.len(), n);
    }
    let _ = r.verify();
});
