//! Linear SVM (dual coordinate descent): correctness against independent solvers, invariants of
//! the algorithm, dense vs packed-sign features, one-vs-rest, errors, and accuracy on real LIBSVM
//! data (a9a, ijcnn1) from the project's `data/libsvm`.

use crate::data_common;

use data_common::data_file;
use dprp::data::{read_all, InputOptions};
use dprp::learn::svm::labels_from_f32;
use dprp::learn::{Features, LinearSvm, Loss, SvmParams};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rand_distr::{Distribution, StandardNormal};

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

fn normal(r: &mut ChaCha20Rng) -> f64 {
    StandardNormal.sample(r)
}

/// A noisy (non-separable) binary problem: `n × d` Gaussian rows, labels from a random
/// hyperplane with an offset, 15% of them flipped.
fn noisy_problem(n: usize, d: usize, seed: u64) -> (Vec<f32>, Vec<i32>) {
    let mut r = rng(seed);
    let w: Vec<f64> = (0..d).map(|_| normal(&mut r)).collect();
    let mut x = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for _ in 0..n {
        let row: Vec<f64> = (0..d).map(|_| normal(&mut r)).collect();
        let s: f64 = row.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() + 0.3;
        let flip = r.random::<f64>() < 0.15;
        y.push(if (s > 0.0) != flip { 1 } else { -1 });
        x.extend(row.iter().map(|&v| v as f32));
    }
    (x, y)
}

/// Random ±1 rows packed as signs, and the same matrix as dense f32.
fn sign_rows(n: usize, k: usize, seed: u64) -> (Vec<u64>, Vec<f32>) {
    let mut r = rng(seed);
    let wpr = k.div_ceil(64);
    let mut words = vec![0u64; n * wpr];
    let mut dense = vec![0f32; n * k];
    for i in 0..n {
        for j in 0..k {
            if r.random::<bool>() {
                words[i * wpr + j / 64] |= 1 << (j % 64);
                dense[i * k + j] = 1.0;
            } else {
                dense[i * k + j] = -1.0;
            }
        }
    }
    (words, dense)
}

/// `w̄ = [w; w_B]` of binary model `m` (`w_B = b / B`).
fn augmented(model: &LinearSvm, m: usize) -> Vec<f64> {
    let mut w = model.coef(m).to_vec();
    if let Some(b) = model.params().bias {
        w.push(model.intercept(m) / b);
    }
    w
}

/// Rows with the bias feature appended, in f64.
fn augmented_rows(x: &[f32], d: usize, bias: Option<f64>) -> Vec<Vec<f64>> {
    x.chunks(d)
        .map(|r| {
            let mut v: Vec<f64> = r.iter().map(|&a| a as f64).collect();
            if let Some(b) = bias {
                v.push(b);
            }
            v
        })
        .collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The primal objective, computed here independently of the library.
fn primal(w: &[f64], rows: &[Vec<f64>], y: &[f64], c: f64, loss: Loss) -> f64 {
    let reg = 0.5 * dot(w, w);
    let l: f64 = rows
        .iter()
        .zip(y)
        .map(|(x, &yi)| {
            let h = (1.0 - yi * dot(w, x)).max(0.0);
            match loss {
                Loss::Hinge => h,
                Loss::SquaredHinge => h * h,
            }
        })
        .sum();
    reg + c * l
}

/// Solve `A z = b` for a symmetric positive definite `A` (Cholesky).
fn cholesky_solve(a: &[Vec<f64>], b: &[f64]) -> Vec<f64> {
    let n = b.len();
    let mut l = vec![vec![0f64; n]; n];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
            if i == j {
                l[i][j] = (a[i][i] - s).sqrt();
            } else {
                l[i][j] = (a[i][j] - s) / l[j][j];
            }
        }
    }
    let mut z = vec![0f64; n];
    for i in 0..n {
        z[i] = (b[i] - (0..i).map(|k| l[i][k] * z[k]).sum::<f64>()) / l[i][i];
    }
    let mut out = vec![0f64; n];
    for i in (0..n).rev() {
        out[i] = (z[i] - (i + 1..n).map(|k| l[k][i] * out[k]).sum::<f64>()) / l[i][i];
    }
    out
}

