//! The Binomial mechanism's client encoder: protocol π_sk of Agarwal et al. 2018, *cpSGD:
//! Communication-efficient and differentially-private distributed SGD* (quantise after a random
//! rotation, add binomial noise; MECHANISMS-LDP.md §D). Privacy: cpSGD Theorem 1 for the sum of
//! `n` clients, with the sensitivities of cpSGD Lemma 7 — computed, with `k`, `m` and `X`, by
//! [`crate::mechanism::distributed::accountant::params::plan_binomial`] (module documentation there).
//!
//! **Client** ([`BinomialEncoder::encode`]), for `x ∈ R^d`:
//! 1. clip: `x' = min(1, c/‖x‖)·x` (Lemma 7's sensitivities assume `‖x‖₂ ≤ c`);
//! 2. rotate: `x'' = U·x'` with `U = (H/√d')·D` ([`crate::projection::flatten`], cpSGD's
//!    `R = H·D` normalised; `d'` the padded dimension, the dimension everything below and the
//!    accountant use);
//! 3. clamp every coordinate to `[−X, X]` (the plan chooses `X` so that this changes nothing
//!    except with probability `δ/3`, which the guarantee spends on it);
//! 4. quantise to the `k` levels `B(r) = −X + r·w_q`, `w_q = 2X/(k−1)`, by unbiased stochastic
//!    rounding: with `t = (x''_j + X)/w_q ∈ [0, k−1]`, the level index is `U_j = ⌊t⌋ + 1` with
//!    probability `t − ⌊t⌋` and `⌊t⌋` otherwise, so `E[B(U_j)] = x''_j`;
//! 5. add `Bin(m, ½)` ([`crate::privacy::exact::fill_binomial_half`]: popcounts of CSPRNG bits,
//!    integer-only) and send `Y_j = U_j + Bin(m, ½) ∈ [0, k−1+m]` as a residue mod `M = 2^b`
//!    (`log₂(k+m)` bits of information per coordinate; `b` on the wire under SecAgg).
//!
//! **Server** ([`BinomialEncoder::decode`]): the secure sum `S_j = Σ_i Y_ij` of the `n` clients is
//! in `[0, n(k−1+m)]`, so it is read from its residue without any wrap exactly when
//! `n(k−1+m) < M` — checked with `n` from the sum, refused otherwise. The mean in the rotated
//! domain is `X̂_j = −X + w_q·(S_j/n − m/2)` (cpSGD's estimator with `p = ½`), rotated back with
//! `Uᵀ`, padding dropped. It is unbiased for the mean of the clipped, clamped vectors; the
//! binomial noise adds `w_q²·m/4` per client per rotated coordinate to the sum's variance (the
//! `N = n·m` trials of Theorem 1), the quantisation at most `w_q²/4`.

use rand::Rng;
use rand_chacha::ChaCha20Rng;

use super::EncodeStats;
use crate::error::{Error, Result};
use crate::mechanism::distributed::modular::{ModularSum, Modulus};
use crate::privacy::exact::fill_binomial_half;
use crate::projection::flatten::Flatten;
use crate::projection::Seed;

/// Largest number of levels: level indices stay exact integers in `f64` (`2^52`).
pub const MAX_LEVELS: u64 = 1 << 52;

/// The public parameters of a π_sk round (what [`BinomialPlan`] chose, plus the clip norm and
/// the modulus).
///
/// [`BinomialPlan`]: crate::mechanism::distributed::accountant::params::BinomialPlan
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BinomialParams {
    /// ℓ₂ clip norm `c` of each client's vector.
    pub clip: f64,
    /// Clamp bound `X` after rotation (the levels span `[−X, X]`).
    pub x_max: f64,
    /// Quantisation levels `k ≥ 2`.
    pub k: u64,
    /// Binomial trials per client per coordinate `m`; 0 switches the noise off (not private:
    /// tests and `--check` baselines).
    pub m: u64,
    /// Bits per coordinate `b` (`M = 2^b`).
    pub bits: u32,
}

