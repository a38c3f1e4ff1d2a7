//! The experiment grid shared by the evaluations: which mechanisms (with their projection kind),
//! which ε and k, how seeds are derived, and running the settings in parallel with progress.
//!
//! Evaluation is a simulation, not a release: every projection seed and noise key is derived from
//! one master seed (recorded in the report), so a report can be reproduced exactly. A fresh master
//! seed is drawn from the operating system unless one is given.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rayon::prelude::*;

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::mechanism::central::sign_sketch::pack_signs;
use crate::mechanism::{
    build, LocalMap, LocalOption, LocalOptions, Mechanism, MechanismKind, MechanismParams,
};
use crate::privacy::guarantee::{GuaranteeKind, Neighbour};
use crate::privacy::samplers::noise::NoiseSource;
use crate::projection::{DenseKind, DenseProjection, Oporp, Seed};
use crate::publish::Sketches;

/// A mechanism as named on the command line: `name` or `name:projection` (dense kinds, e.g.
/// `dp-rp-g-opt:gaussian`, and ProjUnit's public map, e.g. `projunit:rotation`).
#[derive(Debug, Clone, PartialEq)]
pub struct MechanismSpec {
    /// The label used in reports.
    pub label: String,
    /// The mechanism.
    pub kind: MechanismKind,
    /// The dense projection kind, when not the default (Rademacher).
    pub projection: Option<DenseKind>,
    /// ProjUnit's public map, when not the default (SRHT).
    pub local_map: Option<LocalMap>,
}

/// The local-DP mechanisms `eval retrieval` compares (`local` in `--mechanisms`): those whose
/// decoded rows estimate the row's direction. `scalar-dp` (one number per row) and
/// `privunit2-norm` (whose norm part carries nothing once rows are unit vectors) are refused.
pub const LOCAL_RETRIEVAL: [MechanismKind; 6] = [
    MechanismKind::Privunit2,
    MechanismKind::Duchi,
    MechanismKind::Privunitg,
    MechanismKind::Projunit,
    MechanismKind::ProjunitCorrelated,
    MechanismKind::PrivunitInf,
];

impl MechanismSpec {
    /// Parse `name[:projection]`.
    pub fn parse(s: &str) -> Result<MechanismSpec> {
        let s = s.trim();
        let (name, proj) = match s.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (s, None),
        };
        let kind = MechanismKind::parse(name)?;
        if kind.is_local() {
            if !LOCAL_RETRIEVAL.contains(&kind) {
                return Err(Error::param(
                    "‹mechanisms›",
                    format!(
                        "'{s}' does not estimate a row's direction (scalar-dp releases one \
                         number; privunit2-norm's norm part carries nothing once rows are unit \
                         vectors: use privunit2)"
                    ),
                ));
            }
            let local_map = match proj {
                Some(p) if kind.takes(LocalOption::Map) => Some(LocalMap::parse(p)?),
                Some(_) => {
                    return Err(Error::param(
                        "‹mechanisms›",
                        format!(
                            "'{s}': among the local mechanisms only projunit takes a map \
                             (rotation, gaussian, srht, srht-nearly-unbiased)"
                        ),
                    ))
                }
                None => None,
            };
            return Ok(MechanismSpec {
                label: s.to_ascii_lowercase(),
                kind,
                projection: None,
                local_map,
            });
        }
        let projection = proj.map(DenseKind::parse).transpose()?;
        if projection.is_some() && !kind.dense() {
            return Err(Error::param(
                "‹mechanisms›",
                format!("'{s}': only dense-projection mechanisms take a projection kind"),
            ));
        }
        Ok(MechanismSpec {
            label: s.to_ascii_lowercase(),
            kind,
            projection,
            local_map: None,
        })
    }

    /// Parse a comma-separated list; `all` stands for every sketch mechanism (default
    /// projections), `local` for every local-DP mechanism of [`LOCAL_RETRIEVAL`].
    pub fn parse_list(s: &str) -> Result<Vec<MechanismSpec>> {
        let mut out: Vec<MechanismSpec> = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if part.eq_ignore_ascii_case("all") {
                for kind in MechanismKind::SKETCH {
                    out.push(MechanismSpec::parse(kind.name())?);
                }
            } else if part.eq_ignore_ascii_case("local") {
                for kind in LOCAL_RETRIEVAL {
                    out.push(MechanismSpec::parse(kind.name())?);
                }
            } else {
                out.push(MechanismSpec::parse(part)?);
            }
        }
        out.dedup_by(|a, b| a.label == b.label);
        if out.is_empty() {
            return Err(Error::param("‹mechanisms›", "no mechanism given"));
        }
        Ok(out)
    }
}

