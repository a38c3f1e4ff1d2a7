//! Feature matrices for the linear learners, borrowed without copying.
//!
//! A [`Features`] is either `n` dense rows of `d` f32 values (row-major, e.g.
//! [`Release::values`](crate::release::Release::values)) or `n` rows of `k` packed signs
//! ([`Release::bits`](crate::release::Release::bits): `⌈k/64⌉` little-endian `u64` words per row,
//! sign `j` is bit `j % 64` of word `j / 64`, set = +1, clear = −1; bits at or past `k` are
//! ignored). Learners only ever ask three things of a row: its inner product with a weight vector,
//! `w += α·x_i`, and `‖x_i‖²`. The sign path works on the packed words directly: a sign row is
//! never unpacked into floats, `x_i·w = Σ_j s_j w_j` is computed by flipping the sign bit of `w_j`
//! where `s_j = −1`, and `‖x_i‖² = k`.
//!
//! Weights are f64 and products are accumulated in f64. On x86-64 CPUs with AVX2 and FMA (checked
//! at run time; the default target has neither) the row operations use 256-bit instructions,
//! otherwise portable code with the same accumulation order. Within one kernel the dense and sign
//! paths perform the same floating-point operations in the same order, so a ±1 matrix gives the
//! same results whether it is passed densely or as packed signs.

use crate::error::{Error, Result};
use crate::search::Sketch;

/// Rows of features, borrowed (dense f32 values or packed ±1 signs).
#[derive(Debug, Clone, Copy)]
pub struct Features<'a> {
    repr: Repr<'a>,
}

#[derive(Debug, Clone, Copy)]
enum Repr<'a> {
    Dense {
        data: &'a [f32],
        n: usize,
        d: usize,
    },
    Signs {
        words: &'a [u64],
        n: usize,
        k: usize,
        wpr: usize,
    },
}

