//! χ² goodness of fit for the exact samplers: reference pmfs computed independently in f64, bins
//! with a minimum expected count, the critical value from the χ² law's upper tail at a stated
//! false-positive rate, and the predicted power against a stated alternative.

#![allow(dead_code)]

/// False-positive rate of every goodness-of-fit test (per test, for a seed chosen at random; the
/// seeds are fixed, so the outcome is deterministic).
pub const ALPHA: f64 = 1e-5;

/// The least predicted power accepted for a power check (`P(reject | alternative)`).
pub const MIN_POWER: f64 = 0.999;

/// Minimum expected count per bin (the χ² approximation is good well above 5).
pub const MIN_EXPECTED: f64 = 20.0;

/// `ln Γ(x)`.
fn ln_gamma(x: f64) -> f64 {
    libm::lgamma(x)
}

/// The regularised upper incomplete gamma function `Q(a, x) = Γ(a, x)/Γ(a)`: the series for the
/// lower function when `x < a + 1`, the continued fraction (evaluated by the modified Lentz
/// method) for the upper one otherwise.
pub fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let ln_pre = a * x.ln() - x - ln_gamma(a);
    if x < a + 1.0 {
        // P(a, x) = x^a e^{-x} / Γ(a+1) · Σ_n x^n / ((a+1)…(a+n))
        let mut term = 1.0 / a;
        let mut sum = term;
        let mut n = 1.0;
        while term.abs() > sum.abs() * 1e-17 {
            term *= x / (a + n);
            sum += term;
            n += 1.0;
            assert!(n < 1e7, "series did not converge");
        }
        1.0 - (ln_pre.exp() * sum)
    } else {
        // Q(a, x) = x^a e^{-x}/Γ(a) · 1/(x + 1 − a − 1·(1 − a)/(x + 3 − a − 2·(2 − a)/(x + 5 − a − …)))
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        let mut i = 1.0;
        loop {
            let an = -i * (i - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
            i += 1.0;
            assert!(i < 1e7, "continued fraction did not converge");
        }
        ln_pre.exp() * h
    }
}

/// `P(χ²_k > x)`.
pub fn chi2_sf(k: f64, x: f64) -> f64 {
    gamma_q(k / 2.0, x / 2.0)
}

/// The critical value `x` with `P(χ²_k > x) = alpha` (bisection on the survival function).
pub fn chi2_critical(k: f64, alpha: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, k + 50.0 * (2.0 * k).sqrt() + 200.0);
    assert!(chi2_sf(k, hi) < alpha);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if chi2_sf(k, mid) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The standard normal CDF.
pub fn norm_cdf(z: f64) -> f64 {
    0.5 * libm::erfc(-z / std::f64::consts::SQRT_2)
}

/// Predicted power of the χ² test with `k` degrees of freedom and critical value `crit` when
/// the statistic is non-central with parameter `lambda` (normal approximation of the
/// non-central χ²: mean `k + λ`, variance `2(k + 2λ)`).
pub fn chi2_power(k: f64, crit: f64, lambda: f64) -> f64 {
    norm_cdf((k + lambda - crit) / (2.0 * (k + 2.0 * lambda)).sqrt())
}

/// Integer bins `[lo_i, hi_i]` (the first open to −∞, the last to +∞) over a pmf on the
/// integers, merged left to right until each holds at least `min_expected` expected counts out
/// of `n`, and the bin probabilities.
pub struct Bins {
    /// Upper end (inclusive) of each bin but the last.
    pub upper: Vec<i64>,
    /// Probability of each bin under the reference pmf.
    pub prob: Vec<f64>,
}

impl Bins {
    /// Bins for `pmf` on `[lo, hi]` (the mass outside must be negligible: it is folded into the
    /// end bins through `tail_lo`/`tail_hi`, the caller's exact tail masses).
    pub fn new(
        pmf: &dyn Fn(i64) -> f64,
        lo: i64,
        hi: i64,
        tail_lo: f64,
        tail_hi: f64,
        n: f64,
        min_expected: f64,
    ) -> Bins {
        let mut upper = Vec::new();
        let mut prob = Vec::new();
        let mut acc = tail_lo;
        for x in lo..=hi {
            acc += pmf(x);
            if acc * n >= min_expected {
                upper.push(x);
                prob.push(acc);
                acc = 0.0;
            }
        }
        acc += tail_hi;
        // Fold the remainder into the last bin, which then extends to +∞.
        if prob.is_empty() {
            prob.push(acc);
        } else {
            *prob.last_mut().unwrap() += acc;
            upper.pop();
        }
        assert!(prob.len() >= 2, "need at least two bins");
        let total: f64 = prob.iter().sum();
        assert!((total - 1.0).abs() < 1e-9, "pmf sums to {total}");
        Bins { upper, prob }
    }

