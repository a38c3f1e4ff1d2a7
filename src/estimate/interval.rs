//! The [`INTERVAL_LEVEL`] intervals of the real-sketch estimators: the inner product, a released
//! row's squared norm, and the cosine — each a *score* interval, the set of values `θ` that the
//! test `|θ̂ − θ| ≤ z·sd(θ)` accepts with the standard deviation evaluated **at the hypothesis θ**,
//! not at the estimate.
//!
//! # Why not `estimate ± z·se`
//!
//! The plug-in standard error evaluates the variance of DESIGN.md §6 at the noisy estimates, and
//! those estimates come from the same projection and noise as the estimate itself. Where the
//! projection's share of the variance dominates (large ε, small k) an inner product estimated too
//! low comes with norms estimated too low and a standard error too small: the errors below the
//! truth are over-weighted (measured for dense Rademacher maps at p = 64, k = 32, ε = 10⁶: mean of
//! z = (ρ̂ − ρ)/se −0.25, sd 1.13, coverage 91.8%). `E[ρ̂²] = ρ² + Var ρ̂`, so plugging `ρ̂²` into
//! the `ρ²/k` term also inflates the variance where noise dominates. Evaluating the `ρ²` term at
//! the hypothesis (the Wilson construction, here a quadratic in ρ) removes both effects; the
//! norms stay plugged in.
//!
//! The cosine `ĉ = ρ̂/√(N̂_u N̂_v)` divides by noisy norm estimates: its distribution is skewed,
//! and near `N̂ = 0` heavy-tailed. `se(ρ̂)/√(N̂_uN̂_v)` ignores that the norms move with ρ̂ — it was
//! 2.4× too wide at cos 0.71 without noise (the delta method gives `(1−c²)²/k` for a Gaussian map
//! against `(1+c²)/k`) and too narrow at low ε (78.6% coverage for a raw query at ε = 1, k = 32,
//! p = 64, counting only the releases where it was defined). Fieller's interval for the ratio
//! with the norms plugged in still failed where noise had pushed a norm estimate up (45% coverage
//! for those releases). The interval here is a **profile score interval**: a cosine `c` is
//! accepted when, for some squared norms `(N_u, N_v)`, the residuals
//! `(ρ̂ − c√(N_uN_v), N̂_u − N_u, N̂_v − N_v)` are within `z²` (plus the smallest value over all
//! cosines, so that estimates outside the parameter space — a negative norm estimate — are not
//! held against every cosine) in the norm of their covariance at that hypothesis, from the joint
//! covariance of `(ρ̂, N̂_u, N̂_v)` over the projection and the noise:
//!
//! * noise (given the projection): `Var ρ̂ = σ²(N_u + N_v) + kσ⁴`, `Var N̂ = 4σ²N + 2kσ⁴`,
//!   `Cov(ρ̂, N̂_u) = 2σ²ρ`, independent noises for the two norms (a raw query has no noise and
//!   an exact norm: `σ²N_u` and no `N̂_u`);
//! * projection (the polarised Theorems C.2/C.3): `Cov(⟨x,y⟩, ⟨x',y'⟩) =
//!   (g/k)[⟨u,u'⟩⟨v,v'⟩ + ⟨u,v'⟩⟨v,u'⟩ + κ·Σu_iv_iu'_iv'_i]`, with `(g, κ) = (1, s − 3)` for a
//!   dense map with entry fourth moment `s`, `((p−k)/(p−1), −2)` for OPORP, `(0, ·)` without a
//!   projection.
//!
//! The κ sums (`Σu_i²v_i²`, `Σu_i⁴`, …) are not estimable from sketches: dropped when κ < 0
//! (Rademacher, uniform, OPORP: the variance errs large) and bounded when κ > 0 (`sparse:s`,
//! s > 3; rows lie in `[-1,1]^p`, so `Σu_i²v_i² ≤ min(N_u, N_v)` and `Σu_i⁴ ≤ N_u`). The
//! printed standard error of the cosine is the delta method's at the estimate (whose κ part is
//! `D²·(gκ/k)·Σ_i(a_ib_i − (c/2)(a_i² + b_i²))²`, `a = u/‖u‖`, `b = v/‖v‖`, bounded by
//! `(1+|c|)²·min(1, (1/N_u + 1/N_v)/2)` for κ > 0).
//!
//! Profiling the norms out makes the interval conservative where they are poorly known (it is
//! often all of [−1, 1] at low ε, which is what the data say); measured coverage is in
//! docs/error-bars.md.

