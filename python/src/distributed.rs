//! Distributed DP from Python (issue 28): `dprp.DistributedEncoder` (a client's encoder into
//! integers mod `2^b` and the server's decoder of their secure sum) and `dprp.RoundsAccountant`
//! (composition over training rounds against a budget given up front). The secure sum itself is
//! computed elsewhere — by Flower's SecAgg+ in `dprp.flower`, or by `dprp aggregate` in one
//! process; a single encoded message is not private on its own and must only ever enter a sum.

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use dprp::request::encoder::{
    self, Encoder, EncoderOptions, Family, PlanDetail, RoundCost, RoundsAccountant as Accountant,
    Spent,
};

use crate::ints::{self, Int};
use crate::{err, param};

/// A planned distributed encoder: every client and the server build it from the same public
/// parameters (mechanism, dimension, clients, ε, δ, clip, bits, seed) and get the same plan.
#[pyclass(module = "dprp")]
pub struct DistributedEncoder {
    inner: Encoder,
}

#[pymethods]
impl DistributedEncoder {
    /// Plan `mechanism` (`ddg`, `sketch-ddg` or `binomial`) for sums of `clients` clients'
    /// vectors of `dim` values, each clipped to ℓ₂ norm `clip`, sent as residues mod `2^bits`,
    /// the sum `(epsilon, delta)`-DP (the plan's statement says under which neighbours and
    /// theorem). `clients` is the number of noise shares the plan counts on: a round whose sum
    /// holds fewer has a larger ε ([`Encoder::guarantee_at`]); `max_clients` (default `clients`)
    /// is the most messages a sum may hold, for which the modulus is sized. `seed` is the public
    /// seed of the rotation and sketch; `bits_per_parameter` caps sketch-DDG's message.
    #[new]
    #[pyo3(signature = (mechanism, *, dim, clients, epsilon, delta, clip, seed, bits=16,
        bits_per_parameter=None, max_wrap=1e-6, max_clients=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        mechanism: &str,
        dim: Int,
        clients: Int,
        epsilon: f64,
        delta: f64,
        clip: f64,
        seed: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = ints::int)] bits: i128,
        bits_per_parameter: Option<f64>,
        max_wrap: f64,
        max_clients: Option<Int>,
    ) -> PyResult<Self> {
        let options = EncoderOptions {
            mechanism: mechanism.to_string(),
            dim: dim.get("dim")?,
            clients: clients.get("clients")?,
            epsilon,
            delta,
            clip,
            seed: crate::public_seed(seed)?,
            bits: ints::unsigned(bits, "bits")?,
            bits_per_parameter,
            max_wrap,
            max_clients: max_clients.map(|m| m.get("max_clients")).transpose()?,
        };
        let inner = Encoder::plan(&options).map_err(err)?;
        Ok(DistributedEncoder { inner })
    }

    /// The input dimension.
    #[getter]
    fn dim(&self) -> usize {
        self.inner.dim()
    }

    /// Residues per message.
    #[getter]
    fn message_len(&self) -> usize {
        self.inner.message_len()
    }

    /// `b`: the sum is taken mod `2^b`.
    #[getter]
    fn bits(&self) -> u32 {
        self.inner.bits()
    }

    /// Bits each client sends per input value.
    #[getter]
    fn bits_per_parameter(&self) -> f64 {
        self.inner.bits_per_parameter()
    }

    /// The plan: ε achieved for `clients` noise shares, the mechanism's parameters, the expected
    /// squared error of the mean term by term, the wrap bound and the guarantee's statement.
    fn plan<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = self.inner.plan_report();
        let d = PyDict::new(py);
        d.set_item("mechanism", p.mechanism)?;
        d.set_item("clients", p.clients)?;
        d.set_item("epsilon", p.epsilon)?;
        d.set_item("delta", p.delta)?;
        d.set_item("bits", p.bits)?;
        d.set_item("bits_per_parameter", p.bits_per_parameter)?;
        d.set_item("message_len", p.message_len)?;
        d.set_item("wrap_probability", p.wrap_probability)?;
        d.set_item("mse", p.mse)?;
        d.set_item("statement", p.statement)?;
        match &p.detail {
            PlanDetail::Ddg(q) => {
                d.set_item("sigma", q.sigma)?;
                d.set_item("gamma", q.gamma)?;
                d.set_item("beta", q.beta)?;
            }
            PlanDetail::SketchDdg(q) => {
                d.set_item("sigma", q.ddg.sigma)?;
                d.set_item("gamma", q.ddg.gamma)?;
                d.set_item("beta", q.ddg.beta)?;
                d.set_item("sketch_m", q.m)?;
            }
            PlanDetail::Binomial(q) => {
                d.set_item("k", q.k)?;
                d.set_item("m", q.m)?;
            }
        }
        Ok(d)
    }

    /// Encode one client's vector (`dim` finite values) into `message_len` residues mod `2^b`
    /// (uint64), clipped to the plan's norm, with a noise share drawn from a fresh OS-seeded
    /// CSPRNG. The message is not private alone: send it only into a secure sum.
    fn encode<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let x = crate::arrays::vector(x, "x", "encode takes one client's vector (1-D array)")?;
        let out = self.inner.encode(&x).map_err(err)?;
        Ok(PyArray1::from_vec(py, out))
    }

    /// The mean of the clients' vectors from the secure sum of their messages: `residues` (a
    /// 1-D integer array of `message_len` values, each in `[0, 2^b)`) and the number of clients
    /// whose messages the sum holds.
    fn decode<'py>(
        &self,
        py: Python<'py>,
        residues: &Bound<'py, PyAny>,
        clients: Int,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let r = residues_of(residues)?;
        let mean = self.inner.decode(r, clients.get("clients")?).map_err(err)?;
        Ok(PyArray1::from_vec(py, mean))
    }

    /// The guarantee of a round whose sum holds `survivors` clients' messages (fewer noise
    /// shares than planned: a larger ε), with the round's cost for a `RoundsAccountant`.
    fn guarantee_at<'py>(&self, py: Python<'py>, survivors: Int) -> PyResult<Bound<'py, PyDict>> {
        let n: u64 = survivors.get("survivors")?;
        let g = self.inner.guarantee_at(n).map_err(err)?;
        let d = PyDict::new(py);
        d.set_item("epsilon", g.epsilon)?;
        d.set_item("delta", g.delta)?;
        d.set_item("clients", g.clients)?;
        d.set_item("statement", g.statement)?;
        if let Some(rho) = g.rho {
            d.set_item("rho", rho)?;
        }
        d.set_item("cost", cost_dict(py, &g.cost)?)?;
        Ok(d)
    }

    /// The bound on the probability that the modular sum of `clients` messages wraps.
    fn wrap_probability_at(&self, clients: Int) -> PyResult<f64> {
        self.inner
            .wrap_probability_at(clients.get("clients")?)
            .map_err(err)
    }

    /// `zcdp` (DDG family) or `approx` (Binomial): how its rounds compose.
    #[getter]
    fn family(&self) -> &'static str {
        encoder::family_name(self.inner.family())
    }
}

