//! Advisories about releases written by earlier versions of dprp: which releases a known defect
//! may have touched, decided from what the release records (its writer, its input format, its
//! shape), so that `dprp info` and the Python `Release.open` can say so.
//!
//! **2026-11, noise reuse across rows (fixed in 0.2.0).** dprp 0.1.0 drew a row's secret noise
//! from the ChaCha20 stream of its 256-row block, and computed the block from the first row of
//! each chunk the input reader returned, rounding down. Readers that cap a read at 16 MiB return
//! chunks of `⌊2²⁴ / row bytes⌋` rows (`.npy`, CSV, LIBSVM, fvecs/bvecs, IDX); when that was not a
//! multiple of 256 and the input had more rows than one such chunk, rows after the first chunk
//! re-read an earlier block's stream (two rows with the same noise reveal the difference of their
//! inputs) and ProjUnit rows used another row's public map. The smallest such chunk comes from
//! a float64 `.npy` (8 bytes a value): `⌊2²¹/p⌋` rows, below the pipeline's 8192-row chunk only
//! when p > 256. Parquet, native files and numpy arrays given to Python were read in whole chunks
//! and not affected, but 0.1.0 did not record the input format, so the advisory names every
//! 0.1.0 release wide and long enough to have been affected.

use super::ReleaseMeta;

/// The first version whose rows draw from streams of their own ids.
pub const FIXED_IN: (u32, u32, u32) = (0, 2, 0);

/// The writer's version, from `tool` (`"dprp 0.1.0"`); `None` for another writer.
pub fn writer_version(meta: &ReleaseMeta) -> Option<(u32, u32, u32)> {
    let v = meta.tool.strip_prefix("dprp ")?;
    let mut it = v.split(['.', '-', '+']).map(|x| x.parse::<u32>().ok());
    Some((it.next()??, it.next()??, it.next()??))
}

/// Whether the 2026-11 noise-reuse defect may have touched a release (or a shard) with this
/// metadata: written by dprp before 0.2.0, from an input that may have come in unaligned chunks,
/// with more rows than the smallest such chunk.
pub fn noise_reuse_possible(meta: &ReleaseMeta) -> bool {
    let Some(v) = writer_version(meta) else {
        return false;
    };
    if v >= FIXED_IN || meta.p <= 256 {
        return false;
    }
    let unaligned_format = match meta.input_format.as_deref() {
        None => true, // not recorded before 0.2.0
        Some(f) => !(f == "parquet" || f == "native" || f == "python array" || f == "memory"),
    };
    let smallest_chunk = (1u64 << 21) / meta.p as u64;
    unaligned_format && meta.n > smallest_chunk
}

/// The advisories that apply to a release, as sentences for a user (empty for most).
pub fn advisories(meta: &ReleaseMeta) -> Vec<String> {
    let mut out = Vec::new();
    if noise_reuse_possible(meta) {
        out.push(format!(
            "ADVISORY 2026-11 (noise reuse, fixed in dprp 0.2.0): this release was written by {} \
             with p = {} and {} rows; that version gave rows after the first input chunk the \
             secret noise stream (and, for ProjUnit, the public map) of earlier rows whenever \
             the reader returned chunks that were not a multiple of 256 rows, as .npy, CSV, \
             LIBSVM, fvecs/bvecs and IDX inputs of this width could. Rows sharing noise reveal \
             the difference of their inputs. Unless it was published from Parquet, a native \
             .bin file or a numpy array in Python, withdraw it and publish again with dprp ≥ \
             0.2.0 (CHANGELOG.md)",
            meta.tool, meta.p, meta.n
        ));
    }
    out
}
