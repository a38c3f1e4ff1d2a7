//! The inputs a mechanism accepts: checked by the readers' callers before any row is privatised
//! ([`crate::data::scale::check_input_domain`]), and, for local DP, the set between whose
//! members the guarantee protects ([`crate::privacy::guarantee`]).

use serde::{Deserialize, Serialize};

/// The inputs a mechanism accepts (and, for local DP, between which it protects).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum InputDomain {
    /// Every coordinate in `[-1, 1]` (the sketch mechanisms, DESIGN.md §2; PrivUnitInf).
    Cube,
    /// The ℓ₂ ball of a public radius (the direction mechanisms: radius 1).
    Ball {
        /// Public radius R.
        radius: f64,
    },
    /// A scalar in `[0, max]` (ScalarDP).
    Interval {
        /// Public upper end.
        max: f64,
    },
}

impl InputDomain {
    /// `the unit ball`, `the ball of radius 2`, `[-1,1]^d`, `[0, 5]`.
    pub fn describe(&self) -> String {
        match self {
            InputDomain::Cube => "the cube [-1,1]^d".into(),
            InputDomain::Ball { radius } if *radius == 1.0 => "the unit ball".into(),
            InputDomain::Ball { radius } => format!("the ball of radius {radius}"),
            InputDomain::Interval { max } => format!("the interval [0, {max}]"),
        }
    }
}
