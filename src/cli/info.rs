use std::path::PathBuf;

use clap::Args;

use crate::error::{Error, Result};
use crate::mechanism::{Payload, ProjectionRecord};
use crate::release::{Release, ReleaseMeta, ReleaseSet};

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Release file, or a sharded release's directory.
    release: PathBuf,
    /// Print the metadata as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: InfoArgs) -> Result<()> {
    let r = ReleaseSet::open(&a.release)?;
    let advisories = r.advisories();
    for w in &advisories {
        super::output::warn(w);
    }
    if a.json {
        let mut v =
            serde_json::to_value(r.meta()).map_err(|e| Error::param("--json", e.to_string()))?;
        if let Some(o) = v.as_object_mut() {
            o.insert("file".into(), a.release.display().to_string().into());
            o.insert("checksum_verified".into(), true.into());
            let parquet = r.parts().iter().any(|p| p.is_parquet());
            o.insert(
                "file_format".into(),
                if parquet { "parquet" } else { "native" }.into(),
            );
            if r.is_sharded() {
                o.insert("shards".into(), shards_json(&r));
            }
            o.insert("advisories".into(), advisories.clone().into());
            let meta = r.meta();
            if let Some(c) = crate::mechanism::central::arithmetic::RoundingCost::of(
                &meta.mechanism,
                &meta.guarantee,
            ) {
                let c =
                    serde_json::to_value(c).map_err(|e| Error::param("--json", e.to_string()))?;
                o.insert("rounding_cost".into(), c);
            }
        }
        outln!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| Error::param("--json", e.to_string()))?
        )?;
        return Ok(());
    }
    let shards = r.is_sharded().then(|| {
        format!(
            "{} shard files{} (rows {}): the one-file release of these rows split into files, \
             with its guarantee",
            r.parts().len(),
            if r.parts().iter().any(|p| p.is_parquet()) {
                " in Parquet"
            } else {
                ""
            },
            (0..r.parts().len())
                .map(|i| format!(
                    "{}..{}",
                    r.first_row(i),
                    r.first_row(i) + r.parts()[i].n() as u64
                ))
                .collect::<Vec<_>>()
                .join(", ")
        )
    });
    super::output::print_str(&describe_meta(r.path(), r.meta(), shards))?;
    Ok(())
}

fn shards_json(r: &ReleaseSet) -> serde_json::Value {
    (0..r.parts().len())
        .map(|i| {
            serde_json::json!({
                "file": r.parts()[i].path().file_name().map(|f| f.to_string_lossy().into_owned()),
                "first_row": r.first_row(i),
                "n": r.parts()[i].n(),
            })
        })
        .collect()
}

pub use crate::mechanism::local::release::describe_constants;

/// The human-readable description printed by `dprp info` (and the demo).
pub fn describe(r: &Release) -> String {
    describe_meta(r.path(), r.meta(), None)
}

/// [`describe`] from a path and metadata, with a line on the shards of a sharded release.
pub fn describe_meta(path: &std::path::Path, m: &ReleaseMeta, shards: Option<String>) -> String {
    let g = &m.guarantee;
    let one_shard_file = shards.is_none();
    let mut s = String::new();
    let mut line = |k: &str, v: String| s.push_str(&format!("{k:<12} {v}\n"));
    line(
        "release",
        format!(
            "{} (checksum{} verified)",
            path.display(),
            if shards.is_some() {
                "s of every shard"
            } else {
                ""
            }
        ),
    );
    if let Some(sh) = shards {
        line("shards", sh);
    }
    line(
        "format",
        format!(
            "version {}{}, written by {} at {}",
            m.format_version,
            if crate::release::parquet::is_parquet(path) {
                " as Parquet (columns id, label, sketch; the checksum is that of the native release)"
            } else {
                ""
            },
            m.tool,
            m.created
        ),
    );
    line(
        "rows",
        format!(
            "{} (labels: {}, row ids: {})",
            m.n,
            if m.labels { "yes" } else { "no" },
            match (m.ids, m.shard) {
                (true, _) => "stored".to_string(),
                // one shard file: its rows carry the release's global ids
                (false, Some(s)) if one_shard_file => format!(
                    "{}..{} (shard {} of {})",
                    s.first_row,
                    s.first_row.saturating_add(m.n).saturating_sub(1),
                    s.index,
                    s.count
                ),
                (false, _) => "0..n-1".to_string(),
            }
        ),
    );
    line(
        "dimensions",
        format!(
            "p = {} → k = {} {}",
            m.p,
            m.k,
            match m.payload {
                Payload::F32 => "f32 values per row",
                Payload::Bits => "sign bits per row",
            }
        ),
    );
    line(
        "mechanism",
        format!("{} — {}", m.mechanism.name.name(), m.mechanism.algorithm),
    );
    line(
        "projection",
        match &m.mechanism.projection {
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
        },
    );
    if let Some(l) = &m.mechanism.local {
        line("constants", describe_constants(&l.constants));
        line(
            "mean error",
            format!(
                "E‖Z − v‖² per user = {:.6} ({}); the mean of n rows has 1/n of it",
                l.mse_per_user, l.mse_note
            ),
        );
        line("decoder", l.decoder.clone());
        if l.first_row != 0 {
            line("first row", format!("row ids start at {}", l.first_row));
        }
    }
    if let Some(c) = &m.mechanism.gaussian {
        line(
            "noise",
            format!(
                "N(0, σ²) per value, σ = {:.6}, Δ₂ = {:.6}, {}; analytic σ {:.6}, classical σ {:.6}{}",
                c.sigma,
                c.sensitivity,
                c.method,
                c.sigma_analytic,
                c.sigma_classical,
                if c.classical_proven { "" } else { " (classical proven only for ε < 1)" }
            ),
        );
    }
    if let Some(sr) = &m.mechanism.sign {
        line("signs", sr.describe());
    }
    if let Some(method) = m.mechanism.noise_method() {
        line("noise method", method.describe());
    }
    if let Some(a) = &m.mechanism.arithmetic {
        line("arithmetic", a.describe());
    }
    if let Some(c) = crate::mechanism::central::arithmetic::RoundingCost::of(&m.mechanism, g) {
        line("rounding cost", c.describe());
    }
    line(
        "noise source",
        format!("{} — {}", m.noise.source, m.noise.generator),
    );
    if g.kind == crate::privacy::guarantee::GuaranteeKind::LocalDp {
        line(
            "privacy",
            format!(
                "{} ({})",
                if m.private {
                    g.label()
                } else {
                    "NOT PRIVATE".into()
                },
                g.replace_one()
            ),
        );
    } else {
        line(
            "privacy",
            format!(
                "{}; ε = {}, δ = {}, β = {}, neighbours: {}",
                if m.private {
                    g.label()
                } else {
                    "NOT PRIVATE".into()
                },
                g.epsilon,
                g.delta
                    .map(|d| format!("{d:e}"))
                    .unwrap_or_else(|| "0".into()),
                g.beta,
                g.neighbour.name()
            ),
        );
    }
    line("scaling", m.scaling.describe());
    line(
        "dataset",
        match &m.dataset {
            Some(d) => format!(
                "fingerprint {} (keyed: made with the secret key of ledger key id {}; the key is \
                 not in the release)",
                &d.fingerprint[..16.min(d.fingerprint.len())],
                d.key_id
            ),
            None => "no fingerprint (published without --ledger)".into(),
        },
    );
    line("guarantee", m.statement.clone());
    s
}