/// A 1-D integer array as residues (uint64, or int64 without negative values).
fn residues_of(a: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    if let Ok(r) = a.extract::<PyReadonlyArray1<u64>>() {
        return Ok(r.as_array().to_vec());
    }
    let r = a.extract::<PyReadonlyArray1<i64>>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(
            "residues: expected a 1-D numpy array of uint64 or int64",
        )
    })?;
    r.as_array()
        .iter()
        .enumerate()
        .map(|(j, &v)| {
            u64::try_from(v).map_err(|_| {
                param(
                    "residues",
                    format!("value {v} at {j} (counted from 0) is negative"),
                )
            })
        })
        .collect()
}

/// Composition over training rounds against a budget given before round 1
/// ([`dprp::request::encoder`]): `family` is `zcdp` (DDG family: ρ's add), `approx` (Binomial:
/// basic composition) or `local` (pure ε-LDP: basic composition, δ = 0).
#[pyclass(module = "dprp")]
pub struct RoundsAccountant {
    inner: Accountant,
}

fn family_of(name: &str) -> PyResult<Family> {
    encoder::family(name).map_err(err)
}

/// A round's cost as a dict (what [`cost_of`] reads).
fn cost_dict<'py>(py: Python<'py>, cost: &RoundCost) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match *cost {
        RoundCost::Zcdp { rho } => d.set_item("rho", rho)?,
        RoundCost::Approx { epsilon, delta } => {
            d.set_item("epsilon", epsilon)?;
            d.set_item("delta", delta)?;
        }
        RoundCost::PureLocal { epsilon } => d.set_item("epsilon", epsilon)?,
    }
    Ok(d)
}

