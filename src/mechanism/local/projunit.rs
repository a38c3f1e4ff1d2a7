//! ProjUnit (Asi, Feldman, Nelson, Nguyen, Talwar 2023, Algorithms 1–2 and 5; MECHANISMS-LDP.md
//! §B): project to `k ≪ d` dimensions with a public random matrix, privatise the direction there
//! with PrivUnitG, and lift back on the server.
//!
//! **Client** (Algorithm 1): `W ∈ R^{k×d}` regenerated from a public per-client seed;
//! `u = Wv/‖Wv‖` (the fixed unit vector `e₁` if `Wv = 0`); send `ẑ = PrivUnitG_k(u)` and the seed.
//! Ball inputs are first rounded to the sphere in `R^d` (see [`super`]), which keeps `E[v_s] = v`.
//! **Server** (Algorithm 2 with the Algorithm 5 correction): `X = c·Wᵀẑ`; the mean estimate is
//! the plain average of the `X_i`.
//!
//! **Privacy.** `W` is drawn from the public seed independently of `v`, so for *every fixed* `W`
//! the client's output is PrivUnitG_k applied to some unit vector of `R^k`: for any inputs `v, v'`
//! and any output set `S`, `P(ẑ ∈ S | W, v) ≤ e^ε·P(ẑ ∈ S | W, v')` by the ε-LDP of PrivUnitG on
//! the sphere of `R^k` (for all pairs of unit vectors, in particular `u(W,v)` and `u(W,v')`).
//! Publishing the seed (i.e. `W`) costs nothing since it is independent of the data. Averaging
//! over `W` keeps the bound.
//!
//! **Unbiasing constants.** `E[ẑ | u] = u` (PrivUnitG is debiased), so `E[Wᵀẑ] = E[WᵀWv/‖Wv‖]`.
//! * *Rotation*, `W = √(d/k)·Q` with `Q` the first `k` rows of a Haar rotation (a product of `k`
//!   Householder reflections, `O(dk)` time and `O(d)` memory, [`super::rotation`]): `QᵀQ = P` is the
//!   projection on a uniformly random `k`-subspace, `WᵀWv/‖Wv‖ = √(d/k)·Pv/‖Pv‖`, whose mean is
//!   `√(d/k)·E‖Pv‖·v` by rotation invariance (the component orthogonal to `v` averages to zero;
//!   the component along `v` is `⟨Pv, v⟩/‖Pv‖ = ‖Pv‖`). `‖Pv‖² ~ Beta(k/2, (d−k)/2)` so
//!   `E‖Pv‖ = Γ((k+1)/2)Γ(d/2)/(Γ(k/2)Γ((d+1)/2))` and
//!   `c = √(k/d)·Γ((d+1)/2)Γ(k/2)/(Γ((k+1)/2)Γ(d/2))` makes `E[X] = v` **exactly**.
//! * *Gaussian*, i.i.d. `N(0, 1/k)` entries: `g = Wv ~ N(0, I_k/k)` and `W(I − vvᵀ)` are jointly
//!   Gaussian and uncorrelated, hence independent; `Wᵀg/‖g‖ = v·‖g‖ + (I − vvᵀ)Wᵀg/‖g‖` and the
//!   second term has mean zero given `g`. So `E[Wᵀu] = E‖g‖·v = √(2/k)·Γ((k+1)/2)/Γ(k/2)·v`
//!   (`√k‖g‖ ~ χ_k`) and `c = √(k/2)·Γ(k/2)/Γ((k+1)/2)` makes the estimator **exactly** unbiased.
//! * *SRHT* (FastProjUnit), `W = √(d'/k)·S·H·D`: there is no rotation invariance, so no constant
//!   makes the normalised estimator exactly unbiased. We use the rotation constant with `d'` (the
//!   SRHT mimics a rotation of `R^{d'}`); the estimator is only **nearly** unbiased. The
//!   complete-then-normalise variant of Algorithms 6–7 is [`NearlyUnbiasedSrht`], exactly
//!   unbiased when its constant `C ≥ d'/k`.
//!
//! All constants come from `ln Γ` ratios ([`ln_gamma_half_ratio`]), exact to full precision at
//! `d = 10⁷`.
//!
//! **Error.** With the correction, `E‖X − v‖² = E‖X‖² − ‖v‖²`, where for a unit `v`
//! * rotation: `‖Wᵀẑ‖² = (d/k)‖ẑ‖²` exactly, `E‖ẑ‖² = scale²(E[α²] + k − 1)`, so
//!   `mse = c²·(d/k)·scale²·(E[α²] + k − 1) − 1`. The formula quoted in MECHANISMS-LDP.md,
//!   `(d/k)·scale²·(E[α²] + k − 1) + 1 − 2/c`, is the error of the *uncorrected* Algorithm 1
//!   estimator `Wᵀẑ` (mean `v/c`); both are exposed and both are checked by simulation.
//! * Gaussian: `⟨v, Wᵀẑ⟩ = ‖g‖·scale·α` and `(I − vvᵀ)Wᵀẑ` is, given `ẑ`, Gaussian with
//!   covariance `‖ẑ‖²/k·(I − vvᵀ)`, so `E‖Wᵀẑ‖² = scale²E[α²] + ((d−1)/k)·scale²(E[α²] + k − 1)`.

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use super::algorithm::{constant, layout_of, ErrorKind, LocalAlgorithm, LocalMap, WithMaps};
use super::algorithm::{BALL_NOTE, LAYOUT};
use super::rotation::{HaarRows, ReflectionDraw};
use super::WordRng;
use super::{check_in_ball, effective_norm2, norm2, round_to_sphere, PrivUnitG};
use crate::error::{Error, Result};
use crate::mechanism::ProjectionRecord;
use crate::privacy::special::ln_gamma_half_ratio;
use crate::projection::hadamard::next_pow2;
use crate::projection::{gaussian_fill_f64, Seed, Srht};

