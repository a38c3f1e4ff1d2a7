//! What each local mechanism's own file implements so that publishing, reading and decoding a
//! release need no list of the mechanisms: [`LocalAlgorithm`]. A release's
//! [`LocalSketch`](super::release::LocalSketch) holds one behind a pointer and asks it for the
//! client function, the server's decoding, the recorded constants and the closed-form error; the
//! only place that names every local kind is the constructor
//! ([`LocalSpec`](super::release::LocalSpec)), a `match` without a wildcard arm, so a new kind
//! fails to compile until it is placed there.
//!
//! Row ids: `id` below is the user's *absolute* row id, the release's first row plus the row's
//! position in it; a mechanism with per-row public maps draws the map of `id` (so shards published
//! separately under one seed get disjoint maps).

use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

use super::rotation::ReflectionDraw;
use crate::error::{Error, Result};
use crate::mechanism::ProjectionRecord;
use crate::privacy::guarantee::InputDomain;

/// Randomness layout version of per-row maps (see [`crate::projection`]). Version 2 draws a
/// rotation's Householder vectors with the bulk ziggurat ([`ReflectionDraw::Ziggurat`]);
/// version 1 (still decoded) drew them by Box–Muller. The Gaussian and SRHT maps are the same in
/// both.
pub const LAYOUT: u32 = 2;

/// Layout versions of per-row maps this dprp decodes.
pub const PER_ROW_LAYOUTS: [u32; 2] = [1, 2];

/// Randomness layout version of the correlated map (unchanged by per-row version 2).
pub const CORRELATED_LAYOUT: u32 = 1;

/// How a rotation's reflection vectors are drawn in per-row layout `layout`.
pub fn rotation_draw(layout: u32) -> Result<ReflectionDraw> {
    match layout {
        1 => Ok(ReflectionDraw::BoxMuller),
        2 => Ok(ReflectionDraw::Ziggurat),
        _ => Err(Error::param(
            "release",
            format!(
                "per-row map layout {layout} is not supported (this dprp reads {PER_ROW_LAYOUTS:?})"
            ),
        )),
    }
}

/// The per-row layout that records `draw`.
pub fn layout_of(draw: ReflectionDraw) -> u32 {
    match draw {
        ReflectionDraw::BoxMuller => 1,
        ReflectionDraw::Ziggurat => 2,
    }
}

/// The public map family of a ProjUnit release (`‹projection›`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LocalMap {
    /// `√(d/k)·` `k` rows of a Haar rotation; exactly unbiased.
    Rotation,
    /// I.i.d. `N(0, 1/k)` entries; exactly unbiased.
    Gaussian,
    /// SRHT (FastProjUnit), `O(d log d)`; nearly unbiased.
    Srht,
    /// SRHT with the complete-then-normalise step of Algorithms 6–7 (`C = d'/k`): exactly
    /// unbiased, `k + 1` values per row.
    SrhtNearlyUnbiased,
}

impl LocalMap {
    /// Parse `rotation`, `gaussian`, `srht` or `srht-nearly-unbiased`.
    pub fn parse(s: &str) -> Result<LocalMap> {
        match s.to_ascii_lowercase().as_str() {
            "rotation" => Ok(LocalMap::Rotation),
            "gaussian" => Ok(LocalMap::Gaussian),
            "srht" => Ok(LocalMap::Srht),
            "srht-nearly-unbiased" => Ok(LocalMap::SrhtNearlyUnbiased),
            _ => Err(Error::param(
                "‹projection›",
                format!(
                    "unknown ProjUnit projection '{s}' (expected rotation, gaussian, srht or \
                     srht-nearly-unbiased)"
                ),
            )),
        }
    }

    /// The command-line name.
    pub fn name(&self) -> &'static str {
        match self {
            LocalMap::Rotation => "rotation",
            LocalMap::Gaussian => "gaussian",
            LocalMap::Srht => "srht",
            LocalMap::SrhtNearlyUnbiased => "srht-nearly-unbiased",
        }
    }
}

/// How exact a recorded error figure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// The closed form is exact.
    Exact,
    /// The closed form neglects a small bias (SRHT).
    Approximate,
    /// The closed form bounds the error from above.
    UpperBound,
}

