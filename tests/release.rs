//! Release files: round trip through the streaming publisher and the memory-mapped reader,
//! integrity checks, and the README's numpy reader.

use std::path::Path;

use dprp::data::{native, read_all, Dataset, InputOptions, Scaling};
use dprp::mechanism::Payload;
use dprp::mechanism::{build, from_record, MechanismKind, MechanismParams};
use dprp::privacy::guarantee::Neighbour;
use dprp::privacy::samplers::noise::NoiseSource;
use dprp::projection::Seed;
use dprp::publish::BLOCK_ROWS;
use dprp::publish::{
    chunk_rows, pipeline_row_bytes, privatise_dataset, publish, publish_with, PublishOptions,
    PublishRequest, Sketches, CHUNK_ROWS,
};
use dprp::release::Release;

fn dataset(n: usize, p: usize) -> Dataset {
    let values = (0..n * p)
        .map(|i| (((i * 2654435761usize) % 2001) as f32 / 1000.0) - 1.0)
        .collect();
    Dataset {
        n,
        p,
        values,
        labels: Some((0..n).map(|i| (i % 3) as f32).collect()),
        scaling: Scaling::default(),
    }
}

fn params(kind: MechanismKind, k: Option<usize>) -> MechanismParams {
    let individual_dp = kind.is_idp();
    MechanismParams {
        kind,
        epsilon: 3.0,
        delta: Some(1e-6),
        beta: 1.0,
        neighbour: Neighbour::Coordinate,
        p: 0,
        k,
        projection: None,
        seed: Some(Seed::parse_hex("d1").unwrap()),
        min_norm: None,
        individual_dp,
        local: Default::default(),
    }
}

fn publish_to(input: &Path, out: &Path, kind: MechanismKind, k: Option<usize>, noise: &str) {
    let req = PublishRequest {
        input: input.to_path_buf(),
        input_opts: InputOptions::default(),
        scaling: Default::default(),
        params: params(kind, k),
        output: out.to_path_buf(),
    };
    publish(&req, &NoiseSource::from_seed(noise)).unwrap();
}

/// The streamed, chunked, multi-threaded publisher writes exactly what privatising the whole
/// dataset in memory gives (same noise key), across several chunks and a partial last block.
#[test]
fn streamed_release_equals_in_memory_privatisation() {
    let dir = tempfile::tempdir().unwrap();
    let n = 2 * CHUNK_ROWS + 77;
    let d = dataset(n, 40);
    let input = dir.path().join("d.bin");
    native::write(&input, &d).unwrap();
    for (kind, k) in [
        (MechanismKind::DpOporp, Some(8)),
        (MechanismKind::DpRpGOpt, Some(12)),
        (MechanismKind::DpRpG, Some(5)),
        (MechanismKind::RawGOpt, None),
        (MechanismKind::DpSignrpRrSmooth, Some(70)),
        (MechanismKind::DpSignoporpRr, Some(9)),
        (MechanismKind::IdpSignrpG, Some(65)),
    ] {
        let out = dir.path().join(format!("{}.dprp", kind.name()));
        publish_to(&input, &out, kind, k, "rt");
        let r = Release::open(&out).unwrap();
        assert_eq!(r.n(), n);
        let mut p = params(kind, k);
        p.p = 40;
        let m = build(&p).unwrap();
        let expect = privatise_dataset(m.as_ref(), &d, &NoiseSource::from_seed("rt")).unwrap();
        match expect {
            Sketches::Real(v) => assert_eq!(r.values().unwrap(), &v[..], "{kind:?}"),
            Sketches::Bits(v) => assert_eq!(r.bits().unwrap(), &v[..], "{kind:?}"),
        }
        assert_eq!(r.labels().unwrap(), &d.labels.as_ref().unwrap()[..]);
        assert_eq!(r.id(5), 5);
        // the recorded mechanism regenerates the same public map
        let m2 = from_record(&r.meta().mechanism, &r.meta().guarantee).unwrap();
        let mut a = vec![0f32; m.output_dim()];
        let mut b = vec![0f32; m.output_dim()];
        m.as_sketch().unwrap().project(d.row(3), &mut a).unwrap();
        m2.as_sketch().unwrap().project(d.row(3), &mut b).unwrap();
        assert_eq!(a, b);
        assert!(!r.meta().private);
    }
}

