//! Real vectors for the mean-estimation presets: MNIST rows, and per-client gradients of a
//! multinomial logistic regression on MNIST — what a federated-learning round averages.
//!
//! **The gradients.** The model is `softmax(W·[x, 1])`, `W ∈ R^{10×785}` (d = 7850 parameters),
//! `x` the 784 pixels scaled to [0, 1]. It is trained (not privately: it only fixes the point
//! where the gradients are taken) by one epoch of minibatch SGD over the 60000 training images in
//! file order, batches of 100, learning rate 0.5, from zero. Client `j` holds images
//! `[j·s, (j+1)·s)` (MNIST's file order is not sorted by class, so the clients are alike) and
//! sends the mean cross-entropy gradient over its images at that model. How alike the clients'
//! gradients are decides how large their mean is next to the clip norm, and with it the count
//! sketch's error `(d−1)‖μ̄‖²/m`: measured on the unit-ball gradients of the first 100 clients,
//! ‖μ̄‖ ≈ 0.10 with one image per client, 0.16 with 10 and 0.36 with 60 (the preset uses 10). As in federated learning
//! with clipping (Chen et al. 2022 clip adaptively to the median norm, Andrew et al. 2021), every
//! gradient is divided by `C`, the median norm over the clients, and clipped to the unit ball:
//! the mechanisms then run with clip norm 1. (In a real round `C` must be public or estimated
//! privately; here it is read off the data, which only the evaluation may do.)

use rayon::prelude::*;

use crate::data::{read_all, InputOptions};
use crate::error::{Error, Result};
use std::path::Path;

/// Classes of MNIST.
const CLASSES: usize = 10;

/// Pixels per image.
const PIXELS: usize = 784;

/// Parameters of the model: a weight per pixel and a bias, per class.
pub const GRADIENT_DIM: usize = CLASSES * (PIXELS + 1);

/// MNIST images scaled to [0, 1] and their labels.
pub struct Mnist {
    /// Row-major pixels, `n × 784`.
    pub pixels: Vec<f64>,
    /// Labels 0..9.
    pub labels: Vec<usize>,
}

/// Read MNIST images and labels (IDX, gzip allowed).
pub fn load_mnist(images: &Path, labels: &Path) -> Result<Mnist> {
    let opts = InputOptions {
        labels: Some(labels.to_path_buf()),
        ..Default::default()
    };
    let d = read_all(images, &opts)?;
    if d.p != PIXELS {
        return Err(Error::format(
            images,
            format!("expected 28×28 = 784 pixels per image, found {}", d.p),
        ));
    }
    let raw = d
        .labels
        .ok_or_else(|| Error::format(labels, "no labels were read"))?;
    let labels = raw
        .iter()
        .enumerate()
        .map(|(i, &l)| {
            if (0.0..10.0).contains(&l) && l.fract() == 0.0 {
                Ok(l as usize)
            } else {
                Err(Error::format(
                    labels,
                    format!("label {l} of image {i} is not a digit 0–9"),
                ))
            }
        })
        .collect::<Result<Vec<usize>>>()?;
    Ok(Mnist {
        pixels: d.values.iter().map(|&v| v as f64 / 255.0).collect(),
        labels,
    })
}

/// MNIST rows scaled to unit ℓ₂ norm (every image has ink, so no row is zero).
pub fn unit_rows(m: &Mnist, n: usize) -> Vec<f64> {
    let mut out: Vec<f64> = m.pixels[..n.min(m.labels.len()) * PIXELS].to_vec();
    for r in out.chunks_exact_mut(PIXELS) {
        let norm = r.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm > 0.0 {
            r.iter_mut().for_each(|x| *x /= norm);
        }
    }
    out
}

/// Class probabilities of one image under `w` (10 × 785, bias last in each row).
fn softmax(w: &[f64], x: &[f64], p: &mut [f64; CLASSES]) {
    for (c, pc) in p.iter_mut().enumerate() {
        let row = &w[c * (PIXELS + 1)..(c + 1) * (PIXELS + 1)];
        *pc = row[..PIXELS].iter().zip(x).map(|(a, b)| a * b).sum::<f64>() + row[PIXELS];
    }
    let top = p.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut z = 0.0;
    for pc in p.iter_mut() {
        *pc = (*pc - top).exp();
        z += *pc;
    }
    p.iter_mut().for_each(|pc| *pc /= z);
}

/// Add the cross-entropy gradient of one example to `g`, scaled by `scale`.
fn add_gradient(w: &[f64], x: &[f64], label: usize, scale: f64, g: &mut [f64]) {
    let mut p = [0.0; CLASSES];
    softmax(w, x, &mut p);
    for (c, &pc) in p.iter().enumerate() {
        let r = scale * (pc - if c == label { 1.0 } else { 0.0 });
        let row = &mut g[c * (PIXELS + 1)..(c + 1) * (PIXELS + 1)];
        row[..PIXELS]
            .iter_mut()
            .zip(x)
            .for_each(|(a, b)| *a += r * b);
        row[PIXELS] += r;
    }
}

