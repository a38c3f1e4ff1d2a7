//! One secure-aggregation round you can run: every client encodes its vector
//! ([`ClientEncoder`]), masks the message with its pairwise pads ([`SecAggRound`]), the server adds
//! the masked messages mod `M` and decodes the mean. Clients run in parallel; memory is a few
//! client vectors and messages per thread plus the running sums, whatever the number of clients.
//!
//! Each client's secret randomness is ChaCha20 stream `i` of one key from the operating system
//! ([`NoiseSource::row_rng`]`(i)`), never written anywhere; the pads' pair keys come from a
//! separate round secret ([`SecAggRound::with_os_secret`]).
//!
//! With `check` the round also keeps what only a simulation can see — the exact non-private
//! mean and the exact integer sum before the reduction mod `M` — to report the error of the
//! private mean and how many coordinates of the sum wrapped around `[−M/2, M/2)`.

use std::sync::Mutex;

use rayon::prelude::*;

use super::secagg::{ModularSum, SecAggRound};
use crate::data::RowReader;
use crate::error::{Error, Result};
use crate::mechanism::distributed::ClientEncoder;
use crate::privacy::samplers::noise::NoiseSource;

/// Clients read per batch and thread (each client is its own parallel task).
const CLIENTS_PER_THREAD: usize = 4;

/// What a round produced.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundReport {
    /// The private mean estimate (`d` values).
    pub mean: Vec<f64>,
    /// Clients that took part.
    pub clients: u64,
    /// Clients whose vector was longer than the clip norm.
    pub clipped: u64,
    /// A bound on the norm of the bias clipping put into the mean: `‖decoder stretch‖ ·
    /// Σ max(0, ‖x_i‖ − c) / n` ([`ClientEncoder::clip_stretch`]), computed from the clients'
    /// vectors (a simulation diagnostic, not private).
    pub clip_bias_bound: f64,
    /// Conditional-rounding draws over all clients, and the most any client needed.
    pub rounding_tries: (u64, u32),
    /// Bits each client sent (`message_len · b`).
    pub bits_per_client: u64,
    /// With `check`: the exact non-private mean.
    pub exact_mean: Option<Vec<f64>>,
    /// With `check`: coordinates whose exact integer sum the decoder cannot read back from its
    /// residue ([`ClientEncoder::decodes_exactly`]; for DDG, outside `[−M/2, M/2)`).
    pub wrapped: Option<u64>,
}

impl RoundReport {
    /// With `check`: `‖μ̂ − μ‖²` of the private mean against the exact one.
    pub fn check_error(&self) -> Option<f64> {
        self.exact_mean.as_ref().map(|exact| {
            self.mean
                .iter()
                .zip(exact)
                .map(|(x, y)| (x - y) * (x - y))
                .sum()
        })
    }
}

/// Run a round over every row of `reader` (one client per row, `clients` of them — the graph of
/// pads needs the number up front).
pub fn run_round(
    encoder: &dyn ClientEncoder,
    reader: &mut dyn RowReader,
    secagg: &SecAggRound,
    noise: &NoiseSource,
    check: bool,
) -> Result<RoundReport> {
    let d = encoder.input_dim();
    if reader.dim() != d {
        return Err(Error::param(
            "input",
            format!(
                "clients have {} values per vector, the encoder expects {d}",
                reader.dim()
            ),
        ));
    }
    let len = encoder.message_len();
    if secagg.dim() != len || secagg.modulus() != encoder.modulus() {
        return Err(Error::param(
            "round",
            "the secure-aggregation round and the encoder disagree on the message shape",
        ));
    }
    let n = secagg.clients();
    let threads = rayon::current_num_threads().max(1);
    let batch = threads * CLIENTS_PER_THREAD;
    // One worker state per thread (partial sums and buffers), allocated once for the round:
    // each client is its own parallel task, so rayon balances them over the threads even when
    // another process takes a core for a while, and a task adds its client to the state of the
    // thread it runs on (an uncontended lock).
    let workers: Vec<Mutex<Worker>> = (0..threads)
        .map(|_| {
            Mutex::new(Worker {
                part: Partial::new(len, encoder, check, d),
                msg: vec![0u64; len],
                x: vec![0f64; d],
            })
        })
        .collect();
    let mut values: Vec<f32> = Vec::with_capacity(batch * d);
    let mut labels = Vec::new();
    let mut next: u64 = 0;
    loop {
        values.clear();
        labels.clear();
        let got = reader.read_chunk(batch, &mut values, &mut labels)?;
        if got == 0 {
            break;
        }
        if next + got as u64 > n {
            return Err(Error::param(
                "input",
                format!("more than the {n} clients the round was set up for"),
            ));
        }
        let first = next;
        values
            .par_chunks(d)
            .enumerate()
            .try_for_each(|(r, row)| -> Result<()> {
                let me = rayon::current_thread_index().unwrap_or(0) % workers.len();
                let mut guard = workers[me].lock().map_err(|_| poisoned())?;
                let Worker { part, msg, x } = &mut *guard;
                for (a, &b) in x.iter_mut().zip(row) {
                    *a = b as f64;
                }
                part.add_client(encoder, secagg, noise, first + r as u64, x, msg)
            })?;
        next += got as u64;
    }
    let mut parts = workers.into_iter();
    let mut total = match parts.next() {
        Some(w) => w.into_inner().map_err(|_| poisoned())?.part,
        None => Partial::new(len, encoder, check, d),
    };
    for w in parts {
        total.merge(w.into_inner().map_err(|_| poisoned())?.part)?;
    }
    if next != n {
        return Err(Error::param(
            "input",
            format!("the round was set up for {n} clients but the input has {next}"),
        ));
    }
    let mean = encoder.decode(&total.sum)?;
    let m = encoder.modulus();
    let wrapped = total
        .exact
        .as_ref()
        .map(|e| e.iter().filter(|&&v| !encoder.decodes_exactly(v)).count() as u64);
    Ok(RoundReport {
        mean,
        clients: n,
        clipped: total.clipped,
        clip_bias_bound: encoder.clip_stretch() * total.clip_excess / n as f64,
        rounding_tries: (total.tries, total.max_tries),
        bits_per_client: len as u64 * m.bits() as u64,
        exact_mean: total.raw.map(|s| s.iter().map(|v| v / n as f64).collect()),
        wrapped,
    })
}

