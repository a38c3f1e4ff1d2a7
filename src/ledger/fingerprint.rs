//! The dataset fingerprint: a keyed multiset hash of the rows.
//!
//! **Why keyed.** A release is public. A plain hash of the dataset written into it would break
//! differential privacy outright: an adversary who knows every row but one, and has a candidate
//! for the last, hashes the candidate dataset and compares — an exact membership test that no
//! noise protects. The fingerprint is therefore BLAKE3 in *keyed* mode under a 256-bit key drawn
//! from the operating system's CSPRNG and kept secret by the data holder (in the ledger directory,
//! see [`crate::ledger`]); without the key the fingerprint is a pseudorandom value (BLAKE3's keyed
//! mode is a PRF), so it says nothing about the rows. Two sub-keys are derived from the key with
//! BLAKE3's key derivation (distinct contexts): one hashes rows, the other makes the public
//! [`DatasetKey::key_id`], which names the key without revealing it.
//!
//! **What "the same dataset" means.** The *rows as read*: the f32 values the input reader decodes,
//! before `publish`'s own scaling flags (`--scale`, `--normalize`, `--clip`, `--clip-norm`), as a
//! multiset — row order does not matter, labels are not included, and `-0.0` counts as `0.0`.
//! So the same data published twice with different mechanisms, scalings or sketch widths is one
//! dataset; so is the same data in another format when the values decode to the same f32 numbers
//! (MNIST IDX and the `.npy` of its bytes; a CSV printed with enough digits), or shuffled, or with
//! its labels dropped. File bytes are not hashed: they change with the format, compression and
//! header while the people in the data do not. What the fingerprint cannot see: any change of a
//! value (adding, removing or editing one row gives another fingerprint — by design, it cannot
//! tell a neighbouring dataset from an unrelated one), and scaling applied *before* publishing
//! (a file `convert`ed with `--scale 255` holds other values than the original). Such releases are
//! accounted as separate datasets; the user who publishes derived versions of the same people must
//! add their budgets up themselves.
//!
//! **The construction** (MSet-Add-Hash of Clarke, Devadas, van Dijk, Gassend and Suh, *Incremental
//! Multiset Hash Functions and their Application to Memory Integrity Checking*, ASIACRYPT 2003):
//! each row `r` of `p` values is hashed as `h(r) = BLAKE3_keyed(K_rows, "row" ‖ p ‖ r)` (values as
//! little-endian f32), the 256-bit digests are added modulo 2²⁵⁶ — an order-independent sum that,
//! unlike XOR, does not cancel duplicate rows — and the fingerprint is
//! `BLAKE3_keyed(K_rows, "set" ‖ n ‖ p ‖ Σ h(r))`. With `h` a PRF under a secret key, finding two
//! different multisets with the same sum is infeasible (their Theorem 2).

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::release::DatasetRecord;

/// Key-derivation context of the row-hashing key.
const ROWS_CONTEXT: &str = "dprp 2026-11 ledger dataset-rows v1";
/// Key-derivation context of the key identifier.
const ID_CONTEXT: &str = "dprp 2026-11 ledger key-id v1";

/// What the fingerprint hashes, as recorded in releases.
pub const HASHED: &str = "keyed BLAKE3 multiset hash of the rows as read (f32 values before \
                          publish's scaling; row order and labels ignored)";

/// The secret 256-bit ledger key. Its `Debug` output never shows the key.
#[derive(Clone)]
pub struct DatasetKey {
    rows: [u8; 32],
    id: [u8; 32],
}

impl std::fmt::Debug for DatasetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatasetKey")
            .field("key_id", &self.key_id())
            .finish_non_exhaustive()
    }
}

impl DatasetKey {
    /// The key from its 32 secret bytes.
    pub fn from_bytes(key: &[u8; 32]) -> DatasetKey {
        DatasetKey {
            rows: blake3::derive_key(ROWS_CONTEXT, key),
            id: blake3::derive_key(ID_CONTEXT, key),
        }
    }

    /// A fresh key from the operating system's CSPRNG, with its 32 bytes (to be stored).
    pub fn generate() -> Result<([u8; 32], DatasetKey)> {
        let key = os_random::<32>("ledger key")?;
        let k = DatasetKey::from_bytes(&key);
        Ok((key, k))
    }

