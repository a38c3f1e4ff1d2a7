//! A bulk ChaCha20 keystream generator: the same cipher and the same stream layout as
//! `rand_chacha::ChaCha20Rng` (Bernstein 2008, "ChaCha, a variant of Salsa20": 20 rounds, a
//! 256-bit key, a 64-bit block counter in state words 12–13 and a 64-bit stream id in words
//! 14–15), computed sixteen blocks at a time in 512-bit registers when the CPU has AVX-512,
//! eight at a time in 256-bit registers with AVX2 otherwise (and for runs shorter than sixteen
//! blocks).
//!
//! **Why.** The local mechanisms draw one 64-bit word per coordinate, so at d ≥ 10⁴ a client's
//! cost is the keystream's. `rand_chacha` computes four blocks per call with 128-bit lanes
//! (rows of two blocks per 256-bit register, shuffled between column and diagonal rounds); here
//! each 256-bit register holds one state word of eight blocks ("vertical" layout), so the rounds
//! need no shuffles, and the eight blocks are transposed once at the end. With AVX-512 the same
//! layout holds sixteen blocks per 512-bit register, every rotation is one `vprold` (instead
//! of a byte shuffle or a shift pair), and the 32 vector registers keep the state and its input
//! in registers; the 256-bit code uses the same rotations (AVX-512VL) for shorter runs. On this
//! project's machine: 2.78 GiB/s with AVX2, 4.0 with the AVX-512VL rotations, 7.5 with sixteen
//! blocks (docs/performance.md, "Local DP: client cost").
//!
//! **Same cipher, same stream.** Nothing about the generator changes but the speed: [`fill`]
//! writes exactly the words `rand_chacha::ChaCha20Rng` would return from the same
//! `(key, stream, word position)` — checked against it at many positions, lengths and stream
//! ids, against the RFC 8439 §2.3.2 block test vector, and the SIMD paths against the portable
//! one. The choice between the two paths is made at run time, but both compute the same integer
//! function, so the output never depends on the machine. [`fill_from_rng`] takes the key, stream
//! and position out of a `rand_chacha::ChaCha20Rng`, fills, and moves the generator past the
//! words it wrote: the generator is left exactly where `fill_bytes` of the same length would
//! have left it.

use rand_chacha::ChaCha20Rng;

/// `"expand 32-byte k"`.
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// Words per block.
const BLOCK_WORDS: usize = 16;

/// The initial state of block `counter` of `(key, stream)`.
fn state(key: &[u32; 8], stream: u64, counter: u64) -> [u32; 16] {
    let mut s = [0u32; 16];
    s[..4].copy_from_slice(&SIGMA);
    s[4..12].copy_from_slice(key);
    s[12] = counter as u32;
    s[13] = (counter >> 32) as u32;
    s[14] = stream as u32;
    s[15] = (stream >> 32) as u32;
    s
}

#[inline(always)]
fn quarter(x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(16);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(12);
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(8);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(7);
}

/// One block, portable: 10 double rounds (column then diagonal), plus the input state.
fn block(key: &[u32; 8], stream: u64, counter: u64) -> [u32; 16] {
    block_rounds(key, stream, counter, 10)
}

/// One block with `double_rounds` double rounds (10 for ChaCha20; other counts only in tests).
fn block_rounds(key: &[u32; 8], stream: u64, counter: u64, double_rounds: usize) -> [u32; 16] {
    let s = state(key, stream, counter);
    let mut x = s;
    for _ in 0..double_rounds {
        quarter(&mut x, 0, 4, 8, 12);
        quarter(&mut x, 1, 5, 9, 13);
        quarter(&mut x, 2, 6, 10, 14);
        quarter(&mut x, 3, 7, 11, 15);
        quarter(&mut x, 0, 5, 10, 15);
        quarter(&mut x, 1, 6, 11, 12);
        quarter(&mut x, 2, 7, 8, 13);
        quarter(&mut x, 3, 4, 9, 14);
    }
    for (xi, si) in x.iter_mut().zip(&s) {
        *xi = xi.wrapping_add(*si);
    }
    x
}

