//! Random generators shared by the mechanisms and the data generators: the bulk standard-normal
//! sampler ([`normal`], the ziggurat on 64-bit words from any [`normal::WordRng`]) and
//! [`Xoshiro256pp`], a fast *non-cryptographic* generator for public test data.
//!
//! The split by purpose: secret noise and public maps that must resist prediction come from
//! ChaCha20 ([`crate::privacy::chacha`], [`crate::privacy::samplers::noise`]); public data that only has
//! to be regenerable from a recorded seed and have the right distribution (the `--synthetic`
//! rows) comes from [`Xoshiro256pp`], seeded from the ChaCha20 stream of that seed. The
//! generator here is not a [`rand::CryptoRng`], so the type system keeps it out of every
//! sampler that requires one (the exact samplers, the noise sources).

pub mod chacha;
pub mod normal;
pub mod seed;
mod xoshiro;

pub use seed::Seed;
pub use xoshiro::Xoshiro256pp;
