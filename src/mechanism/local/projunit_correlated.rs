//! Correlated FastProjUnit (Asi, Feldman, Nelson, Nguyen, Talwar 2023, Algorithms 3–4;
//! MECHANISMS-LDP.md §B): one public Rademacher diagonal `D` shared by all users, and per user `i`
//! its own sample `S_i` of `k` distinct rows of the normalised `d'×d'` Hadamard matrix `H`
//! (`d'` = the next power of two ≥ `d`, inputs zero-padded). User `i`'s map is
//! `W_i = √(d'/k)·S_i·H·D`.
//!
//! **Client** (Algorithm 3): round a ball input to the sphere ([`super`]), `u = W_i v/‖W_i v‖` (the
//! fixed `e₁` if `W_i v = 0`), send `ẑ_i = PrivUnitG_k(u)` (debiased, `k` values).
//! **Server** (Algorithm 4): scatter-add `z_acc = Σ_i S_iᵀẑ_i` (`O(k)` per user), then *one*
//! inverse transform: `μ̂ = (1/n)·c·√(d'/k)·D·H·z_acc`, truncated to `d`. This equals the average of
//! the per-user `X_i = c·W_iᵀẑ_i` ([`CorrelatedProjUnit::decode_one`]) by linearity, since `D` and
//! `H` are shared. The printed Algorithm 4 omits `√(d'/k)`; without it the estimate is off by
//! `√(k/d')` (tested). `c` is the rotation constant of dimension `d'`
//! ([`super::projunit::unbiasing_constant`] for SRHT), as for independent SRHT ProjUnit.
//!
//! **Randomness layout.** `D` is stream 3 of the *release* seed (the signs of
//! [`Srht::generate`]); `S_i` is stream 4 of [`Seed::for_row`]`(i)` (the row sample of
//! [`Srht::generate`] for that seed: a partial Fisher–Yates of the `d'` padded coordinates).
//!
//! **Privacy.** `D` and every `S_i` are public and drawn independently of the data, so for every
//! fixed `(D, S_i)` the client's output is PrivUnitG_k of a unit vector of `R^k`; PrivUnitG is
//! ε-LDP for every pair of unit vectors, hence the client is ε-LDP for every pair of inputs, and
//! the shared `D` changes nothing (tested: the output given `(D, S_i)` is PrivUnitG_k of
//! `W_i v/‖W_i v‖` bit for bit).
//!
//! **Bias and error.** Marginally each `W_i` is an SRHT, so each `X_i` has the (small) bias of
//! SRHT ProjUnit: no constant makes the normalised estimator exactly unbiased. The sharing of `D`
//! correlates the users: given `D`, the `X_i` are independent with means `m_i(D)`, and
//! `E‖μ̂ − v̄‖² = (1/n²)Σ_i E‖X_i − m_i(D)‖² + E‖(1/n)Σ_i m_i(D) − v̄‖²`, so the conditional bias
//! does not average out over users (it does over independent `D`'s). The tests compute both terms
//! exactly by enumerating all `(D, S)` at `d' = 8`.

use std::collections::HashMap;

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

use super::algorithm::{constant, ErrorKind, LocalAlgorithm, WithMaps};
use super::algorithm::{BALL_NOTE, CORRELATED_LAYOUT};
use super::projunit::{unbiasing_constant, ProjKind};
use super::WordRng;
use super::{check_in_ball, round_to_sphere, PrivUnitG};
use crate::error::{Error, Result};
use crate::mechanism::ProjectionRecord;
use crate::projection::hadamard::{fwht_normalized, next_pow2};
use crate::projection::oporp::uniform_below;
use crate::projection::{Seed, Srht};

/// Citation recorded with releases.
pub const ALGORITHM: &str =
    "Correlated FastProjUnit (Asi et al. 2023, Algorithms 3-4, with the sqrt(d'/k) factor) over PrivUnitG";

