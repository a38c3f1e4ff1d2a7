//! Arithmetic in `Z_M`, `M = 2^b`: the modulus the encoders reduce their messages to and the
//! server's running sum of masked messages ([`crate::mechanism::distributed::secagg`] adds the pairwise masks;
//! [`crate::mechanism::distributed::round`] runs the round).

use crate::error::{Error, Result};

/// The modulus `M = 2^b` of the secure sum, `2 ≤ b ≤ 64`; residues are `u64` in `[0, M)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modulus {
    bits: u32,
    mask: u64,
}

impl Modulus {
    /// `M = 2^bits`; `bits` from 2 to 64 (`--bits`).
    pub fn new(bits: u32) -> Result<Modulus> {
        if !(2..=64).contains(&bits) {
            return Err(Error::param(
                "‹bits›",
                format!("the modulus M = 2^b needs 2 ≤ b ≤ 64 bits per coordinate, got b = {bits}"),
            ));
        }
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        Ok(Modulus { bits, mask })
    }
    /// `b`.
    pub fn bits(&self) -> u32 {
        self.bits
    }
    /// `M − 1` (the residues' bit mask).
    pub fn mask(&self) -> u64 {
        self.mask
    }
    /// `v mod M` for a signed integer (two's complement wraps exactly mod `2^b`).
    pub fn reduce(&self, v: i64) -> u64 {
        (v as u64) & self.mask
    }
    /// `(a + b) mod M`.
    pub fn add(&self, a: u64, b: u64) -> u64 {
        a.wrapping_add(b) & self.mask
    }
    /// `(a − b) mod M`.
    pub fn sub(&self, a: u64, b: u64) -> u64 {
        a.wrapping_sub(b) & self.mask
    }
    /// The representative of residue `r` in `[−M/2, M/2)`.
    pub fn lift(&self, r: u64) -> i64 {
        let r = r & self.mask;
        if self.bits == 64 {
            return r as i64;
        }
        let half = 1u64 << (self.bits - 1);
        if r >= half {
            r as i64 - (1i64 << (self.bits - 1)) * 2
        } else {
            r as i64
        }
    }
}

/// The server's running sum of masked messages mod `M`: `dim` residues and a client count,
/// whatever the number of clients; mergeable across threads.
#[derive(Debug, Clone, PartialEq)]
pub struct ModularSum {
    modulus: Modulus,
    sum: Vec<u64>,
    clients: u64,
}

impl ModularSum {
    /// An empty sum of `dim` residues.
    pub fn new(dim: usize, modulus: Modulus) -> ModularSum {
        ModularSum {
            modulus,
            sum: vec![0; dim],
            clients: 0,
        }
    }
    /// A sum revealed by a secure-aggregation protocol run elsewhere (Flower's SecAgg+, say):
    /// its residues mod `modulus` and the number of clients whose messages it holds. A residue
    /// `≥ M` is refused: it did not come from a sum mod `M`.
    pub fn from_residues(modulus: Modulus, residues: Vec<u64>, clients: u64) -> Result<ModularSum> {
        if let Some(j) = residues.iter().position(|&r| r > modulus.mask()) {
            return Err(Error::param(
                "sum",
                format!(
                    "residue {} at coordinate {j} (counted from 0) is not below M = 2^{}",
                    residues[j],
                    modulus.bits()
                ),
            ));
        }
        if clients == 0 {
            return Err(Error::param("clients", "a sum of no clients has no mean"));
        }
        Ok(ModularSum {
            modulus,
            sum: residues,
            clients,
        })
    }

    /// Add one (masked) message.
    pub fn add(&mut self, message: &[u64]) -> Result<()> {
        if message.len() != self.sum.len() {
            return Err(Error::param(
                "message",
                format!(
                    "a message of {} coordinates added to a sum of {}",
                    message.len(),
                    self.sum.len()
                ),
            ));
        }
        let m = self.modulus;
        for (s, &x) in self.sum.iter_mut().zip(message) {
            *s = m.add(*s, x);
        }
        self.clients += 1;
        Ok(())
    }
    /// Fold another thread's sum into this one.
    pub fn merge(&mut self, other: &ModularSum) -> Result<()> {
        if other.modulus != self.modulus || other.sum.len() != self.sum.len() {
            return Err(Error::param(
                "sum",
                "partial sums of different moduli or dimensions cannot be merged",
            ));
        }
        let m = self.modulus;
        for (s, &x) in self.sum.iter_mut().zip(&other.sum) {
            *s = m.add(*s, x);
        }
        self.clients += other.clients;
        Ok(())
    }
    /// Clients added so far.
    pub fn clients(&self) -> u64 {
        self.clients
    }
    /// The residues of the sum.
    pub fn residues(&self) -> &[u64] {
        &self.sum
    }
    /// The sum lifted to `[−M/2, M/2)` coordinate by coordinate.
    pub fn lifted(&self) -> Vec<i64> {
        self.sum.iter().map(|&r| self.modulus.lift(r)).collect()
    }
}