    /// The public name of the key: 16 hex digits of a hash of the key under its own
    /// derivation context (it identifies the key, and reveals nothing of it or of any data).
    pub fn key_id(&self) -> String {
        hex(&self.id[..8])
    }

    /// The row-hashing sub-key, for the processes that hash a dataset's rows in parts
    /// ([`Fingerprinter::with_rows_key`], the executors of `dprp.spark.publish`). It makes
    /// fingerprints (and so lets its holder test a guessed dataset against any release of this
    /// ledger), but not the key id or the ledger key: give it only to processes that hold the
    /// rows anyway, and keep it out of logs and files.
    pub fn rows_key(&self) -> [u8; 32] {
        self.rows
    }

    /// A fingerprinter for one dataset of `p` values per row.
    pub fn fingerprinter(&self, p: usize) -> Fingerprinter {
        Fingerprinter {
            key: self.rows,
            key_id: self.key_id(),
            p,
            n: 0,
            sum: [0; 4],
        }
    }
}

/// Accumulates the rows of one dataset, in any order and in chunks (the sum is commutative).
#[derive(Clone)]
pub struct Fingerprinter {
    key: [u8; 32],
    key_id: String,
    p: usize,
    n: u64,
    sum: [u64; 4],
}

impl std::fmt::Debug for Fingerprinter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fingerprinter")
            .field("p", &self.p)
            .field("n", &self.n)
            .finish_non_exhaustive()
    }
}

/// `a += b` modulo 2²⁵⁶ (little-endian 64-bit limbs).
fn add256(a: &mut [u64; 4], b: &[u64; 4]) {
    let mut carry = false;
    for (x, y) in a.iter_mut().zip(b) {
        let (s1, c1) = x.overflowing_add(*y);
        let (s2, c2) = s1.overflowing_add(carry as u64);
        *x = s2;
        carry = c1 || c2;
    }
}

fn limbs(d: &[u8; 32]) -> [u64; 4] {
    let mut l = [0u64; 4];
    for (i, c) in d.chunks_exact(8).enumerate() {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        l[i] = u64::from_le_bytes(b);
    }
    l
}

impl Fingerprinter {
    fn row_digest(&self, row: &[f32], buf: &mut Vec<u8>) -> [u64; 4] {
        buf.clear();
        buf.extend_from_slice(b"row");
        buf.extend_from_slice(&(self.p as u64).to_le_bytes());
        for &v in row {
            // -0.0 and 0.0 are the same value (formats disagree on the sign of zero).
            let v = if v == 0.0 { 0.0f32 } else { v };
            buf.extend_from_slice(&v.to_le_bytes());
        }
        limbs(blake3::keyed_hash(&self.key, buf).as_bytes())
    }

    /// Add the rows of `values` (`p` values per row, row-major). Hashes in parallel.
    pub fn update(&mut self, values: &[f32]) -> Result<()> {
        if self.p == 0 || !values.len().is_multiple_of(self.p) {
            return Err(Error::param(
                "fingerprint",
                format!(
                    "{} values are not whole rows of {} values",
                    values.len(),
                    self.p
                ),
            ));
        }
        let this = &*self;
        let part = values
            .par_chunks(this.p * 64)
            .map(|block| {
                let mut buf = Vec::with_capacity(11 + 4 * this.p);
                let mut s = [0u64; 4];
                for row in block.chunks_exact(this.p) {
                    add256(&mut s, &this.row_digest(row, &mut buf));
                }
                s
            })
            .reduce(
                || [0u64; 4],
                |mut a, b| {
                    add256(&mut a, &b);
                    a
                },
            );
        add256(&mut self.sum, &part);
        self.n += (values.len() / self.p) as u64;
        Ok(())
    }

    /// A fingerprinter for part of a dataset's rows, from the row-hashing sub-key alone
    /// ([`DatasetKey::rows_key`]): it makes a [`partial`](Self::partial) sum, to be
    /// [`merge`](Self::merge)d by the holder of the ledger key (its own `finish` would not
    /// know the key id).
    pub fn with_rows_key(rows_key: [u8; 32], p: usize) -> Fingerprinter {
        Fingerprinter {
            key: rows_key,
            key_id: String::new(),
            p,
            n: 0,
            sum: [0; 4],
        }
    }

