//! Exact geometric and discrete Laplace samplers for a rational scale (Canonne, Kamath, Steinke
//! 2020, Algorithm 2).

use rand::CryptoRng;

use super::bernoulli::{exp_neg_frac_u64, exp_neg_one};
use super::bits::Bits;
use super::rational::Rational;
use crate::error::{Error, Result};

/// The largest value the geometric and discrete Laplace samplers return (`i64::MAX`); see
/// [`Geometric`] for what happens above it.
pub const MAX_MAGNITUDE: u64 = i64::MAX as u64;

/// Check a scale `t/s` and return `(t, s)` as 64-bit integers.
fn scale_parts(scale: Rational, name: &str) -> Result<(u64, u64)> {
    if scale.is_zero() {
        return Err(Error::param(name, "the scale must be positive, not 0"));
    }
    match (u64::try_from(scale.num()), u64::try_from(scale.den())) {
        (Ok(t), Ok(s)) => Ok((t, s)),
        _ => Err(Error::param(
            name,
            format!(
                "the scale {scale} needs a numerator and a denominator below 2^64 (in lowest \
                 terms); round it, e.g. with Rational::from_f64_up"
            ),
        )),
    }
}

/// The geometric law on `{0, 1, 2, …}` with `P(Y = y) = (1 − e^{−1/τ})·e^{−y/τ}` for a rational
/// scale `τ = t/s > 0`, sampled exactly by the first steps of Canonne, Kamath, Steinke 2020,
/// Algorithm 2.
///
/// Draw `U` uniform on `{0, …, t−1}` and keep it with probability `exp(−U/t)` (else start
/// again); draw `V`, the number of successes before the first failure of independent
/// `Bernoulli(e^{−1})` trials; then `X = U + t·V` has `P(X = x) ∝ e^{−x/t}` (a pair `(u, v)` has
/// probability `∝ e^{−u/t}·e^{−v}`), and `Y = ⌊X/s⌋` has `P(Y = y) ∝ Σ_{x: ⌊x/s⌋ = y} e^{−x/t} ∝
/// e^{−ys/t}`. Each step is a uniform integer or a [`BernoulliExpNeg`](super::BernoulliExpNeg)
/// trial: integers only.
///
/// Both `t` and `s` (the scale in lowest terms) must be below `2^64`. A value above
/// [`MAX_MAGNITUDE`] (`2^63 − 1`) is rejected and drawn again, so the law is the geometric law
/// conditioned on fitting an `i64`; that changes each probability by a factor of at most
/// `1/(1 − e^{−(2^63−1)/τ})`, i.e. not at all in any floating-point sense for `τ < 2^50`.
///
/// ```
/// use dprp::privacy::exact::{Geometric, Rational};
/// use rand::SeedableRng;
/// let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
/// let g = Geometric::new(Rational::integer(10))?; // mean 1/(e^{1/10} − 1) ≈ 9.51
/// let mean = (0..20_000).map(|_| g.sample(&mut rng) as f64).sum::<f64>() / 20_000.0;
/// assert!((mean - 9.51).abs() < 0.3);
/// # Ok::<(), dprp::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Geometric {
    scale: Rational,
    t: u64,
    s: u64,
}

impl Geometric {
    /// The geometric law of scale `τ = t/s`; errors if `τ = 0` or if `t` or `s` (lowest terms)
    /// is `2^64` or more.
    pub fn new(scale: Rational) -> Result<Geometric> {
        let (t, s) = scale_parts(scale, "geometric scale")?;
        Ok(Geometric { scale, t, s })
    }

    /// The scale `τ`.
    pub fn scale(&self) -> Rational {
        self.scale
    }

    /// One sample.
    pub fn sample<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> u64 {
        geometric(&mut Bits::new(rng), self.t, self.s)
    }
}

