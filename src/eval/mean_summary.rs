//! The distributed side of the `dprp eval mean` report: error against the number of users and
//! against the bits per parameter (plots), and the two claims the evaluation reproduces — Chen
//! et al. 2022's headline (sketch + DDG at about 1.2 bits per parameter within 10 % of the
//! central Gaussian's error) and the `O(c²d/(n²ε²))` scaling (slopes of log error against log n
//! and log ε).

use std::fmt::Write as _;

use super::mean::{ExperimentReport, MeanRow, CENTRAL_ADD_REMOVE, CENTRAL_ZCDP};
use super::mean_series::{distinct, legend_for, not_run_notes, point};
use super::report::{Line, LineFigure, LinePanel};
use super::Status;

/// "About 1.2 bits per parameter": sketch-DDG rows at most this many bits per parameter count
/// for the headline.
pub const HEADLINE_BITS: f64 = 1.25;

/// The headline's tolerance: within 10 % of the central Gaussian's error.
pub const HEADLINE_RATIO: f64 = 1.10;

/// The series a row belongs to in a plot: the mechanism, with `b` and the bit cap when the rows
/// have several of them (`with_cap = false`: the cap is the plot's x axis).
fn series(r: &MeanRow, rows: &[&MeanRow], with_cap: bool) -> String {
    let mut s = r.mechanism.clone();
    let same = |a: &MeanRow| a.mechanism == r.mechanism;
    if let Some(b) = r.bits {
        let several = distinct(rows.iter().filter(|a| same(a)).filter_map(|a| a.bits)).len() > 1;
        // on the bits axis, b is the x variable of ddg and binomial
        if several && (with_cap || r.sketch_m.is_some() || r.bpp_cap.is_some()) {
            let _ = write!(s, " b={b}");
        }
    }
    if let (true, Some(c)) = (with_cap, r.bpp_cap) {
        let several = distinct(
            rows.iter()
                .filter(|a| same(a))
                .filter_map(|a| a.bpp_cap.map(f64::to_bits)),
        )
        .len()
            > 1;
        if several {
            let _ = write!(s, " ≤{c}bpp");
        }
    }
    if let Some(k) = r.k {
        if distinct(rows.iter().filter(|a| same(a)).filter_map(|a| a.k)).len() > 1 {
            let _ = write!(s, " k={k}");
        }
    }
    s
}

/// Series in order of appearance: (key, style, flat, legend).
fn styles(
    rows: &[&MeanRow],
    with_cap: bool,
    flat: impl Fn(&MeanRow) -> bool,
) -> Vec<(String, usize, bool, String)> {
    let mut out: Vec<(String, usize, bool, String)> = Vec::new();
    for r in rows {
        let key = series(r, rows, with_cap);
        if !out.iter().any(|x| x.0 == key) {
            let i = out.len();
            out.push((key.clone(), i, flat(r), legend_for(&key, r)));
        }
    }
    out
}

