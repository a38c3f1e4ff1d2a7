//! The sign flips' coin as a sampler: Bernoulli(`Q/2⁶⁴`), decided by comparing one uniform
//! 64-bit word with the integer `Q`. How `Q` is chosen from ε' (randomised response, smooth
//! flipping; rounded toward ½) is the accountant's part, [`crate::privacy::rr`]: the calibrated
//! constructors live there.

use crate::error::{Error, Result};

/// A Bernoulli(`Q/2⁶⁴`) coin on 64-bit words: flips iff a uniform word is `< Q`, so its
/// probability is exactly `Q/2⁶⁴` ([`crate::privacy::rr`] explains why). `Q ≤ 2⁶³`: every coin
/// here flips with probability at most ½.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flip {
    /// `Q ≤ 2⁶³`; set only by [`Flip::from_threshold`] and the calibrated constructors of
    /// [`crate::privacy::rr`].
    pub(in crate::privacy) threshold: u64,
}

impl Flip {
    /// The coin with probability `threshold/2⁶⁴`, `threshold ≤ 2⁶³`.
    ///
    /// # Errors
    /// `threshold > 2⁶³` (a flip probability above ½).
    pub fn from_threshold(threshold: u64) -> Result<Flip> {
        if threshold > 1 << 63 {
            return Err(Error::param(
                "flip threshold",
                format!("{threshold} exceeds 2^63: a flip probability above 1/2"),
            ));
        }
        Ok(Flip { threshold })
    }

    /// `Q`: the coin flips iff a uniform 64-bit word is below it.
    pub fn threshold(&self) -> u64 {
        self.threshold
    }

    /// Draw.
    #[inline]
    pub fn sample<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> bool {
        rng.next_u64() < self.threshold
    }

    /// Decide from an already drawn uniform 64-bit word (what [`sample`](Flip::sample) does with
    /// `next_u64()`).
    #[inline]
    pub fn sample_word(&self, w: u64) -> bool {
        w < self.threshold
    }

    /// The probability `Q/2⁶⁴` as the nearest `f64` (for display; the coin uses `Q` itself).
    pub fn probability(&self) -> f64 {
        self.threshold as f64 / 18_446_744_073_709_551_616.0
    }
}
