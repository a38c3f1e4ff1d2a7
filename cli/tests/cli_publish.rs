//! End-to-end `publish`: every mechanism and projection, seeds, and what a release records.

use crate::cli_helpers;

#[allow(unused_imports)]
use cli_helpers::*;

// ---------------------------------------------------------------------------------------------
// 2. Mechanisms, projections, seeds
// ---------------------------------------------------------------------------------------------

#[test]
fn every_mechanism_publishes() {
    let d = tmp();
    valid_dataset(d.path());
    for (mech, k) in [
        ("raw-g-opt", None),
        ("dp-rp-g", Some("3")),
        ("dp-rp-g-opt", Some("8")),
        ("dp-oporp", Some("2")),
    ] {
        let out = format!("{mech}.dprp");
        let mut args = vec![
            "publish",
            "d.bin",
            "--mechanism",
            mech,
            "--epsilon",
            "5",
            "--delta",
            "1e-6",
            "-o",
            &out,
        ];
        if let Some(k) = k {
            args.extend(["--k", k]);
        }
        let stdout = ok(d.path(), &args);
        assert!(stdout.contains("guarantee"), "{stdout}");
        let k: usize = k.map_or(4, |k| k.parse().unwrap());
        let j = check_release(d.path(), &out, (3, 4, k), mech, false);
        check_guarantee_5(&j);
        let g = &j["mechanism"]["gaussian"];
        assert!(g["sigma"].as_f64().unwrap() > 0.0, "{j}");
        let method = g["method"].as_str().unwrap();
        if mech == "dp-rp-g" {
            assert!(method.starts_with("classical"), "{j}");
        } else {
            assert!(method.starts_with("analytic"), "{j}");
        }
        let ptype = &j["mechanism"]["projection"]["type"];
        match mech {
            "raw-g-opt" => assert_eq!(ptype, "identity", "{j}"),
            "dp-oporp" => assert_eq!(ptype, "oporp", "{j}"),
            _ => assert_eq!(ptype, "dense", "{j}"),
        }
    }
}

#[test]
fn every_projection_publishes() {
    let d = tmp();
    valid_dataset(d.path());
    for (proj, kind) in [
        ("rademacher", "rademacher"),
        ("gaussian", "gaussian"),
        ("uniform", "uniform"),
        ("sparse:3", "sparse"),
    ] {
        for mech in ["dp-rp-g", "dp-rp-g-opt"] {
            let out = format!("{mech}-{kind}.dprp");
            ok(
                d.path(),
                &[
                    "publish",
                    "d.bin",
                    "-m",
                    mech,
                    "--epsilon",
                    "5",
                    "--delta",
                    "1e-6",
                    "--k",
                    "6",
                    "--projection",
                    proj,
                    "-o",
                    &out,
                ],
            );
            let j = check_release(d.path(), &out, (3, 4, 6), mech, false);
            let entries = &j["mechanism"]["projection"]["entries"];
            assert_eq!(entries["kind"], kind, "{j}");
            if kind == "sparse" {
                assert_eq!(entries["s"].as_f64(), Some(3.0), "{j}");
            }
            let info = ok(d.path(), &["info", &out]);
            assert!(info.contains(&format!("dense {}", proj)), "{info}");
            // Rademacher has Δ₂ = β exactly; the sensitivity is computed from the actual W. Its
            // inputs are rounded to the grid 2^-12, so the computed map has β + 2^-12.
            let sens = j["mechanism"]["gaussian"]["sensitivity"].as_f64().unwrap();
            let exact = j["mechanism"]["arithmetic"]["sensitivity_exact"]
                .as_f64()
                .unwrap();
            if kind == "rademacher" {
                assert!((exact - 1.0).abs() < 1e-11, "{j}");
                assert!((sens - (1.0 + 1.0 / 4096.0)).abs() < 1e-11, "{j}");
            } else {
                assert!(sens > 0.0 && sens.is_finite(), "{j}");
            }
        }
    }
}

const SEED: &str = "c0ffee";

fn seeded(dir: &Path, out: &str, mech: &str, noise_seed: Option<&str>) -> (String, String) {
    let mut args = vec![
        "publish",
        "d.bin",
        "-m",
        mech,
        "--epsilon",
        "5",
        "--delta",
        "1e-6",
        "--k",
        "3",
        "--projection-seed",
        SEED,
        "-o",
        out,
    ];
    if let Some(s) = noise_seed {
        args.extend(["--noise-seed", s]);
    }
    ok2(dir, &args)
}