/// The model after one epoch of minibatch SGD (module documentation), and its training accuracy.
pub fn train_model(m: &Mnist) -> (Vec<f64>, f64) {
    let (batch, lr) = (100usize, 0.5);
    let n = m.labels.len();
    let mut w = vec![0.0; GRADIENT_DIM];
    let mut g = vec![0.0; GRADIENT_DIM];
    for start in (0..n).step_by(batch) {
        let end = (start + batch).min(n);
        g.fill(0.0);
        for i in start..end {
            let x = &m.pixels[i * PIXELS..(i + 1) * PIXELS];
            add_gradient(&w, x, m.labels[i], 1.0 / (end - start) as f64, &mut g);
        }
        w.iter_mut().zip(&g).for_each(|(a, b)| *a -= lr * b);
    }
    let correct = (0..n)
        .into_par_iter()
        .filter(|&i| {
            let mut p = [0.0; CLASSES];
            softmax(&w, &m.pixels[i * PIXELS..(i + 1) * PIXELS], &mut p);
            let best = (0..CLASSES)
                .max_by(|&a, &b| p[a].total_cmp(&p[b]))
                .unwrap_or(0);
            best == m.labels[i]
        })
        .count();
    (w, correct as f64 / n.max(1) as f64)
}

/// Per-client gradients (module documentation): `clients` clients of `per_client` images each,
/// scaled by the median norm and clipped to the unit ball; returns the rows and the median norm.
pub fn client_gradients(
    m: &Mnist,
    w: &[f64],
    clients: usize,
    per_client: usize,
) -> Result<(Vec<f64>, f64)> {
    if clients == 0 || per_client == 0 || clients * per_client > m.labels.len() {
        return Err(Error::param(
            "‹preset›",
            format!(
                "{clients} clients × {per_client} images do not fit in the {} images",
                m.labels.len()
            ),
        ));
    }
    let mut rows = vec![0.0; clients * GRADIENT_DIM];
    rows.par_chunks_mut(GRADIENT_DIM)
        .enumerate()
        .for_each(|(j, g)| {
            for i in j * per_client..(j + 1) * per_client {
                let x = &m.pixels[i * PIXELS..(i + 1) * PIXELS];
                add_gradient(w, x, m.labels[i], 1.0 / per_client as f64, g);
            }
        });
    let mut norms: Vec<f64> = rows
        .chunks_exact(GRADIENT_DIM)
        .map(|g| g.iter().map(|x| x * x).sum::<f64>().sqrt())
        .collect();
    norms.sort_by(f64::total_cmp);
    let median = norms[norms.len() / 2];
    if !(median.is_finite() && median > 0.0) {
        return Err(Error::param(
            "‹preset›",
            format!("the median gradient norm is {median}, cannot scale by it"),
        ));
    }
    for g in rows.chunks_exact_mut(GRADIENT_DIM) {
        let norm = g.iter().map(|x| x * x).sum::<f64>().sqrt() / median;
        let f = 1.0 / median / norm.max(1.0);
        g.iter_mut().for_each(|x| *x *= f);
    }
    Ok((rows, median))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The analytic gradient matches central finite differences of the cross-entropy.
    #[test]
    fn gradient_matches_finite_differences() {
        let x: Vec<f64> = (0..PIXELS).map(|i| ((i * 37) % 11) as f64 / 10.0).collect();
        let w: Vec<f64> = (0..GRADIENT_DIM)
            .map(|i| (((i * 7919) % 13) as f64 - 6.0) / 200.0)
            .collect();
        let label = 3;
        let loss = |w: &[f64]| {
            let mut p = [0.0; CLASSES];
            softmax(w, &x, &mut p);
            -p[label].ln()
        };
        let mut g = vec![0.0; GRADIENT_DIM];
        add_gradient(&w, &x, label, 1.0, &mut g);
        for j in [0usize, 5, 784, 785 + 100, 3 * 785 + 784, GRADIENT_DIM - 1] {
            let h = 1e-6;
            let (mut a, mut b) = (w.clone(), w.clone());
            a[j] += h;
            b[j] -= h;
            let fd = (loss(&a) - loss(&b)) / (2.0 * h);
            assert!((fd - g[j]).abs() < 1e-6, "coordinate {j}: {fd} vs {}", g[j]);
        }
    }

    #[test]
    fn clients_are_scaled_into_the_unit_ball() {
        // 40 tiny "images" with two labels
        let n = 40;
        let pixels: Vec<f64> = (0..n * PIXELS)
            .map(|i| ((i * 31) % 17) as f64 / 16.0)
            .collect();
        let labels: Vec<usize> = (0..n).map(|i| i % 2).collect();
        let m = Mnist { pixels, labels };
        let (w, acc) = train_model(&m);
        assert!((0.0..=1.0).contains(&acc));
        let (rows, median) = client_gradients(&m, &w, 8, 5).unwrap();
        assert!(median > 0.0);
        let mut at_one = 0;
        for g in rows.chunks_exact(GRADIENT_DIM) {
            let norm = g.iter().map(|x| x * x).sum::<f64>().sqrt();
            assert!(norm <= 1.0 + 1e-12, "{norm}");
            at_one += usize::from(norm > 1.0 - 1e-9);
        }
        // the clients at or above the median norm end on the sphere
        assert!(at_one >= 4, "{at_one}");
        assert!(client_gradients(&m, &w, 9, 5).is_err());
    }
}
