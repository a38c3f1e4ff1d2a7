//! Randomised response on signs (Li & Li §4; DESIGN.md §4), with exact coin flips.
//!
//! * Plain randomised response keeps a sign with probability `e^{ε'}/(1+e^{ε'})` and flips it with
//!   probability `q = 1/(1+e^{ε'})`; the ratio of the two output probabilities for any two inputs
//!   is at most `e^{ε'}`, so each sign is ε'-DP.
//! * Smooth flipping (Algorithm 4, Theorem 4.6) flips sign `j` with `q_j = 1/(1+e^{ε'·L_j})`, where
//!   `L_j = ⌈|z_j| / c_j⌉` is the number of β-steps needed to change the sign (`c_j` the largest
//!   change one β-step can make). A β-neighbour changes `L_j` by at most one, and the sign only when
//!   `L_j ≤ 1`; every output-probability ratio is then at most `e^{ε'}` (checked exhaustively in
//!   the tests).
//!
//! # Exact coins, rounded toward ½
//!
//! A flip is never decided by `uniform_f64 < q`. Each flip probability is an exact dyadic rational
//! `P = Q/2⁶⁴` ([`Flip`]), and a flip happens iff a uniform 64-bit word `w` is `< Q`: an exact
//! comparison of 64 uniform bits with the binary expansion of `P`, so `Pr(flip) = Q/2⁶⁴` exactly
//! (given uniform words). `Q` is computed without trusting floating point:
//!
//! 1. `ε'` is an `f64`, hence exactly `m·2^e`. `exp_neg_upper` returns a **rigorous upper
//!    bound** `U ≥ e^{−ε'}` in 126-bit fixed point: `y = ε'/2⁷` (exact shift, truncated *down* into
//!    the fixed point, which only raises `e^{−y}`), the alternating Taylor series of `e^{−y}` summed
//!    to an even term (for `0 ≤ y ≤ ½` the terms decrease, so that partial sum is `≥ e^{−y}`) with
//!    positive terms rounded up and negative terms rounded down, then squared seven times with
//!    every product rounded up. `ε' ≥ 64` is evaluated at 64 (`e^{−ε'} ≤ e^{−64}`; the flip
//!    probability is then below 2⁻⁹² and rounds to the smallest positive `Q`, 1, either way).
//! 2. `q = 1/(1+e^{ε'}) = e^{−ε'}/(1+e^{−ε'})` increases with `e^{−ε'}`, so
//!    `Q = ⌈2⁶⁴·U/(1+U)⌉` (exact integer division, rounded up) gives `P = Q/2⁶⁴ ≥ q`: the
//!    probability is rounded **toward ½**, never below the calibrated one, and `U ≤ 1` keeps
//!    `P ≤ ½`. `P ≥ q` is exactly the randomised-response condition `(1 − P)/P ≤ e^{ε'}`.
//!
//! The tests re-check `(2⁶⁴ − Q)/Q ≤ e^{ε'}` in exact rational arithmetic against a series lower
//! bound of `e^{ε'}`, and that `Q − 1` fails it (so `Q` is the smallest admissible numerator).
//!
//! **Smooth flipping** needs more than `P_L ≥ q_L` per level: its proof compares *neighbouring*
//! levels, `q_L/q_{L+1} ≤ e^{ε'}` and `(1−q_{L+1})/(1−q_L) ≤ e^{ε'}`, and rounding each level up on
//! its own can break the first where `q` is a few units of 2⁻⁶⁴ (e.g. `Q_L = 2`, `Q_{L+1} = 1`, a
//! ratio of 2 at tiny ε'). [`smooth_flip_table`] therefore takes `Q_L = max(⌈2⁶⁴·U_L/(1+U_L)⌉,
//! ⌈Q_{L−1}·U₁⌉)` with `U_L ≥ e^{−ε'L}` and `U₁ ≥ e^{−ε'}`, so `Q_{L−1}/Q_L ≤ 1/U₁ ≤ e^{ε'}`; the
//! table is non-increasing and `Q_L ≤ 2⁶³`, from which the complement condition follows:
//! `2⁶⁴ − Q_{L+1} ≤ 2⁶⁴ − Q_L e^{−ε'} ≤ e^{ε'}(2⁶⁴ − Q_L)` ⟺ `Q_L(e^{ε'} − e^{−ε'}) ≤
//! 2⁶⁴(e^{ε'} − 1)` ⟺ `Q_L ≤ 2⁶⁴·e^{ε'}/(1+e^{ε'})`, true as the right side is `≥ 2⁶³`. The sign
//! can change only between levels ≤ 1, where `P_1 ≥ q_1` is the randomised-response condition.
//! The tests check both ratios for every entry of the table exactly.
//!
//! **Splitting ε.** `ε' = ε/n` is rounded *down* ([`split_epsilon`]) so that `n·ε' ≤ ε` holds
//! exactly: `n` signs at `ε'` each compose to at most ε.
//!
//! Cost: one `Q` takes about a microsecond (30 Taylor terms and 7 squarings of 256-bit products,
//! one 128-step division); a mechanism computes its flips once, not per sign.

