//! From a request to a ready encoder: choose the parameters of a distributed mechanism with its
//! planner ([`crate::mechanism::distributed::accountant::params`]) and build the matching [`ClientEncoder`] —
//! the one path `dprp aggregate`'s library users and `dprp eval mean` share, so an evaluation
//! runs exactly the encoder a round would.

use super::guarantee::DistributedGuarantee;
use super::{BinomialEncoder, BinomialParams, ClientEncoder, Ddg, DdgParams, SketchDdg};
use crate::error::{Error, Result};
use crate::mechanism::distributed::accountant::params::{
    plan_binomial, plan_ddg, plan_sketch_ddg, BinomialPlan, DdgPlan, DistributedRequest, MseTerms,
    SketchDdgPlan,
};
use crate::projection::Seed;

/// The distributed mechanisms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DistributedKind {
    /// The distributed discrete Gaussian ([`Ddg`]).
    Ddg,
    /// Count sketch, then DDG ([`SketchDdg`]).
    SketchDdg,
    /// cpSGD's π_sk ([`BinomialEncoder`]).
    Binomial,
}

impl DistributedKind {
    /// Every kind, in the order of the papers.
    pub const ALL: [DistributedKind; 3] = [
        DistributedKind::Binomial,
        DistributedKind::Ddg,
        DistributedKind::SketchDdg,
    ];

    /// `ddg`, `sketch-ddg` or `binomial`.
    pub fn name(self) -> &'static str {
        match self {
            DistributedKind::Ddg => "ddg",
            DistributedKind::SketchDdg => "sketch-ddg",
            DistributedKind::Binomial => "binomial",
        }
    }

    /// Parse a name (case-insensitive); `None` when it is not a distributed mechanism.
    pub fn parse(s: &str) -> Option<DistributedKind> {
        let s = s.trim().to_ascii_lowercase();
        Self::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// The planner's whole choice, per mechanism.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanDetail {
    /// DDG.
    Ddg(DdgPlan),
    /// Sketch + DDG.
    SketchDdg(SketchDdgPlan),
    /// Binomial (π_sk).
    Binomial(BinomialPlan),
}

/// A planned encoder: the encoder and what its plan promises.
pub struct Planned {
    /// The whole plan (for printing every parameter).
    pub plan: PlanDetail,
    /// The encoder.
    pub encoder: Box<dyn ClientEncoder>,
    /// ε achieved (≤ the target) for the sum, with the request's δ.
    pub epsilon: f64,
    /// The whole guarantee of the sum (ε, δ, neighbours, theorem).
    pub guarantee: DistributedGuarantee,
    /// The planner's expected squared error of the mean, term by term. The sketch term assumes
    /// the worst case `‖μ‖ = c`.
    pub mse: MseTerms,
    /// Bits each client sends per input parameter under SecAgg (`b · message length / d`).
    pub bits_per_parameter: f64,
    /// Count-sketch rows (sketch-DDG).
    pub sketch_m: Option<u64>,
    /// The planner's bound on the probability that the modular sum wraps (DDG family); 0 for the
    /// Binomial, whose plan rules a wrap out.
    pub wrap_probability: f64,
}

impl std::fmt::Debug for Planned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planned")
            .field("epsilon", &self.epsilon)
            .field("mse", &self.mse)
            .field("bits_per_parameter", &self.bits_per_parameter)
            .field("sketch_m", &self.sketch_m)
            .field("wrap_probability", &self.wrap_probability)
            .finish_non_exhaustive()
    }
}

