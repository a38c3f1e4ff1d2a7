//! Explicit, recorded scaling. dprp never rescales silently: the privacy domain is `[-1,1]^p`
//! (DESIGN.md §2) and `publish` refuses values outside it, so a user maps data into the domain with
//! one of these steps, and every release records which steps were applied.
//!
//! Privacy note: `Divide`, `Clip` and `NormalizeL2` are data-independent (row-local) maps, so the
//! guarantee carries over to the original data under the same neighbour relation of the scaled
//! rows. `MaxAbs` computes per-column factors *from the data*; the factors are not protected by the
//! release's guarantee (a careful publisher uses public bounds instead), so dprp warns when it is
//! used and records it.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Relative tolerance on `‖v‖ = 1`: inputs with `|‖v‖ − 1| ≤ UNIT_NORM_TOL` are unit vectors (f32
/// data normalised to 1 lands within about 1e-7), larger norms are refused.
pub const UNIT_NORM_TOL: f64 = 1e-6;

/// One preprocessing step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum ScalingStep {
    /// Every value divided by a public constant (e.g. 255 for pixels).
    Divide {
        /// The divisor.
        by: f64,
    },
    /// Every column divided by its largest absolute value in the data (data-dependent).
    MaxAbs,
    /// Every row divided by its ℓ₂ norm (zero rows left as they are).
    NormalizeL2,
    /// Every value clamped to `[-1, 1]`.
    Clip,
    /// Every row longer than `radius` in ℓ₂ norm scaled down to norm `radius` (row-local, public
    /// radius: data-independent).
    ClipNorm {
        /// The public radius.
        radius: f64,
    },
}

/// The ordered list of steps applied to a dataset.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Scaling(pub Vec<ScalingStep>);

impl Scaling {
    /// True when the scaling depends on the data as a whole (not covered by the DP guarantee).
    pub fn data_dependent(&self) -> bool {
        self.0.iter().any(|s| matches!(s, ScalingStep::MaxAbs))
    }
    /// True when every row is guaranteed to have unit ℓ₂ norm (or be zero) afterwards (a clip
    /// after normalising changes nothing: unit rows are already inside [-1,1]).
    pub fn unit_norm(&self) -> bool {
        let steps: Vec<&ScalingStep> = self
            .0
            .iter()
            .filter(|s| !matches!(s, ScalingStep::Clip))
            .collect();
        matches!(steps.last(), Some(ScalingStep::NormalizeL2))
            && matches!(
                self.0.last(),
                Some(ScalingStep::NormalizeL2 | ScalingStep::Clip)
            )
    }
    /// Human-readable description, `none` when empty.
    pub fn describe(&self) -> String {
        if self.0.is_empty() {
            return "none".into();
        }
        self.0
            .iter()
            .map(|s| match s {
                ScalingStep::Divide { by } => format!("divide by {by}"),
                ScalingStep::MaxAbs => "per-column max-abs (data-dependent)".into(),
                ScalingStep::NormalizeL2 => "l2-normalise rows".into(),
                ScalingStep::Clip => "clip to [-1,1]".into(),
                ScalingStep::ClipNorm { radius } => format!("clip row norms to {radius}"),
            })
            .collect::<Vec<_>>()
            .join(", then ")
    }
}

/// What the user asked for on the command line, before the data is seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScalingRequest {
    /// `--scale max-abs` or `--scale <number>`.
    pub scale: Option<ScaleArg>,
    /// `--normalize l2`.
    pub normalize_l2: bool,
    /// `--clip`.
    pub clip: bool,
    /// `--clip-norm R`.
    pub clip_norm: Option<f64>,
}

/// The argument of `--scale`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScaleArg {
    /// Per-column max-abs.
    MaxAbs,
    /// Divide by a positive constant.
    Divide(f64),
}

impl ScaleArg {
    /// Parse `max-abs` or a positive finite number.
    pub fn parse(s: &str) -> Result<ScaleArg> {
        if s.eq_ignore_ascii_case("max-abs") || s.eq_ignore_ascii_case("maxabs") {
            return Ok(ScaleArg::MaxAbs);
        }
        match s.parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => Ok(ScaleArg::Divide(v)),
            _ => Err(Error::param(
                "‹scale›",
                format!("'{s}' is neither 'max-abs' nor a positive number to divide by"),
            )),
        }
    }
}

