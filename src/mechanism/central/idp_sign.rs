//! The individual-DP sign mechanisms (Li & Li, appendix A: Algorithms 6, 7, 8 and A.3):
//! `idp-signrp-g`, `idp-signrp-rr`, `idp-signoporp-g`, `idp-signoporp-rr`.
//!
//! **Individual DP is weaker than DP** (Definition A.1): it bounds the output distributions of
//! *this* dataset `U` against each of its β-neighbours only. The noise set and its calibration are
//! computed from `U` and then held fixed — the guarantee compares the release with what the same
//! calibrated mechanism would output on any neighbour of `U`. Publishing needs `--individual-dp`.
//!
//! 1. Project: `x = Wᵀu/√k` (dense) or the OPORP of `u`.
//! 2. Noise set (Algorithm 7): `A = {j : c_j > |x_j|}` with `c_j = β·max_i|w_ij|/√k` (dense) or β
//!    (OPORP). For `j ∉ A` no β-neighbour can change `sign(x_j)`, so those signs are released as
//!    they are.
//! 3. `-g` (Algorithm 6): `Δ₂(A) = (β/√k)·max_i‖W[i,A]‖₂` (Rademacher: `β·√(|A|/k)`; OPORP: β),
//!    σ from the analytic Gaussian mechanism (Theorem 3.2) for `Δ₂(A)`, ε, δ; release
//!    `sign(x_j + N(0,σ²))` for `j ∈ A`: (ε, δ)-iDP.
//!    `-rr` (Algorithm 8): flip each sign in A with `1/(1+e^{ε'})`, `ε' = ε/|A|` rounded down
//!    (dense: all of A can change) or `ε' = ε` (OPORP: one bin changes; single-coordinate
//!    neighbours only): ε-iDP. Each flip is an exact coin `Q/2⁶⁴` rounded toward ½
//!    ([`crate::privacy::rr`]).
//!
//! Deviation from a literal reading of A.3: for `idp-signoporp-rr` the paper's text would split ε
//! over |A|; since one coordinate moves one bin, spending ε per bin is already ε-iDP, and dprp does
//! that (better utility, same guarantee).

use super::arithmetic::{Arithmetic, ArithmeticRecord};
use super::gaussian_sketch::PublicMap;
use super::sign_rr::require_coordinate_neighbours;
use super::sign_sketch::{FlipRule, SignRecord, SignSketch};
use crate::error::{Error, Result};
use crate::mechanism::{MechanismKind, MechanismParams, NoiseChoice};
use crate::privacy::exact::{DiscreteGaussian, Rational};
use crate::privacy::gaussian::analytic_sigma;
use crate::privacy::guarantee::{Guarantee, GuaranteeKind};
use crate::privacy::lattice::{self, LatticeRecord};
use crate::projection::{DenseKind, DenseProjection, Oporp, Seed};

/// Citation recorded in releases.
pub const ALGORITHM: &str =
    "iDP-SignRP (Li & Li, Algorithms 6-8; appendix A.3 for OPORP bins): individual DP only";

/// Build one of the four iDP sign mechanisms.
pub fn build(
    params: &MechanismParams,
    k: usize,
    seed: Seed,
    noise: NoiseChoice,
) -> Result<SignSketch> {
    let oporp = matches!(
        params.kind,
        MechanismKind::IdpSignoporpG | MechanismKind::IdpSignoporpRr
    );
    let gaussian = matches!(
        params.kind,
        MechanismKind::IdpSignrpG | MechanismKind::IdpSignoporpG
    );
    let map = if oporp {
        PublicMap::Oporp(Oporp::generate(params.p, k, seed)?)
    } else {
        let kind = params.projection.unwrap_or(DenseKind::Rademacher);
        PublicMap::Dense(DenseProjection::generate(kind, params.p, k, seed)?)
    };
    let (rule, delta) = if gaussian {
        let delta = params.delta.ok_or_else(|| {
            Error::missing(
                "‹delta›",
                format!("{} gives (ε,δ)-iDP and needs δ", params.kind.name()),
            )
        })?;
        (
            FlipRule::IdpGaussian {
                epsilon: params.epsilon,
                delta,
                sigma_unit: analytic_sigma(1.0, params.epsilon, delta)?,
            },
            Some(delta),
        )
    } else {
        if oporp {
            require_coordinate_neighbours(params)?;
        }
        (
            FlipRule::IdpRandomisedResponse {
                epsilon: params.epsilon,
                split: !oporp,
            },
            None,
        )
    };
    let record = SignRecord {
        rule,
        beta: params.beta,
        n_plus: None,
        min_norm: None,
        grid_min_norm: None,
        noise_set: None,
        flip_threshold: None,
    };
    let guarantee = Guarantee {
        kind: GuaranteeKind::IndividualDp,
        epsilon: params.epsilon,
        delta,
        beta: params.beta,
        neighbour: params.neighbour,
        local: None,
    };
    let mut sketch = SignSketch::new(params.kind, ALGORITHM, map, record, guarantee)?;
    if let (true, NoiseChoice::Lattice, Some(delta)) = (gaussian, noise, delta) {
        sketch.idp_lattice = Some(IdpLattice::plan(
            sketch.map(),
            sketch.arithmetic(),
            params.epsilon,
            delta,
        )?);
    }
    Ok(sketch)
}

