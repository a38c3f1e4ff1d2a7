//! `dprp audit --pipeline`: identical rows published through the real publishing path, with the
//! reader's chunks forced to awkward sizes, must come out as independent draws.
//!
//! The ε audit ([`crate::audit::run`]) privatises one input many times; it cannot see a defect of
//! the pipeline around the mechanism, such as the one fixed in 0.2.0 (advisory 2026-11: rows of
//! an unaligned chunk re-read an earlier row's noise stream). This check writes `n` identical
//! rows to a float64 `.npy` file, publishes it with [`crate::publish::publish_with`] once per read
//! cap (every read of the reader asking for at most 1, 255, 257 or 2097 rows, or the default), and
//! tests what a user would have published:
//!
//! 1. **Chunking changes nothing**: every run gives the same payload, byte for byte (one noise
//!    key per audit; a row's noise is a function of its id).
//! 2. **No duplicated noise** ([`independence`]): the number of pairs of identical output rows
//!    is compared with the number independence predicts from each coordinate's empirical value
//!    frequencies (0 for continuous outputs); more than a Poisson tail allows is flagged.
//! 3. **No correlation between rows**: for each lag `L = 1..=300`, the products
//!    `cᵢ = ⟨eᵢ, eᵢ₊L⟩` of the centred rows have mean 0 under independence, and they are
//!    uncorrelated for one `L` (`E[cᵢcᵢ₊L] = E[eᵢ]·… = 0`), so `t_L = c̄ / (s_c/√m)` is
//!    approximately standard normal (m ≥ 700 terms). `max_L |t_L|` is flagged above the
//!    two-sided Bonferroni threshold `z = Φ̄⁻¹(α / (2·lags))` (4.65 for α = 10⁻³ and 300 lags).
//!    Centring by the sample mean biases each `t_L` by about `−√(m·w_eff)/n` (−0.2 here): negligible.
//!
//! Power: 49 duplicated rows among 2500 (the advisory's reproduction) give `t ≈ 49·√w/√m` at
//! their lag: 15 for w = 64 outputs, far above the threshold (`cli/tests/pipeline_noise.rs` checks
//! this on a release with the old pattern of duplicates planted).

use std::collections::HashMap;

use serde::Serialize;

use crate::data::npy;
use crate::data::scale::ScalingRequest;
use crate::data::InputOptions;
use crate::error::{Error, Result};
use crate::mechanism::{MechanismParams, Payload};
use crate::privacy::samplers::noise::NoiseSource;
use crate::privacy::special::norm_isf_ln;
use crate::publish::{publish_with, PublishOptions, PublishRequest};

/// Read caps the check forces on the reader (rows per read; `None`: the reader's own).
pub const CAPS: [Option<usize>; 5] = [None, Some(1), Some(255), Some(257), Some(2097)];

/// Rows published per run: more than two 2097-row reads' worth of boundaries.
pub const ROWS: usize = 2500;

/// Largest lag tested.
pub const MAX_LAG: usize = 300;

/// Family-wise false-alarm probability of one mechanism's correlation test.
pub const ALPHA: f64 = 1e-3;

/// The independence statistics of a set of output rows.
#[derive(Debug, Clone, Serialize)]
pub struct Independence {
    /// Rows tested.
    pub rows: usize,
    /// Values per row.
    pub width: usize,
    /// Pairs of rows with identical outputs.
    pub duplicate_pairs: u64,
    /// The first such pair (row ids).
    pub first_duplicate: Option<(usize, usize)>,
    /// Identical pairs independence predicts from the coordinates' value frequencies.
    pub expected_duplicate_pairs: f64,
    /// P(Poisson(expected) ≥ observed).
    pub duplicate_p_value: f64,
    /// Largest |t| over the lags.
    pub max_abs_t: f64,
    /// The lag where it was found.
    pub worst_lag: usize,
    /// Lags tested (1..=lags).
    pub lags: usize,
    /// The threshold for `max_abs_t`.
    pub threshold: f64,
}

impl Independence {
    /// Whether the rows look like independent draws at false-alarm level α (each test).
    pub fn passed(&self) -> bool {
        self.duplicate_p_value >= ALPHA && self.max_abs_t <= self.threshold
    }
}

/// Output rows as values: f32 payloads widened, sign bits as ±1.
pub fn rows_as_values(payload: Payload, k: usize, f32s: &[f32], bits: &[u64]) -> Vec<f64> {
    match payload {
        Payload::F32 => f32s.iter().map(|&v| f64::from(v)).collect(),
        Payload::Bits => {
            let w = k.div_ceil(64);
            bits.chunks_exact(w)
                .flat_map(|r| {
                    (0..k).map(move |j| {
                        if (r[j / 64] >> (j % 64)) & 1 == 1 {
                            1.0
                        } else {
                            -1.0
                        }
                    })
                })
                .collect()
        }
    }
}

