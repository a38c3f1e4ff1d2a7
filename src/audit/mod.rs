//! `dprp audit`: an empirical lower bound on a mechanism's ε, the way DP-Auditorium and Google's
//! stochastic DP tester do it (issue 13).
//!
//! For a mechanism and its parameters:
//!
//! 1. **Pairs** ([`pairs`]): the worst-case neighbouring inputs the mechanism's privacy argument
//!    names, and a few random neighbours.
//! 2. **Samples**: each input of each pair is privatised `trials` times through the library's own
//!    [`Mechanism::privatise_rows`] (the publishing path's), with fresh noise from ChaCha20 (a
//!    CSPRNG: [`NoiseSource`], keyed from the OS, or from `--seed` for a reproducible audit), each
//!    trial a row with its own stream. Local mechanisms' messages are decoded to `d` values (a post-processing).
//! 3. **Events** ([`events`]): low-dimensional events of each release row (a sign, a thresholded
//!    coordinate, a thresholded projection on the difference direction, a count of signs); the
//!    threshold is chosen on the first half of the samples, the bound computed on the second.
//! 4. **Bound** ([`stats`]): Clopper–Pearson bounds on both probabilities, ε̂ = ln((p₁_lo − δ)/p₂_hi).
//!
//! **Coverage.** Every reported bound uses error `α/m` (`α = 0.05`, `m` = the number of (pair,
//! family) bounds reported: Bonferroni), so if the mechanism is (ε, δ)-DP the probability that
//! *any* reported ε̂_lower exceeds ε is at most 5% — the false-alarm probability of one audit.
//! ε̂_lower above the claimed ε is evidence, at that level, that the implementation does not
//! meet its claim; ε̂_lower below it proves nothing (an audit only finds violations it can see).
//!
//! **Mis-calibration** ([`Miscalibration`], the hidden `--miscalibrate` of the command): the
//! mechanism *sampled* is built with perturbed parameters while the *claim* stays that of the
//! honest parameters. `sigma=F` builds a Gaussian mechanism with a smaller β: σ is proportional
//! to Δ₂ (the analytic and classical conditions depend on Δ₂/σ only) and Δ₂ to β, so β·F gives
//! σ·F with float noise; lattice noise adds terms to Δ that do not scale with β, so β is then
//! corrected until the realised σ ratio is F (to 10⁻⁹). The public map is unchanged; the ratio is
//! reported. `epsilon=F`
//! builds it with ε·F (and ε₂·F for `privunit2-norm`).

pub mod events;
pub mod pairs;
pub mod pipeline;
pub mod report;
pub mod stats;

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::mechanism::{
    self, LocalOption, Mechanism, MechanismKind, MechanismParams, Payload, SketchMut,
};
use crate::privacy::samplers::noise::NoiseSource;
use crate::projection::Seed;

pub use events::FamilyResult;
pub use pairs::Pair;

/// Overall error probability of one audit.
pub const ALPHA: f64 = 0.05;

/// Rows privatised per parallel task (each row on its own ChaCha20 stream).
const CHUNK: usize = 4096;

/// Largest number of output values an audit keeps in memory (`2·trials·output_dim` per pair).
const MAX_STORED: usize = 1 << 27;

/// Largest `--trials` (each family holds a few `f64` per trial and input: ≈ 0.5 GB at this size).
pub const MAX_TRIALS: usize = 1 << 24;

/// A deliberate mis-calibration of the sampled mechanism (the claim is left unchanged).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "what", content = "factor", rename_all = "kebab-case")]
pub enum Miscalibration {
    /// Gaussian noise σ × factor.
    Sigma(f64),
    /// The mechanism built with ε × factor.
    Epsilon(f64),
}

impl Miscalibration {
    /// Parse `sigma=F` or `epsilon=F`.
    pub fn parse(s: &str) -> Result<Miscalibration> {
        let bad = || {
            Error::param(
                "‹miscalibrate›",
                format!("'{s}' is not sigma=F or epsilon=F with F a positive number"),
            )
        };
        let (what, f) = s.split_once('=').ok_or_else(bad)?;
        let f: f64 = f.trim().parse().map_err(|_| bad())?;
        if !(f.is_finite() && f > 0.0) {
            return Err(bad());
        }
        match what.trim() {
            "sigma" => Ok(Miscalibration::Sigma(f)),
            "epsilon" => Ok(Miscalibration::Epsilon(f)),
            _ => Err(bad()),
        }
    }