use super::{Family, INTERVAL_LEVEL};

/// The two-sided standard normal quantile of [`INTERVAL_LEVEL`] (1.959964 at 95%).
pub fn z_level() -> f64 {
    crate::privacy::special::norm_isf_ln(((1.0 - INTERVAL_LEVEL) / 2.0).ln())
}

/// The variance model of one estimator: projection coefficients `(g, κ)`, output dimension `k`,
/// the noise variance `σ²` per coordinate over `noise_dim` coordinates (`k`, or `p` without a
/// projection), and whether the first side is a released row (noise on both sides) or a raw query.
#[derive(Debug, Clone, Copy)]
pub struct Model {
    /// Projection share: 1 (dense), `(p−k)/(p−1)` (OPORP), 0 (no projection).
    pub g: f64,
    /// Fourth-moment coefficient: `s − 3` (dense), −2 (OPORP).
    pub kappa: f64,
    /// Output dimension.
    pub k: f64,
    /// `σ²`.
    pub s2: f64,
    /// Coordinates that carry noise.
    pub noise_dim: f64,
    /// Both sides released (else the first is a raw query, known exactly).
    pub both: bool,
}

impl Model {
    /// The model of `family` at `k`, `σ` and the query mode.
    pub fn new(family: Family, k: usize, sigma: f64, both: bool) -> Model {
        let kf = k as f64;
        let (g, kappa, noise_dim) = match family {
            Family::Raw { p } => (0.0, 0.0, p as f64),
            Family::Dense { fourth_moment } => (1.0, fourth_moment - 3.0, kf),
            Family::Oporp { p } => {
                let pf = p as f64;
                let shrink = if p > 1 {
                    ((pf - kf) / (pf - 1.0)).max(0.0)
                } else {
                    0.0
                };
                (shrink, -2.0, kf)
            }
        };
        Model {
            g,
            kappa,
            k: kf.max(1.0),
            s2: sigma * sigma,
            noise_dim,
            both,
        }
    }

    /// `g/k`, the projection's coefficient.
    fn gk(&self) -> f64 {
        self.g / self.k
    }

    /// The variance of `ρ̂` without its `(g/k)ρ²` term, at norm estimates `nu`, `nv`. They are
    /// unbiased and may be negative (noise): clamping each at 0 biased the variance up by
    /// `σ²·E[max(N̂, 0) − N]`, 25–40% of it where noise dominates at k = 16. So the noise term
    /// `σ²(N_u + N_v) + kσ⁴` takes them unclamped (floored at `kσ⁴/2`; its true value is at least
    /// `kσ⁴`) and the projection's `N_uN_v` their product (floored at 0).
    pub fn ip_variance_rest(&self, nu: f64, nv: f64) -> f64 {
        let nd4 = self.noise_dim * self.s2 * self.s2;
        let noise = if self.both {
            (self.s2 * (nu + nv) + nd4).max(0.5 * nd4)
        } else {
            self.s2 * nu.max(0.0)
        };
        let fourth = if self.kappa > 0.0 {
            self.kappa * nu.min(nv).max(0.0)
        } else {
            0.0
        };
        noise + self.gk() * ((nu * nv).max(0.0) + fourth)
    }

