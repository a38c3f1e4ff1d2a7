//! Shared machinery of the sign mechanisms (DESIGN.md §4–5): a public projection, the sign of
//! every projected value packed 64 per `u64` (bit `j mod 64` of word `j / 64`, least significant
//! first; 1 = non-negative, since `sign(0) = +1`), and one of four flip rules. The per-algorithm
//! files ([`super::sign_rr`], [`super::smooth_flipping`], [`super::idp_sign`]) decide the rule and
//! its calibration; this file applies it.
//!
//! For projected value `j`, `c_j` is the largest change one β-step of the input can make to it:
//! `c_j = β·max_i|w_ij|/√k` for a dense projection (values are stored scaled by `1/√k`), and
//! `c_j = β` for OPORP (each coordinate enters one bin with weight ±1). A β-neighbour moves value `j`
//! by at most `c_j`, so its sign can change only if `|x_j| ≤ c_j`.
//!
//! **Floating point.** The argument above is exact arithmetic; the projected values are computed
//! and so are the levels. The values are computed in the arithmetic of
//! [`super::arithmetic`] (f64 values; for ±1 maps, inputs on the grid `2^-q` with exact integer
//! sums, so `c_j` is taken for `β_q = β + 2^-q`, the largest change of a rounded coordinate), each
//! within `E_j` of its exact value. The mechanisms use guarded steps `c̃_j = c_j·(1 + g)` for
//! `L_j` and for the noise set `A` (a larger step means smaller levels and a larger `A`: more
//! noise, never less), with `g` from [`fp_guard`]: two neighbours' computed values differ by at
//! most `c_j + 2E_j`, and the level arithmetic (f64) adds its own roundings. `g ≤ 10⁻⁶` for every
//! map at p ≤ 65 536 (`2·10⁻¹¹` on the grid). Randomised response compares nothing with the
//! steps; its dense form uses the grid too, with a finer step where needed, and computes N₊ for
//! `β_q·(1 + g)` and the rounded rows' norm bound `ν_q = ν − √p·2^-(q+1)` ([`super::sign_rr`]).
//!
//! **Coins.** Every flip is an exact comparison of a uniform 64-bit word with the numerator `Q` of
//! a dyadic flip probability `Q/2⁶⁴` rounded toward ½ ([`crate::privacy::rr`]): randomised
//! response computes its one coin when the mechanism is built (its `Q` is recorded), smooth
//! flipping a table of coins per level whose neighbouring ratios are exact, iDP randomised
//! response one coin per noise-set size `|A|`, with `ε/|A|` rounded down.

use rand::{Rng, RngExt};
use rand_chacha::ChaCha20Rng;
use rand_distr::StandardNormal;

use super::arithmetic::{Arithmetic, ArithmeticRecord};
use super::idp_lattice::IdpLattice;
use super::public_map::{step_sizes, PublicMap};
use crate::error::{Error, Result};
use crate::estimate::Estimator;
use crate::mechanism::{Mechanism, MechanismKind, MechanismRecord, Payload, Sketch, SketchMut};
use crate::privacy::guarantee::{Guarantee, Neighbour};
use crate::privacy::rr::{smooth_flip_table, split_epsilon, Flip};
use crate::privacy::samplers::noise::NoiseSource;

pub use super::sign_record::{FlipRule, SetSummary, SignRecord};

/// Largest smooth-flipping table kept in memory (beyond it, probabilities are computed on the fly).
const SMOOTH_TABLE_MAX: usize = 1 << 16;

