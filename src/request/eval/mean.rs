//! `dprp eval mean` from options as a user gives them: the data (synthetic, a file of unit-ball
//! rows, or a preset's MNIST gradients and rows), the experiments (a preset mirroring a paper, or
//! one grid from the options) with their refusals, in the order the command checks them; then
//! the experiments run ([`crate::eval::mean`]) and the report's metadata recorded.

use crate::error::field;
use std::path::Path;

use super::{data_dir, master_seed, DATA_HINT};
use crate::data::scale::{check_input_domain, ScaleOptions};
use crate::data::{Format, InputOptions};
use crate::error::{Error, Result};
use crate::eval::gradients;
use crate::eval::grid::{parse_f64_list, parse_usize_list, Seeds};
use crate::eval::mean::{self, Data, Experiment, MeanConfig, MeanReport, MeanSpec, Plan};
use crate::mechanism::distributed::accountant::params::MAX_BITS;
use crate::mechanism::distributed::DistributedKind;
use crate::mechanism::MechanismKind;
use crate::privacy::guarantee::InputDomain;
use crate::publish::load_scaled;

/// Budget per setting of the presets, estimated seconds (see `MeanSpec::seconds_per_user`):
/// keeps each preset within about ten minutes on two shared cores.
pub const PRESET_BUDGET: f64 = 15.0;

/// Clients and images per client of the distributed preset's gradients (all 60000 images).
pub const GRADIENT_CLIENTS: (usize, usize) = (6000, 10);

/// The mechanisms of an experiment without a preset, unless given.
const DEFAULT_MECHANISMS: &str = "privunit2,privunitg,projunit:srht,central-gaussian";

/// `eval mean`'s options as given; `None` where the user gave nothing.
#[derive(Debug, Clone, Default)]
pub struct MeanOptions {
    /// `projunit`, `privunit` or `distributed`.
    pub preset: Option<String>,
    /// Numbers of users n, comma-separated.
    pub users: Option<String>,
    /// Synthetic data: dimension d (default 1000).
    pub dim: Option<usize>,
    /// Seed of the synthetic data (default 1).
    pub data_seed: Option<u64>,
    /// The users' vectors from a file instead.
    pub input: Option<std::path::PathBuf>,
    /// Input format when the file name does not tell.
    pub format: Option<String>,
    /// Mechanisms, comma-separated.
    pub mechanisms: Option<String>,
    /// ε values, comma-separated (default 1,4,10).
    pub epsilons: Option<String>,
    /// ProjUnit's k values, comma-separated (default min(100, d)).
    pub ks: Option<String>,
    /// Distributed mechanisms: bits per coordinate, comma-separated (default 16).
    pub bits: Option<String>,
    /// sketch-ddg: caps on the bits per parameter, comma-separated.
    pub bits_per_parameter: Option<String>,
    /// Repeats per setting (default 5; the presets' own).
    pub repeat: Option<usize>,
    /// δ of the central references and the distributed mechanisms (default 1e-6).
    pub delta: Option<f64>,
    /// Skip settings estimated to take longer, seconds (default: none; presets
    /// [`PRESET_BUDGET`]).
    pub budget: Option<f64>,
    /// Master seed, hexadecimal (default: fresh from the operating system).
    pub seed: Option<String>,
    /// Scaling of `input`.
    pub scale: ScaleOptions,
}

/// Experiments whose options are checked and data read, ready to run.
#[derive(Debug)]
pub struct MeanRequest {
    cfg: MeanConfig,
    preset: Option<String>,
}

