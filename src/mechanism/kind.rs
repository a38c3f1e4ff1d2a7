//! The mechanism kinds and what distinguishes them, in one table ([`KIND_TABLE`]): the command
//! line name, the family (local or central), the payload, the parameters a kind needs and its
//! public map. The property methods of [`MechanismKind`] read that table.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::privacy::guarantee::GuaranteeKind;

/// Every mechanism dprp can publish with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MechanismKind {
    /// Gaussian noise on the raw `p` coordinates, analytic σ, `Δ₂ = β`.
    RawGOpt,
    /// Dense random projection + Gaussian noise, classical σ.
    DpRpG,
    /// Dense random projection + Gaussian noise, analytic σ.
    DpRpGOpt,
    /// OPORP + Gaussian noise, analytic σ, `Δ₂ = β`.
    DpOporp,
    /// Signs of a dense projection, randomised response with `ε/N₊` per sign.
    DpSignrpRr,
    /// Signs of a dense projection, smooth flipping with `ε' = ε/k`.
    DpSignrpRrSmooth,
    /// Signs of OPORP, randomised response with `ε` per sign (`N₊ = 1`).
    DpSignoporpRr,
    /// Signs of OPORP, smooth flipping with `ε' = ε`.
    DpSignoporpRrSmooth,
    /// Individual DP: Gaussian noise on the noise set `A` of a dense projection, then signs.
    IdpSignrpG,
    /// Individual DP: randomised response on the noise set `A` of a dense projection.
    IdpSignrpRr,
    /// Individual DP: Gaussian noise on the noise set `A` of OPORP bins, then signs.
    IdpSignoporpG,
    /// Individual DP: randomised response on the noise set `A` of OPORP bins.
    IdpSignoporpRr,
    /// Local DP: PrivUnit2 on the unit ball.
    Privunit2,
    /// Local DP: the Duchi et al. hemisphere mechanism (PrivUnit2 with γ = 0).
    Duchi,
    /// Local DP: PrivUnitG on the unit ball.
    Privunitg,
    /// Local DP: ProjUnit — a public per-row projection to `k` dimensions, then PrivUnitG.
    Projunit,
    /// Local DP: ScalarDP on `[0, R]` (one value per row).
    ScalarDp,
    /// Local DP: PrivUnit2 for the direction × ScalarDP for the norm, ball of radius `R`.
    Privunit2Norm,
    /// Local DP: correlated FastProjUnit — one public diagonal for all rows, a public row sample
    /// per row; the server decodes with one transform.
    ProjunitCorrelated,
    /// Local DP: PrivUnitInf on the cube `[-1,1]^d`.
    PrivunitInf,
}

impl MechanismKind {
    /// Every mechanism: the sketch mechanisms, then the local-DP ones.
    pub fn all() -> impl Iterator<Item = MechanismKind> {
        Self::SKETCH.into_iter().chain(Self::LOCAL)
    }

    /// The names of the local-DP mechanisms, comma-separated (for messages: never a stale list).
    pub fn local_names() -> String {
        Self::LOCAL.map(|k| k.name()).join(", ")
    }