/// Citation recorded with releases.
pub const ALGORITHM: &str = "ProjUnit (Asi et al. 2023, Algorithms 1, 2 and 5) over PrivUnitG";

/// Largest `k·d` a dense (Gaussian) ProjUnit matrix may have (8 GiB of f64).
pub const MAX_DENSE_ENTRIES: usize = 1 << 30;

/// The public projection family of a ProjUnit mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjKind {
    /// `√(d/k)·` the first `k` rows of a Haar rotation (`k` Householder reflections,
    /// [`super::rotation`]).
    Rotation,
    /// I.i.d. `N(0, 1/k)` entries.
    Gaussian,
    /// `√(d'/k)·S·H·D` ([`Srht`]), `O(d log d)` per client; nearly unbiased only.
    Srht,
}

/// The debiasing constant `c` of the module documentation for `(kind, d, k)`.
pub fn unbiasing_constant(kind: ProjKind, d: usize, k: usize) -> Result<f64> {
    check_dims(kind, d, k)?;
    let rot = |d: usize| {
        // √(k/d)·exp([lnΓ(d/2 + ½) − lnΓ(d/2)] − [lnΓ(k/2 + ½) − lnΓ(k/2)])
        (k as f64 / d as f64).sqrt()
            * (ln_gamma_half_ratio(d as f64 / 2.0) - ln_gamma_half_ratio(k as f64 / 2.0)).exp()
    };
    Ok(match kind {
        ProjKind::Rotation => rot(d),
        ProjKind::Gaussian => {
            (k as f64 / 2.0).sqrt() * (-ln_gamma_half_ratio(k as f64 / 2.0)).exp()
        }
        ProjKind::Srht => rot(next_pow2(d)?),
    })
}

