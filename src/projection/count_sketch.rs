//! Count sketch `S ∈ R^{m×d}` (Charikar et al. 2002; the gradient sketch of Chen, Choquette-Choo,
//! Kairouz & Suresh 2022, Algorithms 4/5; MECHANISMS-LDP.md §E), regenerable bit for bit from a
//! public seed.
//!
//! `m = t·w`: `t` blocks of `w` rows. Column `i` has exactly one nonzero per block,
//! `S[b·w + h_b(i), i] = σ_b(i)/√t`, with `h_b(i)` uniform on `[0, w)` and `σ_b(i)` uniform on
//! `{±1}`, all `2·t·d` of them independent ("fully random" hashing). Encode `y = Sx` and decode
//! `Sᵀy` cost `O(t·d)`; the sketch stores the `t·d` row indices (`u32`) and signs (one bit each),
//! never an `m×d` matrix.
//!
//! **Error of `SᵀS` (derived here).** `(SᵀS)_{ii} = Σ_b σ_b(i)²/t = 1`, so `e = SᵀSg − g` has
//! `e_i = (1/t)·Σ_{j≠i} g_j Σ_b σ_b(i)σ_b(j)·1[h_b(i) = h_b(j)]`. Every term has mean 0 (the sign
//! product is independent of the hashes and has mean 0), so `E[SᵀSg] = g`. In `E[e_i²]` the
//! cross terms with `b ≠ b'` or `j ≠ j'` contain an unpaired independent sign and vanish, leaving
//! `E[e_i²] = (1/t²)·Σ_{j≠i} g_j²·t·P(h_b(i) = h_b(j)) = Σ_{j≠i} g_j²/(t·w)`, and summing over `i`:
//!
//! ```text
//! E‖SᵀSg − g‖² = (d − 1)·‖g‖² / m        for every t (m = t·w),
//! ```
//!
//! the t = 1 formula of MECHANISMS-LDP.md §E, for any number of blocks. (It needs independent
//! signs across blocks: reusing one sign for all blocks adds `(t−1)/(t·w²)·Σ_{j≠i} g_j²` per
//! coordinate — the tests check that such a sketch is caught.) Similarly
//! `E[e_i e_k] = g_i g_k/m` for `i ≠ k`.
//!
//! **Randomness layout** (see [`crate::projection`]): the seed is the ChaCha20 key; stream 6 gives
//! the hashes, stream 7 the signs. Entry index `q = i·t + b` (column `i` outer, block `b` inner).
//! Hash `q` is the `q`-th draw of `uniform_below(w)` on stream 6 (Lemire's
//! multiply-and-reject on 64-bit words: exactly uniform, no modulo bias). Sign `q` is bit
//! `q mod 64` (least significant first) of 64-bit word `q / 64` of stream 7; bit 1 → `+1`.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::oporp::uniform_below;
use super::Seed;
use crate::error::{Error, Result};

/// ChaCha20 stream of the hashes `h_b(i)`.
pub const HASH_STREAM: u64 = 6;
/// ChaCha20 stream of the signs `σ_b(i)`.
pub const SIGN_STREAM: u64 = 7;

/// A public count sketch `R^d → R^m`, stored as its `t·d` row indices and signs.
#[derive(Debug, Clone, PartialEq)]
pub struct CountSketch {
    d: usize,
    t: usize,
    w: usize,
    seed: Seed,
    /// `rows[i·t + b] = b·w + h_b(i)`: the row of column `i`'s nonzero in block `b`.
    rows: Vec<u32>,
    /// `σ_b(i)` for entry `q = i·t + b`: bit `q mod 64` of word `q / 64`, 1 for `+1` (the stream-7
    /// words themselves, unused high bits of the last word cleared).
    sign_bits: Vec<u64>,
}

