//! `dprp audit` from options as a user gives them: the mechanisms named (or every one), the
//! parameters checked against what each mechanism accepts, the seeds, the ε audits
//! ([`crate::audit::run`]) and pipeline checks ([`crate::audit::pipeline`]) run, and their outcome
//! as one value: its JSON, the report files of `--out`, the closing note and the verdict. The
//! front end stages the output directory and prints what it hears as the audits finish.

use crate::error::field;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use crate::atomic::{AtomicFile, Existing};
use crate::audit::pipeline::{self, PipelineReport};
use crate::audit::{self, report, AuditConfig, AuditReport, Miscalibration};
use crate::error::{Error, Result};
use crate::mechanism::{LocalMap, LocalOptions, MechanismKind, MechanismParams};
use crate::privacy::guarantee::Neighbour;
use crate::privacy::samplers::noise::NoiseSource;
use crate::projection::{DenseKind, Seed};

/// The options of an audit; `None` where the user gave nothing.
#[derive(Debug, Clone, Default)]
pub struct AuditOptions {
    /// The mechanism to audit (any name `publish` accepts).
    pub mechanism: Option<String>,
    /// Every mechanism at fixed parameters ([`audit::default_params`]), then the pipeline check.
    pub all: bool,
    /// Only the pipeline check ([`crate::audit::pipeline`]).
    pub pipeline: bool,
    /// The claimed ε.
    pub epsilon: Option<f64>,
    /// The claimed δ (mechanisms that need it).
    pub delta: Option<f64>,
    /// Neighbour distance β (sketch mechanisms).
    pub beta: Option<f64>,
    /// Sketch width (projecting mechanisms).
    pub k: Option<usize>,
    /// Input dimension (d for local mechanisms).
    pub p: Option<usize>,
    /// Dense projection or ProjUnit's map, by name.
    pub projection: Option<String>,
    /// Public lower bound ν on row norms (`dp-signrp-rr`).
    pub min_norm: Option<f64>,
    /// `privunit2-norm`: the norm's budget ε₂.
    pub epsilon_norm: Option<f64>,
    /// `privunit2-norm` / `scalar-dp`: the public radius R.
    pub radius: Option<f64>,
    /// Samples per input of each pair.
    pub trials: usize,
    /// Random neighbouring pairs audited after the worst case.
    pub random_pairs: usize,
    /// Derive the noise, the projection and the random pairs from this (default: the OS).
    pub seed: Option<u64>,
    /// Test hook: `sigma=F` or `epsilon=F` ([`Miscalibration`]).
    pub miscalibrate: Option<String>,
}

/// The options checked: the mechanisms to audit and the mis-calibration, before anything runs.
#[derive(Debug, Clone)]
pub struct AuditPlan {
    opts: AuditOptions,
    kinds: Vec<MechanismKind>,
    miscalibrate: Option<Miscalibration>,
}

/// What an audit run reports as it goes.
#[derive(Debug, Clone, Copy)]
pub enum AuditEvent<'a> {
    /// One of several mechanisms' ε audit starts (`index` counted from 1).
    Starting {
        /// Its place among the mechanisms.
        index: usize,
        /// The number of mechanisms.
        count: usize,
        /// Its name.
        mechanism: &'static str,
    },
    /// One mechanism's ε audit finished.
    Audited(&'a AuditReport),
    /// One mechanism's pipeline check finished.
    Checked(&'a PipelineReport),
}

/// What an audit run found.
#[derive(Debug, Clone)]
pub struct AuditOutcome {
    /// The ε audits, in order (none for the pipeline check alone).
    pub reports: Vec<AuditReport>,
    /// The pipeline checks, in order (with `all` or `pipeline`).
    pub pipeline: Vec<PipelineReport>,
    /// Whether this was the pipeline check alone.
    pub pipeline_only: bool,
    /// Whether every mechanism was audited.
    pub all: bool,
    /// Wall-clock seconds of the run.
    pub seconds: f64,
}

impl AuditEvent<'_> {
    /// The event as the command shows it: a progress line or the finished report's text.
    pub fn text(&self) -> String {
        match self {
            AuditEvent::Starting {
                index,
                count,
                mechanism,
            } => format!("[{index}/{count}] auditing {mechanism}…"),
            AuditEvent::Audited(r) => report::text(r),
            AuditEvent::Checked(r) => pipeline::text(r),
        }
    }
}

