//! The streaming stage of a publish: a reader thread decodes chunks of rows (and fingerprints
//! them as read, before any scaling), the calling thread privatises each chunk in parallel, and a
//! writer thread hashes and writes the payload. Buffers travel reader → main → writer and back,
//! so the steady state allocates nothing. Row ids are counted from the release's first row
//! whatever the chunk sizes, so a row's noise stream is that of its id
//! ([`NoiseSource::row_rng`]).

use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, Sender, SyncSender};

use super::chunks::{payload_elem, process_chunk, Chunk, OutBuf};
use super::StageTimes;
use crate::data::scale::Scaler;
use crate::data::RowReader;
use crate::error::{Error, Result};
use crate::ledger::fingerprint::Fingerprinter;
use crate::mechanism::{self, Mechanism, Payload};
use crate::privacy::samplers::noise::NoiseSource;
use crate::release::{DatasetRecord, ReleaseWriter};

/// What the streaming stage needs besides the reader and the writer.
pub(super) struct Pipeline<'a> {
    /// The mechanism (its public map built).
    pub mech: &'a dyn Mechanism,
    /// The public scaling, when it has steps.
    pub scaler: Option<&'a Scaler>,
    /// The secret noise.
    pub noise: &'a NoiseSource,
    /// The input, for messages.
    pub input: &'a Path,
    /// Rows per chunk.
    pub chunk: usize,
    /// The global id of the first row.
    pub first_row: u64,
    /// Whether the reader gives explicit ids (one per row).
    pub has_ids: bool,
}

/// What the streaming stage produced.
pub(super) struct Streamed {
    /// The writer, every row written, to be finished with the metadata.
    pub writer: ReleaseWriter,
    /// The fingerprint of the rows as read (with a ledger).
    pub dataset: Option<DatasetRecord>,
    /// Rows by how many of their outputs were perturbed (`0..=k`; the iDP noise sets).
    pub histogram: Vec<u64>,
}

impl Pipeline<'_> {
    /// Stream every row of `reader` through the mechanism into `writer`; the stage times go into
    /// `times`. The first error (reader, privatisation or writer) stops the run.
    pub fn run<'r>(
        &self,
        reader: Box<dyn RowReader + 'r>,
        writer: ReleaseWriter,
        fingerprint: Option<Fingerprinter>,
        times: &mut StageTimes,
    ) -> Result<Streamed> {
        let (p, k, payload) = (
            self.mech.input_dim(),
            self.mech.output_dim(),
            self.mech.payload(),
        );
        let (chunk, has_ids) = (self.chunk, self.has_ids);
        let mut histogram = vec![0u64; k + 1];
        let result: Result<(ReleaseWriter, _)> = std::thread::scope(|s| {
            let (tx, rx) = sync_channel::<Result<Chunk>>(2);
            let (in_pool_tx, in_pool_rx) = std::sync::mpsc::channel::<Vec<f32>>();
            let (out_pool_tx, out_pool_rx) = std::sync::mpsc::channel::<OutBuf>();
            let fp = fingerprint;
            let rh = s.spawn(move || read_loop(reader, fp, chunk, p, has_ids, &tx, &in_pool_rx));
            let (wtx, wrx) = sync_channel::<(OutBuf, Vec<f32>, Vec<u64>)>(2);
            let wh = s.spawn(move || write_loop(writer, wrx, out_pool_tx));
            let mut perturbed = Vec::new();
            let hist = &mut histogram;
            let mut row0 = self.first_row;
            let mut failure = None;
            let (mut busy, mut wait_read, mut wait_write, mut chunks) = (0.0, 0.0, 0.0, 0);
            let mut t = std::time::Instant::now();
            for msg in rx {
                wait_read += t.elapsed().as_secs_f64();
                t = std::time::Instant::now();
                let (mut v, l, ids) = match msg {
                    Ok(c) => c,
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                };
                let rows = v.len() / p;
                let mut out = out_pool_rx.try_recv().unwrap_or_else(|_| match payload {
                    Payload::F32 => OutBuf::F32(Vec::new()),
                    Payload::Bits => OutBuf::Bits(Vec::new()),
                });
                out.resize(rows * crate::release::row_bytes(payload, k) / payload_elem(payload));
                perturbed.resize(rows, 0);
                if let Err(e) = process_chunk(
                    self.mech,
                    self.scaler,
                    &mut v,
                    row0,
                    self.noise,
                    &mut out,
                    &mut perturbed,
                    self.input,
                ) {
                    failure = Some(e);
                    break;
                }
                for &c in &perturbed {
                    hist[(c as usize).min(k)] += 1;
                }
                let _ = in_pool_tx.send(v);
                row0 = match mechanism::row_id(row0, rows) {
                    Ok(r) => r,
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                };
                chunks += 1;
                busy += t.elapsed().as_secs_f64();
                t = std::time::Instant::now();
                if wtx.send((out, l, ids)).is_err() {
                    break; // the writer failed; its error is reported below
                }
                wait_write += t.elapsed().as_secs_f64();
                t = std::time::Instant::now();
            }
            drop(wtx);
            let w = wh
                .join()
                .map_err(|_| Error::param("output", "the writer thread panicked"))?;
            let (dataset, read_busy) = rh
                .join()
                .map_err(|_| Error::param("input", "the reader thread panicked"))?;
            times.read = read_busy;
            times.privatise = busy;
            times.wait_read = wait_read;
            times.wait_write = wait_write;
            times.chunks = chunks;
            match failure {
                Some(e) => Err(e),
                None => w.map(|(w, write_busy)| {
                    times.write = write_busy;
                    (w, dataset)
                }),
            }
        });
        let (writer, dataset) = result?;
        Ok(Streamed {
            writer,
            dataset,
            histogram,
        })
    }
}

