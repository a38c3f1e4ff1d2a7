//! `dprp mean`: the unbiased mean of the users' vectors from local-DP releases, with its expected
//! squared error from the mechanism's closed form.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::atomic::{check_not_input, AtomicFile};
use crate::error::{Error, Result};
use crate::mechanism::local::accumulator::{MeanAccumulator, MeanEstimate};
use crate::mechanism::{self, Mechanism};

#[derive(Debug, Args)]
pub struct MeanArgs {
    /// Release files of one local-DP mechanism configuration (shards with disjoint row ids).
    #[arg(required = true)]
    releases: Vec<PathBuf>,
    /// Write the whole mean vector to a file: .npy (float64) or .csv (one line).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Print the result (including the whole mean vector) as JSON.
    #[arg(long)]
    json: bool,
}

/// Coordinates shown in the text summary.
const SHOWN: usize = 8;

pub(super) enum OutKind {
    Npy,
    Csv,
}

pub(super) fn out_kind(path: &Path) -> Result<OutKind> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
        .as_deref()
    {
        Some("npy") => Ok(OutKind::Npy),
        Some("csv") => Ok(OutKind::Csv),
        _ => Err(Error::param(
            "--output",
            format!(
                "{}: the mean is written as .npy or .csv; name the file with one of those \
                 extensions",
                path.display()
            ),
        )),
    }
}

pub fn run(a: MeanArgs) -> Result<()> {
    let kind = a.output.as_deref().map(out_kind).transpose()?;
    if let Some(out) = &a.output {
        for r in &a.releases {
            check_not_input(r, out)?;
        }
    }
    // a sharded release's directory stands for its shards, each with its global first row (its
    // rows' public maps are those of their global ids)
    let mut releases = Vec::new();
    let mut first_rows = Vec::new();
    for p in &a.releases {
        for (r, first) in crate::release::ReleaseSet::open(p)?.into_parts() {
            releases.push(r);
            first_rows.push(first);
        }
    }
    let mechs = releases
        .iter()
        .map(|r| {
            let m = r.meta();
            mechanism::from_record(&m.mechanism, &m.guarantee)
                .map_err(|e| in_file(r.path(), e.detail()))
        })
        .collect::<Result<Vec<Box<dyn Mechanism>>>>()?;
    let mut total: Option<MeanAccumulator<'_>> = None;
    for ((r, m), &first) in releases.iter().zip(&mechs).zip(&first_rows) {
        let mut acc =
            MeanAccumulator::new(m.as_ref()).map_err(|e| in_file(r.path(), e.detail()))?;
        if r.n() > 0 {
            acc.add_rows(first, r.values()?)
                .map_err(|e| in_file(r.path(), e.detail()))?;
        }
        match total.as_mut() {
            None => total = Some(acc),
            Some(t) => t.merge(&acc).map_err(|e| {
                in_file(
                    r.path(),
                    format!(
                        "cannot be averaged with {}: {}",
                        a.releases[0].display(),
                        e.detail()
                    ),
                )
            })?,
        }
    }
    let Some(total) = total else {
        return Err(Error::param("releases", "no release given"));
    };
    let est = total
        .finish()
        .map_err(|e| in_file(&a.releases[0], e.detail()))?;
    if let (Some(path), Some(kind)) = (&a.output, kind) {
        write_mean(path, kind, &est.mean)?;
    }
    let first = releases[0].meta();
    if releases.iter().any(|r| !r.meta().private) {
        super::output::warn(
            "a release's noise came from a user-supplied --noise-seed: the mean is NOT private",
        );
    }
    if a.json {
        print_json(&a, first, &est)
    } else {
        print_text(&a, first, &est)
    }
}

fn in_file(path: &Path, msg: String) -> Error {
    Error::format(path, msg)
}

pub(super) fn write_mean(path: &Path, kind: OutKind, mean: &[f64]) -> Result<()> {
    let bytes = match kind {
        OutKind::Npy => crate::data::npy::f64_vector_bytes(mean),
        OutKind::Csv => {
            let mut s = mean
                .iter()
                .map(|x| format!("{x:e}"))
                .collect::<Vec<_>>()
                .join(",");
            s.push('\n');
            s.into_bytes()
        }
    };
    let mut f = AtomicFile::create(path)?;
    f.write_all(&bytes)?;
    f.commit()
}

fn print_text(a: &MeanArgs, m: &crate::release::ReleaseMeta, est: &MeanEstimate) -> Result<()> {
    let d = est.mean.len();
    outln!(
        "mean of {} rows from {} release{} ({}), d = {d}",
        est.n,
        a.releases.len(),
        if a.releases.len() == 1 { "" } else { "s" },
        a.releases
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    outln!(
        "mechanism: {}, {} ({})",
        m.mechanism.name.name(),
        m.guarantee.label(),
        m.guarantee.replace_one()
    )?;
    outln!(
        "expected squared error: E‖μ̂ − μ‖² = {:.6e} = {:.6} per user / n (closed form: {})",
        est.expected_sq_error,
        est.mse_per_user,
        est.error_note
    )?;
    outln!(
        "root mean squared error per coordinate: {:.6e}",
        (est.expected_sq_error / d as f64).sqrt()
    )?;
    let shown: Vec<String> = est
        .mean
        .iter()
        .take(SHOWN)
        .map(|x| format!("{x:.6}"))
        .collect();
    match &a.output {
        Some(p) => {
            outln!(
                "mean: [{}{}]",
                shown.join(", "),
                if d > SHOWN { ", …" } else { "" }
            )?;
            outln!("wrote {} ({d} values)", p.display())
        }
        None if d > SHOWN => outln!(
            "mean: [{}, …] (first {SHOWN} of {d}; -o mean.npy or mean.csv writes them all)",
            shown.join(", ")
        ),
        None => outln!("mean: [{}]", shown.join(", ")),
    }
}

fn print_json(a: &MeanArgs, m: &crate::release::ReleaseMeta, est: &MeanEstimate) -> Result<()> {
    let v = serde_json::json!({
        "releases": a.releases.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "n": est.n,
        "d": est.mean.len(),
        "mechanism": m.mechanism.name.name(),
        "guarantee": m.guarantee.label(),
        "statement": m.statement,
        "mse_per_user": est.mse_per_user,
        "expected_sq_error": est.expected_sq_error,
        "error_kind": est.error_kind,
        "error_note": est.error_note,
        "output": a.output.as_ref().map(|p| p.display().to_string()),
        "mean": est.mean,
    });
    outln!(
        "{}",
        serde_json::to_string_pretty(&v).map_err(super::output::json_error)?
    )
}