    /// Probabilities of the same bins under another pmf.
    pub fn probs_of(&self, pmf: &dyn Fn(i64) -> f64, lo: i64, hi: i64) -> Vec<f64> {
        let mut p = vec![0.0; self.prob.len()];
        for x in lo..=hi {
            p[self.index(x)] += pmf(x);
        }
        p
    }

    /// The bin of `x`.
    pub fn index(&self, x: i64) -> usize {
        self.upper.partition_point(|&u| u < x)
    }

    /// Degrees of freedom of the test.
    pub fn dof(&self) -> f64 {
        (self.prob.len() - 1) as f64
    }

    /// Pearson's statistic of the samples.
    pub fn statistic(&self, samples: &[i64]) -> f64 {
        let mut counts = vec![0u64; self.prob.len()];
        for &x in samples {
            counts[self.index(x)] += 1;
        }
        let n = samples.len() as f64;
        counts
            .iter()
            .zip(&self.prob)
            .map(|(&c, &p)| {
                let e = n * p;
                (c as f64 - e).powi(2) / e
            })
            .sum()
    }

    /// The non-centrality `n·Σ (q − p)²/p` of the statistic when the samples follow `q`.
    pub fn noncentrality(&self, q: &[f64], n: f64) -> f64 {
        n * q
            .iter()
            .zip(&self.prob)
            .map(|(q, p)| (q - p).powi(2) / p)
            .sum::<f64>()
    }
}

/// A χ² goodness-of-fit check: the reference pmf, its bins for `n` samples, the critical value.
pub struct Gof {
    pub name: String,
    pub bins: Bins,
    pub crit: f64,
    pub n: usize,
    lo: i64,
    hi: i64,
}

impl Gof {
    /// Bins for `n` samples of `pmf` (negligible mass outside `[lo, hi]` apart from the given
    /// tails).
    pub fn new(
        name: &str,
        pmf: &dyn Fn(i64) -> f64,
        lo: i64,
        hi: i64,
        tails: (f64, f64),
        n: usize,
    ) -> Gof {
        let bins = Bins::new(pmf, lo, hi, tails.0, tails.1, n as f64, MIN_EXPECTED);
        let crit = chi2_critical(bins.dof(), ALPHA);
        Gof {
            name: name.to_string(),
            bins,
            crit,
            n,
            lo,
            hi,
        }
    }

    /// Assert that `samples` (from the sampler under test) pass.
    pub fn accept(&self, samples: &[i64]) {
        assert_eq!(samples.len(), self.n);
        let stat = self.bins.statistic(samples);
        eprintln!(
            "{}: χ² = {stat:.1} on {} dof, critical {:.1} (α = {ALPHA:e})",
            self.name,
            self.bins.dof(),
            self.crit
        );
        assert!(
            stat <= self.crit,
            "{}: χ² = {stat:.1} > critical {:.1} ({} dof, α = {ALPHA:e}): the sampler does not \
             follow the reference pmf",
            self.name,
            self.crit,
            self.bins.dof()
        );
    }

    /// Assert that the test has power at least [`MIN_POWER`] against `alt_pmf` (predicted from
    /// the non-centrality) and that it rejects `alt_samples` (drawn from the alternative).
    pub fn reject(&self, what: &str, alt_pmf: &dyn Fn(i64) -> f64, alt_samples: &[i64]) {
        assert_eq!(alt_samples.len(), self.n);
        let q = self.bins.probs_of(alt_pmf, self.lo, self.hi);
        let lambda = self.bins.noncentrality(&q, self.n as f64);
        let power = chi2_power(self.bins.dof(), self.crit, lambda);
        let stat = self.bins.statistic(alt_samples);
        eprintln!(
            "{} vs {what}: λ = {lambda:.1}, predicted power {power:.6}, χ² = {stat:.1} (critical \
             {:.1})",
            self.name, self.crit
        );
        assert!(
            power >= MIN_POWER,
            "{}: only {power:.4} power against {what} with n = {} (λ = {lambda:.1}); raise n",
            self.name,
            self.n
        );
        assert!(
            stat > self.crit,
            "{}: the test did not reject {what} (χ² = {stat:.1} ≤ {:.1})",
            self.name,
            self.crit
        );
    }
}

