//! Distributed DP under secure aggregation (issue 12): each client encodes its vector into
//! integers mod `M` with a small share of noise, a secure-aggregation round
//! ([`crate::mechanism::distributed::secagg`]) reveals only the sum mod `M`, and the server decodes the mean.
//! The guarantee is central DP of the *sum* (DDG: one client's vector added or removed; Binomial:
//! one client's vector replaced, n fixed, as cpSGD's Theorem 1 and its 2c sensitivities state),
//! which no single message carries on its own.
//!
//! **Why not the [`Mechanism`](crate::mechanism::Mechanism) trait.** A `Mechanism` privatises
//! rows into a release that may be published row by row. A distributed encoder's single message
//! is *not* private — its noise share is far too small — so it must never be written as a
//! release; only the secure sum is. The encoders therefore implement [`ClientEncoder`], which
//! only the aggregation round ([`crate::mechanism::distributed::round`]) drives, and publish refuses them.
//!
//! | encoder | file | paper | privacy |
//! |---|---|---|---|
//! | [`ddg::Ddg`] | `ddg.rs` | Kairouz et al. 2021 Alg. 1; Chen et al. 2022 Alg. 6 | Thm E.1 (zCDP) |
//! | [`sketch_ddg::SketchDdg`] | `sketch_ddg.rs` | Chen et al. 2022 Alg. 2 (count sketch, then DDG) | Thm E.1 in `m` dims |
//! | [`binomial::BinomialEncoder`] | `binomial.rs` | Agarwal et al. 2018 (cpSGD), protocol π_sk | cpSGD Thm 1, Lemma 7 |
//!
//! The rest of the room: [`accountant`] (ε of a setting, and the parameter plans of `dprp
//! calibrate`), [`planned`] (a request → a planned encoder), [`modular`] (the arithmetic mod `M`),
//! [`guarantee`] (the sum's guarantee as a value), [`secagg`] (pairwise one-time pads over a sparse graph), [`round`] (one secure-aggregation
//! round over every client, parallel, bounded memory).

pub mod accountant;
pub mod binomial;
pub mod ddg;
pub mod guarantee;
pub mod modular;
pub mod planned;
pub mod round;
pub mod secagg;
pub mod sketch_ddg;

use rand_chacha::ChaCha20Rng;

use crate::error::Result;
use crate::mechanism::distributed::modular::{ModularSum, Modulus};

pub use binomial::{BinomialEncoder, BinomialParams};
pub use ddg::{Ddg, DdgParams, EncodeStats};
pub use guarantee::DistributedGuarantee;
pub use planned::{plan_encoder, plan_encoder_for, DistributedKind, PlanDetail, Planned};
pub use sketch_ddg::SketchDdg;

/// A client-side encoder into `Z_M` and its server-side decoder.
pub trait ClientEncoder: Send + Sync {
    /// Input dimension `d`.
    fn input_dim(&self) -> usize;
    /// Residues per client message.
    fn message_len(&self) -> usize;
    /// The modulus of the secure sum.
    fn modulus(&self) -> Modulus;
    /// Encode one client's vector (`d` values) into `out` (`message_len` residues), noise from
    /// the client's own CSPRNG stream; when `exact` is given, also add the message's integers
    /// before the reduction mod `M` to it (a simulation diagnostic: whether the sum wrapped).
    fn encode(
        &self,
        x: &[f64],
        out: &mut [u64],
        rng: &mut ChaCha20Rng,
        exact: Option<&mut [i128]>,
    ) -> Result<EncodeStats>;
    /// The mean from the secure sum.
    fn decode(&self, sum: &ModularSum) -> Result<Vec<f64>>;
    /// How much the decoder can stretch an error made where the encoder clips (1: the clipping
    /// happens in the input space; a count sketch's `‖Sᵀ‖`): the mean's clipping bias is at most
    /// this times `Σ excess / n` ([`EncodeStats::clip_excess`]).
    fn clip_stretch(&self) -> f64 {
        1.0
    }
    /// Whether a coordinate whose exact integer sum (before the reduction mod `M`) is `v` is
    /// read back exactly from its residue — the `--check` diagnostic of a wrap. Default: the
    /// decoder lifts residues to `[−M/2, M/2)`.
    fn decodes_exactly(&self, v: i128) -> bool {
        let half = 1i128 << (self.modulus().bits() - 1);
        (-half..half).contains(&v)
    }
}