    /// The parameters of the sampled mechanism.
    fn apply(&self, params: &MechanismParams) -> Result<MechanismParams> {
        let mut p = params.clone();
        match *self {
            Miscalibration::Sigma(f) => {
                if !p.kind.is_gaussian_sketch() {
                    return Err(Error::param(
                        "‹miscalibrate›",
                        format!(
                            "sigma= applies to the Gaussian sketches ({}), not {}",
                            MechanismKind::names_where(MechanismKind::is_gaussian_sketch),
                            p.kind.name()
                        ),
                    ));
                }
                p.beta *= f;
            }
            Miscalibration::Epsilon(f) => {
                p.epsilon *= f;
                if let Some(e2) = p.local.epsilon_norm.as_mut() {
                    *e2 *= f;
                }
            }
        }
        Ok(p)
    }
}

/// What to audit.
#[derive(Debug, Clone)]
pub struct AuditConfig {
    /// The claimed mechanism (its `p` and `seed` set).
    pub params: MechanismParams,
    /// Samples per input of each pair (half select the events, half estimate).
    pub trials: usize,
    /// Random pairs after the worst case.
    pub random_pairs: usize,
    /// Sample a mis-calibrated mechanism against the honest claim.
    pub miscalibrate: Option<Miscalibration>,
}

/// The claim audited.
#[derive(Debug, Clone, Serialize)]
pub struct Claim {
    /// ε of the honest mechanism's guarantee.
    pub epsilon: f64,
    /// δ (0 for pure ε).
    pub delta: f64,
    /// `DP`, `iDP` or `LDP`.
    pub kind: String,
    /// The guarantee in one sentence.
    pub sentence: String,
}

/// One pair's results.
#[derive(Debug, Clone, Serialize)]
pub struct PairResult {
    /// The pair.
    pub pair: Pair,
    /// One result per event family.
    pub families: Vec<FamilyResult>,
}

/// The result of auditing one mechanism.
#[derive(Debug, Clone, Serialize)]
pub struct AuditReport {
    /// Mechanism name.
    pub mechanism: String,
    /// Input dimension.
    pub p: usize,
    /// Output values (or bits) per row.
    pub k: usize,
    /// The claim.
    pub claim: Claim,
    /// The mis-calibration sampled, if any.
    pub miscalibrate: Option<Miscalibration>,
    /// For `sigma=F`: the realised σ_sampled/σ_claimed.
    pub sigma_ratio: Option<f64>,
    /// Samples per input (each half: `trials/2`).
    pub trials: usize,
    /// Overall error probability (Bonferroni over every reported bound).
    pub alpha: f64,
    /// Bounds reported (the Bonferroni divisor).
    pub bounds: usize,
    /// Per pair.
    pub pairs: Vec<PairResult>,
    /// The largest ε̂_lower over pairs and families.
    pub epsilon_lower: Option<f64>,
    /// Where it was found: `pair / family`.
    pub worst: Option<String>,
    /// Whether ε̂_lower exceeds the claimed ε.
    pub flagged: bool,
}

impl AuditReport {
    /// The largest ε̂_lower of one family over the pairs.
    pub fn family_max(&self, family: &str) -> Option<f64> {
        self.pairs
            .iter()
            .flat_map(|p| &p.families)
            .filter(|f| f.family == family)
            .filter_map(|f| f.epsilon_lower)
            .reduce(f64::max)
    }

    /// The families reported, in order.
    pub fn family_names(&self) -> Vec<String> {
        self.pairs
            .first()
            .map(|p| p.families.iter().map(|f| f.family.clone()).collect())
            .unwrap_or_default()
    }
}

/// The projection seed of an audit with a fixed `--seed` (public maps are part of the claim's
/// randomness only for `dp-signrp-rr`, whose pairs are drawn independently of it).
pub fn projection_seed(seed: u64) -> Result<Seed> {
    let h = blake3::derive_key("dprp 2026 audit projection seed v1", &seed.to_le_bytes());
    let hex: String = h.iter().map(|b| format!("{b:02x}")).collect();
    Seed::parse_hex(&hex)
}

/// Privatised outputs of one input.
enum Outputs {
    Real(Vec<f32>, usize),
    Bits(Vec<u64>, usize),
}

