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
//! * Local DP ([`GuaranteeKind::LocalDp`], [`Neighbour::ReplaceOne`]): each user privatises their
//!   own vector, and *any* two inputs of the mechanism's domain ([`InputDomain`]) are neighbours —
//!   a much stronger promise than β-adjacency (see [`crate::mechanism::local`]).

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
    /// Local DP: one user's input replaced by *any* other input of the mechanism's domain (the
    /// guarantee's [`LocalGuarantee::domain`]); β does not apply.
    ReplaceOne,
}

impl Neighbour {
    /// Parse `coordinate` (alias `beta`) or `l1`.
    pub fn parse(s: &str) -> Result<Neighbour> {
        match s.to_ascii_lowercase().as_str() {
            "coordinate" | "beta" | "coord" => Ok(Neighbour::Coordinate),
            "l1" => Ok(Neighbour::L1),
            other => Err(Error::param(
                "‹neighbour›",
                format!("unknown neighbour relation '{other}' (expected coordinate or l1)"),
            )),
        }
    }

    /// The command-line name.
    pub fn name(&self) -> &'static str {
        match self {
            Neighbour::Coordinate => "coordinate",
            Neighbour::L1 => "l1",
            Neighbour::ReplaceOne => "replace-one",
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
            Neighbour::ReplaceOne => "replacing any one row by any other input".into(),
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
    /// Local ε-DP: each row is privatised on its own, and any two inputs of the domain are
    /// neighbours (replace-one; much stronger than β-adjacency).
    LocalDp,
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
            GuaranteeKind::LocalDp => "LDP",
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
                 `‹individual_dp›` for these mechanisms."
            }
            GuaranteeKind::LocalDp => {
                "**LDP** (local ε-differential privacy, replace-one): each row is privatised on its \
                 own, and replacing it by *any* other input of the domain (e.g. any vector of the \
                 unit ball, as far apart as v and −v) changes the probability of its output by at \
                 most a factor e^ε. This is a much stronger promise than DP under β-adjacency (one \
                 coordinate changed by at most β), so an LDP result at some ε is not like for like \
                 with a DP result at the same ε."
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
    /// The input domain and any separated split, for local DP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalGuarantee>,
}

/// The input domain, in [`crate::data`] since issue 27 (re-exported here).
pub use crate::data::domain::InputDomain;

/// The parts of a local-DP guarantee beyond ε.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LocalGuarantee {
    /// Any two inputs of this domain are neighbours.
    pub domain: InputDomain,
    /// `(ε₁, ε₂)`: direction and magnitude budgets of a separated mechanism (Bhowmick et al.
    /// Definition 4; eq. (22)); `ε = ε₁ + ε₂`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separated: Option<(f64, f64)>,
}

impl Guarantee {
    /// The local-DP guarantee of a mechanism whose inputs lie in `domain`.
    pub fn local(epsilon: f64, domain: InputDomain, separated: Option<(f64, f64)>) -> Guarantee {
        Guarantee {
            kind: GuaranteeKind::LocalDp,
            epsilon,
            delta: None,
            beta: 0.0,
            neighbour: Neighbour::ReplaceOne,
            local: Some(LocalGuarantee { domain, separated }),
        }
    }

    /// The domain text of a local guarantee, e.g. `replace-one: any two inputs in the unit ball`.
    pub fn replace_one(&self) -> String {
        let dom = self
            .local
            .map(|l| l.domain.describe())
            .unwrap_or_else(|| "the domain".into());
        format!("replace-one: any two inputs in {dom}")
    }

