//! `dp-signrp-rr` on the grid arithmetic (issue 39 §2): N₊ is computed for the rounded rows
//! `ũ` (`β_q = β + 2^-q`, `ν_q = ν − √p·2^-(q+1)`), and each part of that bound is checked here
//! from first principles — the grid the mechanism picks, the norm bound against adversarial rows
//! that lose the most norm to rounding (with a check that a smaller loss would be wrong), the
//! released values against exact integer sums of `ũ`, and the utility cost against the f64 path.
//! Run with `cargo test --release`.

use dprp::mechanism::central::arithmetic::Arithmetic;
use dprp::mechanism::central::arithmetic::{grid_min_norm, rr_arithmetic};
use dprp::mechanism::central::sign_sketch::SignSketch;
use dprp::mechanism::{build, MechanismKind, MechanismParams};
use dprp::privacy::guarantee::Neighbour;
use dprp::privacy::nplus;
use dprp::projection::{DenseKind, Seed};

fn params(p: usize, k: usize, nu: f64, beta: f64) -> MechanismParams {
    MechanismParams {
        kind: MechanismKind::DpSignrpRr,
        epsilon: 5.0,
        delta: Some(1e-6),
        beta,
        neighbour: Neighbour::Coordinate,
        p,
        k: Some(k),
        projection: None,
        seed: Some(Seed::parse_hex("a11ce").unwrap()),
        min_norm: Some(nu),
        individual_dp: false,
        local: Default::default(),
    }
}

fn sketch(par: &MechanismParams) -> SignSketch {
    let m = build(par).unwrap();
    crate::sign::sign_from_record(&m.record(), &m.guarantee()).unwrap()
}

/// The settings of the checks: the benchmark's widths, MNIST's ν = 3, unit rows, a small β.
const SETTINGS: [(usize, usize, f64, f64); 6] = [
    (384, 256, 1.0, 1.0),
    (784, 1024, 3.0, 1.0),
    (768, 256, 8.0, 1.0),
    (1536, 256, 1.0, 0.5),
    (4096, 256, 1.0, 1.0),
    (4096, 64, 18.4, 0.3),
];

/// The grid is the finest of the map's (`2^-q ≤ β·2^-12`) and the norm's (`√p·2^-(q+1) ≤
/// ν·2^-11`), the recorded `ν_q` is `ν − √p·2^-(q+1)` (rounded down, and not by more than a
/// relative 10⁻¹²), and N₊ is the bound for `r ≥ β_q/ν_q` recomputed here; the utility cost (the
/// relative increase of `r` over the f64 path's `β/ν`) is at most 10⁻³.
#[test]
fn rr_grid_and_its_norm_bound_are_the_stated_ones() {
    for (p, k, nu, beta) in SETTINGS {
        let par = params(p, k, nu, beta);
        let s = sketch(&par);
        let Arithmetic::Grid { q } = s.arithmetic().arithmetic else {
            panic!("p = {p}, ν = {nu}: expected the grid");
        };
        let step = 2f64.powi(-q);
        let loss = (p as f64).sqrt() * step / 2.0;
        assert!(
            step <= beta * 2f64.powi(-12),
            "p = {p}: grid too coarse for β"
        );
        assert!(
            loss <= nu * 2f64.powi(-11),
            "p = {p}: grid too coarse for ν"
        );
        // the smallest such q: one step coarser breaks one of the two conditions
        // (the loss is rounded up, so an exact tie goes to the finer grid)
        assert!(
            2.0 * step > beta * 2f64.powi(-12) || 2.0 * loss * (1.0 + 1e-14) > nu * 2f64.powi(-11),
            "p = {p}: q = {q} is finer than needed"
        );
        let rec = s.sign_record();
        let nu_q = rec.grid_min_norm.expect("ν_q recorded");
        assert!(
            nu_q <= nu - loss,
            "p = {p}: ν_q {nu_q} above ν − √p·2^-(q+1)"
        );
        assert!(
            nu_q >= (nu - loss) * (1.0 - 1e-12),
            "p = {p}: ν_q {nu_q} lowered too far"
        );
        assert_eq!(nu_q, grid_min_norm(nu, p, q));
        let np = rec.n_plus.as_ref().unwrap();
        let r_exact = (beta + step) / (nu - loss);
        assert!(
            np.r >= r_exact,
            "p = {p}: r {} below (β + 2^-q)/ν_q {r_exact}",
            np.r
        );
        assert!(
            np.r <= r_exact * (1.0 + 1e-5),
            "p = {p}: r {} far above {r_exact}",
            np.r
        );
        assert_eq!(np.min_norm, nu_q);
        // N₊ is monotone in r: the bound recomputed for the exact r is no larger
        let again =
            nplus::compute(DenseKind::Rademacher, beta + step, nu - loss, p, k, 1e-6).unwrap();
        assert!(
            np.n_plus >= again.n_plus && np.prob >= again.prob,
            "p = {p}"
        );
        // the utility cost: r against the f64 path's β/ν (which charged only g ≤ 10⁻⁶)
        let cost = np.r / (beta / nu) - 1.0;
        assert!(cost <= 1e-3, "p = {p}: r is {cost:e} above β/ν");
        assert!(cost > 0.0);
    }
}

