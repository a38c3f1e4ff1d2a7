//! The solver of [`super::LinearSvm`]: LIBLINEAR's dual coordinate descent (Hsieh et al. 2008,
//! Algorithm 3, with shrinking), run for a group of one-vs-rest problems in lockstep over one
//! shared stream of rows.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::{Features, Loss, SvmParams};
use crate::learn::features::Kernel;

/// The result of one binary dual coordinate descent.
pub(super) struct Solution {
    pub(super) w: Vec<f64>,
    pub(super) wb: f64,
    pub(super) iterations: usize,
    pub(super) converged: bool,
    pub(super) dual_objective: f64,
    pub(super) support_vectors: usize,
    pub(super) trace: Vec<f64>,
}

/// Uniform integer in `[0, n)` (multiply-shift; the bias, below `n / 2⁶⁴`, is irrelevant for a
/// visiting order).
#[inline]
fn below(rng: &mut ChaCha20Rng, n: usize) -> usize {
    ((rng.next_u64() as u128 * n as u128) >> 64) as usize
}

/// How many rows ahead of the current one the solver asks the CPU to prefetch.
const PREFETCH_AHEAD: usize = 2;

/// Largest number of one-vs-rest problems solved in lockstep over one shared stream of rows.
const GROUP_MAX: usize = 5;

/// Split `models` binary problems into groups of at most [`GROUP_MAX`] (sizes differ by at most
/// one). Depends on nothing but `models`, so results do not depend on the number of threads.
pub(super) fn groups(models: usize) -> Vec<std::ops::Range<usize>> {
    let g = models.div_ceil(GROUP_MAX).max(1);
    (0..g)
        .map(|j| j * models / g..(j + 1) * models / g)
        .collect()
}

/// Per-problem state of the lockstep solver.
struct ClassState {
    positive: i32,
    w: Vec<f64>,
    wb: f64,
    pg_max_old: f64,
    pg_min_old: f64,
    pg_max_new: f64,
    pg_min_new: f64,
    /// Rows whose coordinate is active (not shrunk) for this problem.
    n_active: usize,
    iterations: usize,
    converged: bool,
    done: bool,
    trace: Vec<f64>,
}

impl ClassState {
    fn new(positive: i32, dim: usize, n: usize) -> ClassState {
        ClassState {
            positive,
            w: vec![0f64; dim],
            wb: 0.0,
            pg_max_old: f64::INFINITY,
            pg_min_old: f64::NEG_INFINITY,
            pg_max_new: f64::NEG_INFINITY,
            pg_min_new: f64::INFINITY,
            n_active: n,
            iterations: 0,
            converged: false,
            done: false,
            trace: Vec::new(),
        }
    }
}

/// Dual coordinate descent for a group of binary problems (`positives[c]` against the rest),
/// run in lockstep: one shared random order of the rows per epoch, and for each row, one
/// coordinate step in every problem for which that row is active. Each problem follows
/// LIBLINEAR's algorithm exactly — the shared order restricted to a problem's active rows is a
/// uniformly random permutation of them, and shrinking, the reset to the full set and the
/// stopping rule are per problem — but a row is read from memory once per epoch for the whole
/// group instead of once per problem, which matters when the data do not fit in the cache.
/// With a single problem this is exactly Algorithm 3 of Hsieh et al. as in LIBLINEAR.
#[allow(clippy::too_many_arguments)]
pub(super) fn solve_group(
    x: &Features,
    kernel: Kernel,
    sq_norms: &[f64],
    labels: &[i32],
    positives: &[i32],
    p: &SvmParams,
    stream: u64,
    record: bool,
) -> Vec<Solution> {
    let n = x.n();
    let g = positives.len();
    debug_assert!((1..=32).contains(&g));
    let mut group = Lockstep::new(sq_norms, g, p);
    let mut cs: Vec<ClassState> = positives
        .iter()
        .map(|&positive| ClassState::new(positive, x.dim(), n))
        .collect();
    let mut rng = ChaCha20Rng::seed_from_u64(p.seed);
    rng.set_stream(stream);
    while cs.iter().any(|c| !c.done) {
        group.epoch(x, kernel, labels, &mut cs, &mut rng);
        if group.end_epoch(&mut cs, p, record) {
            group.rebuild_index();
        }
    }
    cs.into_iter()
        .enumerate()
        .map(|(c, st)| Solution {
            dual_objective: dual_objective(&st.w, st.wb, &group.alpha, c, g, group.diag),
            support_vectors: (0..n).filter(|&i| group.alpha[i * g + c] > 0.0).count(),
            w: st.w,
            wb: st.wb,
            iterations: st.iterations,
            converged: st.converged,
            trace: st.trace,
        })
        .collect()
}

