//! Low-dimensional output events and their selection.
//!
//! Each event family maps a release row to one number `s` (a statistic) and considers the events
//! `{s ≥ τ}` and `{s < τ}`, in both orders of the pair. The threshold, the side and the order are
//! chosen on the **selection half** of the samples (the choice maximising the same lower bound
//! there); the chosen event is then evaluated once on the **estimation half**, which the choice
//! never saw — so the event is fixed before the samples that bound its probabilities, as the
//! argument of [`super::stats`] requires.
//!
//! | family | payload | statistic |
//! |---|---|---|
//! | `direction` | real | `⟨y, d⟩/‖d‖`, `d` the noiseless difference of the pair's outputs (for a Gaussian the likelihood ratio is monotone in it: the optimal events) |
//! | `coordinate` | real | `y_j`, `j` the coordinate of `d` largest in magnitude |
//! | `sign` | real | `[y_j ≥ m_j]` for that `j`, `m_j` the midpoint of the noiseless values (0 for the symmetric worst-case pairs: the sign of the released value) |
//! | `bit` | signs | bit `j`, the position whose frequencies differ most on the selection half |
//! | `count` | signs | how many of the positions where the noiseless signs differ (all `k` if none do) agree with `x`'s noiseless sign (randomised response's likelihood ratio is monotone in it) |

use serde::Serialize;

use super::stats::{epsilon_lower, Counts};
use crate::error::Result;

/// Threshold candidates kept when the statistic takes few distinct values.
const ALL_DISTINCT: usize = 512;
/// Evenly spaced quantile candidates otherwise (plus geometric ranks in both tails).
const QUANTILES: usize = 200;
/// Candidates scored exactly after the quick score.
const EXACT: usize = 12;

/// A chosen event: `{s ≥ threshold}` (`above`) or `{s < threshold}`, with the first probability
/// that of `x` (`x_first`) or of `x'`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Event {
    /// τ.
    pub threshold: f64,
    /// `{s ≥ τ}` when true, `{s < τ}` otherwise.
    pub above: bool,
    /// Whether the numerator is `x`'s probability (else `x'`'s).
    pub x_first: bool,
}

impl Event {
    /// `P[s ≥ 0.5 | x] vs P[· | x']`.
    pub fn describe(&self) -> String {
        format!(
            "P[s {} {} | {}] over P[same | {}]",
            if self.above { "≥" } else { "<" },
            fmt_threshold(self.threshold),
            if self.x_first { "x" } else { "x'" },
            if self.x_first { "x'" } else { "x" },
        )
    }

    /// The counts of this event in sorted samples of `x` and `x'`.
    pub fn counts(&self, s1: &[f64], s2: &[f64]) -> Counts {
        let ge = |s: &[f64]| (s.len() - s.partition_point(|&v| v < self.threshold)) as u64;
        let (n1, n2) = (s1.len() as u64, s2.len() as u64);
        let (mut a, mut b) = (ge(s1), ge(s2));
        if !self.above {
            a = n1 - a;
            b = n2 - b;
        }
        if self.x_first {
            Counts {
                c1: a,
                n1,
                c2: b,
                n2,
            }
        } else {
            Counts {
                c1: b,
                n1: n2,
                c2: a,
                n2: n1,
            }
        }
    }
}

fn fmt_threshold(t: f64) -> String {
    if t == t.round() && t.abs() < 1e9 {
        format!("{t:.0}")
    } else {
        format!("{t:.4}")
    }
}

/// The candidate thresholds: every distinct value when there are few, else quantiles of the
/// pooled selection samples and geometric ranks (1, 1.19, 1.41, 1.68, 2, …) from both ends, where the events
/// with the largest ratios live.
fn candidates(pooled: &mut [f64]) -> Vec<f64> {
    pooled.sort_by(f64::total_cmp);
    let mut distinct: Vec<f64> = Vec::new();
    for &v in pooled.iter() {
        if distinct.last() != Some(&v) {
            distinct.push(v);
            if distinct.len() > ALL_DISTINCT {
                break;
            }
        }
    }
    if distinct.len() <= ALL_DISTINCT {
        return distinct;
    }
    let n = pooled.len();
    let mut ranks: Vec<usize> = (0..=QUANTILES).map(|q| q * (n - 1) / QUANTILES).collect();
    // ranks 2^{i/4} from both ends (factor 1.19 apart: the best tail events are not missed
    // by more than that in probability)
    let mut r = 1.0f64;
    while (r as usize) < n {
        let i = r as usize;
        ranks.push(i);
        ranks.push(n - 1 - i);
        r *= 2f64.powf(0.25);
    }
    ranks.sort_unstable();
    ranks.dedup();
    let mut t: Vec<f64> = ranks.into_iter().map(|r| pooled[r]).collect();
    t.dedup();
    t
}

/// A quick, slightly optimistic stand-in for the exact bound (normal approximation at three
/// standard errors), used only to rank candidates before the exact scoring.
fn quick(c: Counts, delta: f64) -> f64 {
    let (a, n, b, m) = (c.c1 as f64, c.n1 as f64, c.c2 as f64, c.n2 as f64);
    let lo = (a - 3.0 * a.sqrt()) / n - delta;
    let hi = (b + 3.0 * (b + 1.0).sqrt() + 1.0) / m;
    if lo > 0.0 {
        (lo / hi).ln()
    } else {
        f64::NEG_INFINITY
    }
}

