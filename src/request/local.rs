//! Local DP one user and one server at a time (`dprp.privatise`, `dprp.MeanAccumulator`): a
//! local mechanism rebuilt from its public parameters as `dprp publish` resolves them, one
//! user's vector privatised with noise from the operating system, and the server's streaming,
//! mergeable mean ([`crate::mechanism::local::accumulator`]) with its state kept apart from the
//! mechanism so that it can be moved, sent as JSON and merged.
//!
//! Client and server rebuild the same mechanism from the same public parameters (mechanism, ε,
//! dimension, public seed, constants); the accumulator refuses messages of another configuration
//! when states are merged.
//!
//! ```
//! use dprp::request::local::{privatise, Accumulator, LocalConfig};
//! use dprp::request::Seed;
//!
//! # fn main() -> dprp::Result<()> {
//! let config = LocalConfig {
//!     mechanism: "privunitg".into(),
//!     epsilon: 4.0,
//!     dim: 16,
//!     seed: Seed::random()?, // public: the server is given it too
//!     k: None,
//!     projection: None,
//!     epsilon_norm: None,
//!     radius: None,
//! };
//! let mut v = vec![0.0; 16];
//! v[0] = 1.0; // every user's unit vector
//! let mut server = Accumulator::new(&config)?;
//! for user in 0..400 {
//!     let message = privatise(&config, user, &v)?; // on the user's device
//!     server.add(user, &message)?;
//! }
//! // a message with a NaN is refused, and nothing is added; so is a batch holding one
//! assert!(server.add(400, &[f32::NAN; 16]).is_err());
//! let mut batch = privatise(&config, 400, &v)?;
//! batch.extend(privatise(&config, 401, &v)?);
//! batch[20] = f32::INFINITY; // in the second message
//! let e = server.add_rows(400, &batch).unwrap_err();
//! assert!(e.to_string().contains("message 1 (row 401)"), "{e}");
//! let e = server.finish()?;
//! assert_eq!(e.n, 400);
//! let err: f64 = e.mean.iter().zip(&v).map(|(m, t)| (m - t) * (m - t)).sum();
//! // 16 near-Gaussian coordinates: above 3× its expectation with probability below 1e-4
//! assert!(err < 3.0 * e.expected_sq_error, "{err} vs {}", e.expected_sq_error);
//! // a central mechanism has no client
//! let central = LocalConfig { mechanism: "dp-oporp".into(), ..config };
//! assert!(Accumulator::new(&central).is_err());
//! # Ok(()) }
//! ```

use std::path::Path;

use crate::error::{field, Error, Result};
use crate::mechanism::local::accumulator::{AccumulatorState, MeanAccumulator};
use crate::mechanism::{self, Mechanism, MechanismKind};
use crate::privacy::samplers::noise::NoiseSource;
use crate::projection::Seed;
use crate::release::ReleaseSet;
use crate::request::MechanismOptions;

pub use crate::mechanism::local::accumulator::MeanEstimate;

/// The public parameters of a local mechanism, as a client and the server both give them.
#[derive(Debug, Clone)]
pub struct LocalConfig {
    /// The mechanism's name (`privunit2`, `projunit`, …): refused unless local.
    pub mechanism: String,
    /// ε.
    pub epsilon: f64,
    /// The users' dimension d.
    pub dim: usize,
    /// The public seed of the per-row maps: required, so that the server rebuilds the clients'.
    pub seed: Seed,
    /// The projected dimension of projunit and projunit-correlated.
    pub k: Option<usize>,
    /// projunit's map.
    pub projection: Option<String>,
    /// PrivUnit2's and scalar-dp's ε for the norm.
    pub epsilon_norm: Option<f64>,
    /// The users' norm bound, where the mechanism takes one.
    pub radius: Option<f64>,
}

impl LocalConfig {
    /// The mechanism, built as `dprp publish -m MECH -e ε -k K --projection MAP --epsilon-norm
    /// ε₂ --radius R --projection-seed SEED` builds it (with `--first-row 0`: users are named by
    /// their absolute row id), through [`MechanismOptions::resolve`].
    pub fn mechanism(&self) -> Result<Box<dyn Mechanism>> {
        let kind = MechanismKind::parse(&self.mechanism)?;
        if !kind.is_local() {
            return Err(Error::param(
                field("mechanism"),
                format!(
                    "{} is not a local-DP mechanism ({})",
                    kind.name(),
                    MechanismKind::local_names()
                ),
            ));
        }
        let mut params = MechanismOptions {
            mechanism: self.mechanism.clone(),
            epsilon: self.epsilon,
            k: self.k,
            projection: self.projection.clone(),
            seed: Some(self.seed),
            epsilon_norm: self.epsilon_norm,
            radius: self.radius,
            ..Default::default()
        }
        .resolve()?
        .params;
        params.p = self.dim;
        mechanism::build(&params)
    }
}

