//! The guarantee of a distributed round, as a value: what is private (the *sum* of the
//! clients' vectors, never one message), under which neighbouring relation, by which theorem.
//! `dprp aggregate` and `dprp calibrate` render it; the library user reads its fields.
//!
//! | encoder | neighbours | theorem | accounting |
//! |---|---|---|---|
//! | DDG, sketch + DDG | one client's vector added or removed | Chen et al. 2022, Theorem E.1 | ρ-zCDP, tight conversion (Canonne, Kamath & Steinke 2020) |
//! | Binomial (π_sk) | one client's vector replaced, `n` fixed | Agarwal et al. 2018 (cpSGD), Theorem 1 with Lemma 7 | δ split in three: binomial tail, sensitivity bounds, rotation clamp |

use super::accountant::params::{BinomialPlan, DdgPlan};
use crate::privacy::guarantee::fmt_param;

/// Which datasets of client vectors are neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SumNeighbour {
    /// One client's vector added or removed (DDG).
    AddRemove,
    /// One client's vector replaced by another, the number of clients fixed (cpSGD).
    ReplaceFixedN,
}

/// How the (ε, δ) was reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Accounting {
    /// ρ-zCDP of the summed round (Theorem E.1), converted to (ε, δ) tightly.
    Zcdp {
        /// ρ.
        rho: f64,
    },
    /// cpSGD Theorem 1 with `N` binomial trials in the sum.
    Binomial {
        /// `N = n·m`.
        n_trials: u64,
    },
}

/// (ε, δ)-DP of the sum of the clients' vectors.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DistributedGuarantee {
    /// ε achieved (at most the target).
    pub epsilon: f64,
    /// δ.
    pub delta: f64,
    /// The neighbouring relation.
    pub neighbour: SumNeighbour,
    /// The accounting behind (ε, δ).
    pub accounting: Accounting,
}

/// The sentence every round statement ends with: what secure aggregation hides.
const SECAGG_SENTENCE: &str = "The server sees only the sum mod M: the pairwise masks cancel in \
                               the sum and hide each client's message among the others'.";

impl DistributedGuarantee {
    /// The guarantee of a DDG (or sketch + DDG) plan.
    pub fn of_ddg(plan: &DdgPlan) -> DistributedGuarantee {
        DistributedGuarantee {
            epsilon: plan.epsilon,
            delta: plan.delta,
            neighbour: SumNeighbour::AddRemove,
            accounting: Accounting::Zcdp { rho: plan.rho },
        }
    }

    /// The guarantee of a Binomial (π_sk) plan.
    pub fn of_binomial(plan: &BinomialPlan) -> DistributedGuarantee {
        DistributedGuarantee {
            epsilon: plan.epsilon,
            delta: plan.delta,
            neighbour: SumNeighbour::ReplaceFixedN,
            accounting: Accounting::Binomial {
                n_trials: plan.n_trials,
            },
        }
    }

    /// The full statement of a round with `clients` clients (`dprp aggregate`).
    pub fn statement(&self, clients: u64) -> String {
        let eps = fmt_param(self.epsilon);
        match self.accounting {
            Accounting::Zcdp { rho } => format!(
                "({eps}, {:e})-DP for the sum of the {clients} clients' vectors — neighbours \
                 differ by one client's vector added or removed (Chen et al. 2022, Theorem E.1: \
                 {rho:.4e}-zCDP, converted with the tight bound of Canonne, Kamath & Steinke \
                 2020). {SECAGG_SENTENCE}",
                self.delta
            ),
            Accounting::Binomial { n_trials } => format!(
                "({eps}, {:e})-DP for the sum of the {clients} clients' vectors — neighbours \
                 differ by one client's vector replaced by another, with n fixed (Agarwal et al. \
                 2018, cpSGD Theorem 1 with N = n·m = {n_trials} trials and the sensitivities of \
                 Lemma 7, δ split in three: binomial tail, sensitivity bounds, rotation clamp). \
                 {SECAGG_SENTENCE}",
                self.delta
            ),
        }
    }

    /// The one-line statement of a plan (`dprp calibrate`).
    pub fn summary(&self) -> String {
        let eps = fmt_param(self.epsilon);
        match self.accounting {
            Accounting::Zcdp { rho } => format!(
                "({eps}, {:e})-DP for the sum, one client's vector added or removed (Chen et al. \
                 2022 Theorem E.1: {rho:.4e}-zCDP, tight conversion of Canonne, Kamath & Steinke \
                 2020)",
                self.delta
            ),
            Accounting::Binomial { .. } => format!(
                "({eps}, {:e})-DP for the sum, one client's vector replaced with n fixed (cpSGD \
                 Theorem 1 with Lemma 7's sensitivities; δ split three ways)",
                self.delta
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_name_the_neighbours_and_the_theorem() {
        let g = DistributedGuarantee {
            epsilon: 1.0,
            delta: 1e-5,
            neighbour: SumNeighbour::AddRemove,
            accounting: Accounting::Zcdp { rho: 0.0625 },
        };
        let s = g.statement(100);
        assert!(
            s.starts_with("(1.0000, 1e-5)-DP for the sum of the 100 clients' vectors"),
            "{s}"
        );
        assert!(s.contains("added or removed") && s.contains("6.2500e-2-zCDP"));
        assert!(s.ends_with(SECAGG_SENTENCE));
        let b = DistributedGuarantee {
            neighbour: SumNeighbour::ReplaceFixedN,
            accounting: Accounting::Binomial { n_trials: 4000 },
            ..g
        };
        assert!(b
            .statement(100)
            .contains("replaced by another, with n fixed"));
        assert!(b.statement(100).contains("N = n·m = 4000 trials"));
        assert!(b.summary().contains("replaced with n fixed"));
        assert!(!g.summary().contains("replaced"));
    }
}
