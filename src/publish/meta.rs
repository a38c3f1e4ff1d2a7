//! The metadata a release is finished with: the guarantee and its statement (marked NOT PRIVATE
//! under a user's noise seed), the mechanism's record (with the iDP noise-set summary), the noise
//! source, the scaling and the input — and the warnings a careful user should see about them.

use super::{noise_generator_for, PublishOptions, Warnings};
use crate::data::Scaling;
use crate::mechanism::Mechanism;
use crate::privacy::gaussian::SigmaRule;
use crate::privacy::guarantee::GuaranteeKind;
use crate::privacy::samplers::noise::NoiseSource;
use crate::release::{now_rfc3339, DatasetRecord, NoiseRecord, ReleaseMeta, VERSION};

/// What the run learned about its input.
pub(super) struct InputFacts {
    /// Input dimension.
    pub p: usize,
    /// The public scaling of the rows.
    pub scaling: Scaling,
    /// Whether rows carry labels.
    pub labels: bool,
    /// Whether rows carry explicit ids.
    pub ids: bool,
    /// The ledger's fingerprint of the dataset.
    pub dataset: Option<DatasetRecord>,
    /// The input's format.
    pub format: String,
}

/// The release's metadata (its row count is set when the writer finishes). `histogram` counts
/// rows by how many of their outputs were perturbed (the iDP noise sets).
pub(super) fn release_meta(
    mech: &dyn Mechanism,
    noise: &NoiseSource,
    opts: &PublishOptions,
    input: InputFacts,
    histogram: &[u64],
    warnings: &mut Warnings,
) -> ReleaseMeta {
    let guarantee = mech.guarantee();
    let private = !noise.is_seeded();
    let mut statement = guarantee.sentence();
    if !private {
        statement = format!(
            "NOT PRIVATE: the noise was drawn from a user-supplied ‹noise_seed› and can be \
             reproduced by anyone who knows it. Had it come from the OS, the guarantee would be: {statement}"
        );
    }
    let statement = crate::error::in_files(&statement);
    if let (GuaranteeKind::ApproxDp, Some(cal)) = (guarantee.kind, mech.record().gaussian.as_ref())
    {
        if cal.rule() == SigmaRule::Classical && !cal.classical_proven {
            warnings.push(format!(
                "the classical Gaussian σ (Theorem 3.1) is proven only for ε < 1; at ε = {} it \
                 achieves δ = {:e} (exact, Balle & Wang), which is what the release states; prefer \
                 dp-rp-g-opt (analytic σ = {:.4} vs classical {:.4})",
                guarantee.epsilon,
                guarantee.delta.unwrap_or(0.0),
                cal.sigma_analytic,
                cal.sigma_classical
            ));
        }
    }
    let mut record = mech.record();
    if let Some(sign) = record.sign.as_mut() {
        use crate::mechanism::central::sign_sketch::{FlipRule, SetSummary};
        match sign.rule {
            FlipRule::RandomisedResponse {
                flip_probability, ..
            } if flip_probability >= 0.499 => warnings.push(format!(
                "every sign is flipped with probability {flip_probability:.4} ≥ 0.499: the release \
                 carries almost no signal (raise ε or lower k)"
            )),
            FlipRule::SmoothFlipping { eps_prime }
                if crate::privacy::rr::rr_flip_probability(eps_prime) >= 0.499 =>
            {
                warnings.push(format!(
                    "ε' = {eps_prime:.2e} per sign: signs one step from zero are flipped with \
                     probability ≥ 0.499, so only rows far from every hyperplane keep signal"
                ))
            }
            _ => {}
        }
        if record.name.is_idp() {
            sign.noise_set = SetSummary::from_histogram(histogram);
        }
    }
    ReleaseMeta {
        format_version: VERSION,
        tool: format!("dprp {}", env!("CARGO_PKG_VERSION")),
        created: now_rfc3339(),
        n: 0,
        p: input.p,
        k: mech.output_dim(),
        payload: mech.payload(),
        noise: NoiseRecord {
            source: if private {
                "os-csprng".into()
            } else {
                "user-seed (NOT PRIVATE)".into()
            },
            generator: noise_generator_for(record.name, opts.noise),
        },
        mechanism: record,
        guarantee,
        private,
        statement,
        scaling: input.scaling,
        labels: input.labels,
        ids: input.ids,
        dataset: input.dataset,
        shard: opts.part.map(|p| p.shard),
        input_format: Some(input.format),
    }
}