/// The relative guard `g` added to every step (module documentation, "Floating point"), for a
/// public map evaluated in `arithmetic`, β, and the largest level `last` that is distinguished
/// (values beyond it share one flip probability; 1 for the iDP noise set, which only compares
/// `|x_j|` with `c̃_j`).
///
/// Terms, relative to `c_j` (the step for `β_q`):
/// - projection: two neighbours, each within `E_j` ([`Arithmetic::output_errors`]) of its exact
///   value, whose exact values differ by at most `c_j`: `2·max_j E_j/c_j` (columns with `c_j = 0`
///   are zero columns, computed exactly as 0 in every arithmetic);
/// - the level `t = |x|·(1/c̃)` in f64: two roundings, `2·2⁻⁵³·(last + 1)` per value, two values.
pub fn fp_guard(map: &PublicMap, arithmetic: Arithmetic, beta: f64, last: usize) -> f64 {
    let steps = step_sizes(map, arithmetic.effective_beta(beta));
    let projection = arithmetic
        .output_errors(map)
        .iter()
        .zip(&steps)
        .filter(|(_, &c)| c > 0.0)
        .map(|(&e, &c)| 2.0 * e / c)
        .fold(0.0, f64::max);
    let levels = last as f64 + 1.0;
    (projection + 2.0 * 2.0 * f64::EPSILON / 2.0 * levels) * (1.0 + 1e-12)
}

/// A sign mechanism: public map, signs, flip rule.
#[derive(Debug, Clone)]
pub struct SignSketch {
    kind: MechanismKind,
    algorithm: &'static str,
    map: PublicMap,
    /// Guarded steps `c̃_j = c_j·(1 + guard)` per projected value.
    steps: Vec<f64>,
    /// The relative guard ([`fp_guard`]).
    guard: f64,
    /// How the map is evaluated ([`super::arithmetic`]).
    arithmetic: ArithmeticRecord,
    /// `β_q`: the largest change of one (rounded) input coordinate between neighbours.
    beta_q: f64,
    /// `1/c̃_j`.
    inv_steps: Vec<f64>,
    record: SignRecord,
    guarantee: Guarantee,
    /// Smooth flipping: the sampler for each `L` below the table size.
    smooth_table: Vec<Flip>,
    /// Randomised response: the coin (½ for the other rules, unused).
    rr_flip: Flip,
    /// iDP-Gaussian with lattice noise ([`super::idp_lattice::IdpLattice`]); `None`: float noise.
    pub(super) idp_lattice: Option<IdpLattice>,
}

/// The arithmetic of a sign mechanism: the map's ([`Arithmetic::choose`]) for the rules that
/// compare values with steps; for dense randomised response the grid of
/// [`super::arithmetic::rr_arithmetic`] when the record says N₊ was computed for it
/// ([`SignRecord::grid_min_norm`], checked to be `ν_q` for that grid), f64 otherwise (its N₊
/// bound then assumes `‖u‖ ≥ ν` of the row itself).
///
/// # Errors
/// A recorded `grid_min_norm` that is not the `ν_q` of the grid the record implies.
pub fn sign_arithmetic(
    map: &PublicMap,
    record: &SignRecord,
    neighbour: Neighbour,
) -> Result<Arithmetic> {
    use super::arithmetic::{grid_min_norm, rr_arithmetic};
    match (&record.rule, record.grid_min_norm) {
        (FlipRule::RandomisedResponse { .. }, None) => Ok(Arithmetic::Float64),
        (FlipRule::RandomisedResponse { .. }, Some(recorded)) => {
            let nu = record.min_norm.unwrap_or(f64::NAN);
            match rr_arithmetic(map, record.beta, nu, neighbour) {
                Arithmetic::Grid { q } if grid_min_norm(nu, map.p(), q) == recorded => {
                    Ok(Arithmetic::Grid { q })
                }
                _ => Err(Error::param(
                    "release",
                    format!(
                        "the recorded norm bound of the rounded rows ({recorded}) is not the one \
                         the map, β and ‹min_norm› give (an inconsistent release record)"
                    ),
                )),
            }
        }
        _ => Ok(Arithmetic::choose(map, record.beta, neighbour)),
    }
}

