//! The local-DP mechanisms behind the crate's [`Mechanism`] trait: what `dprp publish` runs, what a
//! release records, and the server side that `dprp mean` and [`crate::mechanism::local::accumulator`] use.
//!
//! A release of a local mechanism holds, per row, exactly what that user's device would send: the
//! debiased `d`-vector of PrivUnit2 / PrivUnitG / Duchi / the composite, the `k` (or `k + 1`)
//! values of ProjUnit, or ScalarDP's one value. ProjUnit rows come with a public map each:
//! row `i` (counting from [`LocalOptions::first_row`]) uses the map of
//! [`Seed::for_row`]`(first_row + i)` of the release seed, so the server regenerates every `W_i`
//! and nothing per row is stored besides the message.
//!
//! **Privacy.** Each row is privatised on its own with fresh secret noise by the mechanism of its
//! file (whose ε-LDP argument is there); the per-row public map depends only on the public seed
//! and the row id, never on the data. Parallel composition over disjoint rows makes the release
//! ε-LDP for every user. The constants recorded in the header are recomputed from (ε, d, k) when
//! a release is read and must agree ([`LocalSketch::from_record`]).
//!
//! **Server.** [`LocalDecoder::accumulate`] adds one row's decoded contribution to an
//! accumulator, [`LocalDecoder::finish`] turns it into the mean: for every mechanism here the
//! mean of the decoded rows, each an (exactly or nearly) unbiased estimate of its input.

use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

pub use super::decoder::{ErrorKind, LocalDecoder};
use super::projunit_correlated::{CorrelatedProjUnit, CorrelatedPublic};
use super::rotation::ReflectionDraw;
use super::{
    privunit2, privunit2_norm, privunit_inf, privunitg, projunit, projunit_correlated, scalar_dp,
    NearlyUnbiasedSrht, PrivUnit2, PrivUnit2Norm, PrivUnitG, PrivUnitInf, ProjKind, ProjUnit,
    ScalarDp,
};
use crate::error::{Error, Result};
use crate::mechanism::{
    Mechanism, MechanismKind, MechanismParams, MechanismRecord, Payload, ProjectionRecord,
    SketchMut,
};
use crate::privacy::guarantee::{Guarantee, InputDomain};
use crate::projection::Seed;

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
fn layout_of(draw: ReflectionDraw) -> u32 {
    match draw {
        ReflectionDraw::BoxMuller => 1,
        ReflectionDraw::Ziggurat => 2,
    }
}

/// The public map family of a ProjUnit release (`--projection`).
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

/// Options of the local mechanisms (`dprp publish`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LocalOptions {
    /// ProjUnit's public map (`--projection`; default SRHT).
    pub map: Option<LocalMap>,
    /// The norm's budget ε₂ of `privunit2-norm` (`--epsilon-norm`; ε is then the direction's ε₁).
    pub epsilon_norm: Option<f64>,
    /// The public radius `R` of the input ball (`privunit2-norm`) or interval (`scalar-dp`).
    pub radius: Option<f64>,
    /// The id of the release's first row (`--first-row`): per-row public maps are those of rows
    /// `first_row, first_row + 1, …`, so shards of users published separately under one seed
    /// get disjoint maps.
    pub first_row: u64,
}

impl LocalOptions {
    /// Sketch mechanisms take none of these options.
    pub fn refuse_for(&self, kind: MechanismKind) -> Result<()> {
        let given = [
            (self.epsilon_norm.is_some(), "‹epsilon_norm›"),
            (self.radius.is_some(), "‹radius›"),
            (self.first_row != 0, "‹first_row›"),
            (self.map.is_some(), "‹projection›"),
        ];
        if let Some((_, opt)) = given.iter().find(|(g, _)| *g) {
            return Err(Error::param(
                *opt,
                format!(
                    "applies to the local-DP mechanisms only ({} is a sketch mechanism)",
                    kind.name()
                ),
            ));
        }
        Ok(())
    }
}

