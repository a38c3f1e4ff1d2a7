use std::path::Path;

use super::format::*;
use crate::atomic::{AtomicFile, Existing};
use crate::error::{Error, Result};
use crate::mechanism::Payload;

/// The file format of a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Container {
    /// dprp's own format (see [`crate::release`]): memory-mapped by readers.
    #[default]
    Native,
    /// Apache Parquet (see [`super::parquet`]): the same release as columns, for data tools.
    Parquet,
}

impl Container {
    /// Parse `native` or `parquet` (`--output-format`).
    pub fn parse(s: &str) -> Result<Container> {
        match s.to_ascii_lowercase().as_str() {
            "native" | "dprp" => Ok(Container::Native),
            "parquet" => Ok(Container::Parquet),
            o => Err(Error::param(
                "‹output_format›",
                format!("'{o}' is not native or parquet"),
            )),
        }
    }

    /// The format an output path asks for: Parquet for a `.parquet` name, native otherwise.
    pub fn from_path(path: &Path) -> Container {
        let parquet = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("parquet"));
        if parquet {
            Container::Parquet
        } else {
            Container::Native
        }
    }

    /// `native` or `parquet`.
    pub fn name(self) -> &'static str {
        match self {
            Container::Native => "native",
            Container::Parquet => "parquet",
        }
    }
}

/// Where the bytes go: the native file itself, or a Parquet file while the native image is only
/// hashed (its checksum is the Parquet release's, see [`super::parquet`]).
enum Sink {
    Native(AtomicFile),
    Parquet {
        sink: Box<super::parquet::ParquetSink>,
        /// Length of the native image so far.
        position: u64,
    },
}

/// Streams a release to disk: rows are appended as they are produced, hashed on the way, and the
/// file appears at its path only when [`finish`](ReleaseWriter::finish) succeeds.
pub struct ReleaseWriter {
    out: Sink,
    hasher: blake3::Hasher,
    payload: Payload,
    k: usize,
    n: u64,
    labels: Option<Vec<f32>>,
    ids: Option<Vec<u64>>,
}

impl ReleaseWriter {
    /// Start a release of `k` values (or bits) per row.
    pub fn create(
        path: &Path,
        payload: Payload,
        k: usize,
        has_labels: bool,
        explicit_ids: bool,
    ) -> Result<ReleaseWriter> {
        ReleaseWriter::create_as(
            path,
            (Container::Native, Existing::Refuse),
            payload,
            k,
            has_labels,
            explicit_ids,
            0,
        )
    }

    /// Start a release in the given container, replacing an existing regular file at `path`
    /// only with [`Existing::Replace`]; `first_row` is the id of the first row when ids are
    /// implicit (a shard's first row; a Parquet release writes every row's id).
    pub fn create_as(
        path: &Path,
        (container, existing): (Container, Existing),
        payload: Payload,
        k: usize,
        has_labels: bool,
        explicit_ids: bool,
        first_row: u64,
    ) -> Result<ReleaseWriter> {
        let out = match container {
            Container::Native => {
                let mut out = AtomicFile::create(path, existing)?;
                out.write_all(&[0u8; HEADER_LEN])?;
                Sink::Native(out)
            }
            Container::Parquet => Sink::Parquet {
                sink: Box::new(super::parquet::ParquetSink::create(
                    path, existing, payload, k, has_labels, first_row,
                )?),
                position: HEADER_LEN as u64,
            },
        };
        Ok(ReleaseWriter {
            out,
            hasher: blake3::Hasher::new(),
            payload,
            k,
            n: 0,
            labels: has_labels.then(Vec::new),
            ids: explicit_ids.then(Vec::new),
        })
    }

    /// Hash bytes of the native image and write them (native) or count them (Parquet).
    fn body(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.len() >= 1 << 20 {
            self.hasher.update_rayon(bytes);
        } else {
            self.hasher.update(bytes);
        }
        match &mut self.out {
            Sink::Native(out) => out.write_all(bytes),
            Sink::Parquet { position, .. } => {
                *position += bytes.len() as u64;
                Ok(())
            }
        }
    }

    /// Payload bytes of `rows` rows, with their labels and ids: into the native image, and to
    /// the Parquet file as a record batch.
    fn append_rows(
        &mut self,
        bytes: &[u8],
        rows: usize,
        labels: &[f32],
        ids: &[u64],
    ) -> Result<()> {
        if let Sink::Parquet { sink, .. } = &mut self.out {
            let labels = if self.labels.is_some() { labels } else { &[] };
            let ids = if self.ids.is_some() { ids } else { &[] };
            sink.append(bytes, rows, labels, ids)?;
        }
        self.body(bytes)
    }

    fn position(&self) -> u64 {
        match &self.out {
            Sink::Native(out) => out.position(),
            Sink::Parquet { position, .. } => *position,
        }
    }

    /// Append real-valued rows (`values.len()` a multiple of k).
    pub fn write_f32(&mut self, values: &[f32], labels: &[f32], ids: &[u64]) -> Result<()> {
        if self.payload != Payload::F32 || !values.len().is_multiple_of(self.k.max(1)) {
            return Err(Error::param(
                "payload",
                "rows do not match the release's payload",
            ));
        }
        let rows = values.len() / self.k;
        self.side(rows, labels, ids)?;
        self.append_rows(bytemuck::cast_slice(values), rows, labels, ids)?;
        self.n += rows as u64;
        Ok(())
    }

