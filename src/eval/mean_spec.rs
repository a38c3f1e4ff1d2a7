//! What `dprp eval mean` evaluates: the mechanisms ([`MeanSpec`]: local (`privunit2`,
//! `projunit:srht`, …), distributed (`ddg`, `sketch-ddg`, `binomial`) and the central Gaussian
//! references of each neighbour relation, parsed from `--mechanisms`), the experiments and their
//! data ([`MeanConfig`]).

use serde::{Deserialize, Serialize};

use super::grid::Seeds;
use crate::error::{Error, Result};
use crate::mechanism::distributed::DistributedKind;
use crate::mechanism::{LocalMap, LocalOption, MechanismKind};
use crate::privacy::guarantee::GuaranteeKind;
use crate::projection::hadamard::next_pow2;

/// Label of the central Gaussian reference of the local mechanisms (replace-one: any unit vector
/// replaced by any other, ℓ₂ sensitivity `2/n` of the mean).
pub const CENTRAL: &str = "central-gaussian";

/// Label of the central Gaussian reference of the distributed mechanisms (one client's vector
/// of norm ≤ c added or removed, ℓ₂ sensitivity `c/n` of the mean — their neighbour relation).
pub const CENTRAL_ADD_REMOVE: &str = "central-gaussian:add-remove";

/// Label of the central Gaussian at the distributed mechanisms' own accountant: add/remove, σ of
/// the sum `c/√(2ρ)` with ρ the largest zCDP budget whose tight conversion meets (ε, δ) — the
/// reference that separates the cost of distributing, discretising and compressing the noise
/// from the slack of the accountant (zCDP against the analytic Gaussian's exact privacy profile).
pub const CENTRAL_ZCDP: &str = "central-gaussian:zcdp";

/// Clip norm of the distributed mechanisms in the evaluation: the data lie in the unit ball.
pub const CLIP: f64 = 1.0;

/// Largest acceptable bound on the probability that a DDG sum wraps (as `dprp aggregate`).
pub const MAX_WRAP: f64 = 1e-6;

/// A mechanism of the evaluation: a local mechanism (`privunit2`, `projunit:srht`, …), a
/// distributed one (`ddg`, `sketch-ddg`, `binomial`) or a central Gaussian reference.
#[derive(Debug, Clone, PartialEq)]
pub struct MeanSpec {
    /// Label in reports (lower case, as given).
    pub label: String,
    /// The local mechanism; `None` for the others.
    pub kind: Option<MechanismKind>,
    /// ProjUnit's public map (`projunit:rotation|gaussian|srht|srht-nearly-unbiased`).
    pub map: Option<LocalMap>,
    /// The distributed mechanism; `None` for the others.
    pub distributed: Option<DistributedKind>,
}

impl MeanSpec {
    fn central(label: &str) -> MeanSpec {
        MeanSpec {
            label: label.into(),
            kind: None,
            map: None,
            distributed: None,
        }
    }

    /// Parse `name[:map]`: a local mechanism whose domain is the unit ball, a distributed
    /// mechanism, or a central reference (`central-gaussian`, alias `gaussian-central`, with
    /// `:replace-one` (the default), `:add-remove` or `:zcdp`).
    pub fn parse(s: &str) -> Result<MeanSpec> {
        let s = s.trim().to_ascii_lowercase();
        let (head, tail) = match s.split_once(':') {
            Some((h, t)) => (h, Some(t)),
            None => (s.as_str(), None),
        };
        if head == CENTRAL || head == "gaussian-central" {
            return match tail {
                None | Some("replace-one") => Ok(Self::central(CENTRAL)),
                Some("add-remove") => Ok(Self::central(CENTRAL_ADD_REMOVE)),
                Some("zcdp") => Ok(Self::central(CENTRAL_ZCDP)),
                Some(t) => Err(Error::param(
                    "‹mechanisms›",
                    format!(
                        "'{s}': the central reference takes :replace-one (the local mechanisms' \
                         neighbours), :add-remove (the distributed mechanisms') or :zcdp \
                         (add-remove at the distributed mechanisms' zCDP accountant), not '{t}'"
                    ),
                )),
            };
        }
        if let Some(dk) = DistributedKind::parse(&s) {
            return Ok(MeanSpec {
                label: dk.name().into(),
                kind: None,
                map: None,
                distributed: Some(dk),
            });
        }
        let (name, map) = match s.split_once(':') {
            Some((n, m)) => (n, Some(m)),
            None => (s.as_str(), None),
        };
        let kind = MechanismKind::parse(name).map_err(|_| {
            let names: Vec<&str> = MechanismKind::LOCAL
                .iter()
                .filter(|m| !Self::other_domain(**m))
                .map(|m| m.name())
                .collect();
            Error::param(
                "‹mechanisms›",
                format!(
                    "unknown mechanism '{s}' for eval mean (expected one of: {}, ddg, \
                     sketch-ddg, binomial, {CENTRAL}; projunit takes :rotation, :gaussian, :srht \
                     or :srht-nearly-unbiased)",
                    names.join(", ")
                ),
            )
        })?;
        if !kind.is_local() {
            return Err(Error::param(
                "‹mechanisms›",
                format!(
                    "'{s}' is a sketch mechanism; eval mean compares the local-DP mechanisms \
                     (use eval retrieval or svm for sketches)"
                ),
            ));
        }
        if Self::other_domain(kind) {
            return Err(Error::param(
                "‹mechanisms›",
                format!(
                    "'{s}' takes another input domain (scalar-dp: a value in [0, R]; \
                     privunit2-norm: a ball of public radius with a separate norm budget; \
                     privunit-inf: the cube [-1,1]^d); eval mean compares the mechanisms of \
                     the unit ball"
                ),
            ));
        }
        let map = match map {
            Some(m) if kind.takes(LocalOption::Map) => Some(LocalMap::parse(m)?),
            Some(_) => {
                return Err(Error::param(
                    "‹mechanisms›",
                    format!("'{s}': only projunit takes a public map (:rotation, :srht, …)"),
                ))
            }
            None => None,
        };
        Ok(MeanSpec {
            label: s.clone(),
            kind: Some(kind),
            map,
            distributed: None,
        })
    }

