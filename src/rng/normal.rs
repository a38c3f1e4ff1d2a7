//! Bulk standard normals — the local mechanisms' noise and public maps, and the public synthetic
//! data ([`crate::data::synthetic`], on [`super::Xoshiro256pp`] words) — by the ziggurat method (Marsaglia & Tsang 2000,
//! "The Ziggurat Method for Generating Random Variables", with the tail algorithm of Marsaglia
//! 1964 and the layer layout of Doornik 2005, "An Improved Ziggurat Method to Generate Normal
//! Random Samples") on 64-bit words drawn in blocks from the caller's generator.
//!
//! **Why.** The mechanisms draw one normal per coordinate (PrivUnitG's `g⊥`, PrivUnit2's
//! orthogonal direction, the rotation's Householder vectors), so at d = 10⁶–10⁷ the client's cost
//! is the normal sampler's. The words come a block at a time ([`WordRng::fill_words`]: for
//! ChaCha20, dprp's multi-block keystream [`crate::privacy::chacha`], the same words as
//! `fill_bytes`), one 64-bit word per sample, and most samples are decided in a tight loop over
//! the block with one integer compare, one conversion and one multiply (tables of threshold and
//! pre-scaled width side by side). For a ChaCha20 generator the keystream is computed ahead in
//! runs of up to 8 KiB without a round trip through `rand_chacha` per block, and the generator
//! is moved once at the end to where the block-at-a-time reading leaves it (`Words`); the
//! wedge test is decided without `exp` for ≈99% of wedge points by chord and tangent bounds
//! (`squeeze`), with the exact test in the remaining band. This is several times faster than
//! `rand_distr::StandardNormal` through the same ChaCha20 generator (`cargo bench --bench ldp --
//! normals`). The randomness is unchanged: every bit still comes from the caller's generator
//! (ChaCha20 seeded from the OS in the mechanisms), and tests check the block loop against the
//! one-word-at-a-time statement below bit for bit, the read-ahead against the block reading
//! and the squeeze against the exact test. Tables and slow path use the `libm` crate only, so
//! the draws are a function of the words alone, on every machine.
//!
//! **The method (exact).** With `f(x) = e^{−x²/2}` and `N = 256` layers of equal area `V`, the
//! region under `f` on `x ≥ 0` is covered by a base strip `[0, x₀]×[0, f(r)]` (`x₀ = V/f(r)`; the
//! part beyond `r` stands for the tail) and boxes `[0, x_i]×[f(x_i), f(x_{i+1})]`, `x₁ = r`,
//! `x_{i+1} = f⁻¹(f(x_i) + V/x_i)`, `x_N = 0`. `r` is the root of "the last box ends exactly at
//! `f(0) = 1`", found here by bisection (≈ 3.6541528853610088, Doornik's value, checked by a
//! test) with `V = r·f(r) + ∫_r^∞ f`. A sample picks a layer `i` uniformly (8 bits), a sign (1
//! bit) and `x = U·x_i` (53 bits, `U ∈ [0,1)`): a point uniform in the layer; it is returned when
//! it lies under `f` — at once if `x < x_{i+1}` (99% of draws), after a vertical uniform in the
//! wedge otherwise, or by Marsaglia's exact tail sampler (`r + a`, `a = −ln U₁/r` accepted when
//! `−2 ln U₂ > a²`) beyond `r` in the base strip — and otherwise rejected and redrawn. The
//! accepted `|x|` therefore has density ∝ `f` on `[0, ∞)`: the standard half-normal; with the
//! independent sign, `N(0, 1)`. Checked by Kolmogorov–Smirnov and tail χ² tests (with a
//! power check: a 10% wrong scale is rejected) in this file and in `tests/ldp_normal.rs`.

use std::sync::OnceLock;

use rand::Rng;

use crate::rng::chacha;

/// Number of ziggurat layers (8 bits of each word pick one).
pub const LAYERS: usize = 256;

/// Words drawn from the generator per block.
const BLOCK: usize = 128;

