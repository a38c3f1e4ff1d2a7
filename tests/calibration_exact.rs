//! Issue 13, "calibration rounds in the safe direction": every calibrator's defining inequality is
//! re-evaluated at the value it returns, in exact rational or 400-bit interval arithmetic
//! (num-bigint, a dev-dependency), independently of the `f64` and fixed-point code under test —
//! and each check is shown to have power: the same value rounded the unsafe way (`Q` one step
//! toward 0, σ or `N₊` slightly smaller, ε' slightly larger) fails it.
//!
//! The local mechanisms' coins ([`Coin`]: PrivUnit2/G/Inf's branch coin, ScalarDP's keep coin)
//! are checked the same way: the odds inequality holds at `T` and fails at `T + 2²⁸` (2⁻¹⁰⁰).
//!
//! Rigorous bounds used here:
//! * `e^x` for rational `x ≥ 0`: the Taylor partial sum `S_N` is a lower bound (all terms are
//!   positive), and `S_N + T_{N+1}/(1 − x/(N+2))` an upper bound (`x < N+2`, the tail is dominated
//!   by a geometric series).
//! * `π`: Machin's `16·atan(1/5) − 4·atan(1/239)`, each `atan(1/k)` bracketed by consecutive
//!   partial sums of its alternating series.
//! * `Φ(z) = ½ + φ(z)·Σ_{n≥0} z^{2n+1}/(2n+1)!!` (all terms of one sign; the tail after a term with
//!   ratio `z²/(2n+3) ≤ ½` is at most twice that term), with `φ(z) = e^{−z²/2}/√(2π)`.

use dprp::privacy::coin::Coin;
use dprp::privacy::gaussian::{analytic_sigma, classical_sigma};
use dprp::privacy::nplus::n_plus;
use dprp::privacy::rr::{smooth_flip_table, split_epsilon, Flip};
use num_bigint::{BigInt, Sign};
use num_traits::{One, Signed, ToPrimitive, Zero};

// ---------------------------------------------------------------------------------------------
// Exact rationals (numerator, positive denominator), not normalised.

#[derive(Clone, Debug)]
struct Q {
    n: BigInt,
    d: BigInt,
}

impl Q {
    fn int(v: i64) -> Q {
        Q {
            n: BigInt::from(v),
            d: BigInt::one(),
        }
    }
    fn ratio(n: BigInt, d: BigInt) -> Q {
        assert!(d.sign() == Sign::Plus);
        Q { n, d }
    }
    /// The exact value of a finite f64.
    fn f64(x: f64) -> Q {
        assert!(x.is_finite());
        if x == 0.0 {
            return Q::int(0);
        }
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as i64;
        let frac = bits & ((1u64 << 52) - 1);
        let (m, e) = if exp == 0 {
            (frac, -1074)
        } else {
            (frac | (1 << 52), exp - 1075)
        };
        let m = BigInt::from(m) * if x < 0.0 { -1 } else { 1 };
        if e >= 0 {
            Q::ratio(m << e as usize, BigInt::one())
        } else {
            Q::ratio(m, BigInt::one() << (-e) as usize)
        }
    }
    fn add(&self, o: &Q) -> Q {
        Q::ratio(&self.n * &o.d + &o.n * &self.d, &self.d * &o.d)
    }
    fn sub(&self, o: &Q) -> Q {
        Q::ratio(&self.n * &o.d - &o.n * &self.d, &self.d * &o.d)
    }
    fn mul(&self, o: &Q) -> Q {
        Q::ratio(&self.n * &o.n, &self.d * &o.d)
    }
    fn div(&self, o: &Q) -> Q {
        assert!(!o.n.is_zero());
        let (n, d) = (&self.n * &o.d, &self.d * &o.n);
        if d.sign() == Sign::Minus {
            Q::ratio(-n, -d)
        } else {
            Q::ratio(n, d)
        }
    }
    fn le(&self, o: &Q) -> bool {
        &self.n * &o.d <= &o.n * &self.d
    }
    fn lt(&self, o: &Q) -> bool {
        &self.n * &o.d < &o.n * &self.d
    }
}

/// Rigorous `(lower, upper)` bounds on `e^x` for a rational `x ≥ 0` (module documentation).
fn exp_bounds(x: &Q) -> (Q, Q) {
    assert!(x.n.sign() != Sign::Minus);
    let xf = x.n.to_f64().unwrap_or(f64::MAX) / x.d.to_f64().unwrap_or(1.0);
    let terms = (3.0 * xf) as usize + 120;
    // S_N = Σ_{n≤N} a^n b^{N−n} N!/n! / (b^N N!)
    let (a, b) = (&x.n, &x.d);
    let mut fact = BigInt::one();
    let mut pow_a = BigInt::one();
    let mut pows_b = vec![BigInt::one()];
    for _ in 0..=terms {
        let next = pows_b.last().unwrap() * b;
        pows_b.push(next);
    }
    let mut facts = vec![BigInt::one()];
    for n in 1..=terms + 1 {
        fact *= n;
        facts.push(fact.clone());
    }
    let mut num = BigInt::zero();
    let nfact = &facts[terms];
    for n in 0..=terms {
        num += &pow_a * &pows_b[terms - n] * (nfact / &facts[n]);
        pow_a *= a;
    }
    let den = &pows_b[terms] * nfact;
    let lower = Q::ratio(num, den);
    // tail: T_{N+1} / (1 − x/(N+2)), pow_a = a^{N+1}
    let t = Q::ratio(pow_a, &pows_b[terms + 1] * &facts[terms + 1]);
    let n2 = Q::int(terms as i64 + 2);
    assert!(x.lt(&n2));
    let geo = Q::int(1).sub(&x.div(&n2));
    let upper = lower.add(&t.div(&geo));
    (lower, upper)
}