fn check_dims(kind: ProjKind, d: usize, k: usize) -> Result<()> {
    if k < 2 {
        return Err(Error::param(
            "‹k›",
            format!("ProjUnit needs k ≥ 2 (PrivUnitG runs in R^k), got k = {k}"),
        ));
    }
    if d < 2 {
        return Err(Error::param(
            "dimension",
            format!("local mechanisms need d ≥ 2, got d = {d}"),
        ));
    }
    let max_k = match kind {
        ProjKind::Rotation => d,
        ProjKind::Gaussian => usize::MAX,
        ProjKind::Srht => next_pow2(d)?,
    };
    if k > max_k {
        return Err(Error::param(
            "‹k›",
            format!("{kind:?} ProjUnit needs k ≤ {max_k} for d = {d}, got k = {k}"),
        ));
    }
    Ok(())
}

/// A public ProjUnit projection `W ∈ R^{k×d}`, regenerated from a seed (layout: stream 5 for the
/// Gaussian and rotation kinds, streams 3–4 for SRHT, see [`crate::projection`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ProjMatrix {
    /// Row-major `k×d` entries (already scaled): the Gaussian kind.
    Dense {
        /// Input dimension.
        d: usize,
        /// Output dimension.
        k: usize,
        /// `W[j·d + i]`.
        w: Vec<f64>,
    },
    /// `√(d/k)·` the first `k` rows of a Haar rotation, as `k` Householder reflections
    /// regenerated on the fly ([`HaarRows`]): `O(dk)` per product, `O(d)` memory.
    Rotation(HaarRows),
    /// A subsampled randomised Hadamard transform.
    Srht(Srht),
}

impl ProjMatrix {
    /// Regenerate `W` for `(kind, d, k)` from the public seed (current layout).
    pub fn generate(kind: ProjKind, d: usize, k: usize, seed: Seed) -> Result<ProjMatrix> {
        ProjMatrix::generate_with(kind, d, k, seed, ReflectionDraw::Ziggurat)
    }

    /// [`ProjMatrix::generate`] with the rotation's reflection vectors drawn as `draw` says (the
    /// other kinds do not depend on it).
    pub fn generate_with(
        kind: ProjKind,
        d: usize,
        k: usize,
        seed: Seed,
        draw: ReflectionDraw,
    ) -> Result<ProjMatrix> {
        check_dims(kind, d, k)?;
        match kind {
            ProjKind::Srht => return Ok(ProjMatrix::Srht(Srht::generate(d, k, seed)?)),
            ProjKind::Rotation => {
                return Ok(ProjMatrix::Rotation(HaarRows::with_draw(d, k, seed, draw)?))
            }
            ProjKind::Gaussian => {}
        }
        if k.checked_mul(d).is_none_or(|t| t > MAX_DENSE_ENTRIES) {
            return Err(Error::param(
                "‹k›",
                format!("a {k}×{d} dense projection is too large to hold in memory (use SRHT)"),
            ));
        }
        let mut rng = ChaCha20Rng::from_seed(seed.0);
        rng.set_stream(5);
        let mut w = vec![0f64; k * d];
        gaussian_fill_f64(&mut rng, &mut w);
        let s = 1.0 / (k as f64).sqrt();
        w.iter_mut().for_each(|x| *x *= s);
        Ok(ProjMatrix::Dense { d, k, w })
    }

    /// Input dimension.
    pub fn d(&self) -> usize {
        match self {
            ProjMatrix::Dense { d, .. } => *d,
            ProjMatrix::Rotation(r) => r.d(),
            ProjMatrix::Srht(s) => s.d(),
        }
    }
    /// Output dimension.
    pub fn k(&self) -> usize {
        match self {
            ProjMatrix::Dense { k, .. } => *k,
            ProjMatrix::Rotation(r) => r.k(),
            ProjMatrix::Srht(s) => s.k(),
        }
    }

