//! The privacy model (DESIGN.md §2) and how a release states its guarantee.
//!
//! * Data domain: each row `u ∈ [-1,1]^p`.
//! * Neighbouring datasets (β-adjacency, Li & Li Definition 2.2): one coordinate of one row differs
//!   by at most β ([`Neighbour::Coordinate`]); or, the generalisation, one row differs by at most β
//!   in ℓ₁ norm ([`Neighbour::L1`]). Both give the same ℓ₂-sensitivities for linear projections: the
//!   ℓ₂ norm of `Wᵀd` over the ℓ₁ ball of radius β is maximised at a vertex `±β·e_i`.
//! * Every mechanism privatises each row with independent randomness, so the per-row guarantee is
//!   the dataset guarantee (parallel composition over disjoint rows).
//! * The projection is public (its seed is in the release); the noise is secret.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Which datasets count as neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Neighbour {
    /// One coordinate of one row differs by at most β (the papers' β-adjacency, the default).
    Coordinate,
    /// One row differs by at most β in ℓ₁ norm.
    L1,
}

impl Neighbour {
    /// Parse `coordinate` (alias `beta`) or `l1`.
    pub fn parse(s: &str) -> Result<Neighbour> {
        match s.to_ascii_lowercase().as_str() {
            "coordinate" | "beta" | "coord" => Ok(Neighbour::Coordinate),
            "l1" => Ok(Neighbour::L1),
            other => Err(Error::param(
                "--neighbour",
                format!("unknown neighbour relation '{other}' (expected coordinate or l1)"),
            )),
        }
    }

    /// The command-line name.
    pub fn name(&self) -> &'static str {
        match self {
            Neighbour::Coordinate => "coordinate",
            Neighbour::L1 => "l1",
        }
    }

    /// Plain-language description for the given β.
    pub fn describe(&self, beta: f64) -> String {
        match self {
            Neighbour::Coordinate => {
                format!("changing any single coordinate of any one row by at most β = {beta}")
            }
            Neighbour::L1 => {
                format!("changing any one row by at most β = {beta} in ℓ₁ norm")
            }
        }
    }
}

/// The kind of guarantee a release carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GuaranteeKind {
    /// Pure ε-differential privacy.
    PureDp,
    /// Approximate (ε,δ)-differential privacy.
    ApproxDp,
    /// Individual DP: protects only neighbours of *this* dataset (strictly weaker).
    IndividualDp,
    /// No privacy at all (non-private reference, or reproducible noise from a known seed).
    None,
}

impl GuaranteeKind {
    /// The family of the guarantee as evaluation reports name it: `DP` (ε- or (ε, δ)-differential
    /// privacy), `iDP` (individual DP) or `none`.
    pub fn short(&self) -> &'static str {
        match self {
            GuaranteeKind::PureDp | GuaranteeKind::ApproxDp => "DP",
            GuaranteeKind::IndividualDp => "iDP",
            GuaranteeKind::None => "none",
        }
    }

    /// What the family protects, in one or two sentences (reports explain each family present
    /// once). Pure and approximate DP share one text, as they share [`short`](Self::short).
    pub fn explain(&self) -> &'static str {
        match self {
            GuaranteeKind::PureDp | GuaranteeKind::ApproxDp => {
                "**DP** (ε- or (ε, δ)-differential privacy): for *every* pair of neighbouring \
                 datasets — one row changed within the neighbour relation — the probability of any \
                 release changes by at most a factor e^ε (plus δ)."
            }
            GuaranteeKind::IndividualDp => {
                "**iDP** (individual DP, Li & Li Definition A.1): the same bound, but only between \
                 *this* dataset and each of its own neighbours, not between two arbitrary \
                 neighbouring datasets. It is strictly weaker than DP: noise goes only where this \
                 data lets a neighbour change the output (the noise set A), so an iDP result at \
                 some ε is not comparable with a DP result at the same ε, and `publish` demands \
                 `--individual-dp` for these mechanisms."
            }
            GuaranteeKind::None => {
                "**none**: the ε = ∞ references — the public map without noise — give no privacy."
            }
        }
    }
}

/// A release's privacy guarantee.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Guarantee {
    /// Kind of guarantee.
    pub kind: GuaranteeKind,
    /// ε.
    pub epsilon: f64,
    /// δ (absent for pure DP).
    pub delta: Option<f64>,
    /// β of the neighbour relation.
    pub beta: f64,
    /// Neighbour relation.
    pub neighbour: Neighbour,
}

impl Guarantee {
    /// Short label, e.g. `(5, 1e-6)-DP`.
    pub fn label(&self) -> String {
        match (self.kind, self.delta) {
            (GuaranteeKind::PureDp, _) => format!("{}-DP", self.epsilon),
            (GuaranteeKind::ApproxDp, Some(d)) => format!("({}, {:e})-DP", self.epsilon, d),
            (GuaranteeKind::IndividualDp, Some(d)) => format!("({}, {:e})-iDP", self.epsilon, d),
            (GuaranteeKind::IndividualDp, None) => format!("{}-iDP", self.epsilon),
            (GuaranteeKind::ApproxDp, None) => format!("{}-DP", self.epsilon),
            (GuaranteeKind::None, _) => "not private".into(),
        }
    }

    /// The guarantee in one plain sentence.
    pub fn sentence(&self) -> String {
        let nb = self.neighbour.describe(self.beta);
        let e = self.epsilon;
        match (self.kind, self.delta) {
            (GuaranteeKind::PureDp, _) => format!(
                "ε-differential privacy with ε = {e}: {nb} changes the probability of any released \
                 sketch by at most a factor e^{e}."
            ),
            (GuaranteeKind::ApproxDp, d) => format!(
                "(ε, δ)-differential privacy with ε = {e}, δ = {:e}: {nb} changes the probability of \
                 any set of released sketches by at most a factor e^{e}, plus {:e}.",
                d.unwrap_or(0.0),
                d.unwrap_or(0.0)
            ),
            (GuaranteeKind::IndividualDp, d) => format!(
                "INDIVIDUAL differential privacy (iDP, weaker than DP) with ε = {e}{}: only \
                 datasets obtained from THIS dataset by {nb} are protected; the guarantee does not \
                 hold between two arbitrary neighbouring datasets.",
                d.map(|d| format!(", δ = {d:e}")).unwrap_or_default()
            ),
            (GuaranteeKind::None, _) => "NO privacy guarantee: the noise was drawn from a \
                 user-supplied seed (--noise-seed) and can be reproduced by anyone who knows it."
                .to_string(),
        }
    }
}

/// Validate ε: positive and finite.
pub fn check_epsilon(epsilon: f64) -> Result<()> {
    if epsilon.is_finite() && epsilon > 0.0 {
        Ok(())
    } else {
        Err(Error::param(
            "--epsilon",
            format!("ε must be a positive finite number, got {epsilon}"),
        ))
    }
}

/// Validate δ: strictly between 0 and 1.
pub fn check_delta(delta: f64) -> Result<()> {
    if delta > 0.0 && delta < 1.0 {
        Ok(())
    } else {
        Err(Error::param(
            "--delta",
            format!("δ must lie strictly between 0 and 1, got {delta}"),
        ))
    }
}

/// Validate β: positive and finite.
pub fn check_beta(beta: f64) -> Result<()> {
    if beta.is_finite() && beta > 0.0 {
        Ok(())
    } else {
        Err(Error::param(
            "--beta",
            format!("β must be a positive finite number, got {beta}"),
        ))
    }
}
