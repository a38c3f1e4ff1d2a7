//! What a sign release records about its mechanism: the flip rule with its parameters
//! ([`FlipRule`]), the summary of the iDP noise sets ([`SetSummary`]) and the whole record
//! ([`SignRecord`]); [`super::sign_sketch`] applies them.

use serde::{Deserialize, Serialize};

use crate::privacy::nplus::NPlus;

/// How signs are perturbed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "rule", rename_all = "kebab-case")]
pub enum FlipRule {
    /// Every sign flipped with the same probability `1/(1+e^{ε'})`.
    RandomisedResponse {
        /// ε' per sign.
        eps_prime: f64,
        /// The probability used, `Q/2⁶⁴ ≥ 1/(1+e^{ε'})`, as the nearest `f64` (the exact `Q` is
        /// [`SignRecord::flip_threshold`]).
        flip_probability: f64,
    },
    /// Sign `j` flipped with `1/(1+e^{ε'·L_j})` rounded toward ½ ([`smooth_flip_table`](crate::privacy::rr::smooth_flip_table)),
    /// `L_j = ⌈|x_j|/c_j⌉` (Algorithm 4).
    SmoothFlipping {
        /// ε' per sign.
        eps_prime: f64,
    },
    /// iDP: Gaussian noise `N(0, σ²)` on the values in the noise set `A = {j : |x_j| < c_j}`,
    /// `σ = Δ₂(A)·sigma_unit`, then signs (Algorithms 6 and 7).
    IdpGaussian {
        /// ε.
        epsilon: f64,
        /// δ.
        delta: f64,
        /// The analytic σ for sensitivity 1 at (ε, δ); σ scales linearly with Δ₂(A).
        sigma_unit: f64,
    },
    /// iDP: randomised response on the signs in `A` with `ε/|A|` each (dense, Algorithm 8) or
    /// `ε` each (OPORP: a β-neighbour moves one bin).
    IdpRandomisedResponse {
        /// ε.
        epsilon: f64,
        /// Whether ε is split over |A| (dense) or spent per bin (OPORP).
        split: bool,
    },
}

/// Summary of the noise-set sizes |A| over the released rows (iDP). Data-dependent: reported for
/// transparency, not covered by the guarantee.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetSummary {
    /// Smallest |A|.
    pub min: u32,
    /// Median |A|.
    pub median: u32,
    /// Largest |A|.
    pub max: u32,
    /// Mean |A|.
    pub mean: f64,
}

impl SetSummary {
    /// Summarise a histogram `counts[s]` = number of rows with |A| = s.
    pub fn from_histogram(counts: &[u64]) -> Option<SetSummary> {
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let min = counts.iter().position(|&c| c > 0)? as u32;
        let max = counts.iter().rposition(|&c| c > 0)? as u32;
        let mut acc = 0;
        let mut median = 0;
        for (s, &c) in counts.iter().enumerate() {
            acc += c;
            if 2 * acc >= total {
                median = s as u32;
                break;
            }
        }
        let mean = counts
            .iter()
            .enumerate()
            .map(|(s, &c)| s as f64 * c as f64)
            .sum::<f64>()
            / total as f64;
        Some(SetSummary {
            min,
            median,
            max,
            mean,
        })
    }
}

/// What a release records about a sign mechanism.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignRecord {
    /// The flip rule and its parameters.
    pub rule: FlipRule,
    /// β of the neighbour relation.
    pub beta: f64,
    /// The N₊ bound and its inputs (`dp-signrp-rr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_plus: Option<NPlus>,
    /// Public lower bound on row norms, when used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_norm: Option<f64>,
    /// Dense randomised response on the grid: `ν_q`, the lower bound on the norm of every rounded
    /// row that N₊ was computed for ([`super::arithmetic::grid_min_norm`]). Absent: the values
    /// were computed in f64 from the rows themselves (releases of dprp 0.3.0, and maps or
    /// neighbour relations without a grid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid_min_norm: Option<f64>,
    /// |A| over the rows (iDP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_set: Option<SetSummary>,
    /// Randomised response: the numerator `Q` of the flip probability `Q/2⁶⁴` actually used (a
    /// sign flips iff a uniform 64-bit word is below it; [`Flip::randomised_response`](crate::privacy::rr::Flip::randomised_response)). Absent
    /// in releases written before exact coins; when present, rebuilding checks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flip_threshold: Option<u64>,
}

impl SignRecord {
    /// One-line description of the flip rule and its calibration.
    pub fn describe(&self) -> String {
        let mut s = match &self.rule {
            FlipRule::RandomisedResponse {
                eps_prime,
                flip_probability,
            } => format!(
                "randomised response: every sign flipped with probability {flip_probability:.6} \
                 (ε' = {eps_prime:.6} per sign{})",
                match self.flip_threshold {
                    Some(t) => format!("; exactly {t}/2^64, rounded toward 1/2"),
                    None => String::new(),
                }
            ),
            FlipRule::SmoothFlipping { eps_prime } => format!(
                "smooth flipping: sign j flipped with 1/(1+exp(ε'·L_j)), ε' = {eps_prime:.6}, \
                 L_j = ⌈|x_j|/c_j⌉ steps of β = {} to reach zero",
                self.beta
            ),
            FlipRule::IdpGaussian {
                epsilon,
                delta,
                sigma_unit,
            } => format!(
                "iDP Gaussian: N(0, σ²) on the noise set A = {{j : |x_j| < c_j}} only, σ = Δ₂(A)·{sigma_unit:.6} \
                 (analytic, ε = {epsilon}, δ = {delta:e})"
            ),
            FlipRule::IdpRandomisedResponse { epsilon, split } => format!(
                "iDP randomised response on the noise set A only, ε' = {}",
                if *split {
                    format!("ε/|A| = {epsilon}/|A|")
                } else {
                    format!("{epsilon} per bin")
                }
            ),
        };
        if let Some(n) = &self.n_plus {
            s.push_str(&format!(
                "; N₊ = {} of k = {} (P = {:.6} by {}, r = β/ν = {:.4}, ν = {}, η = {:.4}, δ = {:e})",
                n.n_plus,
                n.k,
                n.prob,
                n.method,
                n.r,
                match (self.grid_min_norm, self.min_norm) {
                    (Some(q), Some(nu)) => format!(
                        "{q} (‹min_norm {nu}› less the grid's √p·2^-(q+1): the rounded rows' bound)"
                    ),
                    _ => format!("‹min_norm {}›", n.min_norm),
                },
                n.eta,
                n.delta
            ));
        }
        if let Some(a) = &self.noise_set {
            s.push_str(&format!(
                "; |A| over rows: min {}, median {}, max {} (mean {:.1}; data-dependent, not covered \
                 by the guarantee)",
                a.min, a.median, a.max, a.mean
            ));
        }
        s
    }
}
