//! The inner loops of the HNSW search: dot products of f32, i8 and packed 4-bit vectors, the
//! Hamming distance of packed bits, and a prefetch hint. Each has a portable version and, on
//! x86-64, an AVX2 (or `popcnt`) version chosen at run time when the CPU has it (the default
//! x86-64 target has neither). The unit tests check every SIMD version against the portable one
//! on lengths that exercise every remainder path.

/// f32 dot product: AVX2 + FMA when the CPU has them (checked at run time; the default x86-64
/// target has neither), otherwise 16 independent accumulators (vectorised with SSE2).
#[inline]
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return unsafe { dot_avx2(a, b) };
        }
    }
    dot_generic(a, b)
}

#[inline]
fn dot_generic(a: &[f32], b: &[f32]) -> f32 {
    const L: usize = 16;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; L];
    let ca = a.chunks_exact(L);
    let cb = b.chunks_exact(L);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..L {
            acc[i] += x[i] * y[i];
        }
    }
    let mut tail = 0f32;
    for (x, y) in ra.iter().zip(rb) {
        tail += x * y;
    }
    acc.iter().sum::<f32>() + tail
}

/// [`dot_generic`] with 256-bit fused multiply-adds.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    // SAFETY (all loads): i + 8 ≤ n for every 8-float load, so they stay inside both slices.
    while i + 32 <= n {
        for (j, acc) in acc.iter_mut().enumerate() {
            let (x, y) = unsafe {
                (
                    _mm256_loadu_ps(pa.add(i + 8 * j)),
                    _mm256_loadu_ps(pb.add(i + 8 * j)),
                )
            };
            *acc = _mm256_fmadd_ps(x, y, *acc);
        }
        i += 32;
    }
    while i + 8 <= n {
        let (x, y) = unsafe { (_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i))) };
        acc[0] = _mm256_fmadd_ps(x, y, acc[0]);
        i += 8;
    }
    let sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    let mut lanes = [0f32; 8];
    // SAFETY: `lanes` holds 8 floats.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), sum) };
    let mut s = lanes.iter().sum::<f32>();
    for t in i..n {
        s += a[t] * b[t];
    }
    s
}

/// Integer dot product of i8 vectors (exact: i32 sums over chunks of at most 2¹⁶ values, which
/// cannot overflow, added in i64). AVX2 when the CPU has it.
#[inline]
pub(super) fn dot_i8(a: &[i8], b: &[i8]) -> i64 {
    const CHUNK: usize = 1 << 16;
    let n = a.len().min(b.len());
    let mut total = 0i64;
    let mut i = 0;
    while i < n {
        let e = (i + CHUNK).min(n);
        total += dot_i8_chunk(&a[i..e], &b[i..e]) as i64;
        i = e;
    }
    total
}

#[inline]
fn dot_i8_chunk(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { dot_i8_avx2(a, b) };
        }
    }
    dot_i8_generic(a, b)
}

#[inline(always)]
fn dot_i8_generic(a: &[i8], b: &[i8]) -> i32 {
    a.iter().zip(b).map(|(&x, &y)| x as i32 * y as i32).sum()
}

