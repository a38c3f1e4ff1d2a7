//! `dprp eval retrieval`: the queries chosen, the database and queries read, the grid run.

use std::path::Path;

use super::{Evaluation, Grid, GridOptions, PAPER_MNIST_QUERIES};
use crate::data::scale::check_domain;
use crate::data::Dataset;
use crate::error::{field, Error, Result};
use crate::eval::grid::{MechanismSpec, Seeds};
use crate::eval::retrieval::{self, QueryMode, RetrievalConfig};
use crate::eval::Report;
use crate::projection::Seed;

/// `eval retrieval`'s options as given.
#[derive(Debug, Clone, Default)]
pub struct RetrievalOptions {
    /// The grid and the data.
    pub grid: GridOptions,
    /// Only the first N test rows as queries (default: all; paper-mnist: 1000).
    pub queries: Option<usize>,
    /// `private`, `raw` or `both` (the default).
    pub query_mode: Option<String>,
}

/// A retrieval evaluation whose options are checked, before its data are read.
#[derive(Debug)]
pub struct RetrievalRequest {
    grid: Grid,
    queries: Option<usize>,
    query_mode: Option<String>,
}

/// A retrieval evaluation ready to run: its data loaded.
#[derive(Debug)]
pub struct RetrievalRun {
    /// The files' grid (`None` for rows given in memory: nothing to annotate the report with).
    grid: Option<Grid>,
    train: Dataset,
    test: Dataset,
    cfg: RetrievalConfig,
}

impl RetrievalOptions {
    /// Check every option that needs no file.
    pub fn resolve(&self) -> Result<RetrievalRequest> {
        let mut grid = self.grid.resolve(Evaluation::Retrieval)?;
        grid.format = self.grid.format()?;
        let queries = self.queries.or(match grid.preset.as_deref() {
            Some("paper-mnist") => Some(PAPER_MNIST_QUERIES),
            _ => None,
        });
        Ok(RetrievalRequest {
            grid,
            queries,
            query_mode: self.query_mode.clone(),
        })
    }
}

impl RetrievalRequest {
    /// Read the database and the queries (the first `queries` test rows).
    pub fn load(self) -> Result<RetrievalRun> {
        let (train, mut test) = self.grid.load_train_test(None)?;
        if let Some(nq) = self.queries {
            if nq == 0 {
                return Err(Error::param(field("queries"), "must be at least 1"));
            }
            if nq < test.n {
                test.n = nq;
                test.values.truncate(nq * test.p);
                if let Some(l) = test.labels.as_mut() {
                    l.truncate(nq);
                }
            }
        }
        let g = &self.grid;
        let cfg = RetrievalConfig {
            mechanisms: g.mechanisms.clone(),
            epsilons: g.epsilons.clone(),
            ks: g.ks.clone(),
            privacy: g.privacy,
            query_modes: QueryMode::parse_list(self.query_mode.as_deref().unwrap_or("both"))?,
            repeat: g.repeat,
            seeds: g.seeds,
        };
        Ok(RetrievalRun {
            grid: Some(self.grid),
            train,
            test,
            cfg,
        })
    }
}

/// `dprp.eval_retrieval`: the grid of `eval retrieval` over rows held in memory, a database and
/// its queries already on the mechanisms' scale, with the command's checks (δ, β, ν, repeats,
/// the query modes, every value of both sides in `[-1, 1]`, one width).
#[derive(Debug, Clone, Default)]
pub struct RowsRetrieval {
    /// Mechanisms, comma-separated, or `all`.
    pub mechanisms: String,
    /// The ε values.
    pub epsilons: Vec<f64>,
    /// The sketch sizes.
    pub ks: Vec<usize>,
    /// δ (default 1e-6).
    pub delta: Option<f64>,
    /// Neighbour distance β (default 1).
    pub beta: Option<f64>,
    /// Public lower bound ν on row norms.
    pub min_norm: Option<f64>,
    /// `private`, `raw` or `both` (the default).
    pub query_mode: Option<String>,
    /// Repeats per setting (default 1).
    pub repeat: Option<usize>,
    /// Master seed (default: fresh from the operating system).
    pub seed: Option<Seed>,
}

