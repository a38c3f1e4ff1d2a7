//! The bundled sample (`data/sample.bin`): a small labelled dataset made by a documented, seeded
//! generator, so the demo and tests run on a fresh clone without downloading anything.
//!
//! Generator (version 1): ChaCha20 keyed with BLAKE3-derive-key("dprp sample v1", "") — i.e. a
//! fixed public key — stream 0. Ten class centroids in `[0,1]^64`: each coordinate is 0 with
//! probability ½ (image-like sparsity), otherwise uniform on `[0.3, 1]`, drawn once as a shared base
//! `b` and once per class `c` (in that order): centroid = `0.6·b + 0.4·c`. Then [`SAMPLE_ROWS`]
//! rows: the class is uniform on 0..9, and each coordinate is the centroid's plus `N(0, 0.25²)` noise
//! (Box–Muller, `libm`), clipped to `[0,1]` and rounded to f32. Every value lies in the privacy
//! domain, so the sample publishes as it is. `dprp sample -o data/sample.bin` rewrites it; a test
//! checks the committed file is byte-identical.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::{Dataset, Scaling};

/// Rows in the sample.
pub const SAMPLE_ROWS: usize = 2000;
/// Features per row.
pub const SAMPLE_DIM: usize = 64;
/// Classes.
pub const SAMPLE_CLASSES: usize = 10;

fn unit(rng: &mut ChaCha20Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

fn normal(rng: &mut ChaCha20Rng) -> f64 {
    let u1 = 1.0 - unit(rng);
    let u2 = unit(rng);
    libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(2.0 * std::f64::consts::PI * u2)
}

/// Generate the sample dataset.
pub fn generate() -> Dataset {
    let key = blake3::derive_key("dprp sample v1", b"");
    let mut rng = ChaCha20Rng::from_seed(key);
    let mut pattern = || {
        if unit(&mut rng) < 0.5 {
            0.0
        } else {
            0.3 + 0.7 * unit(&mut rng)
        }
    };
    let base: Vec<f64> = (0..SAMPLE_DIM).map(|_| pattern()).collect();
    let mut centroids = vec![0f64; SAMPLE_CLASSES * SAMPLE_DIM];
    for (i, c) in centroids.iter_mut().enumerate() {
        *c = 0.6 * base[i % SAMPLE_DIM] + 0.4 * pattern();
    }
    let mut values = Vec::with_capacity(SAMPLE_ROWS * SAMPLE_DIM);
    let mut labels = Vec::with_capacity(SAMPLE_ROWS);
    for _ in 0..SAMPLE_ROWS {
        let class = (rng.next_u64() % SAMPLE_CLASSES as u64) as usize;
        labels.push(class as f32);
        for j in 0..SAMPLE_DIM {
            let v = centroids[class * SAMPLE_DIM + j] + 0.25 * normal(&mut rng);
            values.push(v.clamp(0.0, 1.0) as f32);
        }
    }
    Dataset {
        n: SAMPLE_ROWS,
        p: SAMPLE_DIM,
        values,
        labels: Some(labels),
        scaling: Scaling::default(),
    }
}

/// The committed sample file's bytes (embedded so `dprp demo` works from any directory).
pub const SAMPLE_BIN: &[u8] = include_bytes!("../../data/sample.bin");