impl MeanOptions {
    /// Check the options, read the data and lay out the experiments; `on_note` hears about slow
    /// preparation (the distributed preset trains a model first).
    pub fn resolve(&self, on_note: &dyn Fn(&str)) -> Result<MeanRequest> {
        let f = |name: &str| field(name);
        if self.repeat == Some(0) {
            return Err(Error::param(f("repeat"), "must be at least 1"));
        }
        if let Some(b) = self.budget {
            if !(b.is_finite() && b > 0.0) {
                return Err(Error::param(f("budget"), format!("{b} must be positive")));
            }
        }
        let delta = self.delta.unwrap_or(1e-6);
        if !(delta > 0.0 && delta < 1.0) {
            return Err(Error::param(
                f("delta"),
                format!("{delta} is not in (0, 1)"),
            ));
        }
        if self.input.is_some() && (self.dim.is_some() || self.data_seed.is_some()) {
            let msg = format!(
                "give either {} or synthetic data ({}, {}), not both",
                f("input"),
                f("dim"),
                f("data_seed")
            );
            return Err(Error::param(f("input"), msg));
        }
        let master = master_seed(self.seed.as_deref())?;
        let data = match &self.input {
            Some(p) => self.load_input(p)?,
            None => Data::Synthetic {
                seed: self.data_seed.unwrap_or(1),
            },
        };
        let experiments = match self.preset.as_deref() {
            Some(p) => {
                self.refuse_grid_with_preset()?;
                self.preset_experiments(p, on_note)?
            }
            None => vec![self.custom(&data)?],
        };
        let cfg = MeanConfig {
            experiments,
            delta,
            seeds: Seeds::new(master),
            data,
        };
        Ok(MeanRequest {
            cfg,
            preset: self.preset.clone(),
        })
    }

    /// A preset fixes its data and grid: the options that set them are refused with it.
    fn refuse_grid_with_preset(&self) -> Result<()> {
        let given = [
            self.input.is_some(),
            self.users.is_some(),
            self.dim.is_some(),
            self.mechanisms.is_some(),
            self.epsilons.is_some(),
            self.ks.is_some(),
            self.bits.is_some(),
            self.bits_per_parameter.is_some(),
        ];
        if !given.contains(&true) {
            return Ok(());
        }
        let names = [
            "input",
            "users",
            "dim",
            "mechanisms",
            "epsilons",
            "ks",
            "bits",
        ]
        .map(field)
        .join(", ");
        Err(Error::param(
            field("preset"),
            format!(
                "a preset fixes its data and grid: {names} and {} cannot be combined with it",
                field("bits_per_parameter")
            ),
        ))
    }

    /// Load `input`: scaled as asked, every row in the unit ball (else an error naming the row).
    fn load_input(&self, path: &Path) -> Result<Data> {
        let format = self.format.as_deref().map(Format::parse).transpose()?;
        let opts = InputOptions {
            format,
            ..Default::default()
        };
        let d = load_scaled(path, &opts, &self.scale.request()?)?;
        let refuse = |msg: String| Err(Error::param(field("input"), msg));
        if d.n == 0 {
            return refuse(format!("{} has no rows", path.display()));
        }
        if d.p < 2 {
            return refuse(format!(
                "{} has d = {} column(s); the mechanisms need d ≥ 2",
                path.display(),
                d.p
            ));
        }
        check_input_domain(InputDomain::Ball { radius: 1.0 }, &d.values, d.p, 0, path)?;
        Ok(Data::Rows {
            source: path.display().to_string(),
            d: d.p,
            values: d.values.iter().map(|&x| x as f64).collect(),
        })
    }

    /// The numbers of users and the dimension of `data`, checked.
    fn users_and_dim(&self, data: &Data) -> Result<(Vec<usize>, usize)> {
        let users = self
            .users
            .as_deref()
            .map(|u| parse_usize_list(&field("users"), u))
            .transpose()?;
        match data {
            Data::Rows { d, values, .. } => {
                let rows = values.len() / d;
                let ns = users.unwrap_or_default();
                if let Some(&n) = ns.iter().find(|&&n| n > rows) {
                    return Err(Error::param(
                        field("users"),
                        format!("n = {n} users, but the input has only {rows} rows"),
                    ));
                }
                Ok((ns, *d))
            }
            Data::Synthetic { .. } => {
                let d = self.dim.unwrap_or(1000);
                if d < 2 {
                    return Err(Error::param(
                        field("dim"),
                        format!(
                            "d = {d}: the mechanisms need d ≥ 2 (a unit vector in one dimension \
                             is ±1, a sign)"
                        ),
                    ));
                }
                Ok((users.unwrap_or_else(|| vec![50]), d))
            }
        }
    }