/// What the problems of a group share: the loss's constants, the interleaved α, which rows are
/// active for which problem, and the active rows in visiting order.
struct Lockstep {
    g: usize,
    /// `D_ii`: 0 (hinge) or `1/(2C)` (squared hinge).
    diag: f64,
    /// `U`: C (hinge) or ∞ (squared hinge).
    upper: f64,
    /// The bias feature's value (0 without a bias).
    b: f64,
    /// `Q̄_ii = ‖x_i‖² + b² + D_ii`.
    qd: Vec<f64>,
    /// α of row i for problem c at `alpha[i*g + c]`: one cache line holds a row's whole group.
    alpha: Vec<f64>,
    /// Bit c of `mask[i]`: row i is active for problem c (and problem c is still running).
    mask: Vec<u32>,
    /// The rows active for some problem are `index[..len]`.
    index: Vec<u32>,
    len: usize,
}

impl Lockstep {
    fn new(sq_norms: &[f64], g: usize, p: &SvmParams) -> Lockstep {
        let n = sq_norms.len();
        let (diag, upper) = match p.loss {
            Loss::Hinge => (0.0, p.c),
            Loss::SquaredHinge => (0.5 / p.c, f64::INFINITY),
        };
        let b = p.bias.unwrap_or(0.0);
        let full: u32 = if g == 32 { u32::MAX } else { (1u32 << g) - 1 };
        Lockstep {
            g,
            diag,
            upper,
            b,
            qd: sq_norms.iter().map(|s| s + b * b + diag).collect(),
            alpha: vec![0f64; n * g],
            mask: vec![full; n],
            index: (0..n as u32).collect(),
            len: n,
        }
    }

    /// One epoch: the active rows in a fresh random order, each stepped in every problem for
    /// which it is active; rows shrunk in every problem leave the active set.
    fn epoch(
        &mut self,
        x: &Features,
        kernel: Kernel,
        labels: &[i32],
        cs: &mut [ClassState],
        rng: &mut ChaCha20Rng,
    ) {
        for c in cs.iter_mut() {
            c.pg_max_new = f64::NEG_INFINITY;
            c.pg_min_new = f64::INFINITY;
        }
        let len = self.len;
        for i in 0..len {
            let j = i + below(rng, len - i);
            self.index.swap(i, j);
        }
        let mut s = 0;
        while s < self.len {
            let i = self.index[s] as usize;
            if s + PREFETCH_AHEAD < self.len {
                x.prefetch(self.index[s + PREFETCH_AHEAD] as usize);
            }
            let mut todo = self.mask[i];
            while todo != 0 {
                let c = todo.trailing_zeros() as usize;
                todo &= todo - 1;
                if !self.step(x, kernel, i, labels[i], c, &mut cs[c]) {
                    self.mask[i] &= !(1 << c);
                    cs[c].n_active -= 1;
                }
            }
            if self.mask[i] == 0 {
                self.len -= 1;
                self.index.swap(s, self.len);
            } else {
                s += 1;
            }
        }
    }