/// `2⁻⁵³`: a 53-bit integer `m` stands for `U = m·2⁻⁵³ ∈ [0, 1)`.
const TWO_M53: f64 = 1.0 / (1u64 << 53) as f64;

/// The fast-path data of one layer, side by side so that one cache line serves both: the
/// acceptance threshold on the 53-bit integer `m` and the layer width pre-scaled by `2⁻⁵³`.
#[derive(Debug, Clone, Copy, Default)]
struct Layer {
    /// `⌈(x_{i+1}/x_i)·2⁵³⌉`: `m < k ⟺ m·2⁻⁵³ < x_{i+1}/x_i` exactly (multiplying by `2⁵³` is
    /// exact, and for an integer `m`, `m < y ⟺ m < ⌈y⌉`).
    k: u64,
    /// `x_i·2⁻⁵³` (exact): `m as f64 · xs = (m·2⁻⁵³)·x_i` bit for bit (scaling by a power of two
    /// commutes with rounding).
    xs: f64,
}

/// The ziggurat of `f(x) = e^{−x²/2}` with [`LAYERS`] layers.
#[derive(Debug)]
pub struct Ziggurat {
    /// Right edge of the tail, `x₁ = r`.
    pub r: f64,
    /// Common area of the layers, `V = r·f(r) + ∫_r^∞ f`.
    pub v: f64,
    /// Layer widths `x_0 > x_1 = r > … > x_N = 0`.
    pub x: [f64; LAYERS + 1],
    /// `f(x_i)` (`f(x_0)` is set to 0: the bottom of the base strip).
    pub f: [f64; LAYERS + 1],
    /// `x_{i+1}/x_i`: the fast-path threshold on `U`.
    ratio: [f64; LAYERS],
    /// The fast path's view of `ratio` and `x`.
    fast: [Layer; LAYERS],
}

// Every transcendental function below is the `libm` crate's (a software implementation, the same
// bits on every machine), not the platform's: the tables and the samples are then a function of
// the random words alone, which the public Householder vectors of the rotation need
// ([`crate::mechanism::local::rotation`], regenerated bit for bit from a seed on any machine).

fn f(x: f64) -> f64 {
    libm::exp(-0.5 * x * x)
}

fn f_inv(y: f64) -> f64 {
    libm::sqrt((-2.0 * libm::log(y)).max(0.0))
}

/// `∫_r^∞ e^{−x²/2} dx = √(π/2)·erfc(r/√2)`.
fn tail_area(r: f64) -> f64 {
    libm::sqrt(0.5 * std::f64::consts::PI) * libm::erfc(r * std::f64::consts::FRAC_1_SQRT_2)
}

/// Build the layers from `r`; returns the top reached by the last layer, `f(x_{N−1}) + V/x_{N−1}`
/// (`> 1` as soon as a layer overshoots `f(0)`, i.e. `r` too small), and the widths.
fn layers(r: f64) -> (f64, Vec<f64>) {
    let v = r * f(r) + tail_area(r);
    let mut x = vec![0.0; LAYERS + 1];
    x[0] = v / f(r);
    x[1] = r;
    for i in 1..LAYERS {
        let y = f(x[i]) + v / x[i];
        if i == LAYERS - 1 || y >= 1.0 {
            return (if i == LAYERS - 1 { y } else { 2.0 }, x);
        }
        x[i + 1] = f_inv(y);
    }
    unreachable!("the loop returns at i = LAYERS − 1")
}

