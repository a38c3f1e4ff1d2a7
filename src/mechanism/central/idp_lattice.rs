//! Lattice noise for the individual-DP Gaussian sign mechanisms (`idp-signrp-g`,
//! `idp-signoporp-g`, [`super::idp_sign`]): the discrete Gaussian on the noise set `A`, with its
//! accounting ([`crate::privacy::lattice`], last paragraph). A release records it as its noise
//! method; the sign sketch draws with it.

use super::arithmetic::{Arithmetic, ArithmeticRecord};
use super::public_map::{step_sizes, PublicMap};
use crate::error::{Error, Result};
use crate::privacy::exact::{DiscreteGaussian, Rational};
use crate::privacy::gaussian::analytic_sigma;
use crate::privacy::lattice::{self, LatticeRecord};

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
    pub(super) fn plan(
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
        let min_step = step_sizes(map, beta_q)
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