impl SignSketch {
    /// Assemble a sign mechanism (used by the per-algorithm constructors): computes the coins of
    /// its flip rule. For randomised response `record.flip_threshold` is filled in if absent, and
    /// checked if present.
    ///
    /// # Errors
    /// A flip rule whose ε' is not a finite non-negative number, or a recorded `flip_threshold`
    /// that differs from the coin ε' gives (an inconsistent release record).
    pub fn new(
        kind: MechanismKind,
        algorithm: &'static str,
        map: PublicMap,
        mut record: SignRecord,
        guarantee: Guarantee,
    ) -> Result<SignSketch> {
        let smooth_table: Vec<Flip> = match record.rule {
            FlipRule::SmoothFlipping { eps_prime } => {
                // q(L) < 2⁻⁶⁵ once ε'·L > 45: the dyadic coins then stop changing (they reach
                // the smallest numerator the ratio chain allows), so one last entry serves every
                // larger L. Beyond SMOOTH_TABLE_MAX entries (ε' below 45/65536) the last entry
                // is the coin at the cap, at least q(L) for every larger L: more flipping than
                // calibrated, never less, and neighbouring levels past the cap share one coin.
                let n = ((45.0 / eps_prime).ceil() as usize).saturating_add(2);
                smooth_flip_table(eps_prime, n.min(SMOOTH_TABLE_MAX))?
            }
            _ => Vec::new(),
        };
        let rr_flip = match record.rule {
            FlipRule::RandomisedResponse { eps_prime, .. } => {
                let flip = Flip::randomised_response(eps_prime)?;
                match record.flip_threshold {
                    Some(t) if t != flip.threshold() => {
                        return Err(Error::param(
                            "release",
                            format!(
                                "the recorded flip threshold {t}/2^64 is not the coin of ε' = \
                                 {eps_prime} ({}/2^64)",
                                flip.threshold()
                            ),
                        ))
                    }
                    _ => record.flip_threshold = Some(flip.threshold()),
                }
                flip
            }
            _ => Flip::randomised_response_or_half(0.0),
        };
        let last = smooth_table.len().max(2) - 1;
        let arithmetic = sign_arithmetic(&map, &record, guarantee.neighbour)?;
        let guard = fp_guard(&map, arithmetic, record.beta, last);
        let beta_q = arithmetic.effective_beta(record.beta);
        let mut arithmetic = ArithmeticRecord::with(&map, record.beta, arithmetic);
        arithmetic.guard = Some(guard);
        let steps: Vec<f64> = step_sizes(&map, beta_q)
            .into_iter()
            .map(|c| c * (1.0 + guard))
            .collect();
        let inv_steps = steps.iter().map(|&c| 1.0 / c).collect();
        Ok(SignSketch {
            kind,
            algorithm,
            map,
            steps,
            guard,
            arithmetic,
            beta_q,
            inv_steps,
            record,
            guarantee,
            smooth_table,
            rr_flip,
            idp_lattice: None,
        })
    }

    /// The release record.
    pub fn sign_record(&self) -> &SignRecord {
        &self.record
    }

    /// The public map.
    pub fn map(&self) -> &PublicMap {
        &self.map
    }

    /// The guarded steps `c̃_j = c_j·(1 + g)` the mechanism uses.
    pub fn steps(&self) -> &[f64] {
        &self.steps
    }

    /// The floating-point guard `g` ([`fp_guard`]).
    pub fn guard(&self) -> f64 {
        self.guard
    }