/// [`dot_i8_generic`] with 256-bit multiply-adds on 16-bit lanes.
///
/// # Safety
/// The CPU must support AVX2; `a` and `b` hold at most 2¹⁶ values each.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc0 = _mm256_setzero_si256();
    let mut acc1 = _mm256_setzero_si256();
    let mut i = 0;
    // SAFETY (all loads): each reads 16 bytes at i (or i + 16) with i + 16 (or i + 32) ≤ n.
    while i + 32 <= n {
        let (x0, y0, x1, y1) = unsafe {
            (
                _mm_loadu_si128(pa.add(i) as *const __m128i),
                _mm_loadu_si128(pb.add(i) as *const __m128i),
                _mm_loadu_si128(pa.add(i + 16) as *const __m128i),
                _mm_loadu_si128(pb.add(i + 16) as *const __m128i),
            )
        };
        let p0 = _mm256_madd_epi16(_mm256_cvtepi8_epi16(x0), _mm256_cvtepi8_epi16(y0));
        let p1 = _mm256_madd_epi16(_mm256_cvtepi8_epi16(x1), _mm256_cvtepi8_epi16(y1));
        acc0 = _mm256_add_epi32(acc0, p0);
        acc1 = _mm256_add_epi32(acc1, p1);
        i += 32;
    }
    if i + 16 <= n {
        let (x0, y0) = unsafe {
            (
                _mm_loadu_si128(pa.add(i) as *const __m128i),
                _mm_loadu_si128(pb.add(i) as *const __m128i),
            )
        };
        let p0 = _mm256_madd_epi16(_mm256_cvtepi8_epi16(x0), _mm256_cvtepi8_epi16(y0));
        acc0 = _mm256_add_epi32(acc0, p0);
        i += 16;
    }
    let mut lanes = [0i32; 8];
    // SAFETY: `lanes` holds 8 i32.
    unsafe {
        _mm256_storeu_si256(
            lanes.as_mut_ptr() as *mut __m256i,
            _mm256_add_epi32(acc0, acc1),
        )
    };
    lanes.iter().sum::<i32>() + dot_i8_generic(&a[i..n], &b[i..n])
}

/// Bitwise Hamming distance between equally long word slices (`popcnt` when the CPU has it).
#[inline]
pub(super) fn hamming(a: &[u64], b: &[u64]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU supports popcnt (checked just above).
            return unsafe { hamming_popcnt(a, b) };
        }
    }
    hamming_generic(a, b)
}

#[inline(always)]
fn hamming_generic(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// [`hamming_generic`] compiled with the `popcnt` instruction.
///
/// # Safety
/// The CPU must support `popcnt`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn hamming_popcnt(a: &[u64], b: &[u64]) -> u32 {
    hamming_generic(a, b)
}

/// `Σ n_i q_i` for 4-bit codes packed as in [`WalkCodes`](super::quant::WalkCodes) and
/// 8-bit `q` of twice the packed length (exact: i32 sums over chunks of at most 2¹³ blocks of 64
/// values, at most 2¹³·64·14·127 < 2³¹, added in i64). `q`'s values must lie in −127..=127.
#[inline]
pub(super) fn dot_u4_i8(packed: &[u8], q: &[i8]) -> i64 {
    const CHUNK: usize = 32 << 13;
    let n = packed.len().min(q.len() / 2);
    let mut total = 0i64;
    let mut i = 0;
    while i < n {
        let e = (i + CHUNK).min(n);
        total += dot_u4_i8_chunk(&packed[i..e], &q[2 * i..2 * e]) as i64;
        i = e;
    }
    total
}

#[inline]
fn dot_u4_i8_chunk(packed: &[u8], q: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { dot_u4_i8_avx2(packed, q) };
        }
    }
    dot_u4_i8_generic(packed, q)
}

fn dot_u4_i8_generic(packed: &[u8], q: &[i8]) -> i32 {
    let mut s = 0i32;
    for (block, qb) in packed.chunks_exact(32).zip(q.chunks_exact(64)) {
        for j in 0..32 {
            s += (block[j] & 15) as i32 * qb[j] as i32 + (block[j] >> 4) as i32 * qb[32 + j] as i32;
        }
    }
    s
}

/// [`dot_u4_i8_generic`] with AVX2: `maddubs` of the unpacked nibbles (unsigned, at most 14)
/// with the query bytes (products and pair sums at most 2·14·127, no saturation).
///
/// # Safety
/// The CPU must support AVX2. Whole blocks only (32 bytes of `packed`, 64 of `q`); at most 2¹³
/// of them, so that the i32 lanes (at most 8·14·127 per block) cannot overflow.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_u4_i8_avx2(packed: &[u8], q: &[i8]) -> i32 {
    use std::arch::x86_64::*;
    let blocks = (packed.len() / 32).min(q.len() / 64);
    let (pp, pq) = (packed.as_ptr(), q.as_ptr());
    let low = _mm256_set1_epi8(0x0f);
    let ones = _mm256_set1_epi16(1);
    let mut acc = _mm256_setzero_si256();
    for b in 0..blocks {
        // SAFETY: block b covers bytes 32b..32b+32 of `packed` and 64b..64b+64 of `q`.
        let (v, q0, q1) = unsafe {
            (
                _mm256_loadu_si256(pp.add(32 * b) as *const __m256i),
                _mm256_loadu_si256(pq.add(64 * b) as *const __m256i),
                _mm256_loadu_si256(pq.add(64 * b + 32) as *const __m256i),
            )
        };
        let lo = _mm256_and_si256(v, low);
        let hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
        let p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, q0), _mm256_maddubs_epi16(hi, q1));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, ones));
    }
    let mut lanes = [0i32; 8];
    // SAFETY: `lanes` holds 8 i32.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, acc) };
    lanes.iter().sum()
}