// ---------------------------------------------------------------------------------------------
// Randomised response and smooth flipping

fn two64() -> Q {
    Q::ratio(BigInt::one() << 64usize, BigInt::one())
}

/// `(2⁶⁴ − Q)/Q ≤ e^{ε'}` (checked against the lower bound of `e^{ε'}`: proven) and
/// `Q ≤ 2⁶³` (the other ratio `Q/(2⁶⁴ − Q) ≤ 1`).
fn rr_holds(threshold: u64, eps_prime: f64) -> bool {
    if threshold == 0 {
        return false;
    }
    let (lo, _) = exp_bounds(&Q::f64(eps_prime));
    let q = Q::ratio(BigInt::from(threshold), BigInt::one());
    threshold <= 1 << 63 && two64().sub(&q).div(&q).le(&lo)
}

/// `(2⁶⁴ − Q)/Q > e^{ε'}`, proven with the upper bound of `e^{ε'}`.
fn rr_fails(threshold: u64, eps_prime: f64) -> bool {
    if threshold == 0 {
        return true;
    }
    let (_, hi) = exp_bounds(&Q::f64(eps_prime));
    let q = Q::ratio(BigInt::from(threshold), BigInt::one());
    hi.lt(&two64().sub(&q).div(&q))
}

const EPS_GRID: [f64; 16] = [
    0.0,
    1e-12,
    1e-6,
    1.0 / 1024.0,
    0.001,
    0.01,
    0.1,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    43.9,
    44.5,
    63.999,
];

/// RR: `Q/2⁶⁴` is the smallest dyadic with `(1−P)/P ≤ e^{ε'}`: it satisfies the inequality
/// exactly, and `Q − 1` (one step toward 0, the unsafe rounding) provably violates it.
#[test]
fn rr_threshold_is_the_smallest_admissible_numerator() {
    for &e in EPS_GRID.iter().chain(&[64.0, 100.0, 1000.0]) {
        let f = Flip::randomised_response(e).unwrap();
        let t = f.threshold();
        assert!(rr_holds(t, e), "ε' = {e}: Q = {t} violates (1−P)/P ≤ e^ε'");
        assert!(
            rr_fails(t - 1, e),
            "ε' = {e}: Q − 1 = {} still holds",
            t - 1
        );
        // and P sits next to the float q: the nominal value is within a few units of 2^-64
        let q = dprp::privacy::rr::rr_flip_probability(e);
        assert!((f.probability() - q).abs() <= 4.0 * q * f64::EPSILON + 6e-20);
    }
    assert_eq!(Flip::randomised_response(0.0).unwrap().threshold(), 1 << 63);
    assert_eq!(Flip::randomised_response(64.0).unwrap().threshold(), 1);
    assert!(Flip::randomised_response(f64::NAN).is_err());
    assert!(Flip::randomised_response(-1.0).is_err());
    assert!(Flip::randomised_response(f64::INFINITY).is_err());
    assert!(Flip::from_threshold((1 << 63) + 1).is_err());
}

/// The exact check has power against the old rounding: `⌈q·2⁶⁴⌉` from an `f64` `q` that came out
/// one ulp low is caught (q's ulp is 2⁻⁵⁴ at q ≈ 0.3, i.e. 2¹⁰ units of 2⁻⁶⁴).
#[test]
fn rr_check_catches_an_f64_q_one_ulp_low() {
    for &e in &[0.1f64, 1.0, 2.5] {
        let q = dprp::privacy::rr::rr_flip_probability(e);
        let low = f64::from_bits(q.to_bits() - 1);
        let t = (low * 18_446_744_073_709_551_616.0).ceil() as u64;
        assert!(rr_fails(t, e) || rr_fails(t - 1, e), "ε' = {e}: no power");
        let t2 = Flip::randomised_response(e).unwrap().threshold();
        assert!(t < t2, "ε' = {e}: a low q must give a smaller numerator");
        assert!(rr_fails(t, e));
    }
}