/// Refuse local-DP mechanisms where an evaluation has no meaning for them (`eval svm`: a user's
/// privatised vector is an estimate for a mean, not a training row; `dprp eval mean` is theirs).
pub fn refuse_local(specs: &[MechanismSpec], evaluation: &str) -> Result<()> {
    match specs.iter().find(|s| s.kind.is_local()) {
        Some(s) => Err(Error::param(
            "‹mechanisms›",
            format!(
                "'{}' is a local-DP mechanism for mean estimation; {evaluation} compares the \
                 sketch mechanisms (local ones run in eval retrieval and eval mean)",
                s.label
            ),
        )),
        None => Ok(()),
    }
}

/// Parse a comma-separated list of positive numbers (ε or C values).
pub fn parse_f64_list(name: &str, s: &str) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let v: f64 = part
            .parse()
            .map_err(|_| Error::param(name, format!("'{part}' is not a number")))?;
        if !(v.is_finite() && v > 0.0) {
            return Err(Error::param(
                name,
                format!("'{part}' must be positive and finite"),
            ));
        }
        out.push(v);
    }
    if out.is_empty() {
        return Err(Error::param(name, "empty list"));
    }
    out.sort_by(f64::total_cmp);
    out.dedup();
    Ok(out)
}

/// Parse a comma-separated list of positive integers (k values).
pub fn parse_usize_list(name: &str, s: &str) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let v: usize = part
            .parse()
            .map_err(|_| Error::param(name, format!("'{part}' is not a positive integer")))?;
        if v == 0 {
            return Err(Error::param(name, "values must be at least 1"));
        }
        out.push(v);
    }
    if out.is_empty() {
        return Err(Error::param(name, "empty list"));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Privacy parameters shared by every setting of a grid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Privacy {
    /// δ for the mechanisms that need one.
    pub delta: f64,
    /// β of the neighbour relation.
    pub beta: f64,
    /// Public norm lower bound ν for `dp-signrp-rr` (None: that mechanism is not applicable).
    pub min_norm: Option<f64>,
}

/// Derived seeds: one master seed, then `blake3(master, purpose)` for each projection and noise
/// key, so settings are independent and reproducible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seeds {
    master: Seed,
}

impl Seeds {
    /// From a master seed.
    pub fn new(master: Seed) -> Seeds {
        Seeds { master }
    }
    /// The master seed.
    pub fn master(&self) -> Seed {
        self.master
    }
    /// A derived seed for `purpose`.
    pub fn derive(&self, purpose: &str) -> Seed {
        Seed(blake3::keyed_hash(&self.master.0, purpose.as_bytes()).into())
    }
    /// The public projection seed of repeat `r` at size `k`: shared by all mechanisms and ε of
    /// that repeat (common random numbers make the curves comparable).
    pub fn projection(&self, k: usize, r: usize) -> Seed {
        self.derive(&format!("projection k={k} repeat={r}"))
    }
    /// A noise source for `what` (e.g. database or queries) of one setting and repeat.
    pub fn noise(&self, label: &str, epsilon: f64, k: usize, r: usize, what: &str) -> NoiseSource {
        NoiseSource::from_seed(
            &self
                .derive(&format!("{label} eps={epsilon} k={k} repeat={r} {what}"))
                .to_hex(),
        )
    }
}