/// The independence statistics of `values` (`rows × width`, row-major) at lags `1..=max_lag`
/// (fewer when there are not twice as many rows), see the module documentation.
pub fn independence(values: &[f64], width: usize, max_lag: usize) -> Independence {
    let n = values.len().checked_div(width).unwrap_or(0);
    let rows = |i: usize| &values[i * width..(i + 1) * width];
    // 1. identical rows, against what independence predicts
    let mut seen: HashMap<Vec<u64>, (usize, u64)> = HashMap::new();
    let (mut dups, mut first) = (0u64, None);
    for i in 0..n {
        let key: Vec<u64> = rows(i).iter().map(|v| v.to_bits()).collect();
        let e = seen.entry(key).or_insert((i, 0));
        if e.1 > 0 {
            first.get_or_insert((e.0, i));
        }
        dups += e.1; // the new row pairs with each earlier copy
        e.1 += 1;
    }
    let mut ln_equal = 0.0;
    for j in 0..width {
        let mut freq: HashMap<u64, u64> = HashMap::new();
        for i in 0..n {
            *freq.entry(values[i * width + j].to_bits()).or_default() += 1;
        }
        let s: f64 = freq.values().map(|&c| (c as f64 / n as f64).powi(2)).sum();
        ln_equal += s.ln();
    }
    let pairs = n as f64 * (n as f64 - 1.0) / 2.0;
    let expected = pairs * ln_equal.exp();
    let p_value = poisson_upper_tail(expected, dups);
    // 2. lag correlations of the centred rows
    let mut mean = vec![0.0; width];
    for i in 0..n {
        for (m, v) in mean.iter_mut().zip(rows(i)) {
            *m += v / n as f64;
        }
    }
    let e: Vec<f64> = (0..n * width)
        .map(|x| values[x] - mean[x % width])
        .collect();
    let lags = max_lag.min(n / 2);
    let (mut max_t, mut worst) = (0.0f64, 0);
    for lag in 1..=lags {
        let m = n - lag;
        let c: Vec<f64> = (0..m)
            .map(|i| {
                let (a, b) = (
                    &e[i * width..(i + 1) * width],
                    &e[(i + lag) * width..(i + lag + 1) * width],
                );
                a.iter().zip(b).map(|(x, y)| x * y).sum()
            })
            .collect();
        let mu = c.iter().sum::<f64>() / m as f64;
        let var = c.iter().map(|x| (x - mu).powi(2)).sum::<f64>() / (m as f64 - 1.0);
        let t = if var > 0.0 {
            mu / (var / m as f64).sqrt()
        } else if mu == 0.0 {
            0.0
        } else {
            f64::INFINITY
        };
        if t.abs() > max_t {
            max_t = t.abs();
            worst = lag;
        }
    }
    let threshold = if lags == 0 {
        f64::INFINITY
    } else {
        norm_isf_ln((ALPHA / (2.0 * lags as f64)).ln())
    };
    Independence {
        rows: n,
        width,
        duplicate_pairs: dups,
        first_duplicate: first,
        expected_duplicate_pairs: expected,
        duplicate_p_value: p_value,
        max_abs_t: max_t,
        worst_lag: worst,
        lags,
        threshold,
    }
}

/// P(X ≥ k) for X ~ Poisson(λ) (1 for k = 0).
fn poisson_upper_tail(lambda: f64, k: u64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if lambda <= 0.0 {
        return 0.0;
    }
    // 1 − P(X ≤ k − 1), summed in log space term by term
    let mut term = (-lambda).exp();
    let mut below = 0.0;
    for i in 0..k {
        below += term;
        term *= lambda / (i + 1) as f64;
        if term == 0.0 && i as f64 > lambda {
            break;
        }
    }
    (1.0 - below).max(0.0)
}

/// What the pipeline check found for one mechanism.
#[derive(Debug, Clone, Serialize)]
pub struct PipelineReport {
    /// The mechanism's name.
    pub mechanism: String,
    /// Rows published per run, and the input width.
    pub rows: usize,
    /// Input width.
    pub p: usize,
    /// The read caps tried (0 = the reader's own).
    pub caps: Vec<usize>,
    /// Whether every read cap gave the same payload bytes.
    pub identical_across_caps: bool,
    /// The statistics of the output rows.
    pub independence: Independence,
    /// Whether anything failed.
    pub flagged: bool,
}

/// The input of the check: `ROWS` copies of one fixed unit-norm row of width `p` (irregular
/// values, every coordinate non-zero).
fn identical_rows(p: usize) -> Vec<f64> {
    let row: Vec<f64> = (0..p)
        .map(|j| {
            ((j as f64 * 0.618_033_988_75).fract() - 0.5) + if j % 2 == 0 { 0.01 } else { -0.01 }
        })
        .collect();
    let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
    // one coordinate (scalar-dp, whose domain is [0, R]): the value 1
    let row: Vec<f64> = row
        .iter()
        .map(|v| if p == 1 { 1.0 } else { v / norm })
        .collect();
    row.iter().copied().cycle().take(ROWS * p).collect()
}