#[test]
fn projection_seed_is_recorded_left_padded() {
    let d = tmp();
    valid_dataset(d.path());
    let padded = format!("{SEED:0>64}");
    assert_eq!(padded.len(), 64);
    for mech in ["dp-oporp", "dp-rp-g-opt", "dp-rp-g"] {
        let out = format!("{mech}.dprp");
        seeded(d.path(), &out, mech, None);
        let j = info_json(d.path(), &out);
        assert_eq!(j["mechanism"]["projection"]["seed"], padded.as_str(), "{j}");
        let info = ok(d.path(), &["info", &out]);
        assert!(info.contains(&format!("public seed {padded}")), "{info}");
    }
    // A full 64-digit seed is kept as given (lower case).
    let full = "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef";
    ok(
        d.path(),
        &with(
            &[
                "publish",
                "d.bin",
                "--projection-seed",
                full,
                "-o",
                "full.dprp",
            ],
            &PUBLISH,
        ),
    );
    let j = info_json(d.path(), "full.dprp");
    assert_eq!(
        j["mechanism"]["projection"]["seed"],
        full.to_ascii_lowercase().as_str()
    );
    // Without --projection-seed a fresh seed is drawn and recorded.
    ok(
        d.path(),
        &with(&["publish", "d.bin", "-o", "a.dprp"], &PUBLISH),
    );
    ok(
        d.path(),
        &with(&["publish", "d.bin", "-o", "b.dprp"], &PUBLISH),
    );
    let a = info_json(d.path(), "a.dprp")["mechanism"]["projection"]["seed"].clone();
    let b = info_json(d.path(), "b.dprp")["mechanism"]["projection"]["seed"].clone();
    assert_eq!(a.as_str().unwrap().len(), 64);
    assert_ne!(
        a, b,
        "two runs without --projection-seed should draw different seeds"
    );
}

#[test]
fn noise_seed_is_reproducible_not_private_and_not_stored() {
    let d = tmp();
    valid_dataset(d.path());
    let secret = "my-secret-noise-seed-4711";
    for mech in ["dp-oporp", "dp-rp-g-opt", "raw-g-opt", "dp-rp-g"] {
        let (a, b, c) = (
            format!("{mech}-a.dprp"),
            format!("{mech}-b.dprp"),
            format!("{mech}-c.dprp"),
        );
        let (k_args, k) = if mech == "raw-g-opt" {
            (vec![], 4)
        } else {
            (vec!["--k", "3"], 3)
        };
        let run = |out: &str, noise: Option<&str>| {
            let mut args = vec![
                "publish",
                "d.bin",
                "-m",
                mech,
                "--epsilon",
                "5",
                "--delta",
                "1e-6",
                "--projection-seed",
                SEED,
                "-o",
                out,
            ];
            if mech == "raw-g-opt" {
                args.retain(|&x| x != "--projection-seed" && x != SEED);
            }
            args.extend(&k_args);
            if let Some(s) = noise {
                args.extend(["--noise-seed", s]);
            }
            ok2(d.path(), &args)
        };
        let (stdout, stderr) = run(&a, Some(secret));
        assert!(
            stderr.to_ascii_uppercase().contains("NOT PRIVATE"),
            "--noise-seed must warn loudly:\n{stderr}"
        );
        assert!(stdout.contains("NOT PRIVATE"), "{stdout}");
        run(&b, Some(secret));
        let (pa, pb) = (payload(&d.path().join(&a)), payload(&d.path().join(&b)));
        assert_eq!(pa.len(), 3 * k * 4);
        assert_eq!(
            pa, pb,
            "{mech}: same seeds must give byte-identical payloads"
        );
        run(&c, Some("another-seed"));
        assert_ne!(
            pa,
            payload(&d.path().join(&c)),
            "{mech}: a different noise seed must give different noise"
        );

        let info = ok(d.path(), &["info", &a]);
        assert!(info.contains("NOT PRIVATE"), "{info}");
        let j = info_json(d.path(), &a);
        assert_eq!(j["private"], false, "{j}");
        assert!(
            j["statement"].as_str().unwrap().starts_with("NOT PRIVATE"),
            "{j}"
        );
        assert!(j["noise"]["source"]
            .as_str()
            .unwrap()
            .contains("NOT PRIVATE"));
        for f in [&a, &b] {
            let bytes = std::fs::read(d.path().join(f)).unwrap();
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "the noise seed must never be written to the release"
            );
        }
        assert!(!info.contains(secret));
        assert!(!j.to_string().contains(secret));
    }
}

#[test]
fn fresh_noise_without_noise_seed() {
    let d = tmp();
    valid_dataset(d.path());
    let (out1, err1) = seeded(d.path(), "a.dprp", "dp-oporp", None);
    seeded(d.path(), "b.dprp", "dp-oporp", None);
    assert!(!err1.to_ascii_uppercase().contains("NOT PRIVATE"), "{err1}");
    assert!(!out1.contains("NOT PRIVATE"), "{out1}");
    assert_ne!(
        payload(&d.path().join("a.dprp")),
        payload(&d.path().join("b.dprp")),
        "private releases must draw fresh noise"
    );
    let info = ok(d.path(), &["info", "a.dprp"]);
    assert!(
        !info.contains("NOT PRIVATE") && info.contains("(5, 1e-6)-DP"),
        "{info}"
    );
}

