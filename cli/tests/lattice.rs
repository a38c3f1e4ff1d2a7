//! Lattice noise (src/privacy/lattice.rs): the recorded accounting recomputed independently (with
//! power checks: a wrong η or a missing √k term is caught), outputs on the lattice, iDP-Gaussian,
//! the record of `--noise float`, old releases, and the CLI's errors.

use crate::cli_helpers;

#[allow(unused_imports)]
use cli_helpers::*;

use dprp::mechanism::central::public_map::PublicMap;
use dprp::mechanism::{
    build_with, Mechanism, MechanismKind, MechanismParams, MechanismRecord, NoiseChoice,
    NoiseMethod, SketchMut,
};
use dprp::privacy::gaussian::{analytic_sigma, classical_sigma};
use dprp::privacy::guarantee::Neighbour;
use dprp::privacy::lattice::LatticeRecord;
use dprp::privacy::samplers::noise::NoiseSource;
use dprp::projection::{DenseKind, DenseProjection, Oporp, Seed};

fn params(kind: MechanismKind, p: usize, k: Option<usize>, eps: f64) -> MechanismParams {
    MechanismParams {
        kind,
        epsilon: eps,
        delta: Some(1e-6),
        beta: 1.0,
        neighbour: Neighbour::Coordinate,
        p,
        k,
        projection: None,
        seed: Some(Seed::parse_hex("1a77").unwrap()),
        min_norm: None,
        individual_dp: true,
        local: Default::default(),
    }
}

fn lattice_of(m: &dyn Mechanism) -> LatticeRecord {
    match m.record().noise {
        Some(NoiseMethod::Lattice(l)) => l,
        other => panic!("expected lattice noise, got {other:?}"),
    }
}

/// `E` from its definition (src/mechanism/central/arithmetic.rs), written out again: `γ_m = m·u/(1 − m·u)`,
/// `u = 2⁻⁵³`; dense ±1 maps on the grid (`β = 1`, coordinate neighbours):
/// `(Σ_j (γ₄‖w_j‖₁/√k)²)^{1/2}`; other dense maps in f64: `(Σ_j (γ_{p+4}‖w_j‖₁/√k)²)^{1/2}`;
/// OPORP: `(Σ_b (γ_{n_b} n_b)²)^{1/2}`; identity: 0.
fn fp_error(map: &PublicMap) -> f64 {
    let u = (2.0f64).powi(-53);
    let gm = |m: usize| m as f64 * u / (1.0 - m as f64 * u);
    match map {
        PublicMap::Identity { .. } => 0.0,
        PublicMap::Dense(d) => {
            let k = d.k();
            let g = if d.has_sign_units() {
                gm(4)
            } else {
                gm(d.p() + 4)
            };
            (0..k)
                .map(|j| {
                    let l1: f64 = (0..d.p()).map(|i| d.entry(i, j).abs()).sum();
                    (g * l1 / (k as f64).sqrt()).powi(2)
                })
                .sum::<f64>()
                .sqrt()
        }
        PublicMap::Oporp(o) => {
            let mut n = vec![0usize; o.k()];
            o.bins().iter().for_each(|&b| n[b as usize] += 1);
            n.iter()
                .map(|&n| (gm(n) * n as f64).powi(2))
                .sum::<f64>()
                .sqrt()
        }
    }
}

/// `Δ_q` of the computed map at β = 1: `Δ₂·(1 + 2^-12)` for ±1 dense maps (inputs on the grid
/// 2^-12), `Δ₂` otherwise.
fn grid_sensitivity(map: &PublicMap) -> f64 {
    match map {
        PublicMap::Dense(d) if d.has_sign_units() => map.sensitivity(1.0) * (1.0 + 1.0 / 4096.0),
        _ => map.sensitivity(1.0),
    }
}

