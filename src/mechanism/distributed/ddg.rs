//! The distributed discrete Gaussian (DDG): Kairouz, Liu, Steinke 2021, "The Distributed Discrete
//! Gaussian Mechanism for Federated Learning with Secure Aggregation", Algorithm 1, as restated
//! with its parameters by Chen et al. 2022, Algorithm 6 (MECHANISMS-LDP.md §E). Privacy: Theorem
//! E.1 of Chen et al. (½ε²-zCDP for the sum over `n` clients), computed by
//! [`crate::mechanism::distributed::accountant::ddg`] and converted to (ε, δ) by [`crate::privacy::zcdp`].
//!
//! **Client** ([`Ddg::encode`]), for `x ∈ R^d`:
//! 1. clip and scale: `x' = min(1, c/‖x‖)·x/γ`;
//! 2. flatten: `x'' = U·x'` with `U = (H/√d')·D` ([`crate::projection::flatten`]; `d'` the padded
//!    dimension, the dimension everything below and the accountant use);
//! 3. conditional randomised rounding: round each coordinate to `⌊x''_j⌋` or `⌈x''_j⌉` with the
//!    probabilities that make it unbiased, and redraw the whole vector while
//!    `‖x̃‖₂ > min{c/γ + √d', √(c²/γ² + d'/4 + √(2 ln(1/β))·(c/γ + √d'/2))}` — the bound the
//!    sensitivity `Δ₂` of Theorem E.1 assumes. Each draw meets it with probability at least
//!    `1 − β`; after [`MAX_ROUNDING_TRIES`] draws (probability below `β^{10⁴}`) the encoder
//!    stops with an error instead of sending a vector the accountant did not cover;
//! 4. add `N_ℤ(0, σ²/γ²)` to every coordinate (the variance rounded up, see [`IntegerNoise`]),
//!    drawn by an exact sampler ([`crate::privacy::exact::TableGaussian`] or
//!    [`crate::privacy::exact::DiscreteGaussian`], integer arithmetic only) from the OS-seeded
//!    CSPRNG;
//! 5. reduce mod `M = 2^b`.
//!
//! **Server** ([`Ddg::decode`]): the secure sum mod `M` ([`crate::mechanism::distributed::secagg`]), lifted to
//! `[−M/2, M/2)`, times `γ`, rotated back with `Uᵀ`, padding dropped, divided by `n`. A coordinate
//! whose true sum leaves `[−M/2, M/2)` wraps around; the parameter choice keeps that unlikely and
//! reports its probability.

use rand::Rng;
use rand_chacha::ChaCha20Rng;

use crate::error::{Error, Result};
use crate::mechanism::distributed::accountant::ddg::DdgSetting;
use crate::mechanism::distributed::modular::{ModularSum, Modulus};
use crate::privacy::chacha::BufferedChaCha;
use crate::privacy::exact::{
    DiscreteGaussian, Rational, TableGaussian, TABLE_GAUSSIAN_MAX_S2, TABLE_GAUSSIAN_MIN_S2,
};
use crate::projection::flatten::Flatten;
use crate::projection::Seed;

/// Draws of the conditional rounding before the encoder gives up (each succeeds with
/// probability at least `1 − β`).
pub const MAX_ROUNDING_TRIES: u32 = 10_000;

/// Denominator bits of the rational noise variance `σ²/γ²` handed to the exact sampler (rounded
/// up, so the noise is never smaller than the accountant assumed).
const SIGMA2_DEN_BITS: u32 = 40;

/// The exact sampler of a client's integer noise `N_ℤ(0, s²)`, `s² = σ²/γ²`: the table method
/// ([`TableGaussian`], about 20 ns a sample) with `s²` rounded up to an integer when
/// `s² ≥ 2^12`, else CKS Algorithm 3 ([`DiscreteGaussian`], about 120 ns) with `s²` rounded up
/// to a multiple of 2^{−40}. Both laws are exact, and both roundings only add noise: Theorem E.1
/// at the sampled variance gives a smaller ε than at the accountant's `σ²/γ²`, so the stated
/// guarantee holds.
#[derive(Clone, Debug)]
pub enum IntegerNoise {
    /// The table sampler (integer `s² ≥ 2^12`).
    Table(TableGaussian),
    /// CKS Algorithm 3 (rational `s²`).
    Cks(DiscreteGaussian),
}

