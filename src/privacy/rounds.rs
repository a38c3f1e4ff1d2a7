//! Composition over the rounds of federated training (issue 28): a budget `(ε, δ)` given before
//! round 1, what each round may spend, what the rounds so far have spent, and the refusal of a
//! round that would take the total past the budget.
//!
//! Each family composes by the theorem that fits its per-round guarantee:
//!
//! | family | one round | rounds compose by | total |
//! |---|---|---|---|
//! | [`Family::Zcdp`] (DDG, count sketch + DDG) | ρᵣ-zCDP (Chen et al. 2022, Theorem E.1) | zCDP composition: ρ's add (Bun & Steinke 2016, Lemma 2.3) | ρ = Σρᵣ → (ε, δ) by the tight conversion of Canonne, Kamath & Steinke 2020 ([`crate::privacy::zcdp`]) at the budget's δ |
//! | [`Family::Approx`] (Binomial, cpSGD) | (εᵣ, δᵣ)-DP (cpSGD Theorem 1) | basic composition (Dwork & Roth 2014, Theorem 3.16) | (Σεᵣ, Σδᵣ) |
//! | [`Family::PureLocal`] (PrivUnit2, PrivUnitG, ProjUnit) | εᵣ-LDP of each user's message | basic composition of pure ε-DP (Dwork & Roth 2014, Theorem 3.16 with δ = 0) | (Σεᵣ, 0)-LDP |
//!
//! A round's guarantee holds for the data of every user taking part in it; a user who takes
//! part in fewer rounds spends less. The totals here are the worst case: a user in every round.
//!
//! **Planning.** [`RoundsAccountant::per_round`] splits the budget evenly over `R` rounds: ρ/R
//! with ρ the largest zCDP parameter whose conversion meets (ε, δ); (ε/R, δ/R); ε/R. A round
//! whose real cost exceeds its share — a DDG round with fewer noise shares than planned,
//! because clients dropped out — is charged what it cost ([`RoundsAccountant::charge`]), so a
//! run with dropouts may reach the budget before round `R` and is stopped there.

use crate::error::{Error, Result};
use crate::privacy::zcdp;

/// How the rounds of one run compose (one family per run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// ρ-zCDP rounds (the DDG family).
    Zcdp,
    /// (ε, δ)-DP rounds (the Binomial mechanism).
    Approx,
    /// Pure ε-LDP rounds (the local mechanisms).
    PureLocal,
}

/// What one round spent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RoundCost {
    /// ρ-zCDP of the round's sum.
    Zcdp {
        /// ρ.
        rho: f64,
    },
    /// (ε, δ)-DP of the round's sum.
    Approx {
        /// ε.
        epsilon: f64,
        /// δ.
        delta: f64,
    },
    /// ε-LDP of each user's message.
    PureLocal {
        /// ε.
        epsilon: f64,
    },
}

impl RoundCost {
    fn family(&self) -> Family {
        match self {
            RoundCost::Zcdp { .. } => Family::Zcdp,
            RoundCost::Approx { .. } => Family::Approx,
            RoundCost::PureLocal { .. } => Family::PureLocal,
        }
    }

    fn check(&self) -> Result<()> {
        let ok = |x: f64| x.is_finite() && x >= 0.0;
        let good = match *self {
            RoundCost::Zcdp { rho } => ok(rho),
            RoundCost::Approx { epsilon, delta } => ok(epsilon) && ok(delta) && delta < 1.0,
            RoundCost::PureLocal { epsilon } => ok(epsilon),
        };
        if good {
            Ok(())
        } else {
            Err(Error::param(
                "round cost",
                format!("{self:?} is not a guarantee (finite, non-negative, δ < 1)"),
            ))
        }
    }
}

/// The total guarantee of the rounds so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spent {
    /// ε of the composition.
    pub epsilon: f64,
    /// δ of the composition (0 for pure local DP).
    pub delta: f64,
    /// Σρ (zCDP family only).
    pub rho: Option<f64>,
    /// Rounds composed.
    pub rounds: u64,
}

/// A round's share of the budget when it is split evenly ([`RoundsAccountant::per_round`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundTarget {
    /// The ε to plan each round for (at `delta`; for the zCDP family, the ε whose tight
    /// conversion at the budget's δ is the round's ρ share).
    pub epsilon: f64,
    /// The δ to plan each round for (zCDP: the budget's δ, which the rounds share rather than
    /// add; Approx: δ/R; local: 0).
    pub delta: f64,
    /// The round's ρ share (zCDP family).
    pub rho: Option<f64>,
}

/// Relative slack allowed when a total is compared with the budget: an even split summed back
/// may exceed the budget by a few ulps.
const SLACK: f64 = 1e-9;

/// The rounds of one run against a budget given up front.
#[derive(Debug, Clone)]
pub struct RoundsAccountant {
    family: Family,
    epsilon: f64,
    delta: f64,
    rounds: Vec<RoundCost>,
}