/// Squared-hinge primal by Newton's method with the generalised Hessian
/// `I + 2C Σ_{i: margin < 1} x̄_i x̄_iᵀ` and backtracking (the primal is strongly convex and
/// continuously differentiable, so this converges to the unique optimum).
fn newton_squared_hinge(rows: &[Vec<f64>], y: &[f64], c: f64) -> Vec<f64> {
    let d = rows[0].len();
    let mut w = vec![0f64; d];
    for _ in 0..100 {
        let mut g = w.clone();
        let mut h: Vec<Vec<f64>> = (0..d)
            .map(|i| (0..d).map(|j| if i == j { 1.0 } else { 0.0 }).collect())
            .collect();
        for (x, &yi) in rows.iter().zip(y) {
            let m = 1.0 - yi * dot(&w, x);
            if m > 0.0 {
                for j in 0..d {
                    g[j] -= 2.0 * c * yi * m * x[j];
                    for k in 0..d {
                        h[j][k] += 2.0 * c * x[j] * x[k];
                    }
                }
            }
        }
        if dot(&g, &g).sqrt() < 1e-13 {
            break;
        }
        let step = cholesky_solve(&h, &g);
        let f0 = primal(&w, rows, y, c, Loss::SquaredHinge);
        let mut t = 1.0;
        loop {
            let cand: Vec<f64> = w.iter().zip(&step).map(|(a, s)| a - t * s).collect();
            if primal(&cand, rows, y, c, Loss::SquaredHinge) <= f0 - 1e-4 * t * dot(&g, &step)
                || t < 1e-12
            {
                w = cand;
                break;
            }
            t *= 0.5;
        }
    }
    w
}

/// Hinge-loss dual `min ½αᵀQα − Σα, 0 ≤ α ≤ C` by accelerated projected gradient (FISTA with
/// restarts), an algorithm unrelated to coordinate descent. Returns `w̄ = Σ y_i α_i x̄_i`.
fn fista_hinge_dual(rows: &[Vec<f64>], y: &[f64], c: f64, iters: usize) -> Vec<f64> {
    let n = rows.len();
    let d = rows[0].len();
    let z: Vec<Vec<f64>> = rows
        .iter()
        .zip(y)
        .map(|(x, &yi)| x.iter().map(|v| yi * v).collect())
        .collect();
    let w_of = |a: &[f64]| -> Vec<f64> {
        let mut w = vec![0f64; d];
        for (zi, &ai) in z.iter().zip(a) {
            for j in 0..d {
                w[j] += ai * zi[j];
            }
        }
        w
    };
    // Lipschitz constant: largest eigenvalue of Q = Z Zᵀ (= that of ZᵀZ), by power iteration.
    let mut v = vec![1f64; d];
    let mut lip = 0.0;
    for _ in 0..500 {
        let mut u = vec![0f64; d];
        for zi in &z {
            let s = dot(zi, &v);
            for j in 0..d {
                u[j] += s * zi[j];
            }
        }
        lip = dot(&u, &u).sqrt();
        v = u.iter().map(|a| a / lip).collect();
    }
    let step = 1.0 / (lip * 1.01);
    let obj = |a: &[f64]| {
        let w = w_of(a);
        0.5 * dot(&w, &w) - a.iter().sum::<f64>()
    };
    let mut a = vec![0f64; n];
    let mut yv = a.clone();
    let mut t = 1.0f64;
    for _ in 0..iters {
        let w = w_of(&yv);
        let next: Vec<f64> = (0..n)
            .map(|i| (yv[i] - step * (dot(&z[i], &w) - 1.0)).clamp(0.0, c))
            .collect();
        let t_next = (1.0 + (1.0 + 4.0 * t * t).sqrt()) / 2.0;
        if obj(&next) > obj(&a) {
            // restart the momentum
            t = 1.0;
            yv = a.clone();
            continue;
        }
        yv = (0..n)
            .map(|i| next[i] + (t - 1.0) / t_next * (next[i] - a[i]))
            .collect();
        a = next;
        t = t_next;
    }
    w_of(&a)
}

