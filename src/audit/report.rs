//! Text and markdown renderings of audit reports (the command prints the text; `--all --out`
//! writes the markdown and JSON committed under `docs/audit/`).

use std::fmt::Write;

use super::{AuditReport, Miscalibration};

/// `0.812` or `—` (no finite bound).
pub fn fmt_eps(e: Option<f64>) -> String {
    e.map(|e| format!("{e:.3}")).unwrap_or_else(|| "—".into())
}

fn claim_line(r: &AuditReport) -> String {
    let mut s = format!(
        "claim: ε = {}{} ({}): {}",
        r.claim.epsilon,
        if r.claim.delta > 0.0 {
            format!(", δ = {:e}", r.claim.delta)
        } else {
            String::new()
        },
        r.claim.kind,
        r.claim.sentence
    );
    if let Some(m) = r.miscalibrate {
        let what = match m {
            Miscalibration::Sigma(f) => format!(
                "σ × {f}{}",
                r.sigma_ratio
                    .map(|q| format!(" (realised ratio {q:.6})"))
                    .unwrap_or_default()
            ),
            Miscalibration::Epsilon(f) => format!("built with ε × {f}"),
        };
        let _ = write!(s, "\nMISCALIBRATED on purpose: the sampled mechanism has {what}; the claim is the honest one");
    }
    s
}

/// The verdict in one line.
pub fn verdict(r: &AuditReport) -> String {
    match (r.flagged, r.epsilon_lower) {
        (true, Some(e)) => format!(
            "VIOLATION: ε̂_lower = {e:.3} exceeds the claimed ε = {} ({}; {} at 95%)",
            r.claim.epsilon,
            r.worst.as_deref().unwrap_or("?"),
            r.mechanism
        ),
        (_, Some(e)) => format!(
            "no violation found: ε̂_lower = {e:.3} ≤ claimed ε = {} ({})",
            r.claim.epsilon,
            r.worst.as_deref().unwrap_or("?")
        ),
        (_, None) => format!(
            "no violation found: no event gave a finite lower bound (claimed ε = {})",
            r.claim.epsilon
        ),
    }
}

/// The report as the command prints it.
pub fn text(r: &AuditReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "audit of {} (p = {}, output {}): {}",
        r.mechanism,
        r.p,
        r.k,
        claim_line(r)
    );
    let _ = writeln!(
        s,
        "{} samples per input ({} choose each event, {} estimate it); 95% overall, Bonferroni over {} bounds",
        r.trials,
        r.trials / 2,
        r.trials - r.trials / 2,
        r.bounds
    );
    for p in &r.pairs {
        let _ = writeln!(s, "\n{}: {}", p.pair.name, p.pair.description);
        let _ = writeln!(
            s,
            "  {:<11} {:<44} {:>9} {:>9}",
            "family", "event (s = statistic)", "ε̂ point", "ε̂_lower"
        );
        for f in &p.families {
            let ev = f
                .event
                .map(|e| e.describe())
                .unwrap_or_else(|| "(no event with a finite bound)".into());
            let _ = writeln!(
                s,
                "  {:<11} {:<44} {:>9} {:>9}",
                f.family,
                ev,
                fmt_eps(f.epsilon_point),
                fmt_eps(f.epsilon_lower)
            );
            let _ = writeln!(s, "  {:<11} s = {}", "", f.statistic);
        }
    }
    let _ = writeln!(
        s,
        "\nper event family (largest ε̂_lower over the pairs) vs claimed ε = {}:",
        r.claim.epsilon
    );
    for name in r.family_names() {
        let _ = writeln!(s, "  {:<11} {}", name, fmt_eps(r.family_max(&name)));
    }
    let _ = writeln!(s, "{}", verdict(r));
    s
}

/// The markdown report of an `--all` run.
pub fn markdown(reports: &[AuditReport], command: &str, machine: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# `dprp audit ‹all›`: empirical lower bounds on ε\n");
    let _ = writeln!(s, "Made with `{command}` on {machine}.\n");
    let _ = writeln!(
        s,
        "Each mechanism is audited on its worst-case neighbours (the pair its privacy argument \
         names) and random neighbours; every input is privatised with fresh ChaCha20 noise, events \
         are chosen on half the samples and bounded on the other half with Clopper–Pearson \
         intervals, Bonferroni over every bound of a mechanism (95% overall). ε̂_lower above the \
         claimed ε would show a violation; below it, the audit found none (it proves nothing \
         more). See docs/auditing.md.\n"
    );
    let _ = writeln!(
        s,
        "| mechanism | p → k | claim | ε̂_lower (max) | where | per family | verdict |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    for r in reports {
        let fams: Vec<String> = r
            .family_names()
            .iter()
            .map(|n| format!("{n} {}", fmt_eps(r.family_max(n))))
            .collect();
        let _ = writeln!(
            s,
            "| `{}` | {} → {} | ε = {}{} ({}) | {} | {} | {} | {} |",
            r.mechanism,
            r.p,
            r.k,
            r.claim.epsilon,
            if r.claim.delta > 0.0 {
                format!(", δ = {:e}", r.claim.delta)
            } else {
                String::new()
            },
            r.claim.kind,
            fmt_eps(r.epsilon_lower),
            r.worst.as_deref().unwrap_or("—"),
            fams.join(", "),
            if r.flagged {
                "**VIOLATION**"
            } else {
                "none found"
            }
        );
    }
    for r in reports {
        let _ = writeln!(s, "\n## `{}`\n", r.mechanism);
        let _ = writeln!(s, "```text\n{}```", text(r));
    }
    s
}