    /// The plug-in variance of `ρ̂` at `ρ`.
    pub fn ip_variance(&self, rho: f64, nu: f64, nv: f64) -> f64 {
        self.ip_variance_rest(nu, nv) + self.gk() * rho * rho
    }

    /// The variance of a released row's `N̂ = ‖x̃‖² − kσ²` at `‖u‖² = n`:
    /// `4σ²n + 2kσ⁴ + (g/k)(2n² + κΣu_i⁴)` (`Σu_i⁴` dropped for κ < 0, at most `n` for κ > 0).
    pub fn sq_norm_variance(&self, n: f64) -> f64 {
        let n = n.max(0.0);
        let fourth = if self.kappa > 0.0 {
            self.kappa * n
        } else {
            0.0
        };
        4.0 * self.s2 * n
            + 2.0 * self.noise_dim * self.s2 * self.s2
            + self.gk() * (2.0 * n * n + fourth)
    }
}

/// The values `θ` with `a·θ² − 2b·θ + c ≤ 0` (`a > 0`), or `None` when there are none.
fn quadratic_set(a: f64, b: f64, c: f64) -> Option<(f64, f64)> {
    let disc = b * b - a * c;
    (disc >= 0.0 && a > 0.0).then(|| {
        let r = disc.sqrt();
        ((b - r) / a, (b + r) / a)
    })
}

/// The score interval of the inner product: `{ρ : (ρ̂ − ρ)² ≤ z²(R + (g/k)ρ²)}` with `R` the rest
/// of the variance at the norms `nu`, `nv` ([`Model::ip_variance_rest`]). Where `z²g/k ≥ 1`
/// (k ≤ 3) the set is unbounded and the plug-in `ρ̂ ± z·se` is returned instead.
pub fn ip_interval(m: &Model, rho_hat: f64, nu: f64, nv: f64, z: f64) -> (f64, f64) {
    let rest = m.ip_variance_rest(nu, nv);
    let a = 1.0 - z * z * m.gk();
    match quadratic_set(a, rho_hat, rho_hat * rho_hat - z * z * rest) {
        Some(i) if a > 1e-3 => i,
        _ => {
            let half = z * m.ip_variance(rho_hat, nu, nv).sqrt();
            (rho_hat - half, rho_hat + half)
        }
    }
}

/// The score interval of a released row's squared norm from `N̂ = ‖x̃‖² − kσ²`:
/// `{n ≥ 0 : (N̂ − n)² ≤ z²·Var(n)}` ([`Model::sq_norm_variance`], a quadratic in `n`).
pub fn sq_norm_interval(m: &Model, n_hat: f64, z: f64) -> (f64, f64) {
    let z2 = z * z;
    let fourth = if m.kappa > 0.0 { m.kappa } else { 0.0 };
    let a = 1.0 - 2.0 * z2 * m.gk();
    let b = n_hat + z2 * (2.0 * m.s2 + 0.5 * m.gk() * fourth);
    let c = n_hat * n_hat - 2.0 * z2 * m.noise_dim * m.s2 * m.s2;
    match quadratic_set(a, b, c) {
        Some((lo, hi)) if a > 1e-3 => (lo.max(0.0), hi.max(0.0)),
        _ => {
            let half = z * m.sq_norm_variance(n_hat).sqrt();
            ((n_hat - half).max(0.0), n_hat + half)
        }
    }
}