    /// Whether this is a central reference.
    pub fn is_central(&self) -> bool {
        self.kind.is_none() && self.distributed.is_none()
    }

    /// Whether the label is a central reference (of either neighbour relation).
    pub fn is_central_label(label: &str) -> bool {
        label == CENTRAL || label == CENTRAL_ADD_REMOVE || label == CENTRAL_ZCDP
    }

    /// Local mechanisms whose input domain is not the unit ball.
    fn other_domain(kind: MechanismKind) -> bool {
        !kind.on_unit_ball()
    }

    /// Parse a comma-separated list (duplicates dropped). A central reference named without its
    /// neighbour relation becomes the reference of each family listed: `:replace-one` for the
    /// local mechanisms, `:add-remove` and `:zcdp` for the distributed ones (all three when both
    /// families are listed; replace-one when it is alone).
    pub fn parse_list(s: &str) -> Result<Vec<MeanSpec>> {
        let parts: Vec<&str> = s
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        let specs = parts
            .iter()
            .map(|p| MeanSpec::parse(p))
            .collect::<Result<Vec<MeanSpec>>>()?;
        let any_local = specs.iter().any(|m| m.kind.is_some());
        let any_dist = specs.iter().any(|m| m.distributed.is_some());
        let mut out: Vec<MeanSpec> = Vec::new();
        let mut push = |m: MeanSpec| {
            if !out.iter().any(|x| x.label == m.label) {
                out.push(m);
            }
        };
        for (part, m) in parts.iter().zip(specs) {
            if m.is_central() && !part.contains(':') {
                if any_local || !any_dist {
                    push(Self::central(CENTRAL));
                }
                if any_dist {
                    push(Self::central(CENTRAL_ADD_REMOVE));
                    push(Self::central(CENTRAL_ZCDP));
                }
            } else {
                push(m);
            }
        }
        if out.is_empty() {
            return Err(Error::param("‹mechanisms›", "no mechanism given"));
        }
        Ok(out)
    }

    /// Whether the mechanism projects to `k` dimensions (the ProjUnit family).
    pub fn takes_k(&self) -> bool {
        self.kind.is_some_and(|k| k.name().starts_with("projunit"))
    }

    /// The guarantee kind (LDP for the local mechanisms; DP for the central reference).
    pub fn guarantee(&self) -> GuaranteeKind {
        match self.kind {
            Some(k) => k.guarantee_kind(),
            None => GuaranteeKind::ApproxDp,
        }
    }

    /// Whether the mechanism has a bit budget `b` per coordinate (the distributed ones).
    pub fn takes_bits(&self) -> bool {
        self.distributed.is_some()
    }