/// The key as eight little-endian words (how ChaCha reads its 32 key bytes).
pub fn key_words(key: &[u8; 32]) -> [u32; 8] {
    let mut k = [0u32; 8];
    for (w, b) in k.iter_mut().zip(key.chunks_exact(4)) {
        *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    k
}

/// How the keystream blocks are computed: all three give the same words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    /// One block at a time, no SIMD.
    Portable,
    /// Eight blocks in 256-bit registers (AVX2; rotations by byte shuffles and shift pairs).
    Avx2,
    /// AVX-512: sixteen blocks in 512-bit registers for whole sixteen-block runs, the eight-block
    /// code with AVX-512VL single-instruction rotations for shorter ones.
    Avx512,
}

/// The fastest path this CPU runs (decided at run time; the detection is cached by `std`).
#[inline]
fn best_path() -> Path {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vl")
        {
            return Path::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return Path::Avx2;
        }
    }
    Path::Portable
}

/// Eight blocks `counter … counter + 7` into `out` (128 words) by `path`.
fn eight(key: &[u32; 8], stream: u64, counter: u64, out: &mut [u32], path: Path) {
    debug_assert_eq!(out.len(), 8 * BLOCK_WORDS);
    #[cfg(target_arch = "x86_64")]
    match path {
        // SAFETY: `best_path` checked the CPU features; `out` has exactly 128 words.
        Path::Avx512 => return unsafe { avx2::eight_blocks_avx512(key, stream, counter, out) },
        Path::Avx2 => return unsafe { avx2::eight_blocks(key, stream, counter, out) },
        Path::Portable => {}
    }
    let _ = path;
    for (b, chunk) in out.chunks_exact_mut(BLOCK_WORDS).enumerate() {
        chunk.copy_from_slice(&block(key, stream, counter.wrapping_add(b as u64)));
    }
}

/// Whole blocks `counter, counter + 1, …` into `out` (`out.len()` a multiple of 16).
#[cfg(test)]
fn blocks(key: &[u32; 8], stream: u64, counter: u64, out: &mut [u32]) {
    debug_assert_eq!(out.len() % BLOCK_WORDS, 0);
    fill(key, stream, counter as u128 * BLOCK_WORDS as u128, out);
}

/// The portable path only (tests compare the two).
#[cfg(test)]
fn blocks_portable(key: &[u32; 8], stream: u64, mut counter: u64, out: &mut [u32]) {
    for chunk in out.chunks_exact_mut(BLOCK_WORDS) {
        chunk.copy_from_slice(&block(key, stream, counter));
        counter = counter.wrapping_add(1);
    }
}

/// Words `word_pos, word_pos + 1, …` of the keystream of `(key, stream)` into `out`. The word
/// position is taken modulo 2⁶⁸ (the 64-bit block counter wraps, as in `rand_chacha`).
///
/// Aligned runs of eight blocks are written in place; a run that starts inside a block or ends
/// before eight blocks is computed eight blocks at a time into a scratch buffer (with AVX2 that
/// costs about as much as two single blocks) and the words needed are copied.
pub fn fill(key: &[u32; 8], stream: u64, word_pos: u128, out: &mut [u32]) {
    fill_with(key, stream, word_pos, out, best_path());
}

/// [`fill`] by a given path (one the CPU runs).
fn fill_with(key: &[u32; 8], stream: u64, word_pos: u128, out: &mut [u32], path: Path) {
    let mut counter = (word_pos / BLOCK_WORDS as u128) as u64;
    let mut skip = (word_pos % BLOCK_WORDS as u128) as usize;
    let mut out = out;
    let mut scratch = [0u32; 8 * BLOCK_WORDS];
    while !out.is_empty() {
        #[cfg(target_arch = "x86_64")]
        if path == Path::Avx512 && skip == 0 && out.len() >= 16 * BLOCK_WORDS {
            let (head, tail) = out.split_at_mut(16 * BLOCK_WORDS);
            // SAFETY: `Path::Avx512` only where `best_path` found AVX-512F/VL; 256 words.
            unsafe { avx2::sixteen_blocks_avx512(key, stream, counter, head) };
            counter = counter.wrapping_add(16);
            out = tail;
            continue;
        }
        if skip == 0 && out.len() >= 8 * BLOCK_WORDS {
            let (head, tail) = out.split_at_mut(8 * BLOCK_WORDS);
            eight(key, stream, counter, head, path);
            counter = counter.wrapping_add(8);
            out = tail;
            continue;
        }
        let need = (skip + out.len()).div_ceil(BLOCK_WORDS).min(8);
        if path != Path::Portable && need >= 2 {
            eight(key, stream, counter, &mut scratch, path);
        } else {
            for b in 0..need {
                let c = counter.wrapping_add(b as u64);
                scratch[b * BLOCK_WORDS..(b + 1) * BLOCK_WORDS]
                    .copy_from_slice(&block(key, stream, c));
            }
        }
        let n = (need * BLOCK_WORDS - skip).min(out.len());
        let (head, tail) = out.split_at_mut(n);
        head.copy_from_slice(&scratch[skip..skip + n]);
        counter = counter.wrapping_add(need as u64);
        skip = 0;
        out = tail;
    }
}