/// Everything the release states about the lattice, recomputed from first principles for a
/// fixed-σ mechanism with exact-map sensitivity `sens`, `k` outputs, (ε, δ) and the σ rule.
/// Returns the first violated condition.
fn check_accounting(
    l: &LatticeRecord,
    sens: f64,
    fp: f64,
    k: usize,
    eps: f64,
    delta: f64,
    classical: bool,
) -> Result<(), String> {
    // η by direct summation of its series (terms beyond m = 3 are below 10⁻³⁰⁰)
    let pi2 = std::f64::consts::PI * std::f64::consts::PI;
    let eta: f64 = (1..4)
        .map(|m| 2.0 * (-2.0 * pi2 * l.s2 * l.s2 * (m * m) as f64).exp())
        .sum();
    if l.eta < eta {
        return Err(format!("η bound {} below η = {eta}", l.eta));
    }
    if l.sampler_error < dprp::privacy::exact::WEIGHT_ERROR {
        return Err("sampler error understated".into());
    }
    let c = ((1.0 + l.eta) / (1.0 - l.eta)) * ((1.0 + l.sampler_error) / (1.0 - l.sampler_error));
    let ln_c =
        (l.eta.ln_1p() - (-l.eta).ln_1p()) + (l.sampler_error.ln_1p() - (-l.sampler_error).ln_1p());
    if l.log_c < ln_c || (c - 1.0) > 3.0 * ln_c {
        return Err(format!("ln c = {} but η, e give {ln_c}", l.log_c));
    }
    if l.coordinates != k {
        return Err(format!("k = {} recorded, {k} actual", l.coordinates));
    }
    // ε₀ + 2k ln c ≤ ε and c^k δ₀ ≤ δ, checked in f64 where both sides are far apart in ulps
    if l.epsilon0 + 2.0 * k as f64 * ln_c > eps {
        return Err(format!("ε₀ = {} + 2k ln c exceeds ε = {eps}", l.epsilon0));
    }
    if l.delta0 * (k as f64 * ln_c).exp() > delta {
        return Err(format!("c^k δ₀ exceeds δ (δ₀ = {})", l.delta0));
    }
    if l.fp_error < fp * (1.0 - 1e-12) {
        return Err(format!("E = {} below {fp}", l.fp_error));
    }
    let gamma = (2.0f64).powi(-l.g);
    let sens_r = l.sensitivity_r.ok_or("no Δ_r")?;
    let need = sens + 2.0 * fp + gamma * (k as f64).sqrt();
    if sens_r < need * (1.0 - 1e-15) {
        return Err(format!("Δ_r = {sens_r} < Δ + 2E + γ√k = {need}"));
    }
    let sigma_c = l.sigma_c.ok_or("no σ_c")?;
    let expect = if classical {
        classical_sigma(sens_r, l.epsilon0, l.delta0).unwrap()
    } else {
        analytic_sigma(sens_r, l.epsilon0, l.delta0).unwrap()
    };
    if sigma_c != expect {
        return Err(format!("σ_c = {sigma_c}, calibration gives {expect}"));
    }
    // γ: the largest power of two with γ√k ≤ (Δ + 2E)·2^-12 and γ·s₂ ≤ σ·2^-12
    let fits = |gm: f64| {
        gm * (k as f64).sqrt() <= (sens + 2.0 * fp) / 4096.0 && gm * l.s2 <= sigma_c / 4096.0
    };
    if !fits(gamma) {
        return Err(format!("γ = 2^-{} too coarse", l.g));
    }
    if fits(2.0 * gamma * (1.0 + 1e-9)) {
        return Err(format!("γ = 2^-{} not the largest", l.g));
    }
    let s_sq = l.s_squared.ok_or("no s²")? as f64;
    let s1 = sigma_c / gamma;
    if s_sq < s1 * s1 + l.s2 * l.s2 || s_sq > s1 * s1 + l.s2 * l.s2 + 3.0 {
        return Err(format!("s² = {s_sq} vs (σ_c/γ)² + s₂² = {}", s1 * s1 + 4.0));
    }
    let sigma = l.sigma.ok_or("no σ")?;
    if (sigma - gamma * s_sq.sqrt()).abs() > 1e-15 * sigma {
        return Err(format!("σ = {sigma}, γ·s = {}", gamma * s_sq.sqrt()));
    }
    Ok(())
}