/// Build the mechanism of one setting; an error means the setting is not applicable (its message
/// says why, e.g. OPORP needs k ≤ p). A local mechanism takes `k` only if it projects (ProjUnit).
pub fn mechanism(
    spec: &MechanismSpec,
    epsilon: f64,
    k: usize,
    p: usize,
    privacy: &Privacy,
    seed: Seed,
) -> Result<Box<dyn Mechanism>> {
    let local = spec.kind.is_local();
    build(&MechanismParams {
        delta: spec.kind.needs_delta().then_some(privacy.delta),
        beta: privacy.beta,
        // the retrieval grid compares every mechanism under one neighbour relation
        neighbour: Neighbour::Coordinate,
        p,
        k: spec.kind.projects().then_some(k),
        projection: spec.projection,
        seed: Some(seed),
        min_norm: if local { None } else { privacy.min_norm },
        individual_dp: !local,
        local: LocalOptions {
            map: spec.local_map,
            ..Default::default()
        },
        ..MechanismParams::of(spec.kind, epsilon)
    })
}

/// Run `jobs` in parallel (rayon), calling `tick(done, total)` after each one finishes. Results
/// come back in job order.
pub fn run_parallel<J: Sync, R: Send>(
    jobs: &[J],
    work: impl Fn(&J) -> R + Sync,
    tick: &(dyn Fn(usize, usize) + Sync),
) -> Vec<R> {
    let done = AtomicUsize::new(0);
    let lock = Mutex::new(());
    jobs.par_iter()
        .with_max_len(1)
        .map(|j| {
            let r = work(j);
            let d = done.fetch_add(1, Ordering::SeqCst) + 1;
            if let Ok(_g) = lock.lock() {
                tick(d, jobs.len());
            }
            r
        })
        .collect()
}

/// The public map of a mechanism, i.e. what its ε = ∞ reference projects with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MapFamily {
    /// No projection: the original vectors (`raw-g-opt`).
    Unprojected,
    /// A dense map with entries of this kind.
    Dense(DenseKind),
    /// OPORP (one permutation, signs, k bins).
    Oporp,
}

/// The noiseless reference of a mechanism (ε = ∞): its public map — same family, same k, same
/// projection seed of each repeat — without noise, and for a sign mechanism the signs of that map
/// without flips. It is the limit of the mechanism's results as ε grows (the noise vanishes on the
/// database and on private queries alike, and raw queries carry none), so each mechanism is drawn
/// against the reference of its own family; mechanisms sharing one (e.g. `dp-rp-g` and
/// `dp-rp-g-opt`) share its computation.
///
/// [`MapFamily::Unprojected`] is the ceiling: the original vectors themselves. For retrieval its
/// precision is 1 up to ties, whatever the query mode, because the ground truth is computed on
/// those vectors, so there it is the top of the scale and the ε = ∞ limit of `raw-g-opt` only; a
/// projecting mechanism's meaningful ceiling is its own map. For the SVM it is the accuracy of the
/// same SVM on the original features (which a projection may match or, by chance, pass).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReferenceKind {
    /// The public map.
    pub map: MapFamily,
    /// Signs of the map (sign mechanisms) rather than its values.
    pub signs: bool,
}

/// Label of the unprojected ceiling in reports.
pub const UNPROJECTED: &str = "unprojected";

impl ReferenceKind {
    /// The reference of a mechanism, from the mechanism's own properties (whether it projects,
    /// with OPORP or a dense map of the given kind, and whether it releases signs). That this is
    /// the map the built mechanism applies is tested against
    /// [`Sketch::project`](crate::mechanism::Sketch::project).
    ///
    /// A local mechanism's row is drawn against the unprojected ceiling: its decoded rows live in
    /// the input space. For ProjUnit that is not its ε = ∞ limit (each row's own random map loses
    /// accuracy even without noise), which the report's guarantee paragraph says.
    pub fn of(spec: &MechanismSpec) -> ReferenceKind {
        let map = if !spec.kind.projects() || spec.kind.is_local() {
            MapFamily::Unprojected
        } else if spec.kind.oporp() {
            MapFamily::Oporp
        } else {
            MapFamily::Dense(spec.projection.unwrap_or(DenseKind::Rademacher))
        };
        ReferenceKind {
            map,
            signs: spec.kind.is_sign(),
        }
    }

