//! The mechanisms, in three rooms — one folder per family — and the [`Mechanism`] trait the
//! publishing families share (DESIGN.md §5, MECHANISMS-LDP.md).
//!
//! | room | who adds the noise | what leaves | server side |
//! |---|---|---|---|
//! | [`central`] | the data holder, once per row | a release of sketches, published row by row | search, estimates, SVM on the release |
//! | [`local`] | each user, on their own vector | one private message per user | [`local::decoder`], [`local::accumulator`] (the mean) |
//! | [`distributed`] | each client, a small integer share | only a secure sum mod `M` | [`distributed::round`] with [`distributed::secagg`]; [`distributed::accountant`] |
//!
//! Central sketches (one public map, an inner-product estimator):
//!
//! | name | file | algorithm |
//! |---|---|---|
//! | `raw-g-opt` | [`central::raw_gaussian`] | Gaussian noise on the raw row (Theorem C.1 baseline) |
//! | `dp-rp-g` | [`central::dp_rp`] | Algorithm 1, classical σ (Theorem 3.1) |
//! | `dp-rp-g-opt` | [`central::dp_rp`] | Algorithm 1 with analytic σ (Theorem 3.2); Rademacher = Algorithm 9 |
//! | `dp-oporp` | [`central::dp_oporp`] | Algorithm 10 |
//! | `dp-signrp-rr`, `dp-signoporp-rr` | [`central::sign_rr`] | Algorithm 3 with N₊ (Proposition 4.4); on OPORP N₊ = 1 |
//! | `dp-signrp-rr-smooth`, `dp-signoporp-rr-smooth` | [`central::smooth_flipping`] | Algorithm 4 (Theorem 4.6) |
//! | `idp-signrp-g`, `idp-signrp-rr`, `idp-signoporp-g`, `idp-signoporp-rr` | [`central::idp_sign`] | Algorithms 6–8, appendix A.3 (individual DP) |
//!
//! Local DP for mean estimation (replace-one neighbours; [`local`] has their privacy arguments),
//! behind the same trait through [`local::release`]:
//!
//! | name | file | algorithm |
//! |---|---|---|
//! | `privunit2` | [`local::privunit2`] | Bhowmick et al. 2018, Algorithm 1, variance-optimal split |
//! | `duchi` | [`local::privunit2`] | Duchi et al. hemisphere (PrivUnit2 with γ = 0) |
//! | `privunitg` | [`local::privunitg`] | Asi et al. 2023, Algorithm 8 |
//! | `projunit` | [`local::projunit`] | Asi et al. 2023, Algorithms 1, 2, 5 (rotation, Gaussian, SRHT); 6–7 with `--projection srht-nearly-unbiased` |
//! | `projunit-correlated` | [`local::projunit_correlated`] | Asi et al. 2023, Algorithms 3–4 (with √(d'/k)) |
//! | `privunit-inf` | [`local::privunit_inf`] | Bhowmick et al. 2018, Algorithm 2 (inputs in `[-1,1]^d`) |
//! | `scalar-dp` | [`local::scalar_dp`] | Bhowmick et al. 2018, Algorithm 3 |
//! | `privunit2-norm` | [`local::privunit2_norm`] | Bhowmick et al. 2018, eq. (22) |
//!
//! **One trait per capability.** The core, [`Mechanism`], is what every publishing mechanism has:
//! dimensions, payload, guarantee, record, input domain, and privatising rows
//! ([`Mechanism::privatise`], given the global index of the first row so that per-row public maps
//! can be regenerated). The central mechanisms add the [`Sketch`] capability (one public map,
//! an inner-product estimator, a norm floor), reached through [`Mechanism::sketch`]; the local
//! ones add the server side, [`LocalDecoder`] (decoding, the accumulator, the closed-form error),
//! reached through [`Mechanism::local`]. A capability a mechanism lacks is `None`, or a clear
//! error through [`Mechanism::as_sketch`], never a silent default. The kinds' properties are one
//! table, [`KIND_TABLE`]; each family rebuilds itself from a release's record
//! ([`from_record`]) without going back through publish parameters.
//!
//! **Distributed DP under secure aggregation** (`dprp aggregate`) is deliberately *not* behind
//! this trait: a client's single message carries only a small share of the noise and is not
//! private on its own, so it must never become a release; only the secure sum is private. Its
//! encoders implement [`distributed::ClientEncoder`], driven only by the round:
//!
//! | name | file | algorithm |
//! |---|---|---|
//! | `ddg` | [`distributed::ddg`] | Kairouz et al. 2021 Algorithm 1 / Chen et al. 2022 Algorithm 6; privacy Theorem E.1 |
//! | `sketch-ddg` | [`distributed::sketch_ddg`] | Chen et al. 2022 Algorithm 2: count sketch, then DDG in m dimensions |
//! | `binomial` | [`distributed::binomial`] | Agarwal et al. 2018 (cpSGD) protocol π_sk; privacy Theorem 1 with Lemma 7 |