/// Rows that lose the most norm to rounding: every coordinate just below the midpoint between
/// two grid points (it rounds down by almost half a step), with `ν = ‖u‖`. The rounded row's
/// norm stays at or above the recorded `ν_q` — and falls below `ν − √p·2^-(q+2)`, so a bound
/// with half the loss (or without the √p) would be wrong for it. The mechanism's values are those
/// of the rounded row: exact integer sums of `round(u_i·2^q)·w_ij` scaled once.
#[test]
fn rounded_rows_keep_the_recorded_norm_bound_and_it_is_tight() {
    for (p, k, nu0, beta) in SETTINGS {
        // the row depends on the grid and the grid on ν = ‖u‖: iterate to a fixed point
        let mut nu = nu0;
        let mut found = None;
        for _ in 0..4 {
            let s = sketch(&params(p, k, nu, beta));
            let Arithmetic::Grid { q } = s.arithmetic().arithmetic else {
                panic!("p = {p}: expected the grid");
            };
            if found.is_some_and(|(q0, _, _, _)| q0 == q) {
                break;
            }
            let step = 2f64.powi(-q);
            // m steps and a little less than half a step: rounds down to m·2^-q (exact in f32
            // for q ≤ 18: at most 24 significant bits)
            let m = ((nu0 / (p as f64).sqrt()) / step).ceil();
            let a = (m + 0.5) * step - step / 64.0;
            assert!(a <= 1.0 && (a as f32) as f64 == a, "p = {p}: bad test row");
            // ν = ‖u‖ (rounded down): the row is admissible
            nu = (p as f64).sqrt() * a * (1.0 - 1e-15);
            found = Some((q, step, m, a));
        }
        let (q, step, m, a) = found.unwrap();
        let u = vec![a as f32; p];
        let s = sketch(&params(p, k, nu, beta));
        assert_eq!(
            s.arithmetic().arithmetic,
            Arithmetic::Grid { q },
            "p = {p}: no fixed point"
        );
        let nu_q = s.sign_record().grid_min_norm.unwrap();
        let rounded = (p as f64).sqrt() * m * step; // ‖ũ‖, every ũ_i = m·2^-q
        assert!(
            rounded >= nu_q,
            "p = {p}: ‖ũ‖ {rounded} below the recorded ν_q {nu_q}"
        );
        let half_loss = nu - (p as f64).sqrt() * step / 4.0;
        assert!(
            rounded < half_loss,
            "p = {p}: the test row does not lose enough norm to have power"
        );
        // and the released values are those of ũ: exact integer sums, scaled once
        let x = s.project_values(&u).unwrap();
        let dprp::mechanism::central::public_map::PublicMap::Dense(d) = s.map() else {
            panic!("dense map");
        };
        for (j, &xj) in x.iter().enumerate() {
            let sum: i64 = (0..p).map(|i| m as i64 * d.entry(i, j) as i64).sum();
            let exact = sum as f64 * step / (k as f64).sqrt();
            assert!(
                (xj - exact).abs() <= 1e-12 * exact.abs().max(1.0),
                "p = {p}, j = {j}"
            );
        }
    }
}

/// Where no grid holds the argument, the values stay in f64 with the row's own ν: Gaussian maps,
/// ℓ₁ neighbours, and a grid that would have to be finer than 2^-18 (p = 65 536 at ν = 1).
#[test]
fn rr_stays_in_f64_where_the_grid_does_not_apply() {
    let mut g = params(784, 64, 3.0, 1.0);
    g.projection = Some(DenseKind::Gaussian);
    let mut l1 = params(784, 64, 3.0, 1.0);
    l1.neighbour = Neighbour::L1;
    let wide = params(65_536, 4, 1.0, 1.0);
    for par in [g, l1, wide] {
        let s = sketch(&par);
        assert_eq!(s.arithmetic().arithmetic, Arithmetic::Float64, "{par:?}");
        assert_eq!(s.sign_record().grid_min_norm, None);
        assert_eq!(
            s.sign_record().n_plus.as_ref().unwrap().min_norm,
            par.min_norm.unwrap()
        );
        let map = s.map().clone();
        assert_eq!(
            rr_arithmetic(&map, par.beta, par.min_norm.unwrap(), par.neighbour),
            Arithmetic::Float64
        );
    }
}

/// A record whose `ν_q` does not match its grid is refused when the mechanism is rebuilt (a
/// forged or corrupted release cannot claim a larger norm bound than its grid gives).
#[test]
fn an_inconsistent_norm_bound_is_refused() {
    let m = build(&params(784, 64, 3.0, 1.0)).unwrap();
    let mut rec = m.record();
    let sign = rec.sign.as_mut().unwrap();
    sign.grid_min_norm = sign.grid_min_norm.map(|v| v * (1.0 + 1e-9));
    let e = crate::sign::sign_from_record(&rec, &m.guarantee())
        .expect_err("refused")
        .to_string();
    assert!(e.contains("inconsistent"), "{e}");
}
