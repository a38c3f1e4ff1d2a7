//! Distributed DP one client and one server at a time (`dprp.DistributedEncoder`,
//! `dprp.RoundsAccountant`): an encoder planned from public parameters — every client and the
//! server get the same plan —, a client's vector encoded into residues mod `2^b` with a noise
//! share from the operating system, the mean decoded from the secure sum of the messages, the
//! guarantee of a round that lost clients, and composition over rounds against a budget.
//!
//! The secure sum itself is computed elsewhere (Flower's SecAgg+ in `dprp.flower`, or
//! [`super::round`] in one process): a single encoded message is not private on its own and must
//! only ever enter a sum.
//!
//! ```
//! use dprp::request::encoder::{Encoder, EncoderOptions, RoundsAccountant};
//! use dprp::request::Seed;
//!
//! # fn main() -> dprp::Result<()> {
//! let options = EncoderOptions {
//!     mechanism: "ddg".into(),
//!     dim: 16,
//!     clients: 100,
//!     epsilon: 2.0,
//!     delta: 1e-5,
//!     clip: 1.0,
//!     seed: Seed::random()?, // public: every client and the server are given it
//!     bits: 20,
//!     bits_per_parameter: None,
//!     max_wrap: 1e-9,
//!     max_clients: None,
//! };
//! let encoder = Encoder::plan(&options)?; // the same plan on every machine
//! let plan = encoder.plan_report();
//! let x = vec![0.2; 16]; // each client's vector (norm 0.8, under the clip)
//! // what secure aggregation reveals: the sum of the messages mod 2^b
//! let modulus = 1u64 << encoder.bits();
//! let mut sum = vec![0u64; encoder.message_len()];
//! for _client in 0..100 {
//!     for (s, r) in sum.iter_mut().zip(encoder.encode(&x)?) {
//!         *s = (*s + r) % modulus;
//!     }
//! }
//! let mean = encoder.decode(sum, 100)?;
//! let err: f64 = mean.iter().zip(&x).map(|(m, t)| (m - t) * (m - t)).sum();
//! assert!(err < 5.0 * plan.mse, "{err} vs {}", plan.mse);
//! // ten clients dropped out: fewer noise shares, a larger ε, charged as such
//! let round = encoder.guarantee_at(90)?;
//! assert!(round.epsilon > plan.epsilon);
//! let mut budget = RoundsAccountant::new(encoder.family(), 8.0, 1e-4)?;
//! let spent = budget.charge(round.cost)?;
//! assert_eq!(spent.rounds, 1);
//! # Ok(()) }
//! ```

use crate::error::{field, Error, Result};
use crate::mechanism::distributed::accountant::params::DistributedRequest;
use crate::mechanism::distributed::guarantee::Accounting;
use crate::mechanism::distributed::modular::ModularSum;
use crate::mechanism::distributed::{plan_encoder_for, DistributedKind, Planned};
use crate::privacy::samplers::noise::NoiseSource;
use crate::projection::Seed;

pub use crate::mechanism::distributed::PlanDetail;
pub use crate::privacy::rounds::{Family, RoundCost, RoundsAccountant, Spent};

/// The public parameters of an encoder, as every client and the server give them.
#[derive(Debug, Clone)]
pub struct EncoderOptions {
    /// `ddg`, `sketch-ddg` or `binomial` (any case).
    pub mechanism: String,
    /// The clients' dimension.
    pub dim: u64,
    /// The noise shares the plan counts on.
    pub clients: u64,
    /// ε of the sum's guarantee with `clients` shares.
    pub epsilon: f64,
    /// δ of the sum's guarantee.
    pub delta: f64,
    /// ℓ₂ clip norm of each client's vector.
    pub clip: f64,
    /// Public seed of the rotation and sketch.
    pub seed: Seed,
    /// Bits per transmitted coordinate (the sum is taken mod `2^bits`).
    pub bits: u32,
    /// sketch-ddg: the most bits per input parameter a client may send.
    pub bits_per_parameter: Option<f64>,
    /// Largest acceptable bound on the probability that the modular sum wraps.
    pub max_wrap: f64,
    /// The most messages a sum may hold (the modulus is sized for it); default `clients`.
    pub max_clients: Option<u64>,
}