/// Fill `out` with the next `2·out.len()` keystream words of `rng` (word `2i` the low half of
/// `out[i]`, as `next_u64` and `fill_bytes` read them) and move `rng` past them: the same words
/// and the same final state as `rng.fill_bytes` on `out`'s bytes.
pub fn fill_from_rng(rng: &mut ChaCha20Rng, out: &mut [u64]) {
    let key = key_words(&rng.get_seed());
    let stream = rng.get_stream();
    let pos = rng.get_word_pos();
    let words: &mut [u32] = bytemuck::cast_slice_mut(out);
    fill(&key, stream, pos, words);
    if cfg!(target_endian = "big") {
        words.iter_mut().for_each(|w| *w = w.swap_bytes());
    }
    rng.set_word_pos(pos.wrapping_add(words.len() as u128) & ((1u128 << 68) - 1));
}

/// Words a [`BufferedChaCha`] computes per refill: two runs of eight blocks.
const BUFFER_WORDS: usize = 16 * BLOCK_WORDS;

/// A `rand_chacha::ChaCha20Rng` read through the multi-block keystream: it returns exactly the
/// words the generator would (`next_u32` one keystream word, `next_u64` two, low word first),
/// computed `BUFFER_WORDS` at a time by [`fill`], and when dropped it leaves the generator
/// just past the words it handed out — as if they had been drawn from the generator itself.
///
/// For code that draws single words in a loop (the DDG's randomised rounding, the exact
/// samplers): `rand_chacha` refills four blocks per call with 128-bit lanes, this computes
/// sixteen per refill with the AVX2 path. Same cipher, same key, same stream, same words; only
/// the speed differs (checked against the generator word for word in the tests).
pub struct BufferedChaCha<'a> {
    rng: &'a mut ChaCha20Rng,
    key: [u32; 8],
    stream: u64,
    /// Keystream position of the word after `buf`'s last.
    end: u128,
    buf: [u32; BUFFER_WORDS],
    /// Next unread word of `buf` (`BUFFER_WORDS`: empty).
    idx: usize,
}

impl<'a> BufferedChaCha<'a> {
    /// Read `rng`'s keystream from its current position.
    pub fn new(rng: &'a mut ChaCha20Rng) -> BufferedChaCha<'a> {
        let key = key_words(&rng.get_seed());
        let stream = rng.get_stream();
        let pos = rng.get_word_pos();
        // The first refill starts at `pos`, placed in `buf` so that later refills begin on
        // eight-block boundaries (whole runs, no scratch copies).
        let skip = (pos % (8 * BLOCK_WORDS) as u128) as usize;
        let mut b = BufferedChaCha {
            rng,
            key,
            stream,
            end: pos - skip as u128,
            buf: [0; BUFFER_WORDS],
            idx: skip,
        };
        b.refill_from(skip);
        b
    }

    /// Compute `buf[from..]`: the words at positions `end + from, …`.
    #[inline(never)]
    fn refill_from(&mut self, from: usize) {
        let start = self.end + from as u128;
        fill(&self.key, self.stream, start, &mut self.buf[from..]);
        self.end = self.end.wrapping_add(BUFFER_WORDS as u128);
        self.idx = from;
    }

    #[inline]
    fn word(&mut self) -> u32 {
        if self.idx == BUFFER_WORDS {
            self.refill_from(0);
        }
        let w = self.buf[self.idx];
        self.idx += 1;
        w
    }
}

impl Drop for BufferedChaCha<'_> {
    fn drop(&mut self) {
        let pos = self.end - (BUFFER_WORDS - self.idx) as u128;
        self.rng.set_word_pos(pos & ((1u128 << 68) - 1));
    }
}

