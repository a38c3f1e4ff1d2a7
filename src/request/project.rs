//! `dprp project` and `Release.project`: raw query vectors put through a release's public scaling
//! and public map, so that a database holding the release's sketches (LanceDB, PostgreSQL with
//! pgvector) can compare them with its rows. It is the raw-query path of `dprp query`
//! ([`RawQueries::sketch_for`]): the dimension checked, the recorded scaling applied (unless
//! `no_scale`), the map applied without noise (the queries are the querier's own), the signs
//! packed for a sign release.
//!
//! Projection is post-processing of public values: the map and the scaling are recorded in the
//! release, so projecting queries costs no privacy and needs no secret.
//!
//! The written file names the release it belongs to by its fingerprint ([`fingerprint`]), so
//! that projected queries are not compared with another release's sketches by mistake.

use std::path::Path;

use crate::atomic::Existing;
use crate::data::Scaling;
use crate::error::{Error, Result};
use crate::mechanism::{Mechanism, Payload};
use crate::release::parquet::{hex, ParquetSink};
use crate::release::{ReleaseMeta, ReleaseSet};
use crate::request::query::RawQueries;
use crate::search::Measure;

pub use crate::export::Stamp;
pub use crate::search::queries::QuerySketches;

/// Key of the projected-for fingerprint in a Parquet file of projected queries.
pub const PROJECTED_FOR_KEY: &str = "dprp.projected_for";

/// The fingerprint of a release: 64 hex digits of its BLAKE3 checksum (for a shard directory,
/// the checksum over its shards'; see [`ReleaseSet::checksum`]). It changes with any byte of the
/// release, is the same for a native release and its Parquet form, and is what a database table
/// holding the release's sketches records and is checked against.
pub fn fingerprint(set: &ReleaseSet) -> String {
    hex(&set.checksum())
}

/// The stamp a database table holding the release's sketches carries (`dprp export` writes it as
/// the table's comment, `dprp.lancedb` in its schema metadata): fingerprint, p, k, payload, rows,
/// and the `measure` the table is indexed for (given, or the payload's default: cosine, hamming
/// for signs). [`Stamp::check`] checks a table's stamp against a release.
pub fn stamp(set: &ReleaseSet, measure: Option<&str>) -> Result<Stamp> {
    Ok(Stamp::of(set, Measure::or_default(measure, set.is_bits())?))
}

/// Raw query vectors projected for one release.
#[derive(Debug, Clone)]
pub struct Projected {
    /// Projected values (`rows × k`) or packed sign words (`rows × ⌈k/64⌉`).
    pub sketches: QuerySketches,
    /// Number of queries.
    pub rows: usize,
    /// The release's k (values, or signs, per row).
    pub k: usize,
    /// The scaling steps applied to the queries before projecting.
    pub applied: Scaling,
}

/// The two files projected queries are written as, by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Npy,
    Parquet,
}

impl Projected {
    /// Project `raw` for the release described by `meta`, whose mechanism (rebuilt from its
    /// record) is `m`; `option` names where the queries came from for the refusals.
    pub fn new(
        meta: &ReleaseMeta,
        m: &dyn Mechanism,
        raw: RawQueries,
        option: &str,
        no_scale: bool,
    ) -> Result<Projected> {
        let rows = raw.n();
        let (sketches, applied) = raw.sketch_for(meta, m, option, no_scale)?;
        Ok(Projected {
            sketches,
            rows,
            k: meta.k,
            applied,
        })
    }

    /// What the sketches hold.
    pub fn payload(&self) -> Payload {
        match self.sketches {
            QuerySketches::Real(_) => Payload::F32,
            QuerySketches::Bits(_) => Payload::Bits,
        }
    }

    /// Columns per query: k values, or ⌈k/64⌉ packed words.
    pub fn width(&self) -> usize {
        match self.sketches {
            QuerySketches::Real(_) => self.k,
            QuerySketches::Bits(_) => self.k.div_ceil(64),
        }
    }

