//! `dprp audit`: an empirical lower bound on ε for a mechanism (or every mechanism with `--all`),
//! from [`crate::audit`]. Exits with status 1 when a bound exceeds the claim.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;

use crate::atomic::{AtomicFile, StagingDir};
use crate::audit::{self, report, AuditConfig, AuditReport, Miscalibration};
use crate::error::{Error, Result};
use crate::mechanism::{LocalMap, LocalOptions, MechanismKind, MechanismParams};
use crate::privacy::guarantee::Neighbour;
use crate::privacy::samplers::noise::NoiseSource;
use crate::projection::DenseKind;

/// Default samples per input of each pair.
const DEFAULT_TRIALS: usize = 200_000;

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The mechanism to audit (any name `publish` accepts).
    #[arg(short, long)]
    mechanism: Option<String>,
    /// Audit every mechanism at fixed parameters (p = 16, k = 8, ε = 1, δ = 1e-5, β = 1), then
    /// run the pipeline check (--pipeline) for every mechanism.
    #[arg(long, conflicts_with = "mechanism")]
    all: bool,
    /// Only the pipeline check: publish 2500 identical rows through the real publishing path with
    /// reads of 1, 255, 257 and 2097 rows, and test that the payloads are identical and the rows
    /// independent (no repeated outputs, no correlation at lags 1–300).
    #[arg(long)]
    pipeline: bool,
    /// The claimed ε (default 1).
    #[arg(short, long, allow_negative_numbers = true)]
    epsilon: Option<f64>,
    /// The claimed δ (mechanisms that need it; default 1e-5).
    #[arg(short, long, allow_negative_numbers = true)]
    delta: Option<f64>,
    /// Neighbour distance β (sketch mechanisms; default 1, at most 2).
    #[arg(short, long, allow_negative_numbers = true)]
    beta: Option<f64>,
    /// Sketch width k (projecting mechanisms; default 8).
    #[arg(short, long)]
    k: Option<usize>,
    /// Input dimension p (d for local mechanisms; default 16, 1 for scalar-dp).
    #[arg(short, long)]
    p: Option<usize>,
    /// Dense projection (rademacher, gaussian, uniform, sparse:S) or ProjUnit's map.
    #[arg(long)]
    projection: Option<String>,
    /// Public lower bound ν on row norms (dp-signrp-rr; default 1).
    #[arg(long, allow_negative_numbers = true)]
    min_norm: Option<f64>,
    /// privunit2-norm: the norm's budget ε₂.
    #[arg(long, allow_negative_numbers = true)]
    epsilon_norm: Option<f64>,
    /// privunit2-norm / scalar-dp: the public radius R (default 1).
    #[arg(long, allow_negative_numbers = true)]
    radius: Option<f64>,
    /// Samples per input of each pair: half choose the events, half bound them.
    #[arg(long, default_value_t = DEFAULT_TRIALS)]
    trials: usize,
    /// Random neighbouring pairs audited after the worst case.
    #[arg(long, default_value_t = 2)]
    random_pairs: usize,
    /// Reproducible audit: derive the noise, the projection and the random pairs from S (default:
    /// fresh from the operating system).
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Also write report.md and report.json into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Test hook: sample a deliberately mis-calibrated mechanism against the honest claim
    /// (`sigma=F`: Gaussian σ × F; `epsilon=F`: built with ε × F).
    #[arg(long, hide = true)]
    miscalibrate: Option<String>,
}

fn params_for(
    a: &AuditArgs,
    kind: MechanismKind,
    seed: crate::projection::Seed,
) -> Result<MechanismParams> {
    let mut p = audit::default_params(kind, seed);
    if let Some(e) = a.epsilon {
        p.epsilon = e;
    }
    if let Some(d) = a.delta {
        if !kind.needs_delta() {
            return Err(Error::param(
                "--delta",
                format!(
                    "{} needs no δ (its guarantee is pure ε); drop --delta",
                    kind.name()
                ),
            ));
        }
        p.delta = Some(d);
    }
    if let Some(b) = a.beta {
        if kind.is_local() {
            return Err(Error::param(
                "--beta",
                format!(
                    "{} is local DP (replace-one); β does not apply",
                    kind.name()
                ),
            ));
        }
        p.beta = b;
    }
    if let Some(k) = a.k {
        if !kind.projects() {
            return Err(Error::param(
                "--k",
                format!("{} does not project; drop --k", kind.name()),
            ));
        }
        p.k = Some(k);
    }
    if let Some(d) = a.p {
        p.p = d;
    }
    if p.p == 0 {
        return Err(Error::param("--p", "the dimension must be at least 1"));
    }
    if let Some(s) = &a.projection {
        if kind.is_local() {
            p.local.map = Some(LocalMap::parse(s)?);
        } else {
            p.projection = Some(DenseKind::parse(s)?);
        }
    }
    if let Some(nu) = a.min_norm {
        p.min_norm = Some(nu);
    }
    if a.epsilon_norm.is_some() {
        p.local.epsilon_norm = a.epsilon_norm;
    }
    if a.radius.is_some() {
        p.local.radius = a.radius;
    }
    if !kind.is_local() {
        p.neighbour = Neighbour::Coordinate;
        p.local = LocalOptions::default();
    }
    Ok(p)
}