/// A small memory budget makes chunks (and parallel groups) smaller, down to one row; the release
/// is the same, byte for byte, and the pipeline's row buffers stay within the budget; a budget
/// one row does not fit is refused (issue 37: it was exceeded with a warning).
#[test]
fn memory_budget_sizes_chunks_without_changing_the_release() {
    // chunk sizes: the most rows that fit, whole blocks once a block fits, at least one row
    let k_huge = 100_000;
    let c = chunk_rows(784, k_huge, Payload::F32, 256 << 20);
    assert!(c < BLOCK_ROWS && c * pipeline_row_bytes(784, k_huge, Payload::F32) <= 256 << 20);
    assert!((c + 1) * pipeline_row_bytes(784, k_huge, Payload::F32) > 256 << 20);
    assert_eq!(chunk_rows(784, 256, Payload::F32, 256 << 20), CHUNK_ROWS);
    let c = chunk_rows(784, 4096, Payload::F32, 256 << 20);
    assert!(c.is_multiple_of(BLOCK_ROWS) && c < CHUNK_ROWS);
    assert!(c * pipeline_row_bytes(784, 4096, Payload::F32) <= 256 << 20);
    assert!((c + BLOCK_ROWS) * pipeline_row_bytes(784, 4096, Payload::F32) > 256 << 20);

    let dir = tempfile::tempdir().unwrap();
    let n = 3 * BLOCK_ROWS + 41;
    let input = dir.path().join("d.bin");
    native::write(&input, &dataset(n, 30)).unwrap();
    for (kind, k) in [
        (MechanismKind::DpRpGOpt, Some(200)),
        (MechanismKind::DpOporp, Some(16)),
        (MechanismKind::DpSignrpRrSmooth, Some(130)),
        (MechanismKind::IdpSignoporpG, Some(20)),
    ] {
        let mut bytes = Vec::new();
        // one row per chunk: the smallest budget that holds a row
        let one_row = pipeline_row_bytes(
            30,
            k.unwrap(),
            if kind.is_sign() {
                Payload::Bits
            } else {
                Payload::F32
            },
        );
        for budget in [256 << 20, one_row, one_row - 1] {
            let out = dir.path().join(format!("{}-{budget}.dprp", kind.name()));
            let req = PublishRequest {
                input: input.clone(),
                input_opts: InputOptions::default(),
                scaling: Default::default(),
                params: params(kind, k),
                output: out.clone(),
            };
            let opts = PublishOptions {
                memory_budget: budget,
                on_warning: None,
                ..Default::default()
            };
            let o = publish_with(&req, &NoiseSource::from_seed("mem"), &opts);
            if budget < one_row {
                let e = o.err().unwrap().to_string();
                assert!(e.contains("above the memory budget"), "{e}");
                assert!(!out.exists());
                continue;
            }
            let o = o.unwrap();
            assert!(
                !o.warnings.iter().any(|w| w.contains("memory")),
                "{:?}",
                o.warnings
            );
            let r = Release::open(&out).unwrap();
            bytes.push(match r.meta().payload {
                Payload::F32 => bytemuck_f32(r.values().unwrap()),
                Payload::Bits => r
                    .bits()
                    .unwrap()
                    .iter()
                    .flat_map(|w| w.to_le_bytes())
                    .collect(),
            });
        }
        let first_diff = bytes[0].iter().zip(&bytes[1]).position(|(a, b)| a != b);
        assert!(
            bytes[0].len() == bytes[1].len() && first_diff.is_none(),
            "{kind:?}: releases differ at byte {first_diff:?}"
        );
    }
}