    /// Smooth flipping's level of every value of a projected row, as the mechanism computes it:
    /// `min(max(1, ⌈|x_j|/c̃_j⌉), last)` with `last` the smooth table's last index (every larger
    /// level has the same flip probability after rounding). A zero step (a projection column of
    /// zeros, whose value no input can move) gets `last`.
    ///
    /// **`L ≥ 1`.** DESIGN.md's formula gives `L = 0` (so `q = ½`) at `x_j = 0`, but by its own
    /// definition — the number of β-steps needed to change the sign — a zero value (released as
    /// `+1`) needs one step. `max(1, ·)` is monotone and 1-Lipschitz, so neighbours still differ
    /// by at most one level and a sign still changes only where both levels are ≤ 1: the proof of
    /// Theorem 4.6 is unchanged, and a zero value is flipped with `1/(1+e^{ε'})` instead of ½.
    /// This matters for OPORP on sparse data (54–74% of MNIST bins are exactly 0).
    pub fn levels<T: Copy + Into<f64>>(&self, x: &[T], out: &mut Vec<u32>) {
        let last = self.smooth_table.len().saturating_sub(1) as u32;
        let cap = last as f64;
        out.clear();
        // vectorisable: t clamped to `last` first (NaN from 0·∞ → `last` via f64::min), then ⌈t⌉
        // as a truncation rounded up
        out.extend(x.iter().zip(&self.inv_steps).map(|(&xj, &inv)| {
            let t = (xj.into().abs() * inv).min(cap);
            let f = t as u32;
            (f + ((f as f64) < t) as u32).clamp(1, last.max(1))
        }));
    }

    /// Rebuild from a release record (regenerating the public map); `algorithm` is the citation
    /// of the kind's own file, whose `from_record` calls this.
    pub fn from_record(
        rec: &MechanismRecord,
        guarantee: &Guarantee,
        algorithm: &'static str,
    ) -> Result<SignSketch> {
        let sign = rec.sign.clone().ok_or_else(|| {
            Error::param("release", "a sign mechanism record without its flip rule")
        })?;
        let map = PublicMap::from_record(&rec.projection, rec.p, rec.k)?;
        let mut m = SignSketch::new(rec.name, algorithm, map, sign, guarantee.clone())?;
        if let Some(crate::mechanism::NoiseMethod::Lattice(l)) = rec.noise_method() {
            m.idp_lattice = Some(IdpLattice::from_record(l)?);
        }
        Ok(m)
    }

    /// The noise set `A = {j : |x_j| < c_j}` of a projected row, as a mask and its size.
    pub fn noise_set<T: Copy + Into<f64>>(&self, x: &[T], mask: &mut Vec<bool>) -> u32 {
        mask.clear();
        let mut n = 0;
        for (&v, &c) in x.iter().zip(&self.steps) {
            let in_a = c > v.into().abs();
            n += in_a as u32;
            mask.push(in_a);
        }
        n
    }

    /// Δ₂ of the values in `A` under β-adjacency: `(β_q/√k)·max_i ‖W[i,A]‖₂` (dense; Rademacher
    /// gives `β_q·√(|A|/k)`), or β_q for OPORP (one coordinate moves one bin by at most β_q);
    /// `β_q = β + 2^-q` on the grid, β otherwise ([`super::arithmetic`]).
    pub fn set_sensitivity(&self, mask: &[bool], size: u32) -> f64 {
        self.sensitivity_of(|j| mask[j], size)
    }

    /// The noise set as bit words (bit `j` set = `j ∈ A`, layout of the sign words) and its size.
    fn noise_words<T: Copy + Into<f64>>(&self, x: &[T], out: &mut Vec<u64>) -> u32 {
        out.clear();
        let mut n = 0;
        for (xs, cs) in x.chunks(64).zip(self.steps.chunks(64)) {
            let mut a = 0u64;
            for (b, (&v, &c)) in xs.iter().zip(cs).enumerate() {
                a |= ((c > v.into().abs()) as u64) << b;
            }
            n += a.count_ones();
            out.push(a);
        }
        n
    }

