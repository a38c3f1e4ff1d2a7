//! `dprp ledger DIR`: the releases of each dataset in a privacy budget ledger and their total
//! guarantee ([`crate::ledger`]), as one report rendered as text or serialised as JSON; a part
//! of a dataset's fingerprint ([`fingerprint_part`]); and the ledger a job of many processes
//! holds in its driver ([`JobGate`]).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::data::parquet::Columns;
use crate::data::scale::ScalingRequest;
use crate::data::source::Window;
use crate::data::{open_reader, InputOptions, RowReader};
use crate::error::{Error, Result};
use crate::ledger::compose::{compose, fmt_num, Totals};
use crate::ledger::fingerprint::Fingerprinter;
use crate::ledger::{Budget, FileStatus, Gate, Inventory, Ledger, Listed, Unreadable};
use crate::publish::{provisional_entry, PublishRequest};
use crate::release::{DatasetRecord, ReleaseSet};
use crate::request::publish::RunOptions;
use crate::request::MechanismPlan;

/// One dataset's releases and totals.
#[derive(Debug, Serialize)]
struct Dataset {
    fingerprint: String,
    key_id: String,
    /// Whether the fingerprint was made with this ledger's key.
    this_ledger: bool,
    releases: Vec<Listed>,
    total: Option<Totals>,
    no_total_reason: Option<String>,
}

/// A ledger's releases grouped by dataset, with each dataset's total guarantee.
#[derive(Debug, Serialize)]
pub struct LedgerReport {
    dir: String,
    key_id: Option<String>,
    datasets: Vec<Dataset>,
    unattributed: Vec<Listed>,
    unreadable: Vec<Unreadable>,
    /// Every release listed (attributed or not).
    #[serde(skip)]
    releases: usize,
    /// The ledger directory.
    #[serde(skip)]
    path: PathBuf,
}

/// The releases of `inv` grouped by dataset (fingerprint and key id), in the order first seen,
/// and those without a fingerprint.
fn group(inv: &Inventory, key_id: Option<&str>) -> (Vec<Dataset>, Vec<Listed>) {
    let mut datasets: Vec<Dataset> = Vec::new();
    let mut unattributed = Vec::new();
    for l in &inv.releases {
        let Some(DatasetRecord {
            fingerprint,
            key_id: kid,
            ..
        }) = &l.entry.dataset
        else {
            unattributed.push(l.clone());
            continue;
        };
        match datasets
            .iter_mut()
            .find(|d| &d.fingerprint == fingerprint && &d.key_id == kid)
        {
            Some(d) => d.releases.push(l.clone()),
            None => datasets.push(Dataset {
                fingerprint: fingerprint.clone(),
                key_id: kid.clone(),
                this_ledger: key_id == Some(kid.as_str()),
                releases: vec![l.clone()],
                total: None,
                no_total_reason: None,
            }),
        }
    }
    for d in &mut datasets {
        let entries: Vec<_> = d.releases.iter().map(|l| &l.entry).collect();
        match compose(&entries) {
            Ok(t) => d.total = Some(t),
            Err(why) => d.no_total_reason = Some(why),
        }
    }
    (datasets, unattributed)
}

fn short(hex: &str) -> &str {
    &hex[..16.min(hex.len())]
}

fn guarantee_label(l: &Listed) -> String {
    if l.entry.private {
        l.entry.guarantee.label()
    } else {
        "NOT PRIVATE".into()
    }
}

/// The cells of a release's row: file, mechanism, guarantee, date and a note on its file.
fn cells(l: &Listed) -> [String; 5] {
    let reserved = l
        .entry
        .reservation
        .as_ref()
        .is_some_and(|r| r.state == crate::ledger::compose::ReservationState::Reserved);
    let note = match (l.status, l.in_journal) {
        _ if reserved => "(reserved by a job that neither finished nor withdrew it: still \
                          counted)"
            .into(),
        (FileStatus::Present, true) => String::new(),
        (FileStatus::Present, false) => "(not in the journal: found in the directory)".into(),
        (FileStatus::Missing, _) => "(file missing: recorded in the journal, still counted)".into(),
        (FileStatus::Replaced, _) => {
            "(the file now holds another release: this one is still counted)".into()
        }
    };
    [
        l.entry.file.clone(),
        l.entry.mechanism.clone(),
        guarantee_label(l),
        l.entry.created.clone(),
        note,
    ]
}