/// The reader thread: chunks of `chunk` rows (`p` values each) into `tx`, buffers back from
/// `pool`; the rows are fingerprinted as read. Returns the fingerprint and the seconds spent.
fn read_loop(
    mut reader: Box<dyn RowReader + '_>,
    mut fp: Option<Fingerprinter>,
    chunk: usize,
    p: usize,
    has_ids: bool,
    tx: &SyncSender<Result<Chunk>>,
    pool: &Receiver<Vec<f32>>,
) -> (Option<DatasetRecord>, f64) {
    let mut busy = 0.0;
    loop {
        let t = std::time::Instant::now();
        // a new buffer is allocated fallibly: within the memory budget, but the budget may be
        // more than this machine has
        let mut v = pool.try_recv().unwrap_or_default();
        v.clear();
        let mut l = Vec::new();
        let mut ids = Vec::new();
        let want = chunk.saturating_mul(p);
        let reserved = v.try_reserve_exact(want).map_err(|_| {
            Error::param(
                "‹memory›",
                format!(
                    "cannot allocate {} for a chunk of {chunk} rows: lower the memory budget",
                    super::human_bytes(want.saturating_mul(4) as u64)
                ),
            )
        });
        // The fingerprint hashes the rows as read, before any scaling.
        let read = reserved
            .and_then(|()| reader.read_rows(chunk, &mut v, &mut l, &mut ids))
            .and_then(|got| {
                // A reader (or a wrapper) that says it has ids must give one per row.
                if has_ids && ids.len() != got {
                    return Err(Error::param(
                        "input",
                        format!("the reader gave {} ids for {got} rows", ids.len()),
                    ));
                }
                Ok(got)
            })
            .and_then(|got| match fp.as_mut() {
                Some(f) if got > 0 => f.update(&v).map(|()| got),
                _ => Ok(got),
            });
        busy += t.elapsed().as_secs_f64();
        match read {
            Ok(0) => break,
            Ok(_) => {
                if tx.send(Ok((v, l, ids))).is_err() {
                    break;
                }
            }
            Err(e) => {
                let _ = tx.send(Err(e));
                break;
            }
        }
    }
    (fp.map(|f| f.finish()), busy)
}

/// The writer thread: every privatised chunk from `rx` written (and hashed), its buffer sent back
/// to `pool`. Returns the writer and the seconds spent.
fn write_loop(
    mut writer: ReleaseWriter,
    rx: Receiver<(OutBuf, Vec<f32>, Vec<u64>)>,
    pool: Sender<OutBuf>,
) -> Result<(ReleaseWriter, f64)> {
    let mut busy = 0.0;
    for (out, labels, ids) in rx {
        let t = std::time::Instant::now();
        match &out {
            OutBuf::F32(v) => writer.write_f32(v, &labels, &ids)?,
            OutBuf::Bits(v) => writer.write_bits(v, &labels, &ids)?,
        }
        busy += t.elapsed().as_secs_f64();
        let _ = pool.send(out);
    }
    Ok((writer, busy))
}