/// What a release of a local mechanism records beyond the common header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocalRecord {
    /// The inputs, any two of which are neighbours.
    pub domain: InputDomain,
    /// Id of the first row (per-row maps of rows `first_row..`).
    pub first_row: u64,
    /// The chosen constants, by name, in the order the algorithm uses them.
    pub constants: Vec<(String, f64)>,
    /// Closed-form per-user `E‖Z − v‖²` for an input on the boundary of the domain (unit norm,
    /// or norm `R`).
    pub mse_per_user: f64,
    /// How exact `mse_per_user` is.
    pub mse_kind: ErrorKind,
    /// For which inputs `mse_per_user` holds.
    pub mse_note: String,
    /// How the server turns rows into the mean.
    pub decoder: String,
}

/// The algorithm of a local release, with its public parameters.
#[derive(Debug, Clone)]
pub(super) enum Algo {
    PrivUnit2(PrivUnit2),
    PrivUnitG(PrivUnitG),
    ProjUnit(ProjUnit, Seed),
    Nearly(NearlyUnbiasedSrht, Seed),
    Correlated(CorrelatedProjUnit, CorrelatedPublic),
    Scalar(ScalarDp),
    Norm(PrivUnit2Norm),
    Inf(PrivUnitInf),
}

/// A local-DP mechanism as a publishing [`Mechanism`].
#[derive(Debug, Clone)]
pub struct LocalSketch {
    pub(super) kind: MechanismKind,
    pub(super) d: usize,
    pub(super) first_row: u64,
    pub(super) algo: Algo,
}

fn proj_kind(map: LocalMap) -> ProjKind {
    match map {
        LocalMap::Rotation => ProjKind::Rotation,
        LocalMap::Gaussian => ProjKind::Gaussian,
        LocalMap::Srht | LocalMap::SrhtNearlyUnbiased => ProjKind::Srht,
    }
}

/// What fixes a local mechanism: its kind, budget, dimensions and public map. A publish run
/// gives one through [`build`] (after refusing the options that do not apply); a release's record
/// gives one directly ([`LocalSketch::from_record`]).
#[derive(Debug, Clone, Copy)]
pub struct LocalSpec {
    /// Which local mechanism.
    pub kind: MechanismKind,
    /// ε (the direction's ε₁ for `privunit2-norm`).
    pub epsilon: f64,
    /// Input dimension d.
    pub d: usize,
    /// Projected dimension k (ProjUnit and correlated ProjUnit only).
    pub k: Option<usize>,
    /// Public seed of the per-row or correlated maps (default: fresh from the OS).
    pub seed: Option<Seed>,
    /// The map, the norm's budget, the radius and the first row id.
    pub options: LocalOptions,
}

/// Build a local mechanism for a publish run: refuse the sketch options and the local options
/// that do not apply to this kind, then [`LocalSketch::new`].
pub fn build(params: &MechanismParams) -> Result<LocalSketch> {
    let kind = params.kind;
    super::check_epsilon("‹epsilon›", params.epsilon)?;
    if kind != MechanismKind::ScalarDp {
        super::check_dim(params.p)?;
    }
    refuse_options(params)?;
    LocalSketch::new(&LocalSpec {
        kind,
        epsilon: params.epsilon,
        d: params.p,
        k: params.k,
        seed: params.seed,
        options: params.local,
    })
}