/// Parse the argument of `--normalize` (only `l2` is supported).
pub fn parse_normalize(s: &str) -> Result<bool> {
    if s.eq_ignore_ascii_case("l2") {
        Ok(true)
    } else {
        Err(Error::param(
            "‹normalize›",
            format!("'{s}' is not supported (only 'l2')"),
        ))
    }
}

/// The scaling options as a user gives them (`--scale`, `--normalize`, `--clip`, `--clip-norm`),
/// unparsed: [`request`](ScaleOptions::request) parses them when the data are about to be read, so
/// a command that reads no file (synthetic data) never refuses them.
#[derive(Debug, Clone, Default)]
pub struct ScaleOptions {
    /// `max-abs` or a number to divide by.
    pub scale: Option<String>,
    /// `l2`.
    pub normalize: Option<String>,
    /// Clamp values to [-1, 1].
    pub clip: bool,
    /// Shrink rows whose ℓ₂ norm exceeds R to norm R.
    pub clip_norm: Option<f64>,
}

impl ScaleOptions {
    /// The parsed request.
    pub fn request(&self) -> Result<ScalingRequest> {
        Ok(ScalingRequest {
            scale: self.scale.as_deref().map(ScaleArg::parse).transpose()?,
            normalize_l2: self
                .normalize
                .as_deref()
                .map(parse_normalize)
                .transpose()?
                .unwrap_or(false),
            clip: self.clip,
            clip_norm: self.clip_norm,
        })
    }
}

impl ScalingRequest {
    /// True when nothing is requested.
    pub fn is_empty(&self) -> bool {
        self.scale.is_none() && !self.normalize_l2 && !self.clip && self.clip_norm.is_none()
    }
    /// True when the request needs a pass over the whole data first (max-abs).
    pub fn needs_column_stats(&self) -> bool {
        matches!(self.scale, Some(ScaleArg::MaxAbs))
    }
}

/// A ready-to-apply scaler: the request plus any column statistics it needed.
#[derive(Debug, Clone)]
pub struct Scaler {
    divide: Option<f64>,
    col_factors: Option<Vec<f32>>,
    normalize_l2: bool,
    clip_norm: Option<f64>,
    clip: bool,
    /// The steps, in the order they are applied (scale, normalise, clip the norm, clip).
    pub steps: Vec<ScalingStep>,
}

impl Scaler {
    /// Build a scaler. `col_max_abs` must be given when the request is `max-abs` (see
    /// [`column_max_abs`]).
    pub fn new(req: &ScalingRequest, col_max_abs: Option<&[f32]>) -> Result<Scaler> {
        let mut steps = Vec::new();
        let mut divide = None;
        let mut col_factors = None;
        match req.scale {
            Some(ScaleArg::Divide(by)) => {
                divide = Some(by);
                steps.push(ScalingStep::Divide { by });
            }
            Some(ScaleArg::MaxAbs) => {
                let m = col_max_abs.ok_or_else(|| {
                    Error::param(
                        "‹scale›",
                        "max-abs needs column statistics from a first pass",
                    )
                })?;
                col_factors = Some(
                    m.iter()
                        .map(|&v| if v > 0.0 { 1.0 / v } else { 1.0 })
                        .collect(),
                );
                steps.push(ScalingStep::MaxAbs);
            }
            None => {}
        }
        if req.normalize_l2 {
            steps.push(ScalingStep::NormalizeL2);
        }
        if let Some(radius) = req.clip_norm {
            if !(radius.is_finite() && radius > 0.0) {
                return Err(Error::param(
                    "‹clip_norm›",
                    format!("the radius must be a positive finite number, got {radius}"),
                ));
            }
            steps.push(ScalingStep::ClipNorm { radius });
        }
        if req.clip {
            steps.push(ScalingStep::Clip);
        }
        Ok(Scaler {
            divide,
            col_factors,
            normalize_l2: req.normalize_l2,
            clip_norm: req.clip_norm,
            clip: req.clip,
            steps,
        })
    }

