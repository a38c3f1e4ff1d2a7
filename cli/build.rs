//! Empty on purpose: a build script makes Cargo resolve `[build-dependencies]`, which this crate
//! has only to build the proc macros' `syn` with the features pyo3's macros turn on (see
//! Cargo.toml), so that `cargo test --release` and the Python module's build share their compiled
//! dependencies.

fn main() {}