/// The recorded γ, s₂, η, ε₀/δ₀, E, Δ_r, σ_c, s², σ recomputed independently for every fixed-σ
/// Gaussian mechanism (and the calibration's σ is the recorded γ·s); power: a record with a
/// wrong η (s₂ = ½'s), without the √k term, with E left out, or with the uncorrected ε is
/// rejected by the same check.
#[test]
fn recorded_accounting_recomputes() {
    let p = 96;
    for (kind, k, proj, eps) in [
        (MechanismKind::RawGOpt, None, None, 1.0),
        (MechanismKind::DpRpGOpt, Some(64), None, 5.0),
        (
            MechanismKind::DpRpGOpt,
            Some(64),
            Some(DenseKind::Gaussian),
            0.5,
        ),
        (MechanismKind::DpRpG, Some(32), None, 0.5),
        (MechanismKind::DpOporp, Some(32), None, 2.0),
    ] {
        let mut prm = params(kind, p, k, eps);
        prm.projection = proj;
        let m = build_with(&prm, NoiseChoice::Lattice).unwrap();
        let l = lattice_of(m.as_ref());
        let rec = m.record();
        let cal = rec.gaussian.clone().unwrap();
        let kk = m.output_dim();
        let seed = Seed::parse_hex("1a77").unwrap();
        let map = match kind {
            MechanismKind::RawGOpt => PublicMap::Identity { p },
            MechanismKind::DpOporp => PublicMap::Oporp(Oporp::generate(p, kk, seed).unwrap()),
            _ => PublicMap::Dense(
                DenseProjection::generate(proj.unwrap_or(DenseKind::Rademacher), p, kk, seed)
                    .unwrap(),
            ),
        };
        let sens = grid_sensitivity(&map);
        assert!(
            cal.sensitivity >= sens && cal.sensitivity <= sens * (1.0 + 1e-12),
            "{kind:?}: Δ_q = {} for {sens}",
            cal.sensitivity
        );
        let fp = fp_error(&map);
        let classical = kind == MechanismKind::DpRpG;
        check_accounting(&l, sens, fp, kk, eps, 1e-6, classical)
            .unwrap_or_else(|e| panic!("{kind:?} {proj:?}: {e}"));
        assert_eq!(Some(cal.sigma), l.sigma, "{kind:?}: estimators use γ·s");
        let est = m.as_sketch().unwrap().estimator();
        let dprp::estimate::Estimator::Gaussian { sigma, .. } = est else {
            panic!()
        };
        assert_eq!(Some(sigma), l.sigma);
        // the guarantee is the requested one
        assert_eq!(m.guarantee().epsilon, eps);
        if !classical {
            assert_eq!(m.guarantee().delta, Some(1e-6), "{kind:?}");
        }
        // power
        let mut bad = l.clone();
        let q = (-2.0 * std::f64::consts::PI.powi(2) * 0.25f64).exp();
        bad.eta = 2.0 * q;
        assert!(check_accounting(&bad, sens, fp, kk, eps, 1e-6, classical).is_err());
        let mut bad = l.clone();
        bad.sensitivity_r = Some(sens + 2.0 * l.fp_error + (2.0f64).powi(-l.g));
        if kk > 1 {
            assert!(check_accounting(&bad, sens, fp, kk, eps, 1e-6, classical).is_err());
        }
        if fp > 0.0 {
            let mut bad = l.clone();
            bad.sensitivity_r = Some(sens + (2.0f64).powi(-l.g) * (kk as f64).sqrt());
            assert!(check_accounting(&bad, sens, fp, kk, eps, 1e-6, classical).is_err());
        }
        let mut bad = l.clone();
        bad.epsilon0 = eps;
        assert!(check_accounting(&bad, sens, fp, kk, eps, 1e-6, classical).is_err());
    }
}

