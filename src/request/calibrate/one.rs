//! The typed reports of `calibrate` that both front ends share: the Gaussian σ for an ℓ₂
//! sensitivity ([`SigmaReport`]: `dprp calibrate --sensitivity` prints it, Python's
//! `dprp.calibrate()` returns it) and one mechanism calibrated at one input dimension
//! ([`MechanismCalibration`], Python's `dprp.calibrate(mechanism=…)`).

use super::CalibrateOptions;
use crate::error::{Error, Result};
use crate::mechanism;
use crate::privacy::gaussian::{analytic_sigma, classical_is_proven, classical_sigma};
use crate::privacy::guarantee::check_beta;

/// The Gaussian σ for an ℓ₂ sensitivity under both rules: what `dprp calibrate` prints without a
/// mechanism, and the dict Python's `dprp.calibrate()` returns without one.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SigmaReport {
    /// ε.
    pub epsilon: f64,
    /// δ.
    pub delta: f64,
    /// Δ₂ (given, or β).
    pub sensitivity: f64,
    /// σ of the analytic Gaussian mechanism (Balle & Wang 2018, Theorem 3.2).
    pub sigma_analytic: f64,
    /// σ of the classical rule (Theorem 3.1).
    pub sigma_classical: f64,
    /// Whether the classical rule is proven at this ε (ε < 1).
    pub classical_proven: bool,
}

impl SigmaReport {
    /// The report as text lines.
    pub fn to_text(&self) -> Vec<String> {
        vec![
            format!(
                "ε = {}, δ = {:e}, Δ₂ = {}",
                self.epsilon, self.delta, self.sensitivity
            ),
            format!(
                "σ analytic  (Theorem 3.2, Balle & Wang 2018) = {:.6}",
                self.sigma_analytic
            ),
            format!(
                "σ classical (Theorem 3.1)                    = {:.6}{}",
                self.sigma_classical,
                if self.classical_proven {
                    ""
                } else {
                    "  (proven only for ε < 1)"
                }
            ),
        ]
    }
}

/// Without a mechanism: the Gaussian σ for an ℓ₂ sensitivity, analytic and classical. The
/// options that describe a mechanism are refused (they would be ignored).
pub fn sigma_for_sensitivity(a: &CalibrateOptions) -> Result<SigmaReport> {
    check_beta(a.beta)?;
    let mechanism_only = [
        (a.k.is_some(), "‹k›"),
        (a.dim.is_some(), "‹dim›"),
        (a.projection.is_some(), "‹projection›"),
        (a.projection_seed.is_some(), "‹projection_seed›"),
        (a.min_norm.is_some(), "‹min_norm›"),
        (a.users.is_some(), "‹users›"),
        (a.epsilon_norm.is_some(), "‹epsilon_norm›"),
        (a.radius.is_some(), "‹radius›"),
        (a.clip.is_some(), "‹clip›"),
        (a.bits.is_some(), "‹bits›"),
        (a.bits_per_parameter.is_some(), "‹bits_per_parameter›"),
        (a.noise.is_some(), "‹noise›"),
    ];
    if let Some((_, opt)) = mechanism_only.iter().find(|(given, _)| *given) {
        return Err(Error::param(
            *opt,
            "describes a mechanism: give ‹mechanism›, or only ‹sensitivity› (with ε and δ) for \
             the σ of a Gaussian mechanism",
        ));
    }
    let delta = a
        .delta
        .ok_or_else(|| Error::missing("‹delta›", "the Gaussian mechanism needs δ"))?;
    let sens = a.sensitivity.unwrap_or(a.beta);
    Ok(SigmaReport {
        epsilon: a.epsilon,
        delta,
        sensitivity: sens,
        sigma_analytic: analytic_sigma(sens, a.epsilon, delta)?,
        sigma_classical: classical_sigma(sens, a.epsilon, delta)?,
        classical_proven: classical_is_proven(a.epsilon),
    })
}

/// One mechanism calibrated for inputs of dimension `p`, without publishing: its noise, its record
/// as a release would store it and its guarantee (Python's `dprp.calibrate(mechanism=…)`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct MechanismCalibration {
    /// The mechanism's name.
    pub mechanism: &'static str,
    /// Input dimension.
    pub p: usize,
    /// Output values (or signs) per row.
    pub k: usize,
    /// σ of the Gaussian noise (Gaussian sketches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sigma: Option<f64>,
    /// The sensitivity σ is calibrated for (Gaussian sketches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sensitivity: Option<f64>,
    /// The guarantee, as the sentence a release states.
    pub guarantee: String,
    /// The record a release would store.
    pub record: crate::mechanism::MechanismRecord,
    /// The guarantee as a value.
    pub privacy: crate::privacy::guarantee::Guarantee,
}

/// Build the mechanism of `plan` for `dim` inputs and report its calibration.
pub fn mechanism_calibration(
    plan: crate::request::MechanismPlan,
    dim: Option<usize>,
) -> Result<MechanismCalibration> {
    let mut params = plan.params;
    params.p = dim
        .filter(|&p| p > 0)
        .ok_or_else(|| Error::param("‹dim›", "give the input dimension p ≥ 1"))?;
    let m = mechanism::build_with(&params, plan.noise)?;
    let record = m.record();
    let privacy = m.guarantee();
    Ok(MechanismCalibration {
        mechanism: params.kind.name(),
        p: m.input_dim(),
        k: m.output_dim(),
        sigma: record.gaussian.as_ref().map(|g| g.sigma),
        sensitivity: record.gaussian.as_ref().map(|g| g.sensitivity),
        guarantee: privacy.sentence(),
        record,
        privacy,
    })
}
