//! What `dprp info` says about a release (and the demo about each of its releases): one report,
//! built from an opened release, rendered as the text lines of a description or as JSON.

use std::path::Path;

use crate::mechanism::central::arithmetic::RoundingCost;
use crate::mechanism::local::release::describe_constants;
use crate::mechanism::{Payload, ProjectionRecord};
use crate::privacy::guarantee::GuaranteeKind;
use crate::release::{Release, ReleaseMeta, ReleaseSet};

/// One shard file of a sharded release: its file name and the global ids of its rows.
#[derive(Debug, Clone)]
struct ShardSpan {
    file: Option<String>,
    first_row: u64,
    n: usize,
}

/// The description of a release: its metadata, where it was read from, and for a sharded
/// release its shards.
#[derive(Debug)]
pub struct ReleaseInfo<'a> {
    /// The path the release was opened from.
    path: &'a Path,
    meta: &'a ReleaseMeta,
    /// The shard files of a sharded release; `None` for one file.
    shards: Option<Vec<ShardSpan>>,
    /// Whether some part is stored as Parquet.
    parquet: bool,
    advisories: Vec<String>,
}

impl<'a> ReleaseInfo<'a> {
    /// The description of a release file or a sharded release's directory.
    pub fn of(r: &'a ReleaseSet) -> ReleaseInfo<'a> {
        let shards = r.is_sharded().then(|| {
            (0..r.parts().len())
                .map(|i| ShardSpan {
                    file: r.parts()[i]
                        .path()
                        .file_name()
                        .map(|f| f.to_string_lossy().into_owned()),
                    first_row: r.first_row(i),
                    n: r.parts()[i].n(),
                })
                .collect()
        });
        ReleaseInfo {
            path: r.path(),
            meta: r.meta(),
            shards,
            parquet: r.parts().iter().any(|p| p.is_parquet()),
            advisories: r.advisories(),
        }
    }

    /// The description of one release file.
    pub fn of_release(r: &'a Release) -> ReleaseInfo<'a> {
        ReleaseInfo {
            path: r.path(),
            meta: r.meta(),
            shards: None,
            parquet: r.is_parquet(),
            advisories: crate::release::advisory::advisories(r.meta()),
        }
    }

    /// The advisories that apply to the release ([`crate::release::advisory`]).
    pub fn advisories(&self) -> &[String] {
        &self.advisories
    }

    /// The metadata as JSON with what `info` adds: the file, that its checksum was verified, its
    /// format, the shards, the advisories and the cost of rounding.
    pub fn to_json(&self) -> serde_json::Result<serde_json::Value> {
        let mut v = serde_json::to_value(self.meta)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("file".into(), self.path.display().to_string().into());
            o.insert("checksum_verified".into(), true.into());
            let format = if self.parquet { "parquet" } else { "native" };
            o.insert("file_format".into(), format.into());
            if let Some(shards) = &self.shards {
                let shards: Vec<serde_json::Value> = shards
                    .iter()
                    .map(|s| {
                        serde_json::json!({ "file": s.file, "first_row": s.first_row, "n": s.n })
                    })
                    .collect();
                o.insert("shards".into(), shards.into());
            }
            o.insert("advisories".into(), self.advisories.clone().into());
            let m = self.meta;
            if let Some(c) = RoundingCost::of(&m.mechanism, &m.guarantee) {
                o.insert("rounding_cost".into(), serde_json::to_value(c)?);
            }
        }
        Ok(v)
    }

    /// The description as text: one `name  value` line per part of the release (the file, its
    /// rows, the mechanism and its constants, the noise, the guarantee, the scaling, the dataset).
    pub fn to_text(&self) -> String {
        let lines = [
            self.file_lines(),
            self.mechanism_lines(),
            self.local_lines(),
            self.noise_lines(),
            self.privacy_lines(),
        ];
        lines
            .iter()
            .flatten()
            .map(|(k, v)| format!("{k:<12} {v}\n"))
            .collect()
    }

    /// The line on the shards of a sharded release.
    fn shards_line(&self, shards: &[ShardSpan]) -> String {
        format!(
            "{} shard files{} (rows {}): the one-file release of these rows split into files, \
             with its guarantee",
            shards.len(),
            if self.parquet { " in Parquet" } else { "" },
            shards
                .iter()
                .map(|s| format!("{}..{}", s.first_row, s.first_row + s.n as u64))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    /// The file, its shards, its format, its rows and their dimensions.
    fn file_lines(&self) -> Vec<(&'static str, String)> {
        let m = self.meta;
        let sharded = self.shards.is_some();
        let mut lines = vec![(
            "release",
            format!(
                "{} (checksum{} verified)",
                self.path.display(),
                if sharded { "s of every shard" } else { "" }
            ),
        )];
        if let Some(shards) = &self.shards {
            lines.push(("shards", self.shards_line(shards)));
        }
        let parquet = if crate::release::parquet::is_parquet(self.path) {
            " as Parquet (columns id, label, sketch; the checksum is that of the native release)"
        } else {
            ""
        };
        lines.push((
            "format",
            format!(
                "version {}{parquet}, written by {} at {}",
                m.format_version, m.tool, m.created
            ),
        ));
        let ids = match (m.ids, m.shard) {
            (true, _) => "stored".to_string(),
            // one shard file: its rows carry the release's global ids
            (false, Some(s)) if !sharded => format!(
                "{}..{} (shard {} of {})",
                s.first_row,
                s.first_row.saturating_add(m.n).saturating_sub(1),
                s.index,
                s.count
            ),
            (false, _) => match m.mechanism.local.as_ref().map_or(0, |l| l.first_row) {
                0 => "0..n-1".to_string(),
                // a local release's own first row id (its users' per-row maps)
                base => match base.checked_add(m.n.saturating_sub(1)) {
                    Some(last) => format!("{base}..{last}"),
                    None => format!("from {base}, overflowing 64 bits (damaged or forged)"),
                },
            },
        };
        let labels = if m.labels { "yes" } else { "no" };
        lines.push((
            "rows",
            format!("{} (labels: {labels}, row ids: {ids})", m.n),
        ));
        let payload = match m.payload {
            Payload::F32 => "f32 values per row",
            Payload::Bits => "sign bits per row",
        };
        lines.push(("dimensions", format!("p = {} → k = {} {payload}", m.p, m.k)));
        lines
    }

    /// The mechanism and its public map.
    fn mechanism_lines(&self) -> Vec<(&'static str, String)> {
        let mech = &self.meta.mechanism;
        let projection = match &mech.projection {
            ProjectionRecord::Identity => "none (raw coordinates)".into(),
            ProjectionRecord::Dense {
                entries,
                seed,
                layout,
            } => format!(
                "dense {}, public seed {}, layout v{layout}",
                entries.name(),
                seed.to_hex()
            ),
            ProjectionRecord::Oporp { seed, layout } => {
                format!("OPORP, public seed {}, layout v{layout}", seed.to_hex())
            }
            ProjectionRecord::Correlated { seed, layout } => format!(
                "correlated SRHT: one public diagonal D from release seed {}, a Hadamard row \
                 sample per row (row i: the seed of row first_row + i), layout v{layout}",
                seed.to_hex()
            ),
            ProjectionRecord::PerRow { map, seed, layout } => format!(
                "one public {} map per row (row i: the seed of row first_row + i derived from \
                 release seed {}), layout v{layout}",
                map.name(),
                seed.to_hex()
            ),
        };
        vec![
            (
                "mechanism",
                format!("{} — {}", mech.name.name(), mech.algorithm),
            ),
            ("projection", projection),
        ]
    }

    /// A local-DP release's constants, mean error, decoder and first row.
    fn local_lines(&self) -> Vec<(&'static str, String)> {
        let Some(l) = &self.meta.mechanism.local else {
            return Vec::new();
        };
        let mut lines = vec![
            ("constants", describe_constants(&l.constants)),
            (
                "mean error",
                format!(
                    "E‖Z − v‖² per user = {:.6} ({}); the mean of n rows has 1/n of it",
                    l.mse_per_user, l.mse_note
                ),
            ),
            ("decoder", l.decoder.clone()),
        ];
        if l.first_row != 0 {
            lines.push(("first row", format!("row ids start at {}", l.first_row)));
        }
        lines
    }

    /// The noise: a Gaussian calibration, the sign rule, how noise and public maps are computed,
    /// the cost of rounding, and the noise source.
    fn noise_lines(&self) -> Vec<(&'static str, String)> {
        let m = self.meta;
        let mut lines = Vec::new();
        if let Some(c) = &m.mechanism.gaussian {
            lines.push((
                "noise",
                format!(
                    "N(0, σ²) per value, σ = {:.6}, Δ₂ = {:.6}, {}; analytic σ {:.6}, classical σ \
                     {:.6}{}",
                    c.sigma,
                    c.sensitivity,
                    c.method,
                    c.sigma_analytic,
                    c.sigma_classical,
                    if c.classical_proven {
                        ""
                    } else {
                        " (classical proven only for ε < 1)"
                    }
                ),
            ));
        }
        if let Some(sr) = &m.mechanism.sign {
            lines.push(("signs", sr.describe()));
        }
        if let Some(method) = m.mechanism.noise_method() {
            lines.push(("noise method", method.describe()));
        }
        if let Some(a) = &m.mechanism.arithmetic {
            lines.push(("arithmetic", a.describe()));
        }
        if let Some(c) = RoundingCost::of(&m.mechanism, &m.guarantee) {
            lines.push(("rounding cost", c.describe()));
        }
        lines.push((
            "noise source",
            format!("{} — {}", m.noise.source, m.noise.generator),
        ));
        lines
    }

    /// The guarantee, the scaling, the dataset's fingerprint and the statement.
    fn privacy_lines(&self) -> Vec<(&'static str, String)> {
        let (m, g) = (self.meta, &self.meta.guarantee);
        let label = if m.private {
            g.label()
        } else {
            "NOT PRIVATE".into()
        };
        let privacy = if g.kind == GuaranteeKind::LocalDp {
            format!("{label} ({})", g.replace_one())
        } else {
            format!(
                "{label}; ε = {}, δ = {}, β = {}, neighbours: {}",
                g.epsilon,
                g.delta
                    .map(|d| format!("{d:e}"))
                    .unwrap_or_else(|| "0".into()),
                g.beta,
                g.neighbour.name()
            )
        };
        let dataset = match &m.dataset {
            Some(d) => format!(
                "fingerprint {} (keyed: made with the secret key of ledger key id {}; the key is \
                 not in the release)",
                &d.fingerprint[..16.min(d.fingerprint.len())],
                d.key_id
            ),
            None => "no fingerprint (published without ‹ledger›)".into(),
        };
        vec![
            ("privacy", privacy),
            ("scaling", m.scaling.describe()),
            ("dataset", dataset),
            ("guarantee", m.statement.clone()),
        ]
    }
}
