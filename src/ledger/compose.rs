//! Composition: the total guarantee of several releases of one dataset, and the budget check.
//!
//! * **Basic composition** (Dwork, McSherry, Nissim, Smith 2006; Dwork & Roth 2014, Theorem 3.16):
//!   releases that are (εᵢ, δᵢ)-DP for the same neighbour relation are together (Σεᵢ, Σδᵢ)-DP.
//!   It always applies; pure ε-DP and ε-LDP releases have δᵢ = 0.
//! * **zCDP composition** (Bun & Steinke 2016): a Gaussian mechanism with ℓ₂-sensitivity Δ and
//!   noise σ is ρ-zCDP with ρ = Δ²/(2σ²) (their Proposition 1.6); ρ's add (Lemma 2.3); a pure
//!   ε-DP release is ε²/2-zCDP (Proposition 1.4). When *every* release of a dataset is a Gaussian
//!   DP release (its recorded calibration gives Δ₂ and σ) or pure ε-DP, the total ρ is converted
//!   to (ε, δ) with the tight conversion of Canonne, Kamath & Steinke ([`crate::privacy::zcdp`]).
//!   Both totals are valid guarantees at once; the ledger shows both and a budget is met when
//!   either fits it.
//!
//! **Neighbour relations.** A total holds for the datasets that are neighbours under *every*
//! release's relation (each release bounds the privacy loss for those pairs; basic composition
//! then adds the bounds). dprp names that common relation when it is one of its own:
//! coordinate-β ⊂ ℓ₁-β (a coordinate moved by ≤ β is a row moved by ≤ β in ℓ₁), a smaller β is a
//! smaller relation, and local DP's replace-one (any one row replaced by any other input of the
//! domain) contains every change of one row, so it contains both. The common relation of a set is
//! therefore coordinate if any release uses coordinate (else ℓ₁), at the smallest β; replace-one
//! when every release is local DP. β is measured on the *scaled* data each release saw: releases
//! whose scaling differs (`--scale 255` against none, say) put β on different scales, and dprp
//! refuses to sum them rather than guess a conversion (a budget cannot be checked either). A total
//! is individual DP (iDP) when any release is iDP (DP implies iDP), and not private when any
//! release is (its noise came from a known `--noise-seed`).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::mechanism::MechanismRecord;
use crate::privacy::guarantee::{Guarantee, GuaranteeKind, Neighbour};
use crate::privacy::zcdp;
use crate::release::{DatasetRecord, ReleaseMeta};

/// The Gaussian calibration of a release, when its output is a Gaussian mechanism: the noise of
/// standard deviation `sigma` added to a function of ℓ₂-sensitivity `sensitivity`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GaussianParams {
    /// Δ₂ under the release's neighbour relation.
    pub sensitivity: f64,
    /// σ of the noise.
    pub sigma: f64,
}

/// One release as the ledger accounts for it (from a release's metadata or a journal line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The release file (as recorded; relative to the ledger directory when inside it).
    pub file: String,
    /// The release's BLAKE3 checksum (hex), which identifies it.
    pub checksum: String,
    /// When it was written (RFC 3339), as recorded in the release.
    pub created: String,
    /// The mechanism's name.
    pub mechanism: String,
    /// Rows released.
    pub n: u64,
    /// The guarantee the release states.
    pub guarantee: Guarantee,
    /// False when the noise came from a `--noise-seed`.
    pub private: bool,
    /// The scaling applied before the mechanism (β is measured after it).
    pub scaling: String,
    /// Present when the release is a Gaussian (ε, δ)-DP mechanism, for zCDP accounting.
    pub gaussian: Option<GaussianParams>,
    /// The dataset fingerprint, if the release has one.
    pub dataset: Option<DatasetRecord>,
    /// A release made by a job of many processes (`dprp.spark.publish`): charged by its driver
    /// before any task ran, then confirmed with the finished release or withdrawn (absent for a
    /// release recorded once, as `publish --ledger` does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation: Option<Reservation>,
}

/// Where a reserved release stands ([`Entry::reservation`]). The journal holds one line per step;
/// [`crate::ledger::Ledger::journal`] folds them: a confirmation replaces its reservation (the
/// release counted once, as finished), a withdrawal removes it, and a reservation alone (a job
/// whose driver stopped before either) stays counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reservation {
    /// Random identifier shared by a reservation's lines (32 hex digits).
    pub id: String,
    /// This line's step.
    pub state: ReservationState,
}

/// The step a journal line records of a reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReservationState {
    /// Charged before the job ran: the release's guarantee and dataset, no file yet.
    Reserved,
    /// The release is finished: the line is the release's own entry.
    Confirmed,
    /// The job failed and left nothing: the reservation no longer counts.
    Withdrawn,
}