    /// The sketches as little-endian bytes (the release payload's layout).
    pub fn le_bytes(&self) -> Vec<u8> {
        match &self.sketches {
            QuerySketches::Real(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            QuerySketches::Bits(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    /// Write the projected queries to `path`: `.npy` (`<f4` rows × k, or `<u8` rows × ⌈k/64⌉
    /// packed words) or `.parquet` (the release's schema without labels: `id` = the query's row,
    /// `sketch`; the release's fingerprint under [`PROJECTED_FOR_KEY`]). Whole or absent: the
    /// file is written aside and renamed into place; an existing regular file at `path` is
    /// replaced only with [`Existing::Replace`]. `output` names the option for refusals.
    pub fn write(
        &self,
        (path, existing): (&Path, Existing),
        fingerprint: &str,
        output: &str,
    ) -> Result<()> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        let format = match ext.as_deref() {
            Some("npy") => Format::Npy,
            Some("parquet") => Format::Parquet,
            _ => {
                return Err(Error::param(
                    output,
                    format!(
                        "{}: projected queries are written as .npy or .parquet; name the file \
                         with one of these extensions",
                        path.display()
                    ),
                ))
            }
        };
        let bytes = self.le_bytes();
        match format {
            Format::Npy => {
                let descr = match self.payload() {
                    Payload::F32 => "<f4",
                    Payload::Bits => "<u8",
                };
                let out = crate::data::npy::matrix_bytes(descr, self.rows, self.width(), &bytes);
                let mut f = crate::atomic::AtomicFile::create(path, existing)?;
                f.write_all(&out)?;
                f.commit()
            }
            Format::Parquet => {
                let mut sink =
                    ParquetSink::create(path, existing, self.payload(), self.k, false, 0)?;
                sink.append(&bytes, self.rows, &[], &[])?;
                sink.close_with(&[(PROJECTED_FOR_KEY, fingerprint.to_string())])?
                    .commit()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanism::{from_record, MechanismKind};

    fn release(dir: &Path, kind: MechanismKind) -> ReleaseSet {
        let data = crate::data::sample::generate();
        let input = dir.join("s.bin");
        crate::data::native::write_as(&input, &data, Existing::Replace).unwrap();
        let output = dir.join(format!("{kind:?}.dprp"));
        let req = crate::publish::PublishRequest {
            input,
            input_opts: Default::default(),
            // a sign release needs a norm floor: --normalize l2 gives every row norm 1
            scaling: crate::data::scale::ScalingRequest {
                normalize_l2: kind != MechanismKind::DpOporp,
                ..Default::default()
            },
            params: crate::mechanism::MechanismParams {
                kind,
                epsilon: 5.0,
                delta: Some(1e-6),
                beta: 1.0,
                neighbour: crate::privacy::guarantee::Neighbour::Coordinate,
                p: 0,
                k: Some(40),
                projection: None,
                seed: None,
                min_norm: None,
                individual_dp: false,
                local: Default::default(),
            },
            output: output.clone(),
        };
        let noise = crate::privacy::samplers::noise::NoiseSource::from_os().unwrap();
        crate::publish::publish(&req, &noise).unwrap();
        ReleaseSet::open(&output).unwrap()
    }

    fn raw(p: usize, rows: usize) -> RawQueries {
        RawQueries {
            values: (0..rows * p)
                .map(|i| ((i * 7 % 11) as f32 - 5.0) / 50.0)
                .collect(),
            p,
            scaling: Default::default(),
            file: None,
        }
    }

    #[test]
    fn projected_queries_are_the_query_paths_sketches_in_both_files() {
        let d = tempfile::tempdir().unwrap();
        for kind in [MechanismKind::DpOporp, MechanismKind::DpSignrpRr] {
            let set = release(d.path(), kind);
            let meta = set.meta();
            let m = from_record(&meta.mechanism, &meta.guarantee).unwrap();
            let pr = Projected::new(meta, m.as_ref(), raw(meta.p, 3), "q", false).unwrap();
            let (direct, _) = raw(meta.p, 3)
                .sketch_for(meta, m.as_ref(), "q", false)
                .unwrap();
            assert_eq!(pr.sketches, direct);
            let sign = kind != MechanismKind::DpOporp;
            assert_eq!(pr.width(), if sign { 1 } else { 40 });
            let fp = fingerprint(&set);
            assert_eq!(fp.len(), 64);
            let npy = d.path().join("q.npy");
            pr.write((&npy, Existing::Replace), &fp, "-o").unwrap();
            let bytes = std::fs::read(&npy).unwrap();
            assert!(bytes.ends_with(&pr.le_bytes()));
            let header = String::from_utf8_lossy(&bytes[..128]).to_string();
            let shape = format!("'shape': (3, {})", pr.width());
            assert!(header.contains(&shape), "{header}");
            let pq = d.path().join("q.parquet");
            pr.write((&pq, Existing::Replace), &fp, "-o").unwrap();
            assert!(crate::release::parquet::is_parquet(&pq));
            let e = pr
                .write((&d.path().join("q.csv"), Existing::Refuse), &fp, "-o")
                .unwrap_err()
                .to_string();
            assert!(e.contains("-o") && e.contains(".npy or .parquet"), "{e}");
            assert!(!d.path().join("q.csv").exists());
            let e = Projected::new(meta, m.as_ref(), raw(meta.p + 1, 2), "q", false)
                .unwrap_err()
                .to_string();
            assert!(e.contains("features"), "{e}");
        }
    }
}