    /// [`set_sensitivity`](Self::set_sensitivity) for a membership test.
    fn sensitivity_of(&self, member: impl Fn(usize) -> bool, size: u32) -> f64 {
        if size == 0 {
            return 0.0;
        }
        match &self.map {
            PublicMap::Dense(d) => {
                let k = d.k();
                let worst = if d.kind() == crate::projection::DenseKind::Rademacher {
                    // every |w_ij| = 1: each row of W restricted to A has squared norm |A|
                    size as f64
                } else {
                    let idx: Vec<usize> = (0..k).filter(|&j| member(j)).collect();
                    d.units()
                        .chunks(k)
                        .map(|row| {
                            idx.iter()
                                .map(|&j| (row[j] as f64) * (row[j] as f64))
                                .sum::<f64>()
                        })
                        .fold(0.0, f64::max)
                };
                self.beta_q / (k as f64).sqrt()
                    * worst.sqrt()
                    * d.unit() as f64
                    * (1.0 + crate::privacy::lattice::pow2(-50))
            }
            // every OPORP coordinate enters one bin with weight ±1 (checked when the map is built:
            // `step_sizes` gives c_j = β·max|r_i| = β), so a non-empty A has Δ₂(A) = β
            PublicMap::Oporp(o) => {
                debug_assert!(o.signs().iter().all(|s| s.abs() == 1.0));
                self.beta_q
            }
            PublicMap::Identity { .. } => self.beta_q,
        }
    }

    /// Privatise one projected row `x` into packed words; returns the number of values that could
    /// be perturbed (|A| for iDP, k otherwise).
    fn privatise_row<T: Copy + Into<f64>>(
        &self,
        x: &[T],
        words: &mut [u64],
        rng: &mut ChaCha20Rng,
        scratch: &mut Scratch,
    ) -> u32 {
        pack_signs(x, words);
        match &self.record.rule {
            FlipRule::RandomisedResponse { .. } => self.flip_rr(x.len(), words, rng, scratch),
            FlipRule::SmoothFlipping { .. } => self.flip_smooth(x, words, rng, scratch),
            FlipRule::IdpRandomisedResponse { epsilon, split } => {
                self.flip_idp_rr(x, *epsilon, *split, words, rng, scratch)
            }
            FlipRule::IdpGaussian { sigma_unit, .. } => {
                self.flip_idp_gaussian(x, *sigma_unit, words, rng, scratch)
            }
        }
    }

    /// Algorithm 3: every one of the `k` signs flipped with the randomised-response coin.
    fn flip_rr(
        &self,
        k: usize,
        words: &mut [u64],
        rng: &mut ChaCha20Rng,
        scratch: &mut Scratch,
    ) -> u32 {
        let flip = self.rr_flip;
        // one 64-bit word per sign, drawn in bulk (same stream order as one at a time);
        // the flips of 64 signs gathered into a mask without branches
        let draws = scratch.draws(k, rng);
        for (out, ws) in words.iter_mut().zip(draws.chunks(64)) {
            let mut m = 0u64;
            for (b, &w) in ws.iter().enumerate() {
                m |= (flip.sample_word(w) as u64) << b;
            }
            *out ^= m;
        }
        k as u32
    }

    /// Algorithm 4: sign `j` flipped with the coin of its level `L_j`.
    fn flip_smooth<T: Copy + Into<f64>>(
        &self,
        x: &[T],
        words: &mut [u64],
        rng: &mut ChaCha20Rng,
        scratch: &mut Scratch,
    ) -> u32 {
        let k = x.len();
        // pass 1: L_j (vectorisable); pass 2: one 64-bit word per sign against its
        // level's threshold, flips gathered per 64 signs
        let mut levels = std::mem::take(&mut scratch.levels);
        self.levels(x, &mut levels);
        let draws = scratch.draws(k, rng);
        for (out, (ws, ls)) in words
            .iter_mut()
            .zip(draws.chunks(64).zip(levels.chunks(64)))
        {
            let mut m = 0u64;
            for (b, (&w, &l)) in ws.iter().zip(ls).enumerate() {
                m |= (self.smooth_table[l as usize].sample_word(w) as u64) << b;
            }
            *out ^= m;
        }
        scratch.levels = levels;
        k as u32
    }

