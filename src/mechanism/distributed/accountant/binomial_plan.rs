//! Parameter choice for `dprp calibrate --mechanism binomial` and `dprp aggregate -m binomial`
//! (the request, the MSE terms and the modulus are those of [`super::params`]).
//!
//! # Binomial, protocol π_sk ([`plan_binomial`])
//!
//! Rotate (`H·D`, padded to `d'`), clamp to `±X` with `X = c·√(2 ln(2nd'/δ_r)/d')` (Hoeffding:
//! every client's every coordinate is inside with probability ≥ 1 − δ_r), quantise to `k` levels
//! `w_q = 2X/(k−1)` apart with unbiased stochastic rounding, add `Bin(m, p = ½)` per coordinate;
//! the sum over clients carries `Bin(N = n·m, ½)`. Privacy: cpSGD Theorem 1 (in level units,
//! `s = 1`) at δ/3 with the sensitivities of cpSGD Lemma 7 (eqs. 18–20) at δ/3, where a client's
//! change has `‖·‖∞ ≤ 2X`, `‖·‖₂ ≤ 2c`, `‖·‖₁ ≤ 2c√d'` (in data units, divided by `w_q` for level
//! units), and the rotation event at δ_r = δ/3: (ε, δ)-DP in total (cpSGD: (ε, 3δ) for the three
//! δ's). MSE: `d·w_q²·(¼ + m·p(1−p))/n` (quantisation variance ≤ `w_q²/4`, binomial noise
//! `w_q²·m p(1−p)` per client, mean over `n`, `d` coordinates kept after unrotating). The
//! aggregate of a coordinate lies in `[0, n(k−1+m)]`, so there is **no wrap** when
//! `n(k−1+m) < M`; the plan is the `(k, m)` with the smallest MSE under that constraint and
//! `ε ≤` target. Bits per coordinate sent by a client: `log₂(k+m)` (the paper's count) — under
//! SecAgg every coordinate travels as `b` bits.

use super::binomial::{self, BinomialSetting, Sensitivities};
use super::params::{DistributedRequest, MseTerms};
use crate::error::{Error, Result};
use crate::projection::hadamard::next_pow2;

/// A Binomial (π_sk) parameter choice.
#[derive(Debug, Clone, PartialEq)]
pub struct BinomialPlan {
    /// Rotated, padded dimension `d'`.
    pub d_rot: u64,
    /// Quantisation levels `k ≥ 2`.
    pub k: u64,
    /// Binomial trials per client per coordinate `m`.
    pub m: u64,
    /// Total trials in the aggregate, `N = n·m`.
    pub n_trials: u64,
    /// Success probability `p` (½).
    pub p: f64,
    /// Scale `s = w_q = 2X/(k−1)`: data units per level.
    pub s: f64,
    /// Clamp bound `X` after rotation.
    pub x_max: f64,
    /// Sensitivities in level units (cpSGD Lemma 7).
    pub sens: Sensitivities,
    /// ε of Theorem 1 (≤ the target), for (ε, δ) in total.
    pub epsilon: f64,
    /// δ of the guarantee.
    pub delta: f64,
    /// Expected squared error of the mean.
    pub mse: MseTerms,
    /// `log₂(k + m)`, the bits per coordinate of cpSGD's count.
    pub bits_per_coordinate: f64,
    /// The smallest modulus holding the aggregate without wrapping, `n(k−1+m) + 1`.
    pub modulus_needed: u64,
}

/// cpSGD Lemma 7 (eqs. 18–20) in level units, at `delta_l`.
pub fn pi_sk_sensitivities(
    c: f64,
    d_rot: u64,
    x_max: f64,
    w_q: f64,
    delta_l: f64,
) -> Sensitivities {
    let l_inf = 2.0 * x_max / w_q;
    let l2 = 2.0 * c / w_q;
    let l1 = 2.0 * c * (d_rot as f64).sqrt() / w_q;
    let lg = (2.0 / delta_l).ln();
    Sensitivities {
        linf: l_inf + 2.0,
        l1: l1 + (2.0 * l1 * lg).sqrt() + 4.0 / 3.0 * lg,
        l2: l2 + (l1 + (8.0 * l1 * lg).sqrt() + 4.0 / 3.0 * lg).sqrt(),
    }
}