/// The error note of the direction mechanisms for ball inputs, after "exact " or "an upper bound, ".
pub const BALL_NOTE: &str = "for unit-norm inputs; an input of norm r < 1 adds 1 − r² (it is \
                             first rounded to the sphere)";

/// A mechanism with the public randomness it was built with: a ProjUnit's release seed (per-row
/// maps `W_id` are regenerated from it), or the correlated ProjUnit's shared map.
#[derive(Debug, Clone)]
pub struct WithMaps<M, P> {
    /// The mechanism with its constants.
    pub mechanism: M,
    /// Its public randomness.
    pub public: P,
}

/// One local mechanism as a release uses it; implemented in the mechanism's own file, beside its
/// privacy argument.
pub trait LocalAlgorithm: std::fmt::Debug + Send + Sync {
    /// The algorithm and its source, as recorded in a release.
    fn algorithm(&self) -> &'static str;
    /// ε of one message (for a separated composite, ε₁ + ε₂).
    fn epsilon(&self) -> f64;
    /// `(ε₁, ε₂)` when the message's two parts are separately private.
    fn separated(&self) -> Option<(f64, f64)> {
        None
    }
    /// The inputs any two of which are neighbours.
    fn domain(&self) -> InputDomain {
        InputDomain::Ball { radius: 1.0 }
    }
    /// Values each message holds for inputs of dimension `d`.
    fn message_len(&self, d: usize) -> usize {
        d
    }
    /// Length of the server's accumulator for inputs of dimension `d`.
    fn accumulator_len(&self, d: usize) -> usize {
        d
    }
    /// The chosen constants, by name, in the order the algorithm uses them (recorded, and checked
    /// against a recomputation when a release is read).
    fn constants(&self) -> Vec<(String, f64)>;
    /// How the server turns rows into the mean, in one sentence.
    fn decoder(&self) -> &'static str;
    /// The public map a release records.
    fn projection(&self) -> ProjectionRecord {
        ProjectionRecord::Identity
    }
    /// The client: privatise `v` (in [`domain`](LocalAlgorithm::domain)) as user `id`, with
    /// fresh secret noise from `rng`; returns the message.
    fn client(&self, id: u64, v: &[f64], rng: &mut ChaCha20Rng) -> Result<Vec<f64>>;
    /// Add user `id`'s decoded message `z` (already checked to hold
    /// [`message_len`](LocalAlgorithm::message_len) values) into `acc`.
    fn accumulate(&self, _id: u64, z: &[f64], acc: &mut [f64]) -> Result<()> {
        acc.iter_mut().zip(z).for_each(|(a, b)| *a += b);
        Ok(())
    }
    /// Add the `k`-value messages of users `first_id, first_id + 1, …` into `acc`.
    fn accumulate_rows(
        &self,
        first_id: u64,
        k: usize,
        messages: &[f32],
        acc: &mut [f64],
    ) -> Result<()> {
        let mut z = vec![0f64; k];
        for (i, msg) in messages.chunks_exact(k.max(1)).enumerate() {
            z.iter_mut().zip(msg).for_each(|(a, &b)| *a = b as f64);
            self.accumulate(first_id.wrapping_add(i as u64), &z, acc)?;
        }
        Ok(())
    }
    /// The mean estimate of `n ≥ 1` users accumulated in `acc`.
    fn finish(&self, acc: &[f64], n: u64) -> Result<Vec<f64>> {
        let inv = 1.0 / n.max(1) as f64;
        Ok(acc.iter().map(|x| x * inv).collect())
    }
    /// Per-user `E‖Z − v‖²` on the domain's boundary and how exact it is.
    fn mse_per_user(&self) -> (f64, ErrorKind);
    /// For which inputs [`mse_per_user`](LocalAlgorithm::mse_per_user) holds, in one sentence.
    fn mse_note(&self) -> String {
        format!("exact {BALL_NOTE}")
    }
}

/// `(name, value)` for a constants list.
pub fn constant(name: &str, value: f64) -> (String, f64) {
    (name.to_string(), value)
}
