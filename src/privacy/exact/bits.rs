//! The random-bit supply of the exact samplers: whole 64-bit words from the CSPRNG, single bits
//! buffered from them, unbiased uniform integers, and Bernoulli trials with a rational
//! probability decided bit by bit.
//!
//! All of it is integer arithmetic on the generator's output words.

use rand::CryptoRng;

/// A buffer of unused random bits in front of a CSPRNG.
///
/// Bits taken from the buffer are independent uniform bits (they are bits of the generator's
/// words); what is left in the buffer when it is dropped is discarded.
pub(crate) struct Bits<'a, R: CryptoRng + ?Sized> {
    rng: &'a mut R,
    buf: u64,
    left: u32,
}

impl<'a, R: CryptoRng + ?Sized> Bits<'a, R> {
    /// An empty buffer over `rng`.
    pub(crate) fn new(rng: &'a mut R) -> Self {
        Bits {
            rng,
            buf: 0,
            left: 0,
        }
    }

    /// A fresh 64-bit word (bypasses the buffer).
    #[inline]
    pub(crate) fn word(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// One uniform bit.
    #[inline]
    pub(crate) fn bit(&mut self) -> bool {
        if self.left == 0 {
            self.buf = self.rng.next_u64();
            self.left = 64;
        }
        let b = self.buf & 1;
        self.buf >>= 1;
        self.left -= 1;
        b == 1
    }

    /// The number of ones among `n` uniform bits: a `Bin(n, ½)` sample. Full words are
    /// popcounted; a remainder of `n mod 64` bits is masked from a buffered or fresh word, so
    /// every `n` is handled exactly.
    #[inline]
    pub(crate) fn ones(&mut self, mut n: u64) -> u64 {
        let mut count = 0u64;
        if self.left > 0 {
            let take = (self.left as u64).min(n) as u32;
            count += (self.buf & low_mask(take)).count_ones() as u64;
            self.buf = self.buf.checked_shr(take).unwrap_or(0);
            self.left -= take;
            n -= take as u64;
        }
        // Four words per step: independent popcounts, so the loop is bound by the generator.
        while n >= 256 {
            let a = self.rng.next_u64().count_ones() + self.rng.next_u64().count_ones();
            let b = self.rng.next_u64().count_ones() + self.rng.next_u64().count_ones();
            count += (a + b) as u64;
            n -= 256;
        }
        while n >= 64 {
            count += self.rng.next_u64().count_ones() as u64;
            n -= 64;
        }
        if n > 0 {
            let w = self.rng.next_u64();
            let k = n as u32;
            count += (w & low_mask(k)).count_ones() as u64;
            self.buf = w >> k;
            self.left = 64 - k;
        }
        count
    }

    /// A uniform integer in `[0, n)`, `n ≥ 1`.
    ///
    /// Lemire's multiply-and-reject method ("Fast random integer generation in an interval",
    /// ACM TOMACS 2019): the high word of `w·n` is uniform on `[0, n)` once the draws whose low
    /// word falls below `2^64 mod n` are rejected — exactly unbiased, no modulo bias.
    #[inline]
    pub(crate) fn below_u64(&mut self, n: u64) -> u64 {
        debug_assert!(n >= 1);
        let mut m = (self.rng.next_u64() as u128) * (n as u128);
        let mut low = m as u64;
        if low < n {
            let threshold = n.wrapping_neg() % n; // 2^64 mod n
            while low < threshold {
                m = (self.rng.next_u64() as u128) * (n as u128);
                low = m as u64;
            }
        }
        (m >> 64) as u64
    }

    /// A uniform integer in `[0, n)`, `n ≥ 1`: [`Bits::below_u64`] when `n ≤ 2^64`, otherwise
    /// the smallest number of random bits that covers `n − 1`, rejected while `≥ n` (fewer than
    /// two draws on average).
    pub(crate) fn below_u128(&mut self, n: u128) -> u128 {
        debug_assert!(n >= 1);
        if n <= u64::MAX as u128 {
            return self.below_u64(n as u64) as u128;
        }
        if n == 1u128 << 64 {
            return self.word() as u128;
        }
        let width = 128 - (n - 1).leading_zeros(); // 65..=128
        loop {
            let hi = self.word() as u128;
            let lo = self.word() as u128;
            let v = ((hi << 64) | lo) >> (128 - width);
            if v < n {
                return v;
            }
        }
    }

    /// A Bernoulli trial with probability `r/d` (`0 ≤ r ≤ d`, `d ≥ 1`), decided lazily: a uniform
    /// `u ∈ [0, 1)` is generated bit by bit and compared with the binary expansion of `r/d`,
    /// whose bits come from long division (`r ← 2r`, bit = `r ≥ d`, computed as `r ≥ d − r` so
    /// that nothing overflows). `u < r/d` is decided at the first differing bit; two random
    /// bits are used on average, and no division is needed.
    #[inline]
    pub(crate) fn ratio_u128(&mut self, mut r: u128, d: u128) -> bool {
        if r >= d {
            return true;
        }
        loop {
            if r == 0 {
                // The rest of r/d's expansion is zeros: u ≥ r/d.
                return false;
            }
            let pbit = r >= d - r;
            r = if pbit { r - (d - r) } else { r + r };
            if self.bit() != pbit {
                return pbit;
            }
        }
    }

    /// [`Bits::ratio_u128`] for a 64-bit denominator (the same algorithm on `u64`).
    #[inline]
    pub(crate) fn ratio_u64(&mut self, mut r: u64, d: u64) -> bool {
        if r >= d {
            return true;
        }
        loop {
            if r == 0 {
                return false;
            }
            let pbit = r >= d - r;
            r = if pbit { r - (d - r) } else { r + r };
            if self.bit() != pbit {
                return pbit;
            }
        }
    }
}

/// The lowest `k ≤ 64` bits set.
#[inline]
fn low_mask(k: u32) -> u64 {
    if k >= 64 {
        u64::MAX
    } else {
        (1u64 << k) - 1
    }
}