/// The publish options a local mechanism of this kind does not take, each refused by name.
fn refuse_options(params: &MechanismParams) -> Result<()> {
    let kind = params.kind;
    let o = &params.local;
    if params.projection.is_some() {
        return Err(Error::param(
            "‹projection›",
            format!(
                "{} takes no dense sketch projection (ProjUnit's maps are rotation, gaussian, \
                 srht or srht-nearly-unbiased)",
                kind.name()
            ),
        ));
    }
    if params.individual_dp {
        return Err(Error::param(
            "‹individual_dp›",
            format!("{} gives local DP, not individual DP", kind.name()),
        ));
    }
    if params.min_norm.is_some() {
        return Err(Error::param(
            "‹min_norm›",
            format!("applies to dp-signrp-rr only, not {}", kind.name()),
        ));
    }
    let refuse = |given: bool, opt: &str, who: &str| -> Result<()> {
        if given {
            Err(Error::param(opt, format!("applies to {who} only")))
        } else {
            Ok(())
        }
    };
    refuse(
        o.map.is_some() && kind != MechanismKind::Projunit,
        "‹projection›",
        "projunit among the local mechanisms (projunit-correlated is always SRHT)",
    )?;
    refuse(
        o.epsilon_norm.is_some() && kind != MechanismKind::Privunit2Norm,
        "‹epsilon_norm›",
        "privunit2-norm",
    )?;
    refuse(
        o.radius.is_some()
            && !matches!(kind, MechanismKind::Privunit2Norm | MechanismKind::ScalarDp),
        "‹radius›",
        "privunit2-norm and scalar-dp (the direction mechanisms take the unit ball)",
    )?;
    refuse(
        params.k.is_some() && !kind.projects(),
        "‹k›",
        "projunit and projunit-correlated among the local mechanisms (the others release d \
         values per row)",
    )
}

impl LocalSpec {
    /// The projected dimension, `1 ≤ k ≤ d`.
    fn k(&self) -> Result<usize> {
        let (kind, d) = (self.kind, self.d);
        let k = self.k.ok_or_else(|| {
            Error::missing(
                "‹k›",
                format!("{} needs the projected dimension k", kind.name()),
            )
        })?;
        if k == 0 || k > d {
            return Err(Error::param(
                "‹k›",
                format!("{} needs 1 ≤ k ≤ d = {d}, got k = {k}", kind.name()),
            ));
        }
        Ok(k)
    }

    fn seed(&self) -> Result<Seed> {
        match self.seed {
            Some(s) => Ok(s),
            None => Seed::random(),
        }
    }

    /// The algorithm with its constants, computed from (ε, d, k).
    fn algo(&self) -> Result<Algo> {
        let (eps, d, o) = (self.epsilon, self.d, &self.options);
        Ok(match self.kind {
            MechanismKind::Privunit2 => Algo::PrivUnit2(PrivUnit2::new(eps, d)?),
            MechanismKind::Duchi => Algo::PrivUnit2(PrivUnit2::duchi(eps, d)?),
            MechanismKind::Privunitg => Algo::PrivUnitG(PrivUnitG::new(eps, d)?),
            MechanismKind::Projunit => {
                let k = self.k()?;
                match o.map.unwrap_or(LocalMap::Srht) {
                    LocalMap::SrhtNearlyUnbiased => {
                        Algo::Nearly(NearlyUnbiasedSrht::exact(eps, d, k)?, self.seed()?)
                    }
                    map => Algo::ProjUnit(ProjUnit::new(eps, d, k, proj_kind(map))?, self.seed()?),
                }
            }
            MechanismKind::ProjunitCorrelated => {
                let k = self.k()?;
                if k < 2 {
                    return Err(Error::param(
                        "‹k›",
                        "projunit-correlated needs k ≥ 2 (PrivUnitG in k dimensions)",
                    ));
                }
                let m = CorrelatedProjUnit::new(eps, d, k)?;
                let public = m.public(self.seed()?)?;
                Algo::Correlated(m, public)
            }
            MechanismKind::PrivunitInf => Algo::Inf(PrivUnitInf::new(eps, d)?),
            MechanismKind::ScalarDp => self.scalar()?,
            MechanismKind::Privunit2Norm => self.norm()?,
            // every other kind by name: a new kind must be placed here (no wildcard arm)
            other @ (MechanismKind::RawGOpt
            | MechanismKind::DpRpG
            | MechanismKind::DpRpGOpt
            | MechanismKind::DpOporp
            | MechanismKind::DpSignrpRr
            | MechanismKind::DpSignrpRrSmooth
            | MechanismKind::DpSignoporpRr
            | MechanismKind::DpSignoporpRrSmooth
            | MechanismKind::IdpSignrpG
            | MechanismKind::IdpSignrpRr
            | MechanismKind::IdpSignoporpG
            | MechanismKind::IdpSignoporpRr) => {
                return Err(Error::param(
                    "‹mechanism›",
                    format!("{} is not a local mechanism", other.name()),
                ))
            }
        })
    }