pub use super::samplers::flip::Flip;
use crate::error::{Error, Result};

/// `q = 1/(1+e^{ε'})` in floating point, computed without overflow for large ε': the *nominal*
/// flip probability, for display and for estimators. Sampling uses [`Flip`], whose dyadic
/// probability is at least this (rounded toward ½, rigorously).
pub fn rr_flip_probability(eps_prime: f64) -> f64 {
    if eps_prime > 0.0 {
        let e = (-eps_prime).exp();
        e / (1.0 + e)
    } else {
        1.0 / (1.0 + eps_prime.exp())
    }
}

/// Smooth flipping's nominal probability `q(L) = 1/(1+e^{ε'·L})` (floating point; see
/// [`smooth_flip_table`] for what is sampled).
pub fn smooth_flip_probability(steps: u64, eps_prime: f64) -> f64 {
    rr_flip_probability(eps_prime * steps as f64)
}

/// `L = ⌈|z|/c⌉`: the number of steps of size `c` needed to reach (or cross) zero from `z`.
pub fn steps_to_flip(z: f64, c: f64) -> u64 {
    let l = (z.abs() / c).ceil();
    if l.is_finite() && l < u64::MAX as f64 {
        l as u64
    } else {
        u64::MAX
    }
}

/// Probability of releasing `out` (±1) for a sign `s` (±1) flipped with probability `q`.
pub fn output_probability(s: i8, out: i8, q: f64) -> f64 {
    if s == out {
        1.0 - q
    } else {
        q
    }
}

/// The largest `f64` `ε'` with `n·ε' ≤ ε` **exactly** (`ε/n` rounded down): `n` mechanisms at
/// `ε'` each compose to at most `ε`, whatever the rounding of the division. The check uses a fused
/// multiply-add, whose single rounding keeps the sign of `ε'·n − ε` exact. `n = 0` is treated as 1;
/// a non-finite or negative `ε` is returned as it is (callers validate ε).
pub fn split_epsilon(epsilon: f64, n: u64) -> f64 {
    let nf = n.max(1) as f64; // exact for n < 2⁵³; larger n only make ε' smaller below
    let mut e = epsilon / nf;
    if !(e.is_finite() && e > 0.0) {
        return e;
    }
    while e > 0.0 && e.mul_add(nf, -epsilon) > 0.0 {
        e = f64::from_bits(e.to_bits() - 1);
    }
    e
}

/// Fractional bits of the fixed-point bounds: a value `v ∈ [0, 2]` is held as an integer near
/// `v·2¹²⁶`.
const FRAC: u32 = 126;
/// 1 in that fixed point.
pub(crate) const ONE: u128 = 1 << FRAC;
/// Taylor terms of `e^{−y}` summed (even, so the alternating partial sum is an upper bound); at
/// `y ≤ ½` the first omitted term is below `2⁻³¹/31! < 2⁻¹⁴³`.
const TAYLOR_TERMS: u128 = 30;
/// `ε'` is reduced by `2^SQUARINGS` before the series (so `y ≤ ½` for `ε' < 64`).
const SQUARINGS: u32 = 7;

