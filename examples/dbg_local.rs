use dprp::data::sample;
use dprp::eval::grid::{mechanism, MechanismSpec, Privacy};
use dprp::privacy::samplers::noise::NoiseSource;
use dprp::projection::Seed;
use dprp::publish::{privatise_dataset_at, Sketches};
fn main() {
    let mut d = sample::generate();
    for row in d.values.chunks_mut(d.p) {
        let n: f32 = row.iter().map(|v| v * v).sum::<f32>().sqrt();
        for v in row.iter_mut() {
            *v /= n;
        }
    }
    for first in [0u64, 1900] {
        let spec = MechanismSpec::parse("projunit:rotation").unwrap();
        let pr = Privacy {
            delta: 1e-6,
            beta: 1.0,
            min_norm: None,
        };
        let m = mechanism(&spec, 400.0, 64, d.p, &pr, Seed([1; 32])).unwrap();
        let noise = NoiseSource::from_seed("ab");
        let Sketches::Real(msgs) = privatise_dataset_at(m.as_ref(), &d, &noise, first).unwrap()
        else {
            panic!()
        };
        let dec = m.local().unwrap();
        let len = dec.message_len();
        let mut cs = vec![0.0; 8];
        for i in 0..d.n {
            let v = dec
                .decode_row(first + i as u64, &msgs[i * len..(i + 1) * len])
                .unwrap();
            let x = d.row(i);
            let dot: f64 = v.iter().zip(x).map(|(a, b)| a * *b as f64).sum();
            let nv: f64 = v.iter().map(|a| a * a).sum::<f64>().sqrt();
            cs[i * 8 / d.n] += dot / nv / (d.n / 8) as f64;
        }
        println!("first {first}: {:.3?}", cs);
    }
}