pub mod central;
pub mod distributed;
pub mod kind;
pub mod local;

use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::estimate::Estimator;
pub use crate::privacy::gaussian::GaussianCalibration;
use crate::privacy::guarantee::{Guarantee, InputDomain, Neighbour};
pub use crate::privacy::lattice::{NoiseChoice, NoiseMethod};
use crate::projection::{DenseKind, Seed};

pub use local::release::{LocalDecoder, LocalMap, LocalOptions, LocalRecord};

pub use central::gaussian_sketch::GaussianSketch;
pub use central::sign_sketch::{SignRecord, SignSketch};
pub use kind::{
    CentralFile, Home, KindProperties, LocalFile, LocalOption, MapClass, MechanismKind, KIND_TABLE,
};

/// What a release's payload holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Payload {
    /// `f32` row-major `n×k`.
    F32,
    /// Packed sign bits, `n×⌈k/64⌉` `u64` words (bit `j mod 64` of word `j/64`; 1 = positive).
    Bits,
}

impl Payload {
    /// What a row holds, in words: `values` or `signs`.
    pub fn noun(self) -> &'static str {
        match self {
            Payload::F32 => "values",
            Payload::Bits => "signs",
        }
    }
}

/// The public map applied before noise, as recorded in a release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ProjectionRecord {
    /// No projection: the row itself.
    Identity,
    /// Dense `W` with i.i.d. entries.
    Dense {
        /// Entry distribution.
        entries: DenseKind,
        /// Public seed (ChaCha20 key).
        seed: Seed,
        /// Randomness layout version (see [`crate::projection`]).
        layout: u32,
    },
    /// OPORP permutation + signs + bins.
    Oporp {
        /// Public seed (ChaCha20 key).
        seed: Seed,
        /// Randomness layout version (see [`crate::projection`]).
        layout: u32,
    },
    /// One public diagonal `D` for the release (stream 3 of this seed) and, for row `i`, a
    /// Hadamard row sample from [`Seed::for_row`]`(i)` (correlated FastProjUnit).
    Correlated {
        /// Public release seed.
        seed: Seed,
        /// Randomness layout version (see [`crate::projection`]).
        layout: u32,
    },
    /// One public map per row (ProjUnit): row `i` (counting from the release's first row id)
    /// uses the map of [`Seed::for_row`]`(i)` of this seed.
    PerRow {
        /// The map family.
        map: LocalMap,
        /// Public release seed.
        seed: Seed,
        /// Randomness layout version (see [`crate::projection`]).
        layout: u32,
    },
}

/// Everything a reader needs to know about the mechanism behind a release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MechanismRecord {
    /// Mechanism.
    pub name: MechanismKind,
    /// The algorithm and theorem it implements.
    pub algorithm: String,
    /// Input dimension p.
    pub p: usize,
    /// Output dimension k (values or bits per row).
    pub k: usize,
    /// The public map.
    pub projection: ProjectionRecord,
    /// Gaussian noise calibration, for noise mechanisms.
    pub gaussian: Option<GaussianCalibration>,
    /// Flip rule and its parameters, for sign mechanisms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign: Option<SignRecord>,
    /// The chosen constants and the server side, for local-DP mechanisms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalRecord>,
    /// How the Gaussian noise was drawn (Gaussian and iDP-Gaussian mechanisms): lattice or float
    /// ([`crate::privacy::lattice`]). Absent in releases written before dprp recorded it, which
    /// used the floating-point sampler: [`MechanismRecord::noise_method`] reads those as float.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<NoiseMethod>,
    /// How the public map is evaluated on private rows and what that costs
    /// ([`arithmetic`](central::arithmetic)); absent in releases written before dprp 0.3.0 (f32 evaluation) and for
    /// mechanisms without one public map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arithmetic: Option<central::arithmetic::ArithmeticRecord>,
}