    /// The rows added so far and the sum of their digests (32 bytes, little-endian): a part of
    /// the multiset sum, which parts add up to in any order.
    pub fn partial(&self) -> (u64, [u8; 32]) {
        let mut b = [0u8; 32];
        for (c, l) in b.chunks_exact_mut(8).zip(self.sum) {
            c.copy_from_slice(&l.to_le_bytes());
        }
        (self.n, b)
    }

    /// Add a [`partial`](Self::partial) sum of other rows of the same dataset (hashed under
    /// the same key with the same `p`: a part made otherwise gives a fingerprint of nothing).
    pub fn merge(&mut self, rows: u64, sum: &[u8; 32]) -> Result<()> {
        self.n = self
            .n
            .checked_add(rows)
            .ok_or_else(|| Error::param("fingerprint", "the parts' row counts overflow 64 bits"))?;
        add256(&mut self.sum, &limbs(sum));
        Ok(())
    }

    /// Rows added so far.
    pub fn rows(&self) -> u64 {
        self.n
    }

    /// The fingerprint of every row added, as recorded in a release.
    pub fn finish(&self) -> DatasetRecord {
        let mut buf = Vec::with_capacity(3 + 16 + 32);
        buf.extend_from_slice(b"set");
        buf.extend_from_slice(&self.n.to_le_bytes());
        buf.extend_from_slice(&(self.p as u64).to_le_bytes());
        for l in self.sum {
            buf.extend_from_slice(&l.to_le_bytes());
        }
        DatasetRecord {
            fingerprint: blake3::keyed_hash(&self.key, &buf).to_hex().to_string(),
            key_id: self.key_id.clone(),
            hashed: HASHED.into(),
        }
    }
}

/// `N` bytes from the operating system's CSPRNG; a failure is an error naming `what` they were for.
pub(crate) fn os_random<const N: usize>(what: &str) -> Result<[u8; N]> {
    let mut b = [0u8; N];
    use rand::TryRng;
    rand::rngs::SysRng.try_fill_bytes(&mut b).map_err(|e| {
        Error::param(
            what,
            format!("the operating system's random source failed: {e}"),
        )
    })?;
    Ok(b)
}