/// Choose `k` and `m` for the Binomial mechanism's π_sk (module documentation).
pub fn plan_binomial(req: &DistributedRequest) -> Result<BinomialPlan> {
    req.check()?;
    let d_rot = next_pow2(
        usize::try_from(req.d)
            .map_err(|_| Error::param("dimension d", format!("d = {} is too large", req.d)))?,
    )? as u64;
    let n = req.n;
    let delta3 = req.delta / 3.0;
    let x_max =
        req.clip * (2.0 * (2.0 * n as f64 * d_rot as f64 / delta3).ln() / d_rot as f64).sqrt();
    // k − 1 + m ≤ (M − 1)/n.
    let room = (req.modulus() - 1) / n;
    if room < 2 {
        return Err(Error::param(
            "‹bits›",
            format!(
                "b = {} bits cannot hold the sum of n = {n} clients' levels and binomial noise \
                 (needs n·(k−1+m) < 2^b with k ≥ 2, m ≥ 1)",
                req.bits
            ),
        ));
    }
    let p = 0.5;
    let mut best: Option<BinomialPlan> = None;
    let mut least_work = f64::INFINITY;
    // k on all values up to 4096, then geometrically.
    let mut k = 2u64;
    while k <= room {
        let w_q = 2.0 * x_max / (k - 1) as f64;
        let sens = pi_sk_sensitivities(req.clip, d_rot, x_max, w_q, delta3);
        let setting = BinomialSetting {
            p,
            s: 1.0,
            delta: delta3,
            d: d_rot,
            sens,
        };
        if let Ok(n_trials) = binomial::smallest_n(req.epsilon, &setting) {
            let m = n_trials.div_ceil(n).max(1);
            // the clients' binomial draws: n·d'·m fair bits, 64 per ChaCha20 word
            let words = n as f64 * d_rot as f64 * m as f64 / 64.0;
            if words > MAX_BINOMIAL_WORDS {
                least_work = least_work.min(words);
            }
            if k - 1 + m <= room && words <= MAX_BINOMIAL_WORDS {
                let total = n * m;
                let nf = n as f64;
                let mse = MseTerms {
                    noise: req.d as f64 * w_q * w_q * m as f64 * p * (1.0 - p) / nf,
                    rounding: req.d as f64 * w_q * w_q / (4.0 * nf),
                    rounding_bias: 0.0,
                    sketch: 0.0,
                };
                let plan = BinomialPlan {
                    d_rot,
                    k,
                    m,
                    n_trials: total,
                    p,
                    s: w_q,
                    x_max,
                    sens,
                    epsilon: binomial::epsilon(total, &setting)?,
                    delta: req.delta,
                    mse,
                    bits_per_coordinate: ((k + m) as f64).log2(),
                    modulus_needed: n * (k - 1 + m) + 1,
                };
                if best
                    .as_ref()
                    .is_none_or(|b| plan.mse.total() < b.mse.total())
                {
                    best = Some(plan);
                }
            }
        }
        k = if k < 4096 { k + 1 } else { k + k / 64 };
    }
    best.ok_or_else(|| {
        if least_work.is_finite() {
            return Error::param(
                "‹epsilon›",
                format!(
                    "ε = {} needs about {least_work:.2e} random words (n·d'·m/64 Bernoulli bits) \
                     for the clients' binomial noise, past the limit of {MAX_BINOMIAL_WORDS:.2e} \
                     (roughly {:.0} s of ChaCha20 at 1 GiB/s): raise ε, or use ddg",
                    req.epsilon,
                    least_work * 8.0 / f64::from(1u32 << 30)
                ),
            );
        }
        Error::param(
            "‹bits›",
            format!(
                "no quantisation k and binomial trials m reach ε = {} at δ = {} within b = {} bits \
                 for n = {n} clients",
                req.epsilon, req.delta, req.bits
            ),
        )
    })
}

/// The most ChaCha20 words a binomial plan may ask the clients to draw in all (`n·d'·m/64`):
/// 2³⁰, 8 GiB of keystream, about ten seconds on one core. The planner keeps the least-error plan within it
/// (a larger `k` and `m` lower the error only slightly once the noise dominates).
pub const MAX_BINOMIAL_WORDS: f64 = 1_073_741_824.0;

#[cfg(test)]
mod tests {
    use super::super::params::tests::request;
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn binomial_mse_matches_monte_carlo() {
        // One coordinate, no rotation: stochastic quantisation to k levels on [−X, X] plus
        // Bin(m, ½) per client, decoded X̂ = −X + w_q·(mean(Y) − m/2). MSE = w_q²(f(1−f)) /n +
        // w_q² m/4 /n; the plan's formula uses f(1−f) ≤ ¼ — exact at f = ½ (x on a midpoint).
        let (n, k, m, x_max) = (30u64, 9u64, 4u64, 1.0);
        let w_q = 2.0 * x_max / (k - 1) as f64;
        let x = -x_max + 2.5 * w_q; // midpoint between levels 2 and 3
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let trials = 20_000;
        let mut errs = Vec::with_capacity(trials);
        for _ in 0..trials {
            let mut total = 0.0;
            for _ in 0..n {
                let u = 2.0 + if rng.random_bool(0.5) { 1.0 } else { 0.0 };
                let b: u64 = (0..m).filter(|_| rng.random_bool(0.5)).count() as u64;
                total += u + b as f64;
            }
            let est = -x_max + w_q * (total / n as f64 - m as f64 / 2.0);
            errs.push((est - x).powi(2));
        }
        let mse = errs.iter().sum::<f64>() / trials as f64;
        let var = errs.iter().map(|e| (e - mse).powi(2)).sum::<f64>() / (trials - 1) as f64;
        let se = (var / trials as f64).sqrt();
        let pred = w_q * w_q * (0.25 + m as f64 * 0.25) / n as f64;
        assert!(((mse - pred) / se).abs() < 4.5, "MC {mse} ± {se} vs {pred}");
        // Power: forgetting the quantisation term (¼ of a level² per client) is caught.
        let without = w_q * w_q * (m as f64 * 0.25) / n as f64;
        assert!(((mse - without) / se).abs() > 4.5);
    }

    #[test]
    fn binomial_plan_meets_targets() {
        let req = request(100, 64, 16);
        let plan = plan_binomial(&req).unwrap();
        assert!(plan.epsilon <= req.epsilon);
        assert!(plan.modulus_needed <= 1 << 16);
        assert_eq!(plan.n_trials, plan.m * 100);
        // The MSE is the formula of the module docs at the chosen k, m.
        let w = plan.s;
        let want = 64.0 * w * w * (0.25 + plan.m as f64 * 0.25) / 100.0;
        assert!((plan.mse.total() - want).abs() < 1e-12 * want);
        // Too few bits for n clients: refused.
        assert!(plan_binomial(&request(100_000, 64, 16)).is_err());
    }
}