/// Privatise `x` `trials` times, as rows `stream·2⁴⁰ + t` of a release (each trial on its own
/// noise stream and, for per-row maps, the map of its id: [`Mechanism::privatise_rows`]); local
/// messages are decoded.
fn sample(
    m: &dyn Mechanism,
    x: &[f32],
    trials: usize,
    stream: u64,
    noise: &NoiseSource,
) -> Result<Outputs> {
    let k = m.output_dim();
    if trials as u64 >= 1 << 40 {
        return Err(Error::param("‹trials›", "at most 2⁴⁰ trials"));
    }
    let blocks = trials.div_ceil(CHUNK);
    let local = m.local();
    let decoded = local.map(|l| l.dim());
    let chunks: Vec<Result<Outputs>> = (0..blocks)
        .into_par_iter()
        .map(|b| {
            let rows = CHUNK.min(trials - b * CHUNK);
            let input: Vec<f32> = x.iter().copied().cycle().take(rows * x.len()).collect();
            let first_row = (stream << 40) | (b * CHUNK) as u64;
            match m.payload() {
                Payload::F32 => {
                    let mut out = vec![0f32; rows * k];
                    m.privatise_rows(&input, SketchMut::Real(&mut out), first_row, noise)?;
                    match (local, decoded) {
                        // ProjUnit's messages live in its per-row k-dimensional space (even
                        // when k = d): decode them to the input space
                        (Some(l), Some(d)) if l.message_len() != d || m.kind().projects() => {
                            let mut dec = Vec::with_capacity(rows * d);
                            for (i, msg) in out.chunks_exact(k).enumerate() {
                                let v = l.decode_row(first_row + i as u64, msg)?;
                                dec.extend(v.into_iter().map(|v| v as f32));
                            }
                            Ok(Outputs::Real(dec, d))
                        }
                        _ => Ok(Outputs::Real(out, k)),
                    }
                }
                Payload::Bits => {
                    let w = k.div_ceil(64);
                    let mut out = vec![0u64; rows * w];
                    m.privatise_rows(&input, SketchMut::Bits(&mut out), first_row, noise)?;
                    Ok(Outputs::Bits(out, w))
                }
            }
        })
        .collect();
    let mut all: Option<Outputs> = None;
    for c in chunks {
        match (all.as_mut(), c?) {
            (None, c) => all = Some(c),
            (Some(Outputs::Real(a, _)), Outputs::Real(b, _)) => a.extend(b),
            (Some(Outputs::Bits(a, _)), Outputs::Bits(b, _)) => a.extend(b),
            _ => {
                return Err(Error::param(
                    "audit",
                    "blocks of one mechanism changed payload",
                ))
            }
        }
    }
    all.ok_or_else(|| Error::param("‹trials›", "at least 2 trials are needed"))
}

/// Split a statistic into its selection (first half) and estimation (second half) samples.
fn halves(v: Vec<f64>) -> (Vec<f64>, Vec<f64>) {
    let mut a = v;
    let b = a.split_off(a.len() / 2);
    (a, b)
}

/// Evaluate one family from the two inputs' statistics.
fn family(
    name: &str,
    statistic: String,
    s1: Vec<f64>,
    s2: Vec<f64>,
    delta: f64,
    alpha: f64,
) -> Result<FamilyResult> {
    let (mut a1, mut b1) = halves(s1);
    let (mut a2, mut b2) = halves(s2);
    events::run_family(
        name,
        statistic,
        (&mut a1, &mut a2),
        (&mut b1, &mut b2),
        delta,
        alpha,
    )
}

/// The families of one pair. `nx`, `ny`: the noiseless outputs of `x` and `x'` (for local
/// mechanisms, the inputs themselves).
fn pair_families(
    o1: &Outputs,
    o2: &Outputs,
    nx: &[f64],
    ny: &[f64],
    delta: f64,
    alpha: f64,
) -> Result<Vec<FamilyResult>> {
    match (o1, o2) {
        (Outputs::Real(v1, dim), Outputs::Real(v2, _)) => {
            real_families((v1, v2), *dim, (nx, ny), delta, alpha)
        }
        (Outputs::Bits(w1, words), Outputs::Bits(w2, _)) => {
            bit_families((w1, w2), *words, (nx, ny), delta, alpha)
        }
        _ => Err(Error::param(
            "audit",
            "the two inputs gave different payloads",
        )),
    }
}