impl MechanismRecord {
    /// The noise method of a mechanism that draws Gaussian noise (`None` for the others); a
    /// Gaussian release without the field is float (it predates lattice noise).
    pub fn noise_method(&self) -> Option<NoiseMethod> {
        let gaussian = self.name.adds_gaussian_noise();
        match &self.noise {
            Some(n) => Some(n.clone()),
            None if gaussian => Some(NoiseMethod::Float),
            None => None,
        }
    }
}

/// Parameters of a publish run, before the data is seen (except its dimension).
#[derive(Debug, Clone)]
pub struct MechanismParams {
    /// Which mechanism.
    pub kind: MechanismKind,
    /// ε > 0.
    pub epsilon: f64,
    /// δ ∈ (0,1), for mechanisms that need it.
    pub delta: Option<f64>,
    /// β > 0 of the neighbour relation.
    pub beta: f64,
    /// Neighbour relation.
    pub neighbour: Neighbour,
    /// Input dimension p.
    pub p: usize,
    /// Output dimension (required for projecting mechanisms).
    pub k: Option<usize>,
    /// Dense projection kind (default Rademacher).
    pub projection: Option<DenseKind>,
    /// Public seed (default: fresh from the OS).
    pub seed: Option<Seed>,
    /// Public lower bound ν on every row's ℓ₂ norm (`dp-signrp-rr`).
    pub min_norm: Option<f64>,
    /// The user accepts individual DP (required for the `idp-*` mechanisms).
    pub individual_dp: bool,
    /// Options of the local-DP mechanisms.
    pub local: LocalOptions,
}

impl MechanismParams {
    /// `kind` at `epsilon` with every other parameter at its default: no δ, β = 1, the family's
    /// neighbour relation (replace-one for local DP, one coordinate for the sketches), `p = 0`
    /// (taken from the input), and no k, map, seed (a fresh one is drawn), ν, individual DP or
    /// local option. [`crate::request::MechanismOptions::resolve`] starts from these; a caller
    /// sets what it chooses with struct-update syntax.
    pub fn of(kind: MechanismKind, epsilon: f64) -> MechanismParams {
        MechanismParams {
            kind,
            epsilon,
            delta: None,
            beta: 1.0,
            neighbour: if kind.is_local() {
                Neighbour::ReplaceOne
            } else {
                Neighbour::Coordinate
            },
            p: 0,
            k: None,
            projection: None,
            seed: None,
            min_norm: None,
            individual_dp: false,
            local: LocalOptions::default(),
        }
    }
}