impl Ziggurat {
    /// Solve for `r` by bisection on `[2, 5]` (the top reached decreases in `r`) and tabulate.
    pub fn build() -> Ziggurat {
        let (mut lo, mut hi) = (2.0f64, 5.0f64);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if mid <= lo || mid >= hi {
                break;
            }
            if layers(mid).0 > 1.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let r = hi; // the smallest r whose last layer does not overshoot f(0)
        let (_, mut x) = layers(r);
        x[LAYERS] = 0.0;
        let v = r * f(r) + tail_area(r);
        let mut xs = [0.0; LAYERS + 1];
        xs.copy_from_slice(&x);
        let mut fx = [0.0; LAYERS + 1];
        for (fi, xi) in fx.iter_mut().zip(&xs) {
            *fi = f(*xi);
        }
        fx[0] = 0.0;
        let mut ratio = [0.0; LAYERS];
        let mut fast = [Layer::default(); LAYERS];
        for (i, (q, l)) in ratio.iter_mut().zip(fast.iter_mut()).enumerate() {
            *q = xs[i + 1] / xs[i];
            // q < 1, so q·2⁵³ < 2⁵³ is exact and its ceiling fits the 53-bit range.
            l.k = (*q * (1u64 << 53) as f64).ceil() as u64;
            l.xs = xs[i] * TWO_M53;
        }
        Ziggurat {
            r,
            v,
            x: xs,
            f: fx,
            ratio,
            fast,
        }
    }

    /// The tables, built once per process.
    pub fn get() -> &'static Ziggurat {
        static Z: OnceLock<Ziggurat> = OnceLock::new();
        Z.get_or_init(Ziggurat::build)
    }
}

/// A generator the bulk samplers take their 64-bit words from, a block at a time. The default
/// is `fill_bytes`; `rand_chacha::ChaCha20Rng` (the noise and public-map generator of every
/// mechanism) uses dprp's multi-block ChaCha20 ([`crate::privacy::chacha`]), which returns the
/// same words and leaves the generator in the same state, only faster.
pub trait WordRng: Rng {
    /// Fill `out` with the next words (word `i` from bytes `8i..8i+8`, little-endian), exactly
    /// as `fill_bytes` on the bytes of `out` would.
    fn fill_words(&mut self, out: &mut [u64]) {
        self.fill_bytes(bytemuck::cast_slice_mut(out));
        if cfg!(target_endian = "big") {
            out.iter_mut().for_each(|w| *w = u64::from_le(*w));
        }
    }

    /// The ChaCha20 generator behind `self`, if it is one: the bulk samplers then compute its
    /// keystream ahead in long runs without moving it, and set its position once at the end —
    /// the same words and the same final state as drawing `BLOCK` (128) words at a time through
    /// [`WordRng::fill_words`], without a round trip through `rand_chacha` per block.
    fn as_chacha20(&mut self) -> Option<&mut rand_chacha::ChaCha20Rng> {
        None
    }
}

impl WordRng for rand_chacha::ChaCha20Rng {
    fn fill_words(&mut self, out: &mut [u64]) {
        chacha::fill_from_rng(self, out);
    }
    fn as_chacha20(&mut self) -> Option<&mut rand_chacha::ChaCha20Rng> {
        Some(self)
    }
}
impl WordRng for rand_chacha::ChaCha12Rng {}
impl WordRng for rand_chacha::ChaCha8Rng {}
impl<R: WordRng + ?Sized> WordRng for &mut R {
    fn fill_words(&mut self, out: &mut [u64]) {
        (**self).fill_words(out);
    }
    fn as_chacha20(&mut self) -> Option<&mut rand_chacha::ChaCha20Rng> {
        (**self).as_chacha20()
    }
}

/// A generator read through `fill_bytes` only: a [`WordRng`] without the multi-block keystream or
/// the read-ahead, for comparing the bulk paths with the plain reading (the tests here,
/// `benches/ldp.rs`).
pub struct FillBytesOnly<R>(pub R);

impl<R: Rng> rand::TryRng for FillBytesOnly<R> {
    type Error = core::convert::Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        Ok(self.0.next_u32())
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        Ok(self.0.next_u64())
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        self.0.fill_bytes(dst);
        Ok(())
    }
}

impl<R: Rng> WordRng for FillBytesOnly<R> {}

/// Words computed per read-ahead of a ChaCha20 keystream (8 KiB: sixteen eight-block runs).
const AHEAD: usize = 8 * BLOCK;

