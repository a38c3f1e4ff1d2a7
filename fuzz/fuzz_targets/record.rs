//! Rebuilding a mechanism from a release's metadata (`mechanism::from_record`, what `query`,
//! `estimate`, `mean` and `demo` call after opening a release) on arbitrary JSON. The release
//! reader checks a checksum and the metadata's shape, but the numbers in it (p, k, seeds, radii,
//! calibration) are whatever the file says: a small crafted release must not make dprp allocate
//! more than its public-map limit, loop for long or panic. When the mechanism builds, one zero row
//! goes through its public map and its privatisation (seeded, not private), and its estimator is
//! asked for, the way the query commands use it.
#![no_main]

use dprp::mechanism::{self, Payload, SketchMut};
use dprp::privacy::noise::NoiseSource;
use dprp::release::ReleaseMeta;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(meta) = serde_json::from_slice::<ReleaseMeta>(data) else {
        return;
    };
    let Ok(m) = mechanism::from_record(&meta.mechanism, &meta.guarantee) else {
        return;
    };
    let (p, k) = (m.input_dim(), m.output_dim());
    // The public map was built within the limit; a row of it is p values.
    if p > 1 << 16 || k > 1 << 16 {
        return;
    }
    let row = vec![0f32; p];
    let mut proj = vec![0f32; k];
    let _ = m.project(&row, &mut proj);
    let mut rng = NoiseSource::from_seed("fuzz").row_rng(0);
    match m.payload() {
        Payload::F32 => {
            let mut out = vec![0f32; k];
            let _ = m.privatise(&row, 0, SketchMut::Real(&mut out), &mut rng);
        }
        Payload::Bits => {
            let mut out = vec![0u64; k.div_ceil(64)];
            let _ = m.privatise(&row, 0, SketchMut::Bits(&mut out), &mut rng);
        }
    }
    let _ = m.estimator();
});
