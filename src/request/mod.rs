//! The request layer (issue 27): options as a user gives them — by name, `None` when not given —
//! turned into validated objects once, for every front end. The CLI and the Python module parse
//! their own syntax into these option structs and print what comes back; the refusals, the
//! defaults and the checks between options live here, so the two front ends cannot drift apart.
//!
//! A refusal names the option the way the user wrote it: [`Front::field`] renders `k` as `--k`
//! for the command line and `k` for Python.
//!
//! - [`mechanism`]: the mechanism options of `publish` (and `dprp.publish`) → [`MechanismParams`]
//!   and the Gaussian sampler.
//! - [`shards`]: sharded publishing — `--shards N` on one machine, one worker's shard — with the
//!   refusals that keep a shard from being privatised twice.
//!
//! [`MechanismParams`]: crate::mechanism::MechanismParams

pub mod mechanism;
pub mod shards;

pub use mechanism::{MechanismOptions, MechanismPlan};

/// The front end a request came from, for naming options in refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    /// The `dprp` command: `--first-row`.
    Cli,
    /// The Python module: `first_row`.
    Python,
}

impl Front {
    /// The option `name` (snake case) as this front end spells it.
    pub fn field(self, name: &str) -> String {
        match self {
            Front::Cli => format!("--{}", name.replace('_', "-")),
            // the module's publish() calls the projection seed `seed`
            Front::Python if name == "projection_seed" => "seed".to_string(),
            Front::Python => name.to_string(),
        }
    }
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
}