/// One user's side: the message for user `row`'s vector `v` (`config.dim` is taken from `v`),
/// privatised with fresh noise from the operating system's CSPRNG (never written anywhere).
pub fn privatise(config: &LocalConfig, row: u64, v: &[f64]) -> Result<Vec<f32>> {
    let mut config = config.clone();
    config.dim = v.len();
    let m = config.mechanism()?;
    let client = m
        .local()
        .ok_or_else(|| Error::param(field("mechanism"), "has no local client"))?;
    let noise = NoiseSource::from_os()?;
    let mut rng = noise.row_rng(row);
    let msg = client.client(row, v, &mut rng)?;
    Ok(msg.iter().map(|&x| x as f32).collect())
}

/// The server's streaming, mergeable mean: the mechanism and the accumulated state.
pub struct Accumulator {
    mech: Box<dyn Mechanism>,
    state: AccumulatorState,
}

/// The first value of `message` that is not finite, as an error naming it (`whose` says whose
/// message it is). A privatised message is always finite: NaN or ±inf would make the mean NaN
/// for good, so such a message is refused and the accumulator left as it was.
fn check_finite(message: &[f32], whose: impl FnOnce() -> String) -> Result<()> {
    match message.iter().position(|x| !x.is_finite()) {
        None => Ok(()),
        Some(j) => Err(Error::param(
            "message",
            format!(
                "value {j} (counted from 0) of {} is {}: a privatised message is finite; \
                 nothing was added",
                whose(),
                message[j]
            ),
        )),
    }
}

impl Accumulator {
    /// An empty accumulator for the mechanism with these public parameters (as the clients').
    pub fn new(config: &LocalConfig) -> Result<Accumulator> {
        let mech = config.mechanism()?;
        let state = MeanAccumulator::new(mech.as_ref())?.state().clone();
        Ok(Accumulator { mech, state })
    }

    /// The accumulator of a local-DP release's mechanism, built from its metadata as `dprp mean`
    /// builds it, with every row of the release added (by global id) when `rows`: a shard
    /// directory adds all its shards, a shard file its own rows (so the states of a sharded
    /// release's shards merge into `dprp mean` of the directory). `rows = false` reads only the
    /// header and metadata: an empty accumulator to merge the shards' states into.
    pub fn of_release(path: &Path, rows: bool) -> Result<Accumulator> {
        let parts = ReleaseSet::open_with(path, rows)?.into_parts();
        let Some((first, _)) = parts.first() else {
            return Err(Error::format(path, "no rows: not a release"));
        };
        let m = first.meta();
        let mech = mechanism::from_record(&m.mechanism, &m.guarantee)?;
        let state = {
            let mut acc = MeanAccumulator::new(mech.as_ref())?;
            for (r, first_row) in parts.iter().filter(|_| rows) {
                if r.n() > 0 {
                    acc.add_rows(*first_row, r.values()?)?;
                }
            }
            acc.state().clone()
        };
        Ok(Accumulator { mech, state })
    }

    /// Run `f` on the accumulator; its state changes only if `f` succeeds.
    fn with<T>(&mut self, f: impl FnOnce(&mut MeanAccumulator<'_>) -> Result<T>) -> Result<T> {
        let mut acc = MeanAccumulator::from_state(self.mech.as_ref(), self.state.clone())?;
        let r = f(&mut acc)?;
        self.state = acc.state().clone();
        Ok(r)
    }

    /// Add user `row`'s message. A message with a NaN or infinite value is refused and the
    /// accumulator left unchanged, as after any error.
    pub fn add(&mut self, row: u64, message: &[f32]) -> Result<()> {
        check_finite(message, || format!("row {row}'s message"))?;
        self.with(|a| a.add(row, message))
    }

    /// Add the messages of users `first_row, first_row + 1, …` (row-major, one message's
    /// values each). Nothing is added when any message is refused: a value that is not finite
    /// anywhere in `messages` refuses the call, naming its message.
    pub fn add_rows(&mut self, first_row: u64, messages: &[f32]) -> Result<()> {
        if let Some(bad) = messages.iter().position(|x| !x.is_finite()) {
            let cols = self.mech.output_dim().max(1);
            let i = bad / cols;
            let row = first_row.saturating_add(i as u64);
            let one = &messages[i * cols..((i + 1) * cols).min(messages.len())];
            check_finite(one, || format!("message {i} (row {row})"))?;
        }
        self.with(|a| a.add_rows(first_row, messages))
    }

    /// Merge another accumulator of the same configuration that saw other users.
    pub fn merge(&mut self, other: &Accumulator) -> Result<()> {
        let st = other.state.clone();
        self.with(|a| a.merge_state(&st))
    }

    /// The state as JSON, to send to another machine ([`Accumulator::merge_json`] there).
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(&self.state).map_err(|e| Error::param("accumulator", e.to_string()))
    }

    /// Merge a state produced by [`Accumulator::to_json`].
    pub fn merge_json(&mut self, state: &str) -> Result<()> {
        let st: AccumulatorState =
            serde_json::from_str(state).map_err(|e| Error::param("state", e.to_string()))?;
        self.with(|a| a.merge_state(&st))
    }

    /// Users added.
    pub fn n(&self) -> u64 {
        self.state.n
    }

    /// The mean and its expected squared error.
    pub fn finish(&mut self) -> Result<MeanEstimate> {
        self.with(|a| a.finish())
    }
}
