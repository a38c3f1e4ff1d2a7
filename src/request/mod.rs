//! The request layer (issue 27): options as a user gives them — by name, `None` when not given —
//! turned into validated objects once, for every front end. The CLI and the Python module parse
//! their own syntax into these option structs and print what comes back; the refusals, the
//! defaults and the checks between options live here, so the two front ends cannot drift apart.
//!
//! A refusal names an option by its key, marked ([`crate::error::field`]: `‹first_row›`), and
//! the front end that shows it spells it: `--first-row` for the command, `first_row` for Python
//! ([`Front::render`]), so nothing here takes the front end a request came from.
//!
//! - [`audit`]: `dprp audit` — the mechanisms and parameters to audit, the ε audits and
//!   pipeline checks run, the report, its files and the verdict.
//! - [`calibrate`]: `dprp calibrate`'s report (σ tables, flip rules, local constants, round
//!   plans), built whole before anything is printed.
//! - [`convert`]: `dprp convert`, an input scaled and written as a native dataset.
//! - [`demo`]: `dprp demo`'s releases of the bundled sample and what each keeps.
//! - [`encoder`]: distributed DP one client and one server at a time
//!   (`dprp.DistributedEncoder`, `dprp.RoundsAccountant`): the plan, a message, the decoded
//!   mean, a round's guarantee, composition over rounds.
//! - [`estimate`]: `dprp estimate`'s inner products and cosines with error bars, as text or
//!   JSON.
//! - [`eval`]: `dprp eval retrieval|svm|mean` (and their presets' datasets): the grid or the
//!   experiments and the data checked, loaded and run, the report annotated (and written).
//! - `export` (feature `postgres`): `dprp export` / `Release.to_postgres`, a release loaded
//!   into PostgreSQL, and what was loaded.
//! - [`info`]: what `dprp info` says about a release, as text or JSON.
//! - [`ledger`]: `dprp ledger`, a ledger's releases grouped by dataset with their totals.
//! - [`local`]: local DP one user and one server at a time (`dprp.privatise`,
//!   `dprp.MeanAccumulator`): the mechanism from its public parameters, a message, the
//!   streaming mean.
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
//! - [`rows`]: the rows a request reads — the reader a front end implements for rows it holds,
//!   the input options of a file.
//! - [`search`]: one search of a release ([`search::Search`]), and the whole of
//!   `Release.search` / `Release.rerank` on queries held in memory.
//! - [`shards`]: sharded publishing — `--shards N` on one machine, one worker's shard — with the
//!   refusals that keep a shard from being privatised twice.
//!
//! [`MechanismParams`]: crate::mechanism::MechanismParams

pub mod audit;
pub mod calibrate;
pub mod convert;
pub mod demo;
pub mod encoder;
pub mod estimate;
pub mod eval;
#[cfg(feature = "postgres")]
pub mod export;
pub mod info;
pub mod ledger;
pub mod local;
pub mod mean;
pub mod mechanism;
pub mod project;
pub mod publish;
pub mod query;
pub mod round;
pub mod rows;
pub mod search;
pub mod shards;

/// The option types the requests take, named here so that a front end needs only this module:
/// the scaling options (`--scale`, `--normalize`, `--clip`, `--clip-norm`) and a public seed.
pub use crate::data::scale::{ScaleOptions, ScalingRequest};
pub use crate::error::Front;
pub use crate::projection::Seed;
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
        assert_eq!(crate::error::field("first_row"), "‹first_row›");
        assert_eq!(Front::Cli.name("first_row"), "--first-row");
        assert_eq!(Front::Cli.name("k"), "--k");
        assert_eq!(Front::Python.name("first_row"), "first_row");
        assert_eq!(Front::Cli.name("projection_seed"), "--projection-seed");
        assert_eq!(Front::Python.name("projection_seed"), "seed");
        assert_eq!(Front::Rust.name("projection_seed"), "projection_seed");
        let text = "raise ‹memory›, or use ‹noise float› with ‹min_norm 0.5›";
        assert_eq!(
            Front::Cli.render(text),
            "raise --memory, or use --noise float with --min-norm 0.5"
        );
        assert_eq!(
            Front::Python.render(text),
            "raise memory=, or use noise='float' with min_norm=0.5"
        );
        assert_eq!(
            Front::Rust.render(text),
            "raise memory, or use noise = float with min_norm = 0.5"
        );
        // marks around something that is not a key are left alone; an unclosed mark too
        for plain in ["a ‹Ünïcode› b", "‹1x›", "half ‹open", "no marks"] {
            assert_eq!(Front::Cli.render(plain), plain);
        }
        // a refused option is named as a parameter, without Python's `=`
        let e = crate::Error::param(crate::error::field("first_row"), "see ‹first_row›");
        assert_eq!(e.field(), Some("first_row"));
        assert_eq!(e.render(Front::Python), "invalid first_row: see first_row=");
        assert_eq!(e.render(Front::Cli), "invalid --first-row: see --first-row");
        assert_eq!(e.to_string(), "invalid first_row: see first_row");
        assert_eq!(e.marked(), "invalid ‹first_row›: see ‹first_row›");
        assert_eq!(crate::error::in_files(&e.marked()), e.render(Front::Cli));
    }

    #[test]
    fn counts_take_the_number_of_their_noun() {
        assert_eq!(count(1, "row", "rows"), "1 row");
        assert_eq!(count(0, "row", "rows"), "0 rows");
        assert_eq!(count(2, "file", "files"), "2 files");
    }
}