/// Smooth flipping: for every entry of the table (up to 65 536 levels), both neighbour ratios of
/// Theorem 4.6 hold exactly — `Q_L/Q_{L+1} ≤ e^{ε'}` and `(2⁶⁴−Q_{L+1})/(2⁶⁴−Q_L) ≤ e^{ε'}` —
/// `Q_1` satisfies the randomised-response condition, and `Q_L/2⁶⁴ ≥ q(L)`.
#[test]
fn smooth_table_satisfies_every_neighbour_ratio_exactly() {
    for &e in &[1.0 / 1024.0, 1e-3, 0.01, 0.3, 1.0, 4.0, 20.0] {
        let len = (((45.0 / e) as usize) + 2).min(1 << 16);
        let table = smooth_flip_table(e, len).unwrap();
        assert_eq!(table[0].threshold(), 1 << 63);
        assert!(rr_holds(table[1].threshold(), e));
        let (lo, _) = exp_bounds(&Q::f64(e));
        // compare with a 2^-300-truncated lower bound of e^{ε'} (still a lower bound): cheap
        let scale = BigInt::one() << 300usize;
        let lo_n = (&lo.n * &scale) / &lo.d; // ⌊lo·2^300⌋
        let t64 = BigInt::one() << 64usize;
        for w in table.windows(2) {
            let (a, b) = (
                BigInt::from(w[0].threshold()),
                BigInt::from(w[1].threshold()),
            );
            assert!(b <= a, "ε' = {e}: table not non-increasing");
            assert!(&a * &scale <= &b * &lo_n, "ε' = {e}: Q_L/Q_L+1 > e^ε'");
            assert!((&t64 - &b) * &scale <= (&t64 - &a) * &lo_n);
        }
        // P_L ≥ q(L) on a sample of levels, exactly
        for l in (1..len).step_by((len / 40).max(1)) {
            let x = Q::f64(e).mul(&Q::int(l as i64));
            let (lo_l, _) = exp_bounds(&x);
            // Q_L·(1 + e^{ε'L}) ≥ 2^64, with the lower bound of e^{ε'L}
            let lhs_lo = Q::ratio(BigInt::from(table[l].threshold()), BigInt::one())
                .mul(&Q::int(1).add(&lo_l));
            assert!(two64().le(&lhs_lo), "ε' = {e}, L = {l}: P_L < q(L)");
        }
    }
}

/// Power of the table check: the old independent rounding `⌈q(L)·2⁶⁴⌉` (max 1) breaks
/// `Q_L/Q_{L+1} ≤ e^{ε'}` where the probabilities are a few units of 2⁻⁶⁴ (ε' = 1/1024: 2 then 1).
#[test]
fn smooth_ratio_check_catches_independent_rounding() {
    let e = 1.0f64 / 1024.0;
    let scale = BigInt::one() << 300usize;
    let (_, hi) = exp_bounds(&Q::f64(e));
    let hi_n = (&hi.n * &scale) / &hi.d + 1; // ≥ e^{ε'}·2^300
    let old = |l: u64| {
        let q = dprp::privacy::rr::smooth_flip_probability(l, e);
        ((q * 18_446_744_073_709_551_616.0).ceil().max(1.0)) as u64
    };
    let violated = (1..46_000u64).any(|l| {
        let (a, b) = (BigInt::from(old(l)), BigInt::from(old(l + 1)));
        a * &scale > b * &hi_n
    });
    assert!(
        violated,
        "the independent rounding should violate a ratio somewhere"
    );
}

fn two128() -> Q {
    Q::ratio(BigInt::one() << 128usize, BigInt::one())
}

/// `k·T/(2¹²⁸ − T)` as an exact rational.
fn odds(t: u128, k: u64) -> Q {
    let heads = Q::ratio(BigInt::from(t) * BigInt::from(k), BigInt::one());
    heads.div(&two128().sub(&Q::ratio(BigInt::from(t), BigInt::one())))
}

/// Proven `odds ≤ e^x`, for any finite `x`, with the bracket of `e^{|x|}`.
fn odds_le_exp(o: &Q, x: f64) -> bool {
    let (lo, hi) = exp_bounds(&Q::f64(x.abs()));
    if x >= 0.0 {
        o.le(&lo)
    } else {
        o.mul(&hi).le(&Q::int(1))
    }
}

/// Proven `odds > e^x`.
fn odds_gt_exp(o: &Q, x: f64) -> bool {
    let (lo, hi) = exp_bounds(&Q::f64(x.abs()));
    if x >= 0.0 {
        hi.lt(o)
    } else {
        Q::int(1).lt(&o.mul(&lo))
    }
}

/// How far below the largest admissible `T` a coin may sit: 2²⁸ units of 2⁻¹²⁸, i.e. 2⁻¹⁰⁰ in
/// probability (the 126-bit fixed-point bound of `e^{−x}` keeps fewer than 128 bits).
const SLACK: u128 = 1 << 28;

