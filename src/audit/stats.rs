//! The statistics of the audit: exact one-sided Clopper–Pearson bounds through the regularised
//! incomplete beta function, and the lower confidence bound on ε they give for one event.
//!
//! **Clopper–Pearson.** For `X ~ Bin(n, p)` observed as `x`, `P(X ≥ x | p) = I_p(x, n − x + 1)`
//! and `P(X ≤ x | p) = 1 − I_p(x + 1, n − x)`. The one-sided lower bound at error `a` is the `p`
//! with `I_p(x, n − x + 1) = a` (0 when `x = 0`), the upper bound the `p` with
//! `I_p(x + 1, n − x) = 1 − a` (1 when `x = n`). Each inverts an exact test, so
//! `P(p ≥ lower) ≥ 1 − a` and `P(p ≤ upper) ≥ 1 − a` for every `p` and `n`. Both are found by
//! bisection on `ln p` (relative precision far below the statistical error), with
//! [`ln_inc_beta`] from [`crate::privacy::special`]; the cost is `O(√n)` per evaluation instead
//! of the `O(n)` binomial sums of [`crate::estimate::clopper_pearson`], against which the tests
//! check it.
//!
//! **ε̂_lower.** If a mechanism is (ε, δ)-DP then for every event `E` fixed before the samples it
//! is evaluated on, `P₁(E) ≤ e^ε·P₂(E) + δ`. With `P₁(E) ≥ p₁_lo` and `P₂(E) ≤ p₂_hi` (each
//! failing with probability at most `α/2`), `ε ≥ ln((p₁_lo − δ)/p₂_hi)` with probability at least
//! `1 − α`: that is ε̂_lower ([`epsilon_lower`]).

use crate::error::{Error, Result};
use crate::privacy::special::ln_inc_beta;

/// Bisection steps on `ln p ∈ [ln 10⁻³⁰⁰, 0]`: 2⁻⁶⁴·691 ≈ 4·10⁻¹⁷ in `ln p`.
const STEPS: usize = 64;

/// The smallest `p` the bisection considers.
const LN_P_MIN: f64 = -690.0;

/// The `p` in `(0, 1)` where the increasing function `f(p)` crosses `target`, by bisection on
/// `ln p`; the returned `p` errs to the side `toward_low` names.
fn solve(f: impl Fn(f64) -> Result<f64>, target: f64, toward_low: bool) -> Result<f64> {
    let (mut a, mut b) = (LN_P_MIN, 0.0f64);
    for _ in 0..STEPS {
        let mid = 0.5 * (a + b);
        if f(mid.exp())? < target {
            a = mid;
        } else {
            b = mid;
        }
    }
    Ok(if toward_low { a.exp() } else { b.exp() })
}

fn check(successes: u64, trials: u64, error: f64) -> Result<()> {
    if trials == 0 || successes > trials {
        return Err(Error::param(
            "Clopper–Pearson",
            format!("needs 0 ≤ successes ≤ trials and trials ≥ 1, got {successes} of {trials}"),
        ));
    }
    if !(error > 0.0 && error < 1.0) {
        return Err(Error::param(
            "Clopper–Pearson",
            format!("the error probability must be in (0, 1), got {error}"),
        ));
    }
    Ok(())
}

/// The one-sided Clopper–Pearson lower bound for a binomial probability from `successes` of
/// `trials`: `P(p ≥ bound) ≥ 1 − error` for every `p`. Rounded down.
pub fn cp_lower(successes: u64, trials: u64, error: f64) -> Result<f64> {
    check(successes, trials, error)?;
    if successes == 0 {
        return Ok(0.0);
    }
    let (a, b) = (successes as f64, (trials - successes + 1) as f64);
    let ln_target = error.ln();
    // P(X ≥ x | p) = I_p(x, n − x + 1), increasing in p
    solve(|p| ln_inc_beta(p, a, b), ln_target, true)
}

/// The one-sided Clopper–Pearson upper bound: `P(p ≤ bound) ≥ 1 − error`. Rounded up.
pub fn cp_upper(successes: u64, trials: u64, error: f64) -> Result<f64> {
    check(successes, trials, error)?;
    if successes == trials {
        return Ok(1.0);
    }
    let (a, b) = ((successes + 1) as f64, (trials - successes) as f64);
    // P(X ≤ x | p) = 1 − I_p(x + 1, n − x) = error  ⇔  I_p(x + 1, n − x) = 1 − error
    let ln_target = (-error).ln_1p();
    solve(|p| ln_inc_beta(p, a, b), ln_target, false)
}

/// Counts of one event under the two inputs of a pair: `c1` of `n1` samples of `M(x)` and `c2`
/// of `n2` samples of `M(x')` fell in the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// Samples of the first input in the event.
    pub c1: u64,
    /// Samples of the first input.
    pub n1: u64,
    /// Samples of the second input in the event.
    pub c2: u64,
    /// Samples of the second input.
    pub n2: u64,
}

