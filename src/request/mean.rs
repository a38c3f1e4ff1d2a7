//! The mean of the users' vectors from one or several local-DP releases (`dprp mean`): the
//! releases' rows accumulated and merged ([`MeanAccumulator`]), the unbiased mean with its
//! expected squared error from the mechanism's closed form, and one report rendered as text or
//! JSON; and the `.npy` / `.csv` file a whole mean vector is written to (also `dprp aggregate`'s).

use crate::error::field;
use std::path::{Path, PathBuf};

use crate::atomic::{AtomicFile, Existing};
use crate::error::{Error, Result};
use crate::mechanism::local::accumulator::{MeanAccumulator, MeanEstimate};
use crate::mechanism::{self, Mechanism};
use crate::release::{Release, ReleaseSet};

/// Coordinates shown in the text summary.
const SHOWN: usize = 8;

/// A file for a whole mean vector: `.npy` (float64) or `.csv` (one line), by its extension.
#[derive(Debug, Clone)]
pub struct MeanFile {
    path: PathBuf,
    npy: bool,
    existing: Existing,
}

impl MeanFile {
    /// The file at `path`, refused (naming the `output` option) unless it ends in `.npy` or
    /// `.csv`, and when something is there that `existing` does not allow replacing (checked
    /// now, before the mean is computed, and again when it is written).
    pub fn new(path: &Path, existing: Existing) -> Result<MeanFile> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase());
        let npy = match ext.as_deref() {
            Some("npy") => true,
            Some("csv") => false,
            _ => {
                return Err(Error::param(
                    field("output"),
                    format!(
                        "{}: the mean is written as .npy or .csv; name the file with one of \
                         those extensions",
                        path.display()
                    ),
                ))
            }
        };
        crate::atomic::check_file_output(path, existing)?;
        Ok(MeanFile {
            path: path.to_path_buf(),
            npy,
            existing,
        })
    }

    /// The file `output` names, if it names one ([`new`](Self::new)).
    pub fn of(output: Option<&Path>, existing: Existing) -> Result<Option<MeanFile>> {
        output.map(|p| MeanFile::new(p, existing)).transpose()
    }

    /// Write `mean` whole or not at all.
    pub fn write(&self, mean: &[f64]) -> Result<()> {
        let bytes = if self.npy {
            crate::data::npy::f64_vector_bytes(mean)
        } else {
            let mut s = mean
                .iter()
                .map(|x| format!("{x:e}"))
                .collect::<Vec<_>>()
                .join(",");
            s.push('\n');
            s.into_bytes()
        };
        let mut f = AtomicFile::create(&self.path, self.existing)?;
        f.write_all(&bytes)?;
        f.commit()
    }
}

/// The mean of several releases of one local-DP mechanism configuration, and what it came from.
#[derive(Debug)]
pub struct ReleasesMean {
    /// The paths given, as displayed.
    releases: Vec<String>,
    /// The mean and its expected error.
    pub estimate: MeanEstimate,
    mechanism: String,
    guarantee: String,
    replace_one: String,
    statement: String,
    /// Whether every release's noise came from the operating system (none from a user-supplied
    /// `--noise-seed`): otherwise the mean is not private.
    pub private: bool,
}

fn in_file(path: &Path, msg: String) -> Error {
    Error::format(path, msg)
}

/// Every release `paths` name, a sharded release's directory standing for its shards, each with
/// the global id of its first row (its rows' public maps are those of their global ids).
fn open_parts(paths: &[PathBuf]) -> Result<Vec<(Release, u64)>> {
    let mut parts = Vec::new();
    for p in paths {
        parts.extend(ReleaseSet::open(p)?.into_parts());
    }
    Ok(parts)
}