fn check_shape(d: usize, m: usize, t: usize) -> Result<usize> {
    if d == 0 {
        return Err(Error::param(
            "count sketch d",
            "the input dimension must be at least 1",
        ));
    }
    if m == 0 {
        return Err(Error::param(
            "sketch size m",
            "the sketch needs at least one row (m ≥ 1)",
        ));
    }
    if t == 0 {
        return Err(Error::param(
            "sketch blocks t",
            "the sketch needs at least one block (t ≥ 1)",
        ));
    }
    if !m.is_multiple_of(t) {
        return Err(Error::param(
            "sketch blocks t",
            format!("t = {t} does not divide m = {m} (m = t·w with w rows per block)"),
        ));
    }
    if m > u32::MAX as usize {
        return Err(Error::param(
            "sketch size m",
            format!("m = {m} exceeds the supported maximum {}", u32::MAX),
        ));
    }
    d.checked_mul(t)
        .filter(|&n| n <= isize::MAX as usize / 8)
        .ok_or_else(|| {
            Error::param(
                "sketch blocks t",
                format!("t·d = {t}·{d} entries are too many to store"),
            )
        })?;
    Ok(m / t)
}

impl CountSketch {
    /// Regenerate the count sketch `R^d → R^m` with `t` blocks (`t` must divide `m`) from the
    /// public seed.
    pub fn generate(d: usize, m: usize, t: usize, seed: Seed) -> Result<CountSketch> {
        let w = check_shape(d, m, t)?;
        // A bucket (4 bytes) and a sign bit per entry, d·t entries.
        super::check_map_bytes(
            &format!("a count sketch of d = {d}, t = {t}"),
            d as u128 * t as u128 * 4 + (d as u128 * t as u128).div_ceil(8),
        )?;
        let n = d * t;
        let mut hrng = ChaCha20Rng::from_seed(seed.0);
        hrng.set_stream(HASH_STREAM);
        let mut rows = Vec::with_capacity(n);
        for _ in 0..d {
            for b in 0..t {
                let h = uniform_below(&mut hrng, w as u64) as usize;
                rows.push((b * w + h) as u32);
            }
        }
        let mut srng = ChaCha20Rng::from_seed(seed.0);
        srng.set_stream(SIGN_STREAM);
        let mut sign_bits: Vec<u64> = (0..n.div_ceil(64)).map(|_| srng.next_u64()).collect();
        if !n.is_multiple_of(64) {
            if let Some(last) = sign_bits.last_mut() {
                *last &= (1u64 << (n % 64)) - 1;
            }
        }
        Ok(CountSketch {
            d,
            t,
            w,
            seed,
            rows,
            sign_bits,
        })
    }

    /// A sketch from explicit hashes `hashes[i·t + b] = h_b(i) ∈ [0, w)` and signs
    /// `signs[i·t + b] ∈ {−1, +1}` (for tests of the statistical checks themselves: a sketch with
    /// deliberately biased hashes or signs must fail them).
    #[cfg(test)]
    fn from_parts(d: usize, w: usize, t: usize, hashes: &[usize], signs: &[bool]) -> CountSketch {
        let n = d * t;
        assert_eq!(hashes.len(), n);
        let rows = (0..n).map(|q| ((q % t) * w + hashes[q]) as u32).collect();
        let mut sign_bits = vec![0u64; n.div_ceil(64)];
        for (q, &s) in signs.iter().enumerate() {
            if s {
                sign_bits[q / 64] |= 1 << (q % 64);
            }
        }
        CountSketch {
            d,
            t,
            w,
            seed: Seed([0; 32]),
            rows,
            sign_bits,
        }
    }

    /// Input dimension `d`.
    pub fn d(&self) -> usize {
        self.d
    }
    /// Sketch size `m = t·w`.
    pub fn m(&self) -> usize {
        self.t * self.w
    }
    /// Number of blocks `t`.
    pub fn t(&self) -> usize {
        self.t
    }
    /// Rows per block `w`.
    pub fn w(&self) -> usize {
        self.w
    }
    /// The public seed.
    pub fn seed(&self) -> Seed {
        self.seed
    }
    /// The nonzero scale `1/√t`.
    pub fn scale(&self) -> f64 {
        1.0 / (self.t as f64).sqrt()
    }

    /// `h_b(i)`, the bucket of column `i` in block `b` (`i < d`, `b < t`; `None` outside).
    pub fn hash(&self, i: usize, b: usize) -> Option<usize> {
        if i >= self.d || b >= self.t {
            return None;
        }
        Some(self.rows[i * self.t + b] as usize - b * self.w)
    }

    /// `σ_b(i) ∈ {−1, +1}` (`None` outside the sketch).
    pub fn sign(&self, i: usize, b: usize) -> Option<i8> {
        if i >= self.d || b >= self.t {
            return None;
        }
        let q = i * self.t + b;
        Some(if (self.sign_bits[q / 64] >> (q % 64)) & 1 == 1 {
            1
        } else {
            -1
        })
    }