/// Parameters of correlated FastProjUnit at privacy level ε, `R^d → R^k`; every constant is
/// public.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CorrelatedProjUnit {
    /// Input dimension.
    pub d: usize,
    /// Padded dimension `d'` (a power of two ≥ d).
    pub d_pad: usize,
    /// Number of sampled Hadamard rows per user (PrivUnitG's dimension).
    pub k: usize,
    /// The target ε (ε-LDP, replace-one).
    pub epsilon: f64,
    /// PrivUnitG in `R^k`.
    pub inner: PrivUnitG,
    /// Server-side constant `c` (the rotation constant of dimension `d'`).
    pub c: f64,
}

/// The public part shared by all users of one release: its seed and the diagonal `D`.
#[derive(Debug, Clone, PartialEq)]
pub struct CorrelatedPublic {
    seed: Seed,
    signs: Vec<f64>,
}

impl CorrelatedPublic {
    /// The release seed.
    pub fn seed(&self) -> Seed {
        self.seed
    }
    /// `D`: ±1 per padded coordinate.
    pub fn signs(&self) -> &[f64] {
        &self.signs
    }
}

/// Reusable scratch for regenerating row samples in `O(k)` (an identity permutation of the `d'`
/// coordinates, restored after each use).
#[derive(Debug, Clone)]
pub struct RowScratch {
    perm: Vec<u32>,
    touched: Vec<usize>,
    rows: Vec<usize>,
}

impl CorrelatedProjUnit {
    /// Correlated FastProjUnit for ε-LDP; needs `2 ≤ k ≤ d'` and `d' < 2³²`.
    pub fn new(epsilon: f64, d: usize, k: usize) -> Result<CorrelatedProjUnit> {
        let c = unbiasing_constant(ProjKind::Srht, d, k)?;
        let d_pad = next_pow2(d)?;
        if d_pad > u32::MAX as usize {
            return Err(Error::param(
                "dimension",
                format!("d' = {d_pad} is too large for correlated ProjUnit"),
            ));
        }
        let inner = PrivUnitG::new(epsilon, k)?;
        Ok(CorrelatedProjUnit {
            d,
            d_pad,
            k,
            epsilon,
            inner,
            c,
        })
    }

    /// The public diagonal `D` of a release seed.
    pub fn public(&self, seed: Seed) -> Result<CorrelatedPublic> {
        // D is held as d' f64 signs (the server's transform multiplies by them).
        crate::projection::check_map_bytes(
            &format!("the shared diagonal of d' = {}", self.d_pad),
            8 * self.d_pad as u128,
        )?;
        let s = Srht::generate(self.d, 1, seed)?;
        Ok(CorrelatedPublic {
            seed,
            signs: s.signs().to_vec(),
        })
    }

    fn check_public(&self, public: &CorrelatedPublic) -> Result<()> {
        if public.signs.len() != self.d_pad {
            return Err(Error::param(
                "public diagonal",
                format!(
                    "has {} signs, the mechanism needs d' = {}",
                    public.signs.len(),
                    self.d_pad
                ),
            ));
        }
        Ok(())
    }

    fn row_rng(public: &CorrelatedPublic, row: u64) -> ChaCha20Rng {
        let mut rng = ChaCha20Rng::from_seed(public.seed.for_row(row).0);
        rng.set_stream(4);
        rng
    }

    /// `S_i` of user `row`: the row sample of `Srht::generate(d, k, seed.for_row(row))`.
    pub fn rows(&self, public: &CorrelatedPublic, row: u64) -> Vec<usize> {
        let mut rng = Self::row_rng(public, row);
        let mut moved = HashMap::<usize, usize>::new();
        (0..self.k)
            .map(|i| {
                let j = i + uniform_below(&mut rng, (self.d_pad - i) as u64) as usize;
                let at_j = *moved.get(&j).unwrap_or(&j);
                let at_i = *moved.get(&i).unwrap_or(&i);
                moved.insert(j, at_i);
                at_j
            })
            .collect()
    }

