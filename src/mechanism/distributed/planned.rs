//! From a request to a ready encoder: choose the parameters of a distributed mechanism with its
//! planner ([`crate::mechanism::distributed::accountant::params`]) and build the matching [`ClientEncoder`] —
//! the one path `dprp aggregate`'s library users and `dprp eval mean` share, so an evaluation
//! runs exactly the encoder a round would.

use super::guarantee::DistributedGuarantee;
use super::{BinomialEncoder, BinomialParams, ClientEncoder, Ddg, DdgParams, SketchDdg};
use crate::error::{Error, Result};
use crate::mechanism::distributed::accountant;
use crate::mechanism::distributed::accountant::binomial::BinomialSetting;
use crate::mechanism::distributed::accountant::ddg::DdgSetting;
use crate::mechanism::distributed::accountant::params::{
    ddg_wrap_probability, plan_binomial, plan_ddg_for, plan_sketch_ddg_for, BinomialPlan, DdgPlan,
    DistributedRequest, MseTerms, SketchDdgPlan,
};
use crate::privacy::zcdp;
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
    /// The request the plan was made for (its `n` is the number of noise shares the plan
    /// counts on).
    pub request: DistributedRequest,
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
    plan_encoder_for(kind, req, max_bits_per_parameter, seed, req.n)
}

/// [`plan_encoder`] for rounds that tolerate dropouts: the noise is calibrated for `req.n`
/// shares (the fewest clients a round accepts) and the modulus for sums of up to `sum_clients`
/// messages (all the clients a round samples). The Binomial's plan holds for `n` fixed and
/// refuses `sum_clients > req.n`.
pub fn plan_encoder_for(
    kind: DistributedKind,
    req: &DistributedRequest,
    max_bits_per_parameter: Option<f64>,
    seed: Seed,
    sum_clients: u64,
) -> Result<Planned> {
    if kind == DistributedKind::Binomial && sum_clients > req.n {
        return Err(Error::param(
            "clients",
            format!(
                "the Binomial plan holds for its n fixed (cpSGD's neighbours): sums of {sum_clients} \
                 messages need n = {sum_clients}, not {}",
                req.n
            ),
        ));
    }
    if max_bits_per_parameter.is_some() && kind != DistributedKind::SketchDdg {
        return Err(Error::param(
            "‹bits_per_parameter›",
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
            let p = plan_ddg_for(req, sum_clients)?;
            Ok(Planned {
                encoder: Box::new(Ddg::new(d, params(&p), seed)?),
                epsilon: p.epsilon,
                guarantee: DistributedGuarantee::of_ddg(&p),
                mse: p.mse,
                bits_per_parameter: p.bits_per_parameter,
                sketch_m: None,
                wrap_probability: p.wrap_probability,
                request: *req,
                plan: PlanDetail::Ddg(p),
            })
        }
        DistributedKind::SketchDdg => {
            let sp = plan_sketch_ddg_for(req, max_bits_per_parameter, sum_clients)?;
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
                request: *req,
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
                request: *req,
                plan: PlanDetail::Binomial(p),
            })
        }
    }
}

impl Planned {
    /// The guarantee of a round whose sum holds the messages of `survivors` clients — their
    /// noise shares and no others. The plan counted on `request.n` shares; a round in which
    /// clients dropped out before their masked message reached the sum has fewer, so less noise
    /// and a larger ε, computed here by the same theorem with `n = survivors` (DDG family:
    /// Theorem E.1 of Chen et al. 2022 at `n` clients, each adding `N_Z(0, (σ/γ)²)`; Binomial:
    /// cpSGD Theorem 1 with `N = survivors·m` trials). More survivors than planned give more
    /// noise and a smaller ε; the Binomial's plan holds for at most `request.n` clients (its
    /// rotation clamp and modulus were sized for them) and refuses more.
    pub fn guarantee_at(&self, survivors: u64) -> Result<DistributedGuarantee> {
        if survivors < 2 {
            return Err(Error::param(
                "survivors",
                format!(
                    "{survivors} client(s) in the sum: secure aggregation needs at least two (a \
                     lone message would be seen unmasked, with only its own noise share)"
                ),
            ));
        }
        let req = &self.request;
        let ddg = |p: &DdgPlan, clip: f64| -> Result<DistributedGuarantee> {
            let st = DdgSetting {
                n: survivors,
                d: p.d_rot,
                clip,
                gamma: p.gamma,
                beta: p.beta,
            };
            let rho = accountant::ddg::rho(&st, p.sigma)?;
            Ok(DistributedGuarantee::of_ddg(&DdgPlan {
                rho,
                epsilon: zcdp::epsilon(rho, p.delta)?,
                ..p.clone()
            }))
        };
        match &self.plan {
            PlanDetail::Ddg(p) => ddg(p, req.clip),
            PlanDetail::SketchDdg(sp) => {
                ddg(&sp.ddg, req.clip * super::sketch_ddg::SKETCH_CLIP_FACTOR)
            }
            PlanDetail::Binomial(p) => {
                if survivors > req.n {
                    return Err(Error::param(
                        "survivors",
                        format!(
                            "{survivors} clients in the sum, but the Binomial plan was sized for \
                             at most n = {} (its modulus and rotation clamp)",
                            req.n
                        ),
                    ));
                }
                let setting = BinomialSetting {
                    p: p.p,
                    s: 1.0,
                    delta: p.delta / 3.0,
                    d: p.d_rot,
                    sens: p.sens,
                };
                let n_trials = survivors * p.m;
                let epsilon = accountant::binomial::epsilon(n_trials, &setting)?;
                Ok(DistributedGuarantee::of_binomial(&BinomialPlan {
                    epsilon,
                    n_trials,
                    ..p.clone()
                }))
            }
        }
    }

