//! Secure aggregation as additive masking in `Z_M`: the heart of SecAgg (Bonawitz et al. 2017,
//! "Practical Secure Aggregation for Privacy-Preserving Machine Learning", §4, the pairwise
//! one-time pads), on the sparse neighbour graph of Bell et al. 2020 ("Secure Single-Server
//! Aggregation with (Poly)Logarithmic Overhead", §3: each client shares keys with `O(log n)`
//! neighbours instead of all `n − 1`).
//!
//! Client `i`'s message `y_i ∈ Z_M^m` (`M = 2^b`) leaves the device as
//! `y_i + Σ_{j ∈ N(i), j > i} PRG(k_ij) − Σ_{j ∈ N(i), j < i} PRG(k_ij) mod M`. Each pair's pad
//! appears once with `+` and once with `−`, so the server's sum of the masked messages mod `M`
//! is exactly `Σ y_i mod M`; a single masked message is uniform on `Z_M^m` as soon as the client
//! has one neighbour (a uniform pad added mod `M` makes any value uniform), and given the sum, the
//! masked messages of a connected graph are jointly uniform — the server learns the sum only.
//!
//! **What is simulated.** In a deployment each pair agrees on `k_ij` by Diffie–Hellman and
//! secret-shares it against dropouts. Here one run of `dprp aggregate` plays every client, so the
//! pair keys are derived from a round secret drawn from the operating system
//! (`k_ij = BLAKE3-keyed(secret, "pair", min(i,j), max(i,j))`), held in memory only and never
//! written; no client drops out. The pads are ChaCha20 keystreams of the pair keys, read in words
//! of the fewest whole bytes holding `b` bits (1, 2, 4 or 8); with `M = 2^b` the low `b` bits of
//! each word are exactly uniform on `Z_M` (no modulo bias). The keystream is computed eight
//! blocks at a time ([`crate::privacy::chacha`], the same bytes as `rand_chacha`'s generator).
//!
//! **The graph.** Clients sit on a ring in id order; client `i`'s neighbours are the `h` clients
//! on each side (`2h` neighbours, all `n − 1` when `2h ≥ n − 1`): a Harary graph, connected and
//! `2h`-regular. [`default_half_degree`] takes `h = ⌈log₂ n⌉`, Bell et al.'s logarithmic degree.

#[cfg(test)]
use rand::SeedableRng;
#[cfg(test)]
use rand_chacha::ChaCha20Rng;

use crate::error::{Error, Result};
/// The arithmetic mod `M`, in [`crate::mechanism::distributed::modular`] (the encoders use it;
/// re-exported here).
pub use crate::mechanism::distributed::modular::{ModularSum, Modulus};
use crate::privacy::chacha;

/// Bell et al.'s logarithmic half-degree `h = ⌈log₂ n⌉` (at least 1).
pub fn default_half_degree(n: u64) -> usize {
    (64 - n.saturating_sub(1).leading_zeros()).max(1) as usize
}

/// One secure-aggregation round: `n` clients, messages of `dim` residues mod `M`, the neighbour
/// graph and the pair keys.
pub struct SecAggRound {
    n: u64,
    dim: usize,
    modulus: Modulus,
    half_degree: usize,
    secret: [u8; 32],
}

impl std::fmt::Debug for SecAggRound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the round secret.
        f.debug_struct("SecAggRound")
            .field("n", &self.n)
            .field("dim", &self.dim)
            .field("modulus", &self.modulus)
            .field("half_degree", &self.half_degree)
            .finish_non_exhaustive()
    }
}

impl SecAggRound {
    /// A round with pair keys derived from `secret` (draw it from the operating system:
    /// [`SecAggRound::with_os_secret`]); `half_degree` neighbours on each side of the ring.
    pub fn new(
        n: u64,
        dim: usize,
        modulus: Modulus,
        half_degree: usize,
        secret: [u8; 32],
    ) -> Result<SecAggRound> {
        if n == 0 {
            return Err(Error::param("clients", "a round needs at least one client"));
        }
        if dim == 0 {
            return Err(Error::param(
                "dimension",
                "messages need at least one coordinate",
            ));
        }
        if half_degree == 0 && n > 1 {
            return Err(Error::param(
                "half_degree",
                "each client needs at least one neighbour to mask its message",
            ));
        }
        Ok(SecAggRound {
            n,
            dim,
            modulus,
            half_degree,
            secret,
        })
    }

