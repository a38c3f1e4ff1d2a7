//! The audit's estimator has its advertised coverage on a mechanism whose exact ε is known:
//! randomised response on one bit (`dp-signoporp-rr` with k = 1: the worst-case neighbours flip
//! the single sign, whose output probabilities are `1 − q` and `q`, `q = 1/(1+e^ε)` rounded up to
//! a multiple of 2⁻⁶⁴ — the true privacy loss is ε up to 10⁻¹⁵).
//!
//! R = 200 independent audits (fresh noise keys, the same pair). Each reports ε̂_lower at 95%
//! overall; if that is honest, the number of audits with ε̂_lower ≤ ε is at least
//! Binomial(200, 0.95), whose mean is 190 and standard deviation 3.08: we require at least
//! 190 − 3·3.08 ≈ 181 (a correct estimator fails this with probability below 0.3%).
//!
//! **Power of the coverage check.** The same count for the *point* estimate
//! `ln(p̂₁/p̂₂)` — an estimator without the confidence correction, centred on ε — is about
//! 100 of 200; the test asserts that the criterion rejects it, so a bound that lost its
//! Clopper–Pearson correction (or used the two-sided level wrongly enough to centre on ε) fails.
//!
//! **Not vacuous.** The median ε̂_lower must exceed 0.8·ε (measured about 0.89 at 2000 estimation
//! samples per input): an estimator that always answered 0 would cover trivially.

use dprp::audit::{self, AuditConfig};
use dprp::mechanism::{LocalOptions, MechanismKind, MechanismParams};
use dprp::privacy::guarantee::Neighbour;
use dprp::privacy::samplers::noise::NoiseSource;

const R: usize = 200;
const EPS: f64 = 1.0;

/// `dp-signoporp-rr` with p = 2, k = 1: one bit, randomised response at exactly ε.
fn one_bit_rr(seed: u64) -> MechanismParams {
    MechanismParams {
        kind: MechanismKind::DpSignoporpRr,
        epsilon: EPS,
        delta: None,
        beta: 1.0,
        neighbour: Neighbour::Coordinate,
        p: 2,
        k: Some(1),
        projection: None,
        seed: Some(audit::projection_seed(seed).unwrap()),
        min_norm: None,
        individual_dp: false,
        local: LocalOptions::default(),
    }
}

#[test]
fn rr_single_bit_coverage_and_power() {
    let params = one_bit_rr(11);
    let cfg = AuditConfig {
        params,
        trials: 4000,
        random_pairs: 0,
        miscalibrate: None,
    };
    let mut lower = Vec::with_capacity(R);
    let mut point = Vec::with_capacity(R);
    for r in 0..R {
        let noise = NoiseSource::from_seed(&format!("coverage {r}"));
        let rep = audit::run(&cfg, &noise, 11).unwrap();
        assert_eq!(rep.claim.epsilon, EPS);
        assert_eq!(rep.bounds, 2, "one pair, two families (bit, count)");
        lower.push(rep.epsilon_lower.unwrap_or(f64::NEG_INFINITY));
        // the point estimate of the event the audit reported as its largest bound
        let best = rep.pairs[0]
            .families
            .iter()
            .max_by(|a, b| {
                a.epsilon_lower
                    .unwrap_or(f64::NEG_INFINITY)
                    .total_cmp(&b.epsilon_lower.unwrap_or(f64::NEG_INFINITY))
            })
            .unwrap();
        point.push(best.epsilon_point.unwrap_or(f64::NEG_INFINITY));
    }
    let need = 181;
    let covered = lower.iter().filter(|&&e| e <= EPS).count();
    assert!(
        covered >= need,
        "ε̂_lower ≤ ε in only {covered} of {R} audits"
    );
    let naive = point.iter().filter(|&&e| e <= EPS).count();
    assert!(
        naive < need,
        "the coverage check cannot tell the point estimate from a bound: {naive} of {R}"
    );
    let mut sorted = lower.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[R / 2];
    assert!(median > 0.8 * EPS, "vacuous bound: median ε̂_lower {median}");
    eprintln!("coverage {covered}/{R}; point estimate {naive}/{R}; median ε̂_lower {median:.3}");
}

/// The audit of a mis-calibrated one-bit RR is flagged through the library too, and the
/// claim reported is the honest one.
#[test]
fn library_flags_rr_built_with_more_epsilon() {
    let params = one_bit_rr(12);
    let cfg = AuditConfig {
        params,
        trials: 40_000,
        random_pairs: 0,
        miscalibrate: Some(audit::Miscalibration::Epsilon(1.5)),
    };
    let rep = audit::run(&cfg, &NoiseSource::from_seed("flag"), 12).unwrap();
    assert_eq!(rep.claim.epsilon, EPS);
    assert!(rep.flagged, "{:?}", rep.epsilon_lower);
    assert!(rep.epsilon_lower.unwrap() > 1.3);
}