/// A round's cost from a dict: `{"rho": ρ}`, `{"epsilon": ε, "delta": δ}` or `{"epsilon": ε}`.
fn cost_of(family: Family, cost: &Bound<'_, PyDict>) -> PyResult<RoundCost> {
    let get = |k: &str| -> PyResult<f64> {
        cost.get_item(k)?
            .ok_or_else(|| param("cost", format!("a {family:?} round's cost needs '{k}'")))?
            .extract::<f64>()
    };
    Ok(match family {
        Family::Zcdp => RoundCost::Zcdp { rho: get("rho")? },
        Family::Approx => RoundCost::Approx {
            epsilon: get("epsilon")?,
            delta: get("delta")?,
        },
        Family::PureLocal => RoundCost::PureLocal {
            epsilon: get("epsilon")?,
        },
    })
}

fn spent_dict<'py>(py: Python<'py>, s: &Spent) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("epsilon", s.epsilon)?;
    d.set_item("delta", s.delta)?;
    d.set_item("rounds", s.rounds)?;
    if let Some(rho) = s.rho {
        d.set_item("rho", rho)?;
    }
    Ok(d)
}

#[pymethods]
impl RoundsAccountant {
    /// A run of `family` with the budget `(epsilon, delta)`.
    #[new]
    #[pyo3(signature = (family, *, epsilon, delta))]
    fn new(family: &str, epsilon: f64, delta: f64) -> PyResult<Self> {
        Ok(RoundsAccountant {
            inner: Accountant::new(family_of(family)?, epsilon, delta).map_err(err)?,
        })
    }

    /// Each round's share of the budget split evenly over `rounds`: `{"epsilon", "delta"}` to
    /// plan a round for (and `"rho"` for the zCDP family).
    fn per_round<'py>(&self, py: Python<'py>, rounds: Int) -> PyResult<Bound<'py, PyDict>> {
        let t = self.inner.per_round(rounds.get("rounds")?).map_err(err)?;
        let d = PyDict::new(py);
        d.set_item("epsilon", t.epsilon)?;
        d.set_item("delta", t.delta)?;
        if let Some(rho) = t.rho {
            d.set_item("rho", rho)?;
        }
        Ok(d)
    }

    /// The total if a round of `cost` ran next; a `DprpError` when it would pass the budget.
    fn check<'py>(
        &self,
        py: Python<'py>,
        cost: &Bound<'py, PyDict>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let c = cost_of(self.inner.family(), cost)?;
        spent_dict(py, &self.inner.check(c).map_err(err)?)
    }

    /// Record a round that ran (refused, and nothing recorded, past the budget); the new total.
    fn charge<'py>(
        &mut self,
        py: Python<'py>,
        cost: &Bound<'py, PyDict>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let c = cost_of(self.inner.family(), cost)?;
        spent_dict(py, &self.inner.charge(c).map_err(err)?)
    }

    /// The total of the rounds recorded.
    fn total<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        spent_dict(py, &self.inner.total(None).map_err(err)?)
    }

    /// The budget `(epsilon, delta)`.
    #[getter]
    fn budget(&self) -> (f64, f64) {
        self.inner.budget()
    }
}
