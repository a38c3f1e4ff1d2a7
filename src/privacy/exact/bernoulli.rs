//! Exact Bernoulli trials: `Bernoulli(p)` for rational `p`, and `Bernoulli(exp(−γ))` for rational
//! `γ ≥ 0` (Canonne, Kamath, Steinke 2020, Algorithm 1).

use rand::CryptoRng;

use super::bits::Bits;
use super::rational::{Rational, U256};
use crate::error::{Error, Result};

/// `Bernoulli(p)` for a rational `p = n/d ∈ [0, 1]`: `true` with probability exactly `n/d`.
///
/// [`Bernoulli::sample`] draws a uniform integer `D ∈ [0, d)` without modulo bias (Lemire's
/// multiply-and-reject for `d ≤ 2^64`, masked rejection above) and returns `D < n`, the reduction
/// Canonne, Kamath, Steinke 2020 give for rational probabilities. (Inside the other samplers the same law is drawn as `u < n/d` for a uniform
/// `u` generated 32 bits at a time, decided by one multiplication nearly always.)
///
/// ```
/// use dprp::privacy::exact::{Bernoulli, Rational};
/// use rand::SeedableRng;
/// let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
/// let coin = Bernoulli::new(Rational::new(1, 3)?)?;
/// let heads = (0..3000).filter(|_| coin.sample(&mut rng)).count();
/// assert!((900..1100).contains(&heads));
/// # Ok::<(), dprp::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Bernoulli {
    p: Rational,
}

impl Bernoulli {
    /// `Bernoulli(p)`; errors if `p > 1`.
    pub fn new(p: Rational) -> Result<Bernoulli> {
        if p > Rational::ONE {
            return Err(Error::param(
                "Bernoulli probability",
                format!("{p} is above 1"),
            ));
        }
        Ok(Bernoulli { p })
    }

    /// The success probability.
    pub fn p(&self) -> Rational {
        self.p
    }

    /// One trial.
    pub fn sample<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> bool {
        Bits::new(rng).below_u128(self.p.den()) < self.p.num()
    }
}

/// One `Bernoulli(p)` trial for a rational `p ∈ [0, 1]` (see [`Bernoulli`]); errors if `p > 1`.
pub fn bernoulli<R: CryptoRng + ?Sized>(rng: &mut R, p: Rational) -> Result<bool> {
    Ok(Bernoulli::new(p)?.sample(rng))
}

/// `Bernoulli(exp(−γ))` for a rational `γ = n/d ≥ 0`, exactly (Canonne, Kamath, Steinke 2020,
/// "The Discrete Gaussian for Differential Privacy", Algorithm 1).
///
/// For `γ ∈ [0, 1]` (von Neumann's method): `K ← 1`; repeat `A ← Bernoulli(γ/K)`, stop at the
/// first `A = 0`, else `K ← K + 1`; return `K` odd. Then `P(K = k) = γ^{k−1}/(k−1)! − γ^k/k!` and
/// `P(K odd) = Σ_m (−γ)^m/m! = e^{−γ}`. `Bernoulli(γ/K)` is one trial of the ratio
/// `n/(d·K)`, or, when `d·K` would not fit 128 bits, `Bernoulli(γ) ∧ Bernoulli(1/K)`
/// (independent, so the product of the probabilities) — nothing overflows however large `K`
/// gets. For `γ > 1`:
/// `⌊γ⌋` independent `Bernoulli(e^{−1})` trials and one `Bernoulli(e^{−(γ − ⌊γ⌋)})`, all of which
/// must succeed (stopping at the first failure, so the cost does not grow with `γ`: about
/// `1/(1 − e^{−1}) ≈ 1.6` trials of `e^{−1}` are drawn on average when `γ` is large).
///
/// Every operation is on integers (no `exp`, no floating point), so the probability is
/// `exp(−γ)` exactly, given uniform random bits.
///
/// ```
/// use dprp::privacy::exact::{BernoulliExpNeg, Rational};
/// use rand::SeedableRng;
/// let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
/// let b = BernoulliExpNeg::new(Rational::new(5, 2)?); // e^{-2.5} ≈ 0.0821
/// let hits = (0..20_000).filter(|_| b.sample(&mut rng)).count();
/// assert!((1450..1850).contains(&hits));
/// # Ok::<(), dprp::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct BernoulliExpNeg {
    gamma: Rational,
}

