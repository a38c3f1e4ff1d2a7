//! `dprp eval svm`: the datasets (the user's or paper-svm's), the SVM's parameters, and each
//! dataset's grid checked, read and run.

use crate::error::field;
use std::path::PathBuf;

use super::{data_dir, preset_file, Evaluation, Grid, GridOptions, PAPER_SVM_SETS};
use crate::data::{Dataset, Format};
use crate::error::{Error, Result};
use crate::eval::grid::{parse_f64_list, refuse_local};
use crate::eval::svm::{self, SvmConfig};
use crate::eval::Report;
use crate::learn::svm::{Loss, SvmParams};

/// `eval svm`'s options as given.
#[derive(Debug, Clone)]
pub struct SvmOptions {
    /// The grid and the data.
    pub grid: GridOptions,
    /// C values, comma-separated.
    pub c: String,
    /// Pick C per setting on a validation split.
    pub pick_c: bool,
    /// `squared-hinge` or `hinge`.
    pub loss: String,
    /// Stopping tolerance of the dual coordinate descent.
    pub tol: f64,
    /// Maximum epochs per binary problem (default 1000; paper-svm: 200).
    pub max_iter: Option<usize>,
}

/// One dataset of an SVM evaluation: its name (empty unless a preset names it) and files.
#[derive(Debug, Clone)]
pub struct SvmSet {
    /// The preset's name of the set; empty for the user's files.
    pub name: String,
    /// Training rows.
    pub train: PathBuf,
    /// Test rows.
    pub test: PathBuf,
}

/// An SVM evaluation whose options are checked: its datasets, each run in turn.
#[derive(Debug)]
pub struct SvmRequest {
    options: GridOptions,
    preset: bool,
    sets: Vec<SvmSet>,
    format: Option<Format>,
    svm: SvmParams,
    cs: Vec<f64>,
    pick_c: bool,
}

/// An SVM evaluation of one dataset, its data loaded.
#[derive(Debug)]
pub struct SvmRun {
    grid: Grid,
    train: Dataset,
    test: Dataset,
    cfg: SvmConfig,
}

impl SvmOptions {
    /// The datasets (paper-svm's unless both files are given) and the SVM's parameters.
    pub fn resolve(&self) -> Result<SvmRequest> {
        let g = &self.grid;
        let preset = g.preset.as_deref() == Some("paper-svm");
        let sets = if preset && g.train.is_none() && g.test.is_none() {
            let dir = data_dir();
            let f = |rel: &str| preset_file(&dir, rel, "paper-svm");
            PAPER_SVM_SETS
                .iter()
                .map(|(name, tr, te)| {
                    Ok(SvmSet {
                        name: name.to_string(),
                        train: f(tr)?,
                        test: f(te)?,
                    })
                })
                .collect::<Result<_>>()?
        } else {
            let missing = |name: &str, what: &str| {
                let hint = format!("(or use {} paper-svm)", field("preset"));
                Error::missing(field(name), format!("give the {what} data {hint}"))
            };
            vec![SvmSet {
                name: String::new(),
                train: g
                    .train
                    .clone()
                    .ok_or_else(|| missing("train", "training"))?,
                test: g.test.clone().ok_or_else(|| missing("test", "test"))?,
            }]
        };
        let format = g.format()?;
        let svm = SvmParams {
            c: 1.0,
            loss: Loss::parse(&self.loss)?,
            tol: self.tol,
            max_iter: self.max_iter.unwrap_or(if preset { 200 } else { 1000 }),
            ..Default::default()
        };
        Ok(SvmRequest {
            options: g.clone(),
            preset,
            sets,
            format,
            svm,
            cs: parse_f64_list(&field("c"), &self.c)?,
            pick_c: self.pick_c,
        })
    }
}

impl SvmRequest {
    /// The datasets, in the order they run.
    pub fn sets(&self) -> &[SvmSet] {
        &self.sets
    }

    /// The grid of `set` checked and its data read.
    pub fn load(&self, set: &SvmSet) -> Result<SvmRun> {
        let mut options = self.options.clone();
        options.train = Some(set.train.clone());
        options.test = Some(set.test.clone());
        if self.preset && options.scale.scale.is_none() && options.scale.normalize.is_none() {
            // ijcnn1's test file has values slightly outside [-1, 1] (e.g. -1.0028): clamp them,
            // a fixed public transform
            options.scale.clip = true;
        }
        let mut grid = options.resolve(Evaluation::Svm)?;
        grid.format = self.format;
        refuse_local(&grid.mechanisms, "eval svm")?;
        let (train, test) = grid.load_pair()?;
        let cfg = SvmConfig {
            mechanisms: grid.mechanisms.clone(),
            epsilons: grid.epsilons.clone(),
            ks: grid.ks.clone(),
            privacy: grid.privacy,
            cs: self.cs.clone(),
            pick_c: self.pick_c,
            svm: self.svm,
            repeat: grid.repeat,
            seeds: grid.seeds,
        };
        Ok(SvmRun {
            grid,
            train,
            test,
            cfg,
        })
    }
}

impl SvmRun {
    /// One line on what is about to run; `name` is the dataset's (empty for the user's files).
    pub fn summary(&self, name: &str) -> String {
        let c = &self.cfg;
        format!(
            "svm{}: {} training rows, {} test rows, p = {}; {} mechanisms × {} ε × {} k × {} C \
             × {} repeats",
            if name.is_empty() {
                String::new()
            } else {
                format!(" [{name}]")
            },
            self.train.n,
            self.test.n,
            self.train.p,
            c.mechanisms.len(),
            c.epsilons.len(),
            c.ks.len(),
            c.cs.len(),
            c.repeat
        )
    }

    /// Train and test every setting (`tick(done, total)` after each); the report records the
    /// preset and the inputs.
    pub fn run(&self, tick: &(dyn Fn(usize, usize) + Sync)) -> Result<Report> {
        let mut rep = svm::run(&self.train, &self.test, &self.cfg, tick)?;
        self.grid.annotate(&mut rep);
        Ok(rep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_svm_takes_the_given_files_and_its_iterations() {
        let grid = GridOptions {
            preset: Some("paper-svm".into()),
            train: Some("train.bin".into()),
            test: Some("test.bin".into()),
            ..Default::default()
        };
        let svm = SvmOptions {
            grid,
            c: "1".into(),
            pick_c: false,
            loss: "hinge".into(),
            tol: 1e-4,
            max_iter: None,
        };
        let req = svm.resolve().unwrap();
        assert_eq!(req.sets().len(), 1);
        assert_eq!(req.svm.max_iter, 200);
        let missing = SvmOptions {
            grid: GridOptions {
                preset: None,
                test: None,
                ..svm.grid.clone()
            },
            ..svm
        };
        assert_eq!(
            missing.resolve().unwrap_err().to_string(),
            "missing test: give the test data (or use preset paper-svm)"
        );
    }
}