/// Where a ChaCha20 read-ahead stands (positions in 32-bit keystream words).
struct Ahead {
    key: [u32; 8],
    stream: u64,
    /// Position of the first word handed out.
    start: u128,
    /// Position of the word after the last one computed into the buffer.
    end: u128,
}

/// The random words of one bulk draw, in order. Semantically the words come [`BLOCK`] at a time
/// from [`WordRng::fill_words`], and the unread rest of the last block is discarded. For a
/// ChaCha20 generator ([`WordRng::as_chacha20`]) the same words are computed up to `N` at a
/// time in eight-block-aligned runs, and when the draw ends the generator is moved to where the
/// block-at-a-time reading would have left it (past `BLOCK·⌈taken/BLOCK⌉` words), so the two
/// readings are indistinguishable (checked by a test) and the public maps regenerate unchanged.
struct Words<'a, R: WordRng + ?Sized, const N: usize> {
    rng: &'a mut R,
    ahead: Option<Ahead>,
    buf: [u64; N],
    /// Next unread word of `buf`.
    pos: usize,
    /// Words of `buf` filled.
    len: usize,
    /// Words handed out before `buf`'s first.
    before: u64,
    /// Words the caller still expects to need (a hint that sizes the read-ahead).
    want: usize,
}

impl<'a, R: WordRng + ?Sized, const N: usize> Words<'a, R, N> {
    /// A reader for a draw that expects to take about `want` words.
    fn new(rng: &'a mut R, want: usize) -> Self {
        let ahead = rng.as_chacha20().map(|c| {
            let pos = c.get_word_pos();
            Ahead {
                key: chacha::key_words(&c.get_seed()),
                stream: c.get_stream(),
                start: pos,
                end: pos,
            }
        });
        Words {
            rng,
            ahead,
            buf: [0; N],
            pos: 0,
            len: 0,
            before: 0,
            want,
        }
    }

    fn refill(&mut self) {
        self.before += self.len as u64;
        self.pos = 0;
        match &mut self.ahead {
            None => {
                self.rng.fill_words(&mut self.buf[..BLOCK]);
                self.len = BLOCK;
            }
            Some(a) => {
                // Enough for the words still wanted (plus the ≈1.2% the slow path takes), in
                // whole blocks, at most N; ending on an eight-block boundary (128 keystream
                // words) when the start allows, so that the next run is computed in place.
                let mut n = (self.want + self.want / 32 + 16).div_ceil(BLOCK) * BLOCK;
                n = n.clamp(BLOCK, N);
                if a.end % 2 == 0 {
                    let end = a.end + 2 * n as u128;
                    let over = (end % 128) as usize / 2;
                    if n - over >= BLOCK / 2 {
                        n -= over;
                    }
                }
                let words: &mut [u32] = bytemuck::cast_slice_mut(&mut self.buf[..n]);
                chacha::fill(&a.key, a.stream, a.end, words);
                if cfg!(target_endian = "big") {
                    words.iter_mut().for_each(|w| *w = w.swap_bytes());
                }
                a.end = a.end.wrapping_add(2 * n as u128);
                self.len = n;
            }
        }
    }

    #[inline]
    fn next(&mut self) -> u64 {
        if self.pos == self.len {
            self.refill();
        }
        let w = self.buf[self.pos];
        self.pos += 1;
        w
    }

    /// Uniform on `(0, 1]` (53 bits; never 0, so its log is finite).
    #[inline]
    fn open0(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 * TWO_M53
    }
}

impl<R: WordRng + ?Sized, const N: usize> Drop for Words<'_, R, N> {
    fn drop(&mut self) {
        if let Some(a) = &self.ahead {
            let taken = self.before + self.pos as u64;
            let blocks = taken.div_ceil(BLOCK as u64) as u128;
            let pos = a.start.wrapping_add(blocks * 2 * BLOCK as u128) & ((1u128 << 68) - 1);
            if let Some(c) = self.rng.as_chacha20() {
                if blocks > 0 {
                    c.set_word_pos(pos);
                }
            }
        }
    }
}