    /// ProjUnit's k values (each at most `d` when a ProjUnit mechanism is listed).
    fn ks(&self, d: usize, mechanisms: &[MeanSpec]) -> Result<Vec<usize>> {
        let ks = match &self.ks {
            Some(s) => parse_usize_list(&field("ks"), s)?,
            None => vec![d.min(100)],
        };
        if let Some(&k) = ks.iter().find(|&&k| k > d) {
            if mechanisms.iter().any(MeanSpec::takes_k) {
                return Err(Error::param(
                    field("ks"),
                    format!("k = {k} exceeds the dimension d = {d} (ProjUnit needs 1 ≤ k ≤ d)"),
                ));
            }
        }
        Ok(ks)
    }

    /// The distributed mechanisms' bits per coordinate and sketch-ddg's caps, refused where no
    /// listed mechanism takes them.
    fn bits(&self, mechanisms: &[MeanSpec]) -> Result<(Vec<u32>, Vec<f64>)> {
        let bits = match &self.bits {
            Some(s) => {
                let b = parse_usize_list(&field("bits"), s)?;
                if let Some(&x) = b.iter().find(|&&x| !(2..=MAX_BITS as usize).contains(&x)) {
                    return Err(Error::param(
                        field("bits"),
                        format!("b = {x}: bits per coordinate must be between 2 and {MAX_BITS}"),
                    ));
                }
                b.into_iter().map(|x| x as u32).collect()
            }
            None => vec![16],
        };
        let bpp = field("bits_per_parameter");
        let caps = match &self.bits_per_parameter {
            Some(s) => parse_f64_list(&bpp, s)?,
            None => vec![],
        };
        let given = self.bits.is_some() || self.bits_per_parameter.is_some();
        if given && !mechanisms.iter().any(MeanSpec::takes_bits) {
            let bits = field("bits");
            let msg = format!(
                "{bits} and {bpp} apply to the distributed mechanisms (binomial, ddg, \
                 sketch-ddg), and none is listed"
            );
            return Err(Error::param(bits, msg));
        }
        let sketch = |m: &MeanSpec| m.distributed == Some(DistributedKind::SketchDdg);
        if !caps.is_empty() && !mechanisms.iter().any(sketch) {
            return Err(Error::param(
                bpp,
                "applies to sketch-ddg only (ddg and binomial send b bits per rotated coordinate)",
            ));
        }
        Ok((bits, caps))
    }

    /// The one experiment the options describe (no preset).
    fn custom(&self, data: &Data) -> Result<Experiment> {
        let (ns, d) = self.users_and_dim(data)?;
        let mechanisms =
            MeanSpec::parse_list(self.mechanisms.as_deref().unwrap_or(DEFAULT_MECHANISMS))?;
        let epsilons = parse_f64_list(
            &field("epsilons"),
            self.epsilons.as_deref().unwrap_or("1,4,10"),
        )?;
        let ks = self.ks(d, &mechanisms)?;
        let (bits, bpp_caps) = self.bits(&mechanisms)?;
        let title = match (data, ns.as_slice()) {
            (Data::Rows { values, .. }, []) => {
                format!("Mean estimation: d = {d}, n = {}", values.len() / d)
            }
            (_, [n]) => format!("Mean estimation: d = {d}, n = {n}"),
            _ => format!("Mean estimation: d = {d}"),
        };
        let plan = if ns.len() > 1 {
            Plan::ErrorVsN
        } else {
            Plan::Grid
        };
        Ok(Experiment {
            name: "mean".into(),
            title,
            plan,
            dims: vec![d],
            ns,
            mechanisms,
            epsilons,
            ks,
            bits,
            bpp_caps,
            cap_k_at_d: false,
            repeat: self.repeat.unwrap_or(5),
            data: None,
            budget: self.budget,
        })
    }

