//! Exact binomial samplers: `Bin(N, ½)` as popcounts of CSPRNG words, and `Bin(N, p)` for any
//! rational `p` by deciding the `N` trials in parallel, one bit of `p` at a time.

use rand::CryptoRng;

use super::bits::Bits;
use super::rational::Rational;
use crate::error::{Error, Result};

/// One `Bin(n, ½)` sample: the number of ones among `n` uniform random bits (popcounts of
/// `⌊n/64⌋` CSPRNG words plus, when `64 ∤ n`, the low `n mod 64` bits of one more word). Exact
/// for every `n`, about `n/64` words of ChaCha20 per sample (the cost is the generator's).
///
/// ```
/// use dprp::privacy::exact::binomial_half;
/// use rand::SeedableRng;
/// let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(2);
/// let k = binomial_half(&mut rng, 1000);
/// assert!((400..=600).contains(&k));
/// ```
pub fn binomial_half<R: CryptoRng + ?Sized>(rng: &mut R, n: u64) -> u64 {
    Bits::new(rng).ones(n)
}

/// Fill `out` with independent `Bin(n, ½)` samples. The bits left in a word after one sample
/// serve the next, so `n` need not be a multiple of 64 to use every generated bit.
pub fn fill_binomial_half<R: CryptoRng + ?Sized>(rng: &mut R, n: u64, out: &mut [u64]) {
    let mut bits = Bits::new(rng);
    for o in out {
        *o = bits.ones(n);
    }
}

/// `Bin(n, p)` for a rational `p = r/d ∈ [0, 1]`, exact.
///
/// Each of the `n` trials is `u_i < p` for a uniform `u_i ∈ [0, 1)`; the comparison is decided
/// at the first binary digit where `u_i` and `p` differ (success if `p`'s digit is 1). Run all
/// trials together, digit by digit of `p` (long division of `r` by `d`): at each digit, among
/// the `m` still undecided trials, the number whose random digit differs from `p`'s is
/// `Bin(m, ½)` — one popcount pass of [`binomial_half`] over `m` bits — and those trials are
/// decided (successes if `p`'s digit is 1, failures if 0); the rest stay undecided. When the
/// expansion of `p` ends (`r = 0`, after at most `b` digits for a dyadic `p = j/2^b`) every
/// undecided trial has `u_i ≥ p` and fails. About half the undecided trials are decided at each
/// digit, so a sample costs about `2n` random bits (`n/32` words) and `O(log n)` passes on
/// average, for every `p` — dyadic or not — instead of `n` separate trials. For `p = ½` it is
/// one pass, the same as [`binomial_half`].
///
/// ```
/// use dprp::privacy::exact::{Binomial, Rational};
/// use rand::SeedableRng;
/// let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(4);
/// let b = Binomial::new(2000, Rational::new(3, 8)?)?; // mean 750, sd ≈ 21.7
/// let k = b.sample(&mut rng);
/// assert!((650..=850).contains(&k));
/// # Ok::<(), dprp::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Binomial {
    n: u64,
    p: Rational,
}

impl Binomial {
    /// `Bin(n, p)`; errors if `p > 1`. Every `n` is accepted (the cost is about `n/32` words of
    /// the generator per sample).
    pub fn new(n: u64, p: Rational) -> Result<Binomial> {
        if p > Rational::ONE {
            return Err(Error::param(
                "binomial probability",
                format!("{p} is above 1"),
            ));
        }
        Ok(Binomial { n, p })
    }

    /// The number of trials.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The success probability.
    pub fn p(&self) -> Rational {
        self.p
    }

    /// One sample.
    pub fn sample<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> u64 {
        binomial_bits(&mut Bits::new(rng), self.n, self.p.num(), self.p.den())
    }

    /// Fill `out` with independent samples (one bit buffer for the whole slice).
    pub fn fill<R: CryptoRng + ?Sized>(&self, rng: &mut R, out: &mut [u64]) {
        let mut bits = Bits::new(rng);
        for o in out {
            *o = binomial_bits(&mut bits, self.n, self.p.num(), self.p.den());
        }
    }
}

/// One `Bin(n, p)` sample for a rational `p ∈ [0, 1]` (see [`Binomial`]); errors if `p > 1`.
pub fn binomial<R: CryptoRng + ?Sized>(rng: &mut R, n: u64, p: Rational) -> Result<u64> {
    Ok(Binomial::new(n, p)?.sample(rng))
}

/// `Bin(n, r/d)`, `r ≤ d`, `d ≥ 1`, digit by digit of `r/d` (see [`Binomial`]).
fn binomial_bits<R: CryptoRng + ?Sized>(bits: &mut Bits<'_, R>, n: u64, r: u128, d: u128) -> u64 {
    if r >= d {
        return n;
    }
    let mut r = r;
    let mut undecided = n;
    let mut successes = 0u64;
    while undecided > 0 && r > 0 {
        // Next binary digit of r/d (overflow-free doubling: 2r ≥ d ⇔ r ≥ d − r).
        let pbit = r >= d - r;
        r = if pbit { r - (d - r) } else { r + r };
        let ones = bits.ones(undecided);
        if pbit {
            // Trials whose digit is 0 < 1: u < p, successes.
            let zeros = undecided - ones;
            successes += zeros;
            undecided = ones;
        } else {
            // Trials whose digit is 1 > 0: u > p, failures.
            undecided -= ones;
        }
    }
    successes
}