impl AuditOptions {
    /// Check the mis-calibration and name the mechanisms to audit: the one named, or with `all`
    /// (or the pipeline check alone, without a mechanism) every one at fixed parameters (then no
    /// parameter may be given).
    pub fn plan(&self) -> Result<AuditPlan> {
        let miscalibrate = self
            .miscalibrate
            .as_deref()
            .map(Miscalibration::parse)
            .transpose()?;
        let kinds = match (&self.mechanism, self.all) {
            (Some(m), false) => vec![MechanismKind::parse(m)?],
            // the pipeline check alone runs every mechanism unless one is named (seconds)
            (None, true) | (None, false) if self.pipeline => {
                self.refuse_parameters_with_all()?;
                MechanismKind::all().collect()
            }
            (None, true) => {
                self.refuse_parameters_with_all()?;
                MechanismKind::all().collect()
            }
            _ => {
                return Err(Error::missing(
                    field("mechanism"),
                    format!("name the mechanism to audit, or pass {}", field("all")),
                ))
            }
        };
        Ok(AuditPlan {
            opts: self.clone(),
            kinds,
            miscalibrate,
        })
    }

    /// With `all`, the first parameter given is refused.
    fn refuse_parameters_with_all(&self) -> Result<()> {
        let given = [
            (self.epsilon.is_some(), "epsilon"),
            (self.delta.is_some(), "delta"),
            (self.beta.is_some(), "beta"),
            (self.k.is_some(), "k"),
            (self.p.is_some(), "p"),
            (self.projection.is_some(), "projection"),
            (self.min_norm.is_some(), "min_norm"),
            (self.epsilon_norm.is_some(), "epsilon_norm"),
            (self.radius.is_some(), "radius"),
            (self.miscalibrate.is_some(), "miscalibrate"),
        ];
        match given.iter().find(|(g, _)| *g) {
            Some((_, opt)) => Err(Error::param(
                field(opt),
                format!(
                    "{} audits every mechanism at fixed parameters (p = 16, k = 8, ε = 1, δ = \
                     1e-5, β = 1); audit one mechanism ({}) to choose them",
                    field("all"),
                    field("mechanism")
                ),
            )),
            None => Ok(()),
        }
    }

    /// The command as it would be typed (for the report); `out` is where it is written.
    pub fn command_line(&self, out: Option<&Path>) -> String {
        let mut s = String::from("dprp audit");
        if self.pipeline {
            s.push_str(" ‹pipeline›");
        }
        if self.all {
            s.push_str(" ‹all›");
        }
        if let Some(m) = &self.mechanism {
            let _ = write!(s, " ‹mechanism› {m}");
        }
        if !self.pipeline {
            let _ = write!(s, " ‹trials› {}", self.trials);
        }
        if let Some(seed) = self.seed {
            let _ = write!(s, " ‹seed› {seed}");
        }
        if let Some(o) = out {
            let _ = write!(s, " ‹out› {}", o.display());
        }
        s
    }
}

impl AuditPlan {
    /// Whether this is the pipeline check alone.
    pub fn pipeline_only(&self) -> bool {
        self.opts.pipeline
    }

