//! Statistical helpers shared by the local-DP tests (fixed seeds, tolerances from the number of
//! trials).
#![allow(dead_code)]

/// Mean and standard error of the mean.
pub fn mean_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

/// `|mean − target| / se` (the SE floored at 1e-12 relative, for statistics that are constant up
/// to rounding).
pub fn z_score(xs: &[f64], target: f64) -> f64 {
    let (m, se) = mean_se(xs);
    (m - target).abs() / se.max(1e-12 * target.abs().max(1.0))
}

/// Kolmogorov–Smirnov distance between a sample and a continuous CDF.
pub fn ks_distance(samples: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let mut s = samples.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = s.len() as f64;
    let mut d: f64 = 0.0;
    for (i, &x) in s.iter().enumerate() {
        let f = cdf(x);
        d = d
            .max((f - i as f64 / n).abs())
            .max(((i + 1) as f64 / n - f).abs());
    }
    d
}

/// KS critical value at level 0.001 (asymptotic: 1.949/√n).
pub fn ks_critical(n: usize) -> f64 {
    1.949 / (n as f64).sqrt()
}

/// Black-box privacy test on a 1-D statistic: bins from the quantiles of a pilot sample, then for
/// each bin with enough counts the one-sided statistic `(ln(c_a/c_b) − ε)/SE`,
/// `SE = √(1/c_a + 1/c_b)` (delta method), in both directions. Returns the largest statistic; a
/// value above 4.5 (Bonferroni over ≤ 40 one-sided tests at 1e-4 overall) flags a violation.
pub fn histogram_violation(pilot: &[f64], a: &[f64], b: &[f64], epsilon: f64) -> f64 {
    let mut p = pilot.to_vec();
    p.sort_by(|x, y| x.partial_cmp(y).unwrap());
    let bins = 20;
    let edges: Vec<f64> = (1..bins).map(|i| p[i * p.len() / bins]).collect();
    let count = |xs: &[f64]| {
        let mut c = vec![0f64; bins];
        for &x in xs {
            c[edges.partition_point(|&e| e <= x)] += 1.0;
        }
        c
    };
    let (ca, cb) = (count(a), count(b));
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let mut worst = f64::NEG_INFINITY;
    for (x, y) in ca.iter().zip(&cb) {
        if *x < 50.0 || *y < 50.0 {
            continue;
        }
        let se = (1.0 / x + 1.0 / y).sqrt();
        let l = (x / na).ln() - (y / nb).ln();
        worst = worst.max((l - epsilon) / se).max((-l - epsilon) / se);
    }
    worst
}

/// The black-box test end to end: with `n` draws each (fixed `seed`), the statistic `⟨Z, u⟩` of
/// `privatize(u)` as a pilot (bin edges), then under `u` and under `−u`; returns
/// [`histogram_violation`] of the two samples.
pub fn histogram_worst_pair(
    u: &[f64],
    n: usize,
    seed: u64,
    epsilon: f64,
    mut privatize: impl FnMut(&[f64], &mut rand_chacha::ChaCha20Rng) -> Vec<f64>,
) -> f64 {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let neg: Vec<f64> = u.iter().map(|x| -x).collect();
    let mut stat = |v: &[f64]| -> Vec<f64> {
        (0..n)
            .map(|_| {
                let z = privatize(v, &mut rng);
                z.iter().zip(u).map(|(a, b)| a * b).sum()
            })
            .collect()
    };
    let pilot = stat(u);
    let a = stat(u);
    let b = stat(&neg);
    histogram_violation(&pilot, &a, &b, epsilon)
}

/// Threshold for [`histogram_violation`].
pub const HIST_Z: f64 = 4.5;

/// A generator whose first words are given and whose rest come from a seeded ChaCha20: drives a
/// mechanism's coin to a chosen side (a word at the top or the bottom of the 64-bit range).
pub struct Scripted {
    pub words: Vec<u64>,
    pub rest: rand_chacha::ChaCha20Rng,
}

impl Scripted {
    pub fn new(words: &[u64], seed: u64) -> Scripted {
        use rand::SeedableRng;
        Scripted {
            words: words.iter().rev().copied().collect(),
            rest: rand_chacha::ChaCha20Rng::seed_from_u64(seed),
        }
    }
}

impl rand::TryRng for Scripted {
    type Error = core::convert::Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        Ok(self.try_next_u64()? as u32)
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        use rand::Rng;
        Ok(self.words.pop().unwrap_or_else(|| self.rest.next_u64()))
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        for c in dst.chunks_mut(8) {
            let w = self.try_next_u64()?;
            c.copy_from_slice(&w.to_le_bytes()[..c.len()]);
        }
        Ok(())
    }
}

impl dprp::mechanism::local::WordRng for Scripted {}