/// The linearised variance of `ρ̂ − c·D̂` at the hypothesis `ρ = c·D`, `D = √(nu·nv)` (module
/// documentation); `nu` is exact (no variance) for a raw query.
fn ratio_variance(m: &Model, c: f64, nu: f64, nv: f64) -> f64 {
    let d2 = nu * nv;
    let d = d2.sqrt();
    let rho = c * d;
    let gk = m.gk();
    let nd4 = 2.0 * m.noise_dim * m.s2 * m.s2;
    let v_r = m.ip_variance(rho, nu, nv);
    let c_rv = 2.0 * rho * (m.s2 + gk * nv);
    let v_vv = 4.0 * m.s2 * nv + nd4 + 2.0 * gk * nv * nv;
    let (c_ru, v_uu, c_uv) = if m.both {
        (
            2.0 * rho * (m.s2 + gk * nu),
            4.0 * m.s2 * nu + nd4 + 2.0 * gk * nu * nu,
            2.0 * gk * rho * rho,
        )
    } else {
        (0.0, 0.0, 0.0)
    };
    // Var D̂ and Cov(ρ̂, D̂) by the delta method on D = √(N_u N_v)
    let v_d = d2 / 4.0 * (v_uu / (nu * nu) + v_vv / (nv * nv) + 2.0 * c_uv / d2);
    let c_rd = d / 2.0 * (c_ru / nu + c_rv / nv);
    // the κ part of the combination, for κ < 0 dropped with the same sign as in ρ̂'s variance;
    // for κ > 0 the bound of the module documentation replaces the ρ̂ variance's κ term
    let fourth = if m.kappa > 0.0 {
        d2 * gk * m.kappa * (1.0 + c.abs()).powi(2) * (0.5 * (1.0 / nu + 1.0 / nv)).min(1.0)
            - gk * m.kappa * nu.min(nv)
    } else {
        0.0
    };
    (v_r - 2.0 * c * c_rd + c * c * v_d + fourth).max(0.0)
}

/// The delta-method standard error of the cosine `ĉ = ρ̂/√(nu·nv)` (norm estimates, both
/// positive; `nu` exact for a raw query): `√Var(ρ̂ − ĉD̂)/D` at `ρ = ρ̂`.
pub fn cosine_se(m: &Model, rho_hat: f64, nu: f64, nv: f64) -> f64 {
    let d = (nu * nv).sqrt();
    ratio_variance(m, (rho_hat / d).clamp(-1.0, 1.0), nu, nv).sqrt() / d
}

/// What the cosine's interval is computed from: the estimates and, for a raw query, its exact
/// squared norm.
#[derive(Debug, Clone, Copy)]
pub struct CosineData {
    /// `ρ̂`.
    pub rho: f64,
    /// `N̂_u` (a released row's, unbiased, any sign) or the raw query's exact `‖u‖²`.
    pub nu: f64,
    /// `N̂_v`.
    pub nv: f64,
}

/// The score statistic at the cosine `c` and the hypothesised squared norms `(nu, nv)`: `r'V⁻¹r`
/// for the residuals `r = (ρ̂ − c√(nu·nv), N̂_u − nu, N̂_v − nv)` (no `N̂_u` term for a raw query)
/// under their covariance `V` over the projection and the noise at that hypothesis (module
/// documentation).
fn profile_q(m: &Model, e: &CosineData, c: f64, nu: f64, nv: f64) -> f64 {
    let gk = m.gk();
    let rho = c * (nu * nv).sqrt();
    let nd4 = 2.0 * m.noise_dim * m.s2 * m.s2;
    let kp = m.kappa.max(0.0) * gk;
    let v11 = m.ip_variance(rho, nu, nv);
    let v33 = 4.0 * m.s2 * nv + nd4 + 2.0 * gk * nv * nv + kp * nv;
    let v13 = 2.0 * rho * (m.s2 + gk * nv);
    let (r1, r3) = (e.rho - rho, e.nv - nv);
    if !m.both {
        let det = v11 * v33 - v13 * v13;
        return if det > 0.0 {
            (r1 * r1 * v33 - 2.0 * r1 * r3 * v13 + r3 * r3 * v11) / det
        } else {
            f64::INFINITY
        };
    }
    let v22 = 4.0 * m.s2 * nu + nd4 + 2.0 * gk * nu * nu + kp * nu;
    let v12 = 2.0 * rho * (m.s2 + gk * nu);
    let v23 = 2.0 * gk * rho * rho;
    let r2 = e.nu - nu;
    // r' V⁻¹ r by the adjugate of the symmetric 3×3 matrix
    let a11 = v22 * v33 - v23 * v23;
    let a12 = v13 * v23 - v12 * v33;
    let a13 = v12 * v23 - v13 * v22;
    let a22 = v11 * v33 - v13 * v13;
    let a23 = v12 * v13 - v11 * v23;
    let a33 = v11 * v22 - v12 * v12;
    let det = v11 * a11 + v12 * a12 + v13 * a13;
    if det <= 0.0 {
        return f64::INFINITY;
    }
    (r1 * r1 * a11
        + r2 * r2 * a22
        + r3 * r3 * a33
        + 2.0 * (r1 * r2 * a12 + r1 * r3 * a13 + r2 * r3 * a23))
        / det
}