impl BernoulliExpNeg {
    /// `Bernoulli(exp(−γ))`; every `γ ≥ 0` is accepted.
    pub fn new(gamma: Rational) -> BernoulliExpNeg {
        BernoulliExpNeg { gamma }
    }

    /// The parameter `γ`.
    pub fn gamma(&self) -> Rational {
        self.gamma
    }

    /// One trial.
    pub fn sample<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> bool {
        let mut bits = Bits::new(rng);
        exp_neg(&mut bits, self.gamma.num(), self.gamma.den())
    }
}

/// One `Bernoulli(exp(−γ))` trial for a rational `γ ≥ 0` (see [`BernoulliExpNeg`]).
pub fn bernoulli_exp_neg<R: CryptoRng + ?Sized>(rng: &mut R, gamma: Rational) -> bool {
    BernoulliExpNeg::new(gamma).sample(rng)
}

/// `Bernoulli(exp(−n/d))`, `d ≥ 1`.
pub(crate) fn exp_neg<R: CryptoRng + ?Sized>(bits: &mut Bits<'_, R>, n: u128, d: u128) -> bool {
    let mut whole = n / d;
    while whole > 0 {
        if !exp_neg_one(bits) {
            return false;
        }
        whole -= 1;
    }
    exp_neg_frac(bits, n % d, d)
}

/// `Bernoulli(exp(−n/d))` for `n/d` given as a 256-bit numerator (the discrete Gaussian's
/// `z²/D`): the integer part is peeled off one `Bernoulli(e^{−1})` at a time by subtracting `d`,
/// so no 256-bit division is ever needed, and the loop ends at the first failure.
pub(crate) fn exp_neg_wide<R: CryptoRng + ?Sized>(
    bits: &mut Bits<'_, R>,
    mut n: U256,
    d: u128,
) -> bool {
    while n.ge_u128(d) {
        if !exp_neg_one(bits) {
            return false;
        }
        n = n.sub_u128(d);
    }
    exp_neg_frac(bits, n.lo, d)
}

/// `Bernoulli(exp(−r/d))` for `0 ≤ r ≤ d` (Algorithm 1 with `γ = r/d ∈ [0, 1]`).
#[inline]
pub(crate) fn exp_neg_frac<R: CryptoRng + ?Sized>(
    bits: &mut Bits<'_, R>,
    r: u128,
    d: u128,
) -> bool {
    if r == 0 {
        return true;
    }
    // K = 1: A ~ Bernoulli(γ).
    if !bits.ratio_u128(r, d) {
        return true; // stopped at K = 1 (odd)
    }
    let mut k: u64 = 2;
    // K ≥ 2: A ~ Bernoulli(γ/K) — one trial of r/(d·K), or Bernoulli(1/K) ∧ Bernoulli(γ) when
    // d·K does not fit 128 bits (the same probability). The counter would need 2^64 successive
    // successes (each of probability ≤ 1/K) to saturate: it never does.
    loop {
        let a = match d.checked_mul(k as u128) {
            Some(dk) => bits.ratio_u128(r, dk),
            None => bits.one_in(k) && bits.ratio_u128(r, d),
        };
        if !a {
            break;
        }
        k = k.saturating_add(1);
    }
    k % 2 == 1
}

/// `Bernoulli(exp(−r/d))` for `0 ≤ r ≤ d` with 64-bit numbers (the discrete Laplace's
/// `exp(−U/t)`).
#[inline]
pub(crate) fn exp_neg_frac_u64<R: CryptoRng + ?Sized>(
    bits: &mut Bits<'_, R>,
    r: u64,
    d: u64,
) -> bool {
    if r == 0 {
        return true;
    }
    if !bits.ratio_u64(r, d) {
        return true;
    }
    let mut k: u64 = 2;
    // A ~ Bernoulli(γ/K): d·K < 2^128 always.
    while bits.ratio_u128(r as u128, d as u128 * k as u128) {
        k = k.saturating_add(1);
    }
    k % 2 == 1
}

/// `Bernoulli(e^{−1})`: Algorithm 1 with `γ = 1`, where `A ~ Bernoulli(1/K)` and the first trial
/// (`K = 1`) always succeeds.
#[inline]
pub(crate) fn exp_neg_one<R: CryptoRng + ?Sized>(bits: &mut Bits<'_, R>) -> bool {
    let mut k: u64 = 2;
    while bits.one_in(k) {
        k = k.saturating_add(1);
    }
    k % 2 == 1
}
