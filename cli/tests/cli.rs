//! The command's tests (they run the `dprp` binary), one test binary: each file below is a
//! module. Run one file's tests with a filter: `cargo test --release --test cli -- golden::`.

mod cli_helpers;
#[allow(dead_code)]
#[path = "../../tests/data_common/mod.rs"]
mod data_common;

mod arithmetic;
mod cli_aggregate;
mod cli_audit;
mod cli_bad_input;
mod cli_calibrate;
mod cli_export;
mod cli_formats;
mod cli_interrupt;
mod cli_ledger;
mod cli_mean;
mod cli_memory;
mod cli_outputs;
mod cli_parquet;
mod cli_pipe;
mod cli_publish;
mod cli_query;
mod cli_shards;
mod cli_sign;
mod cli_wording;
mod cli_zero_query;
mod distributed_binomial;
mod eval;
mod eval_mean;
mod eval_mean_distributed;
mod fuzz_regressions;
mod golden;
mod hnsw_build;
mod huge_epsilon;
mod lattice;
mod pipeline_noise;
mod search_hnsw;
