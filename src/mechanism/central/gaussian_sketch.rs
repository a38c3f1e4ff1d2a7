//! The shared machinery of the real-valued mechanisms: a public linear map followed by i.i.d.
//! Gaussian noise on every output coordinate (the Gaussian mechanism on the projected row). The
//! per-mechanism files decide the map, the sensitivity and the calibration. The noise is by
//! default a discrete Gaussian on a lattice `γℤ` sampled with integers
//! ([`crate::privacy::lattice`], where the privacy argument is); `--noise float` keeps the f64
//! ziggurat sampler ([`add_gaussian_noise`]).

use rand::RngExt;
use rand_chacha::ChaCha20Rng;
use rand_distr::StandardNormal;

use super::arithmetic::{Arithmetic, ArithmeticRecord};
use super::public_map::PublicMap;
use crate::error::{Error, Result};
use crate::estimate::Estimator;
use crate::mechanism::{
    GaussianCalibration, Mechanism, MechanismKind, MechanismParams, MechanismRecord, Payload,
    Sketch, SketchMut,
};
pub use crate::privacy::gaussian::{calibrate, SigmaRule};
use crate::privacy::guarantee::Guarantee;
use crate::privacy::lattice::{self, LatticeNoise, LatticeRecord, NoiseChoice, NoiseMethod};

/// A public map followed by calibrated Gaussian noise: float (f64 ziggurat) or lattice
/// ([`crate::privacy::lattice`]).
#[derive(Debug, Clone)]
pub struct GaussianSketch {
    kind: MechanismKind,
    algorithm: &'static str,
    map: PublicMap,
    calibration: GaussianCalibration,
    guarantee: Guarantee,
    lattice: Option<(LatticeRecord, LatticeNoise)>,
    arithmetic: ArithmeticRecord,
}

/// The guarantee a calibrated Gaussian release actually carries: (ε, max(δ, δ_exact)). For the
/// analytic σ this is the requested δ; for the classical σ at ε ≥ 1 (outside Theorem 3.1) it can be
/// larger, and dprp says so rather than claim a δ the noise does not achieve.
pub fn gaussian_guarantee(
    params: &crate::mechanism::MechanismParams,
    cal: &GaussianCalibration,
) -> Guarantee {
    let delta = params.delta.unwrap_or(0.0).max(cal.delta_exact);
    Guarantee {
        kind: crate::privacy::guarantee::GuaranteeKind::ApproxDp,
        epsilon: params.epsilon,
        delta: Some(delta),
        beta: params.beta,
        neighbour: params.neighbour,
        local: None,
    }
}

impl GaussianSketch {
    /// Assemble a Gaussian mechanism from its public map (used by the per-mechanism
    /// constructors): plans the map's arithmetic ([`crate::mechanism::central::arithmetic`]) and
    /// calibrates σ once, with `rule`, for the noise chosen — float noise for the sensitivity the
    /// computed values carry, `Δ_q + 2E`; lattice noise for the rounded sensitivity
    /// `Δ_q + 2E + γ√k` at `(ε₀, δ₀)` ([`lattice::plan`]).
    pub fn build(
        kind: MechanismKind,
        algorithm: &'static str,
        map: PublicMap,
        params: &MechanismParams,
        (rule, noise): (SigmaRule, NoiseChoice),
    ) -> Result<GaussianSketch> {
        let arithmetic = ArithmeticRecord::plan(&map, params.beta, params.neighbour);
        let delta = params.delta.unwrap_or(0.0);
        let (calibration, lattice) = match noise {
            NoiseChoice::Float => {
                let sens = arithmetic.charged_sensitivity();
                (calibrate(sens, params.epsilon, delta, rule)?, None)
            }
            NoiseChoice::Lattice => {
                let (rec, cal) = lattice::plan(
                    arithmetic.sensitivity,
                    arithmetic.error,
                    map.k(),
                    params.epsilon,
                    delta,
                    rule,
                )?;
                lattice::check_range(Arithmetic::max_abs_output(&map), rec.g)?;
                let s_sq = rec.s_squared.ok_or_else(|| {
                    Error::param("lattice noise", "the plan of a fixed-σ mechanism lacks s²")
                })?;
                let noise = LatticeNoise::new(rec.g, s_sq)?;
                (cal, Some((rec, noise)))
            }
        };
        let guarantee = gaussian_guarantee(params, &calibration);
        Ok(GaussianSketch {
            kind,
            algorithm,
            map,
            calibration,
            guarantee,
            lattice,
            arithmetic,
        })
    }