/// A lock of a worker state was poisoned (a thread panicked while adding a client).
fn poisoned() -> Error {
    Error::param(
        "round",
        "a worker thread stopped while adding a client; the round's partial sums are lost",
    )
}

/// One thread's partial sums and buffers.
struct Worker {
    part: Partial,
    msg: Vec<u64>,
    x: Vec<f64>,
}

/// One thread's share of the round.
struct Partial {
    sum: ModularSum,
    clipped: u64,
    clip_excess: f64,
    tries: u64,
    max_tries: u32,
    exact: Option<Vec<i128>>,
    raw: Option<Vec<f64>>,
}

impl Partial {
    fn new(len: usize, encoder: &dyn ClientEncoder, check: bool, d: usize) -> Partial {
        Partial {
            sum: ModularSum::new(len, encoder.modulus()),
            clipped: 0,
            clip_excess: 0.0,
            tries: 0,
            max_tries: 0,
            exact: check.then(|| vec![0i128; len]),
            raw: check.then(|| vec![0f64; d]),
        }
    }

    fn add_client(
        &mut self,
        encoder: &dyn ClientEncoder,
        secagg: &SecAggRound,
        noise: &NoiseSource,
        client: u64,
        x: &[f64],
        msg: &mut [u64],
    ) -> Result<()> {
        let mut rng = noise.row_rng(client);
        let stats = encoder
            .encode(x, msg, &mut rng, self.exact.as_deref_mut())
            .map_err(|e| {
                Error::param(
                    "input",
                    format!("client {client} (counted from 0): {}", e.detail()),
                )
            })?;
        secagg.mask(client, msg)?;
        self.sum.add(msg)?;
        self.clipped += stats.clipped as u64;
        self.clip_excess += stats.clip_excess;
        self.tries += stats.rounding_tries as u64;
        self.max_tries = self.max_tries.max(stats.rounding_tries);
        if let Some(r) = self.raw.as_mut() {
            r.iter_mut().zip(x).for_each(|(a, b)| *a += b);
        }
        Ok(())
    }

    fn merge(&mut self, other: Partial) -> Result<()> {
        self.sum.merge(&other.sum)?;
        self.clipped += other.clipped;
        self.clip_excess += other.clip_excess;
        self.tries += other.tries;
        self.max_tries = self.max_tries.max(other.max_tries);
        if let (Some(a), Some(b)) = (self.exact.as_mut(), other.exact) {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        }
        if let (Some(a), Some(b)) = (self.raw.as_mut(), other.raw) {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        }
        Ok(())
    }
}

/// Bytes a round over `d`-dimensional client vectors keeps in memory, about: eight vectors of the
/// padded dimension `d' = 2^⌈log₂ d⌉` (the flattened vector, the message, the modular sum, the
/// exact check sum, the decoded mean and the row buffers), 8 bytes a value, per worker thread for
/// the per-client ones.
pub fn round_memory_bytes(d: usize) -> u128 {
    let d_rot = (d.max(1) as u128).next_power_of_two();
    let threads = rayon::current_num_threads().max(1) as u128;
    8 * d_rot * (4 + 4 * threads)
}

/// Refuse a round that cannot fit in the memory the system has available (Linux
/// `/proc/meminfo` `MemAvailable`; elsewhere only an absurd size, above 2⁴⁸ bytes, is refused),
/// before anything is allocated.
pub fn check_round_memory(d: usize, what: &str) -> Result<()> {
    let need = round_memory_bytes(d);
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemAvailable:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u128>().ok())
        })
        .map(|kib| kib * 1024)
        .unwrap_or(1 << 48);
    if need > available {
        return Err(Error::param(
            what,
            format!(
                "d = {d}: a round needs about {:.1} GiB of buffers for vectors of this dimension \
                 (padded to {}), and {:.1} GiB is available",
                need as f64 / f64::from(1u32 << 30),
                (d.max(1) as u128).next_power_of_two(),
                available as f64 / f64::from(1u32 << 30)
            ),
        ));
    }
    Ok(())
}