/// The families of real outputs (rows of `dim` values): the projection on the noiseless
/// difference `d`, the coordinate `j` where `d` is largest, and the side of its midpoint `y_j`
/// falls on.
fn real_families(
    (v1, v2): (&[f32], &[f32]),
    dim: usize,
    (nx, ny): (&[f64], &[f64]),
    delta: f64,
    alpha: f64,
) -> Result<Vec<FamilyResult>> {
    let d: Vec<f64> = nx.iter().zip(ny).map(|(a, b)| a - b).collect();
    let dn = d
        .iter()
        .map(|v| v * v)
        .sum::<f64>()
        .sqrt()
        .max(f64::MIN_POSITIVE);
    let j = (0..dim)
        .max_by(|&a, &b| d[a].abs().total_cmp(&d[b].abs()))
        .unwrap_or(0);
    let mid = 0.5 * (nx[j] + ny[j]);
    let dir = |v: &[f32]| -> Vec<f64> {
        v.chunks_exact(dim)
            .map(|y| y.iter().zip(&d).map(|(&a, b)| a as f64 * b).sum::<f64>() / dn)
            .collect()
    };
    let coord = |v: &[f32]| -> Vec<f64> { v.chunks_exact(dim).map(|y| y[j] as f64).collect() };
    let sign = |v: &[f32]| -> Vec<f64> {
        v.chunks_exact(dim)
            .map(|y| ((y[j] as f64) >= mid) as u8 as f64)
            .collect()
    };
    Ok(vec![
        family(
            "direction",
            "⟨y, d⟩/‖d‖, d = the noiseless difference".into(),
            dir(v1),
            dir(v2),
            delta,
            alpha,
        )?,
        family(
            "coordinate",
            format!("y_{j} (counted from 0)"),
            coord(v1),
            coord(v2),
            delta,
            alpha,
        )?,
        family(
            "sign",
            format!("[y_{j} ≥ {mid:.4}]"),
            sign(v1),
            sign(v2),
            delta,
            alpha,
        )?,
    ])
}

/// Bit `j` of a row of packed sign bits.
fn bit(w: &[u64], j: usize) -> u64 {
    (w[j / 64] >> (j % 64)) & 1
}

/// The families of sign bits (rows of `words` words; `k = nx.len()` bits): the bit whose
/// frequencies differ most on the selection halves, and the count of agreements with the
/// noiseless signs where they differ.
fn bit_families(
    (w1, w2): (&[u64], &[u64]),
    words: usize,
    (nx, ny): (&[f64], &[f64]),
    delta: f64,
    alpha: f64,
) -> Result<Vec<FamilyResult>> {
    let j = most_different_bit((w1, w2), words, nx.len());
    let bits =
        |w: &[u64]| -> Vec<f64> { w.chunks_exact(words).map(|r| bit(r, j) as f64).collect() };
    let sx: Vec<bool> = nx.iter().map(|&v| v >= 0.0).collect();
    let (positions, over) = differing_signs(nx, ny);
    let count = |w: &[u64]| -> Vec<f64> {
        w.chunks_exact(words)
            .map(|r| {
                positions
                    .iter()
                    .filter(|&&j| (bit(r, j) == 1) == sx[j])
                    .count() as f64
            })
            .collect()
    };
    Ok(vec![
        family(
            "bit",
            format!("bit {j} (counted from 0; chosen on the selection half)"),
            bits(w1),
            bits(w2),
            delta,
            alpha,
        )?,
        family(
            "count",
            format!("agreements with sign(P x) over {over}"),
            count(w1),
            count(w2),
            delta,
            alpha,
        )?,
    ])
}

/// Of `k` bits, the one whose frequencies in the two inputs' selection halves differ most.
fn most_different_bit((w1, w2): (&[u64], &[u64]), words: usize, k: usize) -> usize {
    let half = |w: &[u64]| w.len() / words / 2;
    let freq = |w: &[u64], rows: usize, j: usize| {
        w.chunks_exact(words)
            .take(rows)
            .map(|r| bit(r, j))
            .sum::<u64>() as f64
            / rows.max(1) as f64
    };
    let (h1, h2) = (half(w1), half(w2));
    (0..k)
        .max_by(|&a, &b| {
            let fa = (freq(w1, h1, a) - freq(w2, h2, a)).abs();
            let fb = (freq(w1, h1, b) - freq(w2, h2, b)).abs();
            fa.total_cmp(&fb)
        })
        .unwrap_or(0)
}