impl rand::TryRng for BufferedChaCha<'_> {
    type Error = core::convert::Infallible;
    #[inline]
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        Ok(self.word())
    }
    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        // both words in the buffer (all but one in 128 draws): one check, one index update
        if self.idx + 2 <= BUFFER_WORDS {
            let (lo, hi) = (self.buf[self.idx] as u64, self.buf[self.idx + 1] as u64);
            self.idx += 2;
            return Ok(lo | (hi << 32));
        }
        let lo = self.word() as u64;
        let hi = self.word() as u64;
        Ok(lo | (hi << 32))
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        for c in dst.chunks_mut(4) {
            let w = self.word().to_le_bytes();
            c.copy_from_slice(&w[..c.len()]);
        }
        Ok(())
    }
}

/// ChaCha20 keystream words are a cryptographically secure generator's output.
impl rand::TryCryptoRng for BufferedChaCha<'_> {}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{state, BLOCK_WORDS};

    #[inline(always)]
    unsafe fn rot16(x: __m256i) -> __m256i {
        let m = _mm256_setr_epi8(
            2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11,
            8, 9, 14, 15, 12, 13,
        );
        _mm256_shuffle_epi8(x, m)
    }

    #[inline(always)]
    unsafe fn rot8(x: __m256i) -> __m256i {
        let m = _mm256_setr_epi8(
            3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14, 3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9,
            10, 15, 12, 13, 14,
        );
        _mm256_shuffle_epi8(x, m)
    }

    #[inline(always)]
    unsafe fn rot12(x: __m256i) -> __m256i {
        _mm256_or_si256(_mm256_slli_epi32(x, 12), _mm256_srli_epi32(x, 20))
    }

    #[inline(always)]
    unsafe fn rot7(x: __m256i) -> __m256i {
        _mm256_or_si256(_mm256_slli_epi32(x, 7), _mm256_srli_epi32(x, 25))
    }

    /// The state words 12 and 13 of `N` blocks side by side: the low and high halves of the
    /// 64-bit counters `counter + j` (the carry into word 13 included).
    #[inline(always)]
    fn lane_counters<const N: usize>(counter: u64) -> ([i32; N], [i32; N]) {
        let c = |j: usize| counter.wrapping_add(j as u64);
        (
            core::array::from_fn(|j| c(j) as u32 as i32),
            core::array::from_fn(|j| (c(j) >> 32) as u32 as i32),
        )
    }

    /// One quarter round on eight blocks; `VL`: AVX-512VL rotations (`vprold`), one
    /// instruction each, instead of shuffles and shift pairs.
    #[inline(always)]
    unsafe fn quarter<const VL: bool>(
        x: &mut [__m256i; 16],
        a: usize,
        b: usize,
        c: usize,
        d: usize,
    ) {
        x[a] = _mm256_add_epi32(x[a], x[b]);
        let t = _mm256_xor_si256(x[d], x[a]);
        x[d] = if VL {
            _mm256_rol_epi32::<16>(t)
        } else {
            rot16(t)
        };
        x[c] = _mm256_add_epi32(x[c], x[d]);
        let t = _mm256_xor_si256(x[b], x[c]);
        x[b] = if VL {
            _mm256_rol_epi32::<12>(t)
        } else {
            rot12(t)
        };
        x[a] = _mm256_add_epi32(x[a], x[b]);
        let t = _mm256_xor_si256(x[d], x[a]);
        x[d] = if VL {
            _mm256_rol_epi32::<8>(t)
        } else {
            rot8(t)
        };
        x[c] = _mm256_add_epi32(x[c], x[d]);
        let t = _mm256_xor_si256(x[b], x[c]);
        x[b] = if VL {
            _mm256_rol_epi32::<7>(t)
        } else {
            rot7(t)
        };
    }

    /// Transpose the 8×8 matrix of words held by `r` (row `i` = register `i`, lane `j` = block
    /// `j`) so that register `j` holds block `j`'s eight words.
    #[inline(always)]
    unsafe fn transpose(r: [__m256i; 8]) -> [__m256i; 8] {
        let t0 = _mm256_unpacklo_epi32(r[0], r[1]);
        let t1 = _mm256_unpackhi_epi32(r[0], r[1]);
        let t2 = _mm256_unpacklo_epi32(r[2], r[3]);
        let t3 = _mm256_unpackhi_epi32(r[2], r[3]);
        let t4 = _mm256_unpacklo_epi32(r[4], r[5]);
        let t5 = _mm256_unpackhi_epi32(r[4], r[5]);
        let t6 = _mm256_unpacklo_epi32(r[6], r[7]);
        let t7 = _mm256_unpackhi_epi32(r[6], r[7]);
        let u0 = _mm256_unpacklo_epi64(t0, t2);
        let u1 = _mm256_unpackhi_epi64(t0, t2);
        let u2 = _mm256_unpacklo_epi64(t1, t3);
        let u3 = _mm256_unpackhi_epi64(t1, t3);
        let u4 = _mm256_unpacklo_epi64(t4, t6);
        let u5 = _mm256_unpackhi_epi64(t4, t6);
        let u6 = _mm256_unpacklo_epi64(t5, t7);
        let u7 = _mm256_unpackhi_epi64(t5, t7);
        [
            _mm256_permute2x128_si256(u0, u4, 0x20),
            _mm256_permute2x128_si256(u1, u5, 0x20),
            _mm256_permute2x128_si256(u2, u6, 0x20),
            _mm256_permute2x128_si256(u3, u7, 0x20),
            _mm256_permute2x128_si256(u0, u4, 0x31),
            _mm256_permute2x128_si256(u1, u5, 0x31),
            _mm256_permute2x128_si256(u2, u6, 0x31),
            _mm256_permute2x128_si256(u3, u7, 0x31),
        ]
    }

    /// Blocks `counter … counter + 7` into `out` (128 words), block `j` at `out[16j..16j+16]`.
    ///
    /// # Safety
    /// The CPU must support AVX2 and `out.len()` must be 128.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn eight_blocks(key: &[u32; 8], stream: u64, counter: u64, out: &mut [u32]) {
        eight_blocks_with::<false>(key, stream, counter, out)
    }

    /// [`eight_blocks`] with AVX-512VL rotations (and its 32 registers).
    ///
    /// # Safety
    /// The CPU must support AVX2, AVX-512F and AVX-512VL and `out.len()` must be 128.
    #[target_feature(enable = "avx2,avx512f,avx512vl")]
    pub(super) unsafe fn eight_blocks_avx512(
        key: &[u32; 8],
        stream: u64,
        counter: u64,
        out: &mut [u32],
    ) {
        eight_blocks_with::<true>(key, stream, counter, out)
    }

    #[inline(always)]
    unsafe fn eight_blocks_with<const VL: bool>(
        key: &[u32; 8],
        stream: u64,
        counter: u64,
        out: &mut [u32],
    ) {
        assert_eq!(out.len(), 8 * BLOCK_WORDS);
        let s = state(key, stream, counter);
        let mut init = [_mm256_setzero_si256(); 16];
        for (v, w) in init.iter_mut().zip(&s) {
            *v = _mm256_set1_epi32(*w as i32);
        }
        let (lo, hi) = lane_counters::<8>(counter);
        init[12] = _mm256_loadu_si256(lo.as_ptr().cast());
        init[13] = _mm256_loadu_si256(hi.as_ptr().cast());
        let mut x = init;
        for _ in 0..10 {
            quarter::<VL>(&mut x, 0, 4, 8, 12);
            quarter::<VL>(&mut x, 1, 5, 9, 13);
            quarter::<VL>(&mut x, 2, 6, 10, 14);
            quarter::<VL>(&mut x, 3, 7, 11, 15);
            quarter::<VL>(&mut x, 0, 5, 10, 15);
            quarter::<VL>(&mut x, 1, 6, 11, 12);
            quarter::<VL>(&mut x, 2, 7, 8, 13);
            quarter::<VL>(&mut x, 3, 4, 9, 14);
        }
        for (xi, si) in x.iter_mut().zip(&init) {
            *xi = _mm256_add_epi32(*xi, *si);
        }
        let a = transpose([x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]]);
        let b = transpose([x[8], x[9], x[10], x[11], x[12], x[13], x[14], x[15]]);
        let p = out.as_mut_ptr();
        for j in 0..8 {
            // In bounds: out has 128 words (asserted above), block j ends at 16j + 16 ≤ 128.
            _mm256_storeu_si256(p.add(BLOCK_WORDS * j).cast(), a[j]);
            _mm256_storeu_si256(p.add(BLOCK_WORDS * j + 8).cast(), b[j]);
        }
    }

    /// Blocks `counter … counter + 15` into `out` (256 words) in 512-bit registers, one state
    /// word of sixteen blocks per register, then a 16×16 transpose (two unpack steps within
    /// 128-bit lanes, then a 4×4 transpose of the lanes).
    ///
    /// # Safety
    /// The CPU must support AVX-512F and `out.len()` must be 256.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn sixteen_blocks_avx512(
        key: &[u32; 8],
        stream: u64,
        counter: u64,
        out: &mut [u32],
    ) {
        assert_eq!(out.len(), 16 * BLOCK_WORDS);
        let s = state(key, stream, counter);
        let mut init = [_mm512_setzero_si512(); 16];
        for (v, w) in init.iter_mut().zip(&s) {
            *v = _mm512_set1_epi32(*w as i32);
        }
        let (lo, hi) = lane_counters::<16>(counter);
        init[12] = _mm512_loadu_si512(lo.as_ptr().cast());
        init[13] = _mm512_loadu_si512(hi.as_ptr().cast());
        let mut x = init;
        macro_rules! qr {
            ($a:expr, $b:expr, $c:expr, $d:expr) => {
                x[$a] = _mm512_add_epi32(x[$a], x[$b]);
                x[$d] = _mm512_rol_epi32::<16>(_mm512_xor_si512(x[$d], x[$a]));
                x[$c] = _mm512_add_epi32(x[$c], x[$d]);
                x[$b] = _mm512_rol_epi32::<12>(_mm512_xor_si512(x[$b], x[$c]));
                x[$a] = _mm512_add_epi32(x[$a], x[$b]);
                x[$d] = _mm512_rol_epi32::<8>(_mm512_xor_si512(x[$d], x[$a]));
                x[$c] = _mm512_add_epi32(x[$c], x[$d]);
                x[$b] = _mm512_rol_epi32::<7>(_mm512_xor_si512(x[$b], x[$c]));
            };
        }
        for _ in 0..10 {
            qr!(0, 4, 8, 12);
            qr!(1, 5, 9, 13);
            qr!(2, 6, 10, 14);
            qr!(3, 7, 11, 15);
            qr!(0, 5, 10, 15);
            qr!(1, 6, 11, 12);
            qr!(2, 7, 8, 13);
            qr!(3, 4, 9, 14);
        }
        for (xi, si) in x.iter_mut().zip(&init) {
            *xi = _mm512_add_epi32(*xi, *si);
        }
        // v[g][r], lane L: words 4g..4g+3 of block 4L + r.
        let mut v = [[_mm512_setzero_si512(); 4]; 4];
        for (g, vg) in v.iter_mut().enumerate() {
            let (w0, w1, w2, w3) = (x[4 * g], x[4 * g + 1], x[4 * g + 2], x[4 * g + 3]);
            let t0 = _mm512_unpacklo_epi32(w0, w1);
            let t1 = _mm512_unpackhi_epi32(w0, w1);
            let t2 = _mm512_unpacklo_epi32(w2, w3);
            let t3 = _mm512_unpackhi_epi32(w2, w3);
            *vg = [
                _mm512_unpacklo_epi64(t0, t2),
                _mm512_unpackhi_epi64(t0, t2),
                _mm512_unpacklo_epi64(t1, t3),
                _mm512_unpackhi_epi64(t1, t3),
            ];
        }
        let p = out.as_mut_ptr();
        #[allow(clippy::needless_range_loop)] // r picks a column of v and a block offset
        for r in 0..4 {
            let (a, b, c, d) = (v[0][r], v[1][r], v[2][r], v[3][r]);
            let s0 = _mm512_shuffle_i32x4::<0b01_00_01_00>(a, b);
            let s1 = _mm512_shuffle_i32x4::<0b11_10_11_10>(a, b);
            let s2 = _mm512_shuffle_i32x4::<0b01_00_01_00>(c, d);
            let s3 = _mm512_shuffle_i32x4::<0b11_10_11_10>(c, d);
            let o = [
                _mm512_shuffle_i32x4::<0b10_00_10_00>(s0, s2),
                _mm512_shuffle_i32x4::<0b11_01_11_01>(s0, s2),
                _mm512_shuffle_i32x4::<0b10_00_10_00>(s1, s3),
                _mm512_shuffle_i32x4::<0b11_01_11_01>(s1, s3),
            ];
            for (l, ol) in o.iter().enumerate() {
                // Block 4l + r at words 16(4l + r) … + 16 ≤ 256 (asserted above).
                _mm512_storeu_si512(p.add(BLOCK_WORDS * (4 * l + r)).cast(), *ol);
            }
        }
    }
}