fn bytemuck_f32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn different_noise_keys_give_different_releases_and_os_noise_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("d.bin");
    native::write(&input, &dataset(300, 10)).unwrap();
    let a = dir.path().join("a.dprp");
    let b = dir.path().join("b.dprp");
    publish_to(&input, &a, MechanismKind::DpOporp, Some(4), "one");
    publish_to(&input, &b, MechanismKind::DpOporp, Some(4), "two");
    let (ra, rb) = (Release::open(&a).unwrap(), Release::open(&b).unwrap());
    assert_ne!(ra.values().unwrap(), rb.values().unwrap());
    let c = dir.path().join("c.dprp");
    let req = PublishRequest {
        input: input.clone(),
        input_opts: InputOptions::default(),
        scaling: Default::default(),
        params: params(MechanismKind::DpOporp, Some(4)),
        output: c.clone(),
    };
    let out = publish(&req, &NoiseSource::from_os().unwrap()).unwrap();
    assert!(out.meta.private);
    assert_eq!(Release::open(&c).unwrap().meta().noise.source, "os-csprng");
}

#[test]
fn corruption_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("d.bin");
    native::write(&input, &dataset(100, 10)).unwrap();
    let good = dir.path().join("g.dprp");
    publish_to(&input, &good, MechanismKind::DpOporp, Some(4), "c");
    let bytes = std::fs::read(&good).unwrap();
    let bad = dir.path().join("bad.dprp");
    let check = |b: &[u8], what: &str| {
        std::fs::write(&bad, b).unwrap();
        let e = Release::open(&bad)
            .err()
            .expect("corruption not detected")
            .to_string();
        assert!(e.contains(what), "expected '{what}' in: {e}");
    };
    for off in [130, 128 + 100 * 16 - 1, bytes.len() - 3, 20, 60, 85] {
        let mut b = bytes.clone();
        b[off] ^= 0x10;
        let what = if (16..80).contains(&off) {
            ""
        } else {
            "checksum"
        };
        check(&b, what);
    }
    check(&bytes[..bytes.len() - 1], "truncated");
    check(&bytes[..50], "truncated");
    let mut b = bytes.clone();
    b.extend_from_slice(b"xx");
    check(&b, "");
    let mut b = bytes.clone();
    b[0] = b'Q';
    check(&b, "magic");
    let mut b = bytes.clone();
    b[8] = 9;
    check(&b, "version");
}

/// `open_with(path, false)` skips only the checksum: a damaged payload opens unverified and is
/// caught by `verify()`; a damaged header is refused all the same; a sound file verifies later.
#[test]
fn open_without_verifying_defers_only_the_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("d.bin");
    native::write(&input, &dataset(100, 10)).unwrap();
    let good = dir.path().join("g.dprp");
    publish_to(&input, &good, MechanismKind::DpOporp, Some(4), "c");
    let r = Release::open_with(&good, false).unwrap();
    assert!(!r.verified());
    r.verify().unwrap();
    assert!(r.verified());
    assert!(Release::open(&good).unwrap().verified());
    let bytes = std::fs::read(&good).unwrap();
    let bad = dir.path().join("bad.dprp");
    let mut b = bytes.clone();
    b[130] ^= 0x10; // payload
    std::fs::write(&bad, &b).unwrap();
    let r = Release::open_with(&bad, false).unwrap();
    let e = r.verify().unwrap_err().to_string();
    assert!(e.contains("checksum"), "{e}");
    assert!(!r.verified());
    let mut b = bytes.clone();
    b[20] ^= 0x10; // n, in the header
    std::fs::write(&bad, &b).unwrap();
    assert!(Release::open_with(&bad, false).is_err());
}