    /// Scratch for [`rows_into`](Self::rows_into) (`d'` 32-bit entries).
    pub fn scratch(&self) -> RowScratch {
        RowScratch {
            perm: (0..self.d_pad as u32).collect(),
            touched: Vec::with_capacity(self.k),
            rows: Vec::with_capacity(self.k),
        }
    }

    /// [`rows`](Self::rows) in `O(k)` with a reusable scratch (same draws, same result).
    pub fn rows_into<'a>(
        &self,
        public: &CorrelatedPublic,
        row: u64,
        scratch: &'a mut RowScratch,
    ) -> &'a [usize] {
        let mut rng = Self::row_rng(public, row);
        let RowScratch {
            perm,
            touched,
            rows,
        } = scratch;
        rows.clear();
        touched.clear();
        for i in 0..self.k {
            let j = i + uniform_below(&mut rng, (self.d_pad - i) as u64) as usize;
            perm.swap(i, j);
            touched.push(j);
            rows.push(perm[i] as usize);
        }
        for (i, &j) in touched.iter().enumerate() {
            perm[i] = i as u32;
            perm[j] = j as u32;
        }
        rows
    }

    fn scale(&self) -> f64 {
        (self.d_pad as f64 / self.k as f64).sqrt()
    }

    /// The unit vector of `R^k` user `row` privatises: `W_i v/‖W_i v‖` (`e₁` if `W_i v = 0`).
    pub fn project_direction(
        &self,
        public: &CorrelatedPublic,
        row: u64,
        v: &[f64],
    ) -> Result<Vec<f64>> {
        self.check_public(public)?;
        if v.len() != self.d {
            return Err(Error::param(
                "input vector",
                format!(
                    "has {} coordinates, the mechanism has d = {}",
                    v.len(),
                    self.d
                ),
            ));
        }
        let mut x = vec![0f64; self.d_pad];
        x.iter_mut()
            .zip(v.iter().zip(&public.signs))
            .for_each(|(xi, (vi, si))| *xi = vi * si);
        fwht_normalized(&mut x)?;
        let s = self.scale();
        let mut y: Vec<f64> = self.rows(public, row).iter().map(|&r| s * x[r]).collect();
        let n = y.iter().map(|a| a * a).sum::<f64>().sqrt();
        if n > 0.0 && n.is_finite() {
            y.iter_mut().for_each(|a| *a /= n);
        } else {
            y.iter_mut().for_each(|a| *a = 0.0);
            y[0] = 1.0;
        }
        Ok(y)
    }

    /// Client (Algorithm 3): privatise `v` (unit ball of `R^d`); returns `ẑ ∈ R^k`, a PrivUnitG_k
    /// output.
    pub fn encode<R: WordRng + ?Sized>(
        &self,
        public: &CorrelatedPublic,
        row: u64,
        v: &[f64],
        rng: &mut R,
    ) -> Result<Vec<f64>> {
        self.check_public(public)?;
        let norm = check_in_ball(v, self.d, 1.0)?;
        let u = round_to_sphere(v, norm, rng);
        let y = self.project_direction(public, row, &u)?;
        self.inner.privatize_unit(&y, rng)
    }

    fn check_z(&self, z: &[f64]) -> Result<()> {
        if z.len() != self.k {
            return Err(Error::param(
                "privatised vector",
                format!("has {} coordinates, expected k = {}", z.len(), self.k),
            ));
        }
        if let Some(j) = z.iter().position(|x| !x.is_finite()) {
            return Err(Error::param(
                "privatised vector",
                format!("coordinate {j} is not finite"),
            ));
        }
        Ok(())
    }

    fn check_acc(&self, acc: &[f64]) -> Result<()> {
        if acc.len() != self.d_pad {
            return Err(Error::param(
                "accumulator",
                format!("has {} entries, expected d' = {}", acc.len(), self.d_pad),
            ));
        }
        Ok(())
    }

    /// Server, per user: `acc += S_iᵀẑ` (`acc` has `d'` entries), `O(k)` plus the row sample.
    pub fn scatter(
        &self,
        public: &CorrelatedPublic,
        row: u64,
        z: &[f64],
        acc: &mut [f64],
    ) -> Result<()> {
        let mut scratch = self.scratch();
        self.scatter_with(public, row, z, acc, &mut scratch)
    }

    /// [`scatter`](Self::scatter) with a reusable scratch (no allocation per user).
    pub fn scatter_with(
        &self,
        public: &CorrelatedPublic,
        row: u64,
        z: &[f64],
        acc: &mut [f64],
        scratch: &mut RowScratch,
    ) -> Result<()> {
        self.check_public(public)?;
        self.check_z(z)?;
        self.check_acc(acc)?;
        if scratch.perm.len() != self.d_pad {
            *scratch = self.scratch();
        }
        for (&r, zj) in self.rows_into(public, row, scratch).iter().zip(z) {
            acc[r] += zj;
        }
        Ok(())
    }

    /// The scatter of users `first_row, first_row + 1, …` (one `ẑ` each) in parallel: chunks of
    /// users with their own accumulators, added at the end. Returns `z_acc` (`d'` entries).
    pub fn scatter_all<Z: AsRef<[f64]> + Sync>(
        &self,
        public: &CorrelatedPublic,
        first_row: u64,
        zs: &[Z],
    ) -> Result<Vec<f64>> {
        self.check_public(public)?;
        let chunk = zs.len().div_ceil(4 * rayon::current_num_threads()).max(64);
        let partial: Result<Vec<Vec<f64>>> = zs
            .par_chunks(chunk)
            .enumerate()
            .map(|(c, users)| {
                let mut acc = vec![0f64; self.d_pad];
                let mut scratch = self.scratch();
                for (t, z) in users.iter().enumerate() {
                    let row = first_row + (c * chunk + t) as u64;
                    self.scatter_with(public, row, z.as_ref(), &mut acc, &mut scratch)?;
                }
                Ok(acc)
            })
            .collect();
        let mut total = vec![0f64; self.d_pad];
        for p in partial? {
            total.iter_mut().zip(&p).for_each(|(a, b)| *a += b);
        }
        Ok(total)
    }

    /// `c·√(d'/k)·D·H·x` truncated to `d`, times `factor`.
    fn lift(&self, public: &CorrelatedPublic, mut x: Vec<f64>, factor: f64) -> Result<Vec<f64>> {
        fwht_normalized(&mut x)?;
        let s = self.c * self.scale() * factor;
        x.truncate(self.d);
        x.iter_mut()
            .zip(&public.signs)
            .for_each(|(xi, si)| *xi *= s * si);
        Ok(x)
    }

    /// Server, once (Algorithm 4 with `√(d'/k)`): the mean estimate
    /// `(1/n)·c·√(d'/k)·D·H·z_acc`, truncated to `d`.
    pub fn finish(&self, public: &CorrelatedPublic, acc: &[f64], n: u64) -> Result<Vec<f64>> {
        self.check_public(public)?;
        self.check_acc(acc)?;
        if n == 0 {
            return Err(Error::param("number of users", "must be at least 1"));
        }
        self.lift(public, acc.to_vec(), 1.0 / n as f64)
    }

    /// One user's contribution `X_i = c·W_iᵀẑ` (`d` entries): the slow path, for tests.
    pub fn decode_one(&self, public: &CorrelatedPublic, row: u64, z: &[f64]) -> Result<Vec<f64>> {
        self.check_public(public)?;
        self.check_z(z)?;
        let mut x = vec![0f64; self.d_pad];
        for (&r, zj) in self.rows(public, row).iter().zip(z) {
            x[r] = *zj;
        }
        self.lift(public, x, 1.0)
    }

    /// `c²·(d/k)·E‖ẑ‖² − 1`, with `E‖ẑ‖² = scale²(E[α²] + k − 1)` (PrivUnitG). For `d = d'`,
    /// `‖W_iᵀẑ‖² = (d'/k)‖ẑ‖²` exactly, so this is `E‖X_i‖² − 1` exactly and equals the per-user
    /// `E‖X_i − v‖²` up to the SRHT bias term `2⟨v − E X_i, v⟩` (small, not in closed form); for
    /// `d < d'` truncation to `d` keeps about `d/d'` of the mass (each row of `H` spreads evenly),
    /// hence `d` rather than `d'` (with `d'` the figure overstated the error by `d'/d`). The
    /// error of the *mean* has the extra shared-`D` bias term of the module documentation.
    pub fn mse_unit(&self) -> f64 {
        let s = self.inner.scale;
        let ez2 = s * s * (self.inner.e_alpha2 + (self.k - 1) as f64);
        self.c * self.c * (self.d as f64 / self.k as f64) * ez2 - 1.0
    }
}

