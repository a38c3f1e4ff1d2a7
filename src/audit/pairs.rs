//! The neighbouring inputs an audit privatises: the worst case each mechanism's privacy argument
//! names, and a few random neighbours.
//!
//! | mechanisms | worst case (from the proof) |
//! |---|---|
//! | Gaussian sketches (`raw-g-opt`, `dp-rp-g*`, `dp-oporp`) | `x = −(β/2)·e_i`, `x' = +(β/2)·e_i` with `i` maximising `‖P e_i‖₂` (the coordinate that attains Δ₂) |
//! | `dp-signoporp-rr`, both smooth-flipping, all iDP | the same pair: every projected value of `x` is within half a step of zero, so every sign that can change changes (dense: all `k`; OPORP: the one bin of `i`), every level is 1 (smooth flipping's tight case, Theorem 4.6) and the noise set `A` is all `k` values for both inputs (iDP) |
//! | `dp-signrp-rr` | among 64 random rows of norm ≥ ν (drawn independently of the projection, as Proposition 4.4 assumes) and every coordinate `i`, the neighbour that flips the most signs (at most N₊ with probability ≥ 1 − δ) |
//! | unit-ball LDP (`privunit2`, `duchi`, `privunitg`, `projunit*`) | `x = u`, `x' = −u` (replace-one: opposite points of the sphere) |
//! | `privunit2-norm` | `x = R·u`, `x' = −10⁻³·R·u`: the direction and the norm both move (ε₁ + ε₂) |
//! | `privunit-inf` | opposite vertices `v`, `−v` of the cube |
//! | `scalar-dp` | the ends `0` and `R` of the interval |
//!
//! **iDP.** Individual DP (Definition A.1) compares the release of the dataset `U` with what the
//! mechanism calibrated on `U` (its noise set `A`) outputs on each neighbour; the trait's
//! `privatise` recomputes `A` from its input. The audit therefore uses only neighbours with the
//! same `A` as `x` (checked), for which the two coincide.

use rand::RngExt;
use rand_chacha::ChaCha20Rng;
use rand_distr::StandardNormal;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::mechanism::{central::idp_sign, Mechanism, MechanismKind, MechanismParams, SignSketch};
use crate::privacy::guarantee::InputDomain;

/// Random candidate rows searched for `dp-signrp-rr`'s worst case.
pub const NPLUS_CANDIDATES: usize = 64;

/// Two neighbouring inputs.
#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    /// Short name (`worst case`, `random 1`, …).
    pub name: String,
    /// How the pair was made.
    pub description: String,
    /// The first input.
    pub x: Vec<f32>,
    /// Its neighbour.
    pub x_prime: Vec<f32>,
}

/// The public map applied to one row (f64), through the mechanism's noiseless `project`.
pub fn project(m: &dyn Mechanism, x: &[f32]) -> Result<Vec<f64>> {
    let mut out = vec![0f32; m.output_dim()];
    m.as_sketch()?.project(x, &mut out)?;
    Ok(out.into_iter().map(|v| v as f64).collect())
}

/// The pairs for a mechanism built from `params` (its seed set), `random` random ones after the
/// worst case.
pub fn construct(
    params: &MechanismParams,
    m: &dyn Mechanism,
    rng: &mut ChaCha20Rng,
    random: usize,
) -> Result<Vec<Pair>> {
    if params.kind.is_local() {
        return local_pairs(params, m, rng, random);
    }
    let beta = params.beta;
    if beta > 2.0 {
        return Err(Error::param(
            "‹beta›",
            format!(
                "the audit's neighbours differ by β in one coordinate of [-1, 1]; β = {beta} is \
                 more than the width 2 of that interval"
            ),
        ));
    }
    let worst = if params.kind == MechanismKind::DpSignrpRr {
        most_flips(params, m, rng)?
    } else {
        largest_step(params, m)?
    };
    let idp = idp_noise_sets(params, m)?;
    let mut pairs = vec![worst];
    random_neighbours(params, m, idp.as_ref(), rng, random, &mut pairs)?;
    if let Some(s) = &idp {
        // the worst case must have the same noise set too (module documentation)
        if !same_noise_set(s, &pairs[0])? {
            return Err(Error::param(
                "audit",
                "the worst-case pair's noise sets differ; the iDP audit needs them equal",
            ));
        }
    }
    Ok(pairs)
}

/// The worst case of the sketches but `dp-signrp-rr`: `∓(β/2)·e_i` with `i` the coordinate whose
/// unit vector moves the projection most (Δ₂).
fn largest_step(params: &MechanismParams, m: &dyn Mechanism) -> Result<Pair> {
    let (p, beta) = (params.p, params.beta);
    let mut best = (0, f64::NEG_INFINITY);
    let mut e = vec![0f32; p];
    for i in 0..p {
        e[i] = 1.0;
        let n: f64 = project(m, &e)?.iter().map(|v| v * v).sum();
        e[i] = 0.0;
        if n > best.1 {
            best = (i, n);
        }
    }
    let i = best.0;
    let mut x = vec![0f32; p];
    let mut y = vec![0f32; p];
    x[i] = -(beta / 2.0) as f32;
    y[i] = (beta / 2.0) as f32;
    Ok(Pair {
        name: "worst case".into(),
        description: format!(
            "x = −(β/2)·e_{i}, x' = +(β/2)·e_{i}: coordinate {i} (counted from 0) moves the \
             projection most (‖P e_i‖₂ = {:.4}); every projected value within half a step of 0",
            best.1.sqrt()
        ),
        x,
        x_prime: y,
    })
}