    /// `Wv`.
    pub fn apply(&self, v: &[f64]) -> Result<Vec<f64>> {
        match self {
            ProjMatrix::Srht(s) => s.apply(v),
            ProjMatrix::Rotation(r) => r.apply(v),
            ProjMatrix::Dense { d, w, .. } => {
                if v.len() != *d {
                    return Err(Error::param(
                        "projection input",
                        format!("has {} coordinates, W has d = {d}", v.len()),
                    ));
                }
                Ok(w.chunks_exact(*d)
                    .map(|row| row.iter().zip(v).map(|(a, b)| a * b).sum())
                    .collect())
            }
        }
    }

    /// `Wᵀy`.
    pub fn apply_transpose(&self, y: &[f64]) -> Result<Vec<f64>> {
        match self {
            ProjMatrix::Srht(s) => s.apply_transpose(y),
            ProjMatrix::Rotation(r) => r.apply_transpose(y),
            ProjMatrix::Dense { d, k, w } => {
                if y.len() != *k {
                    return Err(Error::param(
                        "projection transpose input",
                        format!("has {} coordinates, W has k = {k}", y.len()),
                    ));
                }
                let mut out = vec![0f64; *d];
                for (row, yj) in w.chunks_exact(*d).zip(y) {
                    out.iter_mut().zip(row).for_each(|(o, a)| *o += yj * a);
                }
                Ok(out)
            }
        }
    }
}

/// Parameters of ProjUnit at privacy level ε, from `R^d` through `R^k`; every constant is public.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProjUnit {
    /// Input dimension.
    pub d: usize,
    /// Projected dimension (PrivUnitG's dimension).
    pub k: usize,
    /// Projection family.
    pub kind: ProjKind,
    /// The target ε (ε-LDP, replace-one).
    pub epsilon: f64,
    /// The PrivUnitG mechanism in `R^k`.
    pub inner: PrivUnitG,
    /// Server-side unbiasing constant `c` ([`unbiasing_constant`]).
    pub c: f64,
    /// How a rotation's reflection vectors are drawn (the release layout; ignored by the other
    /// kinds): [`ReflectionDraw::Ziggurat`] unless decoding an older release.
    pub rotation_draw: ReflectionDraw,
}

impl ProjUnit {
    /// ProjUnit for ε-LDP with the given projection family.
    pub fn new(epsilon: f64, d: usize, k: usize, kind: ProjKind) -> Result<ProjUnit> {
        let c = unbiasing_constant(kind, d, k)?;
        let inner = PrivUnitG::new(epsilon, k)?;
        Ok(ProjUnit {
            d,
            k,
            kind,
            epsilon,
            inner,
            c,
            rotation_draw: ReflectionDraw::Ziggurat,
        })
    }

    /// The same mechanism with the rotation's reflection vectors drawn as `draw` says.
    pub fn with_rotation_draw(self, draw: ReflectionDraw) -> ProjUnit {
        ProjUnit {
            rotation_draw: draw,
            ..self
        }
    }

    /// Regenerate the public projection of one client from its seed.
    pub fn matrix(&self, seed: Seed) -> Result<ProjMatrix> {
        ProjMatrix::generate_with(self.kind, self.d, self.k, seed, self.rotation_draw)
    }

    fn check_matrix(&self, w: &ProjMatrix) -> Result<()> {
        check_shape(w.k(), w.d(), self.k, self.d)
    }

    /// The unit vector of `R^k` the client privatises: `Wv/‖Wv‖`, or `e₁` if `Wv = 0`.
    pub fn project_direction(&self, w: &ProjMatrix, v: &[f64]) -> Result<Vec<f64>> {
        self.check_matrix(w)?;
        let mut y = w.apply(v)?;
        let n = norm2(&y);
        if n > 0.0 && n.is_finite() {
            y.iter_mut().for_each(|x| *x /= n);
        } else {
            y.iter_mut().for_each(|x| *x = 0.0);
            y[0] = 1.0;
        }
        Ok(y)
    }