fn pm1(labels: &[i32], positive: i32) -> Vec<f64> {
    labels
        .iter()
        .map(|&l| if l == positive { 1.0 } else { -1.0 })
        .collect()
}

#[test]
fn separable_data_reaches_full_accuracy_dense_and_signs() {
    // Dense: points at distance ≥ 0.5 from a random hyperplane through an offset.
    let mut r = rng(1);
    let d = 10;
    let w: Vec<f64> = (0..d).map(|_| normal(&mut r)).collect();
    let (mut x, mut y) = (Vec::new(), Vec::new());
    while y.len() < 300 {
        let row: Vec<f64> = (0..d).map(|_| normal(&mut r)).collect();
        let s = dot(&row, &w) - 0.7;
        if s.abs() < 0.5 {
            continue;
        }
        x.extend(row.iter().map(|&v| v as f32));
        y.push(if s > 0.0 { 7 } else { 2 });
    }
    let f = Features::dense(&x, d).unwrap();
    // Signs: ±1 rows labelled by a ±1 hyperplane with a margin of at least 4.
    let k = 96;
    let (words, dense) = sign_rows(2000, k, 2);
    let ws: Vec<f64> = (0..k)
        .map(|_| if r.random::<bool>() { 1.0 } else { -1.0 })
        .collect();
    let (mut sw, mut sy) = (Vec::new(), Vec::new());
    for i in 0..2000 {
        let s: f64 = (0..k).map(|j| dense[i * k + j] as f64 * ws[j]).sum();
        if s.abs() >= 4.0 {
            sw.extend_from_slice(&words[i * 2..i * 2 + 2]);
            sy.push(if s > 0.0 { 1 } else { 0 });
        }
    }
    assert!(sy.len() > 500);
    let fs = Features::signs(&sw, k).unwrap();
    for loss in [Loss::Hinge, Loss::SquaredHinge] {
        let p = SvmParams {
            c: 100.0,
            loss,
            ..Default::default()
        };
        let m = LinearSvm::fit(&f, &y, &p).unwrap();
        assert_eq!(m.accuracy(&f, &y).unwrap(), 1.0, "dense {loss:?}");
        assert_eq!(m.classes(), &[2, 7]);
        let ms = LinearSvm::fit(&fs, &sy, &p).unwrap();
        assert_eq!(ms.accuracy(&fs, &sy).unwrap(), 1.0, "signs {loss:?}");
    }
}

#[test]
fn dual_objective_never_increases() {
    let (x, y) = noisy_problem(400, 20, 3);
    let f = Features::dense(&x, 20).unwrap();
    let (words, _) = sign_rows(400, 70, 4);
    let fs = Features::signs(&words, 70).unwrap();
    for loss in [Loss::Hinge, Loss::SquaredHinge] {
        for c in [0.1, 1.0, 10.0] {
            for feats in [&f, &fs] {
                let p = SvmParams {
                    c,
                    loss,
                    tol: 1e-6,
                    max_iter: 3000,
                    ..Default::default()
                };
                let (m, traces) = LinearSvm::fit_with_trace(feats, &y, &p).unwrap();
                let t = &traces[0];
                assert_eq!(t.len(), m.info()[0].iterations);
                assert!(t[0] < 0.0, "the first epoch must decrease the dual from 0");
                for e in 1..t.len() {
                    assert!(
                        t[e] <= t[e - 1] + 1e-12 * (1.0 + t[e - 1].abs()),
                        "{loss:?} C={c}: epoch {e}: {} > {}",
                        t[e],
                        t[e - 1]
                    );
                }
                assert_eq!(*t.last().unwrap(), m.info()[0].dual_objective);
            }
        }
    }
}

