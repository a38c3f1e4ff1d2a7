//! The mechanism options of `dprp publish` and `dprp.publish`, validated into
//! [`MechanismParams`] and the Gaussian sampler ([`NoiseChoice`]).

use crate::error::field;
use crate::error::{Error, Result};
use crate::mechanism::{LocalMap, LocalOptions, MechanismKind, MechanismParams};
use crate::privacy::guarantee::Neighbour;
use crate::privacy::lattice::NoiseChoice;
use crate::projection::{DenseKind, Seed};

/// The mechanism options as given; `None` where the user gave nothing.
#[derive(Debug, Clone, Default)]
pub struct MechanismOptions {
    /// The mechanism's name (`dp-rp-g-opt`, `privunitg`, …).
    pub mechanism: String,
    /// ε.
    pub epsilon: f64,
    /// δ (Gaussian mechanisms).
    pub delta: Option<f64>,
    /// β (sketch mechanisms; default 1). Refused for local mechanisms.
    pub beta: Option<f64>,
    /// `coordinate` (default) or `l1` (sketch mechanisms). Refused for local mechanisms.
    pub neighbour: Option<String>,
    /// Sketch width.
    pub k: Option<usize>,
    /// The dense map of a sketch (`rademacher`, `gaussian`, `uniform`, `sparse:S`) or the map of
    /// a local mechanism (`srht`, `rotation`, `gaussian`, `srht-nearly-unbiased`).
    pub projection: Option<String>,
    /// The public projection seed (default: fresh from the OS, recorded in the release).
    pub seed: Option<Seed>,
    /// Public lower bound on every row's ℓ₂ norm (`dp-signrp-rr`).
    pub min_norm: Option<f64>,
    /// Accept individual DP (`idp-*`).
    pub individual_dp: bool,
    /// `privunit2-norm`: the norm's budget.
    pub epsilon_norm: Option<f64>,
    /// `privunit2-norm`, `scalar-dp`: the public radius.
    pub radius: Option<f64>,
    /// The id of the first row (per-row maps of local mechanisms).
    pub first_row: u64,
    /// The Gaussian sampler: `lattice` (default) or `float`. Refused for mechanisms without
    /// Gaussian noise.
    pub noise: Option<String>,
}

/// The validated mechanism: its parameters (the input dimension `p` is 0, taken from the input)
/// and the Gaussian sampler.
#[derive(Debug, Clone)]
pub struct MechanismPlan {
    /// The parameters [`crate::mechanism::build`] takes.
    pub params: MechanismParams,
    /// The Gaussian sampler.
    pub noise: NoiseChoice,
}

/// Which of the options that apply to some mechanisms only were given (by name, as snake case).
#[derive(Debug, Clone, Copy, Default)]
pub struct Given {
    /// `delta`.
    pub delta: bool,
    /// `min_norm`.
    pub min_norm: bool,
    /// `individual_dp`.
    pub individual_dp: bool,
    /// `projection` (a dense map of a sketch).
    pub projection: bool,
}

/// Refuse an option given for a mechanism it does not apply to (an option silently ignored
/// would let a user believe it took effect): δ where the guarantee has none, `min_norm` but for
/// `dp-signrp-rr`, `individual_dp` but for the `idp-*` mechanisms, a dense `projection` for a
/// sketch without one. (β, the neighbour relation, the Gaussian sampler and the local options
/// are checked where they are parsed.)
pub fn check_applies(kind: MechanismKind, given: Given) -> Result<()> {
    let refuse = |opt: &str, why: String| Err(Error::param(field(opt), why));
    if given.delta && !kind.needs_delta() {
        let what = if kind.is_local() {
            "ε-LDP"
        } else {
            "pure ε-DP"
        };
        return refuse(
            "delta",
            format!(
                "{} gives {what}, without δ: drop {}",
                kind.name(),
                field("delta")
            ),
        );
    }
    if kind.is_local() {
        // the local mechanisms refuse the sketch options by name when they are built
        return Ok(());
    }
    if given.min_norm && !kind.needs_min_norm() {
        return refuse(
            "min_norm",
            format!(
                "applies to dp-signrp-rr only (its flip rate depends on a public lower bound on \
                 the row norms), not {}",
                kind.name()
            ),
        );
    }
    if given.individual_dp && !kind.is_idp() {
        return refuse(
            "individual_dp",
            format!(
                "accepts the individual DP of the idp-* mechanisms; {} gives {}",
                kind.name(),
                if kind.needs_delta() {
                    "(ε, δ)-DP"
                } else {
                    "ε-DP"
                }
            ),
        );
    }
    if given.projection && !kind.dense() {
        return refuse(
            "projection",
            format!(
                "{} does not use a dense projection; {} applies to dp-rp-g, dp-rp-g-opt, \
                 dp-signrp-* and idp-signrp-*",
                kind.name(),
                field("projection")
            ),
        );
    }
    Ok(())
}