    /// Algorithm 8 (iDP, randomised response; the noise set `A` of Algorithm 7): the signs in
    /// `A` flipped with the coin of `ε/|A|` (or ε without the split).
    fn flip_idp_rr<T: Copy + Into<f64>>(
        &self,
        x: &[T],
        epsilon: f64,
        split: bool,
        words: &mut [u64],
        rng: &mut ChaCha20Rng,
        scratch: &mut Scratch,
    ) -> u32 {
        let n = self.noise_words(x, &mut scratch.set);
        if n > 0 {
            // one coin per |A|, computed once per block (ε/|A| rounded down)
            let cache = &mut scratch.idp_thresholds;
            if cache.len() <= n as usize {
                cache.resize(n as usize + 1, 0);
            }
            let flip = match cache[n as usize] {
                0 => {
                    let e = if split {
                        split_epsilon(epsilon, n as u64)
                    } else {
                        epsilon
                    };
                    let f = Flip::randomised_response_or_half(e);
                    cache[n as usize] = f.threshold();
                    f
                }
                // a cached threshold (≥ 1, ≤ 2^63) is a valid coin
                t => Flip::from_threshold(t).unwrap_or(self.rr_flip),
            };
            // one draw per member of A, in ascending j
            for (w, &a) in words.iter_mut().zip(&scratch.set) {
                let (mut rest, mut m) = (a, 0u64);
                while rest != 0 {
                    let b = rest.trailing_zeros();
                    rest &= rest - 1;
                    m |= (flip.sample(rng) as u64) << b;
                }
                *w ^= m;
            }
        }
        n
    }

    /// Algorithm 6 (iDP, Gaussian; the noise set `A` of Algorithm 7): noise of
    /// σ = Δ₂(A)·σ_unit on the values in `A`, then the signs.
    fn flip_idp_gaussian<T: Copy + Into<f64>>(
        &self,
        x: &[T],
        sigma_unit: f64,
        words: &mut [u64],
        rng: &mut ChaCha20Rng,
        scratch: &mut Scratch,
    ) -> u32 {
        let n = self.noise_words(x, &mut scratch.set);
        if n > 0 {
            let set_words = &scratch.set;
            let sens = self.sensitivity_of(|j| (set_words[j / 64] >> (j % 64)) & 1 == 1, n);
            if let Some(l) = &self.idp_lattice {
                l.signs(x, sens, n, set_words, words, rng);
                return n;
            }
            let sigma = sens * sigma_unit;
            // A value of exactly 0 (most OPORP bins of sparse data) releases
            // sign(σz) = [z ≥ 0], a fair coin: one random bit instead of a normal draw,
            // the same output distribution. The other members of A take normal draws
            // in one tight loop, consumed in ascending j; then, per 64 signs, one word
            // of coins where needed, and the noisy signs merged without branches.
            let zero_words = &mut scratch.words;
            zero_words.clear();
            let mut normals = 0u32;
            for (&a, xs) in set_words.iter().zip(x.chunks(64)) {
                let mut zw = 0u64;
                for (b, &v) in xs.iter().enumerate() {
                    zw |= ((v.into() == 0.0) as u64) << b;
                }
                zw &= a;
                normals += (a & !zw).count_ones();
                zero_words.push(zw);
            }
            let z = &mut scratch.normals;
            z.clear();
            z.extend((0..normals).map(|_| rng.sample::<f64, _>(StandardNormal)));
            let mut next = z.iter();
            for (w, ((&a, &zw), xs)) in words
                .iter_mut()
                .zip(set_words.iter().zip(zero_words.iter()).zip(x.chunks(64)))
            {
                let mut set = if zw != 0 { rng.next_u64() & zw } else { 0 };
                let mut rest = a & !zw;
                while rest != 0 {
                    let b = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    let zj = next.next().copied().unwrap_or(0.0);
                    set |= ((xs[b].into() + sigma * zj >= 0.0) as u64) << b;
                }
                *w = (*w & !a) | set;
            }
        }
        n
    }