#[test]
fn squared_hinge_matches_newton_reference() {
    for (seed, c, bias) in [(5, 1.0, Some(1.0)), (6, 0.1, Some(2.0)), (7, 10.0, None)] {
        let d = 5;
        let (x, y) = noisy_problem(80, d, seed);
        let f = Features::dense(&x, d).unwrap();
        let p = SvmParams {
            c,
            tol: 1e-8,
            max_iter: 100_000,
            bias,
            ..Default::default()
        };
        let m = LinearSvm::fit(&f, &y, &p).unwrap();
        assert!(m.converged());
        let rows = augmented_rows(&x, d, bias);
        let yy = pm1(&y, 1);
        let w_ref = newton_squared_hinge(&rows, &yy, c);
        let w = augmented(&m, 0);
        for (a, b) in w.iter().zip(&w_ref) {
            assert!(
                (a - b).abs() < 1e-6,
                "C={c}: w {w:?} vs reference {w_ref:?}"
            );
        }
        let b_ref = bias.map_or(0.0, |b| b * w_ref[d]);
        assert!((m.intercept(0) - b_ref).abs() < 1e-6);
        // Strong duality: primal(w*) = −dual(α*).
        let pr = primal(&w, &rows, &yy, c, Loss::SquaredHinge);
        let lib = m.primal_objective(&f, &y).unwrap()[0];
        assert!((pr - lib).abs() < 1e-9 * pr);
        assert!((pr + m.info()[0].dual_objective).abs() < 1e-7 * pr);
    }
}

#[test]
fn hinge_matches_reference_objective() {
    for (seed, c) in [(8, 1.0), (9, 0.05)] {
        let d = 4;
        let (x, y) = noisy_problem(60, d, seed);
        let f = Features::dense(&x, d).unwrap();
        let p = SvmParams {
            c,
            loss: Loss::Hinge,
            tol: 1e-8,
            max_iter: 200_000,
            ..Default::default()
        };
        let m = LinearSvm::fit(&f, &y, &p).unwrap();
        assert!(m.converged());
        let rows = augmented_rows(&x, d, Some(1.0));
        let yy = pm1(&y, 1);
        let p_dcd = primal(&augmented(&m, 0), &rows, &yy, c, Loss::Hinge);
        let w_ref = fista_hinge_dual(&rows, &yy, c, 20_000);
        let p_ref = primal(&w_ref, &rows, &yy, c, Loss::Hinge);
        assert!(
            (p_dcd - p_ref).abs() < 1e-5 * p_ref,
            "C={c}: primal {p_dcd} vs reference {p_ref}"
        );
        // Duality gap of the DCD solution (weak duality makes it ≥ 0).
        let gap = p_dcd + m.info()[0].dual_objective;
        assert!(gap > -1e-9 && gap < 1e-6 * p_dcd, "gap {gap}");
    }
}

#[test]
fn signs_give_the_same_model_as_the_dense_pm1_matrix() {
    let (n, k) = (500, 100);
    let (words, dense) = sign_rows(n, k, 10);
    // Labels from two random directions: three classes.
    let mut r = rng(11);
    let a: Vec<f64> = (0..k).map(|_| normal(&mut r)).collect();
    let b: Vec<f64> = (0..k).map(|_| normal(&mut r)).collect();
    let labels: Vec<i32> = (0..n)
        .map(|i| {
            let row = &dense[i * k..(i + 1) * k];
            let sa: f64 = row.iter().zip(&a).map(|(x, w)| *x as f64 * w).sum();
            let sb: f64 = row.iter().zip(&b).map(|(x, w)| *x as f64 * w).sum();
            if sa > 3.0 {
                0
            } else if sb > 0.0 {
                1
            } else {
                2
            }
        })
        .collect();
    let fs = Features::signs(&words, k).unwrap();
    let fd = Features::dense(&dense, k).unwrap();
    for loss in [Loss::Hinge, Loss::SquaredHinge] {
        let p = SvmParams {
            loss,
            max_iter: 200,
            ..Default::default()
        };
        let ms = LinearSvm::fit(&fs, &labels, &p).unwrap();
        let md = LinearSvm::fit(&fd, &labels, &p).unwrap();
        assert_eq!(ms.n_models(), 3);
        // The same operations in the same order: bit-for-bit the same model.
        assert_eq!(ms, md);
        assert_eq!(
            ms.decision_function(&fs).unwrap(),
            md.decision_function(&fd).unwrap()
        );
        // And a sign model applies to dense ±1 rows alike.
        assert_eq!(ms.predict(&fd).unwrap(), md.predict(&fs).unwrap());
    }
}

