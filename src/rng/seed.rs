//! Public seeds: 256-bit ChaCha20 keys that regenerate every public map and per-row map of a
//! release (the layout of what each key generates is documented in [`crate::projection`]).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A 256-bit public seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seed(pub [u8; 32]);

impl Seed {
    /// Parse up to 64 hex digits (shorter seeds are left-padded with zeros).
    pub fn parse_hex(s: &str) -> Result<Seed> {
        let t = s.trim().trim_start_matches("0x");
        if t.is_empty() || t.len() > 64 || !t.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(Error::param(
                "‹projection_seed›",
                format!("'{s}' is not 1 to 64 hexadecimal digits"),
            ));
        }
        let padded = format!("{t:0>64}");
        let mut out = [0u8; 32];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&padded[2 * i..2 * i + 2], 16).map_err(|_| {
                Error::param("‹projection_seed›", format!("'{s}' is not hexadecimal"))
            })?;
        }
        Ok(Seed(out))
    }

    /// A fresh seed from the operating system (public randomness, but unpredictable is better).
    pub fn random() -> Result<Seed> {
        use rand::TryRng;
        let mut out = [0u8; 32];
        rand::rngs::SysRng.try_fill_bytes(&mut out).map_err(|e| {
            Error::param("‹projection_seed›", format!("OS random source failed: {e}"))
        })?;
        Ok(Seed(out))
    }

    /// The public seed of row `row` of a release whose mechanism draws a fresh public map per row
    /// (ProjUnit: each user their own `W_i`): the BLAKE3 keyed hash, under this seed, of the
    /// context string `dprp row seed v1` and the row index as 8 little-endian bytes. Anyone with
    /// the release seed regenerates every row's map; distinct rows get independent-looking keys.
    pub fn for_row(&self, row: u64) -> Seed {
        let mut h = blake3::Hasher::new_keyed(&self.0);
        h.update(b"dprp row seed v1");
        h.update(&row.to_le_bytes());
        Seed(*h.finalize().as_bytes())
    }

    /// 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl Serialize for Seed {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Seed {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Seed, D::Error> {
        let s = String::deserialize(d)?;
        Seed::parse_hex(&s).map_err(serde::de::Error::custom)
    }
}
