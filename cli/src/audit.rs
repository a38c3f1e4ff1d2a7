//! `dprp audit`: an empirical lower bound on ε for a mechanism (or every one with `--all`), run by
//! [`dprp::request::audit`]. Exits with status 1 when a bound exceeds the claim.

use std::path::PathBuf;

use clap::Args;

use super::output::{json_error, note, print_str};
use dprp::atomic::{Existing, StagingDir};
use dprp::error::{Error, Result};
use dprp::request::audit::{AuditEvent, AuditOptions};

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
    /// independent (no repeated outputs, no correlation at lags 1–300); of --mechanism, or of
    /// every mechanism when none is named (about 10 s).
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
    /// Also write report.md and report.json into this directory (created; an existing one must
    /// be empty unless --overwrite).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Let --out be a directory that holds files already: reports of the same names are
    /// replaced (links, devices, pipes and sockets are always refused).
    #[arg(long)]
    overwrite: bool,
    /// Test hook: sample a deliberately mis-calibrated mechanism against the honest claim
    /// (`sigma=F`: Gaussian σ × F; `epsilon=F`: built with ε × F).
    #[arg(long, hide = true)]
    miscalibrate: Option<String>,
}

impl AuditArgs {
    /// The options as the library takes them.
    fn options(&self) -> AuditOptions {
        AuditOptions {
            mechanism: self.mechanism.clone(),
            all: self.all,
            pipeline: self.pipeline,
            epsilon: self.epsilon,
            delta: self.delta,
            beta: self.beta,
            k: self.k,
            p: self.p,
            projection: self.projection.clone(),
            min_norm: self.min_norm,
            epsilon_norm: self.epsilon_norm,
            radius: self.radius,
            trials: self.trials,
            random_pairs: self.random_pairs,
            seed: self.seed,
            miscalibrate: self.miscalibrate.clone(),
        }
    }

    /// Print an event: progress and the pipeline checks after the ε audits on standard error,
    /// the reports (unless `--json`) on standard output.
    fn show(&self, ev: AuditEvent<'_>) -> Result<()> {
        match ev {
            AuditEvent::Starting { .. } => note(ev.text()),
            AuditEvent::Checked(_) if !self.pipeline => note(ev.text()),
            _ if self.json => {}
            AuditEvent::Checked(_) => outln!("{}", ev.text())?,
            AuditEvent::Audited(_) => {
                print_str(&ev.text())?;
                if self.all {
                    outln!()?;
                }
            }
        }
        Ok(())
    }
}

pub fn run(a: AuditArgs) -> Result<()> {
    let opts = a.options();
    let plan = opts.plan()?;
    let staging = a
        .out
        .as_deref()
        .map(|o| {
            StagingDir::create(o, Existing::replace_if(a.overwrite)).map_err(|e| match e {
                Error::Output { .. } => e,
                e => Error::param("--out", e.detail()),
            })
        })
        .transpose()?;
    let outcome = plan.run(&mut |ev| a.show(ev))?;
    if a.json {
        let s = outcome.to_json_string().map_err(json_error)?;
        outln!("{s}")?;
    }
    if let Some(line) = outcome.summary() {
        note(line);
    }
    if let Some(st) = staging {
        let command = opts.command_line(a.out.as_deref());
        outcome.write_reports(st.path(), &command)?;
        let dest = st.dest().to_path_buf();
        st.commit()?;
        note(format_args!(
            "wrote {}/report.md and report.json",
            dest.display()
        ));
    }
    outcome.verdict()
}