/// The branch coin of PrivUnit2/G/Inf: odds `T/(2¹²⁸ − T) ≤ e^{ε₀}` exactly, and `T + 2²⁸`
/// breaks it (the coin is within 2⁻¹⁰⁰ of the largest admissible one) — for negative budgets too
/// (PrivUnitInf).
#[test]
fn branch_coin_odds_are_at_most_e_to_the_budget() {
    for &x in EPS_GRID
        .iter()
        .chain(&[-1e-9, -0.3, -1.0, -5.0, -30.0, -41.73, -43.9, 70.0, -70.0])
    {
        let t = Coin::odds_at_most(x).unwrap().threshold();
        assert!(
            odds_le_exp(&odds(t, 1), x),
            "ε₀ = {x}: T = {t} has odds above e^ε₀"
        );
        if t < u128::MAX - SLACK {
            assert!(
                odds_gt_exp(&odds(t + SLACK, 1), x),
                "ε₀ = {x}: T + 2^28 still holds"
            );
        }
    }
    // the tails never vanish at a finite budget
    assert!(Coin::odds_at_most(1000.0).unwrap().threshold() < u128::MAX);
    assert_eq!(Coin::odds_at_most(-100.0).unwrap().threshold(), 0);
}

/// The check has power against the float coin it replaces: `⌊p·2¹²⁸⌋` from an `f64`
/// `p = σ(ε₀)` one ulp high is caught.
#[test]
fn branch_coin_check_catches_an_f64_p_one_ulp_high() {
    for &x in &[-40.0f64, -1.0, 0.1, 1.0, 2.5] {
        let p = 1.0 / (1.0 + (-x).exp());
        let high = f64::from_bits(p.to_bits() + 1);
        let t = (high * 2f64.powi(128)).floor() as u128;
        assert!(odds_gt_exp(&odds(t, 1), x), "ε₀ = {x}: no power");
        assert!(t > Coin::odds_at_most(x).unwrap().threshold());
    }
}

/// ScalarDP's keep coin: `k·T/(2¹²⁸ − T) ≤ e^ε` exactly (keep vs each other level),
/// `T + max(2²⁸, 2⁸k)` breaks it, and the float `p_keep = 1/(1 + k e^{−ε})` one ulp high is caught.
#[test]
fn k_ary_keep_coin_is_exact_and_tight() {
    let cases = [
        (0.0f64, 1u64),
        (1e-6, 3),
        (0.5, 1 << 32),
        (1.0, 2),
        (3.0, 3),
        (10.0, 29),
        (20.0, 786),
        (40.0, 1 << 32),
        (66.6, 1 << 32),
    ];
    for &(e, k) in &cases {
        let t = Coin::k_ary_keep(e, k).unwrap().threshold();
        assert!(odds_le_exp(&odds(t, k), e), "ε {e}, k {k}: T = {t}");
        // the bound of e^{−ε} has absolute precision ~2⁻¹²⁶, times k in the product
        let slack = SLACK.max(k as u128 * 256);
        if t < u128::MAX - slack {
            assert!(
                odds_gt_exp(&odds(t + slack, k), e),
                "ε {e}, k {k}: T + {slack} holds"
            );
        }
        let p = 1.0 / (1.0 + k as f64 * (-e).exp());
        let high = f64::from_bits(p.to_bits() + 1);
        let naive = (high * 2f64.powi(128)).floor() as u128;
        // (p near 1 saturates)
        if e > 0.0 && p < 0.999 {
            assert!(odds_gt_exp(&odds(naive, k), e), "ε {e}, k {k}: no power");
        }
    }
    assert!(Coin::k_ary_keep(500.0, 1 << 32).unwrap().threshold() < u128::MAX);
}

/// `ε/n` rounded down: `n·ε' ≤ ε` exactly, and the next float up violates it.
#[test]
fn split_epsilon_never_exceeds_the_budget() {
    let mut caught = 0;
    for &eps in &[1.0f64, 0.3, 5.0, 7.77, 100.0, 1e-3] {
        for n in [1u64, 3, 7, 10, 49, 202, 1000, 1024, 4097, 60_000] {
            let e = split_epsilon(eps, n);
            let total = Q::f64(e).mul(&Q::int(n as i64));
            assert!(total.le(&Q::f64(eps)), "ε {eps}, n {n}");
            let up = f64::from_bits(e.to_bits() + 1);
            assert!(Q::f64(eps).lt(&Q::f64(up).mul(&Q::int(n as i64))));
            // the naive quotient exceeds ε for some (ε, n): count them (power)
            let naive = eps / n as f64;
            caught += Q::f64(eps).lt(&Q::f64(naive).mul(&Q::int(n as i64))) as usize;
        }
    }
    assert!(
        caught > 0,
        "the naive ε/n never overshot: the grid has no power"
    );
}

// ---------------------------------------------------------------------------------------------
// Gaussian σ: 400-bit interval arithmetic for Φ

const P: usize = 400;

/// An interval `[lo, hi]·2^-P`.
#[derive(Clone, Debug)]
struct I {
    lo: BigInt,
    hi: BigInt,
}

fn floor_div(a: &BigInt, b: &BigInt) -> BigInt {
    let (q, r) = (a / b, a % b);
    if !r.is_zero() && (r.sign() == Sign::Minus) != (b.sign() == Sign::Minus) {
        q - 1
    } else {
        q
    }
}

fn ceil_div(a: &BigInt, b: &BigInt) -> BigInt {
    -floor_div(&-a, b)
}

