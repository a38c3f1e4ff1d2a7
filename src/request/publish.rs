//! A publish run as a user asks for it, besides the mechanism ([`super::mechanism`]): the
//! pipeline's options (memory budget, output container, the noise source), the privacy budget
//! ledger that admits the release, the layout of the output (one file, split into shards, one
//! worker's shard), and the report of what was published, rendered as text.
//!
//! [`PublishJob::run`] is the one door every front end publishes through: it opens the ledger,
//! chooses the path for the layout and runs it, so that `dprp publish` and Python's
//! `dprp.publish` refuse and record the same things in the same order.
//!
//! A Rust program publishes as the command does: here `dprp publish sample.bin -m dp-oporp -e 10
//! -d 1e-6 -k 32 --shards 3 -o sharded`, then `dprp query sharded --queries sample.bin --top 5`
//! through [`super::search::Search`].
//!
//! ```
//! use dprp::data::{native, sample};
//! use dprp::release::ReleaseSet;
//! use dprp::request::publish::{Layout, PublishJob, PublishRequest, RunOptions};
//! use dprp::request::search::{Search, Searcher};
//! use dprp::request::MechanismOptions;
//! use dprp::search::sharded;
//!
//! # fn main() -> dprp::Result<()> {
//! let dir = tempfile::tempdir().map_err(|e| dprp::Error::io("tmp", e))?;
//! let input = dir.path().join("sample.bin");
//! native::write(&input, &sample::generate())?; // 2000 rows × 64 features in [0,1]
//! let plan = MechanismOptions {
//!     mechanism: "dp-oporp".into(),
//!     epsilon: 10.0,
//!     delta: Some(1e-6),
//!     k: Some(32),
//!     ..Default::default()
//! }
//! .resolve()?;
//! let output = dir.path().join("sharded");
//! let run = RunOptions { memory_mib: 64, ..Default::default() };
//! let (options, noise) = run.resolve(&output, plan.noise, None)?;
//! let job = PublishJob {
//!     request: PublishRequest {
//!         input: input.clone(),
//!         input_opts: Default::default(),
//!         scaling: Default::default(),
//!         params: plan.params,
//!         output: output.clone(),
//!     },
//!     noise,
//!     options,
//!     layout: Layout::Split(3),
//!     ledger: Default::default(),
//!     dataset: None,
//! };
//! let done = job.run(None, |_| {})?;
//! assert_eq!(done.outcome.meta.n, 2000);
//!
//! // its first ten rows as queries, searched as `dprp query` searches a shard directory
//! let set = ReleaseSet::open(&output)?;
//! let parts = sharded::part_sketches(&set)?;
//! let queries = parts[0].rows_range(0, 10);
//! let search = Search::new(&set, parts[0], queries, &[], (None, 5), Searcher::Exact)?;
//! let hits = search.batch(0, 10, None)?;
//! assert!(hits.iter().all(|h| h.len() == 5 && h.iter().all(|x| x.row < 2000)));
//! assert!(search.batch(5, 11, None).is_err()); // not a range of the 10 queries
//! # Ok(()) }
//! ```

use crate::error::field;
use std::path::{Path, PathBuf};

use super::shards::{publish_split, WorkerShard};
use crate::data::{open_reader, RowReader};
use crate::error::{Error, Result};
use crate::ledger::{Budget, Gate};
use crate::privacy::lattice::NoiseChoice;
use crate::privacy::samplers::noise::NoiseSource;
use crate::publish::{publish_from_as, PublishOptions, PublishOutcome};

/// A byte count as a person reads it (`1.5 GiB`), as the reports write it.
pub use crate::publish::human_bytes;
/// What to publish, how and where: the job's [`PublishJob::request`].
pub use crate::publish::PublishRequest;
use crate::release::{Container, DatasetRecord};

/// How to run the pipeline, as given.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The memory budget of the row buffers, in MiB (at least 1).
    pub memory_mib: usize,
    /// `native` or `parquet` (default: from the output's extension).
    pub output_format: Option<String>,
    /// Reproducible noise for experiments: the release is then NOT private.
    pub noise_seed: Option<String>,
    /// Replace an existing regular file at the output (a release written there before is then
    /// gone; its budget stays spent).
    pub overwrite: bool,
}

impl RunOptions {
    /// The pipeline's options for writing `output` with the Gaussian sampler `noise`, and the
    /// secret noise source (the operating system's, unless a noise seed was given).
    pub fn resolve(
        &self,
        output: &Path,
        noise: NoiseChoice,
        on_warning: Option<fn(&str)>,
    ) -> Result<(PublishOptions, NoiseSource)> {
        if self.memory_mib == 0 {
            return Err(Error::param(
                field("memory"),
                "the memory budget must be at least 1 MiB",
            ));
        }
        let container = match &self.output_format {
            Some(f) => Container::parse(f)?,
            None => Container::from_path(output),
        };
        let opts = PublishOptions {
            memory_budget: self.memory_mib.saturating_mul(1 << 20),
            on_warning,
            part: None,
            read_cap: None,
            space_rows: None,
            container,
            existing: crate::atomic::Existing::replace_if(self.overwrite),
            noise,
        };
        let source = match &self.noise_seed {
            Some(s) => NoiseSource::from_seed(s),
            None => NoiseSource::from_os()?,
        };
        Ok((opts, source))
    }
}