impl RoundsAccountant {
    /// A run of `family` with the budget `(epsilon, delta)` (δ = 0 only for pure local DP).
    pub fn new(family: Family, epsilon: f64, delta: f64) -> Result<RoundsAccountant> {
        if !(epsilon.is_finite() && epsilon > 0.0) {
            return Err(Error::param(
                "budget epsilon",
                format!("the budget's ε must be a positive finite number, got {epsilon}"),
            ));
        }
        let delta_ok = match family {
            Family::PureLocal => delta == 0.0,
            _ => delta > 0.0 && delta < 1.0,
        };
        if !delta_ok {
            let want = match family {
                Family::PureLocal => "0 (pure local DP has no δ)",
                _ => "in (0, 1)",
            };
            return Err(Error::param(
                "budget delta",
                format!("the budget's δ must be {want}, got {delta}"),
            ));
        }
        Ok(RoundsAccountant {
            family,
            epsilon,
            delta,
            rounds: Vec::new(),
        })
    }

    /// The family the run composes.
    pub fn family(&self) -> Family {
        self.family
    }

    /// The budget `(ε, δ)`.
    pub fn budget(&self) -> (f64, f64) {
        (self.epsilon, self.delta)
    }

    /// Each round's share when the budget is split evenly over `rounds` rounds (module
    /// documentation).
    pub fn per_round(&self, rounds: u64) -> Result<RoundTarget> {
        if rounds == 0 {
            return Err(Error::param("rounds", "at least one round"));
        }
        let r = rounds as f64;
        Ok(match self.family {
            Family::Zcdp => {
                let rho = zcdp::rho_for_epsilon(self.epsilon, self.delta)? / r;
                RoundTarget {
                    epsilon: zcdp::epsilon(rho, self.delta)?,
                    delta: self.delta,
                    rho: Some(rho),
                }
            }
            Family::Approx => RoundTarget {
                epsilon: self.epsilon / r,
                delta: self.delta / r,
                rho: None,
            },
            Family::PureLocal => RoundTarget {
                epsilon: self.epsilon / r,
                delta: 0.0,
                rho: None,
            },
        })
    }

    /// The total of the rounds so far, with `next` added when given.
    pub fn total(&self, next: Option<RoundCost>) -> Result<Spent> {
        let costs: Vec<RoundCost> = self.rounds.iter().copied().chain(next).collect();
        for c in &costs {
            c.check()?;
            if c.family() != self.family {
                return Err(Error::param(
                    "round cost",
                    format!(
                        "a {:?} round in a {:?} run: one run composes one family",
                        c.family(),
                        self.family
                    ),
                ));
            }
        }
        let rounds = costs.len() as u64;
        let (mut rho, mut eps, mut delta) = (0.0, 0.0, 0.0);
        for c in &costs {
            match *c {
                RoundCost::Zcdp { rho: r } => rho += r,
                RoundCost::Approx { epsilon, delta: d } => {
                    eps += epsilon;
                    delta += d;
                }
                RoundCost::PureLocal { epsilon } => eps += epsilon,
            }
        }
        Ok(match self.family {
            Family::Zcdp => Spent {
                epsilon: if rounds == 0 {
                    0.0
                } else {
                    zcdp::epsilon(rho, self.delta)?
                },
                delta: if rounds == 0 { 0.0 } else { self.delta },
                rho: Some(rho),
                rounds,
            },
            _ => Spent {
                epsilon: eps,
                delta,
                rho: None,
                rounds,
            },
        })
    }

    /// Whether `next` fits the budget after the rounds so far; the refusal says by how much it
    /// does not.
    pub fn check(&self, next: RoundCost) -> Result<Spent> {
        let t = self.total(Some(next))?;
        let over_eps = t.epsilon > self.epsilon * (1.0 + SLACK);
        let over_delta = t.delta > self.delta * (1.0 + SLACK);
        if over_eps || over_delta {
            let now = self.total(None)?;
            return Err(Error::param(
                "budget",
                format!(
                    "round {} would bring the total to (ε = {:.6}, δ = {:e}), past the budget \
                     (ε = {}, δ = {:e}); after {} round(s) the total is (ε = {:.6}, δ = {:e}). \
                     The round was not run",
                    t.rounds,
                    t.epsilon,
                    t.delta,
                    self.epsilon,
                    self.delta,
                    now.rounds,
                    now.epsilon,
                    now.delta
                ),
            ));
        }
        Ok(t)
    }

    /// Record a round that ran: checked against the budget first, and refused (nothing
    /// recorded) when it would exceed it.
    pub fn charge(&mut self, cost: RoundCost) -> Result<Spent> {
        let t = self.check(cost)?;
        self.rounds.push(cost);
        Ok(t)
    }

