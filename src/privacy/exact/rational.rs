//! Exact non-negative rationals for sampler parameters, and the 256-bit products the discrete
//! Gaussian's acceptance test needs.
//!
//! A [`Rational`] is `num/den` with `u128` numerator and denominator, kept in lowest terms. 128
//! bits are enough for every parameter the samplers take: the discrete Gaussian with
//! `σ² = a/b` needs `2·a·b·t² < 2^128` (`t = ⌊σ⌋ + 1`, see
//! [`DiscreteGaussian`](super::DiscreteGaussian)), which every `σ²` converted exactly from an
//! `f64` in `[2^-12, 2^62]` satisfies (σ from about 0.016 to 2·10⁹), and the one product that
//! does not fit (`z²` in the acceptance probability) is formed as a [`U256`] and never divided.
//! So no bignum crate is needed.

use std::cmp::Ordering;
use std::fmt;

use crate::error::{Error, Result};

/// A non-negative rational number `num/den` in lowest terms (`den ≥ 1`), both `u128`.
///
/// Sampler parameters (probabilities, `γ` of `exp(−γ)`, scales, `σ²`) are `Rational`s so that
/// the sampling path needs no floating point. Build one from integers with [`Rational::new`] or
/// [`Rational::integer`], or from a floating-point value computed by an accountant with
/// [`Rational::from_f64`] (exact) or [`Rational::from_f64_up`] (rounded up to a bounded
/// denominator).
///
/// ```
/// use dprp::privacy::exact::Rational;
/// let r = Rational::new(6, 4)?;
/// assert_eq!((r.num(), r.den()), (3, 2));
/// // 0.1 is not 1/10 in binary: the exact value of the f64 nearest to 0.1.
/// let x = Rational::from_f64(0.1)?;
/// assert_eq!((x.num(), x.den()), (3_602_879_701_896_397, 1 << 55));
/// // Rounded up to a multiple of 2^-8: 26/256 = 13/128 ≥ 0.1.
/// let y = Rational::from_f64_up(0.1, 8)?;
/// assert_eq!((y.num(), y.den()), (13, 128));
/// # Ok::<(), dprp::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rational {
    num: u128,
    den: u128,
}

/// Greatest common divisor (binary algorithm); `gcd(0, b) = b`.
pub(crate) fn gcd(mut a: u128, mut b: u128) -> u128 {
    if a == 0 {
        return b;
    }
    if b == 0 {
        return a;
    }
    let shift = (a | b).trailing_zeros();
    a >>= a.trailing_zeros();
    loop {
        b >>= b.trailing_zeros();
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        b -= a;
        if b == 0 {
            return a << shift;
        }
    }
}

/// The exact value of a finite non-negative `f64` as `m·2^e` with `m` odd (or `m = 0`).
fn decompose(x: f64, name: &str) -> Result<(u64, i32)> {
    if !x.is_finite() || x < 0.0 {
        return Err(Error::param(
            name,
            format!("{x} is not a finite non-negative number"),
        ));
    }
    if x == 0.0 {
        return Ok((0, 0));
    }
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp - 1075)
    };
    let tz = m.trailing_zeros();
    Ok((m >> tz, e + tz as i32))
}

impl Rational {
    /// Zero.
    pub const ZERO: Rational = Rational { num: 0, den: 1 };
    /// One.
    pub const ONE: Rational = Rational { num: 1, den: 1 };

    /// `num/den`, reduced to lowest terms. Errors if `den = 0`.
    pub fn new(num: u128, den: u128) -> Result<Rational> {
        if den == 0 {
            return Err(Error::param(
                "rational",
                format!("{num}/0 has a zero denominator"),
            ));
        }
        let g = gcd(num, den);
        Ok(Rational {
            num: num / g,
            den: den / g,
        })
    }

    /// The integer `n`.
    pub const fn integer(n: u128) -> Rational {
        Rational { num: n, den: 1 }
    }

    /// The exact value of a finite, non-negative `f64` (every such float is a dyadic rational
    /// `m·2^e`). Errors for NaN, ±∞, negative values, and values whose exact fraction does not fit
    /// 128 bits: `x ≥ 2^128`, or a denominator above `2^127` (`x = m·2^e` with `m` odd needs
    /// `e ≥ −127`, which every value from `2^-74` up meets).
    pub fn from_f64(x: f64) -> Result<Rational> {
        let (m, e) = decompose(x, "rational from f64")?;
        if m == 0 {
            return Ok(Rational::ZERO);
        }
        let m = m as u128;
        if e >= 0 {
            let e = e as u32;
            if e > m.leading_zeros() {
                return Err(Error::param(
                    "rational from f64",
                    format!("{x} is 2^128 or more; the numerator must fit 128 bits"),
                ));
            }
            Ok(Rational {
                num: m << e,
                den: 1,
            })
        } else {
            let s = (-e) as u32;
            if s > 127 {
                return Err(Error::param(
                    "rational from f64",
                    format!(
                        "{x:e} needs the denominator 2^{s}; at most 2^127 is supported (use \
                         Rational::from_f64_up to round it to a coarser denominator)"
                    ),
                ));
            }
            Ok(Rational {
                num: m,
                den: 1 << s,
            })
        }
    }