    /// The experiments of the preset `name`.
    fn preset_experiments(&self, name: &str, on_note: &dyn Fn(&str)) -> Result<Vec<Experiment>> {
        let budget = Some(self.budget.unwrap_or(PRESET_BUDGET));
        match name {
            "projunit" => projunit_preset(self.repeat.unwrap_or(3), budget),
            "privunit" => privunit_preset(self.repeat.unwrap_or(5), budget),
            "distributed" => distributed_preset(self.repeat.unwrap_or(5), budget, on_note),
            o => Err(Error::param(
                field("preset"),
                format!(
                    "unknown preset '{o}' for eval mean (expected projunit, privunit or \
                     distributed)"
                ),
            )),
        }
    }
}

impl MeanRequest {
    /// One line on what is about to run.
    pub fn summary(&self) -> String {
        format!(
            "eval mean: {} experiment(s), {} settings",
            self.cfg.experiments.len(),
            mean::total_settings(&self.cfg)
        )
    }

    /// Run every experiment (`tick(done, total)` after each setting); the report records the
    /// preset.
    pub fn run(&self, tick: &(dyn Fn(usize, usize) + Sync)) -> Result<MeanReport> {
        let mut rep = mean::run(&self.cfg, tick)?;
        if let Some(m) = rep.meta.as_object_mut() {
            m.insert("preset".into(), serde_json::json!(self.preset));
        }
        Ok(rep)
    }
}

/// An experiment of a preset on synthetic data, its grid left empty for the caller to fill.
fn preset_experiment(name: &str, title: &str, plan: Plan, repeat: usize) -> Experiment {
    Experiment {
        name: name.into(),
        title: title.into(),
        plan,
        dims: vec![],
        ns: vec![],
        bits: vec![],
        bpp_caps: vec![],
        mechanisms: vec![],
        epsilons: vec![],
        ks: vec![],
        cap_k_at_d: false,
        repeat,
        data: None,
        budget: None,
    }
}

/// The ProjUnit family of the projunit preset (the correlated FastProjUnit joins it when the
/// mechanism is available).
fn projunit_family() -> String {
    let mut m = "privunitg,projunit:rotation,projunit:gaussian,projunit:srht".to_string();
    if MechanismKind::parse("projunit-correlated").is_ok() {
        m.push_str(",projunit-correlated");
    }
    m
}

/// The projunit preset (Asi et al. 2023 §4.1): error vs k at d = 2^13 and 2^15, error vs ε,
/// runtime vs d.
fn projunit_preset(repeat: usize, budget: Option<f64>) -> Result<Vec<Experiment>> {
    let fam = projunit_family();
    let with_ref = MeanSpec::parse_list(&format!("{fam},{}", mean::CENTRAL))?;
    let vs_k = Experiment {
        dims: vec![1 << 13, 1 << 15],
        ns: vec![50],
        mechanisms: with_ref.clone(),
        epsilons: vec![4.0, 10.0, 16.0],
        ks: vec![10, 50, 100, 500, 1000, 2000],
        budget,
        ..preset_experiment(
            "error-vs-k",
            "Error vs k (Asi et al. 2023, Figure 1): n = 50",
            Plan::ErrorVsK,
            repeat,
        )
    };
    let vs_eps = Experiment {
        dims: vec![1 << 13],
        ns: vec![50],
        mechanisms: with_ref,
        epsilons: (1..=15).map(f64::from).collect(),
        ks: vec![1000],
        budget,
        ..preset_experiment(
            "error-vs-eps",
            "Error vs ε (Asi et al. 2023, Figure 2): d = 8192, n = 50, k = 1000",
            Plan::ErrorVsEps,
            repeat,
        )
    };
    let dims = [4, 7, 10, 13, 16, 19, 22].map(|e| 1usize << e);
    let vs_d = Experiment {
        dims: dims.into_iter().chain([10_000_000]).collect(),
        ns: vec![1],
        mechanisms: MeanSpec::parse_list(&fam)?,
        epsilons: vec![10.0],
        ks: vec![1000],
        cap_k_at_d: true,
        budget,
        ..preset_experiment(
            "runtime-vs-d",
            "Runtime vs d (Asi et al. 2023, Figure 3): ε = 10, k = min(1000, d), n = 1",
            Plan::RuntimeVsD,
            repeat,
        )
    };
    Ok(vec![vs_k, vs_eps, vs_d])
}