/// The fast path (≈99% of words): `Some(±U·x_i)` when the point lies inside the rectangle of
/// layer `i` (bits 0–7), sign from bit 8 (XOR on the sign bit, no branch), `U = m·2⁻⁵³` with
/// `m` bits 11–63. The comparison is on integers ([`Layer::k`]) and the product uses the
/// pre-scaled width ([`Layer::xs`]); both are exact rewrites, so the value is bit for bit
/// `±U·x_i` as in the module documentation.
#[inline(always)]
fn fast(t: &[Layer; LAYERS], word: u64) -> Option<f64> {
    let l = t[(word & 0xff) as usize];
    let m = word >> 11;
    if m < l.k {
        // m < 2⁵³: the signed conversion is exact and a single instruction.
        let x = (m as i64 as f64) * l.xs;
        Some(f64::from_bits(x.to_bits() ^ ((word & 0x100) << 55)))
    } else {
        None
    }
}

/// How far (absolutely) `y` must clear a bound of `f` before [`squeeze`] decides. The bounds are
/// computed from the tabulated `f(x_i)` in a few operations (error ≲ 10⁻¹⁵) and the exact test
/// compares with `libm::exp(−x²/2)` (error ≲ 10⁻¹⁵ relative, `f ≤ 1`), so a margin of 10⁻¹²
/// leaves only a band of width ≈ 10⁻⁹ of the wedge's height (≥ 1.2·10⁻³) to the exact test.
const SQUEEZE_MARGIN: f64 = 1e-12;

/// Decide `y < f(x)` in the wedge of layer `i` (`x_{i+1} ≤ x ≤ x_i`) without `exp` when the
/// point is clear of the curve: on a segment where `f` is convex (`x_{i+1} ≥ 1`) it lies below
/// the chord and above the tangents at both ends; where it is concave (`x_i ≤ 1`), the reverse.
/// `Some(answer)` only when `y` clears the bound by [`SQUEEZE_MARGIN`], so the answer is the
/// exact test's (the draws stay a function of the words alone, bit for bit — checked by a test
/// that runs both on every wedge point of a long stream); `None` otherwise (and on the layer
/// whose segment contains the inflection point 1).
#[inline]
fn squeeze(z: &Ziggurat, i: usize, x: f64, y: f64) -> Option<bool> {
    let (xa, xb, fa, fb) = (z.x[i], z.x[i + 1], z.f[i], z.f[i + 1]);
    let chord = fa + (fb - fa) * ((xa - x) / (xa - xb));
    let ta = fa * (1.0 + xa * (xa - x));
    let tb = fb * (1.0 + xb * (xb - x));
    let (lower, upper) = if xb >= 1.0 {
        (ta.max(tb), chord)
    } else if xa <= 1.0 {
        (chord, ta.min(tb))
    } else {
        return None;
    };
    if y < lower - SQUEEZE_MARGIN {
        Some(true)
    } else if y > upper + SQUEEZE_MARGIN {
        Some(false)
    } else {
        None
    }
}

/// The rest of a draw whose first word missed the rectangle: the wedge or tail of that word's
/// layer, then fresh words until one is accepted.
#[cold]
#[inline(never)]
fn slow<R: WordRng + ?Sized, const N: usize>(
    z: &Ziggurat,
    w: &mut Words<'_, R, N>,
    mut word: u64,
) -> f64 {
    loop {
        let i = (word & 0xff) as usize;
        let sign = if (word >> 8) & 1 == 1 { -1.0 } else { 1.0 };
        let u = (word >> 11) as f64 * TWO_M53;
        let x = u * z.x[i];
        if u < z.ratio[i] {
            return sign * x;
        }
        if i == 0 {
            // Beyond r in the base strip: the exact tail sampler.
            loop {
                let a = -libm::log(w.open0()) / z.r;
                let b = -libm::log(w.open0());
                if 2.0 * b > a * a {
                    return sign * (z.r + a);
                }
            }
        }
        // Wedge of layer i: accept when a vertical uniform falls under the curve.
        let y = z.f[i] + w.open0() * (z.f[i + 1] - z.f[i]);
        let under = match squeeze(z, i, x, y) {
            Some(decided) => decided,
            None => y < f(x),
        };
        if under {
            return sign * x;
        }
        word = w.next();
    }
}