impl RowsRetrieval {
    /// Check the options and the rows, then the evaluation ready to run.
    pub fn with_rows(&self, train: Dataset, test: Dataset) -> Result<RetrievalRun> {
        if self.epsilons.is_empty() || self.ks.is_empty() {
            return Err(Error::param("epsilons/ks", "give at least one ε and one k"));
        }
        let repeat = self.repeat.unwrap_or(1);
        if repeat == 0 {
            return Err(Error::param(field("repeat"), "must be at least 1"));
        }
        let privacy = GridOptions {
            delta: self.delta,
            beta: self.beta,
            ..Default::default()
        }
        .privacy(self.min_norm)?;
        for (d, name) in [(&train, "train"), (&test, "test")] {
            if d.n == 0 || d.p == 0 {
                return Err(Error::param(name, "no rows or no columns"));
            }
            check_domain(&d.values, d.p, 0, Path::new(name))?;
        }
        if train.p != test.p {
            return Err(Error::param(
                "test",
                format!("{} columns, the database (train) has {}", test.p, train.p),
            ));
        }
        let cfg = RetrievalConfig {
            mechanisms: MechanismSpec::parse_list(&self.mechanisms)?,
            epsilons: self.epsilons.clone(),
            ks: self.ks.clone(),
            privacy,
            query_modes: QueryMode::parse_list(self.query_mode.as_deref().unwrap_or("both"))?,
            repeat,
            seeds: Seeds::new(match self.seed {
                Some(s) => s,
                None => Seed::random()?,
            }),
        };
        Ok(RetrievalRun {
            grid: None,
            train,
            test,
            cfg,
        })
    }
}

impl RetrievalRun {
    /// One line on what is about to run.
    pub fn summary(&self) -> String {
        let c = &self.cfg;
        format!(
            "retrieval: {} database rows, {} queries (the first {} test rows), p = {}; {} \
             mechanisms × {} ε × {} k × {} repeats",
            self.train.n,
            self.test.n,
            self.test.n,
            self.train.p,
            c.mechanisms.len(),
            c.epsilons.len(),
            c.ks.len(),
            c.repeat
        )
    }

    /// Run the grid (`tick(done, total)` after each setting); the report records the preset and
    /// the inputs.
    pub fn run(&self, tick: &(dyn Fn(usize, usize) + Sync)) -> Result<Report> {
        let mut rep = retrieval::run(&self.train, &self.test, &self.cfg, tick)?;
        if let Some(grid) = &self.grid {
            grid.annotate(&mut rep);
        }
        Ok(rep)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::files;
    use super::*;

    fn rows(n: usize, p: usize, v: f32) -> Dataset {
        Dataset {
            n,
            p,
            values: (0..n * p).map(|i| v * ((i % 7) as f32 / 7.0)).collect(),
            labels: None,
            scaling: Default::default(),
        }
    }

    /// Rows in memory get the command's checks: a value outside [-1, 1] (naming the side, row
    /// and column), two widths, no repeat, no ε; rows in the domain run. Power: the same request
    /// on in-domain rows gives a report.
    #[test]
    fn rows_in_memory_are_checked_as_files_are() {
        let r = RowsRetrieval {
            mechanisms: "dp-oporp".into(),
            epsilons: vec![4.0],
            ks: vec![2],
            seed: Some(Seed::parse_hex("5eed").unwrap()),
            ..Default::default()
        };
        let run = r.with_rows(rows(120, 4, 1.0), rows(5, 4, 1.0)).unwrap();
        assert!(!run.run(&|_, _| {}).unwrap().rows.is_empty());
        let e = r.with_rows(rows(120, 4, 2.0), rows(5, 4, 1.0)).unwrap_err();
        assert!(e.to_string().contains("train"), "{e}");
        assert!(r.with_rows(rows(120, 4, 1.0), rows(5, 4, -3.0)).is_err());
        assert!(r.with_rows(rows(120, 4, 1.0), rows(5, 3, 1.0)).is_err());
        let no_repeat = RowsRetrieval {
            repeat: Some(0),
            ..r.clone()
        };
        assert!(no_repeat
            .with_rows(rows(120, 4, 1.0), rows(5, 4, 1.0))
            .is_err());
        let no_epsilon = RowsRetrieval {
            epsilons: vec![],
            ..r
        };
        assert!(no_epsilon
            .with_rows(rows(120, 4, 1.0), rows(5, 4, 1.0))
            .is_err());
    }

    #[test]
    fn defaults_fill_the_grid() {
        let r = RetrievalOptions {
            grid: files(),
            ..Default::default()
        }
        .resolve()
        .unwrap();
        assert_eq!(r.grid.ks, [256, 512, 1024]);
        assert_eq!(r.grid.epsilons.len(), 7);
        assert_eq!(r.grid.repeat, 1);
        assert_eq!(r.queries, None);
        assert_eq!(r.grid.privacy.delta, 1e-6);
    }
}