#[test]
fn labels_survive_publish_from_native() {
    let d = tmp();
    put(d.path(), "x.csv", b"y,a,b\n1,0.5,0.5\n-1,0.25,-0.25\n");
    ok(
        d.path(),
        &["convert", "x.csv", "--label-column", "0", "-o", "d.bin"],
    );
    ok(
        d.path(),
        &[
            "publish",
            "d.bin",
            "-m",
            "dp-oporp",
            "--epsilon",
            "5",
            "--delta",
            "1e-6",
            "--k",
            "2",
            "-o",
            "r.dprp",
        ],
    );
    check_release(d.path(), "r.dprp", (2, 2, 2), "dp-oporp", true);
    assert_eq!(
        release_labels(&d.path().join("r.dprp")),
        Some(vec![1.0, -1.0])
    );
}

#[test]
fn epsilon_beta_and_neighbour_are_recorded() {
    let d = tmp();
    valid_dataset(d.path());
    ok(
        d.path(),
        &[
            "publish",
            "d.bin",
            "-m",
            "dp-rp-g-opt",
            "--epsilon",
            "0.5",
            "--delta",
            "1e-5",
            "--beta",
            "0.5",
            "--neighbour",
            "l1",
            "--k",
            "4",
            "-o",
            "r.dprp",
        ],
    );
    let j = info_json(d.path(), "r.dprp");
    assert_eq!(j["guarantee"]["epsilon"].as_f64(), Some(0.5));
    assert_eq!(j["guarantee"]["delta"].as_f64(), Some(1e-5));
    assert_eq!(j["guarantee"]["beta"].as_f64(), Some(0.5));
    assert_eq!(j["guarantee"]["neighbour"], "l1");
    // Rademacher: Δ₂ = β.
    let sens = j["mechanism"]["gaussian"]["sensitivity"].as_f64().unwrap();
    assert!((sens - 0.5).abs() < 1e-12, "{j}");
}

/// `--timings` reports the stages of the pipeline with consistent figures, and a release that
/// spans many pipeline chunks and several write-behind windows (`--memory 1`, a 41 MB payload)
/// has exactly the payload of the same publish in one go (same `--noise-seed`).
#[test]
fn timings_are_reported_and_chunking_does_not_change_the_payload() {
    let d = tmp();
    let (n, p, k) = (20_000usize, 8usize, 512usize);
    let vals: Vec<f32> = (0..n * p)
        .map(|i| ((i * 37) % 101) as f32 / 101.0)
        .collect();
    put(d.path(), "x.npy", &npy("<f4", n, p, &f32_le(&vals)));
    let base = [
        "publish",
        "x.npy",
        "--mechanism",
        "dp-rp-g-opt",
        "--k",
        "512",
        "--epsilon",
        "5",
        "--delta",
        "1e-6",
        "--noise-seed",
        "7",
        "--projection-seed",
        "1",
    ];
    let small = ok(
        d.path(),
        &with(&base, &["-o", "small.dprp", "--memory", "1", "--timings"]),
    );
    let line = small
        .lines()
        .find(|l| l.starts_with("timings ("))
        .unwrap_or_else(|| panic!("no timings line in:\n{small}"));
    let chunk = dprp::publish::chunk_rows(p, k, dprp::mechanism::Payload::F32, 1 << 20);
    assert!(
        line.contains(&format!("{} chunk(s)", n.div_ceil(chunk))),
        "chunk {chunk}: {line}"
    );
    // every figure is a number of seconds ≥ 0, and the whole run is at least its set-up plus its
    // finishing, and at least the privatisation
    let secs: Vec<f64> = line
        .split(" s")
        .filter_map(|part| part.rsplit(' ').next()?.parse().ok())
        .collect();
    assert_eq!(secs.len(), 8, "{line}");
    assert!(secs.iter().all(|&s| s >= 0.0), "{line}");
    let (setup, privatise, finish, total) = (secs[0], secs[2], secs[6], secs[7]);
    assert!(total >= setup + finish && total >= privatise, "{line}");
    let plain = ok(d.path(), &with(&base, &["-o", "plain.dprp"]));
    assert!(!plain.contains("timings"), "{plain}");
    let a = payload(&d.path().join("small.dprp"));
    assert_eq!(a.len(), n * k * 4);
    assert!(a == payload(&d.path().join("plain.dprp")));
    ok(d.path(), &["info", "small.dprp"]);
}