/// Every released value lies on γℤ (v·2^g is an integer), for dense, OPORP and raw rows of
/// arbitrary values; the same rows with float noise are almost never on the lattice (power).
#[test]
fn every_output_lies_on_the_lattice() {
    let p = 50;
    let rows = 300;
    let data: Vec<f32> = (0..rows * p)
        .map(|i| ((i * 7919 % 2001) as f32 / 1000.0 - 1.0) * 0.999)
        .collect();
    for (kind, k) in [
        (MechanismKind::RawGOpt, None),
        (MechanismKind::DpRpGOpt, Some(40)),
        (MechanismKind::DpOporp, Some(20)),
    ] {
        for noise in [NoiseChoice::Lattice, NoiseChoice::Float] {
            let m = build_with(&params(kind, p, k, 1.0), noise).unwrap();
            let kk = m.output_dim();
            let mut out = vec![0f32; rows * kk];
            let src = NoiseSource::from_seed("lattice-membership");
            m.privatise_rows(&data, SketchMut::Real(&mut out), 0, &src)
                .unwrap();
            let g = match noise {
                NoiseChoice::Lattice => lattice_of(m.as_ref()).g,
                NoiseChoice::Float => {
                    lattice_of(
                        build_with(&params(kind, p, k, 1.0), NoiseChoice::Lattice)
                            .unwrap()
                            .as_ref(),
                    )
                    .g
                }
            };
            let scale = (2.0f64).powi(g);
            let on = out
                .iter()
                .filter(|&&v| {
                    let t = v as f64 * scale;
                    t == t.round()
                })
                .count();
            match noise {
                NoiseChoice::Lattice => assert_eq!(on, out.len(), "{kind:?}"),
                NoiseChoice::Float => assert!(on < out.len() / 20, "{kind:?}: {on}"),
            }
        }
    }
}

/// iDP-Gaussian with lattice noise: the record holds g, σ₁ (the analytic σ at (ε₀, δ₀) for
/// sensitivity 1) and the accounting; σ₁ is the recomputed one and ε₀ + 2k·ln c ≤ ε. The
/// signs of values far outside the noise set are kept, and on a value inside it the frequency of
/// `+` matches `P(r + Z ≥ 0)` computed from the normal law with σ_c = Δ_r(A)·σ₁ (power: the
/// float σ without the lattice terms differs by less than the test can see, so the check is
/// against a σ 15% off instead).
#[test]
fn idp_gaussian_lattice_noise() {
    let p = 16;
    let k = 8;
    for kind in [MechanismKind::IdpSignrpG, MechanismKind::IdpSignoporpG] {
        let m = build_with(&params(kind, p, Some(k), 1.0), NoiseChoice::Lattice).unwrap();
        let l = lattice_of(m.as_ref());
        let unit = l.sigma_unit.unwrap();
        assert_eq!(unit, analytic_sigma(1.0, l.epsilon0, l.delta0).unwrap());
        assert!(l.epsilon0 + 2.0 * k as f64 * l.log_c <= 1.0);
        assert!(l.delta0 * (k as f64 * l.log_c).exp() <= 1e-6);
        let rec = m.record();
        assert_eq!(rec.noise_method(), Some(NoiseMethod::Lattice(l.clone())));
        // from the record, the same mechanism
        let again = dprp::mechanism::from_record(&rec, &m.guarantee()).unwrap();
        assert_eq!(again.record(), rec);
        let fl = build_with(&params(kind, p, Some(k), 1.0), NoiseChoice::Float).unwrap();
        assert_eq!(fl.record().noise, Some(NoiseMethod::Float));
    }
    // dp-oporp-style bins: one row whose only non-zero coordinate sits in some bin
    let m = build_with(
        &params(MechanismKind::IdpSignoporpG, p, Some(k), 5.0),
        NoiseChoice::Lattice,
    )
    .unwrap();
    let l = lattice_of(m.as_ref());
    let mut row = vec![0f32; p];
    row[0] = 0.9;
    let mut x = vec![0f32; k];
    m.as_sketch().unwrap().project(&row, &mut x).unwrap();
    let j = x.iter().position(|&v| v != 0.0).unwrap();
    let n = 100_000usize;
    let rows: Vec<f32> = row.iter().cycle().take(n * p).copied().collect();
    let mut out = vec![0u64; n];
    m.privatise_rows(
        &rows,
        SketchMut::Bits(&mut out),
        0,
        &NoiseSource::from_seed("idp-lattice"),
    )
    .unwrap();
    let plus = out.iter().filter(|&&w| (w >> j) & 1 == 1).count() as f64 / n as f64;
    // |A| = k (every |x_j| < β = 1), Δ₂(A) = β
    let gamma = (2.0f64).powi(-l.g);
    let sens_r = 1.0 + 2.0 * l.fp_error + gamma * (k as f64).sqrt();
    let sigma = sens_r * l.sigma_unit.unwrap();
    let want = dprp::privacy::gaussian::norm_cdf(x[j] as f64 / sigma);
    let se = (want * (1.0 - want) / n as f64).sqrt();
    assert!((plus - want).abs() < 5.0 * se, "{plus} vs {want}");
    let off = dprp::privacy::gaussian::norm_cdf(x[j] as f64 / (sigma * 1.15));
    assert!((plus - off).abs() > 5.0 * se, "power: {plus} vs {off}");
}