/// The privunit preset (Bhowmick et al. 2018): PrivUnit2, Duchi, PrivUnitG over ε at d = 1000
/// and 10^5.
fn privunit_preset(repeat: usize, budget: Option<f64>) -> Result<Vec<Experiment>> {
    let mechs = format!("privunit2,duchi,privunitg,{}", mean::CENTRAL);
    Ok(vec![Experiment {
        dims: vec![1000, 100_000],
        ns: vec![100],
        mechanisms: MeanSpec::parse_list(&mechs)?,
        epsilons: vec![0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0],
        budget,
        ..preset_experiment(
            "error-vs-eps",
            "PrivUnit2 vs Duchi et al. vs PrivUnitG over ε (Bhowmick et al. 2018): n = 100",
            Plan::ErrorVsEps,
            repeat,
        )
    }])
}

/// The distributed preset's data: MNIST gradients of [`GRADIENT_CLIENTS`] and MNIST rows.
fn distributed_data(on_note: &dyn Fn(&str)) -> Result<(Data, Data)> {
    let dir = data_dir();
    let images = dir.join("mnist/train-images-idx3-ubyte.gz");
    let labels = dir.join("mnist/train-labels-idx1-ubyte.gz");
    for f in [&images, &labels] {
        if !f.is_file() {
            return Err(Error::param(
                field("preset"),
                format!("distributed needs {} (not found); {DATA_HINT}", f.display()),
            ));
        }
    }
    on_note("distributed preset: reading MNIST and training the logistic regression");
    let mnist = gradients::load_mnist(&images, &labels)?;
    let (w, accuracy) = gradients::train_model(&mnist);
    let (clients, per) = GRADIENT_CLIENTS;
    let (grads, median) = gradients::client_gradients(&mnist, &w, clients, per)?;
    let grad_data = Data::Rows {
        source: format!(
            "MNIST train: gradients of {clients} clients × {per} images, multinomial logistic \
             regression after one epoch of SGD (training accuracy {:.3}), scaled by the median \
             norm {median:.4} and clipped to the unit ball",
            accuracy
        ),
        d: gradients::GRADIENT_DIM,
        values: grads,
    };
    let row_data = Data::Rows {
        source: "MNIST train: the first 1000 images scaled to unit ℓ₂ norm".into(),
        d: 784,
        values: gradients::unit_rows(&mnist, 1000),
    };
    Ok((grad_data, row_data))
}