/// `Y = ⌊X/s⌋` with `P(X = x) ∝ e^{−x/t}` (see [`Geometric`]).
#[inline]
pub(crate) fn geometric<R: CryptoRng + ?Sized>(bits: &mut Bits<'_, R>, t: u64, s: u64) -> u64 {
    loop {
        let u = bits.below_u64(t);
        if !exp_neg_frac_u64(bits, u, t) {
            continue;
        }
        let mut v: u64 = 0;
        // 2^64 successive successes of probability e^{-1} never happen; saturation only keeps
        // the counter well defined.
        while exp_neg_one(bits) {
            v = v.saturating_add(1);
        }
        // u < t < 2^64 and v < 2^64, so x < 2^128.
        let x = u as u128 + (t as u128) * (v as u128);
        let y = if s == 1 { x } else { x / s as u128 };
        if y <= MAX_MAGNITUDE as u128 {
            return y as u64;
        }
    }
}

/// The discrete Laplace law on `ℤ` with `P(Y = y) = (1 − e^{−1/τ})/(1 + e^{−1/τ})·e^{−|y|/τ}` for
/// a rational scale `τ = t/s > 0`, sampled exactly (Canonne, Kamath, Steinke 2020,
/// Algorithm 2).
///
/// A [`Geometric`] magnitude `Y` and a uniform sign bit `B`; the pair `(B = 1, Y = 0)` (a
/// negative zero, which would double the mass at 0) is rejected and everything drawn again;
/// otherwise `(1 − 2B)·Y` is returned. Same parameter limits as [`Geometric`]
/// (`|Y| ≤ 2^63 − 1`).
///
/// ```
/// use dprp::privacy::exact::{DiscreteLaplace, Rational};
/// use rand::SeedableRng;
/// let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
/// let lap = DiscreteLaplace::new(Rational::new(7, 2)?)?; // scale 3.5
/// let mut y = vec![0i64; 10_000];
/// lap.fill(&mut rng, &mut y);
/// let mean = y.iter().sum::<i64>() as f64 / 1e4;
/// assert!(mean.abs() < 0.2);
/// # Ok::<(), dprp::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct DiscreteLaplace {
    geo: Geometric,
}

impl DiscreteLaplace {
    /// The discrete Laplace law of scale `τ = t/s` (limits as [`Geometric::new`]).
    pub fn new(scale: Rational) -> Result<DiscreteLaplace> {
        let (t, s) = scale_parts(scale, "discrete Laplace scale")?;
        Ok(DiscreteLaplace {
            geo: Geometric { scale, t, s },
        })
    }

    /// The scale `τ`.
    pub fn scale(&self) -> Rational {
        self.geo.scale
    }

    /// One sample.
    pub fn sample<R: CryptoRng + ?Sized>(&self, rng: &mut R) -> i64 {
        discrete_laplace(&mut Bits::new(rng), self.geo.t, self.geo.s)
    }

    /// Fill `out` with independent samples (one bit buffer for the whole slice).
    pub fn fill<R: CryptoRng + ?Sized>(&self, rng: &mut R, out: &mut [i64]) {
        let mut bits = Bits::new(rng);
        for o in out {
            *o = discrete_laplace(&mut bits, self.geo.t, self.geo.s);
        }
    }
}

/// One discrete Laplace sample of scale `τ = t/s` (see [`DiscreteLaplace`]).
#[inline]
pub(crate) fn discrete_laplace<R: CryptoRng + ?Sized>(
    bits: &mut Bits<'_, R>,
    t: u64,
    s: u64,
) -> i64 {
    loop {
        let y = geometric(bits, t, s);
        let negative = bits.bit();
        if negative && y == 0 {
            continue;
        }
        // y ≤ 2^63 − 1, so both signs fit an i64.
        let y = y as i64;
        return if negative { -y } else { y };
    }
}

/// Fill `out` with discrete Laplace samples of scale `τ` (see [`DiscreteLaplace`]); errors for a
/// scale outside the supported range.
pub fn fill_discrete_laplace<R: CryptoRng + ?Sized>(
    rng: &mut R,
    scale: Rational,
    out: &mut [i64],
) -> Result<()> {
    DiscreteLaplace::new(scale)?.fill(rng, out);
    Ok(())
}