impl MechanismOptions {
    /// Validate: parse the names, refuse the options that do not apply to the mechanism (β and
    /// the neighbour relation for local DP, a Gaussian sampler for mechanisms without Gaussian
    /// noise), fill in the defaults.
    pub fn resolve(&self) -> Result<MechanismPlan> {
        let kind = MechanismKind::parse(&self.mechanism)?;
        check_applies(
            kind,
            Given {
                delta: self.delta.is_some(),
                min_norm: self.min_norm.is_some(),
                individual_dp: self.individual_dp,
                projection: self.projection.is_some() && !kind.is_local(),
            },
        )?;
        let (projection, map) = match (&self.projection, kind.is_local()) {
            (None, _) => (None, None),
            (Some(p), false) => (Some(DenseKind::parse(p)?), None),
            (Some(p), true) => (None, Some(LocalMap::parse(p)?)),
        };
        if kind.is_local() {
            for (given, opt) in [
                (self.beta.is_some(), "beta"),
                (self.neighbour.is_some(), "neighbour"),
            ] {
                if given {
                    return Err(Error::param(
                        field(opt),
                        format!(
                            "{} is local DP: any two inputs of its domain are neighbours \
                             (replace-one), so β and the neighbour relation do not apply",
                            kind.name()
                        ),
                    ));
                }
            }
        }
        let base = MechanismParams::of(kind, self.epsilon);
        let params = MechanismParams {
            delta: self.delta,
            beta: self.beta.unwrap_or(base.beta),
            neighbour: match &self.neighbour {
                Some(n) => Neighbour::parse(n)?,
                None => base.neighbour,
            },
            k: self.k,
            projection,
            seed: self.seed,
            min_norm: self.min_norm,
            individual_dp: self.individual_dp,
            local: LocalOptions {
                map,
                epsilon_norm: self.epsilon_norm,
                radius: self.radius,
                first_row: self.first_row,
            },
            ..base
        };
        let noise = match &self.noise {
            Some(_) if !kind.adds_gaussian_noise() => {
                return Err(Error::param(
                    field("noise"),
                    format!(
                        "{} adds no Gaussian noise ({} chooses the Gaussian sampler of {})",
                        kind.name(),
                        field("noise"),
                        MechanismKind::names_where(|k| k.adds_gaussian_noise())
                    ),
                ))
            }
            Some(n) => NoiseChoice::parse(n)?,
            None => NoiseChoice::default(),
        };
        Ok(MechanismPlan { params, noise })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Front;

    fn opts(mechanism: &str) -> MechanismOptions {
        MechanismOptions {
            mechanism: mechanism.into(),
            epsilon: 2.0,
            ..Default::default()
        }
    }

    #[test]
    fn defaults_follow_the_family() {
        let sketch = opts("dp-rp-g-opt").resolve().unwrap();
        assert_eq!(sketch.params.neighbour, Neighbour::Coordinate);
        assert_eq!(sketch.params.beta, 1.0);
        assert_eq!(sketch.noise, NoiseChoice::Lattice);
        let local = opts("privunitg").resolve().unwrap();
        assert_eq!(local.params.neighbour, Neighbour::ReplaceOne);
        let mapped = MechanismOptions {
            projection: Some("rotation".into()),
            ..opts("projunit")
        };
        assert!(mapped.resolve().unwrap().params.local.map.is_some());
    }

    #[test]
    fn refusals_name_the_option_per_front_end() {
        let beta = MechanismOptions {
            beta: Some(2.0),
            ..opts("privunitg")
        };
        for (front, name) in [(Front::Cli, "--beta"), (Front::Python, "beta")] {
            match beta.resolve() {
                Err(Error::Param { name: n, msg }) => {
                    assert_eq!(front.render_name(&n), name);
                    assert!(msg.contains("local DP"), "{msg}");
                }
                other => panic!("{other:?}"),
            }
        }
        let noise = MechanismOptions {
            noise: Some("float".into()),
            ..opts("dp-signrp-rr")
        };
        match noise.resolve() {
            Err(Error::Param { name, msg }) => {
                assert_eq!(Front::Python.render_name(&name), "noise");
                let msg = Front::Python.render(&msg);
                assert!(msg.contains("(noise= chooses"), "{msg}");
            }
            other => panic!("{other:?}"),
        }
        let float = MechanismOptions {
            noise: Some("float".into()),
            ..opts("dp-oporp")
        };
        assert_eq!(float.resolve().unwrap().noise, NoiseChoice::Float);
    }
}