    /// Client (Algorithm 1): privatise `v` (unit ball of `R^d`) under the public `W`; returns
    /// `ẑ ∈ R^k`, a PrivUnitG_k output.
    pub fn encode<R: WordRng + ?Sized>(
        &self,
        w: &ProjMatrix,
        v: &[f64],
        rng: &mut R,
    ) -> Result<Vec<f64>> {
        self.check_matrix(w)?;
        let norm = check_in_ball(v, self.d, 1.0)?;
        let u = round_to_sphere(v, norm, rng);
        let y = self.project_direction(w, &u)?;
        self.inner.privatize_unit(&y, rng)
    }

    /// Server (Algorithms 2 and 5): `X = c·Wᵀẑ`, an unbiased (rotation, Gaussian) or nearly
    /// unbiased (SRHT) estimate of `v`.
    pub fn decode(&self, w: &ProjMatrix, z: &[f64]) -> Result<Vec<f64>> {
        self.check_matrix(w)?;
        let mut x = w.apply_transpose(z)?;
        x.iter_mut().for_each(|e| *e *= self.c);
        Ok(x)
    }

    /// Server accumulation: `acc += c·Wᵀẑ` (`acc` has `d` entries), the same contribution as
    /// [`decode`](Self::decode) without a fresh vector per user for the rotation kind (the other
    /// kinds still build `Wᵀẑ` internally). The mean is `acc/n`.
    pub fn decode_into(&self, w: &ProjMatrix, z: &[f64], acc: &mut [f64]) -> Result<()> {
        self.check_matrix(w)?;
        if acc.len() != self.d {
            return Err(Error::param(
                "accumulator",
                format!(
                    "has {} coordinates, the mechanism has d = {}",
                    acc.len(),
                    self.d
                ),
            ));
        }
        if let ProjMatrix::Rotation(r) = w {
            return r.add_transpose(z, self.c, acc);
        }
        let x = w.apply_transpose(z)?;
        acc.iter_mut().zip(&x).for_each(|(a, b)| *a += self.c * b);
        Ok(())
    }

    /// Encode with the matrix of `seed` and decode: one user's contribution `X`.
    pub fn privatize<R: WordRng + ?Sized>(
        &self,
        v: &[f64],
        seed: Seed,
        rng: &mut R,
    ) -> Result<Vec<f64>> {
        let w = self.matrix(seed)?;
        let z = self.encode(&w, v, rng)?;
        self.decode(&w, &z)
    }

    /// `E‖ẑ‖² = scale²(E[α²] + k − 1)`.
    fn e_z2(&self) -> f64 {
        let s = self.inner.scale;
        s * s * (self.inner.e_alpha2 + (self.k - 1) as f64)
    }

    /// Closed-form `E‖X − v‖²` of the corrected estimator for `‖v‖ = norm ≤ 1` (rotation and
    /// Gaussian; `None` for SRHT, which has no closed form).
    pub fn mse(&self, norm: f64) -> Option<f64> {
        let (c2, dk) = (self.c * self.c, self.d as f64 / self.k as f64);
        let s2 = self.inner.scale * self.inner.scale;
        let ex2 = match self.kind {
            ProjKind::Rotation => dk * self.e_z2(),
            ProjKind::Gaussian => {
                s2 * self.inner.e_alpha2 + (self.d - 1) as f64 / self.k as f64 * self.e_z2()
            }
            ProjKind::Srht => return None,
        };
        Some(c2 * ex2 - effective_norm2(norm))
    }

    /// Closed-form `E‖Wᵀẑ − v‖²` of the *uncorrected* Algorithm 1 estimator for a unit `v`
    /// (rotation only): `(d/k)·scale²·(E[α²] + k − 1) + 1 − 2/c` (MECHANISMS-LDP.md §B).
    pub fn mse_uncorrected_unit(&self) -> Option<f64> {
        match self.kind {
            ProjKind::Rotation => {
                Some(self.d as f64 / self.k as f64 * self.e_z2() + 1.0 - 2.0 / self.c)
            }
            _ => None,
        }
    }
}