/// `⌊a·b / 2¹²⁶⌋` (`up = false`) or `⌈a·b / 2¹²⁶⌉` (`up = true`) from the exact 256-bit product;
/// saturates at `u128::MAX` (never reached for the operands used here, all `≤ 2¹²⁷`).
fn mul_fixed(a: u128, b: u128, up: bool) -> u128 {
    let mask = u64::MAX as u128;
    let (a1, a0, b1, b0) = (a >> 64, a & mask, b >> 64, b & mask);
    let (lo, mid1, mid2, hi) = (a0 * b0, a0 * b1, a1 * b0, a1 * b1);
    let (mid, carry_mid) = mid1.overflowing_add(mid2);
    let (low, carry_low) = lo.overflowing_add(mid << 64);
    let high = hi + (mid >> 64) + ((carry_mid as u128) << 64) + carry_low as u128;
    if high >> FRAC != 0 {
        return u128::MAX;
    }
    let q = (high << (128 - FRAC)) | (low >> FRAC);
    let rest = low & (ONE - 1);
    q.saturating_add((up && rest != 0) as u128)
}

/// Whether `m·2^e ≥ 64`.
fn at_least_64(m: u128, e: i32) -> bool {
    let bits = 128 - m.leading_zeros() as i32; // m < 2^bits
    if e >= 0 {
        bits + e > 7 || (m << e) >= 64
    } else if -e >= 122 {
        false // m < 2^128 ≤ 64·2^{−e}
    } else {
        m >= 64u128 << -e
    }
}

/// A rigorous upper bound `U ≥ e^{−x}·2¹²⁶` (and `U ≤ 2¹²⁶`) for the exact `x = m·2^e ≥ 0`
/// (module documentation, step 1; `x ≥ 64` as `e^{−64}·e^{−(x−64)}`, and one unit from
/// `x ≥ 88` on).
pub(crate) fn exp_neg_upper(m: u128, e: i32) -> u128 {
    exp_neg_bound(m, e, true)
}

/// A rigorous lower bound `L ≤ e^{−x}·2¹²⁶` for the exact `x = m·2^e ≥ 0`: the mirror image of
/// [`exp_neg_upper`] — `y = x/2⁷` rounded *up* into the fixed point, the alternating series
/// summed to an odd term (for `0 ≤ y ≤ ½` that partial sum is `≤ e^{−y}`) with positive terms
/// rounded down and negative terms rounded up, squared seven times rounding down (`x ≥ 64` as
/// for the upper bound; 0 from `x ≥ 88` on).
pub(crate) fn exp_neg_lower(m: u128, e: i32) -> u128 {
    exp_neg_bound(m, e, false)
}