    /// [`SecAggRound::new`] with the round secret from the operating system and `h = ⌈log₂ n⌉`.
    pub fn with_os_secret(n: u64, dim: usize, modulus: Modulus) -> Result<SecAggRound> {
        use rand::TryRng;
        let mut secret = [0u8; 32];
        rand::rngs::SysRng
            .try_fill_bytes(&mut secret)
            .map_err(|e| {
                Error::param(
                    "randomness",
                    format!("the operating system's random source failed: {e}"),
                )
            })?;
        SecAggRound::new(n, dim, modulus, default_half_degree(n), secret)
    }

    /// Number of clients.
    pub fn clients(&self) -> u64 {
        self.n
    }
    /// Residues per message.
    pub fn dim(&self) -> usize {
        self.dim
    }
    /// The modulus.
    pub fn modulus(&self) -> Modulus {
        self.modulus
    }

    /// Client `i`'s neighbours, in increasing order (no duplicates, never `i`).
    pub fn neighbours(&self, i: u64) -> Vec<u64> {
        let n = self.n;
        if n <= 1 {
            return Vec::new();
        }
        let mut out: Vec<u64> = if 2 * self.half_degree as u64 >= n - 1 {
            (0..n).filter(|&j| j != i).collect()
        } else {
            (1..=self.half_degree as u64)
                .flat_map(|s| [(i + s) % n, (i + n - s) % n])
                .collect()
        };
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The pad key of the pair `{i, j}` (the ChaCha20 key of its pad, stream 0).
    fn pair_key(&self, i: u64, j: u64) -> [u8; 32] {
        let (a, b) = (i.min(j), i.max(j));
        let mut h = blake3::Hasher::new_keyed(&self.secret);
        h.update(b"dprp secagg pair v1");
        h.update(&a.to_le_bytes());
        h.update(&b.to_le_bytes());
        *h.finalize().as_bytes()
    }

    /// The pad stream of the pair `{i, j}` as a generator (the reference the tests compare the
    /// bulk keystream with).
    #[cfg(test)]
    fn pad(&self, i: u64, j: u64) -> ChaCha20Rng {
        ChaCha20Rng::from_seed(self.pair_key(i, j))
    }

    /// Mask client `client`'s message in place: add the pads it shares with its higher-numbered
    /// neighbours and subtract those with lower-numbered ones, mod `M`.
    ///
    /// Pad word `k` of a pair is bytes `k·w … k·w + w − 1` of the ChaCha20 keystream of the pair
    /// key (stream 0; `w` the fewest whole bytes holding `b` bits), read little-endian — the bytes
    /// `rand_chacha::ChaCha20Rng::fill_bytes` returns, computed here eight blocks at a time
    /// ([`crate::privacy::chacha::fill`]). The message is walked in chunks that stay in the
    /// first-level cache, every neighbour's pad applied to a chunk before the next.
    pub fn mask(&self, client: u64, message: &mut [u64]) -> Result<()> {
        if client >= self.n {
            return Err(Error::param(
                "client",
                format!("client {client} is not in this round of {} clients", self.n),
            ));
        }
        if message.len() != self.dim {
            return Err(Error::param(
                "message",
                format!(
                    "client {client}'s message has {} coordinates, the round {}",
                    message.len(),
                    self.dim
                ),
            ));
        }
        let m = self.modulus;
        // bytes of keystream per pad word: the fewest whole bytes holding b bits (1, 2, 4 or 8)
        let per = match m.bits() {
            0..=8 => 1,
            9..=16 => 2,
            17..=32 => 4,
            _ => 8,
        };
        // (key words, add or subtract) per neighbour
        let pads: Vec<([u32; 8], bool)> = self
            .neighbours(client)
            .into_iter()
            .map(|j| (chacha::key_words(&self.pair_key(client, j)), j > client))
            .collect();
        // 2 KiB of keystream per pad and chunk (a whole number of eight-block runs)
        const WORDS: usize = 512;
        let mut words = [0u32; WORDS];
        let mut pos: u128 = 0;
        for chunk in message.chunks_mut(WORDS * 4 / per) {
            let n_words = (chunk.len() * per).div_ceil(4);
            for (key, add) in &pads {
                chacha::fill(key, 0, pos, &mut words[..n_words]);
                if cfg!(target_endian = "big") {
                    words[..n_words].iter_mut().for_each(|w| *w = w.to_le());
                }
                let bytes: &[u8] = bytemuck::cast_slice(&words[..n_words]);
                let bytes = &bytes[..chunk.len() * per];
                match per {
                    1 => apply_pads::<1>(chunk, bytes, *add, m.mask()),
                    2 => apply_pads::<2>(chunk, bytes, *add, m.mask()),
                    4 => apply_pads::<4>(chunk, bytes, *add, m.mask()),
                    _ => apply_pads::<8>(chunk, bytes, *add, m.mask()),
                }
            }
            pos += n_words as u128;
        }
        Ok(())
    }
}

/// `x ← x ± pad mod M` for little-endian pad words of `W` bytes (one loop per width and sign, so
/// the compiler vectorises it).
fn apply_pads<const W: usize>(x: &mut [u64], bytes: &[u8], add: bool, mask: u64) {
    let word = |w: &[u8]| {
        let mut b = [0u8; 8];
        b[..W].copy_from_slice(&w[..W]);
        u64::from_le_bytes(b)
    };
    if add {
        for (v, w) in x.iter_mut().zip(bytes.chunks_exact(W)) {
            *v = v.wrapping_add(word(w)) & mask;
        }
    } else {
        for (v, w) in x.iter_mut().zip(bytes.chunks_exact(W)) {
            *v = v.wrapping_sub(word(w)) & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, RngExt};

    fn round(n: u64, dim: usize, bits: u32, h: usize) -> SecAggRound {
        SecAggRound::new(n, dim, Modulus::new(bits).unwrap(), h, [5; 32]).unwrap()
    }

    /// The masked sum is the plain sum mod M, bit for bit, for narrow and wide moduli and for
    /// sparse and complete graphs; a client masked twice (or not at all) breaks it (power).
    #[test]
    fn masks_cancel_in_the_sum() {
        let mut rng = ChaCha20Rng::from_seed([1; 32]);
        for (n, bits, h) in [
            (1u64, 8u32, 1usize),
            (2, 2, 1),
            (7, 16, 1),
            (50, 32, 3),
            (40, 64, 30),
        ] {
            let dim = 37;
            let r = round(n, dim, bits, h);
            let m = r.modulus();
            let mut plain = ModularSum::new(dim, m);
            let mut masked = ModularSum::new(dim, m);
            let mut one_unmasked = ModularSum::new(dim, m);
            for i in 0..n {
                let msg: Vec<u64> = (0..dim).map(|_| rng.next_u64() & m.mask()).collect();
                plain.add(&msg).unwrap();
                let mut y = msg.clone();
                r.mask(i, &mut y).unwrap();
                masked.add(&y).unwrap();
                one_unmasked.add(if i == 0 { &msg } else { &y }).unwrap();
            }
            assert_eq!(masked.residues(), plain.residues(), "n = {n}, b = {bits}");
            if n > 1 {
                assert_ne!(one_unmasked.residues(), plain.residues(), "n = {n}");
            }
        }
    }

    /// The bulk pads are the pair generators' `fill_bytes` keystream read in `w`-byte words (the
    /// layout the module documents), for every word width, across chunk boundaries and with a
    /// ragged last chunk; a pad read from the wrong keystream position or with a sign flipped
    /// would differ.
    #[test]
    fn pads_are_the_pair_keystreams() {
        for (bits, per) in [(5u32, 1usize), (16, 2), (20, 4), (64, 8)] {
            let dim = 5000 + 3;
            let r = round(9, dim, bits, 2);
            let m = r.modulus();
            let client = 4u64;
            let mut want = vec![0u64; dim];
            for j in r.neighbours(client) {
                let mut bytes = vec![0u8; dim * per];
                r.pad(client, j).fill_bytes(&mut bytes);
                for (v, w) in want.iter_mut().zip(bytes.chunks_exact(per)) {
                    let mut b = [0u8; 8];
                    b[..per].copy_from_slice(w);
                    let p = u64::from_le_bytes(b);
                    *v = if j > client {
                        m.add(*v, p)
                    } else {
                        m.sub(*v, p)
                    };
                }
            }
            let mut got = vec![0u64; dim];
            r.mask(client, &mut got).unwrap();
            assert_eq!(got, want, "b = {bits}");
        }
    }

    #[test]
    fn graph_is_symmetric_and_regular() {
        for (n, h) in [(10u64, 2usize), (11, 3), (5, 2), (5, 4), (1000, 10)] {
            let r = round(n, 1, 8, h);
            let deg = (2 * h as u64).min(n - 1) as usize;
            for i in 0..n {
                let nb = r.neighbours(i);
                assert_eq!(nb.len(), deg, "n = {n}, h = {h}, client {i}");
                assert!(!nb.contains(&i));
                for &j in &nb {
                    assert!(r.neighbours(j).contains(&i), "{i} ~ {j} not symmetric");
                }
            }
        }
        assert_eq!(default_half_degree(1000), 10);
        assert_eq!(default_half_degree(1024), 10);
        assert_eq!(default_half_degree(1025), 11);
        assert_eq!(default_half_degree(2), 1);
    }

    /// Pearson χ² of residues against the uniform distribution on `Z_M`.
    fn chi2_uniform(xs: &[u64], m: usize) -> f64 {
        let mut counts = vec![0f64; m];
        for &x in xs {
            counts[x as usize] += 1.0;
        }
        let e = xs.len() as f64 / m as f64;
        counts.iter().map(|c| (c - e) * (c - e) / e).sum()
    }

    /// A single masked message is uniform on `Z_M` whatever the client sent (here all zeros):
    /// χ² with M − 1 = 15 degrees of freedom below its 0.999 quantile (37.70); the same test
    /// rejects residues of which 3% are forced to 0 (power: the expected χ² is then about
    /// 0.03²·15·N ≈ 1350 at N = 10^5).
    #[test]
    fn one_masked_message_is_uniform() {
        let dim = 100_000;
        let r = round(20, dim, 4, 2);
        let mut y = vec![0u64; dim];
        r.mask(7, &mut y).unwrap();
        let crit = 37.70;
        let c = chi2_uniform(&y, 16);
        assert!(c < crit, "χ² = {c}");
        let biased: Vec<u64> = y
            .iter()
            .enumerate()
            .map(|(i, &v)| if i % 33 == 0 { 0 } else { v })
            .collect();
        let c = chi2_uniform(&biased, 16);
        assert!(c > crit, "power: χ² = {c}");
    }

    #[test]
    fn lift_and_reduce() {
        let m = Modulus::new(8).unwrap();
        assert_eq!(m.lift(m.reduce(-128)), -128);
        assert_eq!(m.lift(m.reduce(127)), 127);
        assert_eq!(m.lift(m.reduce(128)), -128);
        assert_eq!(m.lift(m.reduce(-1)), -1);
        let w = Modulus::new(64).unwrap();
        assert_eq!(w.lift(w.reduce(i64::MIN)), i64::MIN);
        assert_eq!(w.lift(w.reduce(-5)), -5);
        let mut rng = ChaCha20Rng::from_seed([2; 32]);
        for bits in [2u32, 3, 17, 33, 63] {
            let m = Modulus::new(bits).unwrap();
            let half = 1i64 << (bits - 1);
            for _ in 0..1000 {
                let v = rng.random_range(-half..half);
                assert_eq!(m.lift(m.reduce(v)), v, "b = {bits}");
            }
        }
        assert!(Modulus::new(1).is_err());
        assert!(Modulus::new(65).is_err());
    }

    #[test]
    fn bad_input_is_refused() {
        let m = Modulus::new(8).unwrap();
        assert!(SecAggRound::new(0, 3, m, 1, [0; 32]).is_err());
        assert!(SecAggRound::new(3, 0, m, 1, [0; 32]).is_err());
        assert!(SecAggRound::new(3, 3, m, 0, [0; 32]).is_err());
        let r = SecAggRound::new(3, 3, m, 1, [0; 32]).unwrap();
        assert!(r.mask(3, &mut [0; 3]).is_err());
        assert!(r.mask(0, &mut [0; 4]).is_err());
        let mut s = ModularSum::new(3, m);
        assert!(s.add(&[1, 2]).is_err());
        assert!(s
            .merge(&ModularSum::new(3, Modulus::new(9).unwrap()))
            .is_err());
        assert!(!format!("{r:?}").contains("secret"));
    }
}
