//! Accountants and parameter choice for distributed DP under secure aggregation (issue 12): each
//! client adds a small share of *integer* noise, a secure-aggregation protocol reveals only the
//! sum modulo M, and the sum carries a central-DP guarantee.
//!
//! - [`binomial`]: the Binomial mechanism (cpSGD, Agarwal et al. 2018, Theorem 1): ε for `N`
//!   trials with its validity condition, and the smallest `N` reaching a target ε.
//! - [`ddg`]: the distributed discrete Gaussian (Chen et al. 2022, Theorem E.1; Kairouz et al.
//!   2021): ½ε²-zCDP of the summed round, its (ε, δ) by [`crate::privacy::zcdp`], and the smallest
//!   σ reaching a target.
//! - [`params`]: parameter choice (γ, β, σ, sketch size, k and trials) with expected MSE, bits per
//!   parameter and the modular-wrap probability, for `dprp calibrate`; [`sketch_plan`] the
//!   count-sketch size of sketch-DDG; [`binomial_plan`] the Binomial (π_sk) plan.
//!
//! The exact samplers live in `crate::privacy::exact`; the count sketch in
//! [`crate::projection::count_sketch`].

pub mod binomial;
pub mod binomial_plan;
pub mod ddg;
pub mod params;
pub mod sketch_plan;