impl I {
    fn of(q: &Q) -> I {
        let s = &q.n << P;
        I {
            lo: floor_div(&s, &q.d),
            hi: ceil_div(&s, &q.d),
        }
    }
    fn of_bounds(lo: &Q, hi: &Q) -> I {
        I {
            lo: floor_div(&(&lo.n << P), &lo.d),
            hi: ceil_div(&(&hi.n << P), &hi.d),
        }
    }
    fn add(&self, o: &I) -> I {
        I {
            lo: &self.lo + &o.lo,
            hi: &self.hi + &o.hi,
        }
    }
    fn sub(&self, o: &I) -> I {
        I {
            lo: &self.lo - &o.hi,
            hi: &self.hi - &o.lo,
        }
    }
    fn mul(&self, o: &I) -> I {
        let one = BigInt::one() << P;
        let c = [
            &self.lo * &o.lo,
            &self.lo * &o.hi,
            &self.hi * &o.lo,
            &self.hi * &o.hi,
        ];
        let mn = c.iter().min().unwrap();
        let mx = c.iter().max().unwrap();
        I {
            lo: floor_div(mn, &one),
            hi: ceil_div(mx, &one),
        }
    }
    /// Division by a positive interval, for a non-negative numerator.
    fn div_pos(&self, o: &I) -> I {
        assert!(o.lo.sign() == Sign::Plus && self.lo.sign() != Sign::Minus);
        I {
            lo: floor_div(&(&self.lo << P), &o.hi),
            hi: ceil_div(&(&self.hi << P), &o.lo),
        }
    }
    fn div_int(&self, k: u64) -> I {
        let k = BigInt::from(k);
        I {
            lo: floor_div(&self.lo, &k),
            hi: ceil_div(&self.hi, &k),
        }
    }
    fn lo_q(&self) -> Q {
        Q::ratio(self.lo.clone(), BigInt::one() << P)
    }
    fn hi_q(&self) -> Q {
        Q::ratio(self.hi.clone(), BigInt::one() << P)
    }
    /// `e^{self}` for any sign.
    fn exp(&self) -> I {
        let bound = |v: &BigInt, want_hi: bool| -> Q {
            let x = Q::ratio(v.abs(), BigInt::one() << P);
            let (l, h) = exp_bounds(&x);
            if v.sign() != Sign::Minus {
                if want_hi {
                    h
                } else {
                    l
                }
            } else if want_hi {
                Q::int(1).div(&l)
            } else {
                Q::int(1).div(&h)
            }
        };
        I::of_bounds(&bound(&self.lo, false), &bound(&self.hi, true))
    }
    /// `√self` for a positive interval.
    fn sqrt(&self) -> I {
        // √(v·2^-P) = √(v·2^P)·2^-P
        let lo = (&self.lo << P).to_biguint().unwrap().sqrt();
        let hi_in = (&self.hi << P).to_biguint().unwrap();
        let mut hi = hi_in.sqrt();
        if &hi * &hi < hi_in {
            hi += 1u32;
        }
        I {
            lo: BigInt::from(lo),
            hi: BigInt::from(hi),
        }
    }
}

/// `atan(1/k)` bracketed by consecutive partial sums of its alternating series.
fn atan_inv(k: u64) -> I {
    let mut sum_lo = BigInt::zero();
    let mut sum_hi = BigInt::zero();
    let one = BigInt::one() << P;
    let k2 = BigInt::from(k * k);
    let mut pow = BigInt::from(k); // k^{2n+1}
    let mut n = 0u64;
    loop {
        let term_lo = floor_div(&one, &(&pow * (2 * n + 1)));
        let term_hi = ceil_div(&one, &(&pow * (2 * n + 1)));
        if n.is_multiple_of(2) {
            sum_lo += &term_lo;
            sum_hi += &term_hi;
        } else {
            sum_lo -= &term_hi;
            sum_hi -= &term_lo;
        }
        if term_hi <= BigInt::from(1) && n % 2 == 1 {
            // the partial sum after an odd (negative) term is a lower bound; the last positive
            // term already made sum_hi an upper bound one step earlier
            break;
        }
        pow *= &k2;
        n += 1;
    }
    // the alternating remainder is below the last term (≤ 1 unit) in either direction
    I {
        lo: sum_lo - 2,
        hi: sum_hi + 2,
    }
}

fn pi() -> I {
    let a = atan_inv(5);
    let b = atan_inv(239);
    let sixteen = I::of(&Q::int(16));
    let four = I::of(&Q::int(4));
    sixteen.mul(&a).sub(&four.mul(&b))
}