/// The ledger a publish is recorded in, with its budget.
#[derive(Debug, Clone, Default)]
pub struct LedgerOptions {
    /// The ledger directory.
    pub dir: Option<PathBuf>,
    /// `ε` or `ε,δ` for all releases of the dataset (needs the directory).
    pub budget: Option<String>,
}

impl LedgerOptions {
    /// The ledger's gate (its lock taken; `on_wait` is called while another publish holds it),
    /// or `None` without a ledger. A worker's shard cannot be recorded: it sees only its rows.
    pub fn open(
        &self,
        worker_shard: bool,
        on_wait: impl FnOnce(&Path),
    ) -> Result<Option<(Gate, Option<Budget>)>> {
        let budget = self.budget.as_deref().map(Budget::parse).transpose()?;
        let Some(dir) = &self.dir else {
            return match budget {
                Some(_) => Err(Error::missing(
                    field("ledger"),
                    format!(
                        "{} needs the ledger directory whose releases it counts ({} DIR)",
                        field("budget"),
                        field("ledger")
                    ),
                )),
                None => Ok(None),
            };
        };
        // refused before the ledger is opened: a refusal creates no ledger directory
        if worker_shard {
            return Err(Error::param(
                field("ledger"),
                "a worker's shard (‹shard i/N›) cannot be recorded in a ledger: the worker sees \
                 only its rows, while the ledger fingerprints the whole dataset and checks the \
                 budget under one lock; publish with ‹shards› N on one machine to record a \
                 sharded release, or without ‹ledger›",
            ));
        }
        let gate = Gate::new(dir, budget, || on_wait(dir))?;
        Ok(Some((gate, budget)))
    }
}

/// How a publish lays out its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// One release file.
    #[default]
    Whole,
    /// The rows split into N shard files in a new directory, with the manifest (‹shards› N).
    Split(u32),
    /// One worker's shard of a sharded release (‹shard› i/N), written into the shard directory.
    Worker(WorkerShard),
}

/// Everything one publish needs, resolved: the request, the secret noise, the pipeline's options,
/// the layout, the ledger, and (for a worker's shard only) the dataset record its job's driver
/// made.
pub struct PublishJob {
    /// What to publish, how, and where.
    pub request: PublishRequest,
    /// The secret noise source.
    pub noise: NoiseSource,
    /// The pipeline's options ([`RunOptions::resolve`]).
    pub options: PublishOptions,
    /// One file, split, or a worker's shard.
    pub layout: Layout,
    /// The ledger and budget, as given.
    pub ledger: LedgerOptions,
    /// A worker's shard recorded with this dataset fingerprint instead of its rows'.
    pub dataset: Option<DatasetRecord>,
}

/// What [`PublishJob::run`] did.
pub struct Published {
    /// The outcome: the release's metadata, warnings, timings.
    pub outcome: PublishOutcome,
    /// The release written: the output file, the shard directory of a split release, or a
    /// worker's shard file.
    pub release: PathBuf,
    /// The line about the shards, for a split release or a worker's shard.
    pub shards: Option<String>,
    /// The ledger that admitted the release, with its budget.
    pub ledger: Option<(Gate, Option<Budget>)>,
}

/// Where the rows come from when not from the request's input file: an in-memory array, or a
/// reader that can be cancelled (called once, or again if the pipeline reads twice).
pub type Rows<'a, 'r> = &'a mut dyn FnMut() -> Result<Box<dyn RowReader + 'r>>;