    fn scalar(&self) -> Result<Algo> {
        let d = self.d;
        if d != 1 {
            return Err(Error::param(
                "input",
                format!("scalar-dp privatises one value per row; the data has {d} columns"),
            ));
        }
        let r = self.options.radius.ok_or_else(|| {
            Error::missing(
                "‹radius›",
                "scalar-dp needs the public upper bound R of the values",
            )
        })?;
        Ok(Algo::Scalar(ScalarDp::new(self.epsilon, r)?))
    }

    fn norm(&self) -> Result<Algo> {
        let o = &self.options;
        let e2 = o.epsilon_norm.ok_or_else(|| {
            Error::missing(
                "‹epsilon_norm›",
                "privunit2-norm spends ‹epsilon› on the direction and ‹epsilon_norm› on the norm",
            )
        })?;
        super::check_epsilon("‹epsilon_norm›", e2)?;
        let r = o.radius.ok_or_else(|| {
            Error::missing(
                "‹radius›",
                "privunit2-norm needs the public radius R of the ball",
            )
        })?;
        Ok(Algo::Norm(PrivUnit2Norm::new(self.epsilon, e2, self.d, r)?))
    }
}

impl LocalSketch {
    /// The mechanism of a spec: its constants computed from (ε, d, k), its public maps from the
    /// seed.
    pub fn new(spec: &LocalSpec) -> Result<LocalSketch> {
        super::check_epsilon("‹epsilon›", spec.epsilon)?;
        if spec.kind != MechanismKind::ScalarDp {
            super::check_dim(spec.d)?;
        }
        if let Some(r) = spec.options.radius {
            if !(r.is_finite() && r > 0.0) {
                return Err(Error::param(
                    "‹radius›",
                    format!("the public radius must be a positive finite number, got {r}"),
                ));
            }
        }
        Ok(LocalSketch {
            kind: spec.kind,
            d: spec.d,
            first_row: spec.options.first_row,
            algo: spec.algo()?,
        })
    }