/// Correlated ProjUnit with its shared public map; user `id` uses the sampling of row `id`.
impl LocalAlgorithm for WithMaps<CorrelatedProjUnit, CorrelatedPublic> {
    fn algorithm(&self) -> &'static str {
        ALGORITHM
    }
    fn epsilon(&self) -> f64 {
        self.mechanism.epsilon
    }
    fn message_len(&self, _d: usize) -> usize {
        self.mechanism.k
    }
    fn accumulator_len(&self, _d: usize) -> usize {
        self.mechanism.d_pad
    }
    fn constants(&self) -> Vec<(String, f64)> {
        let mut v = vec![constant("c", self.mechanism.c)];
        v.extend(self.mechanism.inner.constants());
        v
    }
    fn decoder(&self) -> &'static str {
        "z = Σ_i S_iᵀẑ_i (scatter, S_i from the row's seed), then once \
         (1/n)·c·√(d'/k)·D·H·z (D from the release seed)"
    }
    fn projection(&self) -> ProjectionRecord {
        ProjectionRecord::Correlated {
            seed: self.public.seed(),
            layout: CORRELATED_LAYOUT,
        }
    }
    fn client(&self, id: u64, v: &[f64], rng: &mut ChaCha20Rng) -> Result<Vec<f64>> {
        self.mechanism.encode(&self.public, id, v, rng)
    }
    fn accumulate(&self, id: u64, z: &[f64], acc: &mut [f64]) -> Result<()> {
        self.mechanism.scatter(&self.public, id, z, acc)
    }
    fn accumulate_rows(
        &self,
        first_id: u64,
        k: usize,
        messages: &[f32],
        acc: &mut [f64],
    ) -> Result<()> {
        let mut scratch = self.mechanism.scratch();
        let mut z = vec![0f64; k];
        for (i, msg) in messages.chunks_exact(k.max(1)).enumerate() {
            z.iter_mut().zip(msg).for_each(|(a, &b)| *a = b as f64);
            let id = first_id.wrapping_add(i as u64);
            self.mechanism
                .scatter_with(&self.public, id, &z, acc, &mut scratch)?;
        }
        Ok(())
    }
    fn finish(&self, acc: &[f64], n: u64) -> Result<Vec<f64>> {
        self.mechanism.finish(&self.public, acc, n.max(1))
    }
    fn mse_per_user(&self) -> (f64, ErrorKind) {
        (self.mechanism.mse_unit(), ErrorKind::Approximate)
    }
    fn mse_note(&self) -> String {
        format!(
            "approximate: the per-user SRHT error, {BALL_NOTE}; the shared diagonal D adds a \
             small bias term to the error of the mean that does not shrink with n (not in \
             closed form)"
        )
    }
}