    /// The names of the kinds with a property of the table, comma-separated in declaration order
    /// (for messages: never a stale list).
    pub fn names_where(property: impl Fn(&MechanismKind) -> bool) -> String {
        Self::all()
            .filter(|k| property(k))
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether the mechanism is a real-valued Gaussian sketch (neither local nor signs).
    pub fn is_gaussian_sketch(&self) -> bool {
        !self.is_local() && !self.is_sign()
    }

    /// The local-DP mechanisms for mean estimation (MECHANISMS-LDP.md §A–C).
    pub const LOCAL: [MechanismKind; 8] = [
        MechanismKind::Privunit2,
        MechanismKind::Duchi,
        MechanismKind::Privunitg,
        MechanismKind::Projunit,
        MechanismKind::ProjunitCorrelated,
        MechanismKind::ScalarDp,
        MechanismKind::Privunit2Norm,
        MechanismKind::PrivunitInf,
    ];

    /// The sketch mechanisms, in the order of DESIGN.md §5.
    pub const SKETCH: [MechanismKind; 12] = [
        MechanismKind::RawGOpt,
        MechanismKind::DpRpG,
        MechanismKind::DpRpGOpt,
        MechanismKind::DpOporp,
        MechanismKind::DpSignrpRr,
        MechanismKind::DpSignrpRrSmooth,
        MechanismKind::DpSignoporpRr,
        MechanismKind::DpSignoporpRrSmooth,
        MechanismKind::IdpSignrpG,
        MechanismKind::IdpSignrpRr,
        MechanismKind::IdpSignoporpG,
        MechanismKind::IdpSignoporpRr,
    ];

    /// The kind's properties, one row of [`KIND_TABLE`].
    pub fn properties(self) -> &'static KindProperties {
        &KIND_TABLE[self as usize]
    }

    /// The command-line name.
    pub fn name(&self) -> &'static str {
        self.properties().name
    }

    /// Parse a command-line name.
    pub fn parse(s: &str) -> Result<MechanismKind> {
        let t = s.to_ascii_lowercase();
        MechanismKind::all().find(|m| m.name() == t).ok_or_else(|| {
            let names: Vec<&str> = MechanismKind::all().map(|m| m.name()).collect();
            Error::param(
                "‹mechanism›",
                format!(
                    "unknown mechanism '{s}' (expected one of: {})",
                    names.join(", ")
                ),
            )
        })
    }

    /// Whether the mechanism needs δ.
    pub fn needs_delta(&self) -> bool {
        self.properties().needs_delta
    }

    /// Whether the release holds sign bits.
    pub fn is_sign(&self) -> bool {
        self.properties().signs
    }

    /// Whether the mechanism is a local randomiser (local DP, replace-one; mean estimation).
    pub fn is_local(&self) -> bool {
        self.properties().local
    }

    /// Whether the mechanism gives only individual DP.
    pub fn is_idp(&self) -> bool {
        self.properties().individual
    }

    /// Whether the mechanism adds Gaussian noise (and so has a lattice or float sampler to choose).
    pub fn adds_gaussian_noise(self) -> bool {
        self.properties().gaussian
    }

    /// The kind of guarantee the mechanism's releases carry, from its properties: individual DP
    /// for the `idp-*` mechanisms, else (ε, δ)-DP when it needs δ, else pure ε-DP. It equals
    /// `guarantee().kind` of every mechanism [`super::build`] makes of this kind (tested), and lets a
    /// report name the guarantee of a setting that could not be built.
    pub fn guarantee_kind(&self) -> GuaranteeKind {
        if self.is_local() {
            GuaranteeKind::LocalDp
        } else if self.is_idp() {
            GuaranteeKind::IndividualDp
        } else if self.needs_delta() {
            GuaranteeKind::ApproxDp
        } else {
            GuaranteeKind::PureDp
        }
    }

    /// Whether the mechanism needs a public lower bound on row norms (`--min-norm`).
    pub fn needs_min_norm(&self) -> bool {
        self.properties().min_norm
    }

    /// Whether the public map is OPORP.
    pub fn oporp(&self) -> bool {
        self.properties().map == MapClass::Oporp
    }

    /// Whether `--k` applies (a projection), as opposed to releasing all `p` coordinates.
    pub fn projects(&self) -> bool {
        self.properties().projects
    }

    /// Whether the kind takes a local option (`‹projection›`'s map, `‹epsilon_norm›`,
    /// `‹radius›`).
    pub fn takes(self, option: LocalOption) -> bool {
        self.properties().takes.contains(&option)
    }

    /// Whether its rows are vectors of the unit ball.
    pub fn on_unit_ball(self) -> bool {
        self.properties().unit_ball
    }

    /// The file that implements the kind.
    pub fn home(self) -> Home {
        self.properties().home
    }

    /// Whether `--projection` applies (a dense projection of selectable kind).
    pub fn dense(&self) -> bool {
        self.properties().map == MapClass::Dense
    }
}