/// The lower confidence bound on ε from one event (module documentation): with probability at
/// least `1 − alpha` over the samples, a mechanism that is (ε, δ)-DP has
/// `ε ≥ ln((p₁_lo − δ)/p₂_hi)`, the bounds each at error `alpha/2`. Returns the bound with
/// `p₁_lo` and `p₂_hi`; the bound is `−∞` when `p₁_lo ≤ δ` (the event says nothing).
pub fn epsilon_lower(c: Counts, delta: f64, alpha: f64) -> Result<(f64, f64, f64)> {
    if !(0.0..1.0).contains(&delta) {
        return Err(Error::param("δ", format!("must be in [0, 1), got {delta}")));
    }
    let lo1 = cp_lower(c.c1, c.n1, alpha / 2.0)?;
    let hi2 = cp_upper(c.c2, c.n2, alpha / 2.0)?;
    let eps = if lo1 > delta {
        ((lo1 - delta) / hi2).ln()
    } else {
        f64::NEG_INFINITY
    };
    Ok((eps, lo1, hi2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::clopper_pearson;

    /// Reference values from `scipy.stats.beta.ppf` (scipy 1.17.1): the lower bound is
    /// `beta.ppf(a, x, n − x + 1)`, the upper `beta.ppf(1 − a, x + 1, n − x)`. A bound computed
    /// with the wrong beta parameters (e.g. `(x, n − x)`) or the two-sided level in place of the
    /// one-sided one is off by far more than the tolerance.
    #[test]
    fn matches_scipy_reference_values() {
        for &(x, n, a, lo, hi) in REFERENCE {
            let l = cp_lower(x, n, a).unwrap();
            let h = cp_upper(x, n, a).unwrap();
            assert!(
                (l - lo).abs() <= 1e-9 * lo.max(1e-300),
                "lower {x}/{n} at {a}: {l} vs {lo}"
            );
            assert!(
                (h - hi).abs() <= 1e-9 * hi,
                "upper {x}/{n} at {a}: {h} vs {hi}"
            );
        }
    }

    /// The same bounds by an independent method: the exact O(n) binomial sums of
    /// `estimate::clopper_pearson` (two-sided at level 1 − 2a = one-sided at a on each side).
    #[test]
    fn matches_the_binomial_sum_implementation() {
        for &(x, n) in &[
            (0u64, 10u64),
            (1, 10),
            (5, 10),
            (10, 10),
            (3, 1000),
            (500, 1000),
            (997, 1000),
            (37, 20000),
        ] {
            for a in [0.025, 0.005, 0.0005] {
                let (lo, hi) = clopper_pearson(x as u32, n as usize, 1.0 - 2.0 * a);
                let l = cp_lower(x, n, a).unwrap();
                let h = cp_upper(x, n, a).unwrap();
                assert!((l - lo).abs() < 1e-9, "{x}/{n} {a}: {l} vs {lo}");
                assert!((h - hi).abs() < 1e-9, "{x}/{n} {a}: {h} vs {hi}");
            }
        }
    }

    /// Closed forms: `x = n` gives the lower bound `a^{1/n}`, `x = 0` the upper `1 − a^{1/n}`.
    #[test]
    fn closed_forms_at_the_edges() {
        for n in [1u64, 7, 100, 100_000] {
            let a = 0.01;
            let l = cp_lower(n, n, a).unwrap();
            assert!((l - a.powf(1.0 / n as f64)).abs() < 1e-12, "{n}: {l}");
            let h = cp_upper(0, n, a).unwrap();
            let expect = -(a.ln() / n as f64).exp_m1();
            assert!(
                (h - expect).abs() < 1e-12 * expect.max(1e-3),
                "{n}: {h} vs {expect}"
            );
            assert_eq!(cp_lower(0, n, a).unwrap(), 0.0);
            assert_eq!(cp_upper(n, n, a).unwrap(), 1.0);
        }
    }

    #[test]
    fn epsilon_lower_of_a_known_event() {
        // 6000 of 10000 against 4000 of 10000: the point estimate is ln 1.5 = 0.405; the bound
        // lies below it, and above ln((0.6 − 0.02)/(0.4 + 0.02)) = 0.323 (±4 standard errors
        // at most at α = 0.05)
        let c = Counts {
            c1: 6000,
            n1: 10000,
            c2: 4000,
            n2: 10000,
        };
        let (e, lo, hi) = epsilon_lower(c, 0.0, 0.05).unwrap();
        assert!(e < 1.5f64.ln() && e > (0.58f64 / 0.42).ln(), "{e}");
        assert!(lo < 0.6 && hi > 0.4);
        assert_eq!(e, (lo / hi).ln());
        // δ is subtracted from the first probability
        let (ed, _, _) = epsilon_lower(c, 0.1, 0.05).unwrap();
        assert!((ed - ((lo - 0.1) / hi).ln()).abs() < 1e-15);
        // an event with p₁_lo ≤ δ says nothing
        let (e0, _, _) = epsilon_lower(Counts { c1: 1, ..c }, 0.01, 0.05).unwrap();
        assert_eq!(e0, f64::NEG_INFINITY);
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(cp_lower(3, 2, 0.05).is_err());
        assert!(cp_upper(0, 0, 0.05).is_err());
        assert!(cp_lower(1, 2, 0.0).is_err());
        assert!(cp_upper(1, 2, 1.0).is_err());
        let c = Counts {
            c1: 1,
            n1: 2,
            c2: 1,
            n2: 2,
        };
        assert!(epsilon_lower(c, 1.0, 0.05).is_err());
        assert!(epsilon_lower(c, f64::NAN, 0.05).is_err());
    }

    /// (x, n, a, lower, upper)
    const REFERENCE: &[(u64, u64, f64, f64, f64)] = &[
        (1, 10, 0.025, 0.0025285785444617848, 0.4450161170281954),
        (5, 10, 0.025, 0.18708602844739855, 0.8129139715526015),
        (9, 10, 0.005, 0.45571294310031313, 0.9994988714245354),
        (3, 1000, 0.025, 0.0006190999316495713, 0.008742023238478303),
        (500, 1000, 0.0025, 0.45521802773871944, 0.5447819722612807),
        (
            37,
            20000,
            0.001,
            0.0010506353436507004,
            0.002994541387225196,
        ),
        (
            12345,
            100000,
            0.00125,
            0.12032428073213791,
            0.12662422904113943,
        ),
        (
            2,
            200000,
            0.025,
            1.2110486870274126e-06,
            3.612296650749235e-05,
        ),
    ];
}
