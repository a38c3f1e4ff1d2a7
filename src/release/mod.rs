//! The sketch store (DESIGN.md §7): one file per release.
//!
//! ```text
//! offset size  field (all integers little-endian)
//!      0    8  magic "DPRPSKCH"
//!      8    4  format version, u32 (= 1)
//!     12    4  payload kind, u32: 0 = f32 values, 1 = packed sign bits (u64 words)
//!     16    8  n, rows, u64
//!     24    8  k, values (or bits) per row, u64
//!     32    8  payload offset, u64 (= 128; 64-byte aligned)
//!     40    8  payload length in bytes, u64 (n·k·4, or n·⌈k/64⌉·8)
//!     48    8  row-id offset, u64 (0 = none: row i has id i), n u64 ids
//!     56    8  label offset, u64 (0 = none), n f32 labels
//!     64    8  metadata offset, u64; the metadata runs to the end of the file
//!     72    8  metadata length, u64
//!     80   32  checksum: BLAKE3 of bytes [128, end of file) followed by bytes [0, 80)
//!    112   16  reserved, zero
//!    128    …  payload, then ids and labels (each 64-byte aligned), then metadata (UTF-8 JSON)
//! ```
//!
//! The metadata ([`ReleaseMeta`]) records the mechanism, guarantee, ε, δ, β, neighbour relation, p,
//! k, n, projection kind and public seed, σ, data scaling, tool version and creation time, and — for
//! releases published with `--ledger` — a keyed dataset fingerprint ([`DatasetRecord`]). It never
//! contains the secret noise key, a `--noise-seed`, or the ledger's key.

pub mod advisory;
mod format;
pub mod parquet;
mod reader;
pub mod shards;
mod writer;

/// The mechanism a release records ([`ReleaseSet::mechanism`] rebuilds it) and its payload's type.
pub use crate::mechanism::{Mechanism, Payload};
pub use format::*;
pub use reader::Release;
pub use shards::ReleaseSet;
pub use writer::{Container, ReleaseWriter};