    /// Run the ε audits (then, with `all`, the pipeline checks), or the pipeline checks alone;
    /// `on_event` hears of each as it starts and finishes.
    pub fn run(
        &self,
        on_event: &mut dyn FnMut(AuditEvent<'_>) -> Result<()>,
    ) -> Result<AuditOutcome> {
        let (noise, proj_seed, pair_seed) = audit_seeds(self.opts.seed)?;
        let started = Instant::now();
        let reports = if self.opts.pipeline {
            Vec::new()
        } else {
            self.audit_each(&noise, proj_seed, pair_seed, on_event)?
        };
        let pipeline = if self.opts.pipeline || self.opts.all {
            self.pipeline_checks(&noise, proj_seed, on_event)?
        } else {
            Vec::new()
        };
        Ok(AuditOutcome {
            reports,
            pipeline,
            pipeline_only: self.opts.pipeline,
            all: self.opts.all,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// The ε audit of each mechanism; with several, a refusal names the mechanism.
    fn audit_each(
        &self,
        noise: &NoiseSource,
        proj_seed: Seed,
        pair_seed: u64,
        on_event: &mut dyn FnMut(AuditEvent<'_>) -> Result<()>,
    ) -> Result<Vec<AuditReport>> {
        let count = self.kinds.len();
        let mut reports = Vec::new();
        for (i, &kind) in self.kinds.iter().enumerate() {
            let cfg = AuditConfig {
                params: self.params(kind, proj_seed)?,
                trials: self.opts.trials,
                random_pairs: self.opts.random_pairs,
                miscalibrate: self.miscalibrate,
            };
            if count > 1 {
                on_event(AuditEvent::Starting {
                    index: i + 1,
                    count,
                    mechanism: kind.name(),
                })?;
            }
            let r =
                audit::run(&cfg, noise, pair_seed.wrapping_add(i as u64)).map_err(|e| match e {
                    Error::Param { name, msg } if count > 1 => {
                        Error::param(name, format!("{} (auditing {})", msg, kind.name()))
                    }
                    e => e,
                })?;
            on_event(AuditEvent::Audited(&r))?;
            reports.push(r);
        }
        Ok(reports)
    }

    /// The pipeline check of each mechanism: with `all` at [`pipeline::default_params`], else at
    /// the options' parameters with p = 300 and k = 64 where they were not given.
    fn pipeline_checks(
        &self,
        noise: &NoiseSource,
        seed: Seed,
        on_event: &mut dyn FnMut(AuditEvent<'_>) -> Result<()>,
    ) -> Result<Vec<PipelineReport>> {
        let mut out = Vec::new();
        for &kind in &self.kinds {
            let params = if self.opts.all {
                pipeline::default_params(kind, seed)
            } else {
                let mut p = self.params(kind, seed)?;
                if self.opts.p.is_none() && p.p > 1 {
                    p.p = 300;
                }
                if self.opts.k.is_none() && p.k.is_some() {
                    p.k = Some(64);
                }
                p
            };
            let r = pipeline::check(&params, noise).map_err(|e| match e {
                Error::Param { name, msg } => {
                    Error::param(name, format!("{msg} (pipeline check of {})", kind.name()))
                }
                e => e,
            })?;
            on_event(AuditEvent::Checked(&r))?;
            out.push(r);
        }
        Ok(out)
    }

    /// The parameters of one mechanism: [`audit::default_params`] with the options given, each
    /// refused where the mechanism has no use for it.
    fn params(&self, kind: MechanismKind, seed: Seed) -> Result<MechanismParams> {
        let o = &self.opts;
        let refuse = |key: &str, msg: String| Err(Error::param(field(key), msg));
        let mut p = audit::default_params(kind, seed);
        if let Some(e) = o.epsilon {
            p.epsilon = e;
        }
        if let Some(d) = o.delta {
            if !kind.needs_delta() {
                let drop = field("delta");
                let why = format!(
                    "{} needs no δ (its guarantee is pure ε); drop {drop}",
                    kind.name()
                );
                return refuse("delta", why);
            }
            p.delta = Some(d);
        }
        if let Some(b) = o.beta {
            if kind.is_local() {
                let why = format!(
                    "{} is local DP (replace-one); β does not apply",
                    kind.name()
                );
                return refuse("beta", why);
            }
            p.beta = b;
        }
        if let Some(k) = o.k {
            if !kind.projects() {
                let why = format!("{} does not project; drop {}", kind.name(), field("k"));
                return refuse("k", why);
            }
            p.k = Some(k);
        }
        p.p = o.p.unwrap_or(p.p);
        if p.p == 0 {
            return refuse("p", "the dimension must be at least 1".into());
        }
        if let Some(s) = &o.projection {
            if kind.is_local() {
                p.local.map = Some(LocalMap::parse(s)?);
            } else {
                p.projection = Some(DenseKind::parse(s)?);
            }
        }
        p.min_norm = o.min_norm.or(p.min_norm);
        p.local.epsilon_norm = o.epsilon_norm.or(p.local.epsilon_norm);
        p.local.radius = o.radius.or(p.local.radius);
        if !kind.is_local() {
            p.neighbour = Neighbour::Coordinate;
            p.local = LocalOptions::default();
        }
        Ok(p)
    }
}

/// The noise, the public projection seed and the pair seed: reproducible from `seed` (the
/// audit's noise is then not secret), else fresh from the OS.
fn audit_seeds(seed: Option<u64>) -> Result<(NoiseSource, Seed, u64)> {
    Ok(match seed {
        Some(s) => (
            NoiseSource::from_seed(&format!("dprp audit {s}")),
            audit::projection_seed(s)?,
            s,
        ),
        None => {
            let seed = Seed::random()?;
            let mut b = [0u8; 8];
            b.copy_from_slice(&seed.to_hex().as_bytes()[..8]);
            (NoiseSource::from_os()?, seed, u64::from_le_bytes(b))
        }
    })
}

impl AuditOutcome {
    /// The JSON printed: the pipeline checks alone as a list; else one mechanism's report, or
    /// with `all` the list of reports (as JSON values, so their keys are in alphabetical order).
    pub fn to_json_string(&self) -> serde_json::Result<String> {
        if self.pipeline_only {
            return serde_json::to_string_pretty(&self.pipeline);
        }
        let v = if self.all {
            serde_json::to_value(&self.reports)
        } else {
            serde_json::to_value(&self.reports[0])
        }?;
        serde_json::to_string_pretty(&v)
    }

    /// The closing line of a run of several mechanisms: how many, how long, how many flagged.
    pub fn summary(&self) -> Option<String> {
        if self.pipeline_only {
            return Some(format!(
                "pipeline check of {} mechanism(s) in {:.1} s",
                self.pipeline.len(),
                self.seconds
            ));
        }
        let flagged = self.reports.iter().filter(|r| r.flagged).count();
        (self.reports.len() > 1).then(|| {
            format!(
                "audited {} mechanisms in {:.1} s: {flagged} flagged",
                self.reports.len(),
                self.seconds
            )
        })
    }

    /// `report.md` and `report.json` in `dir` (the front end's staging directory of `--out`);
    /// `command` is the command line they record.
    pub fn write_reports(&self, dir: &Path, command: &str) -> Result<()> {
        let machine = machine(self.seconds);
        let mut md = if self.pipeline_only {
            // the pipeline check alone: its section is the report
            format!("# `dprp audit ‹pipeline›`\n\nMade with `{command}` on {machine}.\n\n")
        } else {
            report::markdown(&self.reports, command, &machine)
        };
        if !self.pipeline.is_empty() {
            md.push_str(&pipeline::markdown(&self.pipeline));
        }
        let mut f = AtomicFile::create(&dir.join("report.md"), Existing::Refuse)?;
        f.write_all(crate::error::in_files(&md).as_bytes())?;
        f.commit()?;
        let json = serde_json::json!({
            "command": command,
            "machine": machine,
            "reports": self.reports,
            "pipeline": self.pipeline,
        });
        let s = serde_json::to_string_pretty(&json)
            .map_err(|e| Error::param(field("out"), format!("cannot serialise the report: {e}")))?;
        let mut f = AtomicFile::create(&dir.join("report.json"), Existing::Refuse)?;
        f.write_all(crate::error::in_files(&s).as_bytes())?;
        f.write_all(b"\n")?;
        f.commit()
    }

    /// The exit: an audit error naming every flagged mechanism (ε audits first), or success.
    pub fn verdict(&self) -> Result<()> {
        let flagged_checks = self.pipeline.iter().filter(|r| r.flagged);
        if self.pipeline_only {
            let names: Vec<&str> = flagged_checks.map(|r| r.mechanism.as_str()).collect();
            return if names.is_empty() {
                Ok(())
            } else {
                Err(not_independent(&names.join(", ")))
            };
        }
        let flagged: Vec<String> = self
            .reports
            .iter()
            .filter(|r| r.flagged)
            .map(|r| {
                format!(
                    "{}: ε̂_lower = {} > ε = {} ({})",
                    r.mechanism,
                    report::fmt_eps(r.epsilon_lower),
                    r.claim.epsilon,
                    r.worst.as_deref().unwrap_or("?")
                )
            })
            .collect();
        let checks: Vec<String> = flagged_checks
            .map(|r| format!("pipeline {}", r.mechanism))
            .collect();
        if !flagged.is_empty() {
            Err(Error::audit(format!(
                "the empirical lower bound exceeds the claimed ε (95% confidence) for {}",
                flagged.join("; ")
            )))
        } else if !checks.is_empty() {
            Err(not_independent(&checks.join("; ")))
        } else {
            Ok(())
        }
    }
}

/// The refusal of a pipeline whose outputs are not independent draws.
fn not_independent(which: &str) -> Error {
    Error::audit(format!(
        "the publishing pipeline's outputs are not independent draws for {which}"
    ))
}

/// The machine and time of the run, in one line.
fn machine(elapsed: f64) -> String {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!(
        "{} ({} {}, {cores} cores, load average {load} at the end), finished {} UTC, {elapsed:.0} s wall",
        std::env::consts::OS,
        std::env::consts::ARCH,
        if cfg!(debug_assertions) { "debug build" } else { "release build" },
        utc(secs)
    )
}

/// `YYYY-MM-DD HH:MM` (UTC) from Unix seconds.
fn utc(secs: u64) -> String {
    let (y, m, d, rem) = crate::release::utc_civil(secs);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Front;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00");
        assert_eq!(utc(1_795_458_392), "2026-11-23 18:26");
    }

    fn refusal(opts: &AuditOptions, front: Front) -> String {
        let seed = audit::projection_seed(1).unwrap();
        let err = opts
            .plan()
            .and_then(|plan| plan.params(plan.kinds[0], seed).map(|_| ()))
            .unwrap_err();
        err.render(front)
    }

    #[test]
    fn refusals_name_the_field_per_front_end() {
        let one = |m: &str| AuditOptions {
            mechanism: Some(m.into()),
            ..Default::default()
        };
        let cases = [
            (AuditOptions::default(), "mechanism"),
            (
                AuditOptions {
                    all: true,
                    k: Some(4),
                    ..Default::default()
                },
                "k",
            ),
            (
                AuditOptions {
                    delta: Some(1e-5),
                    ..one("dp-signoporp-rr")
                },
                "delta",
            ),
            (
                AuditOptions {
                    beta: Some(1.0),
                    ..one("duchi")
                },
                "beta",
            ),
            (
                AuditOptions {
                    k: Some(4),
                    ..one("raw-g-opt")
                },
                "k",
            ),
            (
                AuditOptions {
                    p: Some(0),
                    ..one("dp-oporp")
                },
                "p",
            ),
        ];
        for (opts, field) in cases {
            let cli = refusal(&opts, Front::Cli);
            assert!(cli.contains(&format!("--{field}")), "{field}: {cli}");
            let py = refusal(&opts, Front::Python);
            assert!(py.contains(field) && !py.contains("--"), "{field}: {py}");
        }
    }
}
