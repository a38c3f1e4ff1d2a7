//! Quantised directions of real sketches: what an HNSW graph is built on (8 bits per value) and
//! walked with (4 bits per value from k = 512, 8 bits below).
//!
//! Both codes approximate the *unit* rows `x/‖x‖`; the rows a walk returns are re-scored from the
//! release's f32 values, so quantisation only decides which rows a walk visits, never a score
//! reported. Memory traffic is what a walk spends its time on (a few hundred rows scattered over
//! the whole database per query): 4-bit codes halve it against 8 bits, and on MNIST
//! `dp-rp-g-opt` sketches (k = 1024, cosine, m = 24) changed recall@10 by at most 0.01 at
//! ef = 16–32 (0.952 against 0.954 at ef = 24).

use rayon::prelude::*;

use super::huge::HugeBuf;
use super::kernels::{dot_i8, dot_u4_i8, prefetch_bytes};
use super::Measure;

/// `x` rounded to the nearest integer (halves away from zero) and clamped to `±limit`
/// (`limit` a whole number below 2³¹): `round()` is a library call on the baseline x86-64
/// target, this is a few instructions. Only speed differs from `round().clamp()`.
#[inline]
fn quantise(x: f64, limit: f64) -> i32 {
    let c = x.clamp(-limit, limit);
    // Truncation toward zero (an `as` conversion) after adding ½ with the sign of c. (c + ½
    // rounds up to 1 for the largest double below ½, which only moves that one code by one.)
    (c + 0.5f64.copysign(c)) as i32
}

/// `‖x‖²` in f64.
pub(super) fn norm2(x: &[f32]) -> f64 {
    x.iter().map(|&v| (v as f64) * (v as f64)).sum()
}

/// `1 − s`, or `+0.0` where that is not positive (or NaN): the walk distance for similarity `s`
/// (HNSW needs distances `≥ 0`, smallest best).
#[inline]
pub(super) fn walk_dist(s: f32) -> f32 {
    let d = 1.0 - s;
    if d > 0.0 {
        d
    } else {
        0.0
    }
}

/// The rows' unit directions quantised to i8 with one scale `S` for all rows,
/// `S = 127 / (largest coordinate of any unit row)`, so `⟨a, b⟩ ≈ dot/S²` for all pairs alike:
/// the vectors the graph is built on. (A quarter of the memory traffic of
/// f32, with the same recall; construction compares pairs of rows, which the symmetric 8-bit code
/// keeps simple.)
pub(super) struct ByteCodes {
    pub(super) data: HugeBuf<i8>,
    pub(super) scale: f32,
}

impl ByteCodes {
    pub(super) fn new(data: &[f32], k: usize) -> ByteCodes {
        let norms: Vec<f64> = data.par_chunks(k).map(|x| norm2(x).sqrt()).collect();
        let max_abs = data
            .par_chunks(k)
            .zip(norms.par_iter())
            .map(|(x, &nr)| {
                if nr > 0.0 {
                    x.iter().map(|&v| (v as f64).abs() / nr).fold(0.0, f64::max)
                } else {
                    0.0
                }
            })
            .reduce(|| 0.0, f64::max);
        let scale = if max_abs > 0.0 { 127.0 / max_abs } else { 1.0 };
        let mut codes = HugeBuf::<i8>::zeroed(data.len());
        codes
            .par_chunks_mut(k)
            .zip(data.par_chunks(k).zip(norms.par_iter()))
            .for_each(|(c, (x, &nr))| {
                if nr > 0.0 {
                    let f = scale / nr;
                    for (c, &v) in c.iter_mut().zip(x) {
                        *c = quantise(v as f64 * f, 127.0) as i8;
                    }
                }
            });
        ByteCodes {
            data: codes,
            scale: scale as f32,
        }
    }
}

/// `1 − ⟨a, b⟩` for unit vectors coded by [`ByteCodes`] with scale `S` (`⟨a, b⟩ ≈ dot/S²`),
/// clamped at `+0`: the distance the graph is built with.
#[derive(Debug, Clone, Copy)]
pub(super) struct ByteDot {
    pub(super) inv_s2: f32,
}

impl ByteDot {
    /// The distance between two coded rows.
    #[inline]
    pub(super) fn eval(&self, va: &[i8], vb: &[i8]) -> f32 {
        walk_dist(dot_i8(va, vb) as f32 * self.inv_s2)
    }
}