pub fn run(a: AuditArgs) -> Result<()> {
    let miscalibrate = a
        .miscalibrate
        .as_deref()
        .map(Miscalibration::parse)
        .transpose()?;
    let kinds = kinds_to_audit(&a, miscalibrate.is_some())?;
    let staging = a
        .out
        .as_deref()
        .map(|o| StagingDir::create(o).map_err(|e| Error::param("--out", e.detail())))
        .transpose()?;
    let (noise, proj_seed, pair_seed) = audit_seeds(a.seed)?;
    let started = Instant::now();
    if a.pipeline {
        return run_pipeline(&a, &kinds, &noise, proj_seed, started);
    }
    let mut reports: Vec<AuditReport> = Vec::new();
    for (i, &kind) in kinds.iter().enumerate() {
        let params = params_for(&a, kind, proj_seed)?;
        let cfg = AuditConfig {
            params,
            trials: a.trials,
            random_pairs: a.random_pairs,
            miscalibrate,
        };
        if kinds.len() > 1 {
            super::output::note(format_args!(
                "[{}/{}] auditing {}…",
                i + 1,
                kinds.len(),
                kind.name()
            ));
        }
        let r =
            audit::run(&cfg, &noise, pair_seed.wrapping_add(i as u64)).map_err(|e| match e {
                Error::Param { name, msg } if kinds.len() > 1 => {
                    Error::param(name, format!("{} (auditing {})", msg, kind.name()))
                }
                e => e,
            })?;
        if !a.json {
            super::output::print_str(&report::text(&r))?;
            if kinds.len() > 1 {
                outln!()?;
            }
        }
        reports.push(r);
    }
    let pipeline = if a.all {
        pipeline_checks(&a, &kinds, &noise, proj_seed, true)?
    } else {
        Vec::new()
    };
    let elapsed = started.elapsed().as_secs_f64();
    if a.json {
        let v = if a.all {
            serde_json::to_value(&reports)
        } else {
            serde_json::to_value(&reports[0])
        }
        .map_err(super::output::json_error)?;
        let s = serde_json::to_string_pretty(&v).map_err(super::output::json_error)?;
        outln!("{s}")?;
    }
    if kinds.len() > 1 {
        let flagged = reports.iter().filter(|r| r.flagged).count();
        super::output::note(format_args!(
            "audited {} mechanisms in {elapsed:.1} s: {flagged} flagged",
            reports.len()
        ));
    }
    if let Some(st) = staging {
        write_reports(&a, st, &reports, &pipeline, elapsed)?;
    }
    verdict(&reports, &pipeline)
}

/// The mechanisms to audit: the one named, or with `--all` every one at fixed parameters (then
/// no parameter may be given).
fn kinds_to_audit(a: &AuditArgs, miscalibrated: bool) -> Result<Vec<MechanismKind>> {
    Ok(match (&a.mechanism, a.all) {
        (Some(m), false) => vec![MechanismKind::parse(m)?],
        (None, true) => {
            let given = [
                (a.epsilon.is_some(), "--epsilon"),
                (a.delta.is_some(), "--delta"),
                (a.beta.is_some(), "--beta"),
                (a.k.is_some(), "--k"),
                (a.p.is_some(), "--p"),
                (a.projection.is_some(), "--projection"),
                (a.min_norm.is_some(), "--min-norm"),
                (a.epsilon_norm.is_some(), "--epsilon-norm"),
                (a.radius.is_some(), "--radius"),
                (miscalibrated, "--miscalibrate"),
            ];
            if let Some((_, opt)) = given.iter().find(|(g, _)| *g) {
                return Err(Error::param(
                    *opt,
                    "--all audits every mechanism at fixed parameters (p = 16, k = 8, ε = 1, \
                     δ = 1e-5, β = 1); audit one mechanism (--mechanism) to choose them",
                ));
            }
            MechanismKind::all().collect()
        }
        _ => {
            return Err(Error::missing(
                "--mechanism",
                "name the mechanism to audit, or pass --all",
            ))
        }
    })
}

/// The noise, the public projection seed and the pair seed: reproducible from `--seed` (the
/// audit's noise is then not secret), else fresh from the OS.
fn audit_seeds(seed: Option<u64>) -> Result<(NoiseSource, crate::projection::Seed, u64)> {
    Ok(match seed {
        Some(s) => (
            NoiseSource::from_seed(&format!("dprp audit {s}")),
            audit::projection_seed(s)?,
            s,
        ),
        None => {
            let seed = crate::projection::Seed::random()?;
            let mut b = [0u8; 8];
            b.copy_from_slice(&seed.to_hex().as_bytes()[..8]);
            (NoiseSource::from_os()?, seed, u64::from_le_bytes(b))
        }
    })
}

