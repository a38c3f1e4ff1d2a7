//! In-place fast Walsh–Hadamard transform (Sylvester ordering), `O(d log d)`.
//!
//! `H_1 = [1]`, `H_{2m} = [[H_m, H_m], [H_m, −H_m]]`, so `H_{ij} = (−1)^{popcount(i & j)}`.
//! `H` is symmetric and `H·H = d·I`; the normalised transform `H/√d` is orthogonal and an
//! involution. Lengths must be powers of two; [`pad_pow2`] zero-pads a vector to the next one.

use crate::error::{Error, Result};

/// The smallest power of two `≥ d` (`d ≥ 1`), or an error if it overflows `usize`.
pub fn next_pow2(d: usize) -> Result<usize> {
    if d == 0 {
        return Err(Error::param("dimension", "must be at least 1"));
    }
    d.checked_next_power_of_two().ok_or_else(|| {
        Error::param(
            "dimension",
            format!("d = {d} has no power of two ≥ d in usize"),
        )
    })
}

/// `v` zero-padded to length [`next_pow2`]`(v.len())`.
pub fn pad_pow2(v: &[f64]) -> Result<Vec<f64>> {
    let n = next_pow2(v.len())?;
    let mut out = vec![0.0; n];
    out[..v.len()].copy_from_slice(v);
    Ok(out)
}

fn check_len(n: usize) -> Result<()> {
    if n == 0 || !n.is_power_of_two() {
        return Err(Error::param(
            "Hadamard transform",
            format!("length must be a power of two, got {n} (pad with pad_pow2 first)"),
        ));
    }
    Ok(())
}

/// Elements per cache block: the first `log₂ BLOCK` levels of the transform are done block by
/// block while the block stays in the L2 cache (256 KiB of f64).
const BLOCK: usize = 1 << 15;

