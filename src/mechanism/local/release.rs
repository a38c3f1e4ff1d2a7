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

use std::sync::Arc;

use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

pub use super::algorithm::{rotation_draw, ErrorKind, LocalAlgorithm, LocalMap, WithMaps};
pub use super::algorithm::{CORRELATED_LAYOUT, LAYOUT, PER_ROW_LAYOUTS};
pub use super::decoder::LocalDecoder;
use super::rotation::ReflectionDraw;
use super::{PrivUnit2Norm, ScalarDp};
use crate::error::{Error, Result};
use crate::mechanism::kind::LocalOption;
use crate::mechanism::{
    Home, Mechanism, MechanismKind, MechanismParams, MechanismRecord, Payload, ProjectionRecord,
    SketchMut,
};
use crate::privacy::guarantee::{Guarantee, InputDomain};
use crate::projection::Seed;

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

/// A local-DP mechanism as a publishing [`Mechanism`].
#[derive(Debug, Clone)]
pub struct LocalSketch {
    pub(super) kind: MechanismKind,
    pub(super) d: usize,
    pub(super) first_row: u64,
    pub(super) algo: Arc<dyn LocalAlgorithm>,
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
    // the options only some kinds take, refused by the table's column for the others
    for (option, given, key, note) in [
        (
            LocalOption::Map,
            o.map.is_some(),
            "‹projection›",
            " among the local mechanisms (projunit-correlated is always SRHT)",
        ),
        (
            LocalOption::EpsilonNorm,
            o.epsilon_norm.is_some(),
            "‹epsilon_norm›",
            "",
        ),
        (
            LocalOption::Radius,
            o.radius.is_some(),
            "‹radius›",
            " (the direction mechanisms take the unit ball)",
        ),
    ] {
        let who = MechanismKind::names_where(|k| k.takes(option));
        refuse(given && !kind.takes(option), key, &format!("{who}{note}"))?;
    }
    refuse(
        params.k.is_some() && !kind.projects(),
        "‹k›",
        "projunit and projunit-correlated among the local mechanisms (the others release d \
         values per row)",
    )
}

impl LocalSpec {
    /// The projected dimension, `1 ≤ k ≤ d`.
    pub(super) fn k(&self) -> Result<usize> {
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

    /// The public seed of the maps (fresh from the OS when none was given).
    pub(super) fn seed(&self) -> Result<Seed> {
        match self.seed {
            Some(s) => Ok(s),
            None => Seed::random(),
        }
    }

    /// The algorithm with its constants, computed from (ε, d, k); a rotation's reflections
    /// drawn as `draw` says (that of the release's layout).
    fn algo(&self, draw: ReflectionDraw) -> Result<Arc<dyn LocalAlgorithm>> {
        match self.kind.home() {
            Home::Local(file) => super::algorithm(file, self, draw),
            Home::Central(_) => Err(Error::param(
                "‹mechanism›",
                format!("{} is not a local mechanism", self.kind.name()),
            )),
        }
    }

    /// ScalarDP of the spec: one value per row in `[0, R]`.
    pub(super) fn scalar(&self) -> Result<Arc<dyn LocalAlgorithm>> {
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
        Ok(Arc::new(ScalarDp::new(self.epsilon, r)?))
    }

    /// PrivUnit2 × ScalarDP of the spec: ε₁ on the direction, ε₂ on the norm, radius `R`.
    pub(super) fn norm(&self) -> Result<Arc<dyn LocalAlgorithm>> {
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
        Ok(Arc::new(PrivUnit2Norm::new(self.epsilon, e2, self.d, r)?))
    }
}

impl LocalSketch {
    /// The mechanism of a spec: its constants computed from (ε, d, k), its public maps from the
    /// seed.
    pub fn new(spec: &LocalSpec) -> Result<LocalSketch> {
        Self::with_draw(spec, super::algorithm::rotation_draw(LAYOUT)?)
    }

    /// [`LocalSketch::new`] with a rotation's reflections drawn as `draw` (a release of an older
    /// layout).
    fn with_draw(spec: &LocalSpec, draw: ReflectionDraw) -> Result<LocalSketch> {
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
            algo: spec.algo(draw)?,
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
        let mut draw = rotation_draw(LAYOUT)?;
        let (map, seed) = match &record.projection {
            ProjectionRecord::PerRow { map, seed, layout } => {
                draw = rotation_draw(*layout)?;
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
        let m = LocalSketch::with_draw(
            &LocalSpec {
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
            },
            draw,
        )?;
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

    /// The user id of release row `row` (per-row public maps are those of the id).
    pub(super) fn id(&self, row: u64) -> u64 {
        self.first_row.wrapping_add(row)
    }

    /// The record of the chosen constants and the server side.
    pub fn local_record(&self) -> LocalRecord {
        let (mse_per_user, mse_kind) = self.algo.mse_per_user();
        LocalRecord {
            domain: self.algo.domain(),
            first_row: self.first_row,
            constants: self.algo.constants(),
            mse_per_user,
            mse_kind,
            mse_note: self.algo.mse_note(),
            decoder: self.algo.decoder().to_string(),
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
        self.algo.message_len(self.d)
    }
    fn payload(&self) -> Payload {
        Payload::F32
    }
    fn guarantee(&self) -> Guarantee {
        let a = &self.algo;
        Guarantee::local(a.epsilon(), a.domain(), a.separated())
    }
    fn record(&self) -> MechanismRecord {
        MechanismRecord {
            name: self.kind,
            algorithm: self.algo.algorithm().to_string(),
            p: self.d,
            k: self.output_dim(),
            projection: self.algo.projection(),
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
        self.algo.domain()
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