/// The smallest `f(t)` over `t ∈ [0, top]` (a grid of 16 steps, then golden-section search
/// around the best point), stopping early once a value is at most `stop`; returns it and its `t`.
fn minimise(f: &dyn Fn(f64) -> f64, top: f64, stop: f64) -> (f64, f64) {
    let steps = 16;
    let (mut best, mut at) = (f64::INFINITY, 0usize);
    for j in 0..=steps {
        let v = f(top * j as f64 / steps as f64);
        if v < best {
            (best, at) = (v, j);
        }
        if best <= stop {
            return (best, top * j as f64 / steps as f64);
        }
    }
    let point = |j: usize| top * j as f64 / steps as f64;
    let (mut a, mut b) = (point(at.saturating_sub(1)), point((at + 1).min(steps)));
    let r = 0.5 * (5f64.sqrt() - 1.0);
    let (mut x1, mut x2) = (b - r * (b - a), a + r * (b - a));
    let (mut f1, mut f2) = (f(x1), f(x2));
    for _ in 0..40 {
        if f1.min(f2) <= stop {
            break;
        }
        if f1 < f2 {
            (b, x2, f2) = (x2, x1, f1);
            x1 = b - r * (b - a);
            f1 = f(x1);
        } else {
            (a, x1, f1) = (x1, x2, f2);
            x2 = a + r * (b - a);
            f2 = f(x2);
        }
    }
    if f1 < f2 {
        (f1.min(best), x1)
    } else {
        (f2.min(best), x2)
    }
}

/// `min over the unknown squared norms` of [`profile_q`] at cosine `c`, stopping early once it is
/// at most `stop`: over `N_v` for a raw query, over `(N_u, N_v)` by coordinate descent (three
/// rounds from the estimates) for two released rows. The norms are searched as `t = √N` on
/// `[0, √(N̂⁺ + 10·sd(N̂))]`.
fn profile_min(m: &Model, e: &CosineData, c: f64, stop: f64) -> f64 {
    let top = |n: f64| (n.max(0.0) + 10.0 * m.sq_norm_variance(n).sqrt()).sqrt();
    let (tu, tv) = (top(e.nu), top(e.nv));
    if !m.both {
        return minimise(&|t| profile_q(m, e, c, e.nu, t * t), tv, stop).0;
    }
    let (mut nu, mut nv) = (e.nu.max(0.0), e.nv.max(0.0));
    let mut best = profile_q(m, e, c, nu, nv);
    for _ in 0..3 {
        if best <= stop {
            break;
        }
        let (q, t) = minimise(&|t| profile_q(m, e, c, t * t, nv), tu, stop);
        if q < best {
            (best, nu) = (q, t * t);
        }
        let (q, t) = minimise(&|t| profile_q(m, e, c, nu, t * t), tv, stop);
        if q < best {
            (best, nv) = (q, t * t);
        }
    }
    best
}