    /// Estimated seconds per user of one repeat, for the work budget: `passes` passes over the
    /// data (client, server, and the check's per-user decode) at rough per-element costs
    /// measured on the development machine (d = 8192, k = 1000): ~30 ns per element of a
    /// dense `k × d` map (Gaussian or Haar rows, regenerated from the seed), ~2.4 ns per
    /// `d' log₂ d'` of the SRHT family (`d'` = d padded to a power of two), ~10 ns per
    /// coordinate for the unprojected mechanisms; 0 for the central reference (one noise
    /// vector per repeat); distributed: ~40 ns per rotated coordinate (exact discrete Gaussian,
    /// rounding, rotation) plus ~3 ns per input value. Only for scheduling — never part of a
    /// result.
    pub fn seconds_per_user(&self, d: usize, k: usize, passes: usize) -> f64 {
        let (df, kf, p) = (d as f64, k as f64, passes as f64);
        if self.distributed.is_some() {
            let dp = next_pow2(d).unwrap_or(d) as f64;
            return 40e-9 * dp + 3e-9 * df;
        }
        match (self.kind, self.map) {
            (None, _) => 0.0,
            (Some(MechanismKind::Projunit), Some(LocalMap::Rotation | LocalMap::Gaussian)) => {
                p * 30e-9 * df * kf
            }
            (Some(kind), _) if self.takes_k() && kind.is_local() => {
                let dp = next_pow2(d).unwrap_or(d) as f64;
                p * (2.4e-9 * dp * dp.log2().max(1.0) + 10e-9 * kf)
            }
            _ => p * 10e-9 * df,
        }
    }
}

/// Which of the papers' experiments an [`Experiment`] mirrors (decides its plot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Plan {
    /// Error against k, one panel per (d, ε).
    ErrorVsK,
    /// Error against ε, one panel per (d, k).
    ErrorVsEps,
    /// Error against the number of users n, one panel per (d, ε).
    ErrorVsN,
    /// Error against the bits each client sends per parameter, one panel per (d, n, ε).
    ErrorVsBits,
    /// Client and server time against d (no closed-form check).
    RuntimeVsD,
    /// A user-given grid: error vs k and/or vs ε, whichever has more than one value.
    Grid,
}

/// One experiment: a grid of settings on one kind of data.
#[derive(Debug, Clone)]
pub struct Experiment {
    /// Short name (file stems), e.g. `error-vs-k`.
    pub name: String,
    /// One-line description for the report.
    pub title: String,
    /// Which plot.
    pub plan: Plan,
    /// Input dimensions (synthetic data); one, the file's, for file data.
    pub dims: Vec<usize>,
    /// Numbers of users: synthetic users, or the first `n` rows of the file (empty: all rows).
    pub ns: Vec<usize>,
    /// Mechanisms.
    pub mechanisms: Vec<MeanSpec>,
    /// ε values.
    pub epsilons: Vec<f64>,
    /// k values of the projecting mechanisms.
    pub ks: Vec<usize>,
    /// Bits per transmitted coordinate `b` of the distributed mechanisms (SecAgg modulus 2^b).
    pub bits: Vec<u32>,
    /// sketch-DDG's caps on the bits per parameter (each chooses a sketch size; empty: the
    /// planner's least-error sketch without a cap).
    pub bpp_caps: Vec<f64>,
    /// Use `min(k, d)` for every k (runtime vs d from d = 16); otherwise k > d is not run.
    pub cap_k_at_d: bool,
    /// Repeats per setting.
    pub repeat: usize,
    /// This experiment's own data, instead of the configuration's (a preset with two datasets).
    pub data: Option<Data>,
    /// Largest estimated seconds per setting (`n · repeats ·`
    /// [`MeanSpec::seconds_per_user`]); settings above are reported as not run. `None`: no
    /// limit.
    pub budget: Option<f64>,
}

/// The users' vectors.
#[derive(Debug, Clone)]
pub enum Data {
    /// `vᵢ = normalise(μ + N(0, I/d))`, `μ` a random unit vector; data of dimension d is drawn
    /// from this seed and d (the same data for every mechanism, ε, k and repeat).
    Synthetic {
        /// Data seed.
        seed: u64,
    },
    /// Given rows (row-major, `d` columns), each in the unit ball.
    Rows {
        /// Where they come from (for the report).
        source: String,
        /// Dimension.
        d: usize,
        /// Values.
        values: Vec<f64>,
    },
}

/// The whole evaluation.
#[derive(Debug, Clone)]
pub struct MeanConfig {
    /// Experiments, in order.
    pub experiments: Vec<Experiment>,
    /// δ of the central Gaussian reference.
    pub delta: f64,
    /// Seeds of the public maps and of the noise.
    pub seeds: Seeds,
    /// The data.
    pub data: Data,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_parsing() {
        let s = MeanSpec::parse("ProjUnit:SRHT").unwrap();
        assert_eq!(s.label, "projunit:srht");
        assert_eq!(s.map, Some(LocalMap::Srht));
        assert!(s.takes_k());
        assert!(!MeanSpec::parse("privunitg").unwrap().takes_k());
        assert!(MeanSpec::parse("projunit-correlated").unwrap().takes_k());
        assert_eq!(
            MeanSpec::parse(CENTRAL).unwrap().guarantee(),
            GuaranteeKind::ApproxDp
        );
        for bad in [
            "nope",
            "dp-oporp",
            "privunit2:srht",
            "projunit:nope",
            "scalar-dp",
        ] {
            assert!(MeanSpec::parse(bad).is_err(), "{bad}");
        }
    }
}