#[cfg(test)]
mod tests {

    /// The buffered reader returns the generator's own words (single words and pairs, across
    /// refills, from unaligned starting positions and other streams) and leaves the generator
    /// exactly where drawing them directly would have; a reader that skipped or repeated a
    /// word would fail the comparison.
    #[test]
    fn buffered_reader_is_the_generator() {
        for (stream, skip) in [(0u64, 0usize), (3, 5), (1 << 40, 127), (9, 130), (2, 300)] {
            let mut direct = ChaCha20Rng::from_seed([stream as u8 ^ 0x5a; 32]);
            direct.set_stream(stream);
            for _ in 0..skip {
                direct.next_u32();
            }
            let mut via = direct.clone();
            let mut want = Vec::new();
            let mut got = Vec::new();
            {
                let mut b = BufferedChaCha::new(&mut via);
                for i in 0..1500 {
                    if i % 3 == 0 {
                        want.push(direct.next_u32() as u64);
                        got.push(b.next_u32() as u64);
                    } else {
                        want.push(direct.next_u64());
                        got.push(b.next_u64());
                    }
                }
            }
            assert_eq!(got, want, "stream {stream}, skip {skip}");
            assert_eq!(via.get_word_pos(), direct.get_word_pos());
            assert_eq!(via.next_u64(), direct.next_u64());
        }
    }
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn rfc8439_block_vector() {
        // RFC 8439 §2.3.2: key 00 01 … 1f, nonce 00:00:00:09:00:00:00:4a:00:00:00:00, block
        // count 1. In the 64/64 layout, words 12–13 are (counter = 1, nonce word 0 = 0x09000000)
        // and words 14–15 are nonce words 1–2 (0x4a000000, 0).
        let mut key = [0u8; 32];
        key.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        let k = key_words(&key);
        let counter = 1u64 | (0x0900_0000u64 << 32);
        let stream = 0x4a00_0000u64;
        let b = block(&k, stream, counter);
        let want: [u32; 16] = [
            0xe4e7f110, 0x15593bd1, 0x1fdd0f50, 0xc47120a3, 0xc7f4d1c7, 0x0368c033, 0x9aaa2204,
            0x4e6cd4c3, 0x466482d2, 0x09aa9f07, 0x05d7c214, 0xa2028bd9, 0xd19c12b5, 0xb94e16de,
            0xe883d0cb, 0x4e3c50a2,
        ];
        assert_eq!(b, want);
        // The same block through the eight-way path (first of eight).
        let mut out = vec![0u32; 128];
        blocks(&k, stream, counter, &mut out);
        assert_eq!(out[..16], want);
    }