macro_rules! fwht_impl {
    (
        $name:ident,
        $norm:ident,
        $scaled:ident,
        $pass2:ident,
        $pass4:ident,
        $base8:ident,
        $levels:ident,
        $t:ty
    ) => {
        /// The first three levels (strides 1, 2, 4) on each run of 8 consecutive elements,
        /// unrolled; outputs multiplied by `s`.
        #[inline(always)]
        fn $base8(x: &mut [$t], s: $t) {
            for c in x.chunks_exact_mut(8) {
                let (a0, a1, a2, a3) = (c[0] + c[1], c[0] - c[1], c[2] + c[3], c[2] - c[3]);
                let (a4, a5, a6, a7) = (c[4] + c[5], c[4] - c[5], c[6] + c[7], c[6] - c[7]);
                let (b0, b1, b2, b3) = (a0 + a2, a1 + a3, a0 - a2, a1 - a3);
                let (b4, b5, b6, b7) = (a4 + a6, a5 + a7, a4 - a6, a5 - a7);
                c[0] = s * (b0 + b4);
                c[1] = s * (b1 + b5);
                c[2] = s * (b2 + b6);
                c[3] = s * (b3 + b7);
                c[4] = s * (b0 - b4);
                c[5] = s * (b1 - b5);
                c[6] = s * (b2 - b6);
                c[7] = s * (b3 - b7);
            }
        }

        /// One level of butterflies at stride `h` (pairs `j, j + h` in blocks of `2h`), outputs
        /// multiplied by `s`.
        #[inline(always)]
        fn $pass2(x: &mut [$t], h: usize, s: $t) {
            for block in x.chunks_exact_mut(2 * h) {
                let (a, b) = block.split_at_mut(h);
                for (p, q) in a.iter_mut().zip(b.iter_mut()) {
                    let (u, v) = (*p, *q);
                    *p = s * (u + v);
                    *q = s * (u - v);
                }
            }
        }

        /// Two levels at once (strides `h` and `2h`, blocks of `4h`): half the memory traffic
        /// of two radix-2 passes; outputs multiplied by `s`.
        #[inline(always)]
        fn $pass4(x: &mut [$t], h: usize, s: $t) {
            for block in x.chunks_exact_mut(4 * h) {
                let (ab, cd) = block.split_at_mut(2 * h);
                let (a, b) = ab.split_at_mut(h);
                let (c, d) = cd.split_at_mut(h);
                for (((pa, pb), pc), pd) in a
                    .iter_mut()
                    .zip(b.iter_mut())
                    .zip(c.iter_mut())
                    .zip(d.iter_mut())
                {
                    let (s0, d0) = (*pa + *pb, *pa - *pb);
                    let (s1, d1) = (*pc + *pd, *pc - *pd);
                    *pa = s * (s0 + s1);
                    *pc = s * (s0 - s1);
                    *pb = s * (d0 + d1);
                    *pd = s * (d0 - d1);
                }
            }
        }

        /// Levels with strides `h0, 2h0, …` below `end` (radix-4 while two levels remain), the
        /// last pass multiplying by `s`.
        #[inline(always)]
        fn $levels(x: &mut [$t], h0: usize, end: usize, s: $t) {
            let mut h = h0;
            if h == 1 && end >= 8 {
                $base8(x, if end == 8 { s } else { 1.0 });
                h = 8;
            }
            while h < end {
                let radix4 = 4 * h <= end;
                let next = if radix4 { 4 * h } else { 2 * h };
                let sc = if next >= end { s } else { 1.0 };
                if radix4 {
                    $pass4(x, h, sc);
                } else {
                    $pass2(x, h, sc);
                }
                h = next;
            }
        }

        /// In-place transform `x ← s·H·x`: cache-blocked for the strides below [`BLOCK`],
        /// radix-4 passes over the whole array above it, the scale folded into the last pass.
        /// Compiled twice: for the baseline x86-64 target (SSE2) and with AVX2, chosen at run
        /// time when the CPU has it (same arithmetic, same results, wider vectors).
        fn $scaled(x: &mut [$t], s: $t) -> Result<()> {
            check_len(x.len())?;
            #[inline(always)]
            fn transform(x: &mut [$t], s: $t) {
                let n = x.len();
                if n == 1 {
                    x[0] *= s;
                    return;
                }
                let b = n.min(BLOCK);
                let sb = if b == n { s } else { 1.0 };
                for block in x.chunks_exact_mut(b) {
                    $levels(block, 1, b, sb);
                }
                if b < n {
                    $levels(x, b, n, s);
                }
            }

            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx2") {
                    /// The transform compiled with AVX2 enabled.
                    #[target_feature(enable = "avx2")]
                    fn avx2(x: &mut [$t], s: $t) {
                        transform(x, s)
                    }
                    // SAFETY: the CPU supports AVX2 (checked just above).
                    unsafe { avx2(x, s) };
                    return Ok(());
                }
            }
            transform(x, s);
            Ok(())
        }

        /// Unnormalised in-place transform `x ← H·x`.
        pub fn $name(x: &mut [$t]) -> Result<()> {
            $scaled(x, 1.0)
        }

        /// Normalised in-place transform `x ← (H/√n)·x` (orthogonal, an involution).
        pub fn $norm(x: &mut [$t]) -> Result<()> {
            let s = 1.0 / (x.len() as $t).sqrt();
            $scaled(x, s)
        }
    };
}

fwht_impl!(
    fwht,
    fwht_normalized,
    fwht_scaled,
    pass2,
    pass4,
    base8,
    levels,
    f64
);
fwht_impl!(
    fwht_f32,
    fwht_normalized_f32,
    fwht_scaled_f32,
    pass2_f32,
    pass4_f32,
    base8_f32,
    levels_f32,
    f32
);

#[cfg(test)]
mod tests {
    use super::*;