/// The positions where the noiseless signs of `nx` and `ny` differ (all of them if none does),
/// and how to say which.
fn differing_signs(nx: &[f64], ny: &[f64]) -> (Vec<usize>, String) {
    let k = nx.len();
    let positions: Vec<usize> = (0..k)
        .filter(|&j| (nx[j] >= 0.0) != (ny[j] >= 0.0))
        .collect();
    if positions.is_empty() {
        (
            (0..k).collect(),
            "all k positions (no noiseless sign differs)".to_string(),
        )
    } else {
        let over = format!(
            "the {} positions where the noiseless signs differ",
            positions.len()
        );
        (positions, over)
    }
}

/// Families reported per pair for a payload.
fn families_per_pair(m: &dyn Mechanism) -> usize {
    match m.payload() {
        Payload::F32 => 3,
        Payload::Bits => 2,
    }
}

/// Audit one mechanism. `noise` supplies the secret randomness; `pair_seed` the random pairs.
pub fn run(cfg: &AuditConfig, noise: &NoiseSource, pair_seed: u64) -> Result<AuditReport> {
    check_trials(cfg.trials)?;
    let params = &cfg.params;
    let honest = mechanism::build(params)?;
    let claim = claim_of(honest.as_ref());
    let (sampled, sigma_ratio) = match cfg.miscalibrate {
        None => (None, None),
        Some(mc) => {
            let (m, ratio) = miscalibrated(mc, params, honest.as_ref())?;
            (Some(m), ratio)
        }
    };
    let sampled: &dyn Mechanism = sampled.as_deref().unwrap_or(honest.as_ref());
    check_memory(honest.as_ref(), cfg.trials)?;
    let mut rng = ChaCha20Rng::seed_from_u64(pair_seed);
    let pairs = pairs::construct(params, honest.as_ref(), &mut rng, cfg.random_pairs)?;
    let bounds = pairs.len() * families_per_pair(honest.as_ref());
    let alpha_each = ALPHA / bounds as f64;
    let mut results = Vec::new();
    for (pi, pair) in pairs.into_iter().enumerate() {
        let o1 = sample(sampled, &pair.x, cfg.trials, 2 * pi as u64, noise)?;
        let o2 = sample(sampled, &pair.x_prime, cfg.trials, 2 * pi as u64 + 1, noise)?;
        let (nx, ny) = noiseless(honest.as_ref(), &pair)?;
        let families = pair_families(&o1, &o2, &nx, &ny, claim.delta, alpha_each)?;
        results.push(PairResult { pair, families });
    }
    let best = largest_bound(&results);
    let flagged = best.as_ref().is_some_and(|(e, _)| *e > claim.epsilon);
    Ok(AuditReport {
        mechanism: params.kind.name().into(),
        p: honest.input_dim(),
        k: honest.output_dim(),
        claim,
        miscalibrate: cfg.miscalibrate,
        sigma_ratio,
        trials: cfg.trials,
        alpha: ALPHA,
        bounds,
        pairs: results,
        epsilon_lower: best.as_ref().map(|b| b.0),
        worst: best.map(|b| b.1),
        flagged,
    })
}

/// At least 2 trials (half select, half estimate) and at most [`MAX_TRIALS`].
fn check_trials(trials: usize) -> Result<()> {
    if trials < 2 {
        return Err(Error::param(
            "‹trials›",
            format!("at least 2 trials are needed (half select, half estimate), got {trials}"),
        ));
    }
    if trials > MAX_TRIALS {
        return Err(Error::param(
            "‹trials›",
            format!(
                "at most {MAX_TRIALS} trials per input (the statistics are held in memory), got \
                 {trials}"
            ),
        ));
    }
    Ok(())
}

/// The claim of the honest mechanism's guarantee.
fn claim_of(honest: &dyn Mechanism) -> Claim {
    let g = honest.guarantee();
    Claim {
        epsilon: g.epsilon,
        delta: g.delta.unwrap_or(0.0),
        kind: g.kind.short().to_string(),
        sentence: g.sentence(),
    }
}