    #[test]
    fn equals_rand_chacha_everywhere() {
        let seeds: [[u8; 32]; 2] = [[0; 32], core::array::from_fn(|i| (i * 37 + 5) as u8)];
        // Positions at block boundaries and inside blocks, near the 32-bit carry of the counter,
        // lengths shorter than a block to several eight-block chunks plus a tail.
        let positions: [u128; 6] = [
            0,
            5,
            16 * 7 + 3,
            16 * ((1u128 << 32) - 3),
            16 * ((1u128 << 32) - 3) + 9,
            (1u128 << 68) - 16 * 5 + 1,
        ];
        for seed in seeds {
            for stream in [0u64, 5, u64::MAX - 1] {
                for &pos in &positions {
                    for len in [1usize, 2, 8, 64, 127, 300, 1000] {
                        let mut r = ChaCha20Rng::from_seed(seed);
                        r.set_stream(stream);
                        r.set_word_pos(pos);
                        let mut want = vec![0u8; 8 * len];
                        r.fill_bytes(&mut want);
                        let after = r.next_u64();

                        let mut s = ChaCha20Rng::from_seed(seed);
                        s.set_stream(stream);
                        s.set_word_pos(pos);
                        let mut got = vec![0u64; len];
                        fill_from_rng(&mut s, &mut got);
                        let got_bytes: Vec<u8> = got.iter().flat_map(|w| w.to_le_bytes()).collect();
                        assert_eq!(got_bytes, want, "stream {stream}, pos {pos}, len {len}");
                        assert_eq!(s.next_u64(), after, "state after, pos {pos}, len {len}");

                        let mut p = vec![0u32; 2 * len];
                        let c = (pos / 16) as u64;
                        let skip = (pos % 16) as usize;
                        let mut whole = vec![0u32; (2 * len + skip).div_ceil(16) * 16];
                        blocks_portable(&key_words(&seed), stream, c, &mut whole);
                        p.copy_from_slice(&whole[skip..skip + 2 * len]);
                        let w32: &[u32] = bytemuck::cast_slice(&got);
                        assert_eq!(w32, &p[..], "portable, pos {pos}, len {len}");
                    }
                }
            }
        }
    }

