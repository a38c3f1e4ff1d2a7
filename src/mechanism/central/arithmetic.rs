//! How a release computes its public map, and a proven bound on what that computation gets wrong.
//!
//! Every privacy argument of a sketch is about exact values: the Gaussian mechanism's sensitivity
//! `Δ₂`, the sign mechanisms' steps `c_j`. The lattice noise ([`crate::privacy::lattice`]) and
//! the sign mechanisms' guards charge the distance `E` between the computed and the exact
//! projection to the guarantee, so the arithmetic must make `E` negligible, at every width a user
//! has (embeddings are 384–4096 wide; the bound must hold up to p = 65 536). An f32 matrix
//! product does not: its worst-case error (Higham, *Accuracy and Stability of Numerical
//! Algorithms*, Thm 3.5) is `γ_p·‖w_j‖₁/√k` per output, which made `Δ_r = Δ + 2E` three times `Δ`
//! at p = 4096 (dprp 0.2.0). Two arithmetics replace it:
//!
//! * **`grid`** (±1 maps: Rademacher and sparse Rademacher, coordinate neighbours). Each input is
//!   first rounded to the public grid `2^-q` (`ũ_i = round(u_i·2^q)·2^-q`, a data-independent,
//!   per-coordinate map), then `Σ_i ũ_i·w_ij` is computed *exactly* as an integer
//!   ([`DenseProjection::grid_sums`](crate::projection::DenseProjection::grid_sums): f32 matrix
//!   products over blocks of `2^(24−q)` inputs, whose partial sums are integers below `2^24`),
//!   and scaled once in f64 by `unit·2^-q/√k`. *Sensitivity:* neighbours differ by at most β in
//!   one coordinate; after rounding that coordinate differs by at most `β + 2^-q` and every other
//!   coordinate is unchanged (the rounding is a function of the coordinate alone), so the map
//!   `u ↦ Wᵀũ/√k` has `Δ_q = (β + 2^-q)·max_i‖W[i,:]‖₂/√k = Δ₂·(1 + 2^-q/β)`. `q` is the
//!   smallest with `2^-q ≤ β·2^-12`, so `Δ_q/Δ₂ − 1 ≤ 2^-12 = 2.4·10⁻⁴`. *Error:* the scale
//!   `fl(unit·2^-q/fl(√k))` carries two roundings and its product one more, so
//!   `|ŷ_j − y_j| ≤ γ₄·|y_j| ≤ γ₄‖w_j‖₁/√k` (`γ_m = m·u/(1 − m·u)`, `u = 2⁻⁵³`, `|ũ_i| ≤ 1`):
//!   `E ≈ 4.4·10⁻¹⁶·p`, 3·10⁻¹¹ at p = 65 536. The ℓ₁ neighbour relation (`--neighbour l1`) can
//!   change every coordinate, each of whose roundings could add `2^-q`, so it uses `float64`.
//! * **`float64`** (Gaussian and uniform maps, OPORP, ℓ₁ neighbours, grids finer than
//!   `2^-18`). Inputs and entries are read exactly as f64, products and sums are f64:
//!   `|ŷ_j − y_j| ≤ γ_{p+4}·‖w_j‖₁/√k` for dense maps (any summation order, with or without fused
//!   multiply-adds; the four extra roundings cover the products and the scale), 5·10⁻⁷·Δ₂ at
//!   p = 65 536; `γ_{n_b}·n_b` for an OPORP bin of `n_b` coordinates; 0 for the identity map.
//!
//! `E = (Σ_j E_j²)^{1/2}` over the outputs. The computed values are handed on in f64 (never
//! rounded to f32 before the noise: that alone would cost `2⁻²⁴‖y‖`, up to 4·10⁻³ at p = 65 536).
//! A release records its arithmetic ([`ArithmeticRecord`]), and `dprp info` and `dprp calibrate`
//! show what it costs.

use serde::{Deserialize, Serialize};

use super::public_map::PublicMap;
use crate::error::{Error, Result};
use crate::privacy::guarantee::Neighbour;
use crate::privacy::lattice::pow2;
use crate::projection::dense::{MAX_GRID_BITS, PROJECT_TILE_ROWS};