/// For an iDP mechanism, its sign sketch rebuilt from the projection seed, to compare the noise
/// sets of a pair's inputs (module documentation); `None` for the others.
fn idp_noise_sets(params: &MechanismParams, m: &dyn Mechanism) -> Result<Option<SignSketch>> {
    match (params.kind.is_idp(), params.seed) {
        (false, _) => Ok(None),
        (true, Some(seed)) => Ok(Some(idp_sign::build(
            params,
            m.output_dim(),
            seed,
            crate::mechanism::NoiseChoice::Lattice,
        )?)),
        (true, None) => Err(Error::param(
            "audit",
            "an iDP audit needs the projection seed fixed (to rebuild the noise set)",
        )),
    }
}

/// Whether the two inputs of a pair have the same iDP noise set `A`.
fn same_noise_set(s: &SignSketch, pair: &Pair) -> Result<bool> {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    s.noise_set(&s.project_values(&pair.x)?, &mut a);
    s.noise_set(&s.project_values(&pair.x_prime)?, &mut b);
    Ok(a == b)
}

/// Push random neighbours until `pairs` holds `1 + random`: `x` uniform in the cube, one
/// coordinate moved by β, both rows of norm at least the mechanism's ν and, for iDP, with the
/// same noise set.
fn random_neighbours(
    params: &MechanismParams,
    m: &dyn Mechanism,
    idp: Option<&SignSketch>,
    rng: &mut ChaCha20Rng,
    random: usize,
    pairs: &mut Vec<Pair>,
) -> Result<()> {
    let p = params.p;
    let min_norm = m.sketch().and_then(|s| s.min_norm()).unwrap_or(0.0);
    let mut tries = 0;
    while pairs.len() < 1 + random {
        tries += 1;
        if tries > 1000 * (1 + random) {
            return Err(Error::param(
                "audit",
                format!(
                    "found no random neighbours meeting {}'s conditions in {} tries",
                    params.kind.name(),
                    tries - 1
                ),
            ));
        }
        let x: Vec<f32> = (0..p).map(|_| rng.random_range(-1.0f32..=1.0)).collect();
        let i = rng.random_range(0..p);
        let Some(y) = shift(&x, i, params.beta) else {
            continue;
        };
        if norm(&x) < min_norm || norm(&y) < min_norm {
            continue;
        }
        let pair = Pair {
            name: format!("random {}", pairs.len()),
            description: format!(
                "x uniform in [-1,1]^p, x' = x with coordinate {i} moved by β{}",
                if idp.is_some() {
                    " (same noise set A)"
                } else {
                    ""
                }
            ),
            x,
            x_prime: y,
        };
        if let Some(s) = idp {
            if !same_noise_set(s, &pair)? {
                continue;
            }
        }
        pairs.push(pair);
    }
    Ok(())
}

fn norm(x: &[f32]) -> f64 {
    x.iter().map(|&v| (v as f64).powi(2)).sum::<f64>().sqrt()
}

/// `x` with coordinate `i` moved by β inside [-1, 1] (up if it fits, else down), if possible.
fn shift(x: &[f32], i: usize, beta: f64) -> Option<Vec<f32>> {
    let mut y = x.to_vec();
    let v = x[i] as f64;
    let moved = if v + beta <= 1.0 {
        v + beta
    } else if v - beta >= -1.0 {
        v - beta
    } else {
        return None;
    };
    y[i] = moved as f32;
    Some(y)
}