    /// The unprojected ceiling.
    pub const CEILING: ReferenceKind = ReferenceKind {
        map: MapFamily::Unprojected,
        signs: false,
    };

    /// Label in reports: `noiseless:rademacher`, `noiseless-signs:oporp`, `unprojected`, ...
    pub fn label(&self) -> String {
        let map = match self.map {
            MapFamily::Unprojected => {
                return UNPROJECTED.to_string() + if self.signs { "-signs" } else { "" }
            }
            MapFamily::Dense(kind) => kind.name(),
            MapFamily::Oporp => "oporp".to_string(),
        };
        if self.signs {
            format!("noiseless-signs:{map}")
        } else {
            format!("noiseless:{map}")
        }
    }

    /// Whether the reference changes with the projection seed (the unprojected one does not and
    /// is computed once).
    pub fn seeded(&self) -> bool {
        self.map != MapFamily::Unprojected
    }

    /// The rows of `data` under this reference at size `k` with the public seed `seed` (packed
    /// signs when `signs`). An error means the family cannot take `k` (e.g. OPORP needs k ≤ p).
    pub fn sketch(&self, data: &Dataset, k: usize, seed: Seed) -> Result<Sketches> {
        match self.map {
            MapFamily::Unprojected => project_rows(
                |rows, out| {
                    out.copy_from_slice(rows);
                    Ok(())
                },
                data,
                data.p,
                self.signs,
            ),
            MapFamily::Dense(kind) => {
                let w = DenseProjection::generate(kind, data.p, k, seed)?;
                let map = |r: &[f32], o: &mut [f32]| {
                    w.project(r, o);
                    Ok(())
                };
                project_rows(map, data, k, self.signs)
            }
            MapFamily::Oporp => {
                let w = Oporp::generate(data.p, k, seed)?;
                let map = |r: &[f32], o: &mut [f32]| {
                    w.project(r, o);
                    Ok(())
                };
                project_rows(map, data, k, self.signs)
            }
        }
    }
}

/// What a job runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Setting {
    /// Index into the mechanism list.
    Mechanism(usize),
    /// A noiseless reference (ε = ∞).
    Reference(ReferenceKind),
}

/// One unit of work: a setting (mechanism or reference, ε, k) and one repeat.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Mechanism or reference.
    pub setting: Setting,
    /// ε (∞ for a reference).
    pub epsilon: f64,
    /// Sketch size.
    pub k: usize,
    /// Repeat index.
    pub repeat: usize,
}

/// The grid's jobs in report order: per k the distinct references its mechanisms need (one per
/// family, see [`ReferenceKind`]), then the unprojected ceiling (once: it has no seed), then
/// mechanism × k × ε; repeats innermost. `raw-g-opt` has no projection: it runs for the first k
/// only (reported with k = p).
pub fn jobs(
    mechanisms: &[MechanismSpec],
    epsilons: &[f64],
    ks: &[usize],
    repeat: usize,
) -> Vec<Job> {
    let mut out = Vec::new();
    for &k in ks {
        let mut refs: Vec<ReferenceKind> = Vec::new();
        for rk in mechanisms.iter().map(ReferenceKind::of) {
            if rk.seeded() && !refs.contains(&rk) {
                refs.push(rk);
            }
        }
        for rk in refs {
            for r in 0..repeat {
                out.push(Job {
                    setting: Setting::Reference(rk),
                    epsilon: f64::INFINITY,
                    k,
                    repeat: r,
                });
            }
        }
    }
    if let Some(&k) = ks.first() {
        out.push(Job {
            setting: Setting::Reference(ReferenceKind::CEILING),
            epsilon: f64::INFINITY,
            k,
            repeat: 0,
        });
    }
    for (mi, spec) in mechanisms.iter().enumerate() {
        let no_projection = !spec.kind.projects();
        for &k in ks.iter().take(if no_projection { 1 } else { ks.len() }) {
            for &epsilon in epsilons {
                for r in 0..repeat {
                    out.push(Job {
                        setting: Setting::Mechanism(mi),
                        epsilon,
                        k,
                        repeat: r,
                    });
                }
            }
        }
    }
    out
}