/// Draw `out.len()` normals into `out`, calling `each(i, x)` for every `out[i] = x`. The words
/// of a block are taken in one tight loop while they hit the fast path; a miss leaves the loop
/// for [`slow`] (which may take further words) and the loop resumes after it. The words are
/// consumed in order, one per fast-path sample, as in the module documentation.
#[inline(always)]
fn fill_each<R: WordRng + ?Sized>(rng: &mut R, out: &mut [f64], each: impl FnMut(usize, f64)) {
    // A short draw reads ahead into a 1 KiB buffer, a long one into 8 KiB (the buffer is zeroed
    // per call, which costs more than a short draw's keystream); the words are the same.
    if out.len() <= 2 * BLOCK {
        fill_each_n::<R, BLOCK>(rng, out, each)
    } else {
        fill_each_n::<R, AHEAD>(rng, out, each)
    }
}

/// [`fill_each`] with a read-ahead buffer of `N` words.
#[inline(always)]
fn fill_each_n<R: WordRng + ?Sized, const N: usize>(
    rng: &mut R,
    out: &mut [f64],
    mut each: impl FnMut(usize, f64),
) {
    let z = Ziggurat::get();
    let t = &z.fast;
    let n = out.len();
    let mut w = Words::<R, N>::new(rng, n);
    let mut i = 0;
    while i < n {
        if w.pos == w.len {
            w.want = n - i;
            w.refill();
        }
        let take = (w.len - w.pos).min(n - i);
        let mut done = take;
        for (j, (o, &word)) in out[i..i + take]
            .iter_mut()
            .zip(&w.buf[w.pos..w.pos + take])
            .enumerate()
        {
            match fast(t, word) {
                Some(x) => {
                    *o = x;
                    each(i + j, x);
                }
                None => {
                    done = j;
                    break;
                }
            }
        }
        w.pos += done;
        i += done;
        if done < take {
            let word = w.buf[w.pos];
            w.pos += 1;
            let x = slow(z, &mut w, word);
            out[i] = x;
            each(i, x);
            i += 1;
        }
    }
}

/// Fill `out` with i.i.d. `N(0, 1)` draws (see the module documentation), taking the random
/// words from `rng` in blocks.
pub fn fill_standard_normal<R: WordRng + ?Sized>(rng: &mut R, out: &mut [f64]) {
    fill_each(rng, out, |_, _| {});
}