fn exp_neg_bound(m: u128, e: i32, upper: bool) -> u128 {
    if m == 0 {
        return ONE;
    }
    if at_least_64(m, e) {
        // x = 64 + r: e^{−x} = e^{−64}·e^{−r}, the product rounded the same way (r = x − 64 is
        // exact in f64 for x < 128); below 2⁻¹²⁶ (x ≥ 88 > 126·ln 2) one unit bounds it from
        // above and zero from below
        let x = libm::ldexp(m as f64, e);
        if x >= 88.0 {
            return upper as u128;
        }
        if x > 64.0 {
            // e^{−64} itself is the series below (y = ½)
            let (rm, re) = decompose(x - 64.0).expect("0 < x − 64 < 24");
            let u = mul_fixed(
                exp_neg_bound(1, 6, upper),
                exp_neg_bound(rm, re, upper),
                upper,
            );
            return u.max(upper as u128);
        }
    }
    // y = x/2^7 ≤ ½ (as x < 64), truncated down for the upper bound (e^{−Y/2^126} ≥ e^{−y}) and
    // rounded up for the lower one
    let shift = e - SQUARINGS as i32 + FRAC as i32;
    let y = if shift >= 0 {
        m << shift // < 2^6·2^{119} = 2^{125}
    } else if -shift >= 128 {
        (!upper) as u128
    } else {
        let t = m >> -shift;
        let lost = m & ((1u128 << -shift) - 1) != 0;
        t + (!upper && lost) as u128
    };
    // the terms y^n/n!, bracketed from above (`hi`) and below (`lo`)
    let (mut hi, mut lo) = (ONE, ONE);
    let (mut positive, mut negative) = (ONE, 0u128);
    // an even number of terms ends on a positive one (upper bound), an odd number on a negative
    let terms = if upper {
        TAYLOR_TERMS
    } else {
        TAYLOR_TERMS + 1
    };
    for n in 1..=terms {
        hi = mul_fixed(hi, y, true).div_ceil(n);
        lo = mul_fixed(lo, y, false) / n;
        if n % 2 == 0 {
            positive += if upper { hi } else { lo };
        } else {
            negative += if upper { lo } else { hi };
        }
    }
    // > 0: negative ≤ y·2^126 (rounded up by a few units) ≤ 2^125 + 31 < positive
    let mut u = positive - negative;
    for _ in 0..SQUARINGS {
        u = mul_fixed(u, u, upper);
    }
    u.min(ONE)
}

/// `⌈2⁶⁴·u/(2¹²⁶ + u)⌉` for `u ≤ 2¹²⁶`; `≤ 2⁶³`.
fn rr_numerator(u: u128) -> u64 {
    let u = u.min(ONE);
    div_2_64(u, ONE + u, true).min(1 << 63) as u64
}

/// `num·2⁶⁴/den` rounded up (`up`) or down, exactly (binary long division of the 192-bit
/// numerator), for `num < den ≤ 2¹²⁷`; the result is below 2⁶⁴.
pub(crate) fn div_2_64(num: u128, den: u128, up: bool) -> u128 {
    long_division(num >> 64, num << 64, den, up)
}

/// `num·2¹²⁸/den` rounded up (`up`) or down, exactly, for `num < den ≤ 2¹²⁷` (and, rounding
/// up, `num/den ≤ 1 − 2⁻¹²⁷`); the result is below 2¹²⁸.
pub(crate) fn div_2_128(num: u128, den: u128, up: bool) -> u128 {
    long_division(num, 0, den, up)
}

/// `(high·2¹²⁸ + low)/den` for `high < den ≤ 2¹²⁷`, rounded as asked.
fn long_division(high: u128, low: u128, den: u128, up: bool) -> u128 {
    debug_assert!(high < den && den <= 1 << 127);
    let mut r = high;
    let mut q = 0u128;
    for i in (0..128).rev() {
        r = (r << 1) | ((low >> i) & 1); // r < den ≤ 2^127, so no overflow
        q <<= 1;
        if r >= den {
            r -= den;
            q |= 1;
        }
    }
    q + (up && r != 0) as u128
}

/// The exact decomposition `x = m·2^e` of a finite `x ≥ 0`; `None` for NaN, negative or infinite.
pub(crate) fn decompose(x: f64) -> Option<(u128, i32)> {
    if !(x.is_finite() && x >= 0.0) {
        return None;
    }
    if x == 0.0 {
        return Some((0, 0));
    }
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = (bits & ((1u64 << 52) - 1)) as u128;
    Some(if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << 52), exp - 1075)
    })
}

fn check_eps_prime(eps_prime: f64) -> Result<(u128, i32)> {
    decompose(eps_prime).ok_or_else(|| {
        Error::param(
            "ε' (flip probability)",
            format!("ε' per sign must be a finite non-negative number, got {eps_prime}"),
        )
    })
}