    /// The rounds recorded.
    pub fn rounds(&self) -> &[RoundCost] {
        &self.rounds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zcdp_rounds_add_rho_and_an_even_split_spends_the_budget() {
        let mut acc = RoundsAccountant::new(Family::Zcdp, 2.0, 1e-5).unwrap();
        let share = acc.per_round(20).unwrap();
        let rho = share.rho.unwrap();
        // the split: 20 shares of ρ add back to the budget's ρ, whose conversion is ε = 2
        let whole = zcdp::rho_for_epsilon(2.0, 1e-5).unwrap();
        assert!((rho * 20.0 - whole).abs() <= 1e-12 * whole);
        for _ in 0..20 {
            acc.charge(RoundCost::Zcdp { rho }).unwrap();
        }
        let t = acc.total(None).unwrap();
        assert!((t.epsilon - 2.0).abs() < 1e-6, "{t:?}");
        assert_eq!(t.rounds, 20);
        // one more round is refused and not recorded
        let e = acc.charge(RoundCost::Zcdp { rho }).unwrap_err().to_string();
        assert!(
            e.contains("round 21") && e.contains("past the budget"),
            "{e}"
        );
        assert_eq!(acc.rounds().len(), 20);
        // power: composing by adding ε's (wrong for zCDP rounds) would total 20·ε_round,
        // far from the 2.0 the zCDP total gives
        assert!(share.epsilon * 20.0 > 4.0, "{share:?}");
    }

    #[test]
    fn eight_gaussian_rounds_reach_opendps_published_value() {
        // Eight rounds of the Gaussian mechanism at scale 4·√8 (sensitivity 1) are ρ = 1/256
        // each; composed, ρ = 1/32, the Gaussian at scale 4, whose ε(δ = 1e-3) OpenDP publishes
        // as 0.6880024554878086 (crate `opendp` 0.14, zCDP_to_approxDP tests).
        let mut acc = RoundsAccountant::new(Family::Zcdp, 1.0, 1e-3).unwrap();
        for _ in 0..8 {
            acc.charge(RoundCost::Zcdp { rho: 1.0 / 256.0 }).unwrap();
        }
        let t = acc.total(None).unwrap();
        assert!((t.epsilon - 0.688_002_455_487_808_6).abs() < 1e-11, "{t:?}");
        assert_eq!(t.rho, Some(1.0 / 32.0));
        // power: basic composition of the eight rounds' own ε at δ/8 each is far above it
        let one = zcdp::epsilon(1.0 / 256.0, 1e-3 / 8.0).unwrap();
        assert!(8.0 * one > 1.5, "{one}");
    }

    #[test]
    fn approx_and_local_rounds_compose_basically() {
        let mut acc = RoundsAccountant::new(Family::Approx, 3.0, 3e-6).unwrap();
        let share = acc.per_round(3).unwrap();
        assert_eq!((share.epsilon, share.delta), (1.0, 1e-6));
        for _ in 0..3 {
            acc.charge(RoundCost::Approx {
                epsilon: 1.0,
                delta: 1e-6,
            })
            .unwrap();
        }
        let t = acc.total(None).unwrap();
        assert_eq!((t.epsilon, t.rounds), (3.0, 3));
        assert!((t.delta - 3e-6).abs() < 1e-18);
        // a δ overrun alone is refused
        let mut acc = RoundsAccountant::new(Family::Approx, 10.0, 1e-6).unwrap();
        acc.charge(RoundCost::Approx {
            epsilon: 1.0,
            delta: 1e-6,
        })
        .unwrap();
        assert!(acc
            .check(RoundCost::Approx {
                epsilon: 1.0,
                delta: 1e-7
            })
            .is_err());
        let mut local = RoundsAccountant::new(Family::PureLocal, 8.0, 0.0).unwrap();
        assert_eq!(local.per_round(4).unwrap().epsilon, 2.0);
        for _ in 0..4 {
            local.charge(RoundCost::PureLocal { epsilon: 2.0 }).unwrap();
        }
        assert_eq!(local.total(None).unwrap().epsilon, 8.0);
        assert!(local
            .charge(RoundCost::PureLocal { epsilon: 0.01 })
            .is_err());
    }

    #[test]
    fn bad_budgets_and_mixed_families_are_refused() {
        assert!(RoundsAccountant::new(Family::Zcdp, 0.0, 1e-5).is_err());
        assert!(RoundsAccountant::new(Family::Zcdp, 1.0, 0.0).is_err());
        assert!(RoundsAccountant::new(Family::PureLocal, 1.0, 1e-5).is_err());
        assert!(RoundsAccountant::new(Family::Approx, f64::NAN, 1e-5).is_err());
        let acc = RoundsAccountant::new(Family::Zcdp, 1.0, 1e-5).unwrap();
        assert!(acc.check(RoundCost::PureLocal { epsilon: 0.1 }).is_err());
        assert!(acc.check(RoundCost::Zcdp { rho: f64::NAN }).is_err());
        assert!(acc.per_round(0).is_err());
        assert_eq!(acc.total(None).unwrap().epsilon, 0.0);
    }
}