/// Number of levels either side of 0 in a 4-bit code (codes `0..=14`, 7 meaning 0).
const LEVELS: f64 = 7.0;
/// Values sampled to fit the 4-bit step.
const STEP_SAMPLE: usize = 1 << 16;
/// Walks use 4-bit codes from this many values per row, 8-bit codes below. Short rows span only a
/// few cache lines either way, while the 4-bit error in a similarity, about `0.1/√k`, costs
/// recall there (MNIST `dp-oporp` k = 256, cosine, ef = 64: recall@10 0.985 against 0.990 with
/// 8 bits; the bundled sample at k = 48: 0.93 against 0.95 and more).
pub(super) const NIBBLE_MIN_K: usize = 512;

/// The codes an HNSW walk compares: the rows' unit directions in 8 bits ([`ByteCodes`], for
/// `k <` [`NIBBLE_MIN_K`]) or in 4 bits per value, two values per byte.
///
/// In 4 bits, value `v` of a unit row is stored as `n = clamp(round(v/Δ), −7, 7) + 7`, in
/// `0..=14` (0 is exact, so padding and zero rows contribute nothing); for each block of 64
/// values, byte `j` holds value `j` in its low and value `32 + j` in its high nibble. One step `Δ`
/// for all rows, the one that minimises the squared quantisation error over a sample of the
/// values ([`fit_step`]; about `0.3/√k` for Gaussian-like values). A query is coded in 8 bits,
/// `q̃ = round(q·s)` with `s = 127/max|q_i|`, so that
/// `⟨q/‖q‖, x/‖x‖⟩ ≈ Δ/(s‖q‖) · Σ q̃_i (n_i − 7)`. In 8 bits the query is coded with the rows'
/// scale `S` and `⟨q/‖q‖, x/‖x‖⟩ ≈ Σ q̃_i x̃_i / S²`.
pub(super) struct WalkCodes {
    kind: Kind,
    /// Per row `‖x‖/M` (`M` the largest row norm) for inner products, which the walk compares
    /// as `⟨q/‖q‖, x⟩/M` (see the `hnsw` module docs); empty for cosine.
    factor: Vec<f32>,
}

enum Kind {
    Bytes(ByteCodes, usize),
    Nibbles {
        data: HugeBuf<u8>,
        /// Bytes per row: values per row rounded up to a multiple of 64, halved.
        width: usize,
        step: f64,
    },
}

/// A query coded for [`WalkCodes::dist`]: similarity `≈ (Σ code_i·row_i − offset)·scale`.
pub(super) struct CodedQuery {
    /// `q̃`, padded with zeros to the rows' padded length.
    code: Vec<i8>,
    scale: f32,
    offset: i64,
}

impl WalkCodes {
    pub(super) fn new(data: &[f32], k: usize, measure: Measure) -> WalkCodes {
        let norms: Vec<f64> = data.par_chunks(k).map(|x| norm2(x).sqrt()).collect();
        let kind = if k >= NIBBLE_MIN_K {
            nibbles(data, k, &norms)
        } else {
            Kind::Bytes(ByteCodes::new(data, k), k)
        };
        let max_norm = norms.iter().copied().fold(0.0, f64::max);
        let factor = match measure {
            Measure::Ip if max_norm > 0.0 => norms.iter().map(|&r| (r / max_norm) as f32).collect(),
            Measure::Ip => vec![0.0; norms.len()],
            _ => Vec::new(),
        };
        WalkCodes { kind, factor }
    }

    /// Whether the rows are coded in 4 bits.
    #[cfg(test)]
    fn is_nibbles(&self) -> bool {
        matches!(self.kind, Kind::Nibbles { .. })
    }

    /// An empty query buffer of the rows' padded length.
    pub(super) fn query_buffer(&self) -> CodedQuery {
        let len = match &self.kind {
            Kind::Bytes(_, k) => *k,
            Kind::Nibbles { width, .. } => 2 * width,
        };
        CodedQuery {
            code: vec![0; len],
            scale: 0.0,
            offset: 0,
        }
    }