#[test]
fn one_vs_rest_on_three_classes() {
    // Three Gaussian blobs in 2-D, labelled 3, 7 and 11.
    let centres = [(0.0, 4.0), (4.0, -2.0), (-4.0, -2.0)];
    let ids = [3, 7, 11];
    let mut r = rng(12);
    let mut make = |n: usize| {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for i in 0..n {
            let c = i % 3;
            x.push((centres[c].0 + normal(&mut r)) as f32);
            x.push((centres[c].1 + normal(&mut r)) as f32);
            y.push(ids[c]);
        }
        (x, y)
    };
    let (x, y) = make(600);
    let (xt, yt) = make(300);
    let f = Features::dense(&x, 2).unwrap();
    let ft = Features::dense(&xt, 2).unwrap();
    let p = SvmParams {
        tol: 1e-9,
        max_iter: 100_000,
        ..Default::default()
    };
    let m = LinearSvm::fit(&f, &y, &p).unwrap();
    assert_eq!(m.classes(), &ids);
    assert_eq!(m.n_models(), 3);
    assert!(m.converged());
    let dec = m.decision_function(&ft).unwrap();
    assert_eq!(dec.len(), 300 * 3);
    let pred = m.predict(&ft).unwrap();
    for (i, &p) in pred.iter().enumerate() {
        let row = &dec[i * 3..i * 3 + 3];
        let best = (0..3).fold(0, |b, j| if row[j] > row[b] { j } else { b });
        assert_eq!(p, ids[best]);
    }
    assert!(m.accuracy(&f, &y).unwrap() > 0.95);
    assert!(m.accuracy(&ft, &yt).unwrap() > 0.95);
    // Each one-vs-rest model is the binary SVM of its class against the rest (the squared-hinge
    // optimum is unique, so the visiting order does not matter at this tolerance).
    for (j, &id) in ids.iter().enumerate() {
        let yb: Vec<i32> = y.iter().map(|&l| i32::from(l == id)).collect();
        let b = LinearSvm::fit(&f, &yb, &p).unwrap();
        assert_eq!(b.n_models(), 1);
        assert_eq!(b.info()[0].positive_class, 1);
        for (u, v) in b.coef(0).iter().zip(m.coef(j)) {
            assert!((u - v).abs() < 1e-6, "class {id}: {u} vs {v}");
        }
        assert!((b.intercept(0) - m.intercept(j)).abs() < 1e-6);
        assert_eq!(m.info()[j].positive_class, id);
    }
}

#[test]
fn fits_are_reproducible_and_report_non_convergence() {
    let (x, y) = noisy_problem(300, 8, 13);
    let f = Features::dense(&x, 8).unwrap();
    let p = SvmParams::default();
    let a = LinearSvm::fit(&f, &y, &p).unwrap();
    let b = LinearSvm::fit(&f, &y, &p).unwrap();
    assert_eq!(a, b);
    let one = SvmParams {
        max_iter: 1,
        tol: 1e-12,
        ..p
    };
    let m = LinearSvm::fit(&f, &y, &one).unwrap();
    assert!(!m.converged());
    assert_eq!(m.iterations(), vec![1]);
    assert!(!m.info()[0].converged);
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let (x, y) = noisy_problem(20, 3, 14);
    let f = Features::dense(&x, 3).unwrap();
    let p = SvmParams::default();
    let msg = |r: dprp::Result<LinearSvm>| r.unwrap_err().to_string();

    let empty = Features::dense(&[], 3).unwrap();
    assert!(msg(LinearSvm::fit(&empty, &[], &p)).contains("no rows"));
    assert!(msg(LinearSvm::fit(&f, &y[..19], &p)).contains("19 labels for 20 rows"));
    assert!(msg(LinearSvm::fit(&f, &[5; 20], &p)).contains("two classes"));
    for c in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let e = msg(LinearSvm::fit(&f, &y, &SvmParams { c, ..p }));
        assert!(e.contains("invalid C"), "{e}");
    }
    let e = msg(LinearSvm::fit(&f, &y, &SvmParams { tol: -1.0, ..p }));
    assert!(e.contains("tol"), "{e}");
    let mut bad = x.clone();
    bad[3 * 4 + 2] = f32::NAN;
    let fb = Features::dense(&bad, 3).unwrap();
    let e = msg(LinearSvm::fit(&fb, &y, &p));
    assert!(e.contains("row 4, column 2"), "{e}");

    let m = LinearSvm::fit(&f, &y, &p).unwrap();
    let wrong = Features::dense(&x[..40], 4).unwrap();
    let e = m.predict(&wrong).unwrap_err().to_string();
    assert!(e.contains("trained on 3 features"), "{e}");
    assert!(m.decision_function(&wrong).is_err());
    assert!(m.accuracy(&f, &y[..5]).is_err());
    assert!(m.predict(&fb).is_err());
    assert!(Features::dense(&x, 7).is_err());
    assert!(Features::signs(&[0u64; 3], 100).is_err());
    assert!(labels_from_f32(&[1.5]).is_err());
}