/// The releases as a table with a header, columns padded to their widest cell.
fn table(rows: &[Listed], out: &mut String) {
    let cells: Vec<[String; 5]> = rows.iter().map(cells).collect();
    let head = ["file", "mechanism", "guarantee", "date", ""];
    let mut w = [0usize; 4];
    for (i, wi) in w.iter_mut().enumerate() {
        *wi = cells
            .iter()
            .map(|c| c[i].chars().count())
            .chain(std::iter::once(head[i].chars().count()))
            .max()
            .unwrap_or(0);
    }
    let pad = |s: &str, n: usize| format!("{s}{}", " ".repeat(n.saturating_sub(s.chars().count())));
    out.push_str(&format!(
        "  {}  {}  {}  {}\n",
        pad(head[0], w[0]),
        pad(head[1], w[1]),
        pad(head[2], w[2]),
        head[3]
    ));
    for c in &cells {
        let line = format!(
            "  {}  {}  {}  {}  {}",
            pad(&c[0], w[0]),
            pad(&c[1], w[1]),
            pad(&c[2], w[2]),
            pad(&c[3], w[3]),
            c[4]
        );
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

fn describe_totals(t: &Totals, out: &mut String) {
    if t.kind == "not private" {
        out.push_str(
            "  total: NOT PRIVATE — a release's noise came from a ‹noise_seed›, so nothing \
             bounds what these releases reveal together\n",
        );
        return;
    }
    let kind = t.kind.as_str();
    let basic = if t.delta == 0.0 {
        format!("{}-{kind}", t.epsilon)
    } else {
        format!("({}, {})-{kind}", t.epsilon, fmt_num(t.delta))
    };
    out.push_str(&format!("  total, basic composition (Σε, Σδ): {basic}\n"));
    match (t.rho, t.zcdp_epsilon) {
        (Some(rho), Some(e)) => out.push_str(&format!(
            "  total, zCDP composition: ρ = {} → ({}, {})-{kind} (tight conversion of \
             Canonne, Kamath & Steinke){}\n",
            fmt_num(rho),
            fmt_num(e),
            fmt_num(t.delta),
            if e < t.epsilon {
                "; the tighter of the two"
            } else {
                "; basic composition is tighter here"
            }
        )),
        _ => out.push_str(&format!("  zCDP: {}\n", t.zcdp_note)),
    }
    out.push_str(&format!("  neighbours: {}\n", t.relation.describe()));
    if let Some(n) = &t.relation_note {
        out.push_str(&format!("  ({n})\n"));
    }
}

impl LedgerReport {
    /// Read the ledger in `dir`: its key id, its journal and the releases in the directory.
    pub fn open(dir: &Path) -> Result<LedgerReport> {
        let ledger = Ledger::open(dir)?;
        let key_id = ledger.key_id()?;
        let inv = ledger.inventory()?;
        let (datasets, unattributed) = group(&inv, key_id.as_deref());
        Ok(LedgerReport {
            dir: dir.display().to_string(),
            key_id,
            datasets,
            unattributed,
            releases: inv.releases.len(),
            unreadable: inv.unreadable,
            path: dir.to_path_buf(),
        })
    }

    /// The release files that could not be read (not in any total).
    pub fn unreadable(&self) -> &[Unreadable] {
        &self.unreadable
    }

    /// An error when some release file could not be read: the totals do not include it.
    pub fn complete(&self) -> Result<()> {
        if self.unreadable.is_empty() {
            return Ok(());
        }
        Err(Error::ledger(
            &self.path,
            format!(
                "{} release file(s) could not be read; the totals above do not include them",
                self.unreadable.len()
            ),
        ))
    }

    /// The report as text: a line on the ledger, then per dataset its releases and totals, then
    /// the releases without a dataset.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "ledger {}: {}; {} release(s), {} dataset(s), {} unattributed\n",
            self.dir,
            match &self.key_id {
                Some(k) => format!("key id {k}"),
                None => "no ledger key yet (nothing was published with ‹ledger› here)".into(),
            },
            self.releases,
            self.datasets.len(),
            self.unattributed.len()
        );
        for d in &self.datasets {
            s.push_str(&format!(
                "\ndataset {}{} — {} release(s)\n",
                short(&d.fingerprint),
                if d.this_ledger {
                    String::new()
                } else {
                    format!(
                        " (fingerprinted under another ledger's key, key id {}: not comparable \
                         with this ledger's fingerprints)",
                        d.key_id
                    )
                },
                d.releases.len()
            ));
            table(&d.releases, &mut s);
            match (&d.total, &d.no_total_reason) {
                (Some(t), _) => describe_totals(t, &mut s),
                (None, Some(why)) => s.push_str(&format!("  no total: {why}\n")),
                (None, None) => {}
            }
        }
        if !self.unattributed.is_empty() {
            s.push_str(&format!(
                "\nunattributed — {} release(s) without a dataset fingerprint (published without \
                 ‹ledger›): counted toward no dataset\n",
                self.unattributed.len()
            ));
            table(&self.unattributed, &mut s);
        }
        s
    }
}

/// A part of a dataset's fingerprint, made where the rows are (`dprp.fingerprint_part`, a Spark
/// task's rows) for the driver to merge ([`Fingerprinter::merge`]): how many rows, their width,
/// and the sum of their digests under a ledger's row key ([`Fingerprinter::partial`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FingerprintPart {
    /// Rows hashed.
    pub rows: u64,
    /// Their width (0 when no row was read and the reader knows none).
    pub dim: usize,
    /// The sum of their digests modulo 2^256, little-endian.
    pub sum: [u8; 32],
}