    /// Rebuild from a release's record: the constants are recomputed from (ε, d, k) and must
    /// agree with the recorded ones (a mismatch means a damaged header or an incompatible
    /// writer, and decoding with either set would be wrong).
    pub fn from_record(record: &MechanismRecord, guarantee: &Guarantee) -> Result<LocalSketch> {
        let bad = |m: String| Error::param("release", m);
        let rec = record
            .local
            .as_ref()
            .ok_or_else(|| bad("a local mechanism without its local record".into()))?;
        let (epsilon, epsilon_norm) = match guarantee.local.and_then(|l| l.separated) {
            Some((e1, e2)) => (e1, Some(e2)),
            None => (guarantee.epsilon, None),
        };
        let mut draw = None;
        let (map, seed) = match &record.projection {
            ProjectionRecord::PerRow { map, seed, layout } => {
                draw = Some(rotation_draw(*layout)?);
                (Some(*map), Some(*seed))
            }
            ProjectionRecord::Correlated { seed, layout } => {
                if *layout != CORRELATED_LAYOUT {
                    return Err(bad(format!(
                        "correlated map layout {layout} is not supported (this dprp has \
                         {CORRELATED_LAYOUT})"
                    )));
                }
                (None, Some(*seed))
            }
            _ => (None, None),
        };
        let radius = match rec.domain {
            InputDomain::Ball { radius } if record.name == MechanismKind::Privunit2Norm => {
                Some(radius)
            }
            InputDomain::Interval { max } => Some(max),
            _ => None,
        };
        // k from the kind's table row (`projects`); the nearly unbiased SRHT map records k + 1
        let k = if !record.name.projects() {
            None
        } else if record.name == MechanismKind::Projunit
            && matches!(map, Some(LocalMap::SrhtNearlyUnbiased))
        {
            Some(record.k.wrapping_sub(1))
        } else {
            Some(record.k)
        };
        let mut m = LocalSketch::new(&LocalSpec {
            kind: record.name,
            epsilon,
            d: record.p,
            k,
            seed,
            options: LocalOptions {
                map,
                epsilon_norm,
                radius,
                first_row: rec.first_row,
            },
        })?;
        if let (Algo::ProjUnit(p, _), Some(draw)) = (&mut m.algo, draw) {
            *p = p.with_rotation_draw(draw);
        }
        let again = m.local_record();
        if again.constants.len() != rec.constants.len() {
            return Err(bad(
                "the recorded constants do not match the mechanism".into()
            ));
        }
        for ((name, want), (name2, got)) in rec.constants.iter().zip(&again.constants) {
            let close = (want - got).abs() <= 1e-9 * want.abs().max(got.abs()).max(1e-300);
            if name != name2 || !close {
                return Err(bad(format!(
                    "the release records {name} = {want}, but (ε, d, k) give {name2} = {got}: \
                     the header is damaged or was written by an incompatible version"
                )));
            }
        }
        if record.k != m.output_dim() || record.p != m.d {
            return Err(bad(format!(
                "the record says {} → {} values, the mechanism gives {} → {}",
                record.p,
                record.k,
                m.d,
                m.output_dim()
            )));
        }
        Ok(m)
    }

    /// The per-row seed of release row `row`.
    pub(super) fn row_seed(&self, seed: Seed, row: u64) -> Seed {
        seed.for_row(self.first_row.wrapping_add(row))
    }

    fn domain(&self) -> InputDomain {
        match &self.algo {
            Algo::Scalar(s) => InputDomain::Interval { max: s.r_max },
            Algo::Norm(n) => InputDomain::Ball { radius: n.radius() },
            Algo::Inf(_) => InputDomain::Cube,
            _ => InputDomain::Ball { radius: 1.0 },
        }
    }

