//! Public random projections (DESIGN.md §3), regenerable bit-for-bit from `(kind, p, k, seed)`.
//!
//! Randomness layout (format version 1; changing it changes every release, so it is pinned by
//! tests with golden values):
//! * The 256-bit public seed is the ChaCha20 key; the word position starts at 0.
//! * Dense kinds ([`dense`]): stream 0; entries generated in row-major order of `W ∈ R^{p×k}`
//!   (input coordinate `i` outer, output `j` inner). Rademacher entries take one bit each
//!   (bit `t mod 64`, least significant first, of 64-bit word `t / 64`, `t = i·k + j`; bit 1 → +1).
//!   Gaussian entries come in pairs from Box–Muller on two 64-bit words; uniform and sparse entries
//!   take one 64-bit word each. Transcendentals use the `libm` crate (pure Rust) so every platform
//!   computes the same bits.
//! * OPORP ([`oporp`]): stream 1 drives a Fisher–Yates shuffle of the `p` coordinates, stream 2
//!   gives the Rademacher signs (one bit per coordinate, as above).
//! * SRHT ([`srht`]): stream 3 gives the Rademacher diagonal `D` (one bit per padded coordinate,
//!   as above); stream 4 drives a partial Fisher–Yates shuffle of the `d'` padded coordinates
//!   (steps `i = 0..k`, swap `i` with `i + uniform_below(d' − i)`), whose first `k` entries are
//!   the sampled rows in order.
//! * ProjUnit matrices ([`crate::mechanism::local::projunit`]): stream 5. Gaussian kind: the
//!   i.i.d. standard normal entries of a `k×d` matrix in row-major order (output `j` outer, input
//!   `i` inner), Box–Muller pairs as above but in f64. Rotation kind
//!   ([`crate::mechanism::local::rotation`]): `k` Householder vectors, vector `j` of length
//!   `d − j`. Per-row layout 2 (what dprp writes): the bulk ziggurat
//!   ([`crate::mechanism::local::normal`], integer thresholds and `libm`, the same bits
//!   everywhere) from 32-bit word `j·2³⁶` of the stream. Per-row layout 1 (still read):
//!   Box–Muller pairs in f64 from 32-bit word `j·4·⌈d/2⌉`.
//! * The flattening rotation `U = (H/√d')·D` of the distributed mechanisms ([`flatten`]): stream 9
//!   gives `D` (one bit per padded coordinate, as above).
//! * Count sketch ([`count_sketch`]): stream 6 gives the hashes `h_b(i)` (one
//!   `uniform_below(w)` (in `oporp`) draw per entry, Lemire's multiply-and-reject), stream 7 the signs
//!   (one bit per entry, as above); entries in the order `q = i·t + b` (input coordinate `i`
//!   outer, block `b` inner).
//! * Per-row public maps (ProjUnit releases, one `W_i` per user): row `i`'s seed is
//!   [`Seed::for_row`]`(i)` of the release seed, and the map is generated from it as above.

pub mod count_sketch;
pub mod dense;
pub mod flatten;
pub mod hadamard;
pub mod oporp;
pub mod srht;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The public seed, in [`crate::rng`] since issue 27 (re-exported here).
pub use crate::rng::Seed;
pub use count_sketch::CountSketch;
pub use dense::DenseProjection;
pub use oporp::Oporp;
pub use srht::Srht;

/// The most memory one public map may take: 4 GiB (256 MiB in fuzz builds, whose allocation limit
/// is 2 GiB). The same limit applies when publishing and when a release's map is regenerated from
/// its metadata, so every release dprp writes can be read back, and a small crafted release cannot
/// make a reader allocate more (its p, k and d are whatever the file says).
pub const MAX_MAP_BYTES: u128 = if cfg!(fuzzing) { 1 << 28 } else { 1 << 32 };

/// Refuse a public map that would take `bytes` bytes (in u128: the operands come from user input
/// or a file, and their product may overflow `usize`) when that exceeds [`MAX_MAP_BYTES`]; `what`
/// names the map and its shape in the error.
pub fn check_map_bytes(what: &str, bytes: u128) -> Result<()> {
    if bytes > MAX_MAP_BYTES {
        return Err(Error::param(
            "dimension",
            format!(
                "{what} would take {bytes} bytes, more than the {} MiB dprp allows for one public map",
                MAX_MAP_BYTES >> 20
            ),
        ));
    }
    Ok(())
}

/// A vector of `n` copies of `value` for a public map, allocated fallibly: a map within
/// [`MAX_MAP_BYTES`] that this machine cannot hold is a clear error, not an abort.
pub fn alloc_map<T: Clone>(what: &str, n: usize, value: T) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        Error::param(
            "dimension",
            format!(
                "{what}: cannot allocate {} bytes for the public map",
                n as u128 * std::mem::size_of::<T>() as u128
            ),
        )
    })?;
    v.resize(n, value);
    Ok(v)
}