/// Consecutive runs of jobs that are repeats of one setting.
pub fn settings(jobs: &[Job]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < jobs.len() {
        let j = &jobs[i];
        let mut e = i + 1;
        while e < jobs.len()
            && jobs[e].setting == j.setting
            && jobs[e].k == j.k
            && jobs[e].epsilon == j.epsilon
        {
            e += 1;
        }
        out.push(i..e);
        i = e;
    }
    out
}

/// What a report row says about its setting besides the metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct Described {
    /// Mechanism label, or the reference's label.
    pub label: String,
    /// The k reported (p for a setting without projection).
    pub k: usize,
    /// Seeds, one line per repeat.
    pub seeds: Vec<String>,
    /// The guarantee kind (`None` for a reference).
    pub guarantee: GuaranteeKind,
    /// For a mechanism: the label of its reference.
    pub reference: Option<String>,
}

/// A setting's label, the k it is reported with, its seeds, guarantee and reference.
pub fn describe(
    jobs: &[Job],
    range: std::ops::Range<usize>,
    mechanisms: &[MechanismSpec],
    p: usize,
    seeds: &Seeds,
) -> Described {
    let j = &jobs[range.start];
    let (label, guarantee, reference, seeded) = match j.setting {
        Setting::Mechanism(m) => (
            mechanisms[m].label.clone(),
            mechanisms[m].kind.guarantee_kind(),
            Some(ReferenceKind::of(&mechanisms[m]).label()),
            mechanisms[m].kind.projects(),
        ),
        Setting::Reference(rk) => (rk.label(), GuaranteeKind::None, None, rk.seeded()),
    };
    let k = if seeded { j.k } else { p };
    let noise = if reference.is_some() {
        "noise keys derived from the master seed"
    } else {
        "no noise"
    };
    let lines = jobs[range]
        .iter()
        .map(|jb| {
            let map = if seeded {
                format!("projection {}", seeds.projection(jb.k, jb.repeat).to_hex())
            } else {
                "no projection".to_string()
            };
            format!("{map} (repeat {}; {noise})", jb.repeat)
        })
        .collect();
    Described {
        label,
        k,
        seeds: lines,
        guarantee,
        reference,
    }
}

/// Rows projected with the public map only, no noise (in blocks, to bound the temporary of a
/// dense product); packed signs when `signs`.
pub fn project_rows(
    project: impl Fn(&[f32], &mut [f32]) -> Result<()>,
    data: &Dataset,
    k: usize,
    signs: bool,
) -> Result<Sketches> {
    let mut z = vec![0f32; data.n * k];
    let block = 4096;
    for (rows, out) in data
        .values
        .chunks(block * data.p.max(1))
        .zip(z.chunks_mut(block * k.max(1)))
    {
        project(rows, out)?;
    }
    if !signs {
        return Ok(Sketches::Real(z));
    }
    let w = k.div_ceil(64);
    let mut bits = vec![0u64; data.n * w];
    for (x, words) in z.chunks(k.max(1)).zip(bits.chunks_mut(w.max(1))) {
        pack_signs(x, words);
    }
    Ok(Sketches::Bits(bits))
}