    fn algorithm(&self) -> &'static str {
        match &self.algo {
            Algo::PrivUnit2(_) if self.kind == MechanismKind::Duchi => {
                "Duchi, Jordan & Wainwright hemisphere mechanism = PrivUnit2 with γ = 0 (Bhowmick \
                 et al. 2018, Algorithm 1), corrected constant"
            }
            Algo::PrivUnit2(_) => privunit2::ALGORITHM,
            Algo::PrivUnitG(_) => privunitg::ALGORITHM,
            Algo::ProjUnit(..) => projunit::ALGORITHM,
            Algo::Nearly(..) => {
                "Nearly unbiased FastProjUnit (Asi et al. 2023, Algorithms 6–7) with C = d'/k, \
                 over PrivUnitG in k + 1 dimensions"
            }
            Algo::Correlated(..) => projunit_correlated::ALGORITHM,
            Algo::Scalar(_) => scalar_dp::ALGORITHM,
            Algo::Norm(_) => privunit2_norm::ALGORITHM,
            Algo::Inf(_) => privunit_inf::ALGORITHM,
        }
    }

    fn epsilon(&self) -> (f64, Option<(f64, f64)>) {
        match &self.algo {
            Algo::PrivUnit2(m) => (m.epsilon, None),
            Algo::PrivUnitG(m) => (m.epsilon, None),
            Algo::ProjUnit(m, _) => (m.epsilon, None),
            Algo::Nearly(m, _) => (m.epsilon, None),
            Algo::Correlated(m, _) => (m.epsilon, None),
            Algo::Inf(m) => (m.epsilon, None),
            Algo::Scalar(m) => (m.epsilon, None),
            Algo::Norm(m) => (
                m.epsilon(),
                Some((m.direction.epsilon, m.magnitude.epsilon)),
            ),
        }
    }

    /// The record of the chosen constants and the server side.
    pub fn local_record(&self) -> LocalRecord {
        let c = |n: &str, v: f64| (n.to_string(), v);
        let pu2 = |m: &PrivUnit2| {
            vec![
                c("gamma", m.gamma),
                c("p", m.p),
                c("eps_cap", m.eps_cap),
                c("eps_coin", m.eps0),
                c("m", m.m),
            ]
        };
        let pug = |m: &PrivUnitG| vec![c("p", m.p), c("gamma", m.gamma), c("scale", m.scale)];
        let sdp = |m: &ScalarDp| {
            vec![
                c("levels_k", m.k as f64),
                c("p_keep", m.p_keep),
                c("a", m.a),
                c("b", m.b),
            ]
        };
        let (constants, decoder) = match &self.algo {
            Algo::PrivUnit2(m) => (pu2(m), "mean of the rows (each Z = V/m is unbiased)"),
            Algo::PrivUnitG(m) => (pug(m), "mean of the rows (each Z is unbiased)"),
            Algo::ProjUnit(m, _) => {
                let mut v = vec![c("c", m.c)];
                v.extend(pug(&m.inner));
                (
                    v,
                    "mean over rows i of c·W_iᵀẑ_i, W_i regenerated from the row's seed",
                )
            }
            Algo::Nearly(m, _) => {
                let mut v = vec![c("C", m.c_norm)];
                v.extend(pug(&m.inner));
                (
                    v,
                    "mean over rows i of √C·W_iᵀẑ_i[1..k], W_i regenerated from the row's seed",
                )
            }
            Algo::Correlated(m, _) => {
                let mut v = vec![c("c", m.c)];
                v.extend(pug(&m.inner));
                (
                    v,
                    "z = Σ_i S_iᵀẑ_i (scatter, S_i from the row's seed), then once \
                     (1/n)·c·√(d'/k)·D·H·z (D from the release seed)",
                )
            }
            Algo::Inf(m) => (
                vec![
                    c("kappa", m.kappa as f64),
                    c("threshold_L", m.threshold as f64),
                    c("p", m.p),
                    c("eps_cap", m.eps_cap),
                    c("eps_coin", m.eps0),
                    c("m", m.m),
                ],
                "mean of the rows (each Z = V/m is unbiased)",
            ),
            Algo::Scalar(m) => (sdp(m), "mean of the rows (each a(Ĵ − b) is unbiased)"),
            Algo::Norm(m) => {
                let mut v = pu2(&m.direction);
                v.extend(sdp(&m.magnitude));
                (
                    v,
                    "mean of the rows (direction and norm estimates independent, unbiased)",
                )
            }
        };
        let (mse_per_user, mse_kind) = self.mse_per_user();
        LocalRecord {
            domain: self.domain(),
            first_row: self.first_row,
            constants,
            mse_per_user,
            mse_kind,
            mse_note: self.mse_note(),
            decoder: decoder.to_string(),
        }
    }

    pub(super) fn check_message(&self, message: &[f32]) -> Result<()> {
        if message.len() != self.output_dim() {
            return Err(Error::param(
                "release row",
                format!(
                    "has {} values, the mechanism sends {}",
                    message.len(),
                    self.output_dim()
                ),
            ));
        }
        Ok(())
    }
}