/// The mechanism sampled under a mis-calibration, and for `sigma=F` the realised σ ratio.
fn miscalibrated(
    mc: Miscalibration,
    params: &MechanismParams,
    honest: &dyn Mechanism,
) -> Result<(Box<dyn Mechanism>, Option<f64>)> {
    let mut p = mc.apply(params)?;
    let mut m = mechanism::build(&p)?;
    let sigma_of = |m: &dyn Mechanism| m.record().gaussian.map(|g| g.sigma);
    let mut ratio = match (sigma_of(m.as_ref()), sigma_of(honest)) {
        (Some(a), Some(b)) if matches!(mc, Miscalibration::Sigma(_)) => Some(a / b),
        _ => None,
    };
    // Lattice noise adds terms to Δ that do not scale with β (the input grid, which β
    // chooses in powers of two, the error bound 2E, the lattice's γ√k), so β·F gives σ·F
    // only approximately: correct β until
    // the realised ratio is F (σ is increasing and close to linear in β).
    if let (Miscalibration::Sigma(f), Some(b)) = (mc, sigma_of(honest)) {
        for _ in 0..30 {
            let Some(r) = ratio.filter(|r| (r - f).abs() > 1e-9 * f) else {
                break;
            };
            p.beta *= f / r;
            m = mechanism::build(&p)?;
            ratio = sigma_of(m.as_ref()).map(|a| a / b);
        }
    }
    Ok((m, ratio))
}

/// Refuse an audit whose outputs (`2·trials` rows per pair) would hold more than [`MAX_STORED`]
/// values.
fn check_memory(honest: &dyn Mechanism, trials: usize) -> Result<()> {
    let per_value = if honest.payload() == Payload::Bits {
        honest.output_dim().div_ceil(64)
    } else {
        honest
            .local()
            .map(|l| l.dim())
            .unwrap_or(0)
            .max(honest.output_dim())
    };
    if trials.saturating_mul(per_value).saturating_mul(2) > MAX_STORED {
        return Err(Error::param(
            "‹trials›",
            format!(
                "{trials} trials of {per_value} values per input would hold more than \
                 {MAX_STORED} values; lower ‹trials› or the dimension"
            ),
        ));
    }
    Ok(())
}

/// The noiseless outputs of a pair's inputs: the inputs themselves for local mechanisms, else
/// their projections.
fn noiseless(honest: &dyn Mechanism, pair: &Pair) -> Result<(Vec<f64>, Vec<f64>)> {
    if honest.local().is_some() {
        let f64s = |v: &[f32]| v.iter().map(|&v| v as f64).collect();
        Ok((f64s(&pair.x), f64s(&pair.x_prime)))
    } else {
        Ok((
            pairs::project(honest, &pair.x)?,
            pairs::project(honest, &pair.x_prime)?,
        ))
    }
}

/// The largest ε̂_lower over pairs and families (the first where several tie), and where:
/// `pair / family`.
fn largest_bound(results: &[PairResult]) -> Option<(f64, String)> {
    let mut best: Option<(f64, String)> = None;
    for r in results {
        for f in &r.families {
            if let Some(e) = f.epsilon_lower {
                if best.as_ref().is_none_or(|(b, _)| e > *b) {
                    best = Some((e, format!("{} / {}", r.pair.name, f.family)));
                }
            }
        }
    }
    best
}

/// The parameters `dprp audit --all` uses for a mechanism: `p = 16`, `k = 8` (projecting
/// mechanisms), ε = 1, δ = 10⁻⁵, β = 1; `dp-signrp-rr` with ν = 1; `projunit*` in d = 16 with
/// k = 8; `scalar-dp` and `privunit2-norm` with R = 1 (ε₂ = 0.5 for the norm).
pub fn default_params(kind: MechanismKind, seed: Seed) -> MechanismParams {
    use crate::mechanism::LocalOptions;
    MechanismParams {
        delta: kind.needs_delta().then_some(1e-5),
        p: if kind == MechanismKind::ScalarDp {
            1
        } else {
            16
        },
        k: kind.projects().then_some(8),
        seed: Some(seed),
        min_norm: kind.needs_min_norm().then_some(1.0),
        individual_dp: kind.is_idp(),
        local: LocalOptions {
            epsilon_norm: kind.takes(LocalOption::EpsilonNorm).then_some(0.5),
            radius: kind.takes(LocalOption::Radius).then_some(1.0),
            ..Default::default()
        },
        ..MechanismParams::of(kind, 1.0)
    }
}
