//! `publish --ledger DIR [--budget ε[,δ]]`'s hold on a ledger ([`Gate`]): the lock for the whole
//! run, the budget checked before any data is read and again with the finished release, which is
//! then recorded; and for a release written by many processes (`dprp.spark.publish`), its
//! reservation before they run, then its confirmation or withdrawal.

use std::path::{Path, PathBuf};

use super::compose::{self, Budget, Entry, Totals};
use super::{
    DatasetKey, Inventory, Ledger, LedgerLock, JOURNAL_FILE, KEY_FILE, LEDGER_SUBDIR, LOCK_FILE,
};
use crate::error::{Error, Result};
use crate::release::{DatasetRecord, ReleaseMeta};

/// What a gated publish ended with.
#[derive(Debug, Clone)]
pub struct Admitted {
    /// The release's dataset fingerprint.
    pub dataset: DatasetRecord,
    /// The dataset's totals including the new release, when a budget was checked.
    pub totals: Option<Totals>,
    /// Which composition met the budget.
    pub met_by: Option<String>,
}

/// `publish --ledger DIR [--budget ε[,δ]]`: holds the ledger's lock for the whole run,
/// fingerprints the rows, refuses a release that would exceed the budget and records the others.
#[derive(Debug)]
pub struct Gate {
    ledger: Ledger,
    lock: LedgerLock,
    key: DatasetKey,
    budget: Option<Budget>,
    inventory: Inventory,
    /// While shards are written (`publish --shards N`): the whole dataset's fingerprint, which
    /// every shard records; each shard's admission is deferred to the directory's.
    shards: Option<DatasetRecord>,
    /// Set when the release was admitted (or reserved).
    pub admitted: Option<Admitted>,
    /// The reservation this gate recorded and has not yet confirmed or withdrawn.
    reserved: Option<Entry>,
    /// What this gate created (a new ledger): removed again when nothing was admitted, so a
    /// refused first publish leaves no ledger behind. `(dir created, ledger subdirectory)`.
    fresh: Option<(bool, PathBuf)>,
}

impl Drop for Gate {
    fn drop(&mut self) {
        if self.admitted.is_some() {
            return;
        }
        if let Some((dir_created, sub)) = self.fresh.take() {
            remove_fresh_ledger(&self.ledger.dir, dir_created, &sub);
        }
    }
}

/// Undo a ledger a refused run created: best effort, the key, the lock, the journal and the
/// directories, each only if it is there (a directory only if it is then empty).
fn remove_fresh_ledger(dir: &Path, dir_created: bool, sub: &Path) {
    for f in [KEY_FILE, LOCK_FILE, JOURNAL_FILE] {
        let _ = std::fs::remove_file(sub.join(f));
    }
    let _ = std::fs::remove_dir(sub);
    if dir_created {
        let _ = std::fs::remove_dir(dir);
    }
}

impl Gate {
    /// Open (or create) the ledger in `dir` and take its lock (calling `on_wait` first if another
    /// publish holds it). With a budget, the ledger's releases are read now; an unreadable
    /// release file in the directory refuses the run.
    pub fn new(dir: &Path, budget: Option<Budget>, on_wait: impl FnOnce()) -> Result<Gate> {
        let dir_created = !dir.exists();
        let ledger = Ledger::create(dir)?;
        let lock = ledger.lock(on_wait)?;
        // Fresh means no run has used this ledger yet: judged under the lock, from the key and
        // the journal. (Judged before the lock, two racing first publishes both took the ledger
        // for their own, and the refused one removed the journal the other had just written.)
        let sub = ledger.sub();
        let fresh = (!sub.join(KEY_FILE).exists() && !sub.join(JOURNAL_FILE).exists())
            .then_some((dir_created, sub));
        let key = match ledger.key(&lock) {
            Ok(k) => k,
            Err(e) => {
                if let Some((dir_created, sub)) = &fresh {
                    remove_fresh_ledger(dir, *dir_created, sub);
                }
                return Err(e);
            }
        };
        // every release the journal records must be fingerprinted under this key: a journal
        // under another key (a lost or replaced key file) would let this dataset's fingerprint
        // change and its budget start again from zero
        let kid = key.key_id();
        if let Some(other) = ledger
            .parse_journal(&ledger.journal_bytes()?)?
            .iter()
            .filter_map(|e| e.dataset.as_ref())
            .find(|d| d.key_id != kid)
        {
            return Err(Error::ledger(
                dir,
                format!(
                    "the journal records releases fingerprinted under key {}, but the ledger's \
                     key is {kid}: with another key the same data gets another fingerprint and \
                     its budget would start again from zero. Restore the key file \
                     ({LEDGER_SUBDIR}/{KEY_FILE}) from a backup; to start a new ledger on \
                     purpose, use a new ledger directory",
                    other.key_id
                ),
            ));
        }
        // the journal must begin as the key file says (deleted, truncated or edited: refused)
        ledger.journal()?;
        // from here on a refusal drops the gate, which removes a ledger this run created
        let mut gate = Gate {
            ledger,
            lock,
            key,
            budget,
            inventory: Inventory::default(),
            shards: None,
            admitted: None,
            reserved: None,
            fresh,
        };
        if gate.budget.is_some() {
            let inv = gate.ledger.inventory()?;
            if let Some(u) = inv.unreadable.first() {
                return Err(Error::ledger(
                    dir,
                    format!(
                        "cannot check the budget: {} could not be read ({}); it may be a release \
                         of this dataset — repair it or move it out of the ledger directory",
                        u.file, u.error
                    ),
                ));
            }
            gate.inventory = inv;
        }
        Ok(gate)
    }