/// The grid step is at most `β·2^-GRID_MARGIN_BITS`.
pub const GRID_MARGIN_BITS: i32 = 12;

/// How a public map is evaluated on private rows (module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "kebab-case")]
pub enum Arithmetic {
    /// Inputs rounded to the grid `2^-q`, exact integer sums, one scaling in f64.
    Grid {
        /// The grid exponent.
        q: i32,
    },
    /// f64 products and sums.
    Float64,
}

/// `γ_m = m·u/(1 − m·u)` for `u = 2⁻⁵³`, rounded up.
fn gamma64(m: usize) -> f64 {
    let mu = m as f64 * pow2(-53);
    mu / (1.0 - mu) * (1.0 + pow2(-40))
}

impl Arithmetic {
    /// The arithmetic for `map` under β-adjacency of kind `neighbour`: `grid` for ±1 dense maps
    /// with coordinate neighbours (when the grid is no finer than `2^-18`), `float64` otherwise.
    pub fn choose(map: &PublicMap, beta: f64, neighbour: Neighbour) -> Arithmetic {
        let PublicMap::Dense(d) = map else {
            return Arithmetic::Float64;
        };
        if !d.has_sign_units() || neighbour != Neighbour::Coordinate || beta.is_nan() || beta <= 0.0
        {
            return Arithmetic::Float64;
        }
        // the smallest q ≥ 0 with 2^-q ≤ β·2^-12
        let target = beta * pow2(-GRID_MARGIN_BITS);
        let mut q = 0;
        while pow2(-q) > target && q <= MAX_GRID_BITS {
            q += 1;
        }
        if q <= MAX_GRID_BITS {
            Arithmetic::Grid { q }
        } else {
            Arithmetic::Float64
        }
    }

    /// The grid step `2^-q` (0 for `float64`).
    pub fn grid_step(&self) -> f64 {
        match self {
            Arithmetic::Grid { q } => pow2(-q),
            Arithmetic::Float64 => 0.0,
        }
    }

    /// The largest change of one (grid-rounded) input coordinate between β-neighbours: `β + 2^-q`
    /// (β for `float64`), rounded up.
    pub fn effective_beta(&self, beta: f64) -> f64 {
        match self {
            Arithmetic::Grid { .. } => (beta + self.grid_step()) * (1.0 + pow2(-52)),
            Arithmetic::Float64 => beta,
        }
    }

    /// Per-output bounds `E_j` on `|ŷ_j − y_j|` for rows of `[-1, 1]^p` (module documentation).
    pub fn output_errors(&self, map: &PublicMap) -> Vec<f64> {
        match (self, map) {
            (_, PublicMap::Identity { p }) => vec![0.0; *p],
            (Arithmetic::Grid { .. }, PublicMap::Dense(d)) => {
                let s = 1.0 / (d.k() as f64).sqrt() * (1.0 + pow2(-50));
                d.column_l1()
                    .into_iter()
                    .map(|a| gamma64(4) * a * s)
                    .collect()
            }
            (_, PublicMap::Dense(d)) => {
                let s = 1.0 / (d.k() as f64).sqrt() * (1.0 + pow2(-50));
                let g = gamma64(d.p() + 4);
                d.column_l1().into_iter().map(|a| g * a * s).collect()
            }
            (_, PublicMap::Oporp(o)) => {
                let mut sizes = vec![0usize; o.k()];
                for &b in o.bins() {
                    sizes[b as usize] += 1;
                }
                sizes.into_iter().map(|n| gamma64(n) * n as f64).collect()
            }
        }
    }