/// The cosine's [`INTERVAL_LEVEL`] interval: the cosines `c ∈ [−1, 1]` that the profile score
/// test accepts, `min_{N} Q(c, N) ≤ z²` (`profile_q`, `profile_min`). The unknown norms are
/// nuisance parameters profiled out rather than plugged in: a norm estimate that noise pushed up
/// makes the plug-in ratio look precise and biased towards 0 (an interval plugging in the
/// norms covered 45% of the time for such rows at ε = 1, k = 32), while the profile lets the
/// norm be as small as the data allow — and gives an interval even where a norm estimate is not
/// positive and the point estimate is undefined (often all of [−1, 1]: nothing is known).
///
/// The accepted set contains `ĉ` when both norm estimates are positive and `|ĉ| ≤ 1` (the
/// residuals vanish there); otherwise a grid of 41 cosines seeds it. Its ends are found by
/// stepping outward (doubling from `step`) to the first rejected cosine and bisecting (40
/// halvings). No accepted cosine at all (data at odds with every cosine) gives the grid's best
/// cosine as a one-point interval.
pub fn cosine_interval(m: &Model, e: &CosineData, z: f64) -> (f64, f64) {
    let z2 = z * z;
    let at = |i: usize| -1.0 + i as f64 / 20.0;
    // the smallest deviance over every cosine: a grid of 41, then golden-section search
    let prof = |c: f64| profile_min(m, e, c, f64::NEG_INFINITY);
    let defined = e.nu > 0.0 && e.nv > 0.0;
    let c_hat = if defined {
        e.rho / (e.nu * e.nv).sqrt()
    } else {
        f64::NAN
    };
    let mut grid: Vec<(f64, f64)> = (0..=40).map(|i| (prof(at(i)), at(i))).collect();
    if c_hat.abs() <= 1.0 {
        grid.push((prof(c_hat), c_hat));
    }
    let best = grid
        .iter()
        .copied()
        .fold((f64::INFINITY, 0.0), |a, b| if b.0 < a.0 { b } else { a });
    let (mut a, mut b) = ((best.1 - 0.05).max(-1.0), (best.1 + 0.05).min(1.0));
    let r = 0.5 * (5f64.sqrt() - 1.0);
    let (mut x1, mut x2) = (b - r * (b - a), a + r * (b - a));
    let (mut f1, mut f2) = (prof(x1), prof(x2));
    for _ in 0..30 {
        if f1 < f2 {
            (b, x2, f2) = (x2, x1, f1);
            x1 = b - r * (b - a);
            f1 = prof(x1);
        } else {
            (a, x1, f1) = (x1, x2, f2);
            x2 = a + r * (b - a);
            f2 = prof(x2);
        }
    }
    let (floor, c_best) = [best, (f1, x1), (f2, x2)]
        .into_iter()
        .fold((f64::INFINITY, 0.0), |a, b| if b.0 < a.0 { b } else { a });
    let level = floor + z2;
    let accept = |c: f64| profile_min(m, e, c, level) <= level;
    let refine = |mut good: f64, mut bad: f64| {
        for _ in 0..40 {
            let mid = 0.5 * (good + bad);
            if accept(mid) {
                good = mid;
            } else {
                bad = mid;
            }
        }
        good
    };
    let step0 = if defined {
        (0.25 * cosine_se(m, e.rho, e.nu, e.nv)).clamp(1e-9, 0.05)
    } else {
        0.05
    };
    let end = |from: f64, dir: f64| {
        let (mut good, mut step) = (from, step0);
        loop {
            let t = (from + dir * step).clamp(-1.0, 1.0);
            if !accept(t) {
                return refine(good, t);
            }
            if t.abs() >= 1.0 {
                return t;
            }
            good = t;
            step *= 2.0;
        }
    };
    // the accepted set around the best cosine, widened to every accepted grid point
    let lo = grid
        .iter()
        .filter(|g| g.0 <= level)
        .map(|g| g.1)
        .fold(c_best, f64::min);
    let hi = grid
        .iter()
        .filter(|g| g.0 <= level)
        .map(|g| g.1)
        .fold(c_best, f64::max);
    (end(lo, -1.0), end(hi, 1.0))
}
