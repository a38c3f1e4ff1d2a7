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

    /// `f` run on a copy of this buffer, whose state is taken back afterwards — for the calls
    /// of a hot loop that are not inlined (the samplers' rare paths): a buffer whose address
    /// is passed to such a call must live in memory for the whole loop, each bit taken then
    /// waiting on a store and a load; a buffer that never escapes stays in registers. The
    /// bits `f` sees and leaves are exactly the ones it would have seen on `self`.
    #[inline(always)]
    pub(crate) fn detached<T>(&mut self, f: impl FnOnce(&mut Bits<'_, R>) -> T) -> T {
        let mut copy = Bits {
            rng: &mut *self.rng,
            buf: self.buf,
            left: self.left,
        };
        let t = f(&mut copy);
        self.buf = copy.buf;
        self.left = copy.left;
        t
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
    /// word falls below `2^L mod n` are rejected — exactly unbiased, no modulo bias. `w` has
    /// `L = 32` bits when `n ≤ 2^32` (half a keystream word), else 64.
    #[inline]
    pub(crate) fn below_u64(&mut self, n: u64) -> u64 {
        debug_assert!(n >= 1);
        if n <= 1 << 32 {
            let mut m = self.take(32) * n;
            let mut low = m & 0xffff_ffff;
            if low < n {
                let threshold = (1u64 << 32) % n; // 2^32 mod n
                while low < threshold {
                    m = self.take(32) * n;
                    low = m & 0xffff_ffff;
                }
            }
            return m >> 32;
        }
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

    /// `k ≤ 32` fresh uniform bits (the buffer's next `k`, or a new word's low `k` — buffered
    /// bits fewer than `k` are dropped, which leaves every bit handed out independent and
    /// uniform).
    #[inline]
    pub(crate) fn take(&mut self, k: u32) -> u64 {
        debug_assert!((1..=32).contains(&k));
        let mask = (1u64 << k) - 1;
        if self.left >= k {
            let w = self.buf & mask;
            self.buf >>= k;
            self.left -= k;
            w
        } else {
            let w = self.rng.next_u64();
            self.buf = w >> k;
            self.left = 64 - k;
            w & mask
        }
    }

    /// A Bernoulli trial with probability `r/d` (`0 ≤ r ≤ d`, `d ≥ 1`): `u < r/d` for a uniform
    /// `u ∈ [0, 1)` generated `K = 16` bits at a time.
    ///
    /// With `w` the next `K` bits of `u` (`u = (w + u')/2^K`, `u'` uniform on `[0, 1)` and
    /// independent of `w`), `u < r/d ⟺ (w + u')·d < r·2^K`. If `(w + 1)·d ≤ r·2^K` that holds
    /// whatever `u'` is: true. If `w·d ≥ r·2^K` it fails whatever `u'` is: false. Otherwise
    /// (`w = ⌊r·2^K/d⌋`, probability `2^-K`) it holds exactly when `u' < r'/d` with
    /// `r' = r·2^K − w·d ∈ (0, d)`, decided the same way on the next `K` bits. So the trial is
    /// exactly `Bernoulli(r/d)`, decided by one multiplication and two comparisons nearly always
    /// (the products are formed in up to 145 bits: nothing overflows), on two bytes of
    /// keystream where the bit-by-bit comparison took a data-dependent loop.
    #[inline]
    pub(crate) fn ratio_u128(&mut self, mut r: u128, d: u128) -> bool {
        if r >= d {
            return true;
        }
        // r·2^K as (bits 64.., bits 0..64)
        let shifted = |r: u128| (r >> (64 - K), (r as u64) << K);
        loop {
            if r == 0 {
                return false;
            }
            let w = self.take(K);
            let b = shifted(r);
            let a = mul_wide(w, d);
            if a >= b {
                return false;
            }
            if mul_wide(w + 1, d) <= b {
                return true;
            }
            // r' = r·2^K − w·d < d < 2^128: exact in wrapping 128-bit arithmetic
            r = (b.0.wrapping_sub(a.0) << 64)
                .wrapping_add(b.1 as u128)
                .wrapping_sub(a.1 as u128);
        }
    }

    /// [`Bits::ratio_u128`] for a 64-bit denominator (the same algorithm; the products fit 128
    /// bits).
    #[inline]
    pub(crate) fn ratio_u64(&mut self, mut r: u64, d: u64) -> bool {
        if r >= d {
            return true;
        }
        let d = d as u128;
        loop {
            if r == 0 {
                return false;
            }
            let w = self.take(K) as u128;
            let b = (r as u128) << K;
            let a = w * d;
            if a >= b {
                return false;
            }
            if a + d <= b {
                return true;
            }
            r = (b - a) as u64; // < d
        }
    }

    /// A trial with probability `1/k` (`k ≥ 1`); `k = 2` is a single bit.
    #[inline]
    pub(crate) fn one_in(&mut self, k: u64) -> bool {
        if k == 2 {
            return self.bit();
        }
        self.ratio_u64(1, k)
    }

    /// The bit-by-bit trial the samplers used before [`Bits::ratio_u128`] (kept to test the two
    /// against each other).
    #[cfg(test)]
    pub(crate) fn ratio_bitwise(&mut self, mut r: u128, d: u128) -> bool {
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

/// Bits per step of the Bernoulli trials ([`Bits::ratio_u128`]).
const K: u32 = 16;

/// `w·d` for `w ≤ 2^32` as (bits 64 and up, bits 0..64) — at most 161 bits.
#[inline]
fn mul_wide(w: u64, d: u128) -> (u128, u64) {
    let lo = w as u128 * (d as u64) as u128;
    let hi = w as u128 * (d >> 64) + (lo >> 64);
    (hi, lo as u64)
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    /// Replays chosen 64-bit words.
    struct Replay(Vec<u64>);
    impl rand::TryRng for Replay {
        type Error = core::convert::Infallible;
        fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
            Ok(self.0.remove(0) as u32)
        }
        fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
            Ok(self.0.remove(0))
        }
        fn try_fill_bytes(&mut self, _: &mut [u8]) -> Result<(), Self::Error> {
            unreachable!("the trials take whole words")
        }
    }
    impl rand::TryCryptoRng for Replay {}

    /// `⌊r·2^K/d⌋` and the remainder, by long division one bit at a time (independent of the
    /// trial's wide products).
    fn digit(r: u128, d: u128) -> (u64, u128) {
        let (mut q, mut rem) = (0u64, r);
        for _ in 0..K {
            // rem < d ≤ 2^128: 2·rem may need 129 bits
            let carry = rem >> 127;
            rem <<= 1;
            q <<= 1;
            if carry == 1 || rem >= d {
                rem = rem.wrapping_sub(d);
                q |= 1;
            }
        }
        (q, rem)
    }

    /// The 128-bit trial on replayed words (and the 64-bit one, which must agree, when `d` fits).
    fn trial(words: Vec<u64>, r: u128, d: u128) -> bool {
        let mut rng = Replay(words.clone());
        let wide = Bits::new(&mut rng).ratio_u128(r, d);
        if d <= u64::MAX as u128 {
            let mut rng = Replay(words);
            assert_eq!(Bits::new(&mut rng).ratio_u64(r as u64, d as u64), wide);
        }
        wide
    }

    /// The trial decides `u < r/d` exactly at the boundary digit: with the first `K` bits of `u`
    /// one below `⌊r·2^K/d⌋` it is true, one above false, and equal it goes on to the next `K`
    /// bits against the remainder — for denominators of 2 to 128 bits. Getting the comparison
    /// off by one (`>` for `≥`, or `<` for `≤`), or continuing with a wrong remainder, flips
    /// one of these cases.
    #[test]
    fn ratio_decides_at_the_exact_boundary() {
        let mut rng = ChaCha20Rng::seed_from_u64(17);
        let mut cases: Vec<(u128, u128)> = vec![(1, 3), (2, 3), (5, 117), (116, 117), (1, 7)];
        for bits in [40u32, 64, 65, 96, 100, 127, 128] {
            for _ in 0..20 {
                let hi = if bits == 128 {
                    u128::MAX
                } else {
                    (1u128 << bits) - 1
                };
                let d = ((rng.next_u64() as u128) << 64 | rng.next_u64() as u128) & hi | 2;
                let r = ((rng.next_u64() as u128) << 64 | rng.next_u64() as u128) % d;
                cases.push((r.max(1), d));
            }
        }
        for (r, d) in cases {
            let (f, rem) = digit(r, d);
            // the first K bits of u are the low K bits of the first word
            if f > 0 {
                assert!(trial(vec![f - 1], r, d), "w = F − 1, r/d = {r}/{d}");
            }
            let top = (1u64 << K) - 1;
            if f < top {
                assert!(!trial(vec![f + 1], r, d), "w = F + 1, r/d = {r}/{d}");
            }
            // w = F: the next K bits of the first word against rem/d
            let (f2, _) = digit(rem, d);
            if rem > 0 && f2 > 0 {
                assert!(
                    trial(vec![f | ((f2 - 1) << K)], r, d),
                    "F then F2 − 1, {r}/{d}"
                );
            }
            if f2 < top {
                assert!(
                    !trial(vec![f | ((f2 + 1) << K)], r, d),
                    "F then F2 + 1, {r}/{d}"
                );
            }
            if rem == 0 {
                // u ≥ r/d once the digits match and nothing remains
                assert!(!trial(vec![f], r, d), "exact digit, {r}/{d}");
            }
        }
    }

    /// Frequencies: `Bernoulli(r/d)` from the `K`-bit trial and from the bit-by-bit reference
    /// both within 5 standard errors of `r/d` over 10^6 trials, for 64- and 128-bit
    /// denominators; power: a probability 5% off is more than 5 s.e. away.
    #[test]
    fn ratio_frequencies_match_the_probability() {
        let n = 1_000_000u32;
        for (r, d) in [
            (1u128, 3u128),
            (5, 117),
            (0x1_2345_6789_abcd_ef01_2345, 0x5_0000_0000_0000_0000_0001),
            (u128::MAX / 3, u128::MAX - 4),
        ] {
            let p = r as f64 / d as f64;
            let se = (p * (1.0 - p) / n as f64).sqrt();
            let mut rng = ChaCha20Rng::seed_from_u64(d as u64 ^ 99);
            let mut bits = Bits::new(&mut rng);
            let fast = (0..n).filter(|_| bits.ratio_u128(r, d)).count() as f64 / n as f64;
            let slow = (0..n).filter(|_| bits.ratio_bitwise(r, d)).count() as f64 / n as f64;
            assert!((fast - p).abs() < 5.0 * se, "{r}/{d}: {fast} vs {p}");
            assert!((slow - p).abs() < 5.0 * se, "{r}/{d}: {slow} vs {p}");
            assert!((fast - 1.05 * p).abs() > 5.0 * se, "power at {r}/{d}");
            if d <= u64::MAX as u128 {
                let f64s = (0..n)
                    .filter(|_| bits.ratio_u64(r as u64, d as u64))
                    .count();
                let f64s = f64s as f64 / n as f64;
                assert!((f64s - p).abs() < 5.0 * se, "u64 {r}/{d}: {f64s} vs {p}");
            }
        }
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let mut bits = Bits::new(&mut rng);
        let halves = (0..n).filter(|_| bits.one_in(2)).count() as f64 / n as f64;
        let thirds = (0..n).filter(|_| bits.one_in(3)).count() as f64 / n as f64;
        assert!((halves - 0.5).abs() < 5.0 * (0.25 / n as f64).sqrt());
        assert!((thirds - 1.0 / 3.0).abs() < 5.0 * (2.0 / 9.0 / n as f64).sqrt());
    }
}