impl Entry {
    /// The ledger's view of a release.
    pub fn from_meta(file: String, meta: &ReleaseMeta, checksum: &[u8; 32]) -> Entry {
        let mut e = Entry::provisional(&meta.mechanism, &meta.guarantee, meta.private);
        e.file = file;
        e.checksum = super::fingerprint::hex(checksum);
        e.created = meta.created.clone();
        e.n = meta.n;
        e.scaling = meta.scaling.describe();
        e.dataset = meta.dataset.clone();
        e
    }

    /// A release about to be made (no file, checksum, rows or fingerprint yet), to check a
    /// budget before any data is read.
    pub fn provisional(rec: &MechanismRecord, guarantee: &Guarantee, private: bool) -> Entry {
        let gaussian = match (&rec.gaussian, &rec.sign, guarantee.kind) {
            // Real-valued Gaussian releases: x + N(0, σ²I) with x of ℓ₂-sensitivity Δ₂. (Sign
            // and individual-DP mechanisms with a Gaussian record are not this mechanism.)
            (Some(g), None, GuaranteeKind::ApproxDp) => Some(GaussianParams {
                sensitivity: g.sensitivity,
                sigma: g.sigma,
            }),
            _ => None,
        };
        Entry {
            file: String::new(),
            checksum: String::new(),
            created: String::new(),
            mechanism: rec.name.name().to_string(),
            n: 0,
            guarantee: guarantee.clone(),
            private: private && guarantee.kind != GuaranteeKind::None,
            scaling: String::new(),
            gaussian,
            dataset: None,
            reservation: None,
        }
    }

    /// δ of the release (0 for pure ε).
    pub fn delta(&self) -> f64 {
        self.guarantee.delta.unwrap_or(0.0)
    }

    /// The release's zCDP parameter: Δ²/(2σ²) for a Gaussian release, ε²/2 for a pure ε-DP or
    /// ε-LDP one; `None` otherwise (approximate DP without a Gaussian calibration, iDP, not
    /// private).
    pub fn rho(&self) -> Option<f64> {
        if !self.private {
            return None;
        }
        if let Some(g) = self.gaussian {
            return (g.sigma > 0.0 && g.sensitivity.is_finite())
                .then(|| g.sensitivity * g.sensitivity / (2.0 * g.sigma * g.sigma));
        }
        match self.guarantee.kind {
            GuaranteeKind::PureDp | GuaranteeKind::LocalDp if self.guarantee.delta.is_none() => {
                Some(self.guarantee.epsilon * self.guarantee.epsilon / 2.0)
            }
            _ => None,
        }
    }
}

/// The neighbour relation a total holds for.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Relation {
    /// β-adjacency (coordinate or ℓ₁) on data scaled as described.
    Beta {
        /// Coordinate or ℓ₁.
        neighbour: Neighbour,
        /// β.
        beta: f64,
        /// The scaling β is measured after.
        scaling: String,
    },
    /// Local DP: one row replaced by any other input.
    ReplaceOne,
}

impl Relation {
    /// In words.
    pub fn describe(&self) -> String {
        match self {
            Relation::Beta {
                neighbour,
                beta,
                scaling,
            } => match neighbour {
                Neighbour::L1 => {
                    format!("one row moved by ≤ β = {beta} in ℓ₁ (scaling: {scaling})")
                }
                _ => {
                    format!("one coordinate of one row moved by ≤ β = {beta} (scaling: {scaling})")
                }
            },
            Relation::ReplaceOne => "replace-one (any one row replaced by any other input)".into(),
        }
    }
}

/// The composed guarantee of a set of releases of one dataset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Totals {
    /// Releases composed.
    pub releases: usize,
    /// `DP`, `iDP`, `LDP`, or `not private`.
    pub kind: String,
    /// The neighbour relation the totals hold for.
    pub relation: Relation,
    /// How weaker relations were folded into it, when the releases' relations differ.
    pub relation_note: Option<String>,
    /// Basic composition: Σε (infinite when a release is not private).
    pub epsilon: f64,
    /// Basic composition: Σδ.
    pub delta: f64,
    /// Σρ, when every release is Gaussian or pure ε (zCDP composition applies).
    pub rho: Option<f64>,
    /// ε of Σρ at δ = Σδ by the tight conversion, when there is a Gaussian release.
    pub zcdp_epsilon: Option<f64>,
    /// Which composition gives what, or why zCDP does not apply.
    pub zcdp_note: String,
}

/// ≤ up to the rounding of decimal inputs to binary: `n` recorded values were summed, each parsed
/// from a decimal with relative error ≤ 2⁻⁵³, as was the bound; so 0.1 + 0.2 meets 0.3.
pub fn within(total: f64, bound: f64, n: usize) -> bool {
    total <= bound * (1.0 + (n as f64 + 1.0) * f64::EPSILON)
}