    #[test]
    fn simd_and_portable_paths_agree() {
        // Every SIMD path this CPU runs (on an AVX-512 machine all three are compared).
        let mut paths = vec![best_path()];
        if best_path() == Path::Avx512 {
            paths.push(Path::Avx2);
        }
        let key = key_words(&core::array::from_fn(|i| (200 - i) as u8));
        for pos in [0u128, 1, 15, 16, 17, 16 * 8 - 1, 16 * 9 + 5] {
            for len in [1usize, 15, 16, 31, 100, 128, 129, 255, 256, 1000] {
                let mut a = vec![0u32; len];
                fill_with(&key, 7, pos, &mut a, Path::Portable);
                for &path in &paths {
                    let mut b = vec![0u32; len];
                    fill_with(&key, 7, pos, &mut b, path);
                    assert_eq!(a, b, "{path:?}, pos {pos}, len {len}");
                }
                let c = (pos / 16) as u64;
                let skip = (pos % 16) as usize;
                let mut whole = vec![0u32; (len + skip).div_ceil(16) * 16];
                blocks_portable(&key, 7, c, &mut whole);
                assert_eq!(a, whole[skip..skip + len], "pos {pos}, len {len}");
            }
        }
    }

    #[test]
    fn round_count_is_twenty_and_a_wrong_one_is_caught() {
        // The portable block with 4 and 6 double rounds is rand_chacha's ChaCha8 and ChaCha12:
        // the round function is right, and the round count is what tells them apart (the
        // comparisons above would fail for a ChaCha20 that ran 8 or 12 rounds).
        let seed: [u8; 32] = core::array::from_fn(|i| (3 * i + 1) as u8);
        let k = key_words(&seed);
        let first = |r: &mut dyn FnMut() -> u32| -> [u32; 16] { core::array::from_fn(|_| r()) };
        let mut r8 = rand_chacha::ChaCha8Rng::from_seed(seed);
        let mut r12 = rand_chacha::ChaCha12Rng::from_seed(seed);
        let mut r20 = ChaCha20Rng::from_seed(seed);
        let w8 = first(&mut || r8.next_u32());
        let w12 = first(&mut || r12.next_u32());
        let w20 = first(&mut || r20.next_u32());
        assert_eq!(block_rounds(&k, 0, 0, 4), w8);
        assert_eq!(block_rounds(&k, 0, 0, 6), w12);
        assert_eq!(block(&k, 0, 0), w20);
        assert_ne!(w8, w20);
        assert_ne!(w12, w20);
    }
}