    /// Apply to a chunk of rows of width `p`, in place.
    pub fn apply(&self, values: &mut [f32], p: usize) {
        if p == 0 {
            return;
        }
        for row in values.chunks_mut(p) {
            if let Some(by) = self.divide {
                divide_row(row, by);
            }
            if let Some(f) = &self.col_factors {
                for (v, s) in row.iter_mut().zip(f) {
                    *v *= s;
                    // Guard against rounding just past 1 (x * (1/x) can be 1 + ulp).
                    *v = v.clamp(-1.0, 1.0);
                }
            }
            if self.normalize_l2 {
                normalise_row(row);
            }
            if let Some(r) = self.clip_norm {
                clip_row_norm(row, r);
            }
            if self.clip {
                clip_row(row);
            }
        }
    }
}

fn divide_row(row: &mut [f32], by: f64) {
    for v in row.iter_mut() {
        *v = (*v as f64 / by) as f32;
    }
}

fn normalise_row(row: &mut [f32]) {
    let norm = row
        .iter()
        .map(|&v| (v as f64) * (v as f64))
        .sum::<f64>()
        .sqrt();
    if norm > 0.0 {
        for v in row.iter_mut() {
            *v = ((*v as f64) / norm).clamp(-1.0, 1.0) as f32;
        }
    }
}

fn clip_row_norm(row: &mut [f32], radius: f64) {
    let norm = row
        .iter()
        .map(|&v| (v as f64) * (v as f64))
        .sum::<f64>()
        .sqrt();
    // NaN and infinite norms are left alone: validation reports the bad value.
    if norm.is_finite() && norm > radius {
        let s = radius / norm;
        for v in row.iter_mut() {
            *v = ((*v as f64) * s) as f32;
        }
    }
}

fn clip_row(row: &mut [f32]) {
    for v in row.iter_mut() {
        // NaN stays NaN (f32::clamp keeps it), so validation still reports it.
        *v = v.clamp(-1.0, 1.0);
    }
}

/// Where raw queries come from, for the messages of [`scale_queries`].
#[derive(Debug, Clone, Copy)]
pub struct QueryOrigin<'a> {
    /// The query file (or a name for in-memory queries).
    pub path: &'a std::path::Path,
    /// The option that gave them, as the front end spells it (`--queries`, `queries`).
    pub option: &'a str,
}

/// Bring raw query vectors to the scale of a release's rows: replay the public scaling steps the
/// release records (`release`), less those the query file records as already applied
/// (`query_file`, which must then be a prefix of the release's steps), check the result lies in
/// the domain, and return the steps applied.
///
/// `--scale max-abs` cannot be replayed: its per-column factors are the data's column maxima,
/// which dprp does not store in a release (they would disclose each column's largest value, which
/// the guarantee does not cover). Such releases need queries the user has scaled (and
/// `no_scale`). With `no_scale` nothing is applied, and the domain is still checked.
pub fn scale_queries(
    release: &Scaling,
    query_file: &Scaling,
    values: &mut [f32],
    p: usize,
    origin: &QueryOrigin<'_>,
    no_scale: bool,
) -> Result<Scaling> {
    let path = origin.path;
    let no_scale_flag = crate::error::field("no_scale");
    check_finite(values, p, 0, path)?;
    let todo: &[ScalingStep] = if no_scale {
        &[]
    } else if release.0.starts_with(&query_file.0) {
        &release.0[query_file.0.len()..]
    } else {
        return Err(Error::param(
            origin.option,
            format!(
                "{}: the query file records the scaling '{}', which is not how the release's rows were scaled ('{}'); pass raw vectors, or {no_scale_flag} if they are already on the release's scale",
                path.display(),
                query_file.describe(),
                release.describe()
            ),
        ));
    };
    if todo.contains(&ScalingStep::MaxAbs) {
        return Err(Error::param(
            origin.option,
            format!("the release's rows were scaled per column by the data's own maxima ({} max-abs); those factors are not stored in the release (they would disclose each column's largest value), so raw queries cannot be put on the same scale: scale them yourself and pass {no_scale_flag}", crate::error::field("scale")),
        ));
    }
    if p > 0 {
        for row in values.chunks_mut(p) {
            for step in todo {
                match *step {
                    ScalingStep::Divide { by } => divide_row(row, by),
                    ScalingStep::NormalizeL2 => normalise_row(row),
                    ScalingStep::Clip => clip_row(row),
                    ScalingStep::ClipNorm { radius } => clip_row_norm(row, radius),
                    ScalingStep::MaxAbs => {}
                }
            }
        }
    }
    let applied = Scaling(todo.to_vec());
    let hint = if no_scale {
        format!(
            "the queries were not scaled ({no_scale_flag}); scale them as the release's rows were \
             scaled"
        )
    } else if applied.0.is_empty() {
        format!(
            "the release's rows were scaled with '{}' and the queries are taken as already on that scale",
            release.describe()
        )
    } else {
        format!(
            "the queries were scaled as the release's rows were ({}); the release and these queries do not describe the same kind of data",
            applied.describe()
        )
    };
    check_domain_hint(values, p, 0, path, &hint)?;
    Ok(applied)
}