    /// Short label, e.g. `(5, 1e-6)-DP`.
    pub fn label(&self) -> String {
        match (self.kind, self.delta) {
            (GuaranteeKind::PureDp, _) => format!("{}-DP", self.epsilon),
            (GuaranteeKind::ApproxDp, Some(d)) => format!("({}, {:e})-DP", self.epsilon, d),
            (GuaranteeKind::IndividualDp, Some(d)) => format!("({}, {:e})-iDP", self.epsilon, d),
            (GuaranteeKind::IndividualDp, None) => format!("{}-iDP", self.epsilon),
            (GuaranteeKind::ApproxDp, None) => format!("{}-DP", self.epsilon),
            (GuaranteeKind::LocalDp, _) => match self.local.and_then(|l| l.separated) {
                Some((e1, e2)) => format!("({e1}, {e2})-separated, {}-LDP", self.epsilon),
                None => format!("{}-LDP", self.epsilon),
            },
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
            (GuaranteeKind::LocalDp, _) => {
                let sep = match self.local.and_then(|l| l.separated) {
                    Some((e1, e2)) => format!(
                        " It is moreover (ε₁, ε₂)-separated with ε₁ = {e1} for the direction and \
                         ε₂ = {e2} for the norm (Bhowmick et al., eq. (22)): the direction alone \
                         is protected at ε₁, the norm alone at ε₂."
                    ),
                    None => String::new(),
                };
                format!(
                    "ε-LDP ({}) with ε = {e}: each row was privatised on its own, and replacing it \
                     by any other input of the domain changes the probability of its released \
                     vector by at most a factor e^{e}.{sep}",
                    self.replace_one()
                )
            }
            (GuaranteeKind::None, _) => "NO privacy guarantee: the noise was drawn from a \
                 user-supplied seed (‹noise_seed›) and can be reproduced by anyone who knows it."
                .to_string(),
        }
    }
}

/// The largest ε a mechanism accepts, 10⁶. Beyond it a guarantee promises nothing a user could
/// want (e^ε already exceeds every probability ratio an f64 holds from ε ≈ 709), and dprp's
/// calibrations are checked only up to it: σ non-increasing in ε from 1 to 10⁶ for every
/// Gaussian mechanism (`cli/tests/huge_epsilon.rs`), finite flip probabilities and estimates for the
/// sign mechanisms, finite local-DP constants. Past it they broke: the analytic σ came back as
/// 1.000173 at ε = 10³⁰⁰ (more noise than at ε = 5: the bisection compared NaN), lattice noise
/// was refused blaming β from ε ≈ 10²¹, PrivUnitG failed from ε = 10²⁰ and printed an error of
/// 10¹⁵² at 10³⁰⁸, and a sign release made at 10³⁰⁸ printed a NaN cosine.
pub const MAX_EPSILON: f64 = 1e6;

/// Validate ε: positive, finite and at most [`MAX_EPSILON`].
pub fn check_epsilon(epsilon: f64) -> Result<()> {
    check_epsilon_named("‹epsilon›", epsilon)
}

/// [`check_epsilon`] for the option `name` (`--epsilon`, `--epsilon-norm`, …).
pub fn check_epsilon_named(name: &str, epsilon: f64) -> Result<()> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(Error::param(
            name,
            format!("ε must be a positive finite number, got {epsilon}"),
        ));
    }
    if epsilon > MAX_EPSILON {
        return Err(Error::param(
            name,
            format!(
                "ε = {epsilon:e} is above dprp's limit of 1e6: a guarantee that weak promises \
                 nothing, and σ, flip probabilities and local-DP constants are computed and \
                 checked only up to it (for an unprivatised reference, evaluate at ε = 1e6 or \
                 use the data itself)"
            ),
        ));
    }
    Ok(())
}

/// Validate δ: strictly between 0 and 1.
pub fn check_delta(delta: f64) -> Result<()> {
    if delta > 0.0 && delta < 1.0 {
        Ok(())
    } else {
        Err(Error::param(
            "‹delta›",
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
            "‹beta›",
            format!("β must be a positive finite number, got {beta}"),
        ))
    }
}

/// A privacy parameter for people: four decimals in `[10⁻³, 10⁶)`, else four significant digits
/// in scientific notation (`1.0000e-9`, never `0.0000`), `∞` for infinity.
pub fn fmt_param(x: f64) -> String {
    if x.is_infinite() {
        "∞".into()
    } else if x == 0.0 || (1e-3..1e6).contains(&x.abs()) {
        format!("{x:.4}")
    } else {
        format!("{x:.4e}")
    }
}

#[cfg(test)]
mod fmt_tests {
    use super::fmt_param;

    #[test]
    fn parameters_keep_their_digits() {
        assert_eq!(fmt_param(1.0), "1.0000");
        assert_eq!(fmt_param(1e-9), "1.0000e-9");
        assert_eq!(fmt_param(1e298), "1.0000e298");
        assert_eq!(fmt_param(0.5), "0.5000");
        assert_eq!(fmt_param(f64::INFINITY), "∞");
    }
}