    /// The largest `|ŷ_j|` a row of the cube `[-1, 1]^p` can produce, with its rounding (1%
    /// over the exact `max_j ‖w_j‖₁/√k`): checked against the lattice's integer range before any
    /// data is read ([`crate::privacy::lattice::check_range`]).
    pub fn max_abs_output(map: &PublicMap) -> f64 {
        match map {
            PublicMap::Identity { .. } => 1.0,
            PublicMap::Dense(d) => {
                d.column_l1().into_iter().fold(0.0, f64::max) / (d.k() as f64).sqrt() * 1.01
            }
            PublicMap::Oporp(o) => {
                let mut sizes = vec![0usize; o.k()];
                for &b in o.bins() {
                    sizes[b as usize] += 1;
                }
                sizes.into_iter().max().unwrap_or(0) as f64 * 1.01
            }
        }
    }

    /// `E = (Σ_j E_j²)^{1/2}`, rounded up.
    pub fn error_bound(&self, map: &PublicMap) -> f64 {
        let errors = self.output_errors(map);
        let sum_sq: f64 = errors.iter().map(|e| e * e).sum();
        // k squares, their sum and the square root: round_up(2k + 2) lifts it above the exact value
        sum_sq.sqrt() * crate::projection::dense::round_up(2 * errors.len() + 2)
    }

    /// `out (m×k) = f64` values of the map on `rows (m×p)` in this arithmetic. Errors on a shape
    /// mismatch, an arithmetic the map does not support, or (grid) a value outside [−1, 1].
    pub fn evaluate(&self, map: &PublicMap, rows: &[f32], out: &mut [f64]) -> Result<()> {
        let (p, k) = (map.p(), map.k());
        let m = rows.len() / p.max(1);
        if m * p != rows.len() || out.len() != m * k {
            return Err(Error::param(
                "rows",
                "block shape does not match the mechanism",
            ));
        }
        match (self, map) {
            (Arithmetic::Grid { q }, PublicMap::Dense(d)) => {
                d.grid_sums(rows, *q, out)?;
                let scale = d.unit() as f64 * pow2(-q) / (k as f64).sqrt();
                out.iter_mut().for_each(|v| *v *= scale);
                Ok(())
            }
            (Arithmetic::Grid { .. }, _) => Err(Error::param(
                "projection",
                "the grid arithmetic applies to dense ±1 maps only",
            )),
            (Arithmetic::Float64, PublicMap::Dense(d)) => d.project_f64(rows, out),
            (Arithmetic::Float64, PublicMap::Oporp(o)) => {
                o.project_f64(rows, out);
                Ok(())
            }
            (Arithmetic::Float64, PublicMap::Identity { .. }) => {
                out.iter_mut().zip(rows).for_each(|(o, &u)| *o = u as f64);
                Ok(())
            }
        }
    }

    /// [`Arithmetic::evaluate`] over tiles of [`PROJECT_TILE_ROWS`] rows in parallel: the same
    /// values bit for bit (both arithmetics already take their rows in such tiles, and a row's
    /// values depend on its tile alone).
    pub fn evaluate_par(&self, map: &PublicMap, rows: &[f32], out: &mut [f64]) -> Result<()> {
        use rayon::prelude::*;
        let (p, k) = (map.p().max(1), map.k().max(1));
        if !rows.len().is_multiple_of(p) || out.len() != rows.len() / p * map.k() {
            return Err(Error::param(
                "rows",
                "block shape does not match the mechanism",
            ));
        }
        rows.par_chunks(PROJECT_TILE_ROWS * p)
            .zip(out.par_chunks_mut(PROJECT_TILE_ROWS * k))
            .try_for_each(|(r, o)| self.evaluate(map, r, o))
    }

    /// The arithmetic for query rows, which are not private and need not lie in the domain: this
    /// arithmetic when it applies to them, else `float64` (the grid's exact sums need every value
    /// in [−1, 1]; a query outside it is projected in f64 instead of refused).
    pub fn for_queries(&self, rows: &[f32]) -> Arithmetic {
        match self {
            Arithmetic::Grid { .. } if !crate::data::scale::all_in_unit_cube(rows) => {
                Arithmetic::Float64
            }
            _ => *self,
        }
    }

    /// The map's values on query rows in [`Arithmetic::for_queries`]`(rows)`.
    pub fn evaluate_query(&self, map: &PublicMap, rows: &[f32], out: &mut [f64]) -> Result<()> {
        self.for_queries(rows).evaluate(map, rows, out)
    }