impl Flip {
    /// Randomised response at `ε'`: `Q = ⌈2⁶⁴·U/(1+U)⌉` with a rigorous `U ≥ e^{−ε'}`, so
    /// `Q/2⁶⁴ ≥ 1/(1+e^{ε'})` (rounded toward ½) and `(2⁶⁴ − Q)/Q ≤ e^{ε'}`.
    ///
    /// # Errors
    /// `ε'` NaN, negative or infinite.
    pub fn randomised_response(eps_prime: f64) -> Result<Flip> {
        let (m, e) = check_eps_prime(eps_prime)?;
        Ok(Flip {
            threshold: rr_numerator(exp_neg_upper(m, e)),
        })
    }

    /// [`randomised_response`](Self::randomised_response) for an `ε'` that is already validated;
    /// an invalid one (NaN, negative, infinite) gets the coin of `ε' = 0`, probability ½ — the
    /// always-private answer — instead of an error.
    pub fn randomised_response_or_half(eps_prime: f64) -> Flip {
        Flip::randomised_response(eps_prime).unwrap_or(Flip { threshold: 1 << 63 })
    }
}

/// Smooth flipping's coins for levels `L = 0, …, len − 1` at `ε'` (module documentation): entry
/// 0 is ½, and for `L ≥ 1` `Q_L = max(⌈2⁶⁴·U_L/(1+U_L)⌉, ⌈Q_{L−1}·U₁⌉)` with rigorous upper
/// bounds `U₁ ≥ e^{−ε'}` and `U_L = U_{L−1}·U₁` (rounded up) `≥ e^{−ε'L}`. So `Q_L/2⁶⁴ ≥ q(L)`,
/// the table is non-increasing, and neighbouring levels satisfy both ratio conditions of Theorem
/// 4.6 exactly.
///
/// # Errors
/// `ε'` NaN, negative or infinite.
pub fn smooth_flip_table(eps_prime: f64, len: usize) -> Result<Vec<Flip>> {
    let (m, e) = check_eps_prime(eps_prime)?;
    let u1 = exp_neg_upper(m, e);
    let mut out = Vec::with_capacity(len);
    let mut prev: u64 = 1 << 63;
    let mut ul = ONE;
    for l in 0..len {
        let t = if l == 0 {
            prev
        } else {
            ul = mul_fixed(ul, u1, true).min(ONE);
            let chained = mul_fixed(prev as u128, u1, true).min(1 << 63) as u64;
            rr_numerator(ul).max(chained)
        };
        out.push(Flip { threshold: t });
        prev = t;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// RR: for both input signs and both outputs, the probability ratio is exactly e^{ε'}.
    #[test]
    fn randomised_response_ratio_is_e_to_eps() {
        for &e in &[0.001f64, 0.1, 1.0, 5.0, 30.0] {
            let q = rr_flip_probability(e);
            for s in [-1i8, 1] {
                for s2 in [-1i8, 1] {
                    for out in [-1i8, 1] {
                        let r = output_probability(s, out, q) / output_probability(s2, out, q);
                        assert!(r <= e.exp() * (1.0 + 1e-12), "ε' {e}: ratio {r}");
                    }
                }
            }
            // and the bound is attained: the calibration is not looser than claimed
            let r = output_probability(1, 1, q) / output_probability(-1, 1, q);
            assert!((r / e.exp() - 1.0).abs() < 1e-9);
        }
    }

    /// Smooth flipping: enumerate neighbour pairs. A neighbour changes z by at most c, so
    /// |L − L'| ≤ 1, and the sign can differ only if both L, L' ≤ 1 (with sign(0) = +1: z ≥ 0 and
    /// z' < 0 force L' ≥ 1). Every output ratio must be ≤ e^{ε'}. (The nominal f64 `q`; the
    /// dyadic coins actually sampled are checked exactly in tests/calibration_exact.rs.)
    #[test]
    fn smooth_flipping_ratios_are_bounded_for_every_neighbour_pair() {
        for &e in &[0.0005f64, 0.01, 0.3, 1.0, 4.0, 20.0] {
            let bound = e.exp() * (1.0 + 1e-12);
            let mut checked = 0;
            for l in (0u64..60).filter(|&l| e * (l + 1) as f64 <= 600.0) {
                for l2 in l.saturating_sub(1)..=l + 1 {
                    let mut cases = vec![(1i8, 1i8), (-1, -1)];
                    if l <= 1 && l2 <= 1 && !(l == 0 && l2 == 0) {
                        if l2 >= 1 {
                            cases.push((1, -1));
                        }
                        if l >= 1 {
                            cases.push((-1, 1));
                        }
                    }
                    let (q, q2) = (
                        smooth_flip_probability(l, e),
                        smooth_flip_probability(l2, e),
                    );
                    for (s, s2) in cases {
                        for out in [-1i8, 1] {
                            let a = output_probability(s, out, q);
                            let b = output_probability(s2, out, q2);
                            assert!(
                                a / b <= bound,
                                "ε' {e} L {l} L' {l2} s {s} s' {s2}: {}",
                                a / b
                            );
                            assert!(b / a <= bound);
                            checked += 1;
                        }
                    }
                }
            }
            assert!(checked > 50);
        }
    }

    /// The same check fails for a rule that does not respect the bound (power of the test): flipping
    /// with ε'·(L+1) instead of ε'·L at L = 0 would let a sign change cost 2ε'.
    #[test]
    fn the_ratio_check_catches_a_wrong_rule() {
        let e = 1.0f64;
        let wrong = |l: u64| rr_flip_probability(e * (l + 1) as f64);
        let r = output_probability(1, 1, wrong(0)) / output_probability(-1, 1, wrong(1));
        assert!(r > e.exp() * 1.01);
    }

    #[test]
    fn steps_and_coins() {
        assert_eq!(steps_to_flip(0.0, 1.0), 0);
        assert_eq!(steps_to_flip(1.0, 1.0), 1);
        assert_eq!(steps_to_flip(-1.5, 1.0), 2);
        assert_eq!(steps_to_flip(3.0, 0.0), u64::MAX);
        assert_eq!(Flip::randomised_response(0.0).unwrap().probability(), 0.5);
        assert!(
            Flip::randomised_response(0.85).unwrap().probability() >= rr_flip_probability(0.85)
        );
        assert_eq!(Flip::randomised_response(1000.0).unwrap().threshold(), 1);
        assert_eq!(
            Flip::randomised_response_or_half(f64::NAN).threshold(),
            1 << 63
        );
        assert_eq!(smooth_flip_probability(0, 3.0), 0.5);
        let t = smooth_flip_table(0.5, 200).unwrap();
        assert_eq!(t[0].threshold(), 1 << 63);
        assert_eq!(t[1], Flip::randomised_response(0.5).unwrap());
        assert!(smooth_flip_table(f64::NAN, 3).is_err());
        assert!(smooth_flip_table(-0.1, 3).is_err());
    }

    /// The fixed-point bound brackets `e^{−x}` from above, tightly: within 2⁻¹⁰⁰ relative of
    /// the f64 value's neighbourhood (f64 `exp` is accurate to ~1 ulp, 2⁻⁵²), and never below it
    /// by more than that ulp. A bound computed without the upward roundings would be caught by
    /// the exact checks of tests/calibration_exact.rs; here the scale and the reduction are.
    #[test]
    fn exp_bound_is_above_and_close() {
        for &x in &[
            0.0f64, 1e-300, 1e-9, 0.001, 0.37, 1.0, 2.0, 10.0, 44.0, 63.9,
        ] {
            let (m, e) = decompose(x).unwrap();
            let u = exp_neg_upper(m, e) as f64 / ONE as f64;
            let want = (-x).exp();
            assert!(u >= want * (1.0 - 4e-16), "x {x}: {u} < {want}");
            assert!(u <= want * (1.0 + 4e-16) + 1e-37, "x {x}: {u} ≫ {want}");
            let l = exp_neg_lower(m, e) as f64 / ONE as f64;
            assert!(
                l <= want * (1.0 + 4e-16) && l >= want * (1.0 - 4e-16) - 1e-37,
                "x {x}: {l}"
            );
            assert!(exp_neg_lower(m, e) <= exp_neg_upper(m, e));
        }
        // x ≥ 64: e^{−64}·e^{−(x−64)}, down to one unit of 2⁻¹²⁶ (upper) and 0 (lower)
        for &x in &[64.0f64, 70.25, 87.9] {
            let (m, e) = decompose(x).unwrap();
            let (u, l) = (exp_neg_upper(m, e) as f64, exp_neg_lower(m, e) as f64);
            let want = (-x).exp() * ONE as f64;
            assert!(
                u >= want * (1.0 - 4e-16) && u <= want * (1.0 + 1e-15) + 1.0,
                "x {x}"
            );
            assert!(
                l <= want * (1.0 + 4e-16) && l >= want * (1.0 - 1e-15) - 1.0,
                "x {x}"
            );
            assert!(l <= u);
        }
        let (m, e) = decompose(100.0).unwrap();
        assert_eq!((exp_neg_upper(m, e), exp_neg_lower(m, e)), (1, 0));
        assert!(at_least_64(64, 0) && !at_least_64(63, 0) && at_least_64(1, 6));
        assert!(!at_least_64(u128::MAX, -122) && at_least_64(1 << 70, -64));
    }

    #[test]
    fn fixed_point_product_rounds_as_asked() {
        assert_eq!(mul_fixed(ONE, ONE, false), ONE);
        assert_eq!(mul_fixed(ONE, 3, false), 3);
        assert_eq!(mul_fixed(3, 5, false), 0);
        assert_eq!(mul_fixed(3, 5, true), 1);
        assert_eq!(mul_fixed(ONE + 1, ONE + 1, false), ONE + 2);
        assert_eq!(mul_fixed(ONE + 1, ONE + 1, true), ONE + 3);
        // numerator: u = 1 → ½; u = 0 → 0; u just below ⅓ → just below ¼, rounded up to 2⁶²;
        // u just above ⅓ → just above ¼, rounded up to 2⁶² + 1
        assert_eq!(rr_numerator(ONE), 1 << 63);
        assert_eq!(rr_numerator(0), 0);
        assert_eq!(rr_numerator(ONE / 3), 1 << 62);
        assert_eq!(rr_numerator(ONE / 3 + 1), (1 << 62) + 1);
    }

    /// `split_epsilon`: `n·ε' ≤ ε` holds exactly (checked with a fused multiply-add) and ε' is
    /// the largest such float (the next float up breaks it).
    #[test]
    fn split_epsilon_is_the_largest_safe_share() {
        for &eps in &[1.0f64, 0.3, 7.77, 1e-3] {
            for n in [1u64, 3, 49, 202, 1024, 60_000] {
                let e = split_epsilon(eps, n);
                assert!(e.mul_add(n as f64, -eps) <= 0.0);
                let up = f64::from_bits(e.to_bits() + 1);
                assert!(up.mul_add(n as f64, -eps) > 0.0);
            }
        }
        assert_eq!(split_epsilon(2.0, 0), 2.0);
    }

    /// The coin's empirical rate matches `Q/2⁶⁴` within 5 standard errors of 10⁶ draws, and
    /// the same count rejects a probability 2% off (power: 2% of 2.7·10⁵ is 12 standard errors).
    #[test]
    fn coin_rate_matches_its_dyadic_probability() {
        let f = Flip::randomised_response(1.0).unwrap();
        let p = f.probability();
        let n = 1_000_000u64;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(13);
        let count = (0..n).filter(|_| f.sample(&mut rng)).count() as f64;
        let ok = |p: f64| (count - n as f64 * p).abs() <= 5.0 * (n as f64 * p * (1.0 - p)).sqrt();
        assert!(ok(p), "{count} flips of {n}, P = {p}");
        assert!(!ok(p * 1.02), "no power");
    }
}