/// Compose the releases of one dataset. Fails (saying why) when they have no common neighbour
/// relation; an empty set has nothing to compose.
pub fn compose(entries: &[&Entry]) -> std::result::Result<Totals, String> {
    if entries.is_empty() {
        return Err("no releases".into());
    }
    let relation = common_relation(entries)?;
    let distinct = {
        let mut v: Vec<String> = entries
            .iter()
            .map(|e| {
                format!(
                    "{:?}{}{}",
                    e.guarantee.neighbour, e.guarantee.beta, e.scaling
                )
            })
            .collect();
        v.sort();
        v.dedup();
        v.len()
    };
    let relation_note = (distinct > 1 && matches!(relation, Relation::Beta { .. })).then(|| {
        "the releases' relations differ; each also holds for this, the smallest of them \
         (coordinate ⊂ ℓ₁, a smaller β ⊂ a larger one, every one-row change ⊂ replace-one)"
            .to_string()
    });
    let not_private = entries.iter().any(|e| !e.private);
    let kinds: Vec<GuaranteeKind> = entries.iter().map(|e| e.guarantee.kind).collect();
    let kind = if not_private {
        "not private"
    } else if kinds.contains(&GuaranteeKind::IndividualDp) {
        "iDP"
    } else if kinds.iter().all(|k| *k == GuaranteeKind::LocalDp) {
        "LDP"
    } else {
        "DP"
    };
    let epsilon = if not_private {
        f64::INFINITY
    } else {
        entries.iter().map(|e| e.guarantee.epsilon).sum()
    };
    let delta: f64 = entries.iter().map(|e| e.delta()).sum::<f64>().min(1.0);
    let rhos: Option<Vec<f64>> = entries.iter().map(|e| e.rho()).collect();
    let any_gaussian = entries.iter().any(|e| e.gaussian.is_some());
    let (rho, zcdp_epsilon, zcdp_note) = match rhos {
        _ if not_private => (
            None,
            None,
            "a release is not private (its noise came from ‹noise_seed›)".to_string(),
        ),
        None => (
            None,
            None,
            "not every release is a Gaussian mechanism or pure ε-DP: basic composition only"
                .to_string(),
        ),
        Some(r) => {
            let rho: f64 = r.iter().sum();
            if !any_gaussian {
                (
                    Some(rho),
                    None,
                    "every release is pure ε-DP: basic composition gives pure ε-DP (zCDP, \
                     ρ = Σε²/2, is used only against a budget with δ > 0)"
                        .to_string(),
                )
            } else if delta > 0.0 && delta < 1.0 {
                match zcdp::epsilon(rho, delta) {
                    Ok(e) => (
                        Some(rho),
                        Some(e),
                        format!(
                            "zCDP: ρ = Σ Δ²/(2σ²) (Gaussian) + Σ ε²/2 (pure) = {rho:.6}, converted \
                             at δ = {delta:e} with the tight bound of Canonne, Kamath & Steinke"
                        ),
                    ),
                    Err(e) => (Some(rho), None, format!("zCDP conversion failed: {e}")),
                }
            } else {
                (
                    Some(rho),
                    None,
                    format!("Σδ = {delta} leaves nothing to convert"),
                )
            }
        }
    };
    Ok(Totals {
        releases: entries.len(),
        kind: kind.into(),
        relation,
        relation_note,
        epsilon,
        delta,
        rho,
        zcdp_epsilon,
        zcdp_note,
    })
}

fn common_relation(entries: &[&Entry]) -> std::result::Result<Relation, String> {
    let betas: Vec<&Entry> = entries
        .iter()
        .copied()
        .filter(|e| e.guarantee.neighbour != Neighbour::ReplaceOne)
        .collect();
    let Some(first) = betas.first() else {
        return Ok(Relation::ReplaceOne);
    };
    if let Some(other) = betas.iter().find(|e| e.scaling != first.scaling) {
        return Err(format!(
            "{} and {} measure β on differently scaled data ({} vs {}): their neighbour \
             relations are not on one scale, so dprp does not sum their ε and δ",
            first.file, other.file, first.scaling, other.scaling
        ));
    }
    let neighbour = if betas
        .iter()
        .any(|e| e.guarantee.neighbour == Neighbour::Coordinate)
    {
        Neighbour::Coordinate
    } else {
        Neighbour::L1
    };
    let beta = betas
        .iter()
        .map(|e| e.guarantee.beta)
        .fold(f64::INFINITY, f64::min);
    Ok(Relation::Beta {
        neighbour,
        beta,
        scaling: first.scaling.clone(),
    })
}

/// A privacy budget: (ε, δ) with ε > 0 and δ ∈ [0, 1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Budget {
    /// ε.
    pub epsilon: f64,
    /// δ (0 for a pure budget).
    pub delta: f64,
}