    /// The projected values the mechanism works with (f64, in its arithmetic).
    pub fn project_values(&self, rows: &[f32]) -> Result<Vec<f64>> {
        let m = rows.len() / self.map.p().max(1);
        let mut z = vec![0f64; m * self.map.k()];
        self.arithmetic
            .arithmetic
            .evaluate(&self.map, rows, &mut z)?;
        Ok(z)
    }

    /// How the map is evaluated and what that costs.
    pub fn arithmetic(&self) -> &ArithmeticRecord {
        &self.arithmetic
    }

    /// Check a block's shape: `rows` holds whole input rows and `words` their packed outputs.
    fn block<'a>(&self, rows: &[f32], out: SketchMut<'a>) -> Result<&'a mut [u64]> {
        let SketchMut::Bits(words) = out else {
            return Err(Error::param(
                "payload",
                "a sign mechanism needs a bit buffer",
            ));
        };
        let p = self.map.p();
        let m = rows.len() / p;
        if m * p != rows.len() || words.len() != m * self.map.k().div_ceil(64) {
            return Err(Error::param(
                "rows",
                "block shape does not match the mechanism",
            ));
        }
        Ok(words)
    }

    /// Privatise every projected row, drawing from `rngs`.
    fn privatise_values<T: Copy + Into<f64>>(
        &self,
        z: &[T],
        words: &mut [u64],
        mut rngs: Rngs<'_>,
        mut sizes: Option<&mut [u32]>,
    ) {
        let k = self.map.k();
        let wpr = k.div_ceil(64);
        let mut scratch = Scratch::default();
        for (r, (x, w)) in z
            .chunks_exact(k)
            .zip(words.chunks_exact_mut(wpr))
            .enumerate()
        {
            let n = match &mut rngs {
                Rngs::Shared(g) => self.privatise_row(x, w, g, &mut scratch),
                Rngs::PerRow { noise, first_row } => {
                    // `run` checked that the last id fits in 64 bits
                    let mut g = noise.row_rng(*first_row + r as u64);
                    self.privatise_row(x, w, &mut g, &mut scratch)
                }
            };
            if let Some(s) = sizes.as_deref_mut() {
                s[r] = n;
            }
        }
    }

    fn run(
        &self,
        rows: &[f32],
        out: SketchMut<'_>,
        first_row: u64,
        noise: &NoiseSource,
        sizes: Option<&mut [u32]>,
    ) -> Result<()> {
        let words = self.block(rows, out)?;
        let m = rows.len() / self.map.p();
        crate::mechanism::row_id(first_row, m.saturating_sub(1))?;
        // each row reads its own noise stream, from its start
        let rngs = Rngs::PerRow { noise, first_row };
        let z = self.project_values(rows)?;
        self.privatise_values(&z, words, rngs, sizes);
        Ok(())
    }
}

/// Where the rows of [`SignSketch::privatise_values`] draw their noise.
enum Rngs<'a> {
    /// All rows from one generator, in row order ([`Mechanism::privatise`]).
    Shared(&'a mut ChaCha20Rng),
    /// Row `first_row + r` from its own stream [`NoiseSource::row_rng`] (publishing).
    PerRow {
        noise: &'a NoiseSource,
        first_row: u64,
    },
}

/// Per-thread scratch buffers for [`SignSketch::privatise_row`].
#[derive(Default)]
struct Scratch {
    set: Vec<u64>,
    normals: Vec<f64>,
    words: Vec<u64>,
    levels: Vec<u32>,
    /// iDP randomised response: the coin's threshold per |A| (0 = not computed yet).
    idp_thresholds: Vec<u64>,
}

