//! The library's integration tests, one test binary (each file below is a module): one link
//! instead of one per file, and one pool of test threads for the whole suite. Run one file's
//! tests with a filter: `cargo test --release --test library -- coverage::`.

#[allow(dead_code)]
mod data_common;
mod exact_common;
mod ldp_common;

mod atomic;
mod audit_coverage;
mod calibration_exact;
mod coverage;
mod coverage_paths;
mod distributed_round;
mod estimate;
mod exact_samplers;
mod examples;
mod formats;
mod layers;
mod ldp_composite;
mod ldp_normal;
mod ldp_privunit2;
mod ldp_privunit_inf;
mod ldp_privunitg;
mod ldp_projunit;
mod ldp_projunit_correlated;
mod ldp_release;
mod nplus;
mod real_data;
mod release;
mod rerank;
mod search_exact;
mod sign;
mod sign_grid;
mod statistics;
mod svm;