/// The rows `reader` gives, hashed with a ledger's row key (`rows_key`, from the ledger's
/// dataset key) in chunks, as publishing reads them: a part of the dataset's fingerprint.
pub fn fingerprint_part(reader: &mut dyn RowReader, rows_key: [u8; 32]) -> Result<FingerprintPart> {
    let dim = reader.dim();
    let mut f = Fingerprinter::with_rows_key(rows_key, dim);
    let (mut values, mut labels) = (Vec::new(), Vec::new());
    let chunk = ((1 << 16) / dim.max(1)).max(1);
    loop {
        values.clear();
        labels.clear();
        if reader.read_chunk(chunk, &mut values, &mut labels)? == 0 {
            let (rows, sum) = f.partial();
            return Ok(FingerprintPart { rows, dim, sum });
        }
        f.update(&values)?;
    }
}

/// The rows of a dataset file as `dprp publish` reads them (`column`: the vector column of a
/// Parquet input), only rows `lo..hi` when `rows` is given: what [`fingerprint_part`] hashes for
/// a task that reads its part itself.
pub fn file_part(
    path: &Path,
    column: Option<String>,
    rows: Option<(u64, u64)>,
) -> Result<Box<dyn RowReader>> {
    let opts = InputOptions {
        columns: Columns {
            vectors: column,
            ..Default::default()
        },
        ..Default::default()
    };
    if let Some((lo, hi)) = rows {
        if lo > hi {
            return Err(Error::param(
                "rows",
                format!("({lo}, {hi}): the first row is past the end"),
            ));
        }
    }
    let inner = open_reader(path, &opts)?;
    Ok(match rows {
        Some((lo, hi)) => Box::new(Window::new(inner, lo, Some(hi - lo))),
        None => inner,
    })
}

/// A ledger held by the driver of a job of many processes (`dprp.LedgerGate`, the Spark driver
/// of `dprp.spark.publish(…, ledger=, budget=)`): opened with its lock, the dataset fingerprinted
/// from its tasks' parts, the release reserved before any task publishes, then confirmed when it
/// is finished or withdrawn when the job failed. Dropping it releases the lock.
pub struct JobGate {
    gate: Gate,
}

impl JobGate {
    /// Open (or create) the ledger in `dir` and take its lock, waiting for another publish that
    /// holds it; with `budget` (`--budget`'s text: `ε` or `ε,δ`) releases that would exceed it
    /// are refused.
    pub fn open(dir: &Path, budget: Option<&str>) -> Result<JobGate> {
        let budget = budget.map(Budget::parse).transpose()?;
        Ok(JobGate {
            gate: Gate::new(dir, budget, || {})?,
        })
    }

    /// The row-hashing key for [`fingerprint_part`] (secret: for the processes that read the
    /// rows, never to be logged or written).
    pub fn rows_key(&self) -> [u8; 32] {
        self.gate.key().rows_key()
    }

    /// The dataset's record from its parts `(rows, sum)` (each a [`FingerprintPart`]'s) of rows
    /// of `dim` values, and the rows they hold.
    pub fn dataset(&self, dim: usize, parts: &[(u64, Vec<u8>)]) -> Result<(DatasetRecord, u64)> {
        let mut f = self.gate.key().fingerprinter(dim);
        for (rows, sum) in parts {
            let sum: [u8; 32] = sum.as_slice().try_into().map_err(|_| {
                Error::param(
                    "parts",
                    format!("a sum of {} bytes, expected 32", sum.len()),
                )
            })?;
            f.merge(*rows, &sum)?;
        }
        let rows = f.rows();
        Ok((f.finish(), rows))
    }

    /// Charge the release to be written at `output` — `rows` rows of `dataset` of `dim` values,
    /// published with `plan` and `scaling` (and `noise_seed`, `--noise-seed`'s text) — before
    /// any task runs: what [`provisional_entry`] records, refused when it would exceed the
    /// budget. Returns the reservation's id.
    #[allow(clippy::too_many_arguments)]
    pub fn reserve(
        &mut self,
        output: &Path,
        rows: u64,
        dataset: DatasetRecord,
        dim: usize,
        plan: MechanismPlan,
        scaling: ScalingRequest,
        noise_seed: Option<String>,
    ) -> Result<String> {
        let (opts, source) = RunOptions {
            memory_mib: 256,
            output_format: None,
            noise_seed,
            overwrite: false,
        }
        .resolve(output, plan.noise, None::<fn(&str)>)?;
        let req = PublishRequest {
            input: PathBuf::from("(reservation)"),
            input_opts: Default::default(),
            scaling,
            params: plan.params,
            output: output.to_path_buf(),
        };
        let entry = provisional_entry(&req, dim, &source, &opts)?;
        self.gate.reserve(output, entry, dataset, rows)
    }

    /// Record the finished release at `release` (a sharded release's directory, not yet
    /// published elsewhere) in its reservation's place; refused when it is not what was reserved.
    pub fn confirm(&mut self, release: &Path) -> Result<()> {
        let set = ReleaseSet::open_with(release, true)?;
        let (meta, sum) = (set.meta().clone(), set.checksum());
        self.gate.confirm(release, &meta, &sum)
    }

    /// The job failed and nothing it wrote remains: the reservation no longer counts.
    pub fn withdraw(&mut self) -> Result<()> {
        self.gate.withdraw()
    }
}