    /// The smallest multiple of `2^-den_bits` that is `≥ x` (so never below `x`: use it for a
    /// noise scale, where rounding up keeps the privacy guarantee), reduced. `den_bits ≤ 127`.
    /// Errors as [`Rational::from_f64`] for non-finite, negative or too large values.
    pub fn from_f64_up(x: f64, den_bits: u32) -> Result<Rational> {
        if den_bits > 127 {
            return Err(Error::param(
                "rational from f64",
                format!("a denominator of 2^{den_bits} is over the supported 2^127"),
            ));
        }
        let (m, e) = decompose(x, "rational from f64")?;
        if m == 0 {
            return Ok(Rational::ZERO);
        }
        let m = m as u128;
        let shift = e + den_bits as i32; // x·2^den_bits = m·2^shift
        let k = if shift >= 0 {
            let shift = shift as u32;
            if shift > m.leading_zeros() {
                return Err(Error::param(
                    "rational from f64",
                    format!("{x} times 2^{den_bits} is 2^128 or more"),
                ));
            }
            m << shift
        } else {
            let s = (-shift) as u32;
            if s >= 64 {
                1 // 0 < m·2^shift < 1 (m < 2^53)
            } else {
                let q = m >> s;
                if q << s == m {
                    q
                } else {
                    q + 1
                }
            }
        };
        Rational::new(k, 1u128 << den_bits)
    }

    /// The numerator (lowest terms).
    pub const fn num(&self) -> u128 {
        self.num
    }

    /// The denominator (lowest terms, at least 1).
    pub const fn den(&self) -> u128 {
        self.den
    }

    /// `⌊num/den⌋`.
    pub const fn floor(&self) -> u128 {
        self.num / self.den
    }

    /// Whether the value is 0.
    pub const fn is_zero(&self) -> bool {
        self.num == 0
    }

    /// The nearest `f64` (for messages and reports; never used on a sampling path).
    pub fn to_f64(&self) -> f64 {
        // Both conversions round; good to a few ulps, which is all a display needs.
        let q = self.num / self.den;
        let r = self.num % self.den;
        q as f64 + r as f64 / self.den as f64
    }
}

impl PartialOrd for Rational {
    fn partial_cmp(&self, other: &Rational) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Rational {
    /// Exact comparison by cross-multiplication in 256 bits.
    fn cmp(&self, other: &Rational) -> Ordering {
        U256::mul(self.num, other.den).cmp(&U256::mul(other.num, self.den))
    }
}

impl fmt::Display for Rational {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}

/// An unsigned 256-bit integer, only as wide as the acceptance test of the discrete Gaussian
/// needs: products of two `u128`, comparison, and subtraction of a `u128`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct U256 {
    // Field order matters: the derived `Ord` compares `hi` first.
    pub(crate) hi: u128,
    pub(crate) lo: u128,
}

impl U256 {
    /// The full product `a·b` (schoolbook on 64-bit halves).
    pub(crate) fn mul(a: u128, b: u128) -> U256 {
        let mask = u64::MAX as u128;
        let (a0, a1) = (a & mask, a >> 64);
        let (b0, b1) = (b & mask, b >> 64);
        let p00 = a0 * b0;
        let p01 = a0 * b1;
        let p10 = a1 * b0;
        let p11 = a1 * b1;
        // At most 3·(2^64 − 1) < 2^128.
        let mid = (p00 >> 64) + (p01 & mask) + (p10 & mask);
        U256 {
            lo: (p00 & mask) | (mid << 64),
            hi: p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64),
        }
    }

    /// `self ≥ d`.
    pub(crate) fn ge_u128(&self, d: u128) -> bool {
        self.hi > 0 || self.lo >= d
    }

    /// `self − d`; requires `self ≥ d`.
    pub(crate) fn sub_u128(self, d: u128) -> U256 {
        let (lo, borrow) = self.lo.overflowing_sub(d);
        U256 {
            lo,
            hi: self.hi - borrow as u128,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_product_matches_split_check() {
        let cases = [
            (0u128, 5u128),
            (u128::MAX, u128::MAX),
            (u128::MAX, 2),
            (1 << 100, 1 << 100),
            (
                0x1234_5678_9abc_def0_0fed_cba9_8765_4321,
                0xffff_0000_ffff_0000_1234,
            ),
        ];
        for (a, b) in cases {
            let p = U256::mul(a, b);
            // (a·b) mod 2^128 is the wrapping product; the high half checked through
            // (a·b − lo)/2^128 on the 64-bit split of b.
            assert_eq!(p.lo, a.wrapping_mul(b), "{a} {b}");
            let b_lo = b & u64::MAX as u128;
            let b_hi = b >> 64;
            let q1 = U256::mul(a, b_lo);
            let q2 = U256::mul(a, b_hi);
            // a·b = q1 + q2·2^64
            let lo2 = q2.lo << 64;
            let (lo, c) = q1.lo.overflowing_add(lo2);
            let hi = q1.hi + (q2.lo >> 64) + (q2.hi << 64) + c as u128;
            assert_eq!((p.hi, p.lo), (hi, lo), "{a} {b}");
        }
        assert_eq!(U256::mul(u128::MAX, u128::MAX).hi, u128::MAX - 1);
    }

    #[test]
    fn gcd_and_ordering() {
        assert_eq!(gcd(0, 7), 7);
        assert_eq!(gcd(12, 18), 6);
        assert_eq!(gcd(1 << 90, 3 << 40), 1 << 40);
        let a = Rational::new(1, 3).unwrap();
        let b = Rational::new(333_333, 1_000_000).unwrap();
        assert!(a > b);
        assert_eq!(
            Rational::new(u128::MAX, u128::MAX - 1)
                .unwrap()
                .cmp(&Rational::new(u128::MAX - 1, u128::MAX - 2).unwrap()),
            Ordering::Less
        );
    }
}
