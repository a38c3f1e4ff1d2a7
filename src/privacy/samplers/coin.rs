//! The exact Bernoulli(`T/2¹²⁸`) coin of the local-DP mechanisms, as a sampler: heads iff 128
//! uniform bits, drawn lazily, are below `T`. A toss draws one 64-bit word `w` and compares it
//! with the top half `T_hi` of `T`; only on a tie (probability 2⁻⁶⁴) does it draw a second word
//! and compare it with the low half — exactly `P(heads) = T/2¹²⁸`.
//!
//! How `T` is chosen from a privacy budget (rounded in the direction the privacy argument needs)
//! is the accountant's part, [`crate::privacy::coin`]: the constructors live there.

use rand::Rng;

/// 2¹²⁸ as an `f64` (exact).
pub(in crate::privacy) const TWO128: f64 = 340_282_366_920_938_463_463_374_607_431_768_211_456.0;

/// A Bernoulli(`T/2¹²⁸`) coin: heads iff 128 uniform bits, drawn lazily, are below `T`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coin {
    /// `T`; set only by the calibrated constructors of [`crate::privacy::coin`].
    pub(in crate::privacy) threshold: u128,
}

impl Coin {
    /// `T`: heads iff 128 uniform bits are below it.
    pub fn threshold(&self) -> u128 {
        self.threshold
    }

    /// Toss: one word against the top half of `T`, a second one only on a tie.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> bool {
        let hi = (self.threshold >> 64) as u64;
        let w = rng.next_u64();
        if w != hi {
            return w < hi;
        }
        rng.next_u64() < self.threshold as u64
    }

    /// `P(heads) = T/2¹²⁸` as the nearest `f64`.
    pub fn probability(&self) -> f64 {
        self.threshold as f64 / TWO128
    }

    /// `P(tails) = (2¹²⁸ − T)/2¹²⁸` as an `f64` (formed from the exact integer, so it keeps its
    /// relative precision when `T` is close to 2¹²⁸).
    pub fn complement(&self) -> f64 {
        ((u128::MAX - self.threshold) as f64 + 1.0) / TWO128
    }

    /// `ln P(tails)` to full relative precision (`ln(1 − P)` for `P ≤ ½`, else the log of the
    /// exact complement).
    pub fn ln_complement(&self) -> f64 {
        if self.threshold <= 1 << 127 {
            (-self.probability()).ln_1p()
        } else {
            self.complement().ln()
        }
    }

    /// `(2¹²⁸ − T)·c` for a small integer `c`, exactly, as an `f64` (ScalarDP's constants).
    pub fn tails_times(&self, c: u64) -> f64 {
        wide_to_f64(mul_u128_u64((u128::MAX - self.threshold) + 1, c))
    }

    /// `T·c − 2¹²⁸` as an `f64`, exactly formed (negative or zero as `≤ 0.0`).
    pub fn heads_times_minus_one(&self, c: u64) -> f64 {
        let (hi, lo) = mul_u128_u64(self.threshold, c);
        if hi == 0 {
            return -(((u128::MAX - lo) as f64) + 1.0);
        }
        wide_to_f64((hi - 1, lo))
    }
}

/// `high·2¹²⁸ + low` as an `f64` (two roundings, relative error below 2⁻⁵²).
fn wide_to_f64((high, low): (u128, u128)) -> f64 {
    high as f64 * TWO128 + low as f64
}

/// The exact 256-bit product `a·b` as `(high, low)` 128-bit halves.
pub(in crate::privacy) fn mul_u128_u64(a: u128, b: u64) -> (u128, u128) {
    let mask = u64::MAX as u128;
    let (a1, a0, b) = (a >> 64, a & mask, b as u128);
    let low = a0 * b; // < 2^128
    let mid = a1 * b; // < 2^128; contributes mid·2^64
    let (lo, carry) = low.overflowing_add(mid << 64);
    ((mid >> 64) + carry as u128, lo)
}