/// Ask the CPU to start loading the cache lines of `v` (a hint; no effect elsewhere).
#[inline]
pub(super) fn prefetch_bytes<T>(v: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = v.as_ptr() as *const i8;
        let len = std::mem::size_of_val(v);
        let mut off = 0;
        while off < len {
            // SAFETY: a prefetch is a hint that never faults; the address is inside `v`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.add(off)) };
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = v;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic sequence of small pseudo-random integers.
    fn values(n: usize, seed: u64, range: i64) -> Vec<i64> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % (2 * range as u64 + 1)) as i64 - range
            })
            .collect()
    }

    #[test]
    fn kernels_agree_with_plain_loops() {
        for n in [0usize, 1, 7, 16, 31, 33, 64, 100, 1024, 1031] {
            let a = values(n, 1, 127);
            let b = values(n, 2, 127);
            let ai: Vec<i8> = a.iter().map(|&v| v as i8).collect();
            let bi: Vec<i8> = b.iter().map(|&v| v as i8).collect();
            let want: i64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert_eq!(dot_i8(&ai, &bi), want, "i8, n = {n}");
            assert_eq!(dot_i8_generic(&ai, &bi) as i64, want);

            // Multiples of 1/8 below 8 in magnitude: every product and partial sum is exact in f32.
            let af: Vec<f32> = a.iter().map(|&v| (v / 2) as f32 / 8.0).collect();
            let bf: Vec<f32> = b.iter().map(|&v| (v / 2) as f32 / 8.0).collect();
            let want_f: i64 = a.iter().zip(&b).map(|(x, y)| (x / 2) * (y / 2)).sum();
            assert_eq!(dot(&af, &bf) as f64, want_f as f64 / 64.0, "f32, n = {n}");
            assert_eq!(dot_generic(&af, &bf) as f64, want_f as f64 / 64.0);

            let wa: Vec<u64> = values(n, 3, i64::MAX / 4)
                .iter()
                .map(|&v| v as u64)
                .collect();
            let wb: Vec<u64> = values(n, 4, i64::MAX / 4)
                .iter()
                .map(|&v| v as u64)
                .collect();
            let h: u32 = wa.iter().zip(&wb).map(|(x, y)| (x ^ y).count_ones()).sum();
            assert_eq!(hamming(&wa, &wb), h, "hamming, n = {n}");
        }
        for blocks in [0usize, 1, 2, 5, 16] {
            let nib: Vec<u8> = values(32 * blocks, 5, 7)
                .iter()
                .zip(values(32 * blocks, 6, 7))
                .map(|(&lo, hi)| (lo + 7) as u8 | (((hi + 7) as u8) << 4))
                .collect();
            let q: Vec<i8> = values(64 * blocks, 7, 127)
                .iter()
                .map(|&v| v as i8)
                .collect();
            let mut want = 0i32;
            for b in 0..blocks {
                for j in 0..32 {
                    let byte = nib[32 * b + j];
                    want += (byte & 15) as i32 * q[64 * b + j] as i32;
                    want += (byte >> 4) as i32 * q[64 * b + 32 + j] as i32;
                }
            }
            assert_eq!(dot_u4_i8(&nib, &q), want as i64, "u4, {blocks} blocks");
            assert_eq!(dot_u4_i8_generic(&nib, &q), want);
        }
    }
}