    /// The key rows are fingerprinted with.
    pub fn key(&self) -> &DatasetKey {
        &self.key
    }

    /// Publishing the shards of one release of the dataset `whole` (fingerprinted beforehand
    /// from all its rows): until [`end_shards`](Self::end_shards), every publish through this
    /// gate records `whole` instead of fingerprinting its own rows, and [`admit`](Self::admit)
    /// only checks that (the shard directory is admitted once, as one release, at the end).
    pub fn begin_shards(&mut self, whole: DatasetRecord) {
        self.shards = Some(whole);
    }

    /// End [`begin_shards`](Self::begin_shards): the next `admit` is the directory's.
    pub fn end_shards(&mut self) {
        self.shards = None;
    }

    /// The fingerprint to record instead of the rows' own, while shards are written.
    pub fn preset_dataset(&self) -> Option<&DatasetRecord> {
        self.shards.as_ref()
    }

    /// Before any data is read: refuse a release that alone exceeds the budget.
    pub fn precheck(&self, alone: &Entry) -> Result<()> {
        let Some(budget) = self.budget else {
            return Ok(());
        };
        let totals = compose::compose(&[alone]).map_err(|e| Error::ledger(&self.ledger.dir, e))?;
        compose::check(&totals, &budget).map(|_| ()).map_err(|why| {
            Error::ledger(
                &self.ledger.dir,
                format!(
                    "the privacy budget {} is exceeded by this release alone ({why}); nothing \
                     was written",
                    budget.label()
                ),
            )
        })
    }

    /// With the release finished but not yet in place: check the budget with it, and record it.
    pub fn admit(&mut self, output: &Path, meta: &ReleaseMeta, checksum: &[u8; 32]) -> Result<()> {
        let dir = self.ledger.dir.clone();
        let Some(dataset) = meta.dataset.clone() else {
            return Err(Error::ledger(
                &dir,
                "the release has no dataset fingerprint",
            ));
        };
        if let Some(whole) = &self.shards {
            // A shard: admitted with its directory.
            return if *whole == dataset {
                Ok(())
            } else {
                Err(Error::ledger(
                    &dir,
                    "a shard does not record its release's dataset fingerprint",
                ))
            };
        }
        let entry = Entry::from_meta(self.ledger.name_of(output), meta, checksum);
        let (totals, met_by) = self.check_budget(&entry, &dataset, output, "not written")?;
        self.ledger.record(&self.lock, &entry)?;
        self.admitted = Some(Admitted {
            dataset,
            totals,
            met_by,
        });
        Ok(())
    }

    /// With a budget: the dataset's totals with `entry` added, and which composition meets the
    /// budget; refused when none does (`output` and `outcome` name what the refusal leaves).
    fn check_budget(
        &self,
        entry: &Entry,
        dataset: &DatasetRecord,
        output: &Path,
        outcome: &str,
    ) -> Result<(Option<Totals>, Option<String>)> {
        let dir = &self.ledger.dir;
        let Some(budget) = self.budget else {
            return Ok((None, None));
        };
        let short = &dataset.fingerprint[..16.min(dataset.fingerprint.len())];
        let mut set = self.inventory.of_dataset(dataset);
        let before = set.len();
        set.push(entry);
        let totals = compose::compose(&set).map_err(|why| {
            Error::ledger(
                dir,
                format!(
                    "cannot check the budget for dataset {short}: {why}; {} {outcome}",
                    output.display()
                ),
            )
        })?;
        let met = compose::check(&totals, &budget).map_err(|why| {
            Error::ledger(
                dir,
                format!(
                    "publishing would exceed the privacy budget {}: dataset {short} has {before} \
                     earlier release(s) in the ledger, and with this one its total is {why}; {} \
                     {outcome}",
                    budget.label(),
                    output.display()
                ),
            )
        })?;
        Ok((Some(totals), Some(met)))
    }