/// Nearly unbiased FastProjUnit (Asi et al. 2023, Algorithms 6–7; MECHANISMS-LDP.md §B):
/// complete the norm, then normalise in `R^{k+1}`. With `y = Wv` for the SRHT `W`:
/// `u = (y, √(C − ‖y‖²))/√C` if `‖y‖² ≤ C`, else `(y/‖y‖, 0)`; the client sends
/// `ẑ = PrivUnitG_{k+1}(u)` and the server returns `X = √C·Wᵀẑ[1..k]`.
///
/// **Privacy.** As for [`ProjUnit`]: given the public `W`, the output is PrivUnitG on the sphere
/// of `R^{k+1}`, ε-LDP for every pair of inputs.
///
/// **Bias.** On the event `‖Wv‖² ≤ C`, `E[X | W] = WᵀWv`, and `E_S[WᵀW] = I_d` (each padded
/// coordinate is sampled with probability `k/d'`), so the only bias comes from `‖Wv‖² > C`.
/// Since `WWᵀ = (d'/k)I_k`, `‖Wv‖² ≤ (d'/k)‖v‖²` always: **`C ≥ d'/k` makes the estimator
/// exactly unbiased** ([`NearlyUnbiasedSrht::exact`]), at a variance cost of order `C`. The paper's
/// choice `C = 1 + C₁·√(log²(k/δ)/k)` (its constant `C₁` is not specified) is unbiased except on
/// an event of probability ≤ δ; `C` is a public parameter here.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NearlyUnbiasedSrht {
    /// Input dimension.
    pub d: usize,
    /// Number of sampled Hadamard rows.
    pub k: usize,
    /// The target ε (ε-LDP, replace-one).
    pub epsilon: f64,
    /// The completion constant `C ≥ 1`.
    pub c_norm: f64,
    /// PrivUnitG in `R^{k+1}`.
    pub inner: PrivUnitG,
}

impl NearlyUnbiasedSrht {
    /// Algorithms 6–7 with completion constant `C = c_norm ≥ 1`.
    pub fn new(epsilon: f64, d: usize, k: usize, c_norm: f64) -> Result<NearlyUnbiasedSrht> {
        check_dims(ProjKind::Srht, d, k)?;
        if !(c_norm.is_finite() && c_norm >= 1.0) {
            return Err(Error::param(
                "completion constant C",
                format!("must be a finite number ≥ 1, got {c_norm}"),
            ));
        }
        let inner = PrivUnitG::new(epsilon, k + 1)?;
        Ok(NearlyUnbiasedSrht {
            d,
            k,
            epsilon,
            c_norm,
            inner,
        })
    }

    /// The exactly unbiased choice `C = d'/k` (see the type's documentation).
    pub fn exact(epsilon: f64, d: usize, k: usize) -> Result<NearlyUnbiasedSrht> {
        let d_pad = next_pow2(d)?;
        Self::new(epsilon, d, k, (d_pad as f64 / k as f64).max(1.0))
    }

    /// Regenerate the public SRHT of one client from its seed.
    pub fn matrix(&self, seed: Seed) -> Result<Srht> {
        Srht::generate(self.d, self.k, seed)
    }

    fn check_matrix(&self, w: &Srht) -> Result<()> {
        check_shape(w.k(), w.d(), self.k, self.d)
    }

    /// The completed unit vector `u ∈ R^{k+1}` of Algorithm 6 (step 7).
    pub fn complete(&self, w: &Srht, v: &[f64]) -> Result<Vec<f64>> {
        self.check_matrix(w)?;
        let mut y = w.apply(v)?;
        let n2: f64 = y.iter().map(|x| x * x).sum();
        if n2 <= self.c_norm {
            let s = 1.0 / self.c_norm.sqrt();
            y.iter_mut().for_each(|x| *x *= s);
            y.push(((self.c_norm - n2) / self.c_norm).max(0.0).sqrt());
        } else {
            let s = 1.0 / n2.sqrt();
            y.iter_mut().for_each(|x| *x *= s);
            y.push(0.0);
        }
        Ok(y)
    }