impl PublishJob {
    /// Run the publish: refuse what does not fit the layout, open the ledger (its lock taken,
    /// `on_wait` called while another publish holds it), then write one file, the split shards
    /// with their manifest, or the worker's shard. The rows come from `rows` when given (one file
    /// or a worker's shard), else from the request's input file.
    pub fn run<'r>(
        self,
        rows: Option<Rows<'_, 'r>>,
        on_wait: impl FnOnce(&Path),
    ) -> Result<Published> {
        let worker = matches!(self.layout, Layout::Worker(_));
        if self.dataset.is_some() && !worker {
            return Err(Error::param(
                field("dataset"),
                "records a fingerprint made by a job's driver in one worker's shard (‹shard›); a \
                 whole release is fingerprinted as it is published",
            ));
        }
        if let (Layout::Split(_), Some(_)) = (self.layout, &rows) {
            return Err(Error::param(
                field("shards"),
                "splits an input file into shards; rows held in memory are published whole or \
                 as one worker's shard",
            ));
        }
        // refused before anything is written: a worker's shard cannot be recorded
        let mut ledger = self.ledger.open(worker, on_wait)?;
        let gate = ledger.as_mut().map(|(g, _)| g);
        let (req, opts) = (&self.request, &self.options);
        let mut from_file = || open_reader(&req.input, &req.input_opts);
        let rows: Rows<'_, '_> = match rows {
            Some(r) => r,
            None => &mut from_file,
        };
        let (outcome, release, shards) = match self.layout {
            Layout::Whole => {
                let o = publish_from_as(req, rows, &self.noise, opts, gate, None)?;
                (o, req.output.clone(), None)
            }
            Layout::Split(n) => {
                let (o, line) = publish_split(req, &self.noise, opts, n, gate)?;
                (o, req.output.clone(), Some(line))
            }
            Layout::Worker(w) => {
                let plan = w.plan(req, opts)?;
                let dataset = self.dataset.as_ref();
                let o = publish_from_as(
                    &plan.request,
                    rows,
                    &self.noise,
                    &plan.options,
                    gate,
                    dataset,
                )?;
                let line = w.report(&plan, &req.output, o.meta.n);
                (o, plan.request.output, Some(line))
            }
        };
        Ok(Published {
            outcome,
            release,
            shards,
            ledger,
        })
    }
}

/// What a publish did, for its report.
pub struct PublishReport<'a> {
    /// The outcome.
    pub outcome: &'a PublishOutcome,
    /// Where the release was written.
    pub output: &'a Path,
    /// The line about the shards of a sharded release.
    pub shards: Option<String>,
    /// Whether to report where the time went.
    pub timings: bool,
    /// The ledger that admitted the release: its gate, directory and budget.
    pub ledger: Option<(&'a Gate, &'a Path, Option<Budget>)>,
}

impl PublishReport<'_> {
    /// The report as text lines: what was published, its noise, guarantee, shards, timings and
    /// ledger record.
    pub fn to_text(&self) -> Vec<String> {
        let m = &self.outcome.meta;
        let noun = m.payload.noun();
        let mut out = vec![format!(
            "published {}: {}, {} → {} per row with {}",
            self.output.display(),
            super::count(m.n, "row", "rows"),
            m.p,
            super::count(m.k as u64, noun.trim_end_matches('s'), noun),
            m.mechanism.name.name()
        )];
        if let Some(s) = &m.mechanism.sign {
            out.push(format!("signs: {}", s.describe()));
        }
        if let Some(g) = &m.mechanism.gaussian {
            out.push(format!(
                "noise: σ = {:.6} (Δ₂ = {:.6}, {})",
                g.sigma, g.sensitivity, g.method
            ));
        }
        if let Some(method) = m.mechanism.noise_method() {
            out.push(format!("noise method: {}", method.describe()));
        }
        if let Some(l) = &m.mechanism.local {
            out.push(format!(
                "constants: {}",
                crate::mechanism::local::release::describe_constants(&l.constants)
            ));
            out.push(format!(
                "expected squared error: E‖Z − v‖² = {:.6} per user ({}); dprp mean divides it by n",
                l.mse_per_user, l.mse_note
            ));
        }
        out.push(format!("guarantee: {}", m.statement));
        out.extend(self.shards.clone());
        if self.timings {
            out.push(self.timings_line());
        }
        out.extend(self.ledger_lines());
        out
    }

    fn timings_line(&self) -> String {
        let t = &self.outcome.timings;
        format!(
            "timings ({} thread(s), {} chunk(s)): set-up {:.3} s; reading {:.3} s (one thread); \
             privatising {:.3} s (all threads), waiting for rows {:.3} s, waiting for the writer \
             {:.3} s; writing {:.3} s (one thread); finishing {:.3} s; total {:.3} s",
            rayon::current_num_threads(),
            t.chunks,
            t.setup,
            t.read,
            t.privatise,
            t.wait_read,
            t.wait_write,
            t.write,
            t.finish,
            t.total
        )
    }

    fn ledger_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        let Some((g, dir, budget)) = &self.ledger else {
            return out;
        };
        if let Some(ad) = &g.admitted {
            let short = &ad.dataset.fingerprint[..16.min(ad.dataset.fingerprint.len())];
            out.push(format!(
                "ledger: recorded in {} as a release of dataset {short}",
                dir.display()
            ));
            if let (Some(t), Some(met), Some(b)) = (&ad.totals, &ad.met_by, budget) {
                out.push(format!(
                    "budget: {} release(s) of this dataset, within {} by {met}",
                    t.releases,
                    b.label()
                ));
            }
        }
        out
    }
}
