//! Bulk standard normals for the local mechanisms: the ziggurat method (Marsaglia & Tsang 2000,
//! "The Ziggurat Method for Generating Random Variables", with the tail algorithm of Marsaglia
//! 1964 and the layer layout of Doornik 2005, "An Improved Ziggurat Method to Generate Normal
//! Random Samples") on 64-bit words drawn in blocks from the caller's generator.
//!
//! **Why.** The mechanisms draw one normal per coordinate (PrivUnitG's `g⊥`, PrivUnit2's
//! orthogonal direction), so at d = 10⁶–10⁷ the client's cost is the normal sampler's. Drawing
//! the words with one `fill_bytes` per block (ChaCha20's bulk path) instead of one `next_u64`
//! per sample, and deciding most samples with one multiply and one compare, makes this several
//! times faster than `rand_distr::StandardNormal` through the same ChaCha20 generator
//! (`cargo bench --bench ldp -- normals`). The randomness is unchanged: every bit still comes from
//! the caller's generator (ChaCha20 seeded from the OS in the mechanisms).
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

use crate::privacy::special::ln_norm_sf;

/// Number of ziggurat layers (8 bits of each word pick one).
pub const LAYERS: usize = 256;

/// Words drawn from the generator per block.
const BLOCK: usize = 128;

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
}

fn f(x: f64) -> f64 {
    (-0.5 * x * x).exp()
}

fn f_inv(y: f64) -> f64 {
    (-2.0 * y.ln()).max(0.0).sqrt()
}

/// `∫_r^∞ e^{−x²/2} dx = √(2π)·Φ̄(r)`.
fn tail_area(r: f64) -> f64 {
    (2.0 * std::f64::consts::PI).sqrt() * ln_norm_sf(r).exp()
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
        for (i, q) in ratio.iter_mut().enumerate() {
            *q = xs[i + 1] / xs[i];
        }
        Ziggurat {
            r,
            v,
            x: xs,
            f: fx,
            ratio,
        }
    }

    /// The tables, built once per process.
    pub fn get() -> &'static Ziggurat {
        static Z: OnceLock<Ziggurat> = OnceLock::new();
        Z.get_or_init(Ziggurat::build)
    }
}

/// A block of random words from the caller's generator.
struct Words<'a, R: Rng + ?Sized> {
    rng: &'a mut R,
    buf: [u64; BLOCK],
    pos: usize,
}

impl<'a, R: Rng + ?Sized> Words<'a, R> {
    fn new(rng: &'a mut R) -> Self {
        Words {
            rng,
            buf: [0; BLOCK],
            pos: BLOCK,
        }
    }

    #[inline(always)]
    fn next(&mut self) -> u64 {
        if self.pos == BLOCK {
            self.rng.fill_bytes(bytemuck::cast_slice_mut(&mut self.buf));
            self.pos = 0;
        }
        let w = self.buf[self.pos];
        self.pos += 1;
        w
    }

    /// Uniform on `(0, 1]` (53 bits; never 0, so its log is finite).
    #[inline]
    fn open0(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// The fast path (≈99% of words): `Some(±U·x_i)` when the point lies inside the rectangle of
/// layer `i`. The sign is bit 8, applied by XOR on the sign bit (no branch).
#[inline(always)]
fn fast(z: &Ziggurat, word: u64) -> Option<f64> {
    let i = (word & 0xff) as usize;
    let u = (word >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    if u < z.ratio[i] {
        let sign = ((word >> 8) & 1) << 63;
        Some(f64::from_bits((u * z.x[i]).to_bits() ^ sign))
    } else {
        None
    }
}

/// The rest of a draw whose first word missed the rectangle: the wedge or tail of that word's
/// layer, then fresh words until one is accepted.
#[cold]
#[inline(never)]
fn slow<R: Rng + ?Sized>(z: &Ziggurat, w: &mut Words<'_, R>, mut word: u64) -> f64 {
    loop {
        let i = (word & 0xff) as usize;
        let sign = if (word >> 8) & 1 == 1 { -1.0 } else { 1.0 };
        let u = (word >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        let x = u * z.x[i];
        if u < z.ratio[i] {
            return sign * x;
        }
        if i == 0 {
            // Beyond r in the base strip: the exact tail sampler.
            loop {
                let a = -w.open0().ln() / z.r;
                let b = -w.open0().ln();
                if 2.0 * b > a * a {
                    return sign * (z.r + a);
                }
            }
        }
        // Wedge of layer i: accept when a vertical uniform falls under the curve.
        let y = z.f[i] + w.open0() * (z.f[i + 1] - z.f[i]);
        if y < f(x) {
            return sign * x;
        }
        word = w.next();
    }
}

/// One `N(0,1)` draw.
#[inline(always)]
fn sample<R: Rng + ?Sized>(z: &Ziggurat, w: &mut Words<'_, R>) -> f64 {
    let word = w.next();
    match fast(z, word) {
        Some(x) => x,
        None => slow(z, w, word),
    }
}

/// Fill `out` with i.i.d. `N(0, 1)` draws (see the module documentation), taking the random
/// words from `rng` in blocks.
pub fn fill_standard_normal<R: Rng + ?Sized>(rng: &mut R, out: &mut [f64]) {
    let z = Ziggurat::get();
    let mut w = Words::new(rng);
    for o in out.iter_mut() {
        *o = sample(z, &mut w);
    }
}

/// Fill `out` with i.i.d. `N(0, 1)` draws and return `(Σ out_i·u_i, Σ out_i²)`, computed while
/// the values are in cache (`u.len()` must equal `out.len()`).
pub fn fill_standard_normal_dot<R: Rng + ?Sized>(
    rng: &mut R,
    out: &mut [f64],
    u: &[f64],
) -> (f64, f64) {
    debug_assert_eq!(out.len(), u.len());
    let z = Ziggurat::get();
    let mut w = Words::new(rng);
    let (mut dot, mut sq) = (0.0, 0.0);
    for (o, ui) in out.iter_mut().zip(u) {
        let g = sample(z, &mut w);
        *o = g;
        dot += g * ui;
        sq += g * g;
    }
    (dot, sq)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