/// `ln C(n, k)`.
pub fn ln_choose(n: u64, k: u64) -> f64 {
    ln_gamma(n as f64 + 1.0) - ln_gamma(k as f64 + 1.0) - ln_gamma((n - k) as f64 + 1.0)
}

/// The `Bin(n, p)` pmf.
pub fn binomial_pmf(n: u64, p: f64, k: i64) -> f64 {
    if k < 0 || k as u64 > n {
        return 0.0;
    }
    let k = k as u64;
    if p == 0.0 {
        return if k == 0 { 1.0 } else { 0.0 };
    }
    if p == 1.0 {
        return if k == n { 1.0 } else { 0.0 };
    }
    (ln_choose(n, k) + k as f64 * p.ln() + (n - k) as f64 * (-p).ln_1p()).exp()
}

/// The discrete Gaussian normaliser `Σ_{y∈ℤ} e^{−y²/(2σ²)}` by direct summation (terms added
/// from the smallest).
pub fn dgauss_normaliser(sigma2: f64) -> f64 {
    let l = (40.0 * sigma2.sqrt()).ceil() as i64 + 10;
    let mut s = 0.0;
    for y in (1..=l).rev() {
        s += 2.0 * (-(y as f64).powi(2) / (2.0 * sigma2)).exp();
    }
    s + 1.0
}

/// The same normaliser by Poisson summation: `σ√(2π)·Σ_{k∈ℤ} e^{−2π²σ²k²}` (an independent
/// formula for checking the reference itself).
pub fn dgauss_normaliser_poisson(sigma2: f64) -> f64 {
    let sigma = sigma2.sqrt();
    let mut s = 1.0;
    for k in 1..50 {
        s += 2.0 * (-2.0 * std::f64::consts::PI.powi(2) * sigma2 * (k as f64).powi(2)).exp();
    }
    sigma * (2.0 * std::f64::consts::PI).sqrt() * s
}

/// The discrete Gaussian pmf `N_ℤ(0, σ²)` and the range that holds all but ~1e-30 of its mass.
pub fn dgauss(sigma2: f64) -> (impl Fn(i64) -> f64, i64, i64) {
    let z = dgauss_normaliser(sigma2);
    let l = (12.0 * sigma2.sqrt()).ceil() as i64 + 2;
    (
        move |x: i64| (-(x as f64).powi(2) / (2.0 * sigma2)).exp() / z,
        -l,
        l,
    )
}

/// The discrete Laplace pmf of scale `tau`: `tanh(1/(2τ))·e^{−|y|/τ}`; the range and the exact
/// one-sided tail mass beyond it.
pub fn dlaplace(tau: f64) -> (impl Fn(i64) -> f64, i64, i64, f64) {
    let c = (0.5 / tau).tanh();
    let l = (40.0 * tau).ceil() as i64 + 5;
    // Σ_{y > l} c·e^{−y/τ} = c·e^{−(l+1)/τ}/(1 − e^{−1/τ})
    let tail = c * (-(l as f64 + 1.0) / tau).exp() / (-(-1.0 / tau).exp_m1());
    (
        move |y: i64| c * (-(y.unsigned_abs() as f64) / tau).exp(),
        -l,
        l,
        tail,
    )
}

/// The geometric pmf `(1 − e^{−1/τ})·e^{−k/τ}` on `k ≥ 0`; the range and the tail beyond it.
pub fn geometric(tau: f64) -> (impl Fn(i64) -> f64, i64, i64, f64) {
    let q = (-1.0 / tau).exp();
    let l = (40.0 * tau).ceil() as i64 + 5;
    let tail = q.powf(l as f64 + 1.0);
    (
        move |k: i64| {
            if k < 0 {
                0.0
            } else {
                (1.0 - q) * q.powf(k as f64)
            }
        },
        0,
        l,
        tail,
    )
}