/// Per-column maximum absolute value of a chunk, folded into `acc` (length `p`).
pub fn column_max_abs(values: &[f32], p: usize, acc: &mut [f32]) {
    if p == 0 {
        return;
    }
    for row in values.chunks(p) {
        for (a, &v) in acc.iter_mut().zip(row) {
            let v = v.abs();
            if v > *a {
                *a = v;
            }
        }
    }
}

/// Check that every value of a chunk lies in the privacy domain `[-1,1]` and is finite. `first_row`
/// is the global index of the chunk's first row, used in the error.
pub fn check_domain(
    values: &[f32],
    p: usize,
    first_row: u64,
    path: &std::path::Path,
) -> Result<()> {
    check_domain_hint(
        values,
        p,
        first_row,
        path,
        "rescale explicitly with ‹scale max-abs›, ‹scale <divisor>›, ‹normalize l2› or ‹clip›",
    )
}

/// Check a chunk against a mechanism's input domain: the cube `[-1,1]^p` ([`check_domain`]), an
/// ℓ₂ ball of public radius (a row outside is refused with its norm), or an interval `[0, max]`.
/// Non-finite values are refused first, naming the cell.
pub fn check_input_domain(
    domain: crate::data::domain::InputDomain,
    values: &[f32],
    p: usize,
    first_row: u64,
    path: &std::path::Path,
) -> Result<()> {
    use crate::data::domain::InputDomain;
    if domain == InputDomain::Cube {
        return check_domain(values, p, first_row, path);
    }
    check_finite(values, p, first_row, path)?;
    if p == 0 {
        return Ok(());
    }
    for (r, row) in values.chunks(p).enumerate() {
        let row_id = first_row + r as u64;
        match domain {
            InputDomain::Ball { radius } => {
                let norm = row
                    .iter()
                    .map(|&v| (v as f64) * (v as f64))
                    .sum::<f64>()
                    .sqrt();
                if norm > radius * (1.0 + UNIT_NORM_TOL) {
                    return Err(Error::Row {
                        path: path.to_path_buf(),
                        row: row_id,
                        msg: format!(
                            "its ℓ₂ norm {norm:.6} is outside {} the mechanism protects; pass \
                             ‹normalize l2› (unit rows) or ‹clip_norm {radius}› (shrink longer \
                             rows) to map rows into it",
                            domain.describe()
                        ),
                    });
                }
            }
            InputDomain::Interval { max } => {
                let v = row[0] as f64;
                if !(0.0..=max).contains(&v) {
                    return Err(Error::Value {
                        path: path.to_path_buf(),
                        row: row_id,
                        col: 0,
                        msg: format!("value {v} is outside {}", domain.describe()),
                    });
                }
            }
            InputDomain::Cube => {}
        }
    }
    Ok(())
}

/// Whether every value lies in [−1, 1] (false for NaN and ±∞): a branch-free pass over blocks of
/// values that the compiler vectorises (an early return per value does not vectorise, and the
/// check had cost 8–16% of a publish at p = 4096). The caller looks for the first bad value only
/// when this is false, so the verdict and the message are those of the value-by-value loop.
pub fn all_in_unit_cube(values: &[f32]) -> bool {
    values.chunks(256).all(|block| {
        block
            .iter()
            .fold(true, |inside, &v| inside & (v.abs() <= 1.0))
    })
}

/// [`check_domain`] with `hint` after a value outside the domain.
fn check_domain_hint(
    values: &[f32],
    p: usize,
    first_row: u64,
    path: &std::path::Path,
    hint: &str,
) -> Result<()> {
    if p == 0 || all_in_unit_cube(values) {
        return Ok(());
    }
    // some value is outside: find the first in row order, and say what it is
    for (r, row) in values.chunks(p).enumerate() {
        for (c, &v) in row.iter().enumerate() {
            let msg = if v.is_nan() {
                "value is NaN".to_string()
            } else if v.is_infinite() {
                format!("value is {v}")
            } else if !(-1.0..=1.0).contains(&v) {
                format!("value {v} is outside the privacy domain [-1,1]; {hint}")
            } else {
                continue;
            };
            return Err(crate::error::Error::Value {
                path: path.to_path_buf(),
                row: first_row + r as u64,
                col: c as u64,
                msg,
            });
        }
    }
    Ok(())
}

