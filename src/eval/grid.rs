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
use crate::mechanism::sign_sketch::pack_signs;
use crate::mechanism::{build, Mechanism, MechanismKind, MechanismParams};
use crate::privacy::guarantee::Neighbour;
use crate::privacy::noise::NoiseSource;
use crate::projection::{DenseKind, DenseProjection, Seed};
use crate::publish::Sketches;

/// A mechanism as named on the command line: `name` or `name:projection` (dense kinds only, e.g.
/// `dp-rp-g-opt:gaussian`).
#[derive(Debug, Clone, PartialEq)]
pub struct MechanismSpec {
    /// The label used in reports.
    pub label: String,
    /// The mechanism.
    pub kind: MechanismKind,
    /// The dense projection kind, when not the default (Rademacher).
    pub projection: Option<DenseKind>,
}

impl MechanismSpec {
    /// Parse `name[:projection]`.
    pub fn parse(s: &str) -> Result<MechanismSpec> {
        let s = s.trim();
        let (name, proj) = match s.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (s, None),
        };
        let kind = MechanismKind::parse(name)?;
        let projection = proj.map(DenseKind::parse).transpose()?;
        if projection.is_some() && !kind.dense() {
            return Err(Error::param(
                "--mechanisms",
                format!("'{s}': only dense-projection mechanisms take a projection kind"),
            ));
        }
        Ok(MechanismSpec {
            label: s.to_ascii_lowercase(),
            kind,
            projection,
        })
    }

    /// Parse a comma-separated list; `all` stands for every mechanism (default projections).
    pub fn parse_list(s: &str) -> Result<Vec<MechanismSpec>> {
        let mut out: Vec<MechanismSpec> = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if part.eq_ignore_ascii_case("all") {
                for kind in MechanismKind::ALL {
                    out.push(MechanismSpec::parse(kind.name())?);
                }
            } else {
                out.push(MechanismSpec::parse(part)?);
            }
        }
        out.dedup_by(|a, b| a.label == b.label);
        if out.is_empty() {
            return Err(Error::param("--mechanisms", "no mechanism given"));
        }
        Ok(out)
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
/// says why, e.g. OPORP needs k ≤ p).
pub fn mechanism(
    spec: &MechanismSpec,
    epsilon: f64,
    k: usize,
    p: usize,
    privacy: &Privacy,
    seed: Seed,
) -> Result<Box<dyn Mechanism>> {
    build(&MechanismParams {
        kind: spec.kind,
        epsilon,
        delta: spec.kind.needs_delta().then_some(privacy.delta),
        beta: privacy.beta,
        neighbour: Neighbour::Coordinate,
        p,
        k: (spec.kind != MechanismKind::RawGOpt).then_some(k),
        projection: spec.projection,
        seed: Some(seed),
        min_norm: privacy.min_norm,
        individual_dp: true,
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

/// One unit of work: a setting (mechanism or reference, ε, k) and one repeat.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Index into the mechanism list, or `None` for a non-private reference.
    pub mech: Option<usize>,
    /// For a reference: its signs (`non-private-sign`) rather than its values (`non-private`).
    pub sign_reference: bool,
    /// ε (∞ for a reference).
    pub epsilon: f64,
    /// Sketch size.
    pub k: usize,
    /// Repeat index.
    pub repeat: usize,
}

/// The grid's jobs in report order: per k the references needed (real values if any mechanism
/// is real-valued, signs if any is a sign mechanism), then mechanism × k × ε; repeats innermost.
/// `raw-g-opt` has no projection: it runs for the first k only (reported with k = p).
pub fn jobs(
    mechanisms: &[MechanismSpec],
    epsilons: &[f64],
    ks: &[usize],
    repeat: usize,
) -> Vec<Job> {
    let any_sign = mechanisms.iter().any(|m| m.kind.is_sign());
    let any_real = mechanisms.iter().any(|m| !m.kind.is_sign());
    let mut out = Vec::new();
    for &k in ks {
        for (sign_reference, wanted) in [(false, any_real), (true, any_sign)] {
            for r in (0..repeat).filter(|_| wanted) {
                out.push(Job {
                    mech: None,
                    sign_reference,
                    epsilon: f64::INFINITY,
                    k,
                    repeat: r,
                });
            }
        }
    }
    for (mi, spec) in mechanisms.iter().enumerate() {
        let no_projection = spec.kind == MechanismKind::RawGOpt;
        for &k in ks.iter().take(if no_projection { 1 } else { ks.len() }) {
            for &epsilon in epsilons {
                for r in 0..repeat {
                    out.push(Job {
                        mech: Some(mi),
                        sign_reference: false,
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
            && jobs[e].mech == j.mech
            && jobs[e].sign_reference == j.sign_reference
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

/// A setting's label, the k it is reported with, and its seeds (one line per repeat).
pub fn describe(
    jobs: &[Job],
    range: std::ops::Range<usize>,
    mechanisms: &[MechanismSpec],
    p: usize,
    seeds: &Seeds,
) -> (String, usize, Vec<String>) {
    let j = &jobs[range.start];
    let label = match j.mech {
        Some(m) => mechanisms[m].label.clone(),
        None if j.sign_reference => "non-private-sign".to_string(),
        None => "non-private".to_string(),
    };
    let k = match j.mech {
        Some(m) if mechanisms[m].kind == MechanismKind::RawGOpt => p,
        _ => j.k,
    };
    let lines = jobs[range]
        .iter()
        .map(|jb| {
            format!(
                "projection {} (repeat {}; noise keys derived from the master seed)",
                seeds.projection(jb.k, jb.repeat).to_hex(),
                jb.repeat
            )
        })
        .collect();
    (label, k, lines)
}

/// Rows projected with the public map only, no noise (in blocks, to bound the temporary of a
/// dense product); packed signs when `signs`.
pub fn project_rows(
    project: impl Fn(&[f32], &mut [f32]),
    data: &Dataset,
    k: usize,
    signs: bool,
) -> Sketches {
    let mut z = vec![0f32; data.n * k];
    let block = 4096;
    for (rows, out) in data
        .values
        .chunks(block * data.p.max(1))
        .zip(z.chunks_mut(block * k.max(1)))
    {
        project(rows, out);
    }
    if !signs {
        return Sketches::Real(z);
    }
    let w = k.div_ceil(64);
    let mut bits = vec![0u64; data.n * w];
    for (x, words) in z.chunks(k.max(1)).zip(bits.chunks_mut(w.max(1))) {
        pack_signs(x, words);
    }
    Sketches::Bits(bits)
}

/// The non-private reference of a job: the dense Rademacher map of its k and repeat (the same
/// public seed as the mechanisms of that k and repeat), no noise; its signs for a sign reference.
pub fn reference(job: &Job, data: &Dataset, seeds: &Seeds) -> Result<Sketches> {
    let w = DenseProjection::generate(
        DenseKind::Rademacher,
        data.p,
        job.k,
        seeds.projection(job.k, job.repeat),
    )?;
    Ok(project_rows(
        |rows, out| w.project(rows, out),
        data,
        job.k,
        job.sign_reference,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

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