impl Budget {
    /// Parse `ε` or `ε,δ`.
    pub fn parse(s: &str) -> Result<Budget> {
        let bad = |m: String| Err(Error::param("‹budget›", m));
        let mut parts = s.split(',').map(str::trim);
        let (Some(e), d, None) = (parts.next(), parts.next(), parts.next()) else {
            return bad(format!("'{s}' is not ε or ε,δ"));
        };
        let epsilon: f64 = match e.parse() {
            Ok(v) => v,
            Err(_) => return bad(format!("ε '{e}' is not a number")),
        };
        if !(epsilon.is_finite() && epsilon > 0.0) {
            return bad(format!("ε must be a positive finite number, got {epsilon}"));
        }
        let delta: f64 = match d.map(str::parse::<f64>) {
            None => 0.0,
            Some(Ok(v)) => v,
            Some(Err(_)) => return bad(format!("δ '{}' is not a number", d.unwrap_or(""))),
        };
        if !(0.0..1.0).contains(&delta) {
            return bad(format!("δ must lie in [0, 1), got {delta}"));
        }
        Ok(Budget { epsilon, delta })
    }

    /// `(ε, δ)` or `ε` (pure).
    pub fn label(&self) -> String {
        if self.delta == 0.0 {
            format!("ε = {}", self.epsilon)
        } else {
            format!("(ε, δ) = ({}, {:e})", self.epsilon, self.delta)
        }
    }
}

/// Whether `totals` fit `budget`: `Ok` names the composition that meets it, `Err` says why not
/// (with the totals).
pub fn check(totals: &Totals, budget: &Budget) -> std::result::Result<String, String> {
    if totals.kind == "not private" {
        return Err(
            "a release of this dataset is not private (its noise came from a ‹noise_seed›): no \
             budget covers it"
                .into(),
        );
    }
    let n = totals.releases;
    let basic = format!(
        "basic composition: (Σε, Σδ) = ({}, {})",
        totals.epsilon,
        fmt_num(totals.delta)
    );
    if within(totals.epsilon, budget.epsilon, n) && within(totals.delta, budget.delta, n) {
        return Ok(basic);
    }
    // name what is over: ε, δ or both (a pure-ε budget admits no release with δ > 0)
    let eps_over = !within(totals.epsilon, budget.epsilon, n);
    let delta_over = !within(totals.delta, budget.delta, n);
    let mut why = match (eps_over, delta_over) {
        (false, true) if budget.delta == 0.0 => format!(
            "{basic}: ε is within the budget, δ is not — the budget is pure ε (δ = 0) and these \
             releases have δ = {} > 0 (give the budget as ε,δ, e.g. ‹budget {},{:e}›)",
            fmt_num(totals.delta),
            fmt_num(budget.epsilon),
            totals.delta.max(1e-9)
        ),
        (false, true) => format!(
            "{basic}: ε is within the budget, δ = {} exceeds its δ = {:e}",
            fmt_num(totals.delta),
            budget.delta
        ),
        (true, false) => format!(
            "{basic}: ε = {} exceeds the budget's ε = {}",
            fmt_num(totals.epsilon),
            fmt_num(budget.epsilon)
        ),
        _ => format!("{basic}: both ε and δ exceed the budget"),
    };
    match (totals.rho, budget.delta > 0.0) {
        (Some(rho), true) => match zcdp::epsilon(rho, budget.delta) {
            Ok(e) if e <= budget.epsilon => {
                return Ok(format!(
                    "zCDP composition: ρ = {rho:.6} is (ε, δ) = ({}, {:e})-DP by the tight \
                     conversion (Canonne, Kamath & Steinke)",
                    fmt_num(e),
                    budget.delta
                ))
            }
            Ok(e) => why.push_str(&format!(
                "; zCDP composition: ρ = {rho:.6} gives ε = {} at δ = {:e}",
                fmt_num(e),
                budget.delta
            )),
            Err(e) => why.push_str(&format!("; zCDP conversion failed: {e}")),
        },
        (Some(_), false) => {
            why.push_str("; zCDP composition needs a budget δ > 0 (the budget is pure ε)")
        }
        (None, _) => why.push_str(&format!("; {}", totals.zcdp_note)),
    }
    Err(why)
}

/// A number with up to 6 significant digits, trailing zeros removed.
pub fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return if x > 0.0 { "∞".into() } else { x.to_string() };
    }
    if x != 0.0 && !(1e-4..1e6).contains(&x.abs()) {
        let s = format!("{x:.5e}");
        return match s.split_once('e') {
            Some((m, e)) if m.contains('.') => {
                format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.'))
            }
            _ => s,
        };
    }
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
#[path = "compose_tests.rs"]
mod tests;