    /// Append packed-bit rows (`words.len()` a multiple of ⌈k/64⌉).
    pub fn write_bits(&mut self, words: &[u64], labels: &[f32], ids: &[u64]) -> Result<()> {
        let wpr = self.k.div_ceil(64);
        if self.payload != Payload::Bits || !words.len().is_multiple_of(wpr.max(1)) {
            return Err(Error::param(
                "payload",
                "rows do not match the release's payload",
            ));
        }
        let rows = words.len() / wpr;
        self.side(rows, labels, ids)?;
        if cfg!(target_endian = "little") {
            self.append_rows(bytemuck::cast_slice(words), rows, labels, ids)?;
        } else {
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            self.append_rows(&bytes, rows, labels, ids)?;
        }
        self.n += rows as u64;
        Ok(())
    }

    fn side(&mut self, rows: usize, labels: &[f32], ids: &[u64]) -> Result<()> {
        if let Some(l) = self.labels.as_mut() {
            if labels.len() != rows {
                return Err(Error::param(
                    "labels",
                    format!("{} labels for {rows} rows", labels.len()),
                ));
            }
            l.extend_from_slice(labels);
        }
        if let Some(v) = self.ids.as_mut() {
            if ids.len() != rows {
                return Err(Error::param(
                    "ids",
                    format!("{} ids for {rows} rows", ids.len()),
                ));
            }
            v.extend_from_slice(ids);
        }
        Ok(())
    }

    /// Refuse explicit ids that repeat (naming the id and the two rows of `input` that carry it):
    /// a release's ids name its rows.
    pub fn check_unique_ids(&self, input: &Path) -> Result<()> {
        let Some(ids) = self.ids.as_ref() else {
            return Ok(());
        };
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            let id = w[0];
            let mut rows = ids
                .iter()
                .enumerate()
                .filter(|(_, &v)| v == id)
                .map(|(i, _)| i);
            let first = rows.next().unwrap_or(0);
            let second = rows.next().unwrap_or(0);
            return Err(Error::Row {
                path: input.to_path_buf(),
                row: second as u64,
                msg: format!("its id {id} is also the id of row {first}: ids must be unique"),
            });
        }
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.n
    }

    /// Write ids, labels and metadata, the header and checksum, and move the file into place.
    /// `meta.n`, `meta.labels` and `meta.ids` are filled in here.
    pub fn finish(self, meta: ReleaseMeta) -> Result<ReleaseMeta> {
        self.finish_gated(meta, |_, _| Ok(()))
    }

    /// [`finish`](Self::finish), with `gate` called on the final metadata and checksum after
    /// everything is written and synced to the temporary file but *before* the file is moved into
    /// place: when `gate` fails, the release never appears (the temporary file is removed) and its
    /// error is returned. The privacy budget ledger refuses and records releases here.
    pub fn finish_gated(
        mut self,
        mut meta: ReleaseMeta,
        gate: impl FnOnce(&ReleaseMeta, &[u8; 32]) -> Result<()>,
    ) -> Result<ReleaseMeta> {
        meta.n = self.n;
        meta.k = self.k;
        meta.payload = self.payload;
        meta.labels = self.labels.is_some();
        meta.ids = self.ids.is_some();
        let payload_len = self.position() - HEADER_LEN as u64;
        let mut ids_off = 0u64;
        if let Some(ids) = self.ids.take() {
            self.pad()?;
            ids_off = self.position();
            let bytes: Vec<u8> = ids.iter().flat_map(|w| w.to_le_bytes()).collect();
            self.body(&bytes)?;
        }
        let mut labels_off = 0u64;
        if let Some(labels) = self.labels.take() {
            self.pad()?;
            labels_off = self.position();
            self.body(bytemuck::cast_slice(&labels))?;
        }
        self.pad()?;
        let meta_off = self.position();
        let json = serde_json::to_vec_pretty(&meta)
            .map_err(|e| Error::param("metadata", format!("cannot encode: {e}")))?;
        self.body(&json)?;
        let mut h = header(&Header {
            payload: self.payload,
            n: self.n,
            k: self.k as u64,
            payload_len,
            ids_off,
            labels_off,
            meta_off,
            meta_len: json.len() as u64,
        });
        self.hasher.update(&h[..HASHED_HEADER]);
        let sum = self.hasher.finalize();
        h[80..112].copy_from_slice(sum.as_bytes());
        let out = match self.out {
            Sink::Native(mut out) => {
                out.patch(0, &h)?;
                out
            }
            Sink::Parquet { sink, .. } => sink.close(&json, sum.as_bytes())?,
        };
        gate(&meta, sum.as_bytes())?;
        out.commit()?;
        Ok(meta)
    }

    fn pad(&mut self) -> Result<()> {
        let rem = self.position() % 64;
        if rem != 0 {
            let zeros = vec![0u8; (64 - rem) as usize];
            self.body(&zeros)?;
        }
        Ok(())
    }
}