/// The encoder the name `mechanism` gives, refused when `bits_per_parameter` is given for
/// another encoder than sketch-ddg (`dprp aggregate` and `dprp.DistributedEncoder`).
pub fn encoder_kind(mechanism: &str, bits_per_parameter: Option<f64>) -> Result<DistributedKind> {
    let kind = DistributedKind::parse(mechanism).ok_or_else(|| {
        Error::param(
            field("mechanism"),
            format!(
                "'{}' is not an aggregation encoder (expected ddg, sketch-ddg or binomial)",
                mechanism.to_ascii_lowercase()
            ),
        )
    })?;
    if bits_per_parameter.is_some() && kind != DistributedKind::SketchDdg {
        return Err(Error::param(
            field("bits_per_parameter"),
            "applies to sketch-ddg only (ddg and binomial send b bits per rotated coordinate)",
        ));
    }
    Ok(kind)
}

/// A planned encoder and decoder.
pub struct Encoder {
    planned: Planned,
    kind: DistributedKind,
}

/// What the plan chose: ε achieved for `clients` noise shares, the mechanism's parameters, the
/// expected squared error of the mean and the wrap bound.
#[derive(Debug, Clone)]
pub struct EncoderPlan {
    /// The encoder's name.
    pub mechanism: &'static str,
    /// The noise shares planned for.
    pub clients: u64,
    /// ε achieved with `clients` shares.
    pub epsilon: f64,
    /// δ.
    pub delta: f64,
    /// `b`.
    pub bits: u32,
    /// Bits each client sends per input value.
    pub bits_per_parameter: f64,
    /// Residues per message.
    pub message_len: usize,
    /// Bound on the probability that the sum wraps.
    pub wrap_probability: f64,
    /// Expected squared error of the mean, all terms.
    pub mse: f64,
    /// The guarantee's statement.
    pub statement: String,
    /// The planner's parameters.
    pub detail: PlanDetail,
}

/// The guarantee of a round whose sum holds `clients` messages, and its cost for a
/// [`RoundsAccountant`].
#[derive(Debug, Clone)]
pub struct RoundGuarantee {
    /// ε.
    pub epsilon: f64,
    /// δ.
    pub delta: f64,
    /// The messages the sum holds.
    pub clients: u64,
    /// The guarantee's statement.
    pub statement: String,
    /// ρ, for the zCDP family.
    pub rho: Option<f64>,
    /// What the round costs.
    pub cost: RoundCost,
}

impl Encoder {
    /// Plan the encoder `options` name (the checks of `dprp aggregate`, and `max_clients` not
    /// below `clients`).
    pub fn plan(options: &EncoderOptions) -> Result<Encoder> {
        let kind = encoder_kind(&options.mechanism, options.bits_per_parameter)?;
        let req = DistributedRequest {
            n: options.clients,
            d: options.dim,
            epsilon: options.epsilon,
            delta: options.delta,
            clip: options.clip,
            bits: options.bits,
            max_wrap_probability: options.max_wrap,
        };
        let sum_clients = options.max_clients.unwrap_or(req.n);
        if sum_clients < req.n {
            return Err(Error::param(
                field("max_clients"),
                format!("{sum_clients} is below clients = {}", req.n),
            ));
        }
        let planned = plan_encoder_for(
            kind,
            &req,
            options.bits_per_parameter,
            options.seed,
            sum_clients,
        )?;
        Ok(Encoder { planned, kind })
    }

    /// The input dimension.
    pub fn dim(&self) -> usize {
        self.planned.encoder.input_dim()
    }

    /// Residues per message.
    pub fn message_len(&self) -> usize {
        self.planned.encoder.message_len()
    }

    /// `b`: the sum is taken mod `2^b`.
    pub fn bits(&self) -> u32 {
        self.planned.encoder.modulus().bits()
    }

    /// Bits each client sends per input value.
    pub fn bits_per_parameter(&self) -> f64 {
        self.planned.bits_per_parameter
    }