/// Train on `train`, test on `test` (files of `data/libsvm`, dimension `d`), C = 1, default
/// parameters.
fn libsvm_accuracy(train: &str, test: &str, d: usize) -> (f64, LinearSvm) {
    let tr = data_file(&format!("libsvm/{train}"));
    let te = data_file(&format!("libsvm/{test}"));
    let opts = InputOptions {
        dim: Some(d),
        ..Default::default()
    };
    let a = read_all(&tr, &opts).unwrap();
    let b = read_all(&te, &opts).unwrap();
    let ya = labels_from_f32(a.labels.as_ref().unwrap()).unwrap();
    let yb = labels_from_f32(b.labels.as_ref().unwrap()).unwrap();
    let fa = Features::dense(&a.values, d).unwrap();
    let fb = Features::dense(&b.values, d).unwrap();
    let m = LinearSvm::fit(&fa, &ya, &SvmParams::default()).unwrap();
    let acc = m.accuracy(&fb, &yb).unwrap();
    eprintln!(
        "{train}: test accuracy {acc:.4}, epochs {:?}, converged {}",
        m.iterations(),
        m.converged()
    );
    (acc, m)
}

#[test]
fn a9a_accuracy_on_raw_libsvm_data() {
    let (acc, m) = libsvm_accuracy("a9a.svm.gz", "a9a.t.svm.gz", 123);
    assert!(m.converged());
    assert!((0.84..=0.855).contains(&acc), "a9a accuracy {acc}");
}

#[test]
fn ijcnn1_accuracy_on_raw_libsvm_data() {
    let (acc, m) = libsvm_accuracy("ijcnn1.trn.svm.gz", "ijcnn1.tst.svm.gz", 22);
    assert!(m.converged());
    assert!((0.91..=0.925).contains(&acc), "ijcnn1 accuracy {acc}");
}

#[test]
fn many_classes_train_in_groups_independently_of_threads() {
    // 12 classes (three lockstep groups of four), labelled by the nearest of 12 random centres.
    let (n, d) = (1200, 6);
    let mut r = rng(15);
    let centres: Vec<Vec<f64>> = (0..12)
        .map(|_| (0..d).map(|_| 3.0 * normal(&mut r)).collect())
        .collect();
    let mut x = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c = i % 12;
        x.extend(centres[c].iter().map(|&m| (m + normal(&mut r)) as f32));
        y.push(100 + c as i32);
    }
    let f = Features::dense(&x, d).unwrap();
    let p = SvmParams {
        max_iter: 300,
        ..Default::default()
    };
    let fit_with = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| LinearSvm::fit(&f, &y, &p).unwrap())
    };
    let one = fit_with(1);
    let three = fit_with(3);
    assert_eq!(one, three);
    assert_eq!(one.n_models(), 12);
    let classes: Vec<i32> = one.info().iter().map(|i| i.positive_class).collect();
    assert_eq!(classes, (100..112).collect::<Vec<_>>());
    assert!(one.accuracy(&f, &y).unwrap() > 0.8);
    // Lockstep training keeps every problem's dual objective monotone.
    let (traced, traces) = LinearSvm::fit_with_trace(&f, &y, &p).unwrap();
    assert_eq!(traced, one);
    for (t, info) in traces.iter().zip(traced.info()) {
        assert_eq!(t.len(), info.iterations);
        for e in 1..t.len() {
            assert!(t[e] <= t[e - 1] + 1e-12 * (1.0 + t[e - 1].abs()));
        }
    }
}