/// Fill `out` with i.i.d. `N(0, 1)` draws and return `(Σ out_i·u_i, Σ out_i²)`, computed while
/// the values are in registers (`u.len()` must equal `out.len()`; extra entries of either are
/// ignored).
pub fn fill_standard_normal_dot<R: WordRng + ?Sized>(
    rng: &mut R,
    out: &mut [f64],
    u: &[f64],
) -> (f64, f64) {
    debug_assert_eq!(out.len(), u.len());
    let n = out.len().min(u.len());
    let u = &u[..n];
    let (mut dot, mut sq) = (0.0, 0.0);
    fill_each(rng, &mut out[..n], |i, g| {
        dot += g * u[i];
        sq += g * g;
    });
    (dot, sq)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ChaCha20 read-ahead ([`Words`] with [`WordRng::as_chacha20`]) is the block-at-a-time
    /// reading: the same draws bit for bit and the generator left at the same position, for
    /// lengths around the block and read-ahead sizes and from odd and even, aligned and
    /// unaligned starting positions. Power: a reader that discarded the rest of its run (or
    /// kept the rest of a block) would leave the generator elsewhere and fail the last check.
    #[test]
    fn chacha_read_ahead_is_the_block_reading() {
        use rand::SeedableRng;
        for (n, skip) in [
            (1usize, 0usize),
            (16, 3),
            (127, 64),
            (128, 1),
            (129, 0),
            (200, 5),
            (256, 0),
            (300, 9),
            (1000, 7),
            (1023, 128),
            (1025, 2),
            (5000, 255),
            (40_000, 1),
        ] {
            let mut a = rand_chacha::ChaCha20Rng::seed_from_u64(n as u64);
            a.set_stream(skip as u64);
            for _ in 0..skip {
                a.next_u32();
            }
            let mut b = FillBytesOnly(a.clone());
            let (mut x, mut y) = (vec![0f64; n], vec![0f64; n]);
            fill_standard_normal(&mut a, &mut x);
            fill_standard_normal(&mut b, &mut y);
            assert!(
                x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits()),
                "n = {n}, skip = {skip}"
            );
            assert_eq!(
                a.get_word_pos(),
                b.0.get_word_pos(),
                "n = {n}, skip = {skip}"
            );
            // Two draws in a row (the rotation's Householder vectors) stay in step too.
            fill_standard_normal(&mut a, &mut x[..n / 2]);
            fill_standard_normal(&mut b, &mut y[..n / 2]);
            assert_eq!(x[..n / 2], y[..n / 2]);
            assert_eq!(a.next_u64(), b.0.next_u64());
        }
    }

    /// The squeeze never contradicts the exact test: on 2·10⁶ wedge points (uniform over every
    /// layer's wedge, plus points within 10⁻¹³ of the curve) it either agrees or abstains; and it
    /// decides most of them (power: a squeeze that abstained everywhere, or whose bounds were
    /// swapped, fails one of the checks).
    #[test]
    fn squeeze_agrees_with_the_exact_test() {
        use rand::{RngExt, SeedableRng};
        let z = Ziggurat::get();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let (mut decided, mut total) = (0u64, 0u64);
        for n in 0..2_000_000u64 {
            let i = 1 + (n % (LAYERS as u64 - 1)) as usize;
            let u = rng.random::<f64>();
            let x = z.x[i + 1] + u * (z.x[i] - z.x[i + 1]);
            let y = if n % 7 == 0 {
                // right at the curve, where only the exact test may decide
                f(x) + (rng.random::<f64>() - 0.5) * 2e-13
            } else {
                z.f[i] + rng.random::<f64>() * (z.f[i + 1] - z.f[i])
            };
            total += 1;
            if let Some(d) = squeeze(z, i, x, y) {
                decided += 1;
                assert_eq!(d, y < f(x), "layer {i}, x {x}, y {y}");
            }
        }
        let share = decided as f64 / total as f64;
        assert!(share > 0.8, "the squeeze decided only {share}");
    }

    #[test]
    fn r_and_v_are_doorniks() {
        // Doornik (2005), 256 layers: r = 3.6541528853610088, V = 0.00492867323399.
        let z = Ziggurat::build();
        assert!((z.r - 3.654_152_885_361_009).abs() < 1e-12, "r = {}", z.r);
        assert!((z.v - 0.004_928_673_233_99).abs() < 1e-13, "V = {}", z.v);
        // Every layer has area V: x_i·(f(x_{i+1}) − f(x_i)) for the boxes, x₀·f(r) for the base.
        assert!((z.x[0] * f(z.r) - z.v).abs() < 1e-15);
        for i in 1..LAYERS {
            let a = z.x[i] * (f(z.x[i + 1]) - f(z.x[i]));
            assert!((a - z.v).abs() < 1e-9 * z.v, "layer {i}: {a}");
        }
        assert!(z.x.windows(2).all(|p| p[0] > p[1]));
        // Power: r from the 128-layer ziggurat (3.442619855899) does not close 256 layers.
        assert!((layers(3.442_619_855_899).0 - 1.0).abs() > 1e-3);
    }

    /// The sampler as the module documentation states it, one word at a time with the float
    /// comparison `U < x_{i+1}/x_i` and the product `U·x_i` (the code before the integer
    /// thresholds and the block loop).
    fn reference(words: &[u64]) -> Vec<f64> {
        let z = Ziggurat::get();
        let mut it = words.iter().copied();
        let mut next = || it.next().expect("enough words");
        let open0 = |w: u64| ((w >> 11) + 1) as f64 * TWO_M53;
        let mut out = Vec::new();
        'draws: while out.len() < 3000 {
            let mut word = next();
            loop {
                let i = (word & 0xff) as usize;
                let sign = if (word >> 8) & 1 == 1 { -1.0 } else { 1.0 };
                let u = (word >> 11) as f64 * TWO_M53;
                let x = u * z.x[i];
                if u < z.ratio[i] {
                    out.push(sign * x);
                    continue 'draws;
                }
                if i == 0 {
                    loop {
                        let a = -libm::log(open0(next())) / z.r;
                        let b = -libm::log(open0(next()));
                        if 2.0 * b > a * a {
                            out.push(sign * (z.r + a));
                            continue 'draws;
                        }
                    }
                }
                let y = z.f[i] + open0(next()) * (z.f[i + 1] - z.f[i]);
                if y < f(x) {
                    out.push(sign * x);
                    continue 'draws;
                }
                word = next();
            }
        }
        out
    }

    #[test]
    fn block_loop_equals_the_reference_bit_for_bit() {
        use rand::SeedableRng;
        use rand_chacha::ChaCha20Rng;
        // Words from a fixed stream, plus hand-made words at the edges of the fast path: every
        // layer with m = k − 1 (last accepted) and m = k (first rejected) and both signs.
        let z = Ziggurat::get();
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let mut words = vec![0u64; 20_000];
        rng.fill_words(&mut words);
        for (i, l) in z.fast.iter().enumerate() {
            for m in [l.k - 1, l.k] {
                for s in [0u64, 0x100] {
                    words.insert(3 * i, (m << 11) | s | i as u64);
                }
            }
        }
        let want = reference(&words);
        // The same words through the block loop, fed by a generator that replays them.
        struct Replay(Vec<u64>, usize);
        impl rand::TryRng for Replay {
            type Error = core::convert::Infallible;
            fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
                unreachable!("the sampler takes whole words")
            }
            fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
                self.1 += 1;
                Ok(self.0[self.1 - 1])
            }
            fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
                for c in dst.chunks_mut(8) {
                    self.1 += 1;
                    c.copy_from_slice(&self.0[self.1 - 1].to_le_bytes()[..c.len()]);
                }
                Ok(())
            }
        }
        impl WordRng for Replay {}
        let mut got = vec![0f64; want.len()];
        fill_standard_normal(&mut Replay(words.clone(), 0), &mut got);
        let (a, b): (Vec<u64>, Vec<u64>) = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (g.to_bits(), w.to_bits()))
            .unzip();
        assert_eq!(a, b);
        // The integer thresholds are exactly the float comparison: for every layer the last
        // accepted m is below x_{i+1}/x_i and the first rejected one is not (m·2⁻⁵³ is exact;
        // the top layer, x_N = 0, accepts none: k = 0).
        let edge_ok = |k: u64, q: f64| {
            k.checked_sub(1).is_none_or(|a| (a as f64 * TWO_M53) < q) && (k as f64 * TWO_M53) >= q
        };
        assert!(z.fast.iter().zip(&z.ratio).all(|(l, &q)| edge_ok(l.k, q)));
        assert_eq!(z.fast[LAYERS - 1].k, 0);
        // Power: thresholds one lower (⌊·⌋ instead of ⌈·⌉) or one higher fail the same check.
        let ok_lower = |l: &Layer, q: f64| l.k.checked_sub(1).is_some_and(|k| edge_ok(k, q));
        assert!(z.fast.iter().zip(&z.ratio).all(|(l, &q)| !ok_lower(l, q)));
        assert!(z
            .fast
            .iter()
            .zip(&z.ratio)
            .all(|(l, &q)| !edge_ok(l.k + 1, q)));
    }
}