impl IntegerNoise {
    /// The sampler for a variance of at least `s2` (see the type's documentation).
    pub fn new(s2: f64) -> Result<IntegerNoise> {
        let up = s2.ceil();
        if up >= TABLE_GAUSSIAN_MIN_S2 as f64 && up <= TABLE_GAUSSIAN_MAX_S2 as f64 {
            return Ok(IntegerNoise::Table(TableGaussian::new(up as u64)?));
        }
        Ok(IntegerNoise::Cks(DiscreteGaussian::new(
            Rational::from_f64_up(s2, SIGMA2_DEN_BITS)?,
        )?))
    }

    /// The variance parameter `s²` actually sampled (at least the one asked for).
    pub fn s2(&self) -> f64 {
        match self {
            IntegerNoise::Table(t) => t.s2() as f64,
            IntegerNoise::Cks(g) => g.sigma2().to_f64(),
        }
    }

    /// Fill `out` with independent samples.
    pub fn fill<R: rand::CryptoRng + ?Sized>(&self, rng: &mut R, out: &mut [i64]) {
        match self {
            IntegerNoise::Table(t) => t.fill(rng, out),
            IntegerNoise::Cks(g) => g.fill(rng, out),
        }
    }
}

/// The public parameters of a DDG round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DdgParams {
    /// ℓ₂ clip norm `c`.
    pub clip: f64,
    /// Granularity `γ` (one integer step is worth `γ`).
    pub gamma: f64,
    /// Noise standard deviation `σ` per client in the original units (the integer noise has
    /// variance `σ²/γ²`); 0 switches the noise off (not private: tests and `--check` baselines).
    pub sigma: f64,
    /// Conditional-rounding bias `β ∈ [0, 1)`.
    pub beta: f64,
    /// Bits per coordinate `b` (`M = 2^b`).
    pub bits: u32,
}

/// What encoding one client did (for the round's report).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EncodeStats {
    /// The vector was longer than `c` (by more than one part in 10⁶) and scaled down.
    pub clipped: bool,
    /// Draws of the conditional rounding (1 = accepted at once).
    pub rounding_tries: u32,
    /// How far the vector was beyond the clip norm, `max(0, ‖x‖ − c)` (what clipping removed).
    pub clip_excess: f64,
}

/// A DDG encoder/decoder for vectors of `R^d`.
#[derive(Debug, Clone)]
pub struct Ddg {
    params: DdgParams,
    flatten: Flatten,
    modulus: Modulus,
    noise: Option<IntegerNoise>,
    bound_sq: f64,
}

impl Ddg {
    /// The encoder for `R^d` with the flattening rotation of the public `seed`.
    pub fn new(d: usize, params: DdgParams, seed: Seed) -> Result<Ddg> {
        let flatten = Flatten::new(d, seed)?;
        let modulus = Modulus::new(params.bits)?;
        let setting = DdgSetting {
            n: 1,
            d: flatten.d_pad() as u64,
            clip: params.clip,
            gamma: params.gamma,
            beta: params.beta,
        };
        // validates c, γ and β
        let bound = setting.rounding_norm_bound();
        crate::mechanism::distributed::accountant::ddg::zcdp_epsilon(&setting, 1.0)?;
        if !(params.sigma.is_finite() && params.sigma >= 0.0) {
            return Err(Error::param(
                "σ",
                format!(
                    "the noise scale must be finite and non-negative, got {}",
                    params.sigma
                ),
            ));
        }
        let noise = if params.sigma > 0.0 {
            Some(IntegerNoise::new((params.sigma / params.gamma).powi(2))?)
        } else {
            None
        };
        Ok(Ddg {
            params,
            flatten,
            modulus,
            noise,
            bound_sq: bound * bound,
        })
    }