    /// The bound on the probability that the modular sum of `clients` messages wraps (DDG
    /// family: the planner's bound at `n = clients`); for the Binomial, 0 when `clients` fit the
    /// plan's modulus, else an error.
    pub fn wrap_probability_at(&self, clients: u64) -> Result<f64> {
        let req = &self.request;
        let ddg = |p: &DdgPlan, clip: f64| {
            ddg_wrap_probability(clients, p.d_rot, clip, p.gamma, p.sigma, p.beta, p.modulus)
        };
        match &self.plan {
            PlanDetail::Ddg(p) => Ok(ddg(p, req.clip)),
            PlanDetail::SketchDdg(sp) => Ok(ddg(&sp.ddg, req.clip * super::sketch_ddg::SKETCH_CLIP_FACTOR)),
            PlanDetail::Binomial(_) if clients <= req.n => Ok(0.0),
            PlanDetail::Binomial(_) => Err(Error::param(
                "clients",
                format!(
                    "the Binomial plan's modulus holds the sum of at most n = {} clients, not {clients}",
                    req.n
                ),
            )),
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

    #[test]
    fn guarantee_at_the_planned_clients_is_the_plan_and_dropouts_cost_more() {
        let req = DistributedRequest {
            n: 20,
            d: 100,
            epsilon: 2.0,
            delta: 1e-5,
            clip: 1.0,
            bits: 20,
            max_wrap_probability: 1e-6,
        };
        for k in DistributedKind::ALL {
            let p = plan_encoder(k, &req, None, Seed([9; 32])).unwrap();
            // the plan's own n reproduces its guarantee to the bit (same theorem, same inputs)
            assert_eq!(p.guarantee_at(20).unwrap(), p.guarantee, "{k:?}");
            // fewer noise shares: strictly larger ε (power: a guarantee_at that ignored the
            // survivors would return the plan's ε here and fail)
            let fewer = p.guarantee_at(15).unwrap();
            assert!(
                fewer.epsilon > p.guarantee.epsilon * 1.05,
                "{k:?}: {fewer:?}"
            );
            assert!(p.guarantee_at(1).is_err());
            if k == DistributedKind::Binomial {
                assert!(p.guarantee_at(21).is_err());
                assert!(p.wrap_probability_at(21).is_err());
                assert_eq!(p.wrap_probability_at(20).unwrap(), 0.0);
            } else {
                assert!(p.guarantee_at(30).unwrap().epsilon < p.guarantee.epsilon);
                assert_eq!(p.wrap_probability_at(20).unwrap(), p.wrap_probability);
                assert!(p.wrap_probability_at(200).unwrap() > p.wrap_probability);
            }
        }
    }

    #[test]
    fn a_plan_for_dropouts_sizes_the_modulus_for_every_sampled_client() {
        let req = DistributedRequest {
            n: 7,
            d: 40,
            epsilon: 4.0,
            delta: 1e-5,
            clip: 1.0,
            bits: 20,
            max_wrap_probability: 1e-6,
        };
        for k in [DistributedKind::Ddg, DistributedKind::SketchDdg] {
            let tight = plan_encoder(k, &req, None, Seed([3; 32])).unwrap();
            let roomy = plan_encoder_for(k, &req, None, Seed([3; 32]), 10).unwrap();
            // power: the plan for 7 messages wraps too often with 10
            assert!(tight.wrap_probability_at(10).unwrap() > 1e-6, "{k:?}");
            assert!(roomy.wrap_probability_at(10).unwrap() <= 1e-6, "{k:?}");
            assert_eq!(
                roomy.wrap_probability,
                roomy.wrap_probability_at(10).unwrap()
            );
            // the noise is still for 7 shares: the round target holds at 7 survivors
            assert!(roomy.guarantee_at(7).unwrap().epsilon <= 4.0, "{k:?}");
            assert!(roomy.guarantee_at(6).unwrap().epsilon > 4.0, "{k:?}");
        }
        assert!(
            plan_encoder_for(DistributedKind::Binomial, &req, None, Seed([3; 32]), 10).is_err()
        );
    }
}
