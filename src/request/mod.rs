//! The request layer (issue 27): options as a user gives them — by name, `None` when not given —
//! turned into validated objects once, for every front end. The CLI and the Python module parse
//! their own syntax into these option structs and print what comes back; the refusals, the
//! defaults and the checks between options live here, so the two front ends cannot drift apart.
//!
//! A refusal names the option the way the user wrote it: [`Front::field`] (in [`crate::error`], so
//! that every floor can use it) renders `k` as `--k` for the command line and `k` for Python.
//!
//! - [`audit`]: `dprp audit` — the mechanisms and parameters to audit, the ε audits and
//!   pipeline checks run, the report, its files and the verdict.
//! - [`calibrate`]: `dprp calibrate`'s report (σ tables, flip rules, local constants, round
//!   plans), built whole before anything is printed.
//! - [`convert`]: `dprp convert`, an input scaled and written as a native dataset.
//! - [`demo`]: `dprp demo`'s releases of the bundled sample and what each keeps.
//! - [`estimate`]: `dprp estimate`'s inner products and cosines with error bars, as text or
//!   JSON.
//! - [`eval`]: `dprp eval retrieval|svm|mean` (and their presets' datasets): the grid or the
//!   experiments and the data checked, loaded and run, the report annotated (and written).
//! - [`info`]: what `dprp info` says about a release, as text or JSON.
//! - [`ledger`]: `dprp ledger`, a ledger's releases grouped by dataset with their totals.
//! - [`mean`]: `dprp mean`, the mean of one or several local-DP releases, and the file a mean
//!   vector is written to.
//! - [`mechanism`]: the mechanism options of `publish` (and `dprp.publish`) → [`MechanismParams`]
//!   and the Gaussian sampler.
//! - [`publish`]: the pipeline's options, the ledger gate, and the report of a publish.
//! - [`project`]: `dprp project` / `Release.project`, raw queries projected for a database that
//!   holds a release's sketches, and the release's fingerprint.
//! - [`query`]: raw query vectors → the release's scale and public map; another release's rows
//!   as queries.
//! - [`round`]: a secure-aggregation round (`dprp aggregate`): encoder, plan, round, and one
//!   report rendered as text or JSON.
//! - [`shards`]: sharded publishing — `--shards N` on one machine, one worker's shard — with the
//!   refusals that keep a shard from being privatised twice.
//!
//! [`MechanismParams`]: crate::mechanism::MechanismParams

pub mod audit;
pub mod calibrate;
pub mod convert;
pub mod demo;
pub mod estimate;
pub mod eval;
pub mod info;
pub mod ledger;
pub mod mean;
pub mod mechanism;
pub mod project;
pub mod publish;
pub mod query;
pub mod round;
pub mod shards;

pub use crate::error::Front;
pub use mechanism::{MechanismOptions, MechanismPlan};

/// `n` and the noun in the number it takes: `1 row`, `2 rows` (`many` is the plural).
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_spelled_per_front_end() {
        assert_eq!(Front::Cli.field("first_row"), "--first-row");
        assert_eq!(Front::Cli.field("k"), "--k");
        assert_eq!(Front::Python.field("first_row"), "first_row");
        assert_eq!(Front::Cli.field("projection_seed"), "--projection-seed");
        assert_eq!(Front::Python.field("projection_seed"), "seed");
    }

    #[test]
    fn counts_take_the_number_of_their_noun() {
        assert_eq!(count(1, "row", "rows"), "1 row");
        assert_eq!(count(0, "row", "rows"), "0 rows");
        assert_eq!(count(2, "file", "files"), "2 files");
    }
}