/// A π_sk encoder/decoder for vectors of `R^d`.
#[derive(Debug, Clone)]
pub struct BinomialEncoder {
    params: BinomialParams,
    flatten: Flatten,
    modulus: Modulus,
    w_q: f64,
}

impl BinomialEncoder {
    /// The encoder for `R^d` with the rotation of the public `seed`.
    pub fn new(d: usize, params: BinomialParams, seed: Seed) -> Result<BinomialEncoder> {
        let flatten = Flatten::new(d, seed)?;
        let modulus = Modulus::new(params.bits)?;
        if !(params.clip.is_finite() && params.clip > 0.0) {
            return Err(Error::param(
                "clip",
                format!(
                    "the clip norm c must be finite and positive, got {}",
                    params.clip
                ),
            ));
        }
        if !(params.x_max.is_finite() && params.x_max > 0.0) {
            return Err(Error::param(
                "X",
                format!(
                    "the clamp bound X must be finite and positive, got {}",
                    params.x_max
                ),
            ));
        }
        if !(2..=MAX_LEVELS).contains(&params.k) {
            return Err(Error::param(
                "k",
                format!(
                    "the quantisation needs 2 ≤ k ≤ 2^52 levels, got k = {}",
                    params.k
                ),
            ));
        }
        // one client's message, k − 1 + m, must be a residue below M
        let top = (params.k - 1) as u128 + params.m as u128;
        if top > modulus.mask() as u128 {
            return Err(Error::param(
                "‹bits›",
                format!(
                    "b = {} bits cannot hold one client's level index plus noise, up to \
                     k − 1 + m = {top}",
                    params.bits
                ),
            ));
        }
        let w_q = 2.0 * params.x_max / (params.k - 1) as f64;
        if !(w_q.is_finite() && w_q > 0.0) {
            return Err(Error::param(
                "X",
                format!(
                    "the level spacing 2X/(k−1) = {w_q} is not a positive number (X = {}, k = {})",
                    params.x_max, params.k
                ),
            ));
        }
        Ok(BinomialEncoder {
            params,
            flatten,
            modulus,
            w_q,
        })
    }

    /// The parameters.
    pub fn params(&self) -> BinomialParams {
        self.params
    }
    /// The level spacing `w_q = 2X/(k−1)`.
    pub fn level_spacing(&self) -> f64 {
        self.w_q
    }
    /// Input dimension `d`.
    pub fn input_dim(&self) -> usize {
        self.flatten.d()
    }
    /// Residues per client message (`d'`).
    pub fn message_len(&self) -> usize {
        self.flatten.d_pad()
    }
    /// The modulus `M = 2^b`.
    pub fn modulus(&self) -> Modulus {
        self.modulus
    }