    /// A release that many processes will write (the tasks of `dprp.spark.publish`), charged
    /// before any of them runs: `provisional` is the release's entry as its mechanism states it
    /// ([`Entry::provisional`]), of `n` rows of `dataset` (fingerprinted beforehand), to be
    /// written at `output`. Checked against the budget like a release and recorded as a
    /// reservation; [`confirm`](Self::confirm) replaces it with the finished release and
    /// [`withdraw`](Self::withdraw) takes it back when nothing was published. A reservation
    /// neither confirmed nor withdrawn (the driver died) stays counted. Returns its id.
    pub fn reserve(
        &mut self,
        output: &Path,
        provisional: Entry,
        dataset: DatasetRecord,
        n: u64,
    ) -> Result<String> {
        if self.reserved.is_some() {
            return Err(Error::ledger(
                &self.ledger.dir,
                "this ledger handle already holds a reservation: one release per handle",
            ));
        }
        let id =
            super::fingerprint::hex(&super::fingerprint::os_random::<16>("ledger reservation")?);
        let entry = Entry {
            file: self.ledger.name_of(output),
            checksum: format!("reserved-{id}"),
            created: crate::release::now_rfc3339(),
            n,
            dataset: Some(dataset.clone()),
            reservation: Some(compose::Reservation {
                id: id.clone(),
                state: compose::ReservationState::Reserved,
            }),
            ..provisional
        };
        let (totals, met_by) = self.check_budget(&entry, &dataset, output, "not published")?;
        self.ledger.record(&self.lock, &entry)?;
        self.admitted = Some(Admitted {
            dataset,
            totals,
            met_by,
        });
        self.reserved = Some(entry);
        Ok(id)
    }

    /// The reserved release is finished (not yet visible): record it in its reservation's
    /// place. Refused — the reservation staying charged — when the release is not what was
    /// reserved (another dataset, row count, mechanism, guarantee or calibration).
    pub fn confirm(
        &mut self,
        output: &Path,
        meta: &ReleaseMeta,
        checksum: &[u8; 32],
    ) -> Result<()> {
        let Some(reserved) = self.reserved.take() else {
            return Err(Error::ledger(&self.ledger.dir, "no reservation to confirm"));
        };
        let mut entry = Entry::from_meta(self.ledger.name_of(output), meta, checksum);
        entry.reservation = reserved.reservation.clone().map(|r| compose::Reservation {
            state: compose::ReservationState::Confirmed,
            ..r
        });
        let differs = [
            ("dataset", entry.dataset != reserved.dataset),
            ("rows", entry.n != reserved.n),
            ("mechanism", entry.mechanism != reserved.mechanism),
            ("guarantee", entry.guarantee != reserved.guarantee),
            ("calibration", entry.gaussian != reserved.gaussian),
            ("privacy", entry.private != reserved.private),
        ];
        if let Some((what, _)) = differs.iter().find(|(_, d)| *d) {
            self.reserved = Some(reserved);
            return Err(Error::ledger(
                &self.ledger.dir,
                format!(
                    "the finished release at {} differs from its reservation in its {what}; the \
                     reservation stays charged and the release must not be published",
                    output.display()
                ),
            ));
        }
        self.ledger.record(&self.lock, &entry)
    }

    /// The reserved release was not published (the job failed and every output it wrote was
    /// removed): record that the reservation no longer counts.
    pub fn withdraw(&mut self) -> Result<()> {
        let Some(reserved) = self.reserved.take() else {
            return Err(Error::ledger(
                &self.ledger.dir,
                "no reservation to withdraw",
            ));
        };
        let entry = Entry {
            reservation: reserved.reservation.clone().map(|r| compose::Reservation {
                state: compose::ReservationState::Withdrawn,
                ..r
            }),
            ..reserved
        };
        self.ledger.record(&self.lock, &entry)
    }
}