/// `dp-signrp-rr`: the neighbour that flips the most signs among random rows of norm ≥ ν.
fn most_flips(params: &MechanismParams, m: &dyn Mechanism, rng: &mut ChaCha20Rng) -> Result<Pair> {
    let nu = m.sketch().and_then(|s| s.min_norm()).unwrap_or(0.0);
    let p = params.p;
    if nu > (p as f64).sqrt() {
        return Err(Error::param(
            "‹min_norm›",
            format!(
                "no row of [-1,1]^{p} has norm ν = {nu} (the largest is √p = {:.4}); lower \
                 ‹min_norm› or raise ‹p›",
                (p as f64).sqrt()
            ),
        ));
    }
    let mut best: Option<(usize, Pair)> = None;
    let mut drawn = 0;
    let mut tries = 0;
    while drawn < NPLUS_CANDIDATES {
        tries += 1;
        if tries > 1000 * NPLUS_CANDIDATES {
            return Err(Error::param(
                "‹min_norm›",
                format!(
                    "random rows of [-1,1]^{p} almost never reach the norm ν = {nu}; lower \
                     ‹min_norm› or raise ‹p›"
                ),
            ));
        }
        let x: Vec<f32> = (0..p).map(|_| rng.random_range(-1.0f32..=1.0)).collect();
        if norm(&x) < nu {
            continue;
        }
        drawn += 1;
        let px = project(m, &x)?;
        for i in 0..p {
            let Some(y) = shift(&x, i, params.beta) else {
                continue;
            };
            if norm(&y) < nu {
                continue;
            }
            let py = project(m, &y)?;
            let flips = px
                .iter()
                .zip(&py)
                .filter(|(a, b)| (**a >= 0.0) != (**b >= 0.0))
                .count();
            if best.as_ref().is_none_or(|(f, _)| flips > *f) {
                best = Some((
                    flips,
                    Pair {
                        name: "worst case".into(),
                        description: format!(
                            "of {NPLUS_CANDIDATES} random rows with norm ≥ ν = {nu} and every \
                             coordinate, the neighbour flipping the most signs: {flips} (N₊ bounds \
                             this for rows independent of the projection)"
                        ),
                        x: x.clone(),
                        x_prime: y,
                    },
                ));
            }
        }
    }
    best.map(|(_, p)| p).ok_or_else(|| {
        Error::param(
            "audit",
            "no coordinate of the candidate rows can move by β inside [-1, 1]",
        )
    })
}

fn unit(rng: &mut ChaCha20Rng, d: usize) -> Vec<f64> {
    loop {
        let v: Vec<f64> = (0..d)
            .map(|_| rng.sample::<f64, _>(StandardNormal))
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if n > 1e-3 {
            return v.into_iter().map(|x| x / n).collect();
        }
    }
}

/// Inside the sphere by a relative 10⁻⁶, so the f32 rounding cannot leave the ball.
const INSIDE: f64 = 1.0 - 1e-6;

fn local_pairs(
    params: &MechanismParams,
    m: &dyn Mechanism,
    rng: &mut ChaCha20Rng,
    random: usize,
) -> Result<Vec<Pair>> {
    let d = m.input_dim();
    let f32s = |v: &[f64], s: f64| v.iter().map(|&x| (x * s) as f32).collect::<Vec<f32>>();
    let mut pairs = Vec::new();
    match m.input_domain() {
        InputDomain::Ball { radius } => {
            let u = unit(rng, d);
            let r = radius * INSIDE;
            if params.kind == MechanismKind::Privunit2Norm {
                pairs.push(Pair {
                    name: "worst case".into(),
                    description: "x = R·u, x' = −10⁻³·R·u: opposite directions and norms R and \
                                  10⁻³·R (ε₁ + ε₂)"
                        .into(),
                    x: f32s(&u, r),
                    x_prime: f32s(&u, -1e-3 * r),
                });
            } else {
                pairs.push(Pair {
                    name: "worst case".into(),
                    description: "x = u, x' = −u: opposite points of the sphere".into(),
                    x: f32s(&u, r),
                    x_prime: f32s(&u, -r),
                });
            }
            for j in 0..random {
                let (a, b) = (unit(rng, d), unit(rng, d));
                let (ra, rb) = if params.kind == MechanismKind::Privunit2Norm {
                    (r * rng.random::<f64>(), r * rng.random::<f64>())
                } else {
                    (r, r)
                };
                pairs.push(Pair {
                    name: format!("random {}", j + 1),
                    description: "two independent uniform directions".into(),
                    x: f32s(&a, ra),
                    x_prime: f32s(&b, rb),
                });
            }
        }
        InputDomain::Cube => {
            let v: Vec<f64> = (0..d)
                .map(|_| if rng.random::<bool>() { 1.0 } else { -1.0 })
                .collect();
            pairs.push(Pair {
                name: "worst case".into(),
                description: "opposite vertices v, −v of the cube".into(),
                x: f32s(&v, 1.0),
                x_prime: f32s(&v, -1.0),
            });
            for j in 0..random {
                let mut draw =
                    || -> Vec<f32> { (0..d).map(|_| rng.random_range(-1.0f32..=1.0)).collect() };
                let (x, y) = (draw(), draw());
                pairs.push(Pair {
                    name: format!("random {}", j + 1),
                    description: "two independent uniform points of the cube".into(),
                    x,
                    x_prime: y,
                });
            }
        }
        InputDomain::Interval { max } => {
            pairs.push(Pair {
                name: "worst case".into(),
                description: format!("the ends 0 and R = {max} of the interval"),
                x: vec![0.0],
                x_prime: vec![max as f32],
            });
            for j in 0..random {
                let (a, b) = (rng.random::<f64>() * max, rng.random::<f64>() * max);
                pairs.push(Pair {
                    name: format!("random {}", j + 1),
                    description: "two independent uniform values of the interval".into(),
                    x: vec![a as f32],
                    x_prime: vec![(b as f32).min(max as f32)],
                });
            }
        }
    }
    Ok(pairs)
}