/// Choose the event maximising the lower bound on the selection samples (sorted in place).
/// `None` when no event has a finite bound there.
pub fn select(s1: &mut [f64], s2: &mut [f64], delta: f64, alpha: f64) -> Result<Option<Event>> {
    let mut pooled: Vec<f64> = s1.iter().chain(s2.iter()).copied().collect();
    s1.sort_by(f64::total_cmp);
    s2.sort_by(f64::total_cmp);
    let mut scored: Vec<(f64, Event, Counts)> = Vec::new();
    for t in candidates(&mut pooled) {
        for above in [true, false] {
            for x_first in [true, false] {
                let e = Event {
                    threshold: t,
                    above,
                    x_first,
                };
                let c = e.counts(s1, s2);
                let q = quick(c, delta);
                if q > f64::NEG_INFINITY {
                    scored.push((q, e, c));
                }
            }
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut best: Option<(f64, Event)> = None;
    for &(_, e, c) in scored.iter().take(EXACT) {
        let (eps, _, _) = epsilon_lower(c, delta, alpha)?;
        if eps > f64::NEG_INFINITY && best.is_none_or(|(b, _)| eps > b) {
            best = Some((eps, e));
        }
    }
    Ok(best.map(|(_, e)| e))
}

/// What one event family found on one pair.
#[derive(Debug, Clone, Serialize)]
pub struct FamilyResult {
    /// The family (`direction`, `coordinate`, `sign`, `bit`, `count`).
    pub family: String,
    /// The statistic, in words.
    pub statistic: String,
    /// The event chosen on the selection half (`None`: no event had a finite bound there).
    pub event: Option<Event>,
    /// Its counts on the estimation half.
    pub counts: Option<Counts>,
    /// The Clopper–Pearson lower bound on the first probability.
    pub p1_lower: Option<f64>,
    /// The Clopper–Pearson upper bound on the second probability.
    pub p2_upper: Option<f64>,
    /// `ln((c1/n1 − δ)/(c2/n2))` on the estimation half (`None` when undefined).
    pub epsilon_point: Option<f64>,
    /// ε̂_lower (`None` when the event says nothing: `p₁_lo ≤ δ`).
    pub epsilon_lower: Option<f64>,
}

/// Select on the selection halves, evaluate on the estimation halves (all four sorted here).
pub fn run_family(
    family: &str,
    statistic: String,
    sel: (&mut [f64], &mut [f64]),
    est: (&mut [f64], &mut [f64]),
    delta: f64,
    alpha: f64,
) -> Result<FamilyResult> {
    let event = select(sel.0, sel.1, delta, alpha)?;
    let mut r = FamilyResult {
        family: family.into(),
        statistic,
        event,
        counts: None,
        p1_lower: None,
        p2_upper: None,
        epsilon_point: None,
        epsilon_lower: None,
    };
    if let Some(e) = event {
        est.0.sort_by(f64::total_cmp);
        est.1.sort_by(f64::total_cmp);
        let c = e.counts(est.0, est.1);
        let (eps, lo, hi) = epsilon_lower(c, delta, alpha)?;
        let point = ((c.c1 as f64 / c.n1 as f64 - delta) / (c.c2 as f64 / c.n2 as f64)).ln();
        r.counts = Some(c);
        r.p1_lower = Some(lo);
        r.p2_upper = Some(hi);
        r.epsilon_point = point.is_finite().then_some(point);
        r.epsilon_lower = eps.is_finite().then_some(eps);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_the_event() {
        let s1 = [0.0, 1.0, 2.0, 3.0];
        let s2 = [0.0, 0.0, 1.0, 5.0];
        let e = Event {
            threshold: 1.0,
            above: true,
            x_first: true,
        };
        assert_eq!(
            e.counts(&s1, &s2),
            Counts {
                c1: 3,
                n1: 4,
                c2: 2,
                n2: 4
            }
        );
        let e = Event {
            above: false,
            x_first: false,
            ..e
        };
        assert_eq!(
            e.counts(&s1, &s2),
            Counts {
                c1: 2,
                n1: 4,
                c2: 1,
                n2: 4
            }
        );
    }

    /// A separable pair: the selection finds an event (nearly) all of one input's samples are in
    /// and none of the other's; swapping the samples swaps the orientation.
    #[test]
    fn selection_finds_the_separating_event() {
        let mut a: Vec<f64> = (0..1000).map(|i| 10.0 + i as f64).collect();
        let mut b: Vec<f64> = (0..1000).map(|i| -(i as f64)).collect();
        let e = select(&mut a, &mut b, 0.0, 0.05).unwrap().unwrap();
        let c = e.counts(&a, &b);
        assert!(c.c1 >= 999 && c.c2 == 0, "{e:?} {c:?}");
        assert!(e.threshold > -1.0 && e.threshold <= 10.0, "{e:?}");
        let f = select(&mut b, &mut a, 0.0, 0.05).unwrap().unwrap();
        assert_ne!(e.x_first == e.above, f.x_first == f.above, "{e:?} {f:?}");
    }

    /// Identical samples: whatever is chosen, the held-out bound is far below any ε of interest.
    #[test]
    fn identical_samples_give_no_evidence() {
        let mut s: Vec<f64> = (0..2000).map(|i| ((i * 7919) % 2000) as f64).collect();
        let mut t = s.clone();
        let (mut u, mut v) = (s.clone(), s.clone());
        let r = run_family(
            "t",
            "x".into(),
            (&mut s, &mut t),
            (&mut u, &mut v),
            0.0,
            0.05,
        )
        .unwrap();
        assert!(r.epsilon_lower.is_none_or(|e| e < 0.1), "{r:?}");
    }
}