/// The distributed preset (Chen et al. 2022 on MNIST; see docs/distributed-dp.md): error against
/// the bits per parameter on MNIST gradients and rows, and the scaling in n and ε.
fn distributed_preset(
    repeat: usize,
    budget: Option<f64>,
    on_note: &dyn Fn(&str),
) -> Result<Vec<Experiment>> {
    let (grad_data, row_data) = distributed_data(on_note)?;
    let dist = MeanSpec::parse_list("binomial,ddg,sketch-ddg,central-gaussian")?;
    let vs_bits = |name: &str, title: &str, data: Data, bits: Vec<u32>| Experiment {
        ns: vec![100, 1000],
        mechanisms: dist.clone(),
        epsilons: vec![1.0, 4.0],
        bits,
        bpp_caps: vec![0.3, 0.6, 1.2, 2.4, 4.8, 9.6],
        data: Some(data),
        budget,
        ..preset_experiment(name, title, Plan::ErrorVsBits, repeat)
    };
    let scaling = Experiment {
        ns: vec![100, 200, 500, 1000],
        mechanisms: MeanSpec::parse_list("ddg,sketch-ddg,privunitg,central-gaussian")?,
        epsilons: vec![0.5, 1.0, 2.0, 4.0, 8.0],
        bits: vec![16],
        bpp_caps: vec![1.2],
        data: Some(grad_data.clone()),
        budget,
        ..preset_experiment(
            "gradients-scaling",
            "MNIST gradients: error vs n and ε (the O(c²d/(n²ε²)) scaling; PrivUnitG for local \
             DP)",
            Plan::ErrorVsN,
            repeat,
        )
    };
    Ok(vec![
        vs_bits(
            "gradients-vs-bits",
            "MNIST logistic-regression gradients (d = 7850): error vs bits per parameter \
             (Chen et al. 2022, Figure 3 / Table 1)",
            grad_data,
            vec![12, 16, 20],
        ),
        vs_bits(
            "rows-vs-bits",
            "MNIST rows (d = 784): error vs bits per parameter",
            row_data,
            vec![16],
        ),
        scaling,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Front;

    fn refusal(o: &MeanOptions, front: Front) -> String {
        o.resolve(&|_| {}).unwrap_err().render(front)
    }

    #[test]
    fn refusals_name_the_option_per_front_end() {
        let o = MeanOptions {
            repeat: Some(0),
            ..Default::default()
        };
        assert_eq!(
            refusal(&o, Front::Cli),
            "invalid --repeat: must be at least 1"
        );
        assert_eq!(
            refusal(&o, Front::Python),
            "invalid repeat: must be at least 1"
        );
        let o = MeanOptions {
            input: Some("in.csv".into()),
            data_seed: Some(3),
            ..Default::default()
        };
        assert_eq!(
            refusal(&o, Front::Cli),
            "invalid --input: give either --input or synthetic data (--dim, --data-seed), not both"
        );
        assert_eq!(
            refusal(&o, Front::Python),
            "invalid input: give either input= or synthetic data (dim=, data_seed=), not both"
        );
        let o = MeanOptions {
            preset: Some("projunit".into()),
            ks: Some("4".into()),
            seed: Some("1".into()),
            ..Default::default()
        };
        assert_eq!(
            refusal(&o, Front::Cli),
            "invalid --preset: a preset fixes its data and grid: --input, --users, --dim, \
             --mechanisms, --epsilons, --ks, --bits and --bits-per-parameter cannot be combined \
             with it"
        );
        let o = MeanOptions {
            dim: Some(8),
            mechanisms: Some("ddg".into()),
            bits_per_parameter: Some("2".into()),
            seed: Some("1".into()),
            ..Default::default()
        };
        assert_eq!(
            refusal(&o, Front::Python),
            "invalid bits_per_parameter: applies to sketch-ddg only (ddg and binomial send b \
             bits per rotated coordinate)"
        );
    }

    #[test]
    fn defaults_and_presets() {
        let o = MeanOptions {
            dim: Some(8),
            seed: Some("1".into()),
            ..Default::default()
        };
        let req = o.resolve(&|_| {}).unwrap();
        let e = &req.cfg.experiments[0];
        assert_eq!(
            (e.ns.as_slice(), e.dims.as_slice()),
            ([50].as_slice(), [8].as_slice())
        );
        assert_eq!(e.ks, [8]);
        assert_eq!(e.bits, [16]);
        assert_eq!(e.repeat, 5);
        assert_eq!(req.summary(), "eval mean: 1 experiment(s), 12 settings");
        let p = MeanOptions {
            preset: Some("projunit".into()),
            seed: Some("1".into()),
            ..Default::default()
        };
        let req = p.resolve(&|_| {}).unwrap();
        let names: Vec<&str> = req
            .cfg
            .experiments
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(names, ["error-vs-k", "error-vs-eps", "runtime-vs-d"]);
        assert!(req
            .cfg
            .experiments
            .iter()
            .all(|e| e.repeat == 3 && e.budget == Some(PRESET_BUDGET)));
    }
}