/// `Φ(z)` for an exact rational `z` (module documentation).
fn phi_cdf(z: &Q, sqrt_2pi: &I) -> I {
    let neg = z.n.sign() == Sign::Minus;
    let t = I::of(&Q::ratio(z.n.abs(), z.d.clone()));
    let t2 = t.mul(&t);
    let tf = z.n.to_f64().unwrap().abs() / z.d.to_f64().unwrap();
    // S(t) = Σ T_n, T_0 = t, T_n = T_{n−1}·t²/(2n+1)
    let mut term = t.clone();
    let mut sum = t.clone();
    let mut n = 0u64;
    loop {
        n += 1;
        term = term.mul(&t2).div_int(2 * n + 1);
        sum = sum.add(&term);
        let ratio_small = tf * tf / (2 * n + 3) as f64 <= 0.4;
        if ratio_small && term.hi <= BigInt::one() {
            break;
        }
    }
    // tail after T_n: ≤ 2·T_{n+1} ≤ 2·T_n (ratio ≤ ½); plus one unit per rounding already counted
    sum.hi += &term.hi * 2 + 2;
    let half_t2 = t2.div_int(2);
    let neg_half_t2 = I {
        lo: -&half_t2.hi,
        hi: -&half_t2.lo,
    };
    let density = neg_half_t2.exp().div_pos(sqrt_2pi);
    let tail = density.mul(&sum);
    let half = I::of(&Q::ratio(BigInt::one(), BigInt::from(2)));
    if neg {
        half.sub(&tail)
    } else {
        half.add(&tail)
    }
}

/// `δ(σ) = Φ(Δ/2σ − εσ/Δ) − e^ε·Φ(−Δ/2σ − εσ/Δ)` (Balle & Wang Theorem 8) as an interval.
fn gaussian_delta_hp(sigma: f64, sens: f64, eps: f64, sqrt_2pi: &I) -> I {
    let (s, d, e) = (Q::f64(sigma), Q::f64(sens), Q::f64(eps));
    let a = d.div(&s.mul(&Q::int(2)));
    let b = e.mul(&s).div(&d);
    let p1 = phi_cdf(&a.sub(&b), sqrt_2pi);
    let p2 = phi_cdf(&Q::int(0).sub(&a).sub(&b), sqrt_2pi);
    let (elo, ehi) = exp_bounds(&e);
    let ee = I::of_bounds(&elo, &ehi);
    p1.sub(&ee.mul(&p2))
}

fn sqrt_2pi() -> I {
    pi().mul(&I::of(&Q::int(2))).sqrt()
}

#[test]
fn interval_phi_matches_known_values() {
    let s = sqrt_2pi();
    // π to 30 digits
    let p = pi();
    let pi30 = Q::ratio(
        BigInt::parse_bytes(b"3141592653589793238462643383279", 10).unwrap(),
        BigInt::from(10u64).pow(30),
    );
    let eps = Q::ratio(BigInt::one(), BigInt::from(10u64).pow(29));
    assert!(p.lo_q().le(&pi30.add(&eps)) && pi30.sub(&eps).le(&p.hi_q()));
    assert!((&p.hi - &p.lo) < (BigInt::one() << 20usize));
    // Φ(1) = 0.841344746068542948585232545632…, Φ(−5) = 2.866515718791939116737523329e−7
    let c = phi_cdf(&Q::int(1), &s);
    let want = Q::ratio(
        BigInt::parse_bytes(b"841344746068542948585232545632", 10).unwrap(),
        BigInt::from(10u64).pow(30),
    );
    assert!(c.lo_q().le(&want.add(&eps)) && want.sub(&eps).le(&c.hi_q()));
    let c = phi_cdf(&Q::int(-5), &s);
    let want = Q::ratio(
        BigInt::parse_bytes(b"2866515718791939116737523329", 10).unwrap(),
        BigInt::from(10u64).pow(34),
    );
    let eps = Q::ratio(BigInt::one(), BigInt::from(10u64).pow(33));
    assert!(c.lo_q().le(&want.add(&eps)) && want.sub(&eps).le(&c.hi_q()));
    assert!((&c.hi - &c.lo) < (BigInt::one() << 100usize)); // 2^-300 absolute
}

/// Analytic σ (Theorem 3.2): at the returned σ, δ(σ) ≤ δ in 400-bit interval arithmetic; and
/// σ·(1 − 10⁻⁸) (rounded the unsafe way) provably has δ(σ) > δ, so the check is tight.
#[test]
fn analytic_sigma_satisfies_its_defining_inequality_in_high_precision() {
    let s2p = sqrt_2pi();
    for &eps in &[0.05, 0.5, 1.0, 2.0, 5.0, 10.0] {
        for &delta in &[1e-3, 1e-6, 1e-9, 1e-12] {
            for &sens in &[1.0, 0.37] {
                let sigma = analytic_sigma(sens, eps, delta).unwrap();
                let d = gaussian_delta_hp(sigma, sens, eps, &s2p);
                assert!(
                    d.hi_q().le(&Q::f64(delta)),
                    "ε {eps} δ {delta} Δ {sens}: σ = {sigma} gives δ(σ) > δ"
                );
                let low = sigma * (1.0 - 1e-8);
                let d = gaussian_delta_hp(low, sens, eps, &s2p);
                assert!(
                    Q::f64(delta).lt(&d.lo_q()),
                    "ε {eps} δ {delta} Δ {sens}: σ(1 − 1e-8) still satisfies: no power"
                );
            }
        }
    }
}