    /// One phrase for `info`, `publish` and `calibrate`.
    pub fn describe(&self) -> String {
        match self {
            Arithmetic::Grid { q } => {
                format!("inputs rounded to the grid 2^-{q}, exact integer sums, one f64 scaling")
            }
            Arithmetic::Float64 => "f64 products and sums".into(),
        }
    }
}

/// The arithmetic of a release and its consequences, as recorded (absent in releases written
/// before dprp 0.3.0, whose maps were evaluated in f32).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArithmeticRecord {
    /// The arithmetic.
    pub arithmetic: Arithmetic,
    /// `β_q`: the largest change of one input coordinate, as the map sees it, between
    /// neighbours (`β + 2^-q` on the grid, β otherwise).
    pub beta_q: f64,
    /// `Δ₂` of the exact map under β-adjacency (the textbook sensitivity).
    pub sensitivity_exact: f64,
    /// `Δ₂` of the map as computed on its grid inputs (`Δ₂·(1 + 2^-q/β)`; `Δ₂` for `float64`).
    pub sensitivity: f64,
    /// `E`, the bound on `‖ŷ − y‖₂` for rows of the domain.
    pub error: f64,
    /// Sign mechanisms: the relative guard `g` on their steps
    /// ([`crate::mechanism::central::sign_sketch::fp_guard`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<f64>,
}

impl ArithmeticRecord {
    /// Plan the arithmetic of `map` under β-adjacency of kind `neighbour`.
    pub fn plan(map: &PublicMap, beta: f64, neighbour: Neighbour) -> ArithmeticRecord {
        ArithmeticRecord::with(map, beta, Arithmetic::choose(map, beta, neighbour))
    }

    /// The record of `map` evaluated in `arithmetic` under β-adjacency.
    pub fn with(map: &PublicMap, beta: f64, arithmetic: Arithmetic) -> ArithmeticRecord {
        ArithmeticRecord {
            arithmetic,
            beta_q: arithmetic.effective_beta(beta),
            sensitivity_exact: map.sensitivity(beta),
            sensitivity: map.sensitivity(arithmetic.effective_beta(beta)),
            error: arithmetic.error_bound(map),
            guard: None,
        }
    }

    /// The sensitivity a calibration without a lattice uses: `Δ_q + 2E`.
    pub fn charged_sensitivity(&self) -> f64 {
        if self.error == 0.0 {
            return self.sensitivity;
        }
        (self.sensitivity + 2.0 * self.error) * (1.0 + pow2(-52))
    }

    /// One line for `info`, `publish` and `calibrate`.
    pub fn describe(&self) -> String {
        format!(
            "{}: Δ₂ {:.6} → {:.6} on the grid (+{:.2e}), computed values within E = {:.2e}",
            self.arithmetic.describe(),
            self.sensitivity_exact,
            self.sensitivity,
            self.sensitivity / self.sensitivity_exact - 1.0,
            self.error
        )
    }
}

/// What the arithmetic and the lattice cost a release, against the textbook mechanism on the
/// exact map: the sensitivity charged and, for Gaussian noise, σ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoundingCost {
    /// `Δ₂` of the exact map.
    pub sensitivity_exact: f64,
    /// The sensitivity the noise is calibrated for: `Δ_r = Δ_q + 2E + γ√k` (lattice), `Δ_q + 2E`
    /// (float), or the sign mechanisms' guarded step `Δ_q·(1 + g)` in units of Δ₂.
    pub sensitivity_charged: f64,
    /// `Δ_charged/Δ₂ − 1`.
    pub sensitivity_excess: f64,
    /// σ of the release (Gaussian mechanisms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sigma: Option<f64>,
    /// σ the same rule gives for `Δ₂` at the release's (ε, δ) (Gaussian mechanisms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sigma_textbook: Option<f64>,
}