/// Run the pipeline check for one mechanism: publish [`ROWS`] identical rows (l2-normalised,
/// width `params.p`) from a float64 `.npy` once per cap in [`CAPS`] with `noise`, in a temporary
/// directory, and test the outputs.
pub fn check(params: &MechanismParams, noise: &NoiseSource) -> Result<PipelineReport> {
    let dir = tempfile::tempdir()
        .map_err(|e| Error::param("audit", format!("temporary directory: {e}")))?;
    let input = dir.path().join("identical.npy");
    let p = params.p;
    let bytes = npy::f64_matrix_bytes(&identical_rows(p), ROWS, p);
    std::fs::write(&input, bytes).map_err(|e| Error::io(&input, e))?;
    let mut payloads: Vec<(Vec<f32>, Vec<u64>)> = Vec::new();
    let mut k = 0;
    let mut payload = Payload::F32;
    for (i, cap) in CAPS.iter().enumerate() {
        let output = dir.path().join(format!("run{i}.dprp"));
        let req = PublishRequest {
            input: input.clone(),
            input_opts: InputOptions::default(),
            scaling: ScalingRequest {
                normalize_l2: true,
                ..Default::default()
            },
            params: params.clone(),
            output: output.clone(),
        };
        let opts = PublishOptions {
            read_cap: *cap,
            on_warning: Some(|_| {}),
            ..Default::default()
        };
        publish_with(&req, noise, &opts)?;
        let r = crate::release::Release::open(&output)?;
        k = r.meta().k;
        payload = r.meta().payload;
        payloads.push(match payload {
            Payload::F32 => (r.values()?.to_vec(), Vec::new()),
            Payload::Bits => (Vec::new(), r.bits()?.to_vec()),
        });
    }
    let identical = payloads.windows(2).all(|w| w[0] == w[1]);
    let values = rows_as_values(payload, k, &payloads[0].0, &payloads[0].1);
    let ind = independence(&values, values.len() / ROWS, MAX_LAG);
    let flagged = !identical || !ind.passed();
    Ok(PipelineReport {
        mechanism: params.kind.name().to_string(),
        rows: ROWS,
        p,
        caps: CAPS.iter().map(|c| c.unwrap_or(0)).collect(),
        identical_across_caps: identical,
        independence: ind,
        flagged,
    })
}

/// The parameters the pipeline check uses for a mechanism: the ε audit's defaults
/// ([`crate::audit::default_params`]) at p = 300 and k = 64, wide enough that independent
/// outputs never repeat.
pub fn default_params(
    kind: crate::mechanism::MechanismKind,
    seed: crate::projection::Seed,
) -> MechanismParams {
    let mut p = crate::audit::default_params(kind, seed);
    if p.p > 1 {
        p.p = 300;
    }
    if p.k.is_some() {
        p.k = Some(64);
    }
    p
}

/// One line per report, for the terminal.
pub fn text(r: &PipelineReport) -> String {
    let i = &r.independence;
    format!(
        "pipeline {}: {} identical rows (p = {}) read {} rows at a time: payloads {}; {} identical \
         output pairs (independence predicts {:.2}, p = {:.3}); max |t| over lags 1..{} = {:.2} \
         at lag {} (threshold {:.2}) — {}",
        r.mechanism,
        r.rows,
        r.p,
        r.caps
            .iter()
            .map(|c| if *c == 0 { "default".to_string() } else { c.to_string() })
            .collect::<Vec<_>>()
            .join("/"),
        if r.identical_across_caps { "identical" } else { "DIFFER" },
        i.duplicate_pairs,
        i.expected_duplicate_pairs,
        i.duplicate_p_value,
        i.lags,
        i.max_abs_t,
        i.worst_lag,
        i.threshold,
        if r.flagged { "FLAGGED" } else { "ok" }
    )
}

/// The pipeline checks as a Markdown section (appended to `audit --all --out`'s report.md).
pub fn markdown(reports: &[PipelineReport]) -> String {
    let mut s = String::from(
        "\n## The publishing pipeline (`dprp audit ‹pipeline›`)\n\n\
         Each mechanism publishes 2500 identical rows (p = 300, k = 64 where it projects) from a \
         float64 `.npy` through the real `publish` path, with every read capped at 1, 255, 257 \
         and 2097 rows and uncapped. Required: the same payload from every run; no more \
         identical output pairs than independence predicts (Poisson tail at 10⁻³); no \
         correlation between rows at lags 1–300 (max |t| under the Bonferroni threshold at \
         α = 10⁻³). See docs/auditing.md.\n\n\
         | mechanism | payloads | identical pairs (predicted) | max \\|t\\| (lag) | threshold | verdict |\n\
         |---|---|---|---|---|---|\n",
    );
    for r in reports {
        let i = &r.independence;
        s.push_str(&format!(
            "| {} | {} | {} ({:.2}) | {:.2} ({}) | {:.2} | {} |\n",
            r.mechanism,
            if r.identical_across_caps {
                "identical"
            } else {
                "DIFFER"
            },
            i.duplicate_pairs,
            i.expected_duplicate_pairs,
            i.max_abs_t,
            i.worst_lag,
            i.threshold,
            if r.flagged { "FLAGGED" } else { "ok" }
        ));
    }
    s
}
