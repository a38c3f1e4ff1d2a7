//! The secret noise source.
//!
//! Noise is drawn from ChaCha20 (a CSPRNG). The 256-bit key is read from the operating system
//! (`getrandom`) once per publish run and kept only in memory; it is never written anywhere.
//!
//! **Row `r` draws from ChaCha20 stream `r` of that key, from its start** ([`NoiseSource::row_rng`]):
//! a row's secret noise is a function of the key and its absolute row id alone. No reader, chunk
//! size, memory budget, shard boundary, Parquet row group or thread count can change which
//! keystream a row reads, and two rows never share one (stream ids are distinct 64-bit values,
//! and each stream is 2⁶⁴ blocks long). Until dprp 0.2.0 a stream served a 256-row block and a
//! chunk that did not start on a block boundary re-read an earlier block's stream (CHANGELOG,
//! advisory 2026-11).
//!
//! The local mechanisms take their noise words in bulk through
//! [`crate::mechanism::local::WordRng`], which for this generator computes the keystream with
//! dprp's multi-block ChaCha20 ([`crate::privacy::chacha`]): the same cipher, key, stream and word
//! positions, the same words (tested against `rand_chacha`), only faster.
//!
//! For reproducible experiments a user-supplied `--noise-seed` replaces the OS key (hashed with
//! BLAKE3 into a key). Anyone who knows that seed can subtract the noise, so such a release is
//! marked as **not private** and the seed itself is not stored.
//!
//! The Gaussian mechanisms draw, by default, integer discrete Gaussians on a lattice
//! ([`crate::privacy::lattice`]), which no low-bit attack can read. With `--noise float` (and in
//! the local mechanisms) samples are IEEE floating-point Gaussians (ziggurat,
//! `rand_distr::StandardNormal`, in f64), scaled by σ and rounded to f32 when added.
//! Floating-point samplers can leak through their least-significant bits in adversarial settings
//! (Mironov 2012); rounding to f32 after adding f64 noise removes most of that structure but is
//! not a formal argument.

use rand::rngs::SysRng;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::error::{Error, Result};

/// Where the secret noise comes from.
#[derive(Clone)]
pub struct NoiseSource {
    key: [u8; 32],
    seeded: bool,
}

impl std::fmt::Debug for NoiseSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("NoiseSource")
            .field("seeded", &self.seeded)
            .finish_non_exhaustive()
    }
}

impl NoiseSource {
    /// A fresh key from the operating system (private releases).
    pub fn from_os() -> Result<NoiseSource> {
        let mut key = [0u8; 32];
        let mut os = SysRng;
        use rand::TryRng;
        os.try_fill_bytes(&mut key).map_err(|e| {
            Error::param(
                "noise",
                format!("the operating system's random source failed: {e}"),
            )
        })?;
        Ok(NoiseSource { key, seeded: false })
    }

    /// A key derived from a user-supplied seed: reproducible, and therefore NOT private.
    pub fn from_seed(seed: &str) -> NoiseSource {
        let key = blake3::derive_key("dprp 2026 noise-seed v1", seed.as_bytes());
        NoiseSource { key, seeded: true }
    }

    /// Whether the noise is reproducible from a user seed (release not private).
    pub fn is_seeded(&self) -> bool {
        self.seeded
    }

    /// The generator of row `row`: ChaCha20 stream `row` of the key, at its start. Every user of
    /// the key that privatises several items (rows of a release, clients of a round, trials of an
    /// audit) gives each item its own id and reads only that item's stream.
    pub fn row_rng(&self, row: u64) -> ChaCha20Rng {
        let mut rng = ChaCha20Rng::from_seed(self.key);
        rng.set_stream(row);
        rng
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn os_keys_differ_and_seeded_keys_repeat() {
        let a = NoiseSource::from_os().unwrap();
        let b = NoiseSource::from_os().unwrap();
        assert_ne!(a.row_rng(0).next_u64(), b.row_rng(0).next_u64());
        let c = NoiseSource::from_seed("42");
        let d = NoiseSource::from_seed("42");
        assert_eq!(c.row_rng(3).next_u64(), d.row_rng(3).next_u64());
        assert_ne!(c.row_rng(3).next_u64(), c.row_rng(4).next_u64());
        assert!(c.is_seeded() && !a.is_seeded());
        assert!(!format!("{a:?}").contains("key:"));
    }
}