/// A release record written before dprp recorded the noise method (no `noise` field) reads as
/// float for the Gaussian mechanisms and as no Gaussian noise for the others; a record with
/// an unknown method is refused.
#[test]
fn old_records_read_as_float() {
    let m = build_with(
        &params(MechanismKind::DpOporp, 20, Some(5), 1.0),
        NoiseChoice::Float,
    )
    .unwrap();
    let mut j = serde_json::to_value(m.record()).unwrap();
    assert_eq!(j["noise"]["method"], "float", "{j}");
    j.as_object_mut().unwrap().remove("noise");
    let old: MechanismRecord = serde_json::from_value(j.clone()).unwrap();
    assert_eq!(old.noise, None);
    assert_eq!(old.noise_method(), Some(NoiseMethod::Float));
    let sign = build_with(
        &params(MechanismKind::DpSignoporpRr, 20, Some(5), 1.0),
        NoiseChoice::Lattice,
    )
    .unwrap();
    assert_eq!(sign.record().noise_method(), None);
    j["noise"] = serde_json::json!({"method": "quantum"});
    assert!(serde_json::from_value::<MechanismRecord>(j).is_err());
}

/// CLI: lattice is the default and `info` shows it; `--noise float` is recorded and shown as
/// float; a bad `--noise` value is refused naming the option; a β so small that the lattice's
/// integers would overflow is refused before anything is written.
#[test]
fn cli_noise_option() {
    let d = tmp();
    valid_dataset(d.path());
    let base = [
        "publish",
        "d.bin",
        "-m",
        "dp-rp-g-opt",
        "-e",
        "2",
        "-d",
        "1e-6",
        "-k",
        "6",
    ];
    let out = ok(d.path(), &with(&base, &["-o", "lat.dprp"]));
    assert!(out.contains("noise method: lattice"), "{out}");
    let info = ok(d.path(), &["info", "lat.dprp"]);
    assert!(info.contains("lattice: discrete Gaussian on γℤ"), "{info}");
    let j = info_json(d.path(), "lat.dprp");
    assert_eq!(j["mechanism"]["noise"]["method"], "lattice", "{j}");
    assert!(j["mechanism"]["noise"]["g"].as_i64().unwrap() > 12, "{j}");

    let out = ok(
        d.path(),
        &with(&base, &["-o", "fl.dprp", "--noise", "float"]),
    );
    assert!(out.contains("noise method: float"), "{out}");
    let info = ok(d.path(), &["info", "fl.dprp"]);
    assert!(
        info.contains("float (floating-point sampler, not protected against low-bit attacks)"),
        "{info}"
    );
    let j = info_json(d.path(), "fl.dprp");
    assert_eq!(j["mechanism"]["noise"]["method"], "float", "{j}");

    fails_clean(
        d.path(),
        &with(&base, &["-o", "bad.dprp", "--noise", "gaussian"]),
        "bad.dprp",
        &["--noise", "gaussian", "lattice", "float"],
    );
    // a mechanism without Gaussian noise has no sampler to choose: refused, not ignored
    fails_clean(
        d.path(),
        &[
            "publish",
            "d.bin",
            "-m",
            "dp-signoporp-rr",
            "-e",
            "2",
            "-k",
            "6",
            "-o",
            "rr.dprp",
            "--noise",
            "float",
        ],
        "rr.dprp",
        &["--noise", "dp-signoporp-rr", "no Gaussian noise"],
    );
    // raw-g-opt has no projection rounding (E = 0), so its lattice step follows β down
    let raw = [
        "publish",
        "d.bin",
        "-m",
        "raw-g-opt",
        "-e",
        "2",
        "-d",
        "1e-6",
        "--beta",
        "1e-30",
    ];
    fails_clean(
        d.path(),
        &with(&raw, &["-o", "tiny.dprp"]),
        "tiny.dprp",
        &["lattice", "2^52", "--noise float"],
    );
    // the same β with float noise publishes
    ok(
        d.path(),
        &with(&raw, &["-o", "tinyf.dprp", "--noise", "float"]),
    );
}