    /// `±v` by the sign of entry `q`: an XOR of the IEEE sign bit.
    #[inline]
    fn signed(&self, q: usize, v: f64) -> f64 {
        let flip = ((!self.sign_bits[q / 64] >> (q % 64)) & 1) << 63;
        f64::from_bits(v.to_bits() ^ flip)
    }

    /// An upper bound on the spectral norm `‖S‖ = ‖Sᵀ‖`: `SᵀS = Σ_b S_bᵀS_b` over the `t` blocks,
    /// and block `b`'s rows have disjoint supports, so `S_b S_bᵀ` is diagonal with the bucket
    /// sizes (times `1/t`) and `‖S_b‖² = max_bucket_b / t`; hence `‖S‖² ≤ Σ_b max_bucket_b / t`,
    /// exact for `t = 1`. It bounds how far `Sᵀ` can stretch an error made in the sketch space.
    pub fn norm_bound(&self) -> f64 {
        let mut total = 0usize;
        for b in 0..self.t {
            let mut counts = vec![0usize; self.w];
            for i in 0..self.d {
                counts[self.rows[i * self.t + b] as usize - b * self.w] += 1;
            }
            total += counts.into_iter().max().unwrap_or(0);
        }
        (total as f64 / self.t as f64).sqrt()
    }

    /// The expected squared error of decoding an encoded vector, `E‖SᵀSg − g‖² = (d−1)‖g‖²/m`
    /// (over the public randomness; see the module documentation).
    pub fn expected_error_sq(d: usize, m: usize, norm_sq: f64) -> f64 {
        (d.saturating_sub(1)) as f64 * norm_sq / m as f64
    }

    /// `y = Sx` into `y` (overwritten); `x` has `d` coordinates, `y` has `m`.
    pub fn encode_into(&self, x: &[f64], y: &mut [f64]) -> Result<()> {
        self.check_len("count sketch input", x.len(), self.d, "d")?;
        self.check_len("count sketch output", y.len(), self.m(), "m")?;
        y.fill(0.0);
        let s = self.scale();
        let t = self.t;
        for (i, &xi) in x.iter().enumerate() {
            let v = s * xi;
            for q in i * t..(i + 1) * t {
                y[self.rows[q] as usize] += self.signed(q, v);
            }
        }
        Ok(())
    }

    /// `y = Sx`.
    pub fn encode(&self, x: &[f64]) -> Result<Vec<f64>> {
        let mut y = vec![0.0; self.m()];
        self.encode_into(x, &mut y)?;
        Ok(y)
    }

    /// `x = Sᵀy` into `x` (overwritten); `y` has `m` coordinates, `x` has `d`.
    pub fn decode_into(&self, y: &[f64], x: &mut [f64]) -> Result<()> {
        self.check_len("count sketch decode input", y.len(), self.m(), "m")?;
        self.check_len("count sketch decode output", x.len(), self.d, "d")?;
        let s = self.scale();
        let t = self.t;
        for (i, xi) in x.iter_mut().enumerate() {
            let mut acc = 0.0;
            for q in i * t..(i + 1) * t {
                acc += self.signed(q, y[self.rows[q] as usize]);
            }
            *xi = s * acc;
        }
        Ok(())
    }

    /// `Sᵀy`.
    pub fn decode(&self, y: &[f64]) -> Result<Vec<f64>> {
        let mut x = vec![0.0; self.d];
        self.decode_into(y, &mut x)?;
        Ok(x)
    }