    fn explicit(n: usize) -> Vec<Vec<f64>> {
        (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        if (i & j).count_ones() % 2 == 0 {
                            1.0
                        } else {
                            -1.0
                        }
                    })
                    .collect()
            })
            .collect()
    }

    fn test_vec(n: usize, salt: u64) -> Vec<f64> {
        (0..n)
            .map(|i| (((i as u64 * 2654435761 + salt) % 1000) as f64 / 500.0) - 1.0)
            .collect()
    }

    #[test]
    fn matches_the_explicit_matrix() {
        for n in [1, 2, 4, 8, 16, 32, 64] {
            let h = explicit(n);
            let x = test_vec(n, n as u64);
            let want: Vec<f64> = h
                .iter()
                .map(|row| row.iter().zip(&x).map(|(a, b)| a * b).sum())
                .collect();
            let mut got = x.clone();
            fwht(&mut got).unwrap();
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-12, "n = {n}: {g} vs {w}");
            }
            let mut got32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            fwht_f32(&mut got32).unwrap();
            for (g, w) in got32.iter().zip(&want) {
                assert!((*g as f64 - w).abs() < 1e-4, "f32 n = {n}");
            }
        }
        // Power: a transform with a sign convention error (H with −1 on the diagonal block swap)
        // differs from the explicit matrix.
        let x = test_vec(4, 3);
        let mut y = x.clone();
        fwht(&mut y).unwrap();
        let swapped = x[0] - x[1] + x[2] - x[3];
        assert!((y[1] - swapped).abs() < 1e-12 && (y[2] - swapped).abs() > 1e-6);
    }

    /// The textbook radix-2 transform, one full pass per level (the previous implementation).
    fn reference(x: &mut [f64]) {
        let mut h = 1;
        while h < x.len() {
            for block in x.chunks_exact_mut(2 * h) {
                let (a, b) = block.split_at_mut(h);
                for (p, q) in a.iter_mut().zip(b.iter_mut()) {
                    let (s, t) = (*p + *q, *p - *q);
                    *p = s;
                    *q = t;
                }
            }
            h *= 2;
        }
    }

    #[test]
    fn blocked_radix4_matches_the_radix2_reference_across_the_cache_block() {
        // Below, at and above BLOCK, with an even and an odd number of outer levels.
        for shift in [2usize, 3, 4, 14, 15, 16, 17, 18, 19] {
            let n = 1usize << shift;
            let x = test_vec(n, shift as u64);
            let mut want = x.clone();
            reference(&mut want);
            let mut got = x.clone();
            fwht(&mut got).unwrap();
            let tol = 1e-12 * n as f64;
            assert!(
                got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= tol),
                "n = {n}"
            );
            let mut norm = x.clone();
            fwht_normalized(&mut norm).unwrap();
            let s = 1.0 / (n as f64).sqrt();
            assert!(norm
                .iter()
                .zip(&want)
                .all(|(g, w)| (g - s * w).abs() <= tol * s));
            let mut g32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            fwht_f32(&mut g32).unwrap();
            assert!(g32
                .iter()
                .zip(&want)
                .all(|(g, w)| (*g as f64 - w).abs() <= 1e-4 * n as f64));
        }
        // Power: the reference differs from a transform with one level skipped.
        let x = test_vec(1 << 16, 1);
        let mut a = x.clone();
        reference(&mut a);
        let mut b = x.clone();
        fwht(&mut b[..1 << 15]).unwrap();
        fwht(&mut b[1 << 15..]).unwrap();
        assert!(a.iter().zip(&b).any(|(p, q)| (p - q).abs() > 1e-6));
    }

    #[test]
    fn involution_and_parseval() {
        for n in [1, 2, 8, 256, 4096] {
            let x = test_vec(n, 7);
            let mut y = x.clone();
            fwht(&mut y).unwrap();
            fwht(&mut y).unwrap();
            for (a, b) in y.iter().zip(&x) {
                assert!(
                    (a - n as f64 * b).abs() < 1e-9 * n as f64,
                    "H·H = nI, n = {n}"
                );
            }
            let mut z = x.clone();
            fwht_normalized(&mut z).unwrap();
            let e0: f64 = x.iter().map(|v| v * v).sum();
            let e1: f64 = z.iter().map(|v| v * v).sum();
            assert!((e0 - e1).abs() < 1e-10 * e0.max(1.0), "Parseval, n = {n}");
            fwht_normalized(&mut z).unwrap();
            for (a, b) in z.iter().zip(&x) {
                assert!((a - b).abs() < 1e-12, "normalised involution, n = {n}");
            }
            let mut w: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            fwht_normalized_f32(&mut w).unwrap();
            fwht_normalized_f32(&mut w).unwrap();
            for (a, b) in w.iter().zip(&x) {
                assert!((*a as f64 - b).abs() < 1e-4);
            }
        }
    }

    #[test]
    fn padding_and_bad_lengths() {
        assert_eq!(next_pow2(1).unwrap(), 1);
        assert_eq!(next_pow2(5).unwrap(), 8);
        assert_eq!(next_pow2(1024).unwrap(), 1024);
        assert!(next_pow2(0).is_err());
        assert!(next_pow2(usize::MAX).is_err());
        let p = pad_pow2(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(p, vec![1.0, 2.0, 3.0, 0.0]);
        assert!(fwht(&mut [1.0, 2.0, 3.0]).is_err());
        assert!(fwht(&mut []).is_err());
        assert!(fwht_f32(&mut [1.0; 6]).is_err());
    }
}