impl ReleasesMean {
    /// The mean of the rows of the releases at `paths` (release files or sharded releases'
    /// directories): one mechanism configuration, disjoint row ids.
    pub fn of(paths: &[PathBuf]) -> Result<ReleasesMean> {
        let parts = open_parts(paths)?;
        let mechs = parts
            .iter()
            .map(|(r, _)| {
                let m = r.meta();
                mechanism::from_record(&m.mechanism, &m.guarantee)
                    .map_err(|e| in_file(r.path(), e.detail()))
            })
            .collect::<Result<Vec<Box<dyn Mechanism>>>>()?;
        let mut total: Option<MeanAccumulator<'_>> = None;
        for ((r, first), m) in parts.iter().zip(&mechs) {
            let mut acc =
                MeanAccumulator::new(m.as_ref()).map_err(|e| in_file(r.path(), e.detail()))?;
            if r.n() > 0 {
                acc.add_rows(*first, r.values()?)
                    .map_err(|e| in_file(r.path(), e.detail()))?;
            }
            match total.as_mut() {
                None => total = Some(acc),
                Some(t) => t.merge(&acc).map_err(|e| {
                    let with = paths[0].display();
                    in_file(
                        r.path(),
                        format!("cannot be averaged with {with}: {}", e.detail()),
                    )
                })?,
            }
        }
        let Some(total) = total else {
            return Err(Error::param("releases", "no release given"));
        };
        let estimate = total.finish().map_err(|e| in_file(&paths[0], e.detail()))?;
        let first = parts[0].0.meta();
        Ok(ReleasesMean {
            releases: paths.iter().map(|p| p.display().to_string()).collect(),
            estimate,
            mechanism: first.mechanism.name.name().to_string(),
            guarantee: first.guarantee.label(),
            replace_one: first.guarantee.replace_one(),
            statement: first.statement.clone(),
            private: parts.iter().all(|(r, _)| r.meta().private),
        })
    }

    /// The summary: the rows and releases, the mechanism, the expected error and the first
    /// coordinates of the mean; `output` is where the caller wrote the whole mean.
    pub fn to_text(&self, output: Option<&Path>) -> String {
        let est = &self.estimate;
        let d = est.mean.len();
        let mut s = format!(
            "mean of {} rows from {} release{} ({}), d = {d}\n",
            est.n,
            self.releases.len(),
            if self.releases.len() == 1 { "" } else { "s" },
            self.releases.join(", ")
        );
        s += &format!(
            "mechanism: {}, {} ({})\n",
            self.mechanism, self.guarantee, self.replace_one
        );
        s += &format!(
            "expected squared error: E‖μ̂ − μ‖² = {:.6e} = {:.6} per user / n (closed form: {})\n",
            est.expected_sq_error, est.mse_per_user, est.error_note
        );
        s += &format!(
            "root mean squared error per coordinate: {:.6e}\n",
            (est.expected_sq_error / d as f64).sqrt()
        );
        let shown: Vec<String> = est
            .mean
            .iter()
            .take(SHOWN)
            .map(|x| format!("{x:.6}"))
            .collect();
        let shown = shown.join(", ");
        s += &match output {
            Some(p) => format!(
                "mean: [{shown}{}]\nwrote {} ({d} values)\n",
                if d > SHOWN { ", …" } else { "" },
                p.display()
            ),
            None if d > SHOWN => format!(
                "mean: [{shown}, …] (first {SHOWN} of {d}; -o mean.npy or mean.csv writes them \
                 all)\n"
            ),
            None => format!("mean: [{shown}]\n"),
        };
        s
    }

    /// The result as one JSON object, with the whole mean; `output` is where the caller wrote it.
    pub fn to_json(&self, output: Option<&Path>) -> serde_json::Value {
        let est = &self.estimate;
        serde_json::json!({
            "releases": self.releases,
            "n": est.n,
            "d": est.mean.len(),
            "mechanism": self.mechanism,
            "guarantee": self.guarantee,
            "statement": self.statement,
            "mse_per_user": est.mse_per_user,
            "expected_sq_error": est.expected_sq_error,
            "error_kind": est.error_kind,
            "error_note": est.error_note,
            "output": output.map(|p| p.display().to_string()),
            "mean": est.mean,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Front;

    #[test]
    fn a_mean_file_is_npy_or_csv_named_per_front() {
        assert!(
            MeanFile::new(Path::new("m.NPY"), Existing::Refuse)
                .unwrap()
                .npy
        );
        assert!(MeanFile::of(None, Existing::Refuse).unwrap().is_none());
        assert!(
            !MeanFile::new(Path::new("m.csv"), Existing::Refuse)
                .unwrap()
                .npy
        );
        for (front, field) in [(Front::Cli, "--output"), (Front::Python, "output")] {
            let e = MeanFile::new(Path::new("m.txt"), Existing::Refuse)
                .unwrap_err()
                .render(front);
            assert!(
                e.contains(field) && e.contains("m.txt: the mean is written"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_csv_mean_is_one_line() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("m.csv");
        MeanFile::new(&path, Existing::Refuse)
            .unwrap()
            .write(&[1.0, -0.5])
            .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "1e0,-5e-1\n");
    }
}