    fn check_len(&self, what: &str, got: usize, want: usize, name: &str) -> Result<()> {
        if got != want {
            return Err(Error::param(
                what,
                format!("has {got} coordinates, the sketch has {name} = {want}"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    fn seed_of(r: u64) -> Seed {
        let mut s = [0u8; 32];
        s[..8].copy_from_slice(&r.to_le_bytes());
        s[31] = 0x5c;
        Seed(s)
    }

    /// A positive test vector (positive, so that a sign bias shows up in the mean).
    fn test_vector(d: usize) -> Vec<f64> {
        (0..d).map(|i| 1.0 + (i as f64) / (d as f64)).collect()
    }

    struct Stats {
        /// Per coordinate, the mean of `e_i` over the trials.
        mean_err: Vec<f64>,
        /// Mean and sample variance of `‖e‖²`.
        mean_sq: f64,
        var_sq: f64,
        trials: usize,
    }

    fn run(trials: usize, g: &[f64], make: impl Fn(u64) -> CountSketch) -> Stats {
        let d = g.len();
        let mut sum_err = vec![0.0; d];
        let mut sq = Vec::with_capacity(trials);
        for r in 0..trials {
            let s = make(r as u64);
            let back = s.decode(&s.encode(g).unwrap()).unwrap();
            let mut e2 = 0.0;
            for i in 0..d {
                let e = back[i] - g[i];
                sum_err[i] += e;
                e2 += e * e;
            }
            sq.push(e2);
        }
        let mean_sq = sq.iter().sum::<f64>() / trials as f64;
        let var_sq = sq.iter().map(|v| (v - mean_sq).powi(2)).sum::<f64>() / (trials - 1) as f64;
        Stats {
            mean_err: sum_err.iter().map(|s| s / trials as f64).collect(),
            mean_sq,
            var_sq,
            trials,
        }
    }

    /// Largest |z| of the per-coordinate mean error, with the exact variance
    /// `Var(e_i) = Σ_{j≠i} g_j²/m` of one trial (module documentation).
    fn max_mean_z(st: &Stats, g: &[f64], m: usize) -> f64 {
        let total: f64 = g.iter().map(|v| v * v).sum();
        st.mean_err
            .iter()
            .zip(g)
            .map(|(e, gi)| {
                let var = (total - gi * gi) / m as f64;
                e.abs() / (var / st.trials as f64).sqrt()
            })
            .fold(0.0, f64::max)
    }

    /// z of the mean of ‖e‖² against (d−1)‖g‖²/m, the standard error from the sample variance
    /// over the trials.
    fn variance_z(st: &Stats, g: &[f64], m: usize) -> f64 {
        let norm_sq: f64 = g.iter().map(|v| v * v).sum();
        let want = CountSketch::expected_error_sq(g.len(), m, norm_sq);
        (st.mean_sq - want) / (st.var_sq / st.trials as f64).sqrt()
    }

    // With d coordinates tested two-sided at |z| < 4.5, the chance that a correct sketch fails
    // is at most d·6.8e-6 ≈ 2e-4 (normal approximation, 4000 trials); the seeds are fixed, so the
    // outcome is deterministic anyway.
    const Z_MAX: f64 = 4.5;
    const TRIALS: usize = 4000;

    #[test]
    fn norm_bound_is_the_spectral_norm_for_one_block_and_bounds_it_for_more() {
        // ‖S‖² by power iteration on SᵀS (converges from below), against the bound
        for &(d, m, t) in &[
            (100usize, 16usize, 1usize),
            (300, 32, 1),
            (200, 24, 2),
            (200, 30, 3),
        ] {
            let s = CountSketch::generate(d, m, t, seed_of(d as u64 + t as u64)).unwrap();
            let mut v: Vec<f64> = (0..d).map(|i| 1.0 + (i as f64 * 0.37).sin()).collect();
            let mut lambda = 0.0;
            for _ in 0..500 {
                let w = s.decode(&s.encode(&v).unwrap()).unwrap();
                let norm = w.iter().map(|x| x * x).sum::<f64>().sqrt();
                lambda = norm / v.iter().map(|x| x * x).sum::<f64>().sqrt();
                v = w.iter().map(|x| x / norm).collect();
            }
            let bound = s.norm_bound();
            assert!(
                lambda.sqrt() <= bound * (1.0 + 1e-9),
                "{d},{m},{t}: {} > {bound}",
                lambda.sqrt()
            );
            if t == 1 {
                assert!(
                    (lambda.sqrt() / bound - 1.0).abs() < 1e-6,
                    "{d},{m}: {} vs {bound}",
                    lambda.sqrt()
                );
            }
        }
    }

    #[test]
    fn unbiased_and_variance_matches_for_t_1_2_3() {
        let d = 32;
        let g = test_vector(d);
        for &(m, t) in &[(8usize, 1usize), (8, 2), (12, 3)] {
            let st = run(TRIALS, &g, |r| {
                CountSketch::generate(d, m, t, seed_of(r)).unwrap()
            });
            let zm = max_mean_z(&st, &g, m);
            assert!(zm < Z_MAX, "m={m} t={t}: mean error z = {zm}");
            let zv = variance_z(&st, &g, m);
            assert!(zv.abs() < Z_MAX, "m={m} t={t}: variance z = {zv}");
        }
    }

    /// A sketch drawn by a deliberately wrong sampler, from `ChaCha20Rng(r)`.
    fn wrong_sketch(
        r: u64,
        d: usize,
        w: usize,
        t: usize,
        hash: impl Fn(&mut ChaCha20Rng) -> usize,
        sign: impl Fn(&mut ChaCha20Rng) -> bool,
    ) -> CountSketch {
        let mut rng = ChaCha20Rng::seed_from_u64(r);
        let hashes: Vec<usize> = (0..d * t).map(|_| hash(&mut rng)).collect();
        let signs: Vec<bool> = (0..d * t).map(|_| sign(&mut rng)).collect();
        CountSketch::from_parts(d, w, t, &hashes, &signs)
    }

    #[test]
    fn power_biased_signs_are_caught_by_the_mean_test() {
        let (d, w, t) = (32, 4, 2);
        let g = test_vector(d);
        // P(σ = +1) = 0.75 instead of ½.
        let st = run(TRIALS, &g, |r| {
            wrong_sketch(
                r,
                d,
                w,
                t,
                |g| g.random_range(0..w),
                |g| g.random_bool(0.75),
            )
        });
        let zm = max_mean_z(&st, &g, w * t);
        assert!(zm > Z_MAX, "biased signs not caught: z = {zm}");
    }

    #[test]
    fn power_biased_hashes_are_caught_by_the_variance_test() {
        let (d, w, t) = (32, 4, 1);
        let g = test_vector(d);
        // Hash never lands in the last bucket: collision probability 1/(w−1) instead of 1/w.
        let st = run(TRIALS, &g, |r| {
            wrong_sketch(
                r,
                d,
                w,
                t,
                |g| g.random_range(0..w - 1),
                |g| g.random_bool(0.5),
            )
        });
        let zv = variance_z(&st, &g, w * t);
        assert!(zv > Z_MAX, "biased hashes not caught: z = {zv}");
        // The same wrong sampler at the correct range passes (the harness itself is sound).
        let st = run(TRIALS, &g, |r| {
            wrong_sketch(r, d, w, t, |g| g.random_range(0..w), |g| g.random_bool(0.5))
        });
        assert!(variance_z(&st, &g, w * t).abs() < Z_MAX);
        assert!(max_mean_z(&st, &g, w * t) < Z_MAX);
    }

    #[test]
    fn power_signs_shared_across_blocks_are_caught() {
        // One sign per column reused in every block: unbiased, but the error grows by
        // (t−1)/(t·w²)·Σ_{j≠i} g_j² per coordinate (+25% at t = 2, w = 4).
        let (d, w, t) = (32, 4, 2);
        let g = test_vector(d);
        let st = run(TRIALS, &g, |r| {
            let mut rng = ChaCha20Rng::seed_from_u64(r);
            let hashes: Vec<usize> = (0..d * t).map(|_| rng.random_range(0..w)).collect();
            let col: Vec<bool> = (0..d).map(|_| rng.random_bool(0.5)).collect();
            let signs: Vec<bool> = (0..d * t).map(|q| col[q / t]).collect();
            CountSketch::from_parts(d, w, t, &hashes, &signs)
        });
        assert!(max_mean_z(&st, &g, w * t) < Z_MAX);
        let zv = variance_z(&st, &g, w * t);
        assert!(zv > Z_MAX, "shared signs not caught: z = {zv}");
    }

    #[test]
    fn structure_is_one_signed_entry_per_block() {
        let s = CountSketch::generate(50, 12, 3, seed_of(9)).unwrap();
        assert_eq!((s.d(), s.m(), s.t(), s.w()), (50, 12, 3, 4));
        for i in 0..50 {
            let mut e = vec![0.0; 50];
            e[i] = 1.0;
            let col = s.encode(&e).unwrap();
            for b in 0..3 {
                let block = &col[b * 4..(b + 1) * 4];
                let nz: Vec<usize> = (0..4).filter(|&r| block[r] != 0.0).collect();
                assert_eq!(nz, vec![s.hash(i, b).unwrap()]);
                let v = block[nz[0]];
                assert!((v - s.sign(i, b).unwrap() as f64 / 3f64.sqrt()).abs() < 1e-15);
            }
        }
        // Decode is the exact transpose: ⟨Sx, y⟩ = ⟨x, Sᵀy⟩.
        let x: Vec<f64> = (0..50).map(|i| (i as f64 * 0.37).sin()).collect();
        let y: Vec<f64> = (0..12).map(|i| (i as f64 * 1.3).cos()).collect();
        let lhs: f64 = s
            .encode(&x)
            .unwrap()
            .iter()
            .zip(&y)
            .map(|(a, b)| a * b)
            .sum();
        let rhs: f64 = x
            .iter()
            .zip(s.decode(&y).unwrap())
            .map(|(a, b)| a * b)
            .sum();
        assert!((lhs - rhs).abs() < 1e-12);
    }

    #[test]
    fn regenerates_bit_for_bit_golden() {
        let seed = Seed::parse_hex("c0ffee").unwrap();
        let a = CountSketch::generate(10, 10, 2, seed).unwrap();
        let b = CountSketch::generate(10, 10, 2, seed).unwrap();
        assert_eq!(a, b);
        assert_ne!(
            a,
            CountSketch::generate(10, 10, 2, Seed::parse_hex("c0ffef").unwrap()).unwrap()
        );
        // Golden values: changing the layout (streams, draw order, sampler) changes them.
        let hashes: Vec<usize> = (0..10)
            .flat_map(|i| (0..2).map(move |b| (i, b)))
            .map(|(i, b)| a.hash(i, b).unwrap())
            .collect();
        let signs: Vec<i8> = (0..10)
            .flat_map(|i| (0..2).map(move |b| (i, b)))
            .map(|(i, b)| a.sign(i, b).unwrap())
            .collect();
        assert_eq!(hashes, GOLDEN_HASHES);
        assert_eq!(signs, GOLDEN_SIGNS);
        let y = a
            .encode(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0])
            .unwrap();
        let y_bits: Vec<u64> = y.iter().map(|v| v.to_bits()).collect();
        assert_eq!(y_bits, GOLDEN_Y_BITS);
    }

    // Seed c0ffee, d = 10, m = 10, t = 2; entries in the order (i, b) = (0,0), (0,1), (1,0), …
    const GOLDEN_HASHES: [usize; 20] = [2, 4, 2, 4, 0, 4, 0, 2, 1, 3, 4, 1, 0, 2, 0, 1, 3, 3, 1, 4];
    const GOLDEN_SIGNS: [i8; 20] = [
        -1, -1, 1, -1, -1, -1, 1, 1, -1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1,
    ];
    // S·(1, 2, …, 10) as f64 bits; re-derived independently (Python, from the hashes and signs
    // above): [11.3137…, −10.6066…, 0.7071…, −6.3640…, 4.2426…, 0, −1.4142…, 7.7782…, −2.8284…,
    // −11.3137…].
    const GOLDEN_Y_BITS: [u64; 10] = [
        4622558669727284172,
        13845532640852527119,
        4604544271217802188,
        13842223238413755206,
        4616462807181782233,
        0,
        13832419907699948492,
        4620443464477110840,
        13836923507327318989,
        13845930706582059980,
    ];

    #[test]
    fn bad_shapes_are_errors() {
        let s = Seed([1; 32]);
        assert!(CountSketch::generate(10, 0, 1, s).is_err());
        assert!(CountSketch::generate(0, 10, 1, s).is_err());
        assert!(CountSketch::generate(10, 10, 0, s).is_err());
        let e = CountSketch::generate(10, 10, 3, s).unwrap_err().to_string();
        assert!(e.contains("does not divide"), "{e}");
        assert!(CountSketch::generate(10, u32::MAX as usize + 1, 1, s).is_err());
        assert!(CountSketch::generate(usize::MAX / 2, 10, 5, s).is_err());
        let ok = CountSketch::generate(10, 10, 2, s).unwrap();
        assert!(ok.encode(&[0.0; 9]).is_err());
        assert!(ok.decode(&[0.0; 11]).is_err());
        assert!(ok.hash(10, 0).is_none() && ok.sign(0, 2).is_none());
        let mut y = vec![0.0; 9];
        assert!(ok.encode_into(&[0.0; 10], &mut y).is_err());
    }
}