    /// Client (Algorithm 6) for `v` in the unit ball (rounded to the sphere first).
    pub fn encode<R: WordRng + ?Sized>(
        &self,
        w: &Srht,
        v: &[f64],
        rng: &mut R,
    ) -> Result<Vec<f64>> {
        self.check_matrix(w)?;
        let norm = check_in_ball(v, self.d, 1.0)?;
        let u = round_to_sphere(v, norm, rng);
        let y = self.complete(w, &u)?;
        self.inner.privatize_unit(&y, rng)
    }

    /// Server (Algorithm 7) for one client: `√C·Wᵀẑ[1..k]`.
    pub fn decode(&self, w: &Srht, z: &[f64]) -> Result<Vec<f64>> {
        self.check_matrix(w)?;
        if z.len() != self.k + 1 {
            return Err(Error::param(
                "privatised vector",
                format!(
                    "has {} coordinates, expected k + 1 = {}",
                    z.len(),
                    self.k + 1
                ),
            ));
        }
        let mut x = w.apply_transpose(&z[..self.k])?;
        let s = self.c_norm.sqrt();
        x.iter_mut().for_each(|e| *e *= s);
        Ok(x)
    }

    /// Encode with the SRHT of `seed` and decode: one user's contribution.
    pub fn privatize<R: WordRng + ?Sized>(
        &self,
        v: &[f64],
        seed: Seed,
        rng: &mut R,
    ) -> Result<Vec<f64>> {
        let w = self.matrix(seed)?;
        let z = self.encode(&w, v, rng)?;
        self.decode(&w, &z)
    }
}

/// A client's projection must be the `k×d` the mechanism was built for.
fn check_shape(k: usize, d: usize, want_k: usize, want_d: usize) -> Result<()> {
    if d != want_d || k != want_k {
        return Err(Error::param(
            "projection",
            format!("is {k}×{d}, the mechanism needs {want_k}×{want_d}"),
        ));
    }
    Ok(())
}

/// ProjUnit with its release seed: user `id` uses the map of [`Seed::for_row`]`(id)`.
impl LocalAlgorithm for WithMaps<ProjUnit, Seed> {
    fn algorithm(&self) -> &'static str {
        ALGORITHM
    }
    fn epsilon(&self) -> f64 {
        self.mechanism.epsilon
    }
    fn message_len(&self, _d: usize) -> usize {
        self.mechanism.k
    }
    fn constants(&self) -> Vec<(String, f64)> {
        let mut v = vec![constant("c", self.mechanism.c)];
        v.extend(self.mechanism.inner.constants());
        v
    }
    fn decoder(&self) -> &'static str {
        "mean over rows i of c·W_iᵀẑ_i, W_i regenerated from the row's seed"
    }
    fn projection(&self) -> ProjectionRecord {
        ProjectionRecord::PerRow {
            map: match self.mechanism.kind {
                ProjKind::Rotation => LocalMap::Rotation,
                ProjKind::Gaussian => LocalMap::Gaussian,
                ProjKind::Srht => LocalMap::Srht,
            },
            seed: self.public,
            layout: layout_of(self.mechanism.rotation_draw),
        }
    }
    fn client(&self, id: u64, v: &[f64], rng: &mut ChaCha20Rng) -> Result<Vec<f64>> {
        let w = self.mechanism.matrix(self.public.for_row(id))?;
        self.mechanism.encode(&w, v, rng)
    }
    fn accumulate(&self, id: u64, z: &[f64], acc: &mut [f64]) -> Result<()> {
        let w = self.mechanism.matrix(self.public.for_row(id))?;
        let x = self.mechanism.decode(&w, z)?;
        acc.iter_mut().zip(&x).for_each(|(a, b)| *a += b);
        Ok(())
    }
    fn mse_per_user(&self) -> (f64, ErrorKind) {
        let m = &self.mechanism;
        match m.mse(1.0) {
            Some(e) => (e, ErrorKind::Exact),
            None => {
                // SRHT: ‖Wᵀẑ‖² = (d'/k)‖ẑ‖² before truncation to d, E‖ẑ‖² = scale²(E[α²] +
                // k − 1). The decoder keeps the first d of the d' padded coordinates, which
                // hold about d/d' of the mass (each row of H spreads ‖·‖² evenly), so
                // E‖X‖² ≈ c²·(d/k)·E‖ẑ‖², exact when d = d'. The error E‖X‖² − 1 neglects
                // the small bias of the normalised SRHT estimator. (Using d' here overstated
                // the error by d'/d, found by `dprp eval mean`'s closed-form check.)
                let s2 = m.inner.scale * m.inner.scale;
                let ez2 = s2 * (m.inner.e_alpha2 + (m.k - 1) as f64);
                (
                    m.c * m.c * m.d as f64 / m.k as f64 * ez2 - 1.0,
                    ErrorKind::Approximate,
                )
            }
        }
    }
    fn mse_note(&self) -> String {
        if self.mechanism.kind == ProjKind::Srht {
            format!(
                "approximate (neglects the small bias of the normalised SRHT estimator), \
                 {BALL_NOTE}"
            )
        } else {
            format!("exact {BALL_NOTE}")
        }
    }
}