/// Classical σ (Theorem 3.1): `σ ≥ Δ√(2 ln(1.25/δ))/ε` ⟺ `δ·e^{(εσ/Δ)²/2} ≥ 5/4`, exactly; and
/// σ·(1 − 10⁻¹²) fails it.
#[test]
fn classical_sigma_satisfies_its_defining_inequality_exactly() {
    let five_quarters = Q::ratio(BigInt::from(5), BigInt::from(4));
    let t = |sigma: f64, sens: f64, eps: f64| {
        let r = Q::f64(eps).mul(&Q::f64(sigma)).div(&Q::f64(sens));
        r.mul(&r).div(&Q::int(2))
    };
    for &eps in &[0.01, 0.1, 0.5, 0.9, 2.0] {
        for &delta in &[1e-3, 1e-6, 1e-9, 1e-12, 1e-20] {
            for &sens in &[1.0, 0.37, 3.0] {
                let sigma = classical_sigma(sens, eps, delta).unwrap();
                let (lo, _) = exp_bounds(&t(sigma, sens, eps));
                assert!(
                    five_quarters.le(&Q::f64(delta).mul(&lo)),
                    "ε {eps} δ {delta}"
                );
                let (_, hi) = exp_bounds(&t(sigma * (1.0 - 1e-12), sens, eps));
                assert!(Q::f64(delta).mul(&hi).lt(&five_quarters), "no power");
            }
        }
    }
}