    /// Code the query `q` into `out`; `false` for a zero query (nothing coded).
    pub(super) fn code_query(&self, q: &[f32], out: &mut CodedQuery) -> bool {
        let nr = norm2(q).sqrt();
        let max = q.iter().map(|&v| (v as f64).abs()).fold(0.0, f64::max);
        if nr == 0.0 || max == 0.0 {
            return false;
        }
        let s = match &self.kind {
            Kind::Bytes(c, _) => c.scale as f64 / nr,
            Kind::Nibbles { .. } => 127.0 / max,
        };
        out.code.fill(0);
        for (c, &v) in out.code.iter_mut().zip(q) {
            *c = quantise(v as f64 * s, 127.0) as i8;
        }
        (out.scale, out.offset) = match &self.kind {
            Kind::Bytes(c, _) => ((1.0 / (c.scale as f64 * c.scale as f64)) as f32, 0),
            // q/‖q‖ ≈ q̃/(s‖q‖) and x/‖x‖ ≈ Δ(n − 7)
            Kind::Nibbles { step, .. } => (
                (step / (s * nr)) as f32,
                7 * out.code.iter().map(|&v| v as i64).sum::<i64>(),
            ),
        };
        true
    }

    /// Start loading what [`dist`](Self::dist) reads for row `t`.
    #[inline]
    pub(super) fn prefetch(&self, t: usize) {
        match &self.kind {
            Kind::Bytes(c, k) => prefetch_bytes(&c.data[t * k..(t + 1) * k]),
            Kind::Nibbles { data, width, .. } => prefetch_bytes(&data[t * width..(t + 1) * width]),
        }
        if let Some(f) = self.factor.get(t) {
            prefetch_bytes(std::slice::from_ref(f));
        }
    }

    /// The walk distance of row `t` from a coded query.
    #[inline]
    pub(super) fn dist(&self, q: &CodedQuery, t: usize) -> f32 {
        let d = match &self.kind {
            Kind::Bytes(c, k) => dot_i8(&q.code, &c.data[t * k..(t + 1) * k]),
            Kind::Nibbles { data, width, .. } => {
                dot_u4_i8(&data[t * width..(t + 1) * width], &q.code)
            }
        } - q.offset;
        let f = match self.factor.get(t) {
            Some(&f) => q.scale * f,
            None => q.scale,
        };
        walk_dist(d as f32 * f)
    }
}