    /// The parameters.
    pub fn params(&self) -> DdgParams {
        self.params
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
    /// The integer noise, `None` when switched off.
    pub fn noise(&self) -> Option<&IntegerNoise> {
        self.noise.as_ref()
    }
    /// The conditional rounding's squared norm bound (integer domain).
    pub fn rounding_bound_sq(&self) -> f64 {
        self.bound_sq
    }

    /// Encode one client's vector into `out` (`d'` residues mod `M`), secret randomness from
    /// `rng` (the client's own OS-seeded CSPRNG stream).
    pub fn encode(
        &self,
        x: &[f64],
        out: &mut [u64],
        rng: &mut ChaCha20Rng,
        exact: Option<&mut [i128]>,
    ) -> Result<EncodeStats> {
        // Rounding and noise read the client's stream through the multi-block keystream: the
        // same words, in the same order, as drawing them from `rng` directly.
        let mut rng = BufferedChaCha::new(rng);
        let (tilde, stats) = self.round_with(x, &mut rng)?;
        if out.len() != tilde.len() {
            return Err(Error::param(
                "message",
                format!(
                    "a message buffer of {} residues for {} coordinates",
                    out.len(),
                    tilde.len()
                ),
            ));
        }
        let mut z = vec![0i64; tilde.len()];
        if let Some(n) = &self.noise {
            n.fill(&mut rng, &mut z);
        }
        let m = self.modulus;
        for ((o, &t), &e) in out.iter_mut().zip(&tilde).zip(&z) {
            *o = m.reduce(t.wrapping_add(e));
        }
        if let Some(acc) = exact {
            for ((a, &t), &e) in acc.iter_mut().zip(&tilde).zip(&z) {
                *a += t as i128 + e as i128;
            }
        }
        Ok(stats)
    }

    /// Steps 1–3: the clipped, scaled, flattened and conditionally rounded integer vector.
    pub fn round(&self, x: &[f64], rng: &mut ChaCha20Rng) -> Result<(Vec<i64>, EncodeStats)> {
        self.round_with(x, &mut BufferedChaCha::new(rng))
    }

    /// [`Ddg::round`] on any generator (the encoder passes the buffered view of the client's
    /// stream).
    fn round_with<R: Rng + ?Sized>(
        &self,
        x: &[f64],
        rng: &mut R,
    ) -> Result<(Vec<i64>, EncodeStats)> {
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
        let s = if norm > self.params.clip {
            self.params.clip / norm
        } else {
            1.0
        } / self.params.gamma;
        // reported as clipped when scaled down by more than float rounding of a unit vector
        let clipped = norm > self.params.clip * (1.0 + 1e-6);
        let v = self.flatten.rotate_scaled(x, s)?;
        // the integers must fit i64 with room for the noise (the sum itself is taken mod M)
        if v.iter().any(|a| a.abs() >= 2f64.powi(61)) {
            return Err(Error::param(
                "γ",
                format!(
                    "c/γ = {} puts coordinates beyond the integer range; raise γ",
                    self.params.clip / self.params.gamma
                ),
            ));
        }
        let mut out = vec![0i64; v.len()];
        for tries in 1..=MAX_ROUNDING_TRIES {
            let mut sq = 0.0;
            for (o, &a) in out.iter_mut().zip(&v) {
                // ⌊a⌋ in integers (|a| < 2^61): truncate, one down for a negative non-integer
                // (the same value as `a.floor()`, without the library call)
                let t = a as i64;
                let fl = t - ((t as f64) > a) as i64;
                let frac = a - fl as f64;
                // uniform on [0, 1) with 53 random bits: P(up) = frac up to 2^-53
                let u = (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
                let r = fl + (u < frac) as i64;
                let rf = r as f64;
                sq += rf * rf;
                *o = r;
            }
            if sq <= self.bound_sq {
                return Ok((
                    out,
                    EncodeStats {
                        clipped,
                        rounding_tries: tries,
                        clip_excess: (norm - self.params.clip).max(0.0),
                    },
                ));
            }
        }
        Err(Error::param(
            "β",
            format!(
                "the conditional rounding missed its norm bound {MAX_ROUNDING_TRIES} times \
                 (β = {}); the parameters do not fit this vector",
                self.params.beta
            ),
        ))
    }

    /// The mean estimate from the secure sum of `sum.clients()` messages.
    pub fn decode(&self, sum: &ModularSum) -> Result<Vec<f64>> {
        if sum.residues().len() != self.message_len() {
            return Err(Error::param(
                "sum",
                format!(
                    "a sum of {} residues for messages of {}",
                    sum.residues().len(),
                    self.message_len()
                ),
            ));
        }
        if sum.clients() == 0 {
            return Err(Error::param("sum", "no client contributed to the sum"));
        }
        let g = self.params.gamma;
        let mut y: Vec<f64> = sum.lifted().iter().map(|&v| v as f64 * g).collect();
        let mut mean = self.flatten.unrotate(&mut y)?;
        let n = sum.clients() as f64;
        for v in &mut mean {
            *v /= n;
        }
        Ok(mean)
    }
}

impl super::ClientEncoder for Ddg {
    fn input_dim(&self) -> usize {
        Ddg::input_dim(self)
    }
    fn message_len(&self) -> usize {
        Ddg::message_len(self)
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
        Ddg::encode(self, x, out, rng, exact)
    }
    fn decode(&self, sum: &ModularSum) -> Result<Vec<f64>> {
        Ddg::decode(self, sum)
    }
}