    /// One coordinate step of row `i` in problem `c`; `false` if the row is shrunk instead.
    #[inline]
    fn step(
        &mut self,
        x: &Features,
        kernel: Kernel,
        i: usize,
        label: i32,
        c: usize,
        st: &mut ClassState,
    ) -> bool {
        let (b, diag, upper) = (self.b, self.diag, self.upper);
        let yi = if label == st.positive { 1.0 } else { -1.0 };
        let a = self.alpha[i * self.g + c];
        let grad = yi * (x.dot_with(kernel, i, &st.w) + b * st.wb) - 1.0 + a * diag;
        let mut pg = 0.0;
        if a == 0.0 {
            if grad > st.pg_max_old {
                return false;
            } else if grad < 0.0 {
                pg = grad;
            }
        } else if a == upper {
            if grad < st.pg_min_old {
                return false;
            } else if grad > 0.0 {
                pg = grad;
            }
        } else {
            pg = grad;
        }
        st.pg_max_new = st.pg_max_new.max(pg);
        st.pg_min_new = st.pg_min_new.min(pg);
        if pg.abs() > 1e-12 {
            // Q̄_ii = 0 only for an all-zero row without bias under the hinge loss;
            // then G = −1 and the dual is linear along α_i: its minimum is at U.
            let qd = self.qd[i];
            let step = if qd > 0.0 { a - grad / qd } else { upper };
            let new = step.max(0.0).min(upper);
            self.alpha[i * self.g + c] = new;
            let delta = (new - a) * yi;
            if delta != 0.0 {
                x.axpy_with(kernel, i, delta, &mut st.w);
                st.wb += delta * b;
            }
        }
        true
    }

    /// After an epoch, each running problem's stopping rule: converged on all rows, met on the
    /// shrunk set (then every row is active again), or out of iterations. `true` if the active
    /// rows must be gathered again.
    fn end_epoch(&mut self, cs: &mut [ClassState], p: &SvmParams, record: bool) -> bool {
        let n = self.mask.len();
        let mut rebuild = false;
        for (c, st) in cs.iter_mut().enumerate() {
            if st.done {
                continue;
            }
            st.iterations += 1;
            if record {
                st.trace.push(dual_objective(
                    &st.w,
                    st.wb,
                    &self.alpha,
                    c,
                    self.g,
                    self.diag,
                ));
            }
            let bit = 1u32 << c;
            if st.pg_max_new - st.pg_min_new <= p.tol {
                if st.n_active == n {
                    st.converged = true;
                    st.done = true;
                } else {
                    // Met on the shrunk set: check again on all rows.
                    for m in self.mask.iter_mut() {
                        *m |= bit;
                    }
                    st.n_active = n;
                    st.pg_max_old = f64::INFINITY;
                    st.pg_min_old = f64::NEG_INFINITY;
                    rebuild = true;
                }
            } else {
                st.pg_max_old = if st.pg_max_new <= 0.0 {
                    f64::INFINITY
                } else {
                    st.pg_max_new
                };
                st.pg_min_old = if st.pg_min_new >= 0.0 {
                    f64::NEG_INFINITY
                } else {
                    st.pg_min_new
                };
            }
            if !st.done && st.iterations >= p.max_iter {
                st.done = true;
            }
            if st.done {
                for m in self.mask.iter_mut() {
                    *m &= !bit;
                }
                rebuild = true;
            }
        }
        rebuild
    }

    /// The rows active for some problem, in row order.
    fn rebuild_index(&mut self) {
        self.len = 0;
        for (i, &m) in self.mask.iter().enumerate() {
            if m != 0 {
                self.index[self.len] = i as u32;
                self.len += 1;
            }
        }
    }
}

/// `½‖w̄‖² + Σ α_i (½ D_ii α_i − 1)` for problem `c` of a group of `g` (α interleaved), which
/// equals `½ αᵀ(Q + D)α − Σα_i` for `w̄ = Σ y_i α_i x̄_i`.
fn dual_objective(w: &[f64], wb: f64, alpha: &[f64], c: usize, g: usize, diag: f64) -> f64 {
    let ww: f64 = w.iter().map(|v| v * v).sum::<f64>() + wb * wb;
    let a: f64 = alpha
        .iter()
        .skip(c)
        .step_by(g)
        .map(|&a| a * (0.5 * diag * a - 1.0))
        .sum();
    0.5 * ww + a
}