impl<'a> Features<'a> {
    /// Dense rows: `data` holds `n × d` values, row-major (`n = data.len() / d`).
    ///
    /// Fails if `d` is 0 or `data.len()` is not a multiple of `d`.
    pub fn dense(data: &'a [f32], d: usize) -> Result<Features<'a>> {
        if d == 0 {
            return Err(Error::param(
                "features",
                "the number of features per row must be at least 1",
            ));
        }
        if !data.len().is_multiple_of(d) {
            return Err(Error::param(
                "features",
                format!(
                    "{} values do not make whole rows of {d} features",
                    data.len()
                ),
            ));
        }
        Ok(Features {
            repr: Repr::Dense {
                data,
                n: data.len() / d,
                d,
            },
        })
    }

    /// Packed sign rows: `words` holds `n × ⌈k/64⌉` words (`n = words.len() / ⌈k/64⌉`).
    ///
    /// Fails if `k` is 0 or `words.len()` is not a multiple of `⌈k/64⌉`.
    pub fn signs(words: &'a [u64], k: usize) -> Result<Features<'a>> {
        if k == 0 {
            return Err(Error::param(
                "features",
                "the number of signs per row must be at least 1",
            ));
        }
        let wpr = k.div_ceil(64);
        if !words.len().is_multiple_of(wpr) {
            return Err(Error::param(
                "features",
                format!(
                    "{} words do not make whole rows of {k} signs ({wpr} words per row)",
                    words.len()
                ),
            ));
        }
        Ok(Features {
            repr: Repr::Signs {
                words,
                n: words.len() / wpr,
                k,
                wpr,
            },
        })
    }

    /// The rows of a sketch (a release's payload, see [`Sketch`]).
    pub fn from_sketch(sketch: Sketch<'a>) -> Result<Features<'a>> {
        match sketch {
            Sketch::Real { data, k } => Features::dense(data, k),
            Sketch::Bits { data, k } => Features::signs(data, k),
        }
    }

    /// Number of rows.
    pub fn n(&self) -> usize {
        match self.repr {
            Repr::Dense { n, .. } | Repr::Signs { n, .. } => n,
        }
    }

    /// Number of features per row (`d`, or `k` signs).
    pub fn dim(&self) -> usize {
        match self.repr {
            Repr::Dense { d, .. } => d,
            Repr::Signs { k, .. } => k,
        }
    }

    /// Whether the rows are packed signs.
    pub fn is_signs(&self) -> bool {
        matches!(self.repr, Repr::Signs { .. })
    }

    /// Fail, naming the first offending row and column, if a dense value is NaN or infinite
    /// (signs are always finite).
    pub fn check_finite(&self) -> Result<()> {
        if let Repr::Dense { data, d, .. } = self.repr {
            if let Some(pos) = data.iter().position(|v| !v.is_finite()) {
                return Err(Error::param(
                    "features",
                    format!(
                        "row {}, column {}: the value {} is not finite",
                        pos / d,
                        pos % d,
                        data[pos]
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `x_i · w` (accumulated in f64).
    ///
    /// # Panics
    /// If `i ≥ n()` or `w.len() != dim()`.
    pub fn dot(&self, i: usize, w: &[f64]) -> f64 {
        assert_eq!(w.len(), self.dim(), "weight vector length");
        self.dot_with(Kernel::detect(), i, w)
    }

    /// `w += alpha · x_i`.
    ///
    /// # Panics
    /// If `i ≥ n()` or `w.len() != dim()`.
    pub fn axpy(&self, i: usize, alpha: f64, w: &mut [f64]) {
        assert_eq!(w.len(), self.dim(), "weight vector length");
        self.axpy_with(Kernel::detect(), i, alpha, w)
    }

    /// `‖x_i‖²` (exactly `k` for a sign row).
    ///
    /// # Panics
    /// If `i ≥ n()`.
    pub fn sq_norm(&self, i: usize) -> f64 {
        match self.repr {
            Repr::Dense { data, d, .. } => sq_norm_f32(&data[i * d..(i + 1) * d]),
            Repr::Signs { n, k, .. } => {
                assert!(i < n, "row {i} out of range ({n} rows)");
                k as f64
            }
        }
    }

    /// `‖x_i‖²` of every row.
    pub fn sq_norms(&self) -> Vec<f64> {
        (0..self.n()).map(|i| self.sq_norm(i)).collect()
    }

    /// Hint the CPU to start loading row `i` into the cache (a no-op off x86-64 and for
    /// out-of-range rows). The solvers visit rows in random order, which defeats the hardware
    /// prefetcher; asking for the next rows while working on the current one hides most of the
    /// memory latency.
    #[inline]
    pub(crate) fn prefetch(&self, i: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            let bytes: &[u8] = match self.repr {
                Repr::Dense { data, d, .. } => match data.get(i * d..(i + 1) * d) {
                    Some(r) => bytemuck::cast_slice(r),
                    None => return,
                },
                Repr::Signs { words, wpr, .. } => match words.get(i * wpr..(i + 1) * wpr) {
                    Some(r) => bytemuck::cast_slice(r),
                    None => return,
                },
            };
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            for line in bytes.chunks(64) {
                // SAFETY: SSE is part of the x86-64 baseline; a prefetch never faults, and the
                // pointer is inside the row anyway.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr() as *const i8) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    }

    /// [`dot`](Features::dot) with a chosen kernel; `w.len()` must be at least `dim()`.
    #[inline]
    pub(crate) fn dot_with(&self, kernel: Kernel, i: usize, w: &[f64]) -> f64 {
        match self.repr {
            Repr::Dense { data, d, .. } => {
                let x = &data[i * d..(i + 1) * d];
                let w = &w[..d];
                match kernel {
                    Kernel::Generic => dot_dense_generic(x, w),
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: `Kernel::Avx2` is only constructed when the CPU has AVX2 and FMA.
                    Kernel::Avx2 => unsafe { avx2::dot_dense(x, w) },
                }
            }
            Repr::Signs { words, k, wpr, .. } => {
                let s = &words[i * wpr..(i + 1) * wpr];
                let w = &w[..k];
                match kernel {
                    Kernel::Generic => dot_signs_generic(s, w),
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: as above.
                    Kernel::Avx2 => unsafe { avx2::dot_signs(s, w) },
                }
            }
        }
    }

    /// [`axpy`](Features::axpy) with a chosen kernel; `w.len()` must be at least `dim()`.
    #[inline]
    pub(crate) fn axpy_with(&self, kernel: Kernel, i: usize, alpha: f64, w: &mut [f64]) {
        match self.repr {
            Repr::Dense { data, d, .. } => {
                let x = &data[i * d..(i + 1) * d];
                let w = &mut w[..d];
                match kernel {
                    Kernel::Generic => axpy_dense_generic(alpha, x, w),
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: `Kernel::Avx2` is only constructed when the CPU has AVX2 and FMA.
                    Kernel::Avx2 => unsafe { avx2::axpy_dense(alpha, x, w) },
                }
            }
            Repr::Signs { words, k, wpr, .. } => {
                let s = &words[i * wpr..(i + 1) * wpr];
                let w = &mut w[..k];
                match kernel {
                    Kernel::Generic => axpy_signs_generic(alpha, s, w),
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: as above.
                    Kernel::Avx2 => unsafe { avx2::axpy_signs(alpha, s, w) },
                }
            }
        }
    }
}

/// Which implementation of the row operations to use (chosen once per call site).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// Portable code (SSE2 at best on the default x86-64 target).
    Generic,
    /// 256-bit AVX2 + FMA.
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Kernel {
    /// The fastest kernel this CPU supports.
    #[inline]
    pub(crate) fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Kernel::Avx2;
            }
        }
        Kernel::Generic
    }
}

// Accumulation order shared by every kernel (so that dense ±1 rows and packed signs agree
// bit for bit): elements are taken in blocks of 32; element `4a + l` of a block goes to lane `l`
// of accumulator `a` (8 accumulators × 4 lanes); after the blocks, groups of 4 go to accumulator
// 0; the last `len % 4` elements are summed in order into a scalar `tail`. The result is
// `((t0 + t1) + (t2 + t3)) + tail` with `t_l = acc0_l + acc1_l + … + acc7_l` (in that order).

const ACC: usize = 8;
const BLOCK: usize = 4 * ACC;

#[inline]
fn reduce(acc: &[[f64; 4]; ACC], tail: f64) -> f64 {
    let mut t = [0f64; 4];
    for a in acc {
        for l in 0..4 {
            t[l] += a[l];
        }
    }
    ((t[0] + t[1]) + (t[2] + t[3])) + tail
}

/// Sign bit of `w_j` to flip for sign bit `bit` (0 → negative).
#[inline(always)]
fn flip(bit: u64) -> u64 {
    ((bit & 1) ^ 1) << 63
}

fn dot_dense_generic(x: &[f32], w: &[f64]) -> f64 {
    let n = x.len().min(w.len());
    let mut acc = [[0f64; 4]; ACC];
    let mut i = 0;
    while i + BLOCK <= n {
        let (xb, wb) = (&x[i..i + BLOCK], &w[i..i + BLOCK]);
        for a in 0..ACC {
            for l in 0..4 {
                acc[a][l] += xb[4 * a + l] as f64 * wb[4 * a + l];
            }
        }
        i += BLOCK;
    }
    while i + 4 <= n {
        for l in 0..4 {
            acc[0][l] += x[i + l] as f64 * w[i + l];
        }
        i += 4;
    }
    let mut tail = 0f64;
    while i < n {
        tail += x[i] as f64 * w[i];
        i += 1;
    }
    reduce(&acc, tail)
}

fn dot_signs_generic(s: &[u64], w: &[f64]) -> f64 {
    let n = w.len();
    let mut acc = [[0f64; 4]; ACC];
    let mut i = 0;
    while i + BLOCK <= n {
        let bits = s[i / 64] >> (i % 64);
        let wb = &w[i..i + BLOCK];
        for a in 0..ACC {
            for l in 0..4 {
                let v = wb[4 * a + l];
                acc[a][l] += f64::from_bits(v.to_bits() ^ flip(bits >> (4 * a + l)));
            }
        }
        i += BLOCK;
    }
    while i + 4 <= n {
        let bits = s[i / 64] >> (i % 64);
        for l in 0..4 {
            acc[0][l] += f64::from_bits(w[i + l].to_bits() ^ flip(bits >> l));
        }
        i += 4;
    }
    let mut tail = 0f64;
    while i < n {
        tail += f64::from_bits(w[i].to_bits() ^ flip(s[i / 64] >> (i % 64)));
        i += 1;
    }
    reduce(&acc, tail)
}

fn axpy_dense_generic(alpha: f64, x: &[f32], w: &mut [f64]) {
    for (wj, &xj) in w.iter_mut().zip(x) {
        *wj += alpha * xj as f64;
    }
}

fn axpy_signs_generic(alpha: f64, s: &[u64], w: &mut [f64]) {
    let a = alpha.to_bits();
    for (c, chunk) in w.chunks_mut(64).enumerate() {
        let bits = s[c];
        for (b, wj) in chunk.iter_mut().enumerate() {
            *wj += f64::from_bits(a ^ flip(bits >> b));
        }
    }
}

fn sq_norm_f32(x: &[f32]) -> f64 {
    let mut acc = [0f64; 8];
    let chunks = x.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..8 {
            let v = c[l] as f64;
            acc[l] += v * v;
        }
    }
    let mut s: f64 = acc.iter().sum();
    for &v in rest {
        s += v as f64 * v as f64;
    }
    s
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The row operations with 256-bit AVX2 + FMA (4 f64 lanes).
    //!
    //! Safety contract of every function here: the CPU supports AVX2 and FMA, and the caller
    //! passes slices of the documented lengths (the loops only touch indices below `w.len()`,
    //! and `x` / `s` are at least as long as `w` needs).

    use std::arch::x86_64::*;

    use super::{flip, reduce, ACC, BLOCK};

    /// XOR masks flipping the sign of lane `l` when bit `l` of the nibble is clear (sign −1).
    #[repr(align(32))]
    struct Masks([[u64; 4]; 16]);

    static MASKS: Masks = {
        let mut m = [[0u64; 4]; 16];
        let mut nib = 0;
        while nib < 16 {
            let mut l = 0;
            while l < 4 {
                if (nib >> l) & 1 == 0 {
                    m[nib][l] = 1 << 63;
                }
                l += 1;
            }
            nib += 1;
        }
        Masks(m)
    };

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn mask(nib: u64) -> __m256d {
        // SAFETY: `nib & 15` indexes the 16 aligned 32-byte entries.
        unsafe { _mm256_load_pd(MASKS.0[(nib & 15) as usize].as_ptr() as *const f64) }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn finish(acc: [__m256d; ACC], tail: f64) -> f64 {
        let mut lanes = [[0f64; 4]; ACC];
        for (dst, a) in lanes.iter_mut().zip(acc) {
            // SAFETY: `dst` holds 4 f64.
            unsafe { _mm256_storeu_pd(dst.as_mut_ptr(), a) };
        }
        reduce(&lanes, tail)
    }

    /// `x · w` for f32 `x` and f64 `w` (`x.len() ≥ w.len()`).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot_dense(x: &[f32], w: &[f64]) -> f64 {
        let n = w.len();
        assert!(x.len() >= n);
        let (px, pw) = (x.as_ptr(), w.as_ptr());
        let mut acc = [_mm256_setzero_pd(); ACC];
        let mut i = 0;
        // SAFETY (all loads): every load reads indices below i + 4 ≤ n.
        unsafe {
            while i + BLOCK <= n {
                for (a, acc) in acc.iter_mut().enumerate() {
                    let xv = _mm256_cvtps_pd(_mm_loadu_ps(px.add(i + 4 * a)));
                    let wv = _mm256_loadu_pd(pw.add(i + 4 * a));
                    *acc = _mm256_fmadd_pd(xv, wv, *acc);
                }
                i += BLOCK;
            }
            while i + 4 <= n {
                let xv = _mm256_cvtps_pd(_mm_loadu_ps(px.add(i)));
                acc[0] = _mm256_fmadd_pd(xv, _mm256_loadu_pd(pw.add(i)), acc[0]);
                i += 4;
            }
        }
        let mut tail = 0f64;
        while i < n {
            tail += x[i] as f64 * w[i];
            i += 1;
        }
        // SAFETY: AVX is available.
        unsafe { finish(acc, tail) }
    }

    /// `Σ_j s_j w_j` over the `w.len()` signs packed in `s`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot_signs(s: &[u64], w: &[f64]) -> f64 {
        let n = w.len();
        assert!(s.len() * 64 >= n);
        let pw = w.as_ptr();
        let mut acc = [_mm256_setzero_pd(); ACC];
        let mut i = 0;
        // SAFETY (all loads): every load reads indices below i + 4 ≤ n.
        unsafe {
            while i + BLOCK <= n {
                let bits = s[i / 64] >> (i % 64);
                for (a, acc) in acc.iter_mut().enumerate() {
                    let wv = _mm256_loadu_pd(pw.add(i + 4 * a));
                    *acc = _mm256_add_pd(*acc, _mm256_xor_pd(wv, mask(bits >> (4 * a))));
                }
                i += BLOCK;
            }
            while i + 4 <= n {
                let bits = s[i / 64] >> (i % 64);
                let wv = _mm256_loadu_pd(pw.add(i));
                acc[0] = _mm256_add_pd(acc[0], _mm256_xor_pd(wv, mask(bits)));
                i += 4;
            }
        }
        let mut tail = 0f64;
        while i < n {
            tail += f64::from_bits(w[i].to_bits() ^ flip(s[i / 64] >> (i % 64)));
            i += 1;
        }
        // SAFETY: AVX is available.
        unsafe { finish(acc, tail) }
    }

    /// `w += alpha · x` for f32 `x` (`x.len() ≥ w.len()`).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn axpy_dense(alpha: f64, x: &[f32], w: &mut [f64]) {
        let n = w.len();
        assert!(x.len() >= n);
        let (px, pw) = (x.as_ptr(), w.as_mut_ptr());
        let av = _mm256_set1_pd(alpha);
        let mut i = 0;
        // SAFETY (all loads and stores): indices below i + 4 ≤ n.
        unsafe {
            while i + 4 <= n {
                let xv = _mm256_cvtps_pd(_mm_loadu_ps(px.add(i)));
                let wv = _mm256_loadu_pd(pw.add(i));
                _mm256_storeu_pd(pw.add(i), _mm256_fmadd_pd(av, xv, wv));
                i += 4;
            }
        }
        while i < n {
            w[i] += alpha * x[i] as f64;
            i += 1;
        }
    }

    /// `w += alpha · s` over the `w.len()` signs packed in `s`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn axpy_signs(alpha: f64, s: &[u64], w: &mut [f64]) {
        let n = w.len();
        assert!(s.len() * 64 >= n);
        let pw = w.as_mut_ptr();
        let av = _mm256_set1_pd(alpha);
        let mut i = 0;
        // SAFETY (all loads and stores): indices below i + 4 ≤ n.
        unsafe {
            while i + 4 <= n {
                let bits = s[i / 64] >> (i % 64);
                let wv = _mm256_loadu_pd(pw.add(i));
                _mm256_storeu_pd(pw.add(i), _mm256_add_pd(wv, _mm256_xor_pd(av, mask(bits))));
                i += 4;
            }
        }
        let a = alpha.to_bits();
        while i < n {
            w[i] += f64::from_bits(a ^ flip(s[i / 64] >> (i % 64)));
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random stream (no RNG crate needed in these unit tests).
    fn lcg(state: &mut u64) -> u64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *state ^ (*state >> 29)
    }

    fn sign_matrix(n: usize, k: usize, seed: u64) -> (Vec<u64>, Vec<f32>) {
        let wpr = k.div_ceil(64);
        let mut st = seed;
        let mut words = vec![0u64; n * wpr];
        for w in words.iter_mut() {
            *w = lcg(&mut st);
        }
        let mut dense = vec![0f32; n * k];
        for i in 0..n {
            for j in 0..k {
                let bit = (words[i * wpr + j / 64] >> (j % 64)) & 1;
                dense[i * k + j] = if bit == 1 { 1.0 } else { -1.0 };
            }
            // tail bits past k are ignored: set them to make sure
            if !k.is_multiple_of(64) {
                words[i * wpr + wpr - 1] |= !0u64 << (k % 64);
            }
        }
        (words, dense)
    }

    fn kernels() -> Vec<Kernel> {
        let mut v = vec![Kernel::Generic];
        if Kernel::detect() != Kernel::Generic {
            v.push(Kernel::detect());
        }
        v
    }

    #[test]
    fn signs_match_dense_bit_for_bit() {
        for k in [1, 3, 4, 5, 31, 32, 33, 63, 64, 65, 100, 127, 128, 200, 1024] {
            let (words, dense) = sign_matrix(4, k, k as u64 + 7);
            let s = Features::signs(&words, k).unwrap();
            let d = Features::dense(&dense, k).unwrap();
            let mut st = 99;
            let w: Vec<f64> = (0..k)
                .map(|_| (lcg(&mut st) % 2001) as f64 / 1000.0 - 1.0)
                .collect();
            for kernel in kernels() {
                for i in 0..4 {
                    let a = s.dot_with(kernel, i, &w);
                    let b = d.dot_with(kernel, i, &w);
                    assert_eq!(a.to_bits(), b.to_bits(), "k={k} row {i} {kernel:?}");
                    let exact: f64 = (0..k).map(|j| dense[i * k + j] as f64 * w[j]).sum();
                    assert!((a - exact).abs() < 1e-9, "k={k}: {a} vs {exact}");
                    let (mut w1, mut w2) = (w.clone(), w.clone());
                    s.axpy_with(kernel, i, 0.37, &mut w1);
                    d.axpy_with(kernel, i, 0.37, &mut w2);
                    assert_eq!(w1, w2);
                    for j in 0..k {
                        let e = w[j] + 0.37 * dense[i * k + j] as f64;
                        assert!((w1[j] - e).abs() < 1e-12);
                    }
                }
                assert_eq!(s.sq_norm(2), k as f64);
                assert_eq!(d.sq_norm(2), k as f64);
            }
        }
    }

    #[test]
    fn dense_kernels_agree() {
        for d in [1, 7, 32, 33, 123, 1024] {
            let mut st = d as u64;
            let x: Vec<f32> = (0..3 * d)
                .map(|_| (lcg(&mut st) % 1000) as f32 / 100.0 - 5.0)
                .collect();
            let w: Vec<f64> = (0..d)
                .map(|_| (lcg(&mut st) % 1000) as f64 / 333.0 - 1.5)
                .collect();
            let f = Features::dense(&x, d).unwrap();
            for i in 0..3 {
                let exact: f64 = (0..d).map(|j| x[i * d + j] as f64 * w[j]).sum();
                for kernel in kernels() {
                    let got = f.dot_with(kernel, i, &w);
                    assert!((got - exact).abs() < 1e-9 * (1.0 + exact.abs()));
                    let mut w1 = w.clone();
                    f.axpy_with(kernel, i, -0.5, &mut w1);
                    for j in 0..d {
                        let e = w[j] - 0.5 * x[i * d + j] as f64;
                        assert!((w1[j] - e).abs() < 1e-12);
                    }
                }
                let sq: f64 = (0..d).map(|j| (x[i * d + j] as f64).powi(2)).sum();
                assert!((f.sq_norm(i) - sq).abs() < 1e-9 * sq);
            }
        }
    }

    #[test]
    fn shapes_and_finiteness() {
        assert!(Features::dense(&[1.0; 6], 4).is_err());
        assert!(Features::dense(&[1.0; 6], 0).is_err());
        assert!(Features::signs(&[0; 3], 65).is_err());
        assert!(Features::signs(&[0; 3], 0).is_err());
        let f = Features::signs(&[0; 4], 65).unwrap();
        assert_eq!((f.n(), f.dim(), f.is_signs()), (2, 65, true));
        let bad = [1.0, f32::NAN, 0.0, 0.0];
        let e = Features::dense(&bad, 2)
            .unwrap()
            .check_finite()
            .unwrap_err();
        assert!(e.to_string().contains("row 0, column 1"), "{e}");
        let inf = [1.0, 0.0, 0.0, f32::INFINITY];
        let e = Features::dense(&inf, 2)
            .unwrap()
            .check_finite()
            .unwrap_err();
        assert!(e.to_string().contains("row 1, column 1"), "{e}");
    }
}