/// The public map a kind applies before its randomiser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapClass {
    /// None: the row itself (`raw-g-opt`, and the local mechanisms without a projection).
    Identity,
    /// A dense random projection of selectable entries (`--projection`).
    Dense,
    /// OPORP.
    Oporp,
    /// ProjUnit's public per-row maps (`--projection` names the family).
    PerRow,
}

/// An option that only some local mechanisms take: a column of [`KIND_TABLE`], from which the
/// refusals of the others (`local::release`) and the audit's defaults are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalOption {
    /// ProjUnit's public map (`‹projection›`).
    Map,
    /// The norm's budget ε₂ (`‹epsilon_norm›`).
    EpsilonNorm,
    /// The public radius `R` of the input ball or interval (`‹radius›`).
    Radius,
}

/// The file that implements a kind: what the one dispatch of its family matches on (`build` and
/// `from_record` in `central/mod.rs` for a central sketch, `algorithm` in `local/mod.rs` for a
/// local randomiser). Each family's match names only its own files, so a new kind is placed by
/// its row here and an arm in its family's `mod.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Home {
    /// A central sketch (`central/`).
    Central(CentralFile),
    /// A local randomiser (`local/`).
    Local(LocalFile),
}

/// The files of the central sketches (`src/mechanism/central/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CentralFile {
    /// `raw_gaussian.rs`.
    RawGaussian,
    /// `dp_rp.rs`.
    DpRp,
    /// `dp_oporp.rs`.
    DpOporp,
    /// `sign_rr.rs`.
    SignRr,
    /// `smooth_flipping.rs`.
    SmoothFlipping,
    /// `idp_sign.rs`.
    IdpSign,
}

/// The local randomisers (`src/mechanism/local/`), one per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalFile {
    /// PrivUnit2 (`privunit2.rs`).
    PrivUnit2,
    /// Duchi et al. (`privunit2.rs`, PrivUnit2 with γ = 0).
    Duchi,
    /// PrivUnitG (`privunitg.rs`).
    PrivUnitG,
    /// ProjUnit (`projunit.rs`).
    ProjUnit,
    /// Correlated FastProjUnit (`projunit_correlated.rs`).
    ProjUnitCorrelated,
    /// ScalarDP (`scalar.rs`).
    ScalarDp,
    /// PrivUnit2 × ScalarDP (`composite.rs`).
    PrivUnit2Norm,
    /// PrivUnitInf (`privunit_inf.rs`).
    PrivUnitInf,
}

/// What distinguishes one mechanism kind from another, in one place ([`KIND_TABLE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindProperties {
    /// The command-line name.
    pub name: &'static str,
    /// A local randomiser (local DP, replace-one neighbours; mean estimation).
    pub local: bool,
    /// The release holds sign bits.
    pub signs: bool,
    /// The guarantee has a δ (the mechanism needs `--delta`).
    pub needs_delta: bool,
    /// Only individual DP (`--individual-dp`).
    pub individual: bool,
    /// Needs a public lower bound on row norms (`--min-norm`).
    pub min_norm: bool,
    /// Draws Gaussian noise (lattice or float, `--noise`).
    pub gaussian: bool,
    /// `--k` applies.
    pub projects: bool,
    /// The public map.
    pub map: MapClass,
    /// The file that implements it.
    pub home: Home,
    /// Its rows are vectors of the unit ball (the direction mechanisms; not ScalarDP's interval,
    /// PrivUnit2 × ScalarDP's ball of radius R or PrivUnitInf's cube).
    pub unit_ball: bool,
    /// The local options it takes.
    pub takes: &'static [LocalOption],
}