/// Plan `kind` for `req` and build its encoder with the public `seed` (rotation and sketch).
/// `max_bits_per_parameter` caps sketch-DDG's sketch size and is refused for the others.
pub fn plan_encoder(
    kind: DistributedKind,
    req: &DistributedRequest,
    max_bits_per_parameter: Option<f64>,
    seed: Seed,
) -> Result<Planned> {
    if max_bits_per_parameter.is_some() && kind != DistributedKind::SketchDdg {
        return Err(Error::param(
            "--bits-per-parameter",
            "applies to sketch-ddg only (ddg and binomial send b bits per rotated coordinate)",
        ));
    }
    let d = usize::try_from(req.d)
        .map_err(|_| Error::param("dimension d", format!("d = {} is too large", req.d)))?;
    let params = |p: &DdgPlan| DdgParams {
        clip: req.clip,
        gamma: p.gamma,
        sigma: p.sigma,
        beta: p.beta,
        bits: req.bits,
    };
    match kind {
        DistributedKind::Ddg => {
            let p = plan_ddg(req)?;
            Ok(Planned {
                encoder: Box::new(Ddg::new(d, params(&p), seed)?),
                epsilon: p.epsilon,
                guarantee: DistributedGuarantee::of_ddg(&p),
                mse: p.mse,
                bits_per_parameter: p.bits_per_parameter,
                sketch_m: None,
                wrap_probability: p.wrap_probability,
                plan: PlanDetail::Ddg(p),
            })
        }
        DistributedKind::SketchDdg => {
            let sp = plan_sketch_ddg(req, max_bits_per_parameter)?;
            let sketched = DdgParams {
                clip: req.clip * super::sketch_ddg::SKETCH_CLIP_FACTOR,
                ..params(&sp.ddg)
            };
            let enc = SketchDdg::new(d, sp.m as usize, sp.t as usize, sketched, seed)?;
            Ok(Planned {
                encoder: Box::new(enc),
                epsilon: sp.ddg.epsilon,
                guarantee: DistributedGuarantee::of_ddg(&sp.ddg),
                mse: sp.ddg.mse,
                bits_per_parameter: sp.ddg.bits_per_parameter,
                sketch_m: Some(sp.m),
                wrap_probability: sp.ddg.wrap_probability,
                plan: PlanDetail::SketchDdg(sp),
            })
        }
        DistributedKind::Binomial => {
            let p = plan_binomial(req)?;
            let enc = BinomialEncoder::new(
                d,
                BinomialParams {
                    clip: req.clip,
                    x_max: p.x_max,
                    k: p.k,
                    m: p.m,
                    bits: req.bits,
                },
                seed,
            )?;
            Ok(Planned {
                bits_per_parameter: req.bits as f64 * enc.message_len() as f64 / d as f64,
                encoder: Box::new(enc),
                epsilon: p.epsilon,
                guarantee: DistributedGuarantee::of_binomial(&p),
                mse: p.mse,
                sketch_m: None,
                wrap_probability: 0.0,
                plan: PlanDetail::Binomial(p),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_plans_build() {
        for k in DistributedKind::ALL {
            assert_eq!(DistributedKind::parse(&k.name().to_uppercase()), Some(k));
        }
        assert_eq!(DistributedKind::parse("privunit2"), None);
        let req = DistributedRequest {
            n: 100,
            d: 300,
            epsilon: 1.0,
            delta: 1e-5,
            clip: 1.0,
            bits: 20,
            max_wrap_probability: 1e-6,
        };
        let seed = Seed([5; 32]);
        for k in DistributedKind::ALL {
            let p = plan_encoder(k, &req, None, seed).unwrap();
            assert_eq!(p.encoder.input_dim(), 300, "{k:?}");
            assert!(p.epsilon <= 1.0 && p.epsilon > 0.5, "{k:?}: {}", p.epsilon);
            // b bits for each of the 512 rotated coordinates (sketch: m ≤ 512), per input value
            let len = p.encoder.message_len() as f64;
            assert!((p.bits_per_parameter - 20.0 * len / 300.0).abs() < 1e-12);
            assert_eq!(p.sketch_m.is_some(), k == DistributedKind::SketchDdg);
        }
        let capped = plan_encoder(DistributedKind::SketchDdg, &req, Some(4.0), seed).unwrap();
        assert!(capped.bits_per_parameter <= 4.0);
        assert_eq!(capped.sketch_m, Some(32)); // 20·64/300 > 4 ≥ 20·32/300
        assert!(plan_encoder(DistributedKind::Ddg, &req, Some(4.0), seed).is_err());
    }
}