/// Check that every value is finite (used by `convert`, which may write unscaled data).
pub fn check_finite(
    values: &[f32],
    p: usize,
    first_row: u64,
    path: &std::path::Path,
) -> Result<()> {
    if p == 0 {
        return Ok(());
    }
    for (r, row) in values.chunks(p).enumerate() {
        for (c, &v) in row.iter().enumerate() {
            if !v.is_finite() {
                return Err(crate::error::Error::Value {
                    path: path.to_path_buf(),
                    row: first_row + r as u64,
                    col: c as u64,
                    msg: if v.is_nan() {
                        "value is NaN".into()
                    } else {
                        format!("value is {v}")
                    },
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_options_parse_into_a_request() {
        assert!(ScaleOptions::default().request().unwrap().is_empty());
        let o = ScaleOptions {
            scale: Some("255".into()),
            normalize: Some("L2".into()),
            clip: true,
            clip_norm: Some(1.0),
        };
        let req = o.request().unwrap();
        assert_eq!(req.scale, Some(ScaleArg::Divide(255.0)));
        assert!(req.normalize_l2 && req.clip && req.clip_norm == Some(1.0));
        let bad = ScaleOptions {
            normalize: Some("l1".into()),
            ..Default::default()
        };
        assert_eq!(
            bad.request().unwrap_err().render(crate::error::Front::Cli),
            "invalid --normalize: 'l1' is not supported (only 'l2')"
        );
    }

    #[test]
    fn divide_normalise_clip_in_order() {
        let req = ScalingRequest {
            scale: Some(ScaleArg::Divide(2.0)),
            normalize_l2: true,
            clip: true,
            clip_norm: None,
        };
        let s = Scaler::new(&req, None).unwrap();
        let mut v = vec![6.0, 8.0, 0.0, 0.0];
        s.apply(&mut v, 2);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        assert_eq!(&v[2..], &[0.0, 0.0]);
        assert_eq!(s.steps.len(), 3);
    }

    #[test]
    fn max_abs_maps_into_domain() {
        let v0 = vec![3.0f32, -4.0, -6.0, 2.0, 0.0, 0.0];
        let mut acc = vec![0.0; 2];
        column_max_abs(&v0, 2, &mut acc);
        assert_eq!(acc, vec![6.0, 4.0]);
        let req = ScalingRequest {
            scale: Some(ScaleArg::MaxAbs),
            ..Default::default()
        };
        let s = Scaler::new(&req, Some(&acc)).unwrap();
        let mut v = v0.clone();
        s.apply(&mut v, 2);
        assert_eq!(v, vec![0.5, -1.0, -1.0, 0.5, 0.0, 0.0]);
        check_domain(&v, 2, 0, std::path::Path::new("x")).unwrap();
    }

    #[test]
    fn domain_errors_name_row_and_column() {
        let v = vec![0.0f32, 0.5, 0.25, 1.5];
        let e = check_domain(&v, 2, 10, std::path::Path::new("d.bin")).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("row 11") && s.contains("column 1"), "{s}");
        let v = vec![f32::NAN];
        assert!(check_domain(&v, 1, 0, std::path::Path::new("d"))
            .unwrap_err()
            .to_string()
            .contains("NaN"));
        let v = vec![f32::NEG_INFINITY];
        assert!(check_finite(&v, 1, 0, std::path::Path::new("d"))
            .unwrap_err()
            .to_string()
            .contains("-inf"));
    }

    #[test]
    fn scale_arg_parsing() {
        assert_eq!(ScaleArg::parse("255").unwrap(), ScaleArg::Divide(255.0));
        assert_eq!(ScaleArg::parse("max-abs").unwrap(), ScaleArg::MaxAbs);
        assert!(ScaleArg::parse("0").is_err());
        assert!(ScaleArg::parse("nan").is_err());
        assert!(ScaleArg::parse("big").is_err());
    }
}