const fn props(
    name: &'static str,
    flags: [bool; 7],
    map: MapClass,
    home: Home,
    takes: &'static [LocalOption],
) -> KindProperties {
    let [signs, needs_delta, individual, min_norm, gaussian, projects, unit_ball] = flags;
    KindProperties {
        name,
        local: matches!(home, Home::Local(_)),
        signs,
        needs_delta,
        individual,
        min_norm,
        gaussian,
        projects,
        map,
        home,
        unit_ball,
        takes,
    }
}

/// The properties of every kind, in the declaration order of [`MechanismKind`] (the index is the
/// discriminant; `kind_table_is_in_declaration_order` checks the names). Columns of the flags:
/// signs, needs δ, individual DP, needs `--min-norm`, Gaussian noise, `--k` applies, rows on the
/// unit ball; then the public map, the file (which also says local or central) and the local
/// options it takes.
#[rustfmt::skip]
pub const KIND_TABLE: [KindProperties; 20] = {
    use CentralFile::{DpOporp, DpRp, IdpSign, RawGaussian, SignRr, SmoothFlipping};
    use Home::{Central, Local};
    use LocalFile::{Duchi, PrivUnit2, PrivUnit2Norm, PrivUnitG, PrivUnitInf, ProjUnit};
    use LocalFile::{ProjUnitCorrelated, ScalarDp};
    use LocalOption::{EpsilonNorm, Map, Radius};
    use MapClass::{Dense, Identity, Oporp, PerRow};
    const F: bool = false;
    const T: bool = true;
    [
        props("raw-g-opt",              [F, T, F, F, T, F, F], Identity, Central(RawGaussian),       &[]),
        props("dp-rp-g",                [F, T, F, F, T, T, F], Dense,    Central(DpRp),              &[]),
        props("dp-rp-g-opt",            [F, T, F, F, T, T, F], Dense,    Central(DpRp),              &[]),
        props("dp-oporp",               [F, T, F, F, T, T, F], Oporp,    Central(DpOporp),           &[]),
        props("dp-signrp-rr",           [T, T, F, T, F, T, F], Dense,    Central(SignRr),            &[]),
        props("dp-signrp-rr-smooth",    [T, F, F, F, F, T, F], Dense,    Central(SmoothFlipping),    &[]),
        props("dp-signoporp-rr",        [T, F, F, F, F, T, F], Oporp,    Central(SignRr),            &[]),
        props("dp-signoporp-rr-smooth", [T, F, F, F, F, T, F], Oporp,    Central(SmoothFlipping),    &[]),
        props("idp-signrp-g",           [T, T, T, F, T, T, F], Dense,    Central(IdpSign),           &[]),
        props("idp-signrp-rr",          [T, F, T, F, F, T, F], Dense,    Central(IdpSign),           &[]),
        props("idp-signoporp-g",        [T, T, T, F, T, T, F], Oporp,    Central(IdpSign),           &[]),
        props("idp-signoporp-rr",       [T, F, T, F, F, T, F], Oporp,    Central(IdpSign),           &[]),
        props("privunit2",              [F, F, F, F, F, F, T], Identity, Local(PrivUnit2),           &[]),
        props("duchi",                  [F, F, F, F, F, F, T], Identity, Local(Duchi),               &[]),
        props("privunitg",              [F, F, F, F, F, F, T], Identity, Local(PrivUnitG),           &[]),
        props("projunit",               [F, F, F, F, F, T, T], PerRow,   Local(ProjUnit),            &[Map]),
        props("scalar-dp",              [F, F, F, F, F, F, F], Identity, Local(ScalarDp),            &[Radius]),
        props("privunit2-norm",         [F, F, F, F, F, F, F], Identity, Local(PrivUnit2Norm),       &[EpsilonNorm, Radius]),
        props("projunit-correlated",    [F, F, F, F, F, T, T], PerRow,   Local(ProjUnitCorrelated),  &[]),
        props("privunit-inf",           [F, F, F, F, F, F, F], Identity, Local(PrivUnitInf),         &[]),
    ]
};