/// The distribution of a dense projection's entries.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum DenseKind {
    /// ±1 with probability ½ each (the default; `Δ₂ = β` exactly).
    Rademacher,
    /// N(0,1).
    Gaussian,
    /// √3·Unif[-1,1].
    Uniform,
    /// √s·{−1 w.p. 1/(2s), 0 w.p. 1 − 1/s, +1 w.p. 1/(2s)}.
    Sparse {
        /// Sparsity parameter s ≥ 1.
        s: f64,
    },
}

impl DenseKind {
    /// Parse `rademacher`, `gaussian`, `uniform` or `sparse:S`.
    pub fn parse(text: &str) -> Result<DenseKind> {
        let t = text.to_ascii_lowercase();
        Ok(match t.as_str() {
            "rademacher" => DenseKind::Rademacher,
            "gaussian" | "normal" => DenseKind::Gaussian,
            "uniform" => DenseKind::Uniform,
            _ => {
                if let Some(s) = t.strip_prefix("sparse:") {
                    let s: f64 = s.parse().map_err(|_| {
                        Error::param(
                            "‹projection›",
                            format!("'{text}': S in sparse:S must be a number"),
                        )
                    })?;
                    if !(s.is_finite() && s >= 1.0) {
                        return Err(Error::param(
                            "‹projection›",
                            format!("'{text}': S in sparse:S must be at least 1"),
                        ));
                    }
                    DenseKind::Sparse { s }
                } else {
                    return Err(Error::param(
                        "‹projection›",
                        format!(
                            "unknown projection '{text}' (expected rademacher, gaussian, uniform or sparse:S)"
                        ),
                    ));
                }
            }
        })
    }

    /// Fourth moment `E[w⁴]` of an entry (the `s` of Theorem C.2).
    pub fn fourth_moment(&self) -> f64 {
        match self {
            DenseKind::Rademacher => 1.0,
            DenseKind::Gaussian => 3.0,
            DenseKind::Uniform => 1.8,
            DenseKind::Sparse { s } => *s,
        }
    }

    /// Name as accepted by [`parse`](DenseKind::parse).
    pub fn name(&self) -> String {
        match self {
            DenseKind::Rademacher => "rademacher".into(),
            DenseKind::Gaussian => "gaussian".into(),
            DenseKind::Uniform => "uniform".into(),
            DenseKind::Sparse { s } => format!("sparse:{s}"),
        }
    }
}

/// Convert the top 53 bits of a word to a double in `[0, 1)`.
#[inline]
pub(crate) fn unit_f64(w: u64) -> f64 {
    (w >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Fill `out` with i.i.d. N(0,1) from Box–Muller pairs on two 64-bit words each (the layout of
/// the Gaussian kinds, in f64; an odd tail uses the cosine half of one last pair).
pub(crate) fn gaussian_fill_f64(rng: &mut rand_chacha::ChaCha20Rng, out: &mut [f64]) {
    use rand::Rng;
    for pair in out.chunks_mut(2) {
        let u1 = 1.0 - unit_f64(rng.next_u64()); // (0, 1]
        let u2 = unit_f64(rng.next_u64());
        let r = libm::sqrt(-2.0 * libm::log(u1));
        let a = 2.0 * std::f64::consts::PI * u2;
        pair[0] = r * libm::cos(a);
        if pair.len() > 1 {
            pair[1] = r * libm::sin(a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_hex_round_trip() {
        let s = Seed::parse_hex("ab").unwrap();
        assert_eq!(s.0[31], 0xab);
        assert_eq!(s.0[0], 0);
        assert_eq!(Seed::parse_hex(&s.to_hex()).unwrap(), s);
        assert!(Seed::parse_hex("xyz").is_err());
        assert!(Seed::parse_hex(&"f".repeat(65)).is_err());
        assert!(Seed::parse_hex("").is_err());
    }

    #[test]
    fn row_seeds_are_pinned_and_distinct() {
        let s = Seed::parse_hex("7").unwrap();
        assert_eq!(s.for_row(3), s.for_row(3));
        assert_ne!(s.for_row(3), s.for_row(4));
        assert_ne!(s.for_row(0), s);
        assert_ne!(Seed::parse_hex("8").unwrap().for_row(3), s.for_row(3));
        // Golden value: changing the derivation changes every per-row release.
        assert_eq!(&s.for_row(1).to_hex()[..16], "905e3bf5693f82ef");
    }

    #[test]
    fn kind_parsing() {
        assert_eq!(
            DenseKind::parse("sparse:3").unwrap(),
            DenseKind::Sparse { s: 3.0 }
        );
        assert!(DenseKind::parse("sparse:0.5").is_err());
        assert!(DenseKind::parse("sparse:x").is_err());
        assert!(DenseKind::parse("hadamard").is_err());
    }
}