    /// Steps 1–4: the level indices `U ∈ [0, k−1]^{d'}` of the clipped, rotated, clamped vector,
    /// stochastic rounding from `rng` (the client's own stream). Also reports whether the vector
    /// was clipped (longer than `c` by more than one part in 10⁶).
    pub fn quantise(&self, x: &[f64], rng: &mut ChaCha20Rng) -> Result<(Vec<u64>, EncodeStats)> {
        if let Some(j) = x.iter().position(|v| !v.is_finite()) {
            return Err(Error::param(
                "client vector",
                format!(
                    "value {} at coordinate {j} (counted from 0) is not finite",
                    x[j]
                ),
            ));
        }
        let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
        let (c, big_x) = (self.params.clip, self.params.x_max);
        let s = if norm > c { c / norm } else { 1.0 };
        let clipped = norm > c * (1.0 + 1e-6);
        let v = self.flatten.rotate_scaled(x, s)?;
        let top = (self.params.k - 1) as f64;
        let mut out = vec![0u64; v.len()];
        for (o, &a) in out.iter_mut().zip(&v) {
            // clamp, then t ∈ [0, k−1] (the outer clamp guards float rounding at the top level)
            let t = ((a.clamp(-big_x, big_x) + big_x) / self.w_q).clamp(0.0, top);
            let fl = t.floor();
            let frac = t - fl;
            // uniform on [0, 1) with 53 random bits: P(up) = frac up to 2^-53
            let u = (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
            *o = if u < frac { fl as u64 + 1 } else { fl as u64 };
        }
        Ok((
            out,
            EncodeStats {
                clipped,
                rounding_tries: 1,
                clip_excess: (norm - c).max(0.0),
            },
        ))
    }

    /// Encode one client's vector into `out` (`d'` residues mod `M`): level indices plus
    /// `Bin(m, ½)` per coordinate, all secret randomness from `rng`.
    pub fn encode(
        &self,
        x: &[f64],
        out: &mut [u64],
        rng: &mut ChaCha20Rng,
        exact: Option<&mut [i128]>,
    ) -> Result<EncodeStats> {
        let (levels, stats) = self.quantise(x, rng)?;
        if out.len() != levels.len() {
            return Err(Error::param(
                "message",
                format!(
                    "a message buffer of {} residues for {} coordinates",
                    out.len(),
                    levels.len()
                ),
            ));
        }
        let mut noise = vec![0u64; levels.len()];
        if self.params.m > 0 {
            fill_binomial_half(rng, self.params.m, &mut noise);
        }
        // U + B ≤ k − 1 + m < M (checked in new): no reduction needed, none happens
        for ((o, &u), &b) in out.iter_mut().zip(&levels).zip(&noise) {
            *o = u + b;
        }
        if let Some(acc) = exact {
            for (a, &y) in acc.iter_mut().zip(out.iter()) {
                *a += y as i128;
            }
        }
        Ok(stats)
    }

    /// The mean estimate from the per-coordinate sums `S_j` (`d'` of them, each in
    /// `[0, n(k−1+m)]`) of `n` clients: `Uᵀ(−X + w_q·(S/n − m/2))`, padding dropped.
    pub fn decode_sums(&self, sums: &[u64], n: u64) -> Result<Vec<f64>> {
        if sums.len() != self.message_len() {
            return Err(Error::param(
                "sum",
                format!(
                    "a sum of {} coordinates for messages of {}",
                    sums.len(),
                    self.message_len()
                ),
            ));
        }
        if n == 0 {
            return Err(Error::param("sum", "no client contributed to the sum"));
        }
        let (nf, half_m) = (n as f64, self.params.m as f64 / 2.0);
        let big_x = self.params.x_max;
        let mut y: Vec<f64> = sums
            .iter()
            .map(|&s| -big_x + self.w_q * (s as f64 / nf - half_m))
            .collect();
        self.flatten.unrotate(&mut y)
    }

    /// The mean estimate from the secure sum of `sum.clients()` messages; refused when
    /// `n(k−1+m) ≥ M`, where the residues could have wrapped.
    pub fn decode(&self, sum: &ModularSum) -> Result<Vec<f64>> {
        let n = sum.clients();
        let top = (self.params.k - 1) as u128 + self.params.m as u128;
        if n as u128 * top > self.modulus.mask() as u128 {
            return Err(Error::param(
                "‹bits›",
                format!(
                    "the sum of n = {n} clients can reach n·(k−1+m) = {}, which does not fit \
                     M = 2^{}: the residues may have wrapped",
                    n as u128 * top,
                    self.modulus.bits()
                ),
            ));
        }
        self.decode_sums(sum.residues(), n)
    }
}

impl super::ClientEncoder for BinomialEncoder {
    fn input_dim(&self) -> usize {
        BinomialEncoder::input_dim(self)
    }
    fn message_len(&self) -> usize {
        BinomialEncoder::message_len(self)
    }
    fn modulus(&self) -> Modulus {
        self.modulus
    }
    fn encode(
        &self,
        x: &[f64],
        out: &mut [u64],
        rng: &mut ChaCha20Rng,
        exact: Option<&mut [i128]>,
    ) -> Result<EncodeStats> {
        BinomialEncoder::encode(self, x, out, rng, exact)
    }
    fn decode(&self, sum: &ModularSum) -> Result<Vec<f64>> {
        BinomialEncoder::decode(self, sum)
    }
    /// The sums are read as non-negative residues: `[0, M)`.
    fn decodes_exactly(&self, v: i128) -> bool {
        v >= 0 && v <= self.modulus.mask() as i128
    }
}