/// Output buffer for a block of privatised rows.
pub enum SketchMut<'a> {
    /// `rows×k` floats.
    Real(&'a mut [f32]),
    /// `rows×⌈k/64⌉` words of packed signs.
    Bits(&'a mut [u64]),
}

/// A publishing mechanism.
pub trait Mechanism: Send + Sync {
    /// Which mechanism.
    fn kind(&self) -> MechanismKind;
    /// Input dimension p.
    fn input_dim(&self) -> usize;
    /// Output values (or bits) per row.
    fn output_dim(&self) -> usize;
    /// Payload element type.
    fn payload(&self) -> Payload;
    /// The guarantee each released row carries.
    fn guarantee(&self) -> Guarantee;
    /// The header record (projection seed, calibration, ...).
    fn record(&self) -> MechanismRecord;
    /// Privatise rows (row-major, `input_dim` each) into `out`, drawing all their secret noise
    /// from `rng`, in row order. `first_row` is the global index of the first row in the release
    /// (a mechanism with one public map per row regenerates row `first_row + i`'s map from it).
    /// The publishing paths call it one row at a time with that row's own generator (see
    /// [`privatise_rows`](Mechanism::privatise_rows)); several rows on one generator is for
    /// tests and audits that want many independent draws of one input.
    fn privatise(
        &self,
        rows: &[f32],
        first_row: u64,
        out: SketchMut<'_>,
        rng: &mut ChaCha20Rng,
    ) -> Result<()>;
    /// The inputs the mechanism accepts, checked row by row before privatising: the cube
    /// `[-1,1]^p` of DESIGN.md §2 unless the mechanism says otherwise.
    fn input_domain(&self) -> InputDomain {
        InputDomain::Cube
    }
    /// The sketch capability (one public map, an inner-product estimator) of the central
    /// mechanisms; `None` for the local ones.
    fn sketch(&self) -> Option<&dyn Sketch> {
        None
    }
    /// The server side of a local-DP mechanism (decoding rows, the mean, its error); `None` for
    /// the sketch mechanisms.
    fn local(&self) -> Option<&dyn LocalDecoder> {
        None
    }
    /// [`sketch`](Mechanism::sketch), or the error a user sees when they ask a local release for
    /// a public map or an inner product (its rows are per-user messages, decoded by
    /// [`local`](Mechanism::local)).
    fn as_sketch(&self) -> Result<&dyn Sketch> {
        self.sketch().ok_or_else(|| {
            Error::param(
                "release",
                format!(
                    "{} is a local-DP mechanism for mean estimation: its rows are per-user \
                     messages, not sketches with a public map and an inner-product estimator \
                     (use dprp mean)",
                    self.kind().name()
                ),
            )
        })
    }

    /// Privatise consecutive rows whose global ids are `first_row, first_row + 1, …`: row
    /// `first_row + i` draws its secret noise from [`NoiseSource::row_rng`]`(first_row + i)`
    /// alone (and, for mechanisms with one public map per row, uses the map of that id), so the
    /// output of a row depends on its content and its id only, never on how the rows were cut
    /// into calls. The result must equal calling [`privatise`](Mechanism::privatise) row by row
    /// with those generators; mechanisms override it to share work across rows (e.g. one larger
    /// matrix product).
    ///
    /// [`NoiseSource::row_rng`]: crate::privacy::samplers::noise::NoiseSource::row_rng
    fn privatise_rows(
        &self,
        rows: &[f32],
        out: SketchMut<'_>,
        first_row: u64,
        noise: &crate::privacy::samplers::noise::NoiseSource,
    ) -> Result<()> {
        let p = self.input_dim();
        match out {
            SketchMut::Real(out) => {
                let k = self.output_dim();
                for (i, (r, o)) in rows.chunks(p).zip(out.chunks_mut(k)).enumerate() {
                    let id = row_id(first_row, i)?;
                    let mut rng = noise.row_rng(id);
                    self.privatise(r, id, SketchMut::Real(o), &mut rng)?;
                }
            }
            SketchMut::Bits(out) => {
                let w = self.output_dim().div_ceil(64);
                for (i, (r, o)) in rows.chunks(p).zip(out.chunks_mut(w)).enumerate() {
                    let id = row_id(first_row, i)?;
                    let mut rng = noise.row_rng(id);
                    self.privatise(r, id, SketchMut::Bits(o), &mut rng)?;
                }
            }
        }
        Ok(())
    }

    /// [`privatise_rows`](Mechanism::privatise_rows), also reporting for each row how many
    /// output values could be perturbed (|A| for the iDP mechanisms; `output_dim` otherwise).
    fn privatise_rows_counted(
        &self,
        rows: &[f32],
        out: SketchMut<'_>,
        first_row: u64,
        noise: &crate::privacy::samplers::noise::NoiseSource,
        perturbed: &mut [u32],
    ) -> Result<()> {
        self.privatise_rows(rows, out, first_row, noise)?;
        perturbed.fill(self.output_dim() as u32);
        Ok(())
    }
}

/// The sketch capability of the central mechanisms: one public map, the same for every row, and
/// an unbiased inner-product estimator between released rows (DESIGN.md §3–4). A querier applies
/// the map to their own raw vectors and estimates against the release.
pub trait Sketch: Send + Sync {
    /// The noiseless public map (what a querier applies to its own raw vectors), row-major.
    fn project(&self, rows: &[f32], out: &mut [f32]) -> Result<()>;
    /// The estimator for inner products between released rows, with its variance formula.
    fn estimator(&self) -> Estimator;
    /// A public lower bound every row's ℓ₂ norm must meet (rows below it are refused):
    /// `dp-signrp-rr`'s ν (Proposition 4.4); `None` for the others.
    fn min_norm(&self) -> Option<f64> {
        None
    }
}

/// The id of row `i` of a batch starting at `first_row`: an error, never a wrap, past `u64::MAX`
/// (a wrapped id would give a row the noise stream and public map of another).
pub fn row_id(first_row: u64, i: usize) -> Result<u64> {
    first_row.checked_add(i as u64).ok_or_else(|| {
        Error::param(
            "first row",
            format!("row ids {first_row} + {i} overflow 64 bits"),
        )
    })
}

/// Build the mechanism for a publish run, with the default noise (lattice, see
/// [`crate::privacy::lattice`]).
pub fn build(params: &MechanismParams) -> Result<Box<dyn Mechanism>> {
    build_with(params, NoiseChoice::default())
}

/// [`build`] with a chosen noise method for the Gaussian mechanisms (the others draw no Gaussian
/// noise and ignore it).
pub fn build_with(params: &MechanismParams, noise: NoiseChoice) -> Result<Box<dyn Mechanism>> {
    crate::privacy::guarantee::check_epsilon(params.epsilon)?;
    let file = match params.kind.home() {
        Home::Local(_) => return Ok(Box::new(local::release::build(params)?)),
        Home::Central(file) => file,
    };
    params.local.refuse_for(params.kind)?;
    crate::privacy::guarantee::check_beta(params.beta)?;
    if params.kind.needs_delta() {
        let d = params.delta.ok_or_else(|| {
            Error::missing(
                "‹delta›",
                format!("{} gives (ε,δ)-DP and needs δ", params.kind.name()),
            )
        })?;
        crate::privacy::guarantee::check_delta(d)?;
    }
    if params.p == 0 {
        return Err(Error::param("input", "the data has no features (p = 0)"));
    }
    if !params.kind.dense() && params.projection.is_some() {
        return Err(Error::param(
            "‹projection›",
            format!(
                "{} does not use a dense projection; ‹projection› applies to dp-rp-g, dp-rp-g-opt, \
                 dp-signrp-* and idp-signrp-*",
                params.kind.name()
            ),
        ));
    }
    if params.kind.is_idp() && !params.individual_dp {
        return Err(Error::missing(
            "‹individual_dp›",
            format!(
                "{} gives only individual DP, which protects the neighbours of this exact dataset \
                 rather than every pair of neighbouring datasets; pass ‹individual_dp› to accept \
                 that weaker guarantee",
                params.kind.name()
            ),
        ));
    }
    if let Some(nu) = params.min_norm {
        if !(nu.is_finite() && nu > 0.0) {
            return Err(Error::param(
                "‹min_norm›",
                format!("the norm lower bound must be a positive finite number, got {nu}"),
            ));
        }
    }
    let seed = match params.seed {
        Some(s) => s,
        None => Seed::random()?,
    };
    let k = if params.kind.projects() {
        let k = params.k.ok_or_else(|| {
            Error::missing(
                "‹k›",
                format!("{} needs the sketch width k", params.kind.name()),
            )
        })?;
        if k == 0 {
            return Err(Error::param("‹k›", "k must be at least 1"));
        }
        k
    } else {
        match params.k {
            Some(k) if k != params.p => {
                return Err(Error::param(
                    "‹k›",
                    format!(
                        "raw-g-opt releases all p = {} coordinates; drop ‹k› (got {k})",
                        params.p
                    ),
                ))
            }
            _ => params.p,
        }
    };
    central::build(file, params, k, seed, noise)
}

/// Rebuild the mechanism (with its public projection regenerated from the seed) from a release's
/// record, e.g. to project raw queries or to check a release.
pub fn from_record(record: &MechanismRecord, guarantee: &Guarantee) -> Result<Box<dyn Mechanism>> {
    match record.name.home() {
        Home::Central(file) => central::from_record(file, record, guarantee),
        Home::Local(_) => Ok(Box::new(local::release::LocalSketch::from_record(
            record, guarantee,
        )?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lists messages give are read from the table, in declaration order.
    #[test]
    fn names_where_lists_the_table_rows() {
        assert_eq!(
            MechanismKind::names_where(MechanismKind::is_gaussian_sketch),
            "raw-g-opt, dp-rp-g, dp-rp-g-opt, dp-oporp"
        );
        assert_eq!(
            MechanismKind::names_where(|k| k.adds_gaussian_noise()),
            "raw-g-opt, dp-rp-g, dp-rp-g-opt, dp-oporp, idp-signrp-g, idp-signoporp-g"
        );
        assert_eq!(MechanismKind::names_where(|_| false), "");
    }

    /// `KIND_TABLE` is indexed by the discriminant: each row's name is the kind's serde name, the
    /// 20 names are distinct, and `all()` lists every kind once. A reordered enum or table fails.
    #[test]
    fn kind_table_is_in_declaration_order() {
        let kinds: Vec<MechanismKind> = MechanismKind::all().collect();
        assert_eq!(kinds.len(), KIND_TABLE.len());
        let mut names = std::collections::BTreeSet::new();
        for k in kinds {
            let serde_name = serde_json::to_string(&k).unwrap();
            assert_eq!(serde_name, format!("\"{}\"", k.name()), "{k:?}");
            assert_eq!(MechanismKind::parse(k.name()).unwrap(), k);
            names.insert(k.name());
            // the properties the table encodes agree with each other
            let p = k.properties();
            assert!(
                !(p.local && (p.signs || p.needs_delta || p.gaussian)),
                "{k:?}"
            );
            assert_eq!(p.map == MapClass::PerRow, p.local && p.projects, "{k:?}");
            assert_eq!(k.is_idp(), k.name().starts_with("idp-"), "{k:?}");
            assert_eq!(k.oporp(), k.name().contains("oporp"), "{k:?}");
        }
        assert_eq!(names.len(), 20);
    }

    /// The table's `unit_ball` and `takes` columns are what the mechanisms do: a local kind built
    /// with the options it takes (and only those) reports the unit ball as its domain exactly
    /// when its row says so, and each option it does not take is refused. Power: the refusal of
    /// an option a kind takes would fail the build of that kind.
    #[test]
    fn unit_ball_and_local_options_match_the_mechanisms() {
        for kind in MechanismKind::LOCAL {
            let mut p = params(kind, 2.0, kind.projects().then_some(4));
            p.delta = None;
            p.neighbour = Neighbour::ReplaceOne;
            p.p = if kind.home() == Home::Local(LocalFile::ScalarDp) {
                1
            } else {
                8
            };
            p.local.epsilon_norm = kind.takes(LocalOption::EpsilonNorm).then_some(0.5);
            p.local.radius = kind.takes(LocalOption::Radius).then_some(2.0);
            p.local.map = kind.takes(LocalOption::Map).then_some(LocalMap::Rotation);
            let domain = build(&p).unwrap().guarantee().local.unwrap().domain;
            assert_eq!(
                kind.on_unit_ball(),
                domain == InputDomain::Ball { radius: 1.0 },
                "{kind:?}: {domain:?}"
            );
            for option in [
                LocalOption::Map,
                LocalOption::EpsilonNorm,
                LocalOption::Radius,
            ] {
                if kind.takes(option) {
                    continue;
                }
                let mut q = p.clone();
                match option {
                    LocalOption::Map => q.local.map = Some(LocalMap::Gaussian),
                    LocalOption::EpsilonNorm => q.local.epsilon_norm = Some(0.5),
                    LocalOption::Radius => q.local.radius = Some(2.0),
                }
                assert!(build(&q).is_err(), "{kind:?} took {option:?}");
            }
        }
    }

    /// Each kind's row names the file that implements it: one local file per local kind, every
    /// central file used, and `build` makes a mechanism of the kind it was asked for (a row
    /// pointing at another kind's file would build that kind). Power: a table with two local
    /// kinds on one file fails the first check.
    #[test]
    fn each_kind_names_its_file() {
        let (mut local, mut central) = (Vec::new(), Vec::new());
        for k in MechanismKind::all() {
            match k.home() {
                Home::Local(f) => local.push(f),
                Home::Central(f) => central.push(f),
            }
        }
        assert_eq!(local.len(), MechanismKind::LOCAL.len());
        let distinct = |files: &[LocalFile]| {
            files
                .iter()
                .enumerate()
                .all(|(i, f)| !files[..i].contains(f))
        };
        assert!(distinct(&local));
        assert!(!distinct(&[
            LocalFile::Duchi,
            LocalFile::PrivUnit2,
            LocalFile::Duchi
        ]));
        for f in [
            CentralFile::RawGaussian,
            CentralFile::DpRp,
            CentralFile::DpOporp,
            CentralFile::SignRr,
            CentralFile::SmoothFlipping,
            CentralFile::IdpSign,
        ] {
            assert!(central.contains(&f), "{f:?} implements no kind");
        }
        for kind in MechanismKind::SKETCH {
            let mut p = params(kind, 2.0, kind.projects().then_some(8));
            p.min_norm = kind.needs_min_norm().then_some(0.5);
            p.individual_dp = kind.is_idp();
            p.seed = Some(Seed::parse_hex("5eed").unwrap());
            assert_eq!(build(&p).unwrap().kind(), kind);
        }
    }
    use crate::privacy::gaussian::{analytic_sigma, classical_sigma, gaussian_delta};

    fn params(kind: MechanismKind, eps: f64, k: Option<usize>) -> MechanismParams {
        MechanismParams {
            kind,
            epsilon: eps,
            delta: Some(1e-6),
            beta: 1.0,
            neighbour: Neighbour::Coordinate,
            p: 100,
            k,
            projection: None,
            seed: Some(Seed::parse_hex("7").unwrap()),
            min_norm: None,
            individual_dp: false,
            local: LocalOptions::default(),
        }
    }

    #[test]
    fn calibration_comes_from_the_actual_sensitivity() {
        for (kind, k, proj) in [
            (MechanismKind::RawGOpt, None, None),
            (MechanismKind::DpOporp, Some(20), None),
            (MechanismKind::DpRpGOpt, Some(20), None),
            (MechanismKind::DpRpGOpt, Some(20), Some(DenseKind::Gaussian)),
            (MechanismKind::DpRpG, Some(20), Some(DenseKind::Uniform)),
        ] {
            let mut p = params(kind, 2.0, k);
            p.projection = proj;
            p.beta = 0.5;
            let m = build_with(&p, NoiseChoice::Float).unwrap();
            let cal = m.record().gaussian.unwrap();
            assert_eq!(m.record().noise, Some(NoiseMethod::Float));
            let expect = if kind == MechanismKind::DpRpG {
                classical_sigma(cal.sensitivity, 2.0, 1e-6).unwrap()
            } else {
                analytic_sigma(cal.sensitivity, 2.0, 1e-6).unwrap()
            };
            assert_eq!(cal.sigma, expect, "{kind:?}");
            if kind == MechanismKind::DpRpGOpt && proj.is_none() {
                // Rademacher: inputs on the grid 2^-13 (≤ β/4096), Δ₂ = β + 2^-13
                let want = 0.5 + 2f64.powi(-13);
                assert!(
                    cal.sensitivity >= want && cal.sensitivity < want * (1.0 + 1e-11),
                    "{kind:?}: Δ₂ = {}",
                    cal.sensitivity
                );
            } else if proj.is_none() {
                // raw: Δ₂ = β; OPORP: Δ₂ = β plus 2E ≈ 10⁻¹⁵ for its f64 bin sums
                assert!(
                    cal.sensitivity >= 0.5 && cal.sensitivity < 0.5 * (1.0 + 1e-11),
                    "{kind:?}: Δ₂ = {} for β",
                    cal.sensitivity
                );
            } else {
                assert!(cal.sensitivity > 0.5, "{kind:?} {proj:?}: Δ₂ > β");
            }
        }
    }

    /// The kind-level guarantee (used by reports) is what every built mechanism states; a kind
    /// wrongly listed (e.g. an iDP mechanism reported as DP) fails here.
    #[test]
    fn guarantee_kind_matches_every_built_mechanism() {
        for kind in MechanismKind::SKETCH {
            for (k, proj) in [(Some(20), None), (Some(20), Some(DenseKind::Gaussian))] {
                if proj.is_some() && !kind.dense() {
                    continue;
                }
                let mut p = params(kind, 2.0, k.filter(|_| kind.projects()));
                p.projection = proj;
                p.min_norm = Some(1.0);
                p.individual_dp = true;
                let m = build(&p).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
                assert!(m.sketch().is_some() && m.local().is_none(), "{kind:?}");
                assert_eq!(
                    m.guarantee().kind,
                    kind.guarantee_kind(),
                    "{kind:?} {proj:?}"
                );
            }
        }
        assert_eq!(MechanismKind::IdpSignrpG.guarantee_kind().short(), "iDP");
        assert_eq!(MechanismKind::DpSignoporpRr.guarantee_kind().short(), "DP");
        assert_eq!(MechanismKind::DpOporp.guarantee_kind().short(), "DP");
    }

    #[test]
    fn classical_sigma_outside_its_theorem_states_the_delta_it_achieves() {
        // ε = 10: the classical σ (0.5299) is below the analytic one (0.5411), so it cannot give
        // δ = 1e-6; the guarantee must state the exact, larger δ.
        let m = build_with(
            &params(MechanismKind::DpRpG, 10.0, Some(10)),
            NoiseChoice::Float,
        )
        .unwrap();
        let g = m.guarantee();
        let cal = m.record().gaussian.unwrap();
        let d = g.delta.unwrap();
        assert!(d > 1e-6, "{d}");
        assert_eq!(d, gaussian_delta(cal.sigma, cal.sensitivity, 10.0));
        // lattice noise: the δ of the continuous twin at (Δ_r, ε₀), times c^k
        let m = build(&params(MechanismKind::DpRpG, 10.0, Some(10))).unwrap();
        let rec = m.record();
        let (cal, Some(NoiseMethod::Lattice(l))) = (rec.gaussian.unwrap(), rec.noise) else {
            panic!("lattice noise is the default")
        };
        let twin = gaussian_delta(l.sigma_c.unwrap(), l.sensitivity_r.unwrap(), l.epsilon0);
        assert!(m.guarantee().delta.unwrap() >= twin * (l.log_c * 10.0).exp());
        assert_eq!(m.guarantee().delta, Some(cal.delta_exact));
        // ε = 0.5: inside the theorem, the requested δ holds.
        let m = build(&params(MechanismKind::DpRpG, 0.5, Some(10))).unwrap();
        assert_eq!(m.guarantee().delta, Some(1e-6));
        assert!(m.record().gaussian.unwrap().delta_exact <= 1e-6);
    }

    #[test]
    fn bad_parameters_are_rejected_with_the_option_named() {
        let cases: Vec<(MechanismParams, &str)> = vec![
            (params(MechanismKind::DpOporp, 0.0, Some(5)), "--epsilon"),
            (
                params(MechanismKind::DpOporp, f64::NAN, Some(5)),
                "--epsilon",
            ),
            (
                params(MechanismKind::DpOporp, f64::INFINITY, Some(5)),
                "--epsilon",
            ),
            (params(MechanismKind::DpOporp, 1.0, Some(0)), "--k"),
            (params(MechanismKind::DpOporp, 1.0, Some(101)), "k ≤ p"),
            (params(MechanismKind::DpOporp, 1.0, None), "--k"),
            (params(MechanismKind::RawGOpt, 1.0, Some(5)), "--k"),
            (
                MechanismParams {
                    delta: None,
                    ..params(MechanismKind::DpRpGOpt, 1.0, Some(5))
                },
                "--delta",
            ),
            (
                MechanismParams {
                    delta: Some(1.0),
                    ..params(MechanismKind::DpRpGOpt, 1.0, Some(5))
                },
                "--delta",
            ),
            (
                MechanismParams {
                    beta: 0.0,
                    ..params(MechanismKind::DpRpGOpt, 1.0, Some(5))
                },
                "--beta",
            ),
            (
                MechanismParams {
                    projection: Some(DenseKind::Gaussian),
                    ..params(MechanismKind::DpOporp, 1.0, Some(5))
                },
                "--projection",
            ),
        ];
        for (p, what) in cases {
            let e = build(&p)
                .err()
                .expect("accepted bad parameters")
                .render(crate::error::Front::Cli);
            assert!(e.contains(what), "expected {what} in {e}");
        }
        assert!(MechanismKind::parse("dp-magic").is_err());
    }
}