impl Mechanism for LocalSketch {
    fn kind(&self) -> MechanismKind {
        self.kind
    }
    fn input_dim(&self) -> usize {
        self.d
    }
    fn output_dim(&self) -> usize {
        match &self.algo {
            Algo::ProjUnit(m, _) => m.k,
            Algo::Nearly(m, _) => m.k + 1,
            Algo::Correlated(m, _) => m.k,
            _ => self.d,
        }
    }
    fn payload(&self) -> Payload {
        Payload::F32
    }
    fn guarantee(&self) -> Guarantee {
        let (e, sep) = self.epsilon();
        Guarantee::local(e, self.domain(), sep)
    }
    fn record(&self) -> MechanismRecord {
        let projection = match &self.algo {
            Algo::ProjUnit(m, seed) => ProjectionRecord::PerRow {
                map: match m.kind {
                    ProjKind::Rotation => LocalMap::Rotation,
                    ProjKind::Gaussian => LocalMap::Gaussian,
                    ProjKind::Srht => LocalMap::Srht,
                },
                seed: *seed,
                layout: layout_of(m.rotation_draw),
            },
            Algo::Nearly(_, seed) => ProjectionRecord::PerRow {
                map: LocalMap::SrhtNearlyUnbiased,
                seed: *seed,
                layout: LAYOUT,
            },
            Algo::Correlated(_, public) => ProjectionRecord::Correlated {
                seed: public.seed(),
                layout: CORRELATED_LAYOUT,
            },
            _ => ProjectionRecord::Identity,
        };
        MechanismRecord {
            name: self.kind,
            algorithm: self.algorithm().to_string(),
            p: self.d,
            k: self.output_dim(),
            projection,
            gaussian: None,
            sign: None,
            local: Some(self.local_record()),
            noise: None,
            arithmetic: None,
        }
    }
    fn privatise(
        &self,
        rows: &[f32],
        first_row: u64,
        out: SketchMut<'_>,
        rng: &mut ChaCha20Rng,
    ) -> Result<()> {
        let SketchMut::Real(out) = out else {
            return Err(Error::param(
                "payload",
                "local mechanisms write real values",
            ));
        };
        let (p, k) = (self.d, self.output_dim());
        if !rows.len().is_multiple_of(p) || out.len() != rows.len() / p * k {
            return Err(Error::param(
                "rows",
                format!(
                    "{} values do not fill {p}-value rows into {k}-value outputs",
                    rows.len()
                ),
            ));
        }
        let n = (rows.len() / p) as u64;
        if self
            .first_row
            .checked_add(first_row)
            .and_then(|id| id.checked_add(n))
            .is_none()
        {
            // each row's public map is that of its id: wrapped ids would reuse maps
            return Err(Error::param(
                "first row",
                format!(
                    "row ids {} + {first_row} + {n} rows overflow 64 bits",
                    self.first_row
                ),
            ));
        }
        let mut v = vec![0f64; p];
        for (i, (row, o)) in rows
            .chunks_exact(p)
            .zip(out.chunks_exact_mut(k))
            .enumerate()
        {
            v.iter_mut().zip(row).for_each(|(a, &b)| *a = b as f64);
            let z = self.client(first_row + i as u64, &v, rng)?;
            for (oj, zj) in o.iter_mut().zip(&z) {
                *oj = *zj as f32;
            }
            if o.iter().any(|x| !x.is_finite()) {
                return Err(Error::param(
                    "privatised row",
                    format!(
                        "row {} does not fit in f32 (a value overflows); lower d or raise ε",
                        first_row + i as u64
                    ),
                ));
            }
        }
        Ok(())
    }
    fn input_domain(&self) -> InputDomain {
        self.domain()
    }
    fn local(&self) -> Option<&dyn LocalDecoder> {
        Some(self)
    }
}

/// `gamma = 0.1234, p = 0.9`: a local release's constants, six significant digits.
pub fn describe_constants(c: &[(String, f64)]) -> String {
    c.iter()
        .map(|(n, v)| {
            if *v == 0.0 || (1e-3..1e6).contains(&v.abs()) {
                format!("{n} = {v:.6}")
            } else {
                format!("{n} = {v:.6e}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
