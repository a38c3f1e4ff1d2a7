//! The Python front's keyword arguments as the library's option objects: the one place
//! `publish`, `calibrate` and the ledger functions turn them into [`MechanismOptions`] (resolved
//! by the library) and a [`ScalingRequest`].

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use dprp::request::{MechanismOptions, MechanismPlan, ScaleOptions, ScalingRequest, Seed};

use crate::err;

/// An optional public projection seed ([`crate::public_seed`]).
fn seed(s: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Seed>> {
    s.map(crate::public_seed).transpose()
}

/// The sketch options `publish` and `calibrate` share: (δ, β, neighbour, k, projection, seed).
pub(crate) type SketchArgs<'a, 'py> = (
    Option<f64>,
    Option<f64>,
    Option<&'a str>,
    Option<usize>,
    Option<&'a str>,
    Option<&'a Bound<'py, PyAny>>,
);
/// The options of particular mechanisms `publish` and `calibrate` share: (min_norm,
/// individual_dp, epsilon_norm, radius, noise).
pub(crate) type ParticularArgs<'a> = (Option<f64>, bool, Option<f64>, Option<f64>, Option<&'a str>);

/// The one place the Python front fills the library's [`MechanismOptions`] and resolves them
/// (validation, defaults and refusals are the library's, with `k=`-style field names).
pub(crate) fn mechanism_plan(
    base: MechanismOptions,
    (delta, beta, neighbour, k, projection, seed): SketchArgs<'_, '_>,
    (min_norm, individual_dp, epsilon_norm, radius, noise): ParticularArgs<'_>,
) -> PyResult<MechanismPlan> {
    MechanismOptions {
        delta,
        beta,
        neighbour: neighbour.map(String::from),
        k,
        projection: projection.map(String::from),
        seed: self::seed(seed)?,
        min_norm,
        individual_dp,
        epsilon_norm,
        radius,
        noise: noise.map(String::from),
        ..base
    }
    .resolve()
    .map_err(err)
}

/// `scale=` (a number or "max-abs"), `normalize=`, `clip=` and `clip_norm=` as a scaling request.
pub(crate) fn scaling(
    scale: Option<&Bound<'_, PyAny>>,
    normalize: Option<&str>,
    clip: bool,
    clip_norm: Option<f64>,
) -> PyResult<ScalingRequest> {
    let scale = match scale {
        None => None,
        Some(s) => Some(if let Ok(v) = s.extract::<f64>() {
            v.to_string()
        } else {
            s.extract::<String>().map_err(|_| {
                PyTypeError::new_err("scale: expected a positive number or \"max-abs\"")
            })?
        }),
    };
    ScaleOptions {
        scale,
        normalize: normalize.map(String::from),
        clip,
        clip_norm,
    }
    .request()
    .map_err(err)
}