/// Lattice noise on the noise set `A` ([`crate::privacy::lattice`], last paragraph): per row,
/// `Δ_r(A) = Δ₂(A) + 2E + γ√|A|`, `σ_c = Δ_r(A)·σ₁` with `σ₁` the analytic σ for sensitivity 1 at
/// `(ε₀, δ₀)` (σ scales linearly with the sensitivity), `s² = ⌈(σ_c/γ)²⌉ + ⌈s₂²⌉`, and the signs
/// of `r_j + Z_j`, `Z_j ~ N_ℤ(0, s²)` from the exact CKS sampler (`s²` changes from row to row,
/// so no table is built). `γ` is data-independent: from the smallest step `c_j` (a lower bound
/// on `Δ₂(A)` for every non-empty `A`) and `k ≥ |A|`. The accounting uses `k`: `ε₀ = ε − 2k ln c`,
/// `δ₀ = δ/c^k`, valid for every `|A| ≤ k`.
#[derive(Debug, Clone)]
pub struct IdpLattice {
    /// What the release records (`sigma_unit` = σ₁; the per-row fields are absent).
    pub record: LatticeRecord,
    sigma_unit: f64,
}

impl IdpLattice {
    fn plan(
        map: &PublicMap,
        arithmetic: &ArithmeticRecord,
        epsilon: f64,
        delta: f64,
    ) -> Result<IdpLattice> {
        let beta_q = arithmetic.beta_q;
        let k = map.k();
        let eta = lattice::eta_bound(lattice::S2)?;
        let lc = lattice::log_c(eta, crate::privacy::exact::WEIGHT_ERROR);
        let (eps0, del0) = lattice::account(epsilon, delta, k, lc)?;
        let sigma_unit = analytic_sigma(1.0, eps0, del0)?;
        let min_step = super::sign_sketch::step_sizes(map, beta_q)
            .into_iter()
            .fold(f64::INFINITY, f64::min);
        let g = lattice::choose_g(min_step, k, min_step * sigma_unit);
        lattice::check_range(Arithmetic::max_abs_output(map), g)?;
        let fp = arithmetic.error;
        // the largest s² any row can need: Δ₂(A) ≤ Δ₂ of the whole map
        let worst = (arithmetic.sensitivity + 2.0 * fp + lattice::pow2(-g) * (k as f64).sqrt())
            * sigma_unit
            * lattice::pow2(g);
        if worst.is_nan() || worst * worst >= crate::privacy::exact::TABLE_GAUSSIAN_MAX_S2 as f64 {
            return Err(Error::param(
                "lattice noise",
                format!(
                    "s² up to {:e} exceeds 2^62; use ‹noise float›",
                    worst * worst
                ),
            ));
        }
        Ok(IdpLattice {
            record: LatticeRecord {
                g,
                s2: lattice::S2,
                eta,
                sampler_error: crate::privacy::exact::WEIGHT_ERROR,
                log_c: lc,
                coordinates: k,
                epsilon0: eps0,
                delta0: del0,
                fp_error: fp,
                sensitivity_r: None,
                sigma_c: None,
                s_squared: None,
                sigma: None,
                sigma_unit: Some(sigma_unit),
            },
            sigma_unit,
        })
    }

    /// From a release record.
    pub fn from_record(record: LatticeRecord) -> Result<IdpLattice> {
        let sigma_unit = record
            .sigma_unit
            .ok_or_else(|| Error::param("release", "an iDP lattice noise record without σ₁"))?;
        Ok(IdpLattice { record, sigma_unit })
    }

    /// `s²` for a row whose noise set has sensitivity `sens` and size `n`.
    pub fn s_squared(&self, sens: f64, n: u32) -> f64 {
        let g = self.record.g;
        let sens_r = sens + 2.0 * self.record.fp_error + lattice::pow2(-g) * (n as f64).sqrt();
        let s1 = sens_r * (1.0 + lattice::pow2(-50)) * self.sigma_unit * lattice::pow2(g);
        (s1 * s1 * (1.0 + lattice::pow2(-50))).ceil() + (lattice::S2 * lattice::S2).ceil()
    }

    /// Replace the signs in `A` (bits of `set`) by the signs of `round(x_j·2^g) + Z_j`, drawing
    /// `Z_j` in ascending `j`. Should `s²` fall outside the sampler's range (excluded when the
    /// mechanism is built), the signs in `A` become fair coins — infinite noise, never less.
    pub(super) fn signs<T: Copy + Into<f64>>(
        &self,
        x: &[T],
        sens: f64,
        n: u32,
        set: &[u64],
        words: &mut [u64],
        rng: &mut rand_chacha::ChaCha20Rng,
    ) {
        use rand::Rng;
        let s_sq = self.s_squared(sens, n);
        let sampler = (s_sq < crate::privacy::exact::TABLE_GAUSSIAN_MAX_S2 as f64)
            .then(|| DiscreteGaussian::new(Rational::integer(s_sq as u128)).ok())
            .flatten();
        let up = lattice::pow2(self.record.g);
        let limit = lattice::pow2(52);
        for (w, (&a, xs)) in words.iter_mut().zip(set.iter().zip(x.chunks(64))) {
            let mut bitsout = 0u64;
            match &sampler {
                Some(dg) => {
                    let mut rest = a;
                    while rest != 0 {
                        let b = rest.trailing_zeros() as usize;
                        rest &= rest - 1;
                        // clamping is 1-Lipschitz (sensitivity unchanged); the build-time range
                        // check makes it a no-op for rows of the domain
                        let r = (xs[b].into() * up).clamp(-limit, limit).round();
                        let v = r + dg.sample(rng) as f64;
                        bitsout |= ((v >= 0.0) as u64) << b;
                    }
                }
                None => bitsout = rng.next_u64() & a,
            }
            *w = (*w & !a) | bitsout;
        }
    }
}
