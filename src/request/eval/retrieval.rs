//! `dprp eval retrieval`: the queries chosen, the database and queries read, the grid run.

use super::{Evaluation, Grid, GridOptions, PAPER_MNIST_QUERIES};
use crate::data::Dataset;
use crate::error::{field, Error, Result};
use crate::eval::retrieval::{self, QueryMode, RetrievalConfig};
use crate::eval::Report;

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
    grid: Grid,
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
            grid: self.grid,
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
        self.grid.annotate(&mut rep);
        Ok(rep)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::files;
    use super::*;

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