impl Scratch {
    /// `k` random 64-bit words from `rng`, in the order `next_u64` would give them.
    fn draws(&mut self, k: usize, rng: &mut ChaCha20Rng) -> &[u64] {
        use rand::Rng;
        self.words.resize(k, 0);
        for w in self.words.iter_mut() {
            *w = rng.next_u64();
        }
        &self.words
    }
}

/// Pack the signs of `x` (bit set = `x_j ≥ 0`) into `words`.
pub fn pack_signs<T: Copy + Into<f64>>(x: &[T], words: &mut [u64]) {
    for (w, chunk) in words.iter_mut().zip(x.chunks(64)) {
        let mut v = 0u64;
        for (b, &xj) in chunk.iter().enumerate() {
            v |= ((xj.into() >= 0.0) as u64) << b;
        }
        *w = v;
    }
}

impl Mechanism for SignSketch {
    fn kind(&self) -> MechanismKind {
        self.kind
    }
    fn input_dim(&self) -> usize {
        self.map.p()
    }
    fn output_dim(&self) -> usize {
        self.map.k()
    }
    fn payload(&self) -> Payload {
        Payload::Bits
    }
    fn guarantee(&self) -> Guarantee {
        self.guarantee.clone()
    }
    fn record(&self) -> MechanismRecord {
        MechanismRecord {
            name: self.kind,
            algorithm: self.algorithm.to_string(),
            p: self.map.p(),
            k: self.map.k(),
            projection: self.map.record(),
            gaussian: None,
            sign: Some(self.record.clone()),
            local: None,
            noise: match (&self.record.rule, &self.idp_lattice) {
                (FlipRule::IdpGaussian { .. }, Some(l)) => {
                    Some(crate::mechanism::NoiseMethod::Lattice(l.record.clone()))
                }
                (FlipRule::IdpGaussian { .. }, None) => Some(crate::mechanism::NoiseMethod::Float),
                _ => None,
            },
            arithmetic: Some(self.arithmetic.clone()),
        }
    }
    fn privatise(
        &self,
        rows: &[f32],
        _first_row: u64,
        out: SketchMut<'_>,
        rng: &mut ChaCha20Rng,
    ) -> Result<()> {
        let words = self.block(rows, out)?;
        let z = self.project_values(rows)?;
        self.privatise_values(&z, words, Rngs::Shared(rng), None);
        Ok(())
    }
    fn privatise_rows(
        &self,
        rows: &[f32],
        out: SketchMut<'_>,
        first_row: u64,
        noise: &NoiseSource,
    ) -> Result<()> {
        self.run(rows, out, first_row, noise, None)
    }
    fn privatise_rows_counted(
        &self,
        rows: &[f32],
        out: SketchMut<'_>,
        first_row: u64,
        noise: &NoiseSource,
        perturbed: &mut [u32],
    ) -> Result<()> {
        self.run(rows, out, first_row, noise, Some(perturbed))
    }
    fn sketch(&self) -> Option<&dyn Sketch> {
        Some(self)
    }
}

impl Sketch for SignSketch {
    /// The values whose signs are released (the mechanism's arithmetic; a query row outside the
    /// domain in f64, [`crate::mechanism::central::arithmetic::Arithmetic::evaluate_query`]), rounded to
    /// f32.
    fn project(&self, rows: &[f32], out: &mut [f32]) -> Result<()> {
        let mut z = vec![0f64; out.len()];
        self.arithmetic
            .arithmetic
            .for_queries(rows)
            .evaluate_par(&self.map, rows, &mut z)?;
        out.iter_mut().zip(&z).for_each(|(o, &v)| *o = v as f32);
        Ok(())
    }
    fn estimator(&self) -> Estimator {
        Estimator::Sign {
            k: self.map.k(),
            eps_prime: match self.record.rule {
                FlipRule::RandomisedResponse { eps_prime, .. } => Some(eps_prime),
                _ => None,
            },
        }
    }
    fn min_norm(&self) -> Option<f64> {
        self.record.min_norm
    }
}