fn sorted(mut points: Vec<(f64, f64, f64)>) -> Vec<(f64, f64, f64)> {
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// Error against n: a panel per (d, ε).
pub fn error_vs_n(stem: &str, title: &str, rows: &[&MeanRow]) -> LineFigure {
    let st = styles(rows, true, |_| false);
    let mut panels = Vec::new();
    for d in distinct(rows.iter().map(|r| r.d)) {
        for eps in distinct(rows.iter().map(|r| r.epsilon.to_bits())) {
            let eps = f64::from_bits(eps);
            let lines = st
                .iter()
                .map(|(key, style, _, _)| Line {
                    style: *style,
                    flat: false,
                    points: sorted(
                        rows.iter()
                            .filter(|r| r.d == d && r.epsilon == eps)
                            .filter(|r| &series(r, rows, true) == key)
                            .filter_map(|r| point(r, r.n as f64, &r.sq_error))
                            .collect(),
                    ),
                })
                .collect();
            panels.push(LinePanel {
                caption: format!("d = {d}, ε = {eps}"),
                lines,
            });
        }
    }
    LineFigure {
        stem: stem.into(),
        title: title.into(),
        xlabel: "users n (log scale)".into(),
        ylabel: "‖μ̂ − μ̄‖² (log scale)".into(),
        panels,
        legend: st.into_iter().map(|(_, s, f, l)| (s, f, l)).collect(),
        notes: not_run_notes(rows),
    }
}

/// Error against the bits each user sends per parameter: a panel per (d, n, ε); mechanisms
/// without a bit budget (central, local) are flat dashed lines.
pub fn error_vs_bits(stem: &str, title: &str, rows: &[&MeanRow]) -> LineFigure {
    let st = styles(rows, false, |r| r.bits.is_none());
    let mut panels = Vec::new();
    for d in distinct(rows.iter().map(|r| r.d)) {
        for n in distinct(rows.iter().map(|r| r.n)) {
            for eps in distinct(rows.iter().map(|r| r.epsilon.to_bits())) {
                let eps = f64::from_bits(eps);
                let here: Vec<&&MeanRow> = rows
                    .iter()
                    .filter(|r| r.d == d && r.n == n && r.epsilon == eps)
                    .collect();
                if here.is_empty() {
                    continue;
                }
                let lines = st
                    .iter()
                    .map(|(key, style, flat, _)| Line {
                        style: *style,
                        flat: *flat,
                        points: sorted(
                            here.iter()
                                .filter(|r| &series(r, rows, false) == key)
                                .filter_map(|r| {
                                    point(r, r.bits_per_parameter.unwrap_or(0.0), &r.sq_error)
                                })
                                .collect(),
                        ),
                    })
                    .collect();
                panels.push(LinePanel {
                    caption: format!("d = {d}, n = {n}, ε = {eps}"),
                    lines,
                });
            }
        }
    }
    LineFigure {
        stem: stem.into(),
        title: title.into(),
        xlabel: "bits per parameter sent by each user (log scale)".into(),
        ylabel: "‖μ̂ − μ̄‖² (log scale)".into(),
        panels,
        legend: st.into_iter().map(|(_, s, f, l)| (s, f, l)).collect(),
        notes: not_run_notes(rows),
    }
}

/// Least-squares slope of `ln y` against `ln x` (at least 3 points).
pub fn log_slope(points: &[(f64, f64)]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|(x, y)| *x > 0.0 && *y > 0.0)
        .map(|(x, y)| (x.ln(), y.ln()))
        .collect();
    if pts.len() < 3 {
        return None;
    }
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

fn ok(r: &MeanRow) -> Option<f64> {
    (r.status == Status::Ok)
        .then_some(())
        .and(r.sq_error.as_ref())
        .map(|m| m.mean)
}

/// The headline and scaling lines of an experiment (empty when it has neither).
pub fn summary(e: &ExperimentReport) -> String {
    let rows: Vec<&MeanRow> = e.rows.iter().collect();
    let mut s = headline(&rows);
    s.push_str(&scaling(&rows));
    s
}

/// The headline: per (d, n, ε), the best sketch-ddg row within [`HEADLINE_BITS`] against the
/// central reference's closed form (exact: d·σ²); empty without a reference or such a row.
fn headline(rows: &[&MeanRow]) -> String {
    // the reference at the same accountant when there is one (module documentation of mean.rs)
    let reference = if rows.iter().any(|r| r.mechanism == CENTRAL_ZCDP) {
        CENTRAL_ZCDP
    } else {
        CENTRAL_ADD_REMOVE
    };
    let lines: Vec<String> = rows
        .iter()
        .filter(|r| r.mechanism == reference)
        .filter_map(|r| headline_line(r, rows))
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n**Headline** (Chen et al. 2022: about 1.2 bits per parameter without loss; here \
         the least measured error of sketch-ddg at ≤ {HEADLINE_BITS} bits per parameter \
         against {reference}'s exact d·σ²):\n"
    );
    for h in lines {
        let _ = writeln!(s, "- {h}");
    }
    s
}

/// The headline line of the setting of the central reference row `r`: the best sketch-ddg
/// within the bit budget against its error, the fewest bits per parameter within 10 %, and the
/// best ddg.
fn headline_line(r: &MeanRow, rows: &[&MeanRow]) -> Option<String> {
    let central = r.expected.filter(|_| r.status == Status::Ok)?;
    let same = |x: &&&MeanRow| x.d == r.d && x.n == r.n && x.epsilon == r.epsilon;
    let (x, m) = rows
        .iter()
        .filter(same)
        .filter(|x| x.sketch_m.is_some())
        .filter(|x| x.bits_per_parameter.is_some_and(|b| b <= HEADLINE_BITS))
        .filter_map(|x| ok(x).map(|m| (x, m)))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    // the fewest bits per parameter at which sketch-ddg is within 10 %
    let fewest = rows
        .iter()
        .filter(same)
        .filter(|x| x.sketch_m.is_some())
        .filter(|x| ok(x).is_some_and(|m| m / central <= HEADLINE_RATIO))
        .filter_map(|x| x.bits_per_parameter)
        .min_by(f64::total_cmp);
    let ddg = rows
        .iter()
        .filter(same)
        .filter(|x| x.mechanism == "ddg")
        .filter_map(|x| ok(x).map(|m| (x, m)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let mut line = format!(
        "d = {} n = {} ε = {}: {} at {:.2} bits/param (b = {}, m = {}) has {:.3} × the \
         central error ({})",
        r.d,
        r.n,
        r.epsilon,
        x.mechanism,
        x.bits_per_parameter.unwrap_or(f64::NAN),
        x.bits.unwrap_or(0),
        x.sketch_m.unwrap_or(0),
        m / central,
        if m / central <= HEADLINE_RATIO {
            "within 10 %"
        } else {
            "not within 10 %"
        }
    );
    match fewest {
        Some(b) => {
            let _ = write!(line, "; within 10 % from {b:.2} bits/param");
        }
        None => line.push_str("; no sketch size within 10 %"),
    }
    if let Some((x, m)) = ddg {
        let _ = write!(
            line,
            "; ddg {:.3} × at {:.2} bits/param",
            m / central,
            x.bits_per_parameter.unwrap_or(f64::NAN)
        );
    }
    Some(line)
}

/// The scaling lines: per series, the slopes of ln error against ln n (at each fixed ε) and
/// against ln ε (at each fixed n); empty when no series has three points.
fn scaling(rows: &[&MeanRow]) -> String {
    let mut slopes = Vec::new();
    for (axis, by_n) in [("n", true), ("ε", false)] {
        for d in distinct(rows.iter().map(|r| r.d)) {
            let fixed: Vec<u64> = if by_n {
                distinct(rows.iter().map(|r| r.epsilon.to_bits()))
            } else {
                distinct(rows.iter().map(|r| r.n as u64))
            };
            for f in fixed {
                let here: Vec<&MeanRow> = rows
                    .iter()
                    .copied()
                    .filter(|r| r.d == d)
                    .filter(|r| {
                        if by_n {
                            r.epsilon.to_bits() == f
                        } else {
                            r.n as u64 == f
                        }
                    })
                    .collect();
                let at = if by_n {
                    format!("ε = {}", f64::from_bits(f))
                } else {
                    format!("n = {f}")
                };
                for (k, sl) in series_slopes(&here, rows, by_n) {
                    slopes.push(format!("{k} (d = {d}, {at}): {sl:.2} against ln {axis}"));
                }
            }
        }
    }
    if slopes.is_empty() {
        return String::new();
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n**Scaling** (least-squares slope of ln ‖μ̂ − μ̄‖² over the grid; O(c²d/(n²ε²)) \
         is −2 against both ln n and ln ε, local DP is −1 against ln n):\n"
    );
    for l in slopes {
        let _ = writeln!(s, "- {l}");
    }
    s
}

/// Each series of `here` (in order of appearance) with the slope of its ln error against ln n
/// (`by_n`) or ln ε, where there is one.
fn series_slopes(here: &[&MeanRow], rows: &[&MeanRow], by_n: bool) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for r in here {
        let k = series(r, rows, true);
        if seen.contains(&k) {
            continue;
        }
        seen.push(k.clone());
        let pts: Vec<(f64, f64)> = here
            .iter()
            .filter(|r| series(r, rows, true) == k)
            .filter_map(|r| ok(r).map(|m| (if by_n { r.n as f64 } else { r.epsilon }, m)))
            .collect();
        if let Some(sl) = log_slope(&pts) {
            out.push((k, sl));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slopes_of_power_laws() {
        let pts: Vec<(f64, f64)> = [100.0, 200.0, 400.0, 800.0]
            .iter()
            .map(|&n| (n, 3.0 / (n * n)))
            .collect();
        assert!((log_slope(&pts).unwrap() + 2.0).abs() < 1e-12);
        let pts1: Vec<(f64, f64)> = pts.iter().map(|&(n, _)| (n, 5.0 / n)).collect();
        assert!((log_slope(&pts1).unwrap() + 1.0).abs() < 1e-12);
        assert!(log_slope(&pts[..2]).is_none());
    }
}