/// `--out DIR`: the reports as Markdown and JSON, written whole into the staging directory.
fn write_reports(
    a: &AuditArgs,
    st: StagingDir,
    reports: &[AuditReport],
    pipeline: &[audit::pipeline::PipelineReport],
    elapsed: f64,
) -> Result<()> {
    let command = command_line(a);
    let machine = machine(elapsed);
    let mut md = report::markdown(reports, &command, &machine);
    if !pipeline.is_empty() {
        md.push_str(&audit::pipeline::markdown(pipeline));
    }
    let mut f = AtomicFile::create(&st.path().join("report.md"))?;
    f.write_all(md.as_bytes())?;
    f.commit()?;
    let json = serde_json::json!({
        "command": command,
        "machine": machine,
        "reports": reports,
        "pipeline": pipeline,
    });
    let s = serde_json::to_string_pretty(&json)
        .map_err(|e| Error::param("--out", format!("cannot serialise the report: {e}")))?;
    let mut f = AtomicFile::create(&st.path().join("report.json"))?;
    f.write_all(s.as_bytes())?;
    f.write_all(b"\n")?;
    f.commit()?;
    let dest = st.dest().to_path_buf();
    st.commit()?;
    super::output::note(format_args!(
        "wrote {}/report.md and report.json",
        dest.display()
    ));
    Ok(())
}

/// The exit: an audit error naming every flagged mechanism, or success.
fn verdict(reports: &[AuditReport], pipeline: &[audit::pipeline::PipelineReport]) -> Result<()> {
    let pipeline_flagged: Vec<String> = pipeline
        .iter()
        .filter(|r| r.flagged)
        .map(|r| format!("pipeline {}", r.mechanism))
        .collect();
    let flagged: Vec<String> = reports
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
    if flagged.is_empty() && pipeline_flagged.is_empty() {
        Ok(())
    } else if flagged.is_empty() {
        Err(Error::audit(format!(
            "the publishing pipeline's outputs are not independent draws for {}",
            pipeline_flagged.join("; ")
        )))
    } else {
        Err(Error::audit(format!(
            "the empirical lower bound exceeds the claimed ε (95% confidence) for {}",
            flagged.join("; ")
        )))
    }
}

/// The pipeline check ([`audit::pipeline`]) of each mechanism, each printed as it finishes (to
/// standard error when `notes`, i.e. after the ε audits' own output).
fn pipeline_checks(
    a: &AuditArgs,
    kinds: &[MechanismKind],
    noise: &NoiseSource,
    seed: crate::projection::Seed,
    notes: bool,
) -> Result<Vec<audit::pipeline::PipelineReport>> {
    let mut out = Vec::new();
    for &kind in kinds {
        let params = if a.all {
            audit::pipeline::default_params(kind, seed)
        } else {
            let mut p = params_for(a, kind, seed)?;
            if a.p.is_none() && p.p > 1 {
                p.p = 300;
            }
            if a.k.is_none() && p.k.is_some() {
                p.k = Some(64);
            }
            p
        };
        let r = audit::pipeline::check(&params, noise).map_err(|e| match e {
            Error::Param { name, msg } => {
                Error::param(name, format!("{msg} (pipeline check of {})", kind.name()))
            }
            e => e,
        })?;
        if notes {
            super::output::note(audit::pipeline::text(&r));
        } else if !a.json {
            outln!("{}", audit::pipeline::text(&r))?;
        }
        out.push(r);
    }
    Ok(out)
}

/// `audit --pipeline`: the pipeline check alone.
fn run_pipeline(
    a: &AuditArgs,
    kinds: &[MechanismKind],
    noise: &NoiseSource,
    seed: crate::projection::Seed,
    started: Instant,
) -> Result<()> {
    let reports = pipeline_checks(a, kinds, noise, seed, false)?;
    if a.json {
        let s = serde_json::to_string_pretty(&reports).map_err(super::output::json_error)?;
        outln!("{s}")?;
    }
    super::output::note(format_args!(
        "pipeline check of {} mechanism(s) in {:.1} s",
        reports.len(),
        started.elapsed().as_secs_f64()
    ));
    let flagged: Vec<&str> = reports
        .iter()
        .filter(|r| r.flagged)
        .map(|r| r.mechanism.as_str())
        .collect();
    if flagged.is_empty() {
        Ok(())
    } else {
        Err(Error::audit(format!(
            "the publishing pipeline's outputs are not independent draws for {}",
            flagged.join(", ")
        )))
    }
}

/// The command as it would be typed (for the report).
fn command_line(a: &AuditArgs) -> String {
    let mut s = String::from("dprp audit");
    if a.all {
        s.push_str(" --all");
    }
    if let Some(m) = &a.mechanism {
        s.push_str(&format!(" --mechanism {m}"));
    }
    s.push_str(&format!(" --trials {}", a.trials));
    if let Some(seed) = a.seed {
        s.push_str(&format!(" --seed {seed}"));
    }
    if let Some(o) = &a.out {
        s.push_str(&format!(" --out {}", o.display()));
    }
    s
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
    use super::utc;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00");
        assert_eq!(utc(1_795_458_392), "2026-11-23 18:26");
    }
}