    /// How its rounds compose: zCDP (the DDG family) or approximate DP (Binomial).
    pub fn family(&self) -> Family {
        match self.kind {
            DistributedKind::Binomial => Family::Approx,
            DistributedKind::Ddg | DistributedKind::SketchDdg => Family::Zcdp,
        }
    }

    /// The plan.
    pub fn plan_report(&self) -> EncoderPlan {
        let p = &self.planned;
        EncoderPlan {
            mechanism: self.kind.name(),
            clients: p.request.n,
            epsilon: p.epsilon,
            delta: p.guarantee.delta,
            bits: p.request.bits,
            bits_per_parameter: p.bits_per_parameter,
            message_len: p.encoder.message_len(),
            wrap_probability: p.wrap_probability,
            mse: p.mse.total(),
            statement: p.guarantee.statement(p.request.n),
            detail: p.plan.clone(),
        }
    }

    /// One client's vector (`dim` finite values) as `message_len` residues mod `2^b`, clipped
    /// to the plan's norm, with a noise share from a fresh OS-seeded CSPRNG. The message is not
    /// private alone: send it only into a secure sum.
    pub fn encode(&self, x: &[f64]) -> Result<Vec<u64>> {
        let enc = &self.planned.encoder;
        if x.len() != enc.input_dim() {
            return Err(Error::param(
                "x",
                format!(
                    "has {} values, the encoder was planned for dim = {}",
                    x.len(),
                    enc.input_dim()
                ),
            ));
        }
        let mut out = vec![0u64; enc.message_len()];
        let mut rng = NoiseSource::from_os()?.row_rng(0);
        enc.encode(x, &mut out, &mut rng, None)?;
        Ok(out)
    }

    /// The mean of the clients' vectors from the secure sum of their messages: `residues`
    /// (`message_len` values, each in `[0, 2^b)`) and the number of clients it holds.
    pub fn decode(&self, residues: Vec<u64>, clients: u64) -> Result<Vec<f64>> {
        let enc = &self.planned.encoder;
        if residues.len() != enc.message_len() {
            return Err(Error::param(
                "residues",
                format!(
                    "has {} values, a message of this plan has {}",
                    residues.len(),
                    enc.message_len()
                ),
            ));
        }
        let sum = ModularSum::from_residues(enc.modulus(), residues, clients)?;
        enc.decode(&sum)
    }

    /// The guarantee of a round whose sum holds `survivors` clients' messages (fewer noise
    /// shares than planned: a larger ε), with the round's cost.
    pub fn guarantee_at(&self, survivors: u64) -> Result<RoundGuarantee> {
        let g = self.planned.guarantee_at(survivors)?;
        let (rho, cost) = match g.accounting {
            Accounting::Zcdp { rho } => (Some(rho), RoundCost::Zcdp { rho }),
            Accounting::Binomial { .. } => (
                None,
                RoundCost::Approx {
                    epsilon: g.epsilon,
                    delta: g.delta,
                },
            ),
        };
        Ok(RoundGuarantee {
            epsilon: g.epsilon,
            delta: g.delta,
            clients: survivors,
            statement: g.statement(survivors),
            rho,
            cost,
        })
    }

    /// The bound on the probability that the modular sum of `clients` messages wraps.
    pub fn wrap_probability_at(&self, clients: u64) -> Result<f64> {
        self.planned.wrap_probability_at(clients)
    }
}

/// The composition family named `zcdp` (DDG: ρ's add), `approx` (Binomial: basic composition)
/// or `local` (pure ε-LDP: basic composition, δ = 0).
pub fn family(name: &str) -> Result<Family> {
    match name {
        "zcdp" => Ok(Family::Zcdp),
        "approx" => Ok(Family::Approx),
        "local" => Ok(Family::PureLocal),
        _ => Err(Error::param(
            "family",
            format!("'{name}' is not a family (zcdp, approx, local)"),
        )),
    }
}

/// The name [`family`] reads.
pub fn family_name(f: Family) -> &'static str {
    match f {
        Family::Zcdp => "zcdp",
        Family::Approx => "approx",
        Family::PureLocal => "local",
    }
}