/// The 4-bit codes of `data` (rows of `k` values with the given norms).
fn nibbles(data: &[f32], k: usize, norms: &[f64]) -> Kind {
    let n = norms.len();
    let width = k.div_ceil(64) * 32;
    // A deterministic sample of the normalised values; the stride is prime to k, so every
    // column is sampled alike.
    let mut stride = (data.len() / STEP_SAMPLE).max(1);
    while gcd(stride, k) != 1 {
        stride += 1;
    }
    let sample: Vec<f64> = (0..data.len())
        .step_by(stride)
        .filter_map(|i| {
            let nr = norms[i / k];
            (nr > 0.0).then(|| data[i] as f64 / nr)
        })
        .collect();
    let step = fit_step(&sample, LEVELS).unwrap_or(1.0);
    let mut codes = HugeBuf::<u8>::zeroed(n * width);
    codes
        .par_chunks_mut(width)
        .zip(data.par_chunks(k).zip(norms.par_iter()))
        .for_each_init(
            || vec![LEVELS as u8; 2 * width],
            |levels, (c, (x, &nr))| {
                // Codes of the row's values first (the padding keeps code 7, i.e. 0), then
                // packed in pairs: two simple loops the compiler vectorises.
                let f = if nr > 0.0 { 1.0 / (nr * step) } else { 0.0 };
                for (l, &v) in levels.iter_mut().zip(x) {
                    *l = (quantise(v as f64 * f, LEVELS) + LEVELS as i32) as u8;
                }
                for (block, l) in c.chunks_exact_mut(32).zip(levels.chunks_exact(64)) {
                    for (j, byte) in block.iter_mut().enumerate() {
                        *byte = l[j] | (l[32 + j] << 4);
                    }
                }
            },
        );
    Kind::Nibbles {
        data: codes,
        width,
        step,
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The step `Δ` minimising `Σ (v − Δ·clamp(round(v/Δ), −L, L))²` over `values`, by
/// golden-section search between `r/64` and `4r` (`r` the root mean square); `None` when every
/// value is 0. (For Gaussian values the optimum for L = 7 is about 0.3·r; the search range also
/// covers heavy-tailed and sparse values.)
fn fit_step(values: &[f64], levels: f64) -> Option<f64> {
    let ms = values.iter().map(|v| v * v).sum::<f64>() / values.len().max(1) as f64;
    if ms.is_nan() || ms <= 0.0 {
        return None;
    }
    let rms = ms.sqrt();
    let err = |d: f64| -> f64 {
        values
            .iter()
            .map(|&v| {
                let e = v - d * (v / d).round().clamp(-levels, levels);
                e * e
            })
            .sum()
    };
    let (mut a, mut b) = (rms / 64.0, 4.0 * rms);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..50 {
        let (c, d) = (b - g * (b - a), a + g * (b - a));
        if err(c) < err(d) {
            b = d;
        } else {
            a = c;
        }
    }
    Some((a + b) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gaussian-like values from a fixed sum of uniforms (Irwin–Hall, 12 terms).
    fn gaussian(n: usize) -> Vec<f64> {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut u = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        (0..n)
            .map(|_| (0..12).map(|_| u()).sum::<f64>() - 6.0)
            .collect()
    }

    #[test]
    fn quantise_rounds_halves_away_from_zero_and_clamps() {
        for (x, want) in [
            (0.0, 0),
            (0.49, 0),
            (0.5, 1),
            (-0.5, -1),
            (2.6, 3),
            (-2.6, -3),
            (-2.4, -2),
            (6.7, 7),
            (7.6, 7),
            (-100.0, -7),
        ] {
            assert_eq!(quantise(x, 7.0), want, "{x}");
        }
        assert_eq!(quantise(300.2, 127.0), 127);
        assert_eq!(quantise(-126.5, 127.0), -127);
    }

    #[test]
    fn fitted_step_matches_the_gaussian_optimum() {
        // Max (1960): the best uniform 15-level quantiser of N(0, 1) has a step near 0.3 and an
        // error near 0.01; a step 30% off either way is clearly worse.
        let v = gaussian(200_000);
        let d = fit_step(&v, LEVELS).unwrap();
        assert!((0.27..0.36).contains(&d), "step {d}");
        let mse = |d: f64| {
            v.iter()
                .map(|&x| (x - d * (x / d).round().clamp(-LEVELS, LEVELS)).powi(2))
                .sum::<f64>()
                / v.len() as f64
        };
        assert!(mse(d) < 0.0125, "mse {}", mse(d));
        assert!(mse(d) < mse(0.7 * d) && mse(d) < mse(1.3 * d));
        assert_eq!(fit_step(&[0.0, 0.0], LEVELS), None);
    }

    #[test]
    fn walk_similarities_approximate_the_cosine_and_inner_product() {
        // k = 100 (8 bits) and 600 (4 bits, not a multiple of 64: padding must contribute
        // nothing); row norms vary.
        for k in [100usize, 600] {
            let n = 200;
            let g = gaussian(n * k + k);
            let data: Vec<f32> = g[..n * k]
                .chunks(k)
                .enumerate()
                .flat_map(|(i, r)| {
                    r.iter()
                        .map(move |&v| (v * (1.0 + i as f64 / n as f64)) as f32)
                })
                .collect();
            let q: Vec<f32> = g[n * k..].iter().map(|&v| v as f32).collect();
            let dot = |a: &[f32], b: &[f32]| -> f64 {
                a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum()
            };
            let nq = dot(&q, &q).sqrt();
            let max_norm = data.chunks(k).map(|r| dot(r, r).sqrt()).fold(0.0, f64::max);
            for measure in [Measure::Cosine, Measure::Ip] {
                let c = WalkCodes::new(&data, k, measure);
                assert_eq!(c.is_nibbles(), k >= NIBBLE_MIN_K);
                let mut qc = c.query_buffer();
                assert!(c.code_query(&q, &mut qc));
                let mut worst = 0f64;
                for (t, r) in data.chunks(k).enumerate() {
                    let nr = dot(r, r).sqrt();
                    let want = match measure {
                        Measure::Ip => dot(&q, r) / (nq * max_norm),
                        _ => dot(&q, r) / (nq * nr),
                    };
                    worst = worst.max((1.0 - c.dist(&qc, t) as f64 - want).abs());
                }
                // 4 bits: an error of about 0.1/√k per similarity (0.004 at k = 600; the
                // worst of 200 measured 0.012); 8 bits: 0.004 at k = 100 (measured).
                let bound = if c.is_nibbles() { 0.02 } else { 0.01 };
                assert!(worst < bound, "k = {k}, {measure:?}: worst error {worst}");
            }
            // A zero query is not coded; a zero row is at distance 1.
            let c = WalkCodes::new(&data, k, Measure::Cosine);
            let mut qc = c.query_buffer();
            assert!(!c.code_query(&vec![0.0; k], &mut qc));
            let mut zero = data.clone();
            zero[..k].fill(0.0);
            let c = WalkCodes::new(&zero, k, Measure::Cosine);
            assert!(c.code_query(&q, &mut qc));
            assert_eq!(c.dist(&qc, 0), 1.0);
        }
    }
}
