//! The first `k` rows of a Haar-distributed rotation of `R^d` as a product of `k` Householder
//! reflections (Stewart 1980, "The efficient generation of random orthogonal matrices with an
//! application to condition estimators"): `O(dk)` time and `O(d)` memory per product, the
//! reflections regenerated from the public seed on the fly. Used by ProjUnit's rotation kind
//! ([`super::projunit`]), `W = √(d/k)·Q_kᵀ` with `Q_k = Q·[e₁ … e_k]`.
//!
//! **Construction.** For `j = 1..k` draw `x_j ~ N(0, I_{d−j+1})` (coordinates `j..d`), let
//! `s_j = sign(x_{j,1})` (`+1` for 0) and `u_j = x_j + s_j‖x_j‖e₁`; the reflection
//! `H_j = I − u_j u_jᵀ/(‖x_j‖(‖x_j‖ + |x_{j,1}|))` acts on coordinates `j..d` and maps `e_j` to
//! `−s_j·x_j/‖x_j‖` (the numerically stable choice of sign: `‖u_j‖² ≥ ‖x_j‖²`, no cancellation).
//! Then `Q e_j = H₁H₂⋯H_k·(−s_j e_j)` for `j ≤ k`.
//!
//! **Why this is exactly Haar.** Induction on the dimension: a Haar `Q ∈ O(d)` has a uniform first
//! column `q`, and given `q` the remaining columns are Haar in `q^⊥`. Let `M = H₁·diag(−s₁, I)`:
//! `M e₁ = x₁/‖x₁‖` is uniform on the sphere and `M` maps `e₁^⊥` isometrically onto `q^⊥`. With
//! `Q'` Haar on `e₁^⊥ ≅ R^{d−1}` (independent of `x₁`), `M·diag(1, Q')` has first column `q` and,
//! given `q`, remaining columns `M Q' e_i` that are Haar in `q^⊥` (Haar measure is invariant under
//! the fixed isometry `M`). Recursing on `Q'` with `x₂, …` and noting that `H_{j+1}, …` leave `e_j`
//! fixed gives the formula for the first `k` columns; the signs `diag(−s_j)` commute past the later
//! reflections. **The sign matters**: without `−s_j` the first coordinate of `Q e₁` would always
//! be `−|q₁|` — the columns would not be Haar (the tests reject that variant). The product is
//! orthogonal by construction, so `W Wᵀ = (d/k)·I_k` up to rounding.
//!
//! **Randomness layout** (stream 5 of the public seed, see [`crate::projection`]): `x_j`
//! (0-based `j`) starts at 32-bit word `j·4·⌈d/2⌉` of stream 5 (the slot of a length-`d` vector,
//! Box–Muller pairs on two 64-bit words as in the Gaussian kinds) and uses its first `d − j`
//! entries. `ChaCha20Rng::set_word_pos` seeks there directly, so `Wᵀz` applies the reflections in
//! reverse order without storing them.

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use crate::error::{Error, Result};
use crate::projection::{gaussian_fill_f64, Seed};

/// The ChaCha20 stream of the reflection vectors.
pub const ROTATION_STREAM: u64 = 5;

/// `√(d/k)·Q_kᵀ` for `Q` Haar on `O(d)`, regenerated from the public seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HaarRows {
    d: usize,
    k: usize,
    seed: Seed,
}

/// One regenerated reflection: `u` in the caller's buffer (length `d − j`), `1/β` and the sign.
struct Reflection {
    inv_beta: f64,
    sign: f64,
}

impl HaarRows {
    /// The `k×d` map of `seed`; needs `1 ≤ k ≤ d`.
    pub fn new(d: usize, k: usize, seed: Seed) -> Result<HaarRows> {
        if k == 0 || k > d {
            return Err(Error::param(
                "--k",
                format!("a rotation needs 1 ≤ k ≤ d = {d}, got k = {k}"),
            ));
        }
        Ok(HaarRows { d, k, seed })
    }

    /// Input dimension.
    pub fn d(&self) -> usize {
        self.d
    }
    /// Output dimension.
    pub fn k(&self) -> usize {
        self.k
    }
    /// The public seed.
    pub fn seed(&self) -> Seed {
        self.seed
    }