/// Nearly unbiased FastProjUnit with its release seed: user `id` uses the map of
/// [`Seed::for_row`]`(id)`; `k + 1` values per message.
impl LocalAlgorithm for WithMaps<NearlyUnbiasedSrht, Seed> {
    fn algorithm(&self) -> &'static str {
        NEARLY_ALGORITHM
    }
    fn epsilon(&self) -> f64 {
        self.mechanism.epsilon
    }
    fn message_len(&self, _d: usize) -> usize {
        self.mechanism.k + 1
    }
    fn constants(&self) -> Vec<(String, f64)> {
        let mut v = vec![constant("C", self.mechanism.c_norm)];
        v.extend(self.mechanism.inner.constants());
        v
    }
    fn decoder(&self) -> &'static str {
        "mean over rows i of √C·W_iᵀẑ_i[1..k], W_i regenerated from the row's seed"
    }
    fn projection(&self) -> ProjectionRecord {
        ProjectionRecord::PerRow {
            map: LocalMap::SrhtNearlyUnbiased,
            seed: self.public,
            layout: LAYOUT,
        }
    }
    fn client(&self, id: u64, v: &[f64], rng: &mut ChaCha20Rng) -> Result<Vec<f64>> {
        let w = self.mechanism.matrix(self.public.for_row(id))?;
        self.mechanism.encode(&w, v, rng)
    }
    fn accumulate(&self, id: u64, z: &[f64], acc: &mut [f64]) -> Result<()> {
        let w = self.mechanism.matrix(self.public.for_row(id))?;
        let x = self.mechanism.decode(&w, z)?;
        acc.iter_mut().zip(&x).for_each(|(a, b)| *a += b);
        Ok(())
    }
    fn mse_per_user(&self) -> (f64, ErrorKind) {
        // ‖X‖² = C·(d'/k)·‖ẑ[1..k]‖² ≤ C·(d'/k)·‖ẑ‖², E‖ẑ‖² = scale²(E[α²] + k).
        let m = &self.mechanism;
        let dp = next_pow2(m.d).unwrap_or(m.d) as f64;
        let s2 = m.inner.scale * m.inner.scale;
        let ez2 = s2 * (m.inner.e_alpha2 + m.k as f64);
        (
            m.c_norm * dp / m.k as f64 * ez2 - 1.0,
            ErrorKind::UpperBound,
        )
    }
    fn mse_note(&self) -> String {
        format!("an upper bound, {BALL_NOTE}")
    }
}

/// Citation recorded in releases of [`NearlyUnbiasedSrht`].
pub const NEARLY_ALGORITHM: &str = "Nearly unbiased FastProjUnit (Asi et al. 2023, Algorithms \
                                    6–7) with C = d'/k, over PrivUnitG in k + 1 dimensions";