/// The five-line numpy reader printed in the README really reads a release.
#[test]
fn readme_numpy_reader_works() {
    // Never skipped: `test.sh` (the README's test command) provides a Python with numpy.
    let python = std::env::var("DPRP_PYTHON").unwrap_or_else(|_| "python3".into());
    let numpy = std::process::Command::new(&python)
        .args(["-c", "import numpy"])
        .output();
    match numpy {
        Ok(o) if o.status.success() => {}
        _ => panic!(
            "{python} cannot import numpy, which this test needs: run ./test.sh (it creates a \
             virtual environment with numpy and sets DPRP_PYTHON), or set DPRP_PYTHON to a Python \
             with numpy"
        ),
    }
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme
        .find("<!-- numpy-reader -->")
        .expect("README lacks the numpy reader marker");
    let block = &readme[start..];
    let code_start = block.find("```python\n").unwrap() + "```python\n".len();
    let code = &block[code_start..code_start + block[code_start..].find("```").unwrap()];
    assert!(
        code.lines().filter(|l| !l.trim().is_empty()).count() <= 5,
        "the reader is longer than five lines"
    );
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("d.bin");
    native::write(&input, &dataset(123, 20)).unwrap();
    let rel = dir.path().join("release.dprp");
    publish_to(&input, &rel, MechanismKind::DpRpGOpt, Some(7), "np");
    let r = Release::open(&rel).unwrap();
    let script = format!(
        "{code}\nprint(int(n), int(k), meta['mechanism']['name'], repr(float(x.astype('f8').sum())), repr(float(x[5,3])))\n"
    );
    let out = std::process::Command::new(&python)
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8_lossy(&out.stdout);
    let sum: f64 = r.values().unwrap().iter().map(|&v| v as f64).sum();
    let parts: Vec<&str> = s.split_whitespace().collect();
    assert_eq!(parts[0], "123");
    assert_eq!(parts[1], "7");
    assert_eq!(parts[2], "dp-rp-g-opt");
    assert!((parts[3].parse::<f64>().unwrap() - sum).abs() < 1e-6 * sum.abs().max(1.0));
    assert_eq!(parts[4].parse::<f32>().unwrap(), r.row(5).unwrap()[3]);
}

/// The committed sample is what the documented generator makes.
#[test]
fn bundled_sample_is_reproducible() {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample.bin");
    let d = read_all(&committed, &InputOptions::default()).unwrap();
    assert_eq!(d, dprp::data::sample::generate());
    let dir = tempfile::tempdir().unwrap();
    let regen = dir.path().join("s.bin");
    native::write(&regen, &d).unwrap();
    assert_eq!(
        std::fs::read(&regen).unwrap(),
        std::fs::read(&committed).unwrap()
    );
    assert!(std::fs::metadata(&committed).unwrap().len() < 2 << 20);
    assert!(d.values.iter().all(|v| (0.0..=1.0).contains(v)));
}

/// A table's stamp is checked by the library for every front end (`Stamp::check`): the release's
/// own stamp passes; another release's fingerprint, another k, another payload are each refused,
/// naming the table.
#[test]
fn a_tables_stamp_is_checked_against_the_release() {
    use dprp::export::Stamp;
    use dprp::release::ReleaseSet;
    use dprp::search::Measure;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("d.bin");
    native::write(&input, &dataset(50, 16)).unwrap();
    let (a, b) = (dir.path().join("a.dprp"), dir.path().join("b.dprp"));
    publish_to(&input, &a, MechanismKind::DpOporp, Some(8), "one");
    publish_to(&input, &b, MechanismKind::DpOporp, Some(8), "two");
    let (a, b) = (ReleaseSet::open(&a).unwrap(), ReleaseSet::open(&b).unwrap());
    let stamp = |set: &ReleaseSet| serde_json::to_value(Stamp::of(set, Measure::Cosine)).unwrap();
    // power: the release's own stamp passes
    Stamp::check(&stamp(&a), &a, "table 't'").unwrap();
    let refused = |s: serde_json::Value, needle: &str| {
        let e = Stamp::check(&s, &a, "table 't'").unwrap_err().to_string();
        assert!(e.contains("table 't'") && e.contains(needle), "{e}");
    };
    refused(stamp(&b), "another release");
    let mut k = stamp(&a);
    k["k"] = 9.into();
    refused(k, "k = 9; the release has f32 sketches with k = 8");
    let mut bits = stamp(&a);
    bits["payload"] = "bits".into();
    refused(bits, "holds bits sketches");
    refused(serde_json::json!({}), "another release");
}