    /// How the map is evaluated and what that costs.
    pub fn arithmetic(&self) -> &ArithmeticRecord {
        &self.arithmetic
    }

    /// The lattice record, when the noise is lattice noise.
    pub fn lattice(&self) -> Option<&LatticeRecord> {
        self.lattice.as_ref().map(|(r, _)| r)
    }

    /// σ of the added noise.
    pub fn sigma(&self) -> f64 {
        self.calibration.sigma
    }

    /// The calibration record.
    pub fn calibration(&self) -> &GaussianCalibration {
        &self.calibration
    }

    /// The public map.
    pub fn map(&self) -> &PublicMap {
        &self.map
    }

    /// Rebuild from a release record (regenerating the public map); `algorithm` is the citation
    /// of the kind's own file, whose `from_record` calls this.
    pub fn from_record(
        rec: &MechanismRecord,
        guarantee: &Guarantee,
        algorithm: &'static str,
    ) -> Result<GaussianSketch> {
        let cal = rec.gaussian.clone().ok_or_else(|| {
            Error::param(
                "release",
                "a Gaussian mechanism record without its calibration",
            )
        })?;
        let map = PublicMap::from_record(&rec.projection, rec.p, rec.k)?;
        let lattice = match rec.noise_method() {
            Some(NoiseMethod::Lattice(l)) => {
                let s_sq = l
                    .s_squared
                    .ok_or_else(|| Error::param("release", "a lattice noise record without s²"))?;
                let noise = LatticeNoise::new(l.g, s_sq)?;
                Some((l, noise))
            }
            _ => None,
        };
        // releases written before dprp 0.3.0 have no arithmetic record: their rows were
        // projected in f32; queries are now projected as a new release would project them
        let arithmetic = match &rec.arithmetic {
            Some(a) => a.clone(),
            None => ArithmeticRecord::plan(&map, guarantee.beta, guarantee.neighbour),
        };
        Ok(GaussianSketch {
            kind: rec.name,
            algorithm,
            map,
            calibration: cal,
            guarantee: guarantee.clone(),
            lattice,
            arithmetic,
        })
    }

    /// Add this mechanism's noise to the computed values `y` of one row, into `out`.
    fn add_noise(&self, y: &[f64], out: &mut [f32], rng: &mut ChaCha20Rng) -> Result<()> {
        match &self.lattice {
            Some((_, noise)) => noise.add(y, out, rng),
            None => {
                add_gaussian_noise(y, out, self.calibration.sigma, rng);
                Ok(())
            }
        }
    }

    /// The map's values on `rows` in the release's arithmetic (f64, `m×k`).
    pub fn evaluate(&self, rows: &[f32]) -> Result<Vec<f64>> {
        let m = rows.len() / self.map.p().max(1);
        let mut y = vec![0f64; m * self.map.k()];
        self.arithmetic
            .arithmetic
            .evaluate(&self.map, rows, &mut y)?;
        Ok(y)
    }

    /// The real output buffer of a block, checked against the rows' shape.
    fn real_out<'a>(&self, rows: &[f32], out: SketchMut<'a>) -> Result<&'a mut [f32]> {
        let SketchMut::Real(out) = out else {
            return Err(Error::param(
                "payload",
                "a real-valued mechanism needs a real buffer",
            ));
        };
        let m = rows.len() / self.map.p();
        if m * self.map.p() != rows.len() || out.len() != m * self.map.k() {
            return Err(Error::param(
                "rows",
                "block shape does not match the mechanism",
            ));
        }
        Ok(out)
    }
}

/// `out = y + σ·N(0,1)` per value (f64 sampling, rounded once into f32).
pub fn add_gaussian_noise(y: &[f64], out: &mut [f32], sigma: f64, rng: &mut ChaCha20Rng) {
    for (v, &yv) in out.iter_mut().zip(y) {
        let z: f64 = rng.sample(StandardNormal);
        *v = (yv + sigma * z) as f32;
    }
}