/// The noiseless reference of a reference job on `data` (same public seed as the mechanisms of
/// that k and repeat).
pub fn reference(rk: &ReferenceKind, job: &Job, data: &Dataset, seeds: &Seeds) -> Result<Sketches> {
    rk.sketch(data, job.k, seeds.projection(job.k, job.repeat))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanism::ProjectionRecord;

    #[test]
    fn specs_and_lists() {
        let s = MechanismSpec::parse("dp-rp-g-opt:gaussian").unwrap();
        assert_eq!(s.kind, MechanismKind::DpRpGOpt);
        assert_eq!(s.projection, Some(DenseKind::Gaussian));
        assert!(MechanismSpec::parse("dp-oporp:gaussian").is_err());
        assert!(MechanismSpec::parse("nope").is_err());
        assert_eq!(MechanismSpec::parse_list("all").unwrap().len(), 12);
        assert_eq!(
            parse_f64_list("--epsilon", "10, 1,5,1").unwrap(),
            vec![1.0, 5.0, 10.0]
        );
        assert!(parse_f64_list("--epsilon", "1,-2").is_err());
        assert!(parse_f64_list("--epsilon", "1,inf").is_err());
        assert!(parse_usize_list("--k", "256,0").is_err());
        assert_eq!(parse_usize_list("--k", "512,256").unwrap(), vec![256, 512]);
    }

    /// Whether two sketches of `values` values agree as the exact map and a mechanism's own
    /// arithmetic do (the mechanism rounds ±1 maps' inputs to the grid `β·2^-12` or finer, and
    /// evaluates in f64): real values within 10⁻³ of each other, signs equal but for at most
    /// 0.5% (values within the grid's effect of zero). Another family's map differs by O(1) and
    /// in about half the signs.
    fn close(a: &Sketches, b: &Sketches, values: usize) -> bool {
        match (a, b) {
            (Sketches::Real(x), Sketches::Real(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(u, v)| (u - v).abs() <= 1e-3)
            }
            (Sketches::Bits(x), Sketches::Bits(y)) => {
                let differ: u32 = x.iter().zip(y).map(|(u, v)| (u ^ v).count_ones()).sum();
                x.len() == y.len() && (differ as usize) * 200 <= values
            }
            _ => false,
        }
    }

    /// The reference of each mechanism is the noiseless output of that mechanism's own public map
    /// (same family, k and seed; signs for sign mechanisms), up to the mechanism's arithmetic
    /// ([`close`]): a reference drawn from another family (e.g. the Rademacher map for OPORP or
    /// for a Gaussian dense map) fails here.
    #[test]
    fn each_reference_is_the_mechanisms_own_map_without_noise() {
        let mut data = crate::data::sample::generate();
        data.n = 300;
        data.values.truncate(300 * data.p);
        let seeds = Seeds::new(Seed([9; 32]));
        let privacy = Privacy {
            delta: 1e-6,
            beta: 0.1,
            min_norm: Some(0.05),
        };
        let mut specs: Vec<MechanismSpec> = MechanismKind::SKETCH
            .iter()
            .map(|k| MechanismSpec::parse(k.name()).unwrap())
            .collect();
        for s in [
            "dp-rp-g-opt:gaussian",
            "dp-signrp-rr-smooth:sparse:3",
            "idp-signrp-g:uniform",
        ] {
            specs.push(MechanismSpec::parse(s).unwrap());
        }
        let k = 32;
        let job = |rk| Job {
            setting: Setting::Reference(rk),
            epsilon: f64::INFINITY,
            k,
            repeat: 1,
        };
        for spec in &specs {
            let seed = seeds.projection(k, 1);
            let m = mechanism(spec, 1.0, k, data.p, &privacy, seed).unwrap();
            let own = project_rows(
                |r, o| m.as_sketch()?.project(r, o),
                &data,
                m.output_dim(),
                m.payload() == crate::mechanism::Payload::Bits,
            )
            .unwrap();
            let rk = ReferenceKind::of(spec);
            let got = reference(&rk, &job(rk), &data, &seeds).unwrap();
            assert!(
                close(&got, &own, data.n * k),
                "{}: reference {} is not its own map",
                spec.label,
                rk.label()
            );
            // and the record agrees on the family
            let rec = m.record().projection;
            match (rk.map, rec) {
                (MapFamily::Unprojected, ProjectionRecord::Identity) => {}
                (MapFamily::Oporp, ProjectionRecord::Oporp { .. }) => {}
                (MapFamily::Dense(a), ProjectionRecord::Dense { entries, .. }) => {
                    assert_eq!(a, entries, "{}", spec.label)
                }
                (a, b) => panic!("{}: {a:?} vs {b:?}", spec.label),
            }
        }
        // power: the Rademacher reference differs from the Gaussian and OPORP ones
        let rad = ReferenceKind::of(&MechanismSpec::parse("dp-rp-g-opt").unwrap());
        for other in ["dp-rp-g-opt:gaussian", "dp-oporp"] {
            let o = ReferenceKind::of(&MechanismSpec::parse(other).unwrap());
            assert_ne!(o, rad);
            let a = reference(&rad, &job(rad), &data, &seeds).unwrap();
            let b = reference(&o, &job(o), &data, &seeds).unwrap();
            assert!(a != b, "{other}");
        }
    }

    /// References are deduplicated per k (one per family), the ceiling runs once, and each job
    /// of a mechanism names the reference of its own family.
    #[test]
    fn jobs_dedupe_references() {
        let specs =
            MechanismSpec::parse_list("dp-rp-g,dp-rp-g-opt,dp-rp-g-opt:gaussian,dp-oporp,dp-signoporp-rr,idp-signoporp-g,raw-g-opt")
                .unwrap();
        let js = jobs(&specs, &[1.0, 2.0], &[16, 32], 3);
        let refs: Vec<(String, usize, usize)> = js
            .iter()
            .filter_map(|j| match j.setting {
                Setting::Reference(rk) => Some((rk.label(), j.k, j.repeat)),
                Setting::Mechanism(_) => None,
            })
            .collect();
        let labels = |k: usize| -> Vec<String> {
            let mut v: Vec<String> = refs
                .iter()
                .filter(|r| r.1 == k && r.2 == 0)
                .map(|r| r.0.clone())
                .collect();
            v.dedup();
            v
        };
        assert_eq!(
            labels(32),
            [
                "noiseless:rademacher",
                "noiseless:gaussian",
                "noiseless:oporp",
                "noiseless-signs:oporp"
            ]
        );
        assert_eq!(refs.iter().filter(|r| r.0 == UNPROJECTED).count(), 1);
        assert_eq!(refs.len(), 2 * 4 * 3 + 1);
        let seeds = Seeds::new(Seed([1; 32]));
        for range in settings(&js) {
            let d = describe(&js, range, &specs, 50, &seeds);
            match d.label.as_str() {
                "dp-rp-g" | "dp-rp-g-opt" => {
                    assert_eq!(d.reference.as_deref(), Some("noiseless:rademacher"))
                }
                "dp-rp-g-opt:gaussian" => {
                    assert_eq!(d.reference.as_deref(), Some("noiseless:gaussian"))
                }
                "dp-oporp" => assert_eq!(d.reference.as_deref(), Some("noiseless:oporp")),
                "dp-signoporp-rr" | "idp-signoporp-g" => {
                    assert_eq!(d.reference.as_deref(), Some("noiseless-signs:oporp"))
                }
                "raw-g-opt" => {
                    assert_eq!(d.reference.as_deref(), Some(UNPROJECTED));
                    assert_eq!(d.k, 50);
                }
                l => {
                    assert!(d.reference.is_none(), "{l}");
                    assert_eq!(d.guarantee, GuaranteeKind::None);
                }
            }
        }
    }

    #[test]
    fn seeds_are_distinct_and_reproducible() {
        let s = Seeds::new(Seed([7; 32]));
        assert_eq!(
            s.projection(256, 0),
            Seeds::new(Seed([7; 32])).projection(256, 0)
        );
        assert_ne!(s.projection(256, 0), s.projection(256, 1));
        assert_ne!(s.projection(256, 0), s.projection(512, 0));
    }
}
