//! Raw query vectors as sketches: the querier projects its own (unperturbed) vectors with the
//! release's public map, so they can be compared with the released rows (DESIGN.md §6, the
//! "raw query" mode: no noise on the query's side). Used by `dprp query` and the Python module.

use crate::error::{Error, Result};
use crate::mechanism::{central::sign_sketch::pack_signs, Mechanism, Payload};

/// Query sketches: projected real values (`rows × k`) for real releases, or packed sign words
/// (`rows × ⌈k/64⌉`, bit set = projection ≥ 0, as [`pack_signs`]) for sign releases.
#[derive(Debug, Clone, PartialEq)]
pub enum QuerySketches {
    /// Projected values, row-major.
    Real(Vec<f32>),
    /// Packed signs of the projections, row-major.
    Bits(Vec<u64>),
}

/// Project `rows` raw vectors (`values`, row-major, `m.input_dim()` each, already on the
/// release's scale: see [`crate::data::scale::scale_queries`]) with the public map of `m`, the
/// mechanism rebuilt from the release, and pack the signs when `payload` is [`Payload::Bits`].
pub fn sketch_queries(
    m: &dyn Mechanism,
    payload: Payload,
    values: &[f32],
) -> Result<QuerySketches> {
    let (p, k) = (m.input_dim(), m.output_dim());
    if p == 0 || !values.len().is_multiple_of(p) {
        return Err(Error::param(
            "queries",
            format!(
                "{} values are not whole rows of the release's dimension p = {p}",
                values.len()
            ),
        ));
    }
    let rows = values.len() / p;
    let mut x = vec![0f32; rows * k];
    m.as_sketch()?.project(values, &mut x)?;
    Ok(match payload {
        Payload::F32 => QuerySketches::Real(x),
        Payload::Bits => {
            let w = k.div_ceil(64);
            let mut bits = vec![0u64; rows * w];
            for (row, words) in x.chunks(k.max(1)).zip(bits.chunks_mut(w.max(1))) {
                pack_signs(row, words);
            }
            QuerySketches::Bits(bits)
        }
    })
}