impl GaussianSketch {
    /// Rows evaluated together (the f64 values of one tile are held at once).
    const TILE: usize = crate::projection::dense::PROJECT_TILE_ROWS;
}

impl Mechanism for GaussianSketch {
    fn kind(&self) -> MechanismKind {
        self.kind
    }
    fn input_dim(&self) -> usize {
        self.map.p()
    }
    fn output_dim(&self) -> usize {
        self.map.k()
    }
    fn payload(&self) -> Payload {
        Payload::F32
    }
    fn guarantee(&self) -> Guarantee {
        self.guarantee.clone()
    }
    fn record(&self) -> MechanismRecord {
        MechanismRecord {
            name: self.kind,
            algorithm: self.algorithm.to_string(),
            p: self.map.p(),
            k: self.map.k(),
            projection: self.map.record(),
            gaussian: Some(self.calibration.clone()),
            sign: None,
            local: None,
            noise: Some(match &self.lattice {
                Some((r, _)) => NoiseMethod::Lattice(r.clone()),
                None => NoiseMethod::Float,
            }),
            arithmetic: Some(self.arithmetic.clone()),
        }
    }
    fn privatise(
        &self,
        rows: &[f32],
        _first_row: u64,
        out: SketchMut<'_>,
        rng: &mut ChaCha20Rng,
    ) -> Result<()> {
        let out = self.real_out(rows, out)?;
        let y = self.evaluate(rows)?;
        self.add_noise(&y, out, rng)
    }
    fn privatise_rows(
        &self,
        rows: &[f32],
        out: SketchMut<'_>,
        first_row: u64,
        noise: &crate::privacy::samplers::noise::NoiseSource,
    ) -> Result<()> {
        // One projection per tile of rows (a larger, more efficient matrix product), then each
        // row's noise from its own stream: identical to privatising row by row.
        let out = self.real_out(rows, out)?;
        let (p, k) = (self.map.p(), self.map.k());
        // one buffer for the tiles' values (every value is written by the evaluation)
        let mut buf = vec![0f64; Self::TILE.min(rows.len() / p.max(1)) * k];
        for (t, (r, o)) in rows
            .chunks(Self::TILE * p)
            .zip(out.chunks_mut(Self::TILE * k))
            .enumerate()
        {
            let y = &mut buf[..o.len()];
            self.arithmetic.arithmetic.evaluate(&self.map, r, y)?;
            for (i, (yr, or)) in y.chunks(k).zip(o.chunks_mut(k)).enumerate() {
                let mut rng =
                    noise.row_rng(crate::mechanism::row_id(first_row, t * Self::TILE + i)?);
                self.add_noise(yr, or, &mut rng)?;
            }
        }
        Ok(())
    }
    fn sketch(&self) -> Option<&dyn Sketch> {
        Some(self)
    }
}

impl Sketch for GaussianSketch {
    /// The values a release's noise is added to (the release's arithmetic; a query row outside
    /// the domain in f64, [`crate::mechanism::central::arithmetic::Arithmetic::evaluate_query`]), rounded
    /// to f32.
    fn project(&self, rows: &[f32], out: &mut [f32]) -> Result<()> {
        let m = rows.len() / self.map.p().max(1);
        if m * self.map.p() != rows.len() || out.len() != m * self.map.k() {
            return Err(Error::param(
                "rows",
                "block shape does not match the mechanism",
            ));
        }
        // tiles in parallel, each projected on its own (as in sequence: a tile's arithmetic and
        // values depend on its rows alone)
        use rayon::prelude::*;
        rows.par_chunks(Self::TILE * self.map.p().max(1))
            .zip(out.par_chunks_mut(Self::TILE * self.map.k().max(1)))
            .try_for_each(|(r, o)| {
                let mut y = vec![0f64; o.len()];
                self.arithmetic
                    .arithmetic
                    .evaluate_query(&self.map, r, &mut y)?;
                o.iter_mut().zip(&y).for_each(|(o, &v)| *o = v as f32);
                Ok(())
            })
    }
    fn estimator(&self) -> Estimator {
        Estimator::Gaussian {
            family: self.map.family(),
            k: self.map.k(),
            sigma: self.calibration.sigma,
        }
    }
}