/// N₊ (Proposition 4.4): the Chernoff bound at `η = N₊/μ − 1` is at most δ, i.e.
/// `(N₊ − μ)²/(N₊ + μ) ≥ ln(1/δ)` ⟺ `δ·e^{(N₊−μ)²/(N₊+μ)} ≥ 1` with `μ = P·k` exact; and
/// `N₊ − 1` fails it (whenever `N₊ < k`).
#[test]
fn n_plus_satisfies_its_defining_chernoff_inequality_exactly() {
    let mut checked = 0;
    for &k in &[64usize, 256, 512, 1024, 4096, 100_000] {
        for &prob in &[1e-6, 0.001, 0.0797, 0.26618, 0.5, 0.9] {
            for &delta in &[0.1, 1e-6, 1e-12] {
                let n = n_plus(k, prob, delta);
                let mu = Q::f64(prob).mul(&Q::int(k as i64));
                let holds = |c: usize| {
                    let c = Q::int(c as i64);
                    if c.le(&mu) {
                        return false;
                    }
                    let d = c.sub(&mu);
                    let t = d.mul(&d).div(&c.add(&mu));
                    let (lo, _) = exp_bounds(&t);
                    Q::int(1).le(&Q::f64(delta).mul(&lo))
                };
                let fails = |c: usize| {
                    let c = Q::int(c as i64);
                    if c.le(&mu) {
                        return true;
                    }
                    let d = c.sub(&mu);
                    let t = d.mul(&d).div(&c.add(&mu));
                    let (_, hi) = exp_bounds(&t);
                    Q::f64(delta).mul(&hi).lt(&Q::int(1))
                };
                if n < k {
                    assert!(holds(n), "k {k} P {prob} δ {delta}: N₊ = {n} violates");
                    if n > 1 {
                        assert!(fails(n - 1), "k {k} P {prob} δ {delta}: N₊ − 1 holds");
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 40, "{checked}");
}

#[test]
fn exp_bounds_bracket_known_values() {
    // e = 2.718281828459045235360287471352662497757…
    let (lo, hi) = exp_bounds(&Q::int(1));
    let e = Q::ratio(
        BigInt::parse_bytes(b"2718281828459045235360287471352662497757", 10).unwrap(),
        BigInt::from(10u64).pow(39),
    );
    let tiny = Q::ratio(BigInt::one(), BigInt::from(10u64).pow(38));
    assert!(lo.le(&e.add(&tiny)) && e.sub(&tiny).le(&hi));
    assert!(lo.le(&hi));
    // bounds are tight to far below the 2^-64 scale at x = 44.5
    let (lo, hi) = exp_bounds(&Q::f64(44.5));
    let gap = hi.sub(&lo).div(&lo);
    assert!(gap.lt(&Q::ratio(BigInt::one(), BigInt::one() << 100usize)));
}

// ---------------------------------------------------------------------------------------------
// zCDP → (ε, δ) conversion (Canonne, Kamath & Steinke 2020, Corollary 13)

/// Rigorous `(lower, upper)` bounds on `ln x` for a rational `x > 0`: `x = 2^k·r`, `r ∈ [1, 2)`,
/// `ln r = 2·atanh(y)` with `y = (r−1)/(r+1) < ⅓` (positive series: partial sums are lower
/// bounds, the tail after term N is at most `2y^{2N+3}/((2N+3)(1−y²))`), `ln 2 = 2·atanh(⅓)`.
fn ln_bounds(x: &Q) -> (Q, Q) {
    assert!(x.n.sign() == Sign::Plus);
    if x.lt(&Q::int(1)) {
        let (lo, hi) = ln_bounds(&Q::int(1).div(x));
        return (Q::int(0).sub(&hi), Q::int(0).sub(&lo));
    }
    let atanh2 = |y: &Q| -> (Q, Q) {
        let terms = 60;
        let y2 = y.mul(y);
        let mut pow = y.clone();
        let mut sum = Q::int(0);
        for n in 0..terms {
            sum = sum.add(&pow.div(&Q::int(2 * n + 1)));
            pow = pow.mul(&y2);
        }
        let tail = pow.div(&Q::int(2 * terms + 1).mul(&Q::int(1).sub(&y2)));
        (sum.mul(&Q::int(2)), sum.add(&tail).mul(&Q::int(2)))
    };
    let mut k = 0i64;
    let mut r = x.clone();
    while !r.lt(&Q::int(2)) {
        r = r.div(&Q::int(2));
        k += 1;
    }
    let (l2lo, l2hi) = atanh2(&Q::ratio(BigInt::one(), BigInt::from(3)));
    let y = r.sub(&Q::int(1)).div(&r.add(&Q::int(1)));
    let (rlo, rhi) = atanh2(&y);
    (
        l2lo.mul(&Q::int(k)).add(&rlo),
        l2hi.mul(&Q::int(k)).add(&rhi),
    )
}

/// Bounds on CKS's ε at order `α = 1 + am1`: `αρ + ln(1 − 1/α) − (ln δ + ln α)/(α − 1)`.
fn cks_epsilon_bounds(rho: f64, delta: f64, am1: f64) -> (Q, Q) {
    let (rho, am1q) = (Q::f64(rho), Q::f64(am1));
    let alpha = Q::int(1).add(&am1q);
    let (l1lo, l1hi) = ln_bounds(&am1q.div(&alpha)); // ln(1 − 1/α)
    let (ldlo, ldhi) = ln_bounds(&Q::f64(delta));
    let (lalo, lahi) = ln_bounds(&alpha);
    let base = alpha.mul(&rho);
    let lo = base.add(&l1lo).sub(&ldhi.add(&lahi).div(&am1q));
    let hi = base.add(&l1hi).sub(&ldlo.add(&lalo).div(&am1q));
    (lo, hi)
}

#[test]
fn ln_bounds_bracket_known_values() {
    // ln 10 = 2.302585092994045684017991454684364…
    let (lo, hi) = ln_bounds(&Q::int(10));
    let want = Q::ratio(
        BigInt::parse_bytes(b"2302585092994045684017991454684364", 10).unwrap(),
        BigInt::from(10u64).pow(33),
    );
    let tiny = Q::ratio(BigInt::one(), BigInt::from(10u64).pow(32));
    assert!(lo.le(&want.add(&tiny)) && want.sub(&tiny).le(&hi));
    let (lo, hi) = ln_bounds(&Q::ratio(BigInt::one(), BigInt::from(10)));
    assert!(lo.le(&Q::int(0).sub(&want).add(&tiny)) && Q::int(0).sub(&want).sub(&tiny).le(&hi));
}

/// zCDP → DP: the ε returned is at least CKS's bound evaluated exactly (400-bit-free: exact
/// rationals and rigorous `ln` bounds) at the order it reports, so (ε, δ)-DP holds; and
/// ε·(1 − 10⁻⁹) is below that bound's lower end (the check is tight; at that order — the
/// minimiser's — other orders only give larger bounds). `rho_for_epsilon`'s ρ meets its target
/// the same way, and ρ·(1 + 10⁻⁶) does not.
#[test]
fn zcdp_epsilon_is_rounded_up_past_the_exact_bound() {
    use dprp::privacy::zcdp::{epsilon_with_order, rho_for_epsilon};
    for &rho in &[0.001, 0.01, 0.1, 0.5, 2.0, 10.0] {
        for &delta in &[1e-3, 1e-6, 1e-10] {
            let (eps, am1) = epsilon_with_order(rho, delta).unwrap();
            let (lo, hi) = cks_epsilon_bounds(rho, delta, am1);
            assert!(
                hi.le(&Q::f64(eps)),
                "ρ {rho} δ {delta}: ε = {eps} below the bound"
            );
            assert!(
                Q::f64(eps * (1.0 - 1e-9)).lt(&lo),
                "ρ {rho} δ {delta}: no power"
            );
        }
    }
    for &target in &[0.5, 1.0, 4.0] {
        for &delta in &[1e-5, 1e-9] {
            let rho = rho_for_epsilon(target, delta).unwrap();
            let (_, am1) = epsilon_with_order(rho, delta).unwrap();
            let (_, hi) = cks_epsilon_bounds(rho, delta, am1);
            assert!(
                hi.le(&Q::f64(target)),
                "target {target} δ {delta}: ρ = {rho} too large"
            );
            let over = rho * (1.0 + 1e-6);
            let (_, am1) = epsilon_with_order(over, delta).unwrap();
            let (lo, _) = cks_epsilon_bounds(over, delta, am1);
            assert!(
                Q::f64(target).lt(&lo),
                "target {target} δ {delta}: no power"
            );
        }
    }
}