/// Lower-case hex of bytes.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(key: &DatasetKey, p: usize, rows: &[f32]) -> String {
        let mut f = key.fingerprinter(p);
        f.update(rows).unwrap();
        f.finish().fingerprint
    }

    fn data(n: usize, p: usize) -> Vec<f32> {
        (0..n * p)
            .map(|i| ((i * 37 % 101) as f32) / 101.0 - 0.5)
            .collect()
    }

    #[test]
    fn parts_hashed_with_the_rows_key_merge_into_the_whole_fingerprint() {
        let key = DatasetKey::from_bytes(&[9; 32]);
        let (n, p) = (257, 6);
        let d = data(n, p);
        let whole = fp(&key, p, &d);
        let mut driver = key.fingerprinter(p);
        // uneven parts, merged out of order
        for (lo, hi) in [(100, 257), (0, 37), (37, 100)] {
            let mut part = Fingerprinter::with_rows_key(key.rows_key(), p);
            part.update(&d[lo * p..hi * p]).unwrap();
            let (rows, sum) = part.partial();
            driver.merge(rows, &sum).unwrap();
        }
        assert_eq!(driver.rows(), n as u64);
        assert_eq!(driver.finish().fingerprint, whole);
        // power: a part dropped, or hashed under another key, gives another fingerprint
        let mut short = key.fingerprinter(p);
        let mut part = Fingerprinter::with_rows_key(key.rows_key(), p);
        part.update(&d[..100 * p]).unwrap();
        let (rows, sum) = part.partial();
        short.merge(rows, &sum).unwrap();
        assert_ne!(short.finish().fingerprint, whole);
        let other = DatasetKey::from_bytes(&[8; 32]);
        let mut wrong = key.fingerprinter(p);
        let mut part = Fingerprinter::with_rows_key(other.rows_key(), p);
        part.update(&d).unwrap();
        let (rows, sum) = part.partial();
        wrong.merge(rows, &sum).unwrap();
        assert_ne!(wrong.finish().fingerprint, whole);
    }

    #[test]
    fn same_rows_same_fingerprint_in_any_order_and_chunking() {
        let key = DatasetKey::from_bytes(&[7; 32]);
        let (n, p) = (300, 5);
        let d = data(n, p);
        let a = fp(&key, p, &d);
        // Other chunking.
        let mut f = key.fingerprinter(p);
        f.update(&d[..7 * p]).unwrap();
        f.update(&d[7 * p..200 * p]).unwrap();
        f.update(&d[200 * p..]).unwrap();
        assert_eq!(f.rows(), n as u64);
        assert_eq!(f.finish().fingerprint, a);
        // Rows reversed.
        let rev: Vec<f32> = d.chunks(p).rev().flatten().copied().collect();
        assert_eq!(fp(&key, p, &rev), a);
        // -0.0 is 0.0.
        let mut z = d.clone();
        z[3] = 0.0;
        let mut nz = d.clone();
        nz[3] = -0.0;
        assert_eq!(fp(&key, p, &z), fp(&key, p, &nz));
    }

    #[test]
    fn one_value_changed_or_a_row_added_or_duplicated_changes_it() {
        let key = DatasetKey::from_bytes(&[7; 32]);
        let (n, p) = (50, 4);
        let d = data(n, p);
        let a = fp(&key, p, &d);
        let mut e = d.clone();
        e[2 * p + 1] = f32::from_bits(e[2 * p + 1].to_bits() + 1); // one ulp
        assert_ne!(fp(&key, p, &e), a);
        let mut more = d.clone();
        more.extend_from_slice(&d[..p]); // a duplicate row: the sum does not cancel it
        assert_ne!(fp(&key, p, &more), a);
        assert_ne!(fp(&key, p, &d[p..]), a);
        // Same values, other shape.
        assert_ne!(fp(&key, 2 * p, &d), a);
        // XOR would cancel a row added twice; the modular sum must not.
        let mut twice = d.clone();
        twice.extend_from_slice(&d[..p]);
        twice.extend_from_slice(&d[..p]);
        assert_ne!(fp(&key, p, &twice), a);
    }

    #[test]
    fn needs_the_key_and_names_it_without_revealing_it() {
        let k1 = DatasetKey::from_bytes(&[1; 32]);
        let k2 = DatasetKey::from_bytes(&[2; 32]);
        let d = data(20, 3);
        assert_ne!(fp(&k1, 3, &d), fp(&k2, 3, &d));
        assert_ne!(k1.key_id(), k2.key_id());
        assert_eq!(k1.key_id().len(), 16);
        // Neither the fingerprint nor the key id is an unkeyed hash an adversary could compute.
        let mut plain = blake3::Hasher::new();
        for v in &d {
            plain.update(&v.to_le_bytes());
        }
        assert_ne!(fp(&k1, 3, &d), plain.finalize().to_hex().to_string());
        assert!(!hex(&[1; 32]).contains(&k1.key_id()));
        assert!(!format!("{k1:?}").contains(&hex(&[1; 32])));
        let (bytes, k3) = DatasetKey::generate().unwrap();
        let (bytes4, _) = DatasetKey::generate().unwrap();
        assert_ne!(bytes, bytes4);
        assert_eq!(k3.key_id(), DatasetKey::from_bytes(&bytes).key_id());
    }

    #[test]
    fn modular_addition_carries() {
        let mut a = [u64::MAX, u64::MAX, 0, 0];
        add256(&mut a, &[1, 0, 0, 0]);
        assert_eq!(a, [0, 0, 1, 0]);
        let mut b = [u64::MAX; 4];
        add256(&mut b, &[1, 0, 0, 0]);
        assert_eq!(b, [0; 4]);
        assert!(key_rejects_ragged());
    }

    fn key_rejects_ragged() -> bool {
        let key = DatasetKey::from_bytes(&[0; 32]);
        key.fingerprinter(3).update(&[0.0; 4]).is_err() && key.fingerprinter(0).update(&[]).is_err()
    }
}