    fn rng(&self) -> ChaCha20Rng {
        let mut rng = ChaCha20Rng::from_seed(self.seed.0);
        rng.set_stream(ROTATION_STREAM);
        rng
    }

    /// Regenerate `u_j` into `buf[..d − j]`.
    fn reflection(&self, rng: &mut ChaCha20Rng, j: usize, buf: &mut [f64]) -> Result<Reflection> {
        let slot = 4 * self.d.div_ceil(2) as u128;
        rng.set_word_pos(j as u128 * slot);
        let u = &mut buf[..self.d - j];
        gaussian_fill_f64(rng, u);
        let norm = u.iter().map(|x| x * x).sum::<f64>().sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            return Err(Error::param(
                "projection seed",
                format!("reflection {j} of the rotation is degenerate (use another seed)"),
            ));
        }
        let sign = if u[0] >= 0.0 { 1.0 } else { -1.0 };
        let beta = norm * (norm + u[0].abs());
        u[0] += sign * norm;
        Ok(Reflection {
            inv_beta: 1.0 / beta,
            sign,
        })
    }

    /// `y ← H y` for `y` the coordinates `j..d`.
    fn reflect(u: &[f64], inv_beta: f64, y: &mut [f64]) {
        let c = u.iter().zip(y.iter()).map(|(a, b)| a * b).sum::<f64>() * inv_beta;
        y.iter_mut().zip(u).for_each(|(b, a)| *b -= c * a);
    }

    fn scale(&self) -> f64 {
        (self.d as f64 / self.k as f64).sqrt()
    }

    /// `Wv = √(d/k)·Q_kᵀv`: the reflections in order, `O(dk)`.
    pub fn apply(&self, v: &[f64]) -> Result<Vec<f64>> {
        if v.len() != self.d {
            return Err(Error::param(
                "projection input",
                format!("has {} coordinates, W has d = {}", v.len(), self.d),
            ));
        }
        let mut y = v.to_vec();
        let mut buf = vec![0f64; self.d];
        let mut rng = self.rng();
        let s = self.scale();
        let mut out = Vec::with_capacity(self.k);
        for j in 0..self.k {
            let r = self.reflection(&mut rng, j, &mut buf)?;
            Self::reflect(&buf[..self.d - j], r.inv_beta, &mut y[j..]);
            // Later reflections act on coordinates > j: (Q_kᵀv)_j = −s_j·(H_j⋯H₁v)_j.
            out.push(-r.sign * y[j] * s);
        }
        Ok(out)
    }

    /// `acc += scale·Wᵀz`: the reflections in reverse order (each regenerated by seeking), `O(dk)`.
    pub fn add_transpose(&self, z: &[f64], scale: f64, acc: &mut [f64]) -> Result<()> {
        if z.len() != self.k {
            return Err(Error::param(
                "projection transpose input",
                format!("has {} coordinates, W has k = {}", z.len(), self.k),
            ));
        }
        if acc.len() != self.d {
            return Err(Error::param(
                "accumulator",
                format!("has {} coordinates, W has d = {}", acc.len(), self.d),
            ));
        }
        let mut y = vec![0f64; self.d];
        let mut buf = vec![0f64; self.d];
        let mut rng = self.rng();
        let s = self.scale() * scale;
        for j in (0..self.k).rev() {
            let r = self.reflection(&mut rng, j, &mut buf)?;
            // Coordinate j is untouched by H_{j+1}, …: set it, then reflect.
            y[j] = -r.sign * z[j] * s;
            Self::reflect(&buf[..self.d - j], r.inv_beta, &mut y[j..]);
        }
        acc.iter_mut().zip(&y).for_each(|(a, b)| *a += b);
        Ok(())
    }

    /// `Wᵀz`.
    pub fn apply_transpose(&self, z: &[f64]) -> Result<Vec<f64>> {
        let mut out = vec![0f64; self.d];
        self.add_transpose(z, 1.0, &mut out)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    //! Haar law at a fixed seed set: single rows against Beta((d−1)/2, (d−1)/2) (signed, so the
    //! sign convention matters) and `‖Q_kᵀx‖²` against Beta(k/2, (d−k)/2) (a joint property of
    //! all `k` rows), each with power checks against a wrong-sign and a single-reflection
    //! construction built from the same reflection vectors.
    use super::*;
    use crate::privacy::special::ln_inc_beta;

    fn seed(i: u64) -> Seed {
        let mut b = [0u8; 32];
        b[..8].copy_from_slice(&i.to_le_bytes());
        b[31] = 0x77;
        Seed(b)
    }

    fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    /// Rows of `W/√(d/k)` (= columns of `Q_k`), through `apply_transpose`.
    fn rows(h: &HaarRows) -> Vec<Vec<f64>> {
        let s = 1.0 / h.scale();
        (0..h.k)
            .map(|j| {
                let mut e = vec![0.0; h.k];
                e[j] = 1.0;
                h.apply_transpose(&e)
                    .unwrap()
                    .into_iter()
                    .map(|x| x * s)
                    .collect()
            })
            .collect()
    }

    #[derive(Clone, Copy, PartialEq)]
    enum Variant {
        Correct,
        NoSign,
        OneReflection,
    }

    /// Columns `Q e_j` built directly from the reflection vectors: the correct formula, the same
    /// without the sign `−s_j`, or every column from `H₁` alone (orthonormal, not Haar).
    fn columns(h: &HaarRows, variant: Variant) -> Vec<Vec<f64>> {
        let mut rng = h.rng();
        let mut refl = Vec::new();
        for j in 0..h.k {
            let mut buf = vec![0.0; h.d];
            let r = h.reflection(&mut rng, j, &mut buf).unwrap();
            buf.truncate(h.d - j);
            refl.push((buf, r));
        }
        (0..h.k)
            .map(|j| {
                let mut y = vec![0.0; h.d];
                y[j] = match variant {
                    Variant::NoSign => 1.0,
                    _ => -refl[j].1.sign,
                };
                let upto = if variant == Variant::OneReflection {
                    0
                } else {
                    j
                };
                for t in (0..=upto).rev() {
                    let (u, r) = &refl[t];
                    HaarRows::reflect(u, r.inv_beta, &mut y[t..]);
                }
                y
            })
            .collect()
    }

    fn beta_cdf(a: f64, b: f64) -> impl Fn(f64) -> f64 {
        move |x: f64| {
            if x <= 0.0 {
                0.0
            } else if x >= 1.0 {
                1.0
            } else {
                ln_inc_beta(x, a, b).unwrap().exp()
            }
        }
    }

    fn ks(samples: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
        let mut s = samples.to_vec();
        s.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let n = s.len() as f64;
        s.iter().enumerate().fold(0.0f64, |d, (i, &x)| {
            let f = cdf(x);
            d.max((f - i as f64 / n).abs())
                .max(((i + 1) as f64 / n - f).abs())
        })
    }

    #[test]
    fn rows_are_orthonormal_and_match_apply() {
        for &(d, k) in &[(2, 1), (2, 2), (7, 3), (16, 16), (33, 10)] {
            let h = HaarRows::new(d, k, seed(d as u64)).unwrap();
            let r = rows(&h);
            for a in 0..k {
                for b in 0..k {
                    let want = if a == b { 1.0 } else { 0.0 };
                    assert!((dot(&r[a], &r[b]) - want).abs() < 1e-12, "d = {d}, k = {k}");
                }
            }
            // apply is the transpose of apply_transpose, and the direct column formula agrees.
            let v: Vec<f64> = (0..d).map(|i| (i as f64 * 1.3).sin()).collect();
            let wv = h.apply(&v).unwrap();
            let cols = columns(&h, Variant::Correct);
            for j in 0..k {
                assert!((wv[j] - h.scale() * dot(&r[j], &v)).abs() < 1e-12);
                assert!(cols[j]
                    .iter()
                    .zip(&r[j])
                    .all(|(a, b)| (a - b).abs() < 1e-12));
            }
        }
        // The full-rank case is an orthogonal matrix: ‖Wv‖ = ‖v‖.
        let h = HaarRows::new(9, 9, seed(1)).unwrap();
        let v: Vec<f64> = (0..9).map(|i| i as f64 - 4.0).collect();
        let y = h.apply(&v).unwrap();
        assert!((dot(&y, &y) - dot(&v, &v)).abs() < 1e-10);
        assert!(HaarRows::new(4, 0, seed(1)).is_err());
        assert!(HaarRows::new(4, 5, seed(1)).is_err());
        assert!(h.apply(&[1.0; 8]).is_err());
        assert!(h.apply_transpose(&[1.0; 8]).is_err());
        assert!(h.add_transpose(&[1.0; 9], 1.0, &mut [0.0; 8]).is_err());
    }

    #[test]
    fn regenerable_and_pinned() {
        let a = HaarRows::new(40, 7, seed(3)).unwrap();
        let v: Vec<f64> = (0..40).map(|i| (i as f64).cos()).collect();
        let x = a.apply(&v).unwrap();
        let y = HaarRows::new(40, 7, seed(3)).unwrap().apply(&v).unwrap();
        assert!(x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits()));
        let z = HaarRows::new(40, 7, seed(4)).unwrap().apply(&v).unwrap();
        assert_ne!(x, z);
        // Golden value of the layout (stream 5, slot j·4·⌈d/2⌉ words): a change of layout changes
        // every rotation ProjUnit release.
        let g = HaarRows::new(5, 2, Seed([0; 32])).unwrap();
        let w = g.apply(&[1.0, 0.0, 0.0, 0.0, 0.0]).unwrap();
        assert_eq!(format!("{:.12} {:.12}", w[0], w[1]), GOLDEN);
    }

    /// Recorded from the first run of this layout.
    const GOLDEN: &str = "0.712647494455 -0.485097295077";

    #[test]
    fn haar_law_of_single_rows_and_of_the_projection() {
        // n independent seeds, d = 8, k = 3; fixed unit x = e₁ and a dense unit y. KS at level
        // 0.001 (critical 1.949/√n) for each of the statistics below.
        let (d, k, n) = (8usize, 3usize, 3000u64);
        let crit = 1.949 / (n as f64).sqrt();
        let y: Vec<f64> = (0..d).map(|i| (i as f64 + 1.0) / 204f64.sqrt()).collect();
        assert!((dot(&y, &y) - 1.0).abs() < 1e-12);
        let half = 0.5 * (d as f64 - 1.0);
        let signed = beta_cdf(half, half); // (1 + ⟨q, x⟩)/2 for q uniform on the sphere
        let proj = beta_cdf(k as f64 / 2.0, (d - k) as f64 / 2.0); // ‖Q_kᵀx‖²
        let run = |variant: Variant| {
            let mut stats: [Vec<f64>; 4] = Default::default();
            for i in 0..n {
                let h = HaarRows::new(d, k, seed(1000 + i)).unwrap();
                let c = columns(&h, variant);
                stats[0].push(0.5 * (1.0 + c[0][0])); // first row, x = e₁
                stats[1].push(0.5 * (1.0 + c[k - 1][0])); // last row, x = e₁
                stats[2].push(0.5 * (1.0 + dot(&c[k - 1], &y)));
                stats[3].push(c.iter().map(|q| dot(q, &y).powi(2)).sum::<f64>());
            }
            [
                ks(&stats[0], &signed),
                ks(&stats[1], &signed),
                ks(&stats[2], &signed),
                ks(&stats[3], &proj),
            ]
        };
        let good = run(Variant::Correct);
        assert!(good.iter().all(|&s| s < crit), "Haar: {good:?} vs {crit}");
        // The direct formula is what apply/apply_transpose compute (checked above); power:
        let no_sign = run(Variant::NoSign);
        assert!(
            no_sign[0] > crit && no_sign[2] > crit,
            "no sign: {no_sign:?}"
        );
        let one = run(Variant::OneReflection);
        assert!(one[3] > crit, "one reflection: {one:?}");
    }
}