impl RoundingCost {
    /// The cost for a mechanism record and its guarantee; `None` for records without an
    /// arithmetic (local mechanisms; releases written before dprp 0.3.0).
    pub fn of(
        rec: &crate::mechanism::MechanismRecord,
        guarantee: &crate::privacy::guarantee::Guarantee,
    ) -> Option<RoundingCost> {
        use crate::privacy::gaussian::{analytic_sigma, classical_sigma, SigmaRule};
        let a = rec.arithmetic.as_ref()?;
        let exact = a.sensitivity_exact;
        if let Some(cal) = &rec.gaussian {
            let charged = match rec.noise_method() {
                Some(crate::privacy::lattice::NoiseMethod::Lattice(l)) => {
                    l.sensitivity_r.unwrap_or(cal.sensitivity)
                }
                _ => cal.sensitivity,
            };
            let delta = guarantee.delta.unwrap_or(0.0);
            let textbook = if cal.rule() == SigmaRule::Classical {
                classical_sigma(exact, guarantee.epsilon, delta).ok()
            } else {
                analytic_sigma(exact, guarantee.epsilon, delta).ok()
            };
            return Some(RoundingCost {
                sensitivity_exact: exact,
                sensitivity_charged: charged,
                sensitivity_excess: charged / exact - 1.0,
                sigma: Some(cal.sigma),
                sigma_textbook: textbook,
            });
        }
        let charged = a.sensitivity * (1.0 + a.guard.unwrap_or(0.0));
        Some(RoundingCost {
            sensitivity_exact: exact,
            sensitivity_charged: charged,
            sensitivity_excess: charged / exact - 1.0,
            sigma: None,
            sigma_textbook: None,
        })
    }

    /// One line for `info` and `publish`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "Δ₂ {:.6} charged as {:.6} (+{:.2e})",
            self.sensitivity_exact, self.sensitivity_charged, self.sensitivity_excess
        );
        if let (Some(sigma), Some(t)) = (self.sigma, self.sigma_textbook) {
            s.push_str(&format!(
                "; σ = {sigma:.6} against {t:.6} for the exact map ({:+.3}%)",
                (sigma / t - 1.0) * 100.0
            ));
        }
        s
    }
}

/// The arithmetic of dense randomised response ([`super::sign_rr`]'s documentation): the grid of
/// [`Arithmetic::choose`], made finer until its norm loss `√p·2^-(q+1)` is at most `ν·2^-11`
/// (`q ≤` [`MAX_GRID_BITS`]); `float64` where there is no such grid (Gaussian maps, ℓ₁
/// neighbours, or a grid finer than `2^-18` needed).
pub fn rr_arithmetic(map: &PublicMap, beta: f64, nu: f64, neighbour: Neighbour) -> Arithmetic {
    let Arithmetic::Grid { q: q0 } = Arithmetic::choose(map, beta, neighbour) else {
        return Arithmetic::Float64;
    };
    if !(nu.is_finite() && nu > 0.0) {
        return Arithmetic::Float64;
    }
    (q0..=MAX_GRID_BITS)
        .find(|&q| norm_loss(map.p(), q) <= nu * pow2(-NORM_MARGIN_BITS))
        .map_or(Arithmetic::Float64, |q| Arithmetic::Grid { q })
}

/// The grid's loss of norm is at most `ν·2^-NORM_MARGIN_BITS` (for [`rr_arithmetic`]).
pub const NORM_MARGIN_BITS: i32 = 11;

/// `√p·2^-(q+1)`, rounded up: the most that rounding a row of `p` coordinates to the grid `2^-q`
/// (each by at most half a step) can move it in ℓ₂.
pub fn norm_loss(p: usize, q: i32) -> f64 {
    (p as f64).sqrt() * (1.0 + pow2(-50)) * pow2(-(q + 1))
}

/// `ν_q = ν − √p·2^-(q+1)`, rounded down: a lower bound on `‖ũ‖` for every row `u` with
/// `‖u‖ ≥ ν` rounded to the grid `2^-q` (triangle inequality; module documentation). Positive
/// for the `q` of [`rr_arithmetic`] (the loss is at most `ν·2^-11` there).
pub fn grid_min_norm(nu: f64, p: usize, q: i32) -> f64 {
    (nu - norm_loss(p, q)) * (1.0 - pow2(-50))
}
