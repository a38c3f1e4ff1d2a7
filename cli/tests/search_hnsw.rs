//! HNSW search: recall against the exact scan, scores identical in convention, save/load round
//! trips, rejection of damaged or mismatched index files, and (on the project's `data/mnist`) the
//! MNIST recall requirement. `bench_hnsw_speedup_mnist_k1024` (ignored) measures the speed-up.

use crate::cli_helpers;
use crate::data_common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::Instant;

use dprp::atomic::Existing;
use dprp::data::scale::{ScaleArg, ScalingRequest};
use dprp::data::{Dataset, InputOptions};
use dprp::mechanism::central::sign_sketch::pack_signs;
use dprp::mechanism::{Mechanism, MechanismKind, MechanismParams};
use dprp::privacy::guarantee::Neighbour;
use dprp::privacy::samplers::noise::NoiseSource;
use dprp::publish::{load_scaled, privatise_dataset, Sketches};
use dprp::search::hnsw::{default_ef, HnswIndex, HnswParams};
use dprp::search::{exact, Hit, Measure, Sketch};
use dprp::Error;

use cli_helpers::Rng;
use data_common::data_file;

const NOISE: f32 = 0.3;
const SPREAD: f32 = 1.0;

/// `n` rows of dimension `k` near a random `d`-dimensional subspace (real data has a low
/// intrinsic dimension), with row norms varying by a factor of up to 2 (so inner product and
/// cosine rank differently). The same `seed` gives the same subspace, `stream` different rows.
fn real_data(seed: u64, stream: u64, n: usize, k: usize, d: usize) -> Vec<f32> {
    let mut r = Rng(seed);
    let basis: Vec<f32> = (0..d * k).map(|_| r.gauss()).collect();
    let mut r = Rng(seed ^ stream.wrapping_mul(0x9e37_79b9));
    let mut out = Vec::with_capacity(n * k);
    let mut z = vec![0f32; d];
    for _ in 0..n {
        z.iter_mut().for_each(|v| *v = r.gauss());
        let scale = 1.0 + SPREAD * r.unif() as f32;
        for t in 0..k {
            let v: f32 = (0..d).map(|j| z[j] * basis[j * k + t]).sum();
            out.push(scale * (v + NOISE * r.gauss()));
        }
    }
    out
}

/// Sign sketches (`k` bits packed) of rows from [`real_data`]; padding bits above `k` are set to
/// garbage when `garbage` (both searches must ignore them).
fn bit_data(seed: u64, stream: u64, n: usize, k: usize, garbage: bool) -> Vec<u64> {
    let w = k.div_ceil(64);
    let x = real_data(seed, stream, n, k, 8);
    let mut out = vec![0u64; n * w];
    for (row, words) in x.chunks(k).zip(out.chunks_mut(w)) {
        pack_signs(row, words);
        if garbage && !k.is_multiple_of(64) {
            words[w - 1] |= !((1u64 << (k % 64)) - 1);
        }
    }
    out
}

/// Fraction of hits that are correct: a hit counts when its exact score reaches the K-th exact
/// score (so that among tied rows any choice is right; for real data ties are negligible and this
/// equals the usual set recall up to rounding of scores at the boundary).
fn recall(approx: &[Vec<Hit>], exact: &[Vec<Hit>], score: impl Fn(usize, usize) -> f64) -> f64 {
    let mut good = 0usize;
    let mut total = 0usize;
    for (q, (a, e)) in approx.iter().zip(exact).enumerate() {
        let kth = e.last().unwrap().score as f64;
        let tol = 1e-5 * (1.0 + kth.abs());
        for h in a {
            total += 1;
            if e.iter().any(|x| x.row == h.row) || score(q, h.row) >= kth - tol {
                good += 1;
            }
        }
        assert_eq!(a.len(), e.len());
    }
    good as f64 / total as f64
}

/// Reference score of a database row for a query, in f64.
fn ref_score(db: &Sketch<'_>, qs: &Sketch<'_>, measure: Measure, q: usize, row: usize) -> f64 {
    match (*db, *qs) {
        (Sketch::Real { data: d, k }, Sketch::Real { data: qd, .. }) => {
            let a = &qd[q * k..(q + 1) * k];
            let b = &d[row * k..(row + 1) * k];
            let dot = |x: &[f32], y: &[f32]| -> f64 {
                x.iter().zip(y).map(|(&u, &v)| u as f64 * v as f64).sum()
            };
            let ip = dot(a, b);
            if measure == Measure::Cosine {
                let (na, nb) = (dot(a, a).sqrt(), dot(b, b).sqrt());
                if na == 0.0 || nb == 0.0 {
                    0.0
                } else {
                    ip / (na * nb)
                }
            } else {
                ip
            }
        }
        (Sketch::Bits { data: d, k }, Sketch::Bits { data: qd, .. }) => {
            let w = k.div_ceil(64);
            dprp::estimate::agreements(&qd[q * w..(q + 1) * w], &d[row * w..(row + 1) * w], k)
                as f64
        }
        _ => unreachable!(),
    }
}

/// Every returned hit carries its exact score (real: within f32 rounding; signs: exactly), hits
/// are sorted best first with ties by row, and the rows are distinct.
fn check_scores(db: &Sketch<'_>, qs: &Sketch<'_>, measure: Measure, hits: &[Vec<Hit>]) {
    for (q, hs) in hits.iter().enumerate() {
        for h in hs {
            let s = ref_score(db, qs, measure, q, h.row);
            if db.is_bits() {
                assert_eq!(h.score as f64, s, "query {q} row {}", h.row);
            } else {
                let scale = if measure == Measure::Ip {
                    1.0 + s.abs()
                } else {
                    1.0
                };
                assert!(
                    (h.score as f64 - s).abs() <= 2e-5 * scale,
                    "query {q} row {}: {} vs {s}",
                    h.row,
                    h.score
                );
            }
        }
        for w in hs.windows(2) {
            assert!(
                w[0].score > w[1].score || (w[0].score == w[1].score && w[0].row < w[1].row),
                "query {q}: hits out of order {w:?}"
            );
        }
        let mut rows: Vec<usize> = hs.iter().map(|h| h.row).collect();
        rows.sort_unstable();
        rows.dedup();
        assert_eq!(rows.len(), hs.len());
    }
}

fn exact_hits(db: &Sketch<'_>, qs: &Sketch<'_>, measure: Measure, top: usize) -> Vec<Vec<Hit>> {
    exact::search(db, qs, measure, top, None).unwrap()
}

/// Exact hits scored as in the exact scan, compared with the index's hits.
fn assert_recall(db: &Sketch<'_>, qs: &Sketch<'_>, measure: Measure, got: &[Vec<Hit>], min: f64) {
    let want = exact_hits(db, qs, measure, got[0].len());
    let r = recall(got, &want, |q, row| ref_score(db, qs, measure, q, row));
    println!("{}: recall@{} = {r:.4}", measure.name(), got[0].len());
    assert!(r >= min, "{}: recall {r} < {min}", measure.name());
    // Where both found a row, the scores agree (the exact scan's own rounding aside).
    for (a, e) in got.iter().zip(&want) {
        for h in a {
            if let Some(x) = e.iter().find(|x| x.row == h.row) {
                let tol = if db.is_bits() {
                    0.0
                } else {
                    2e-5 * (1.0 + x.score.abs())
                };
                assert!(
                    (h.score - x.score).abs() <= tol,
                    "row {}: hnsw {} exact {}",
                    h.row,
                    h.score,
                    x.score
                );
            }
        }
    }
}

#[test]
fn recall_and_scores_on_small_random_data() {
    let (n, k, nq, top) = (3000, 48, 200, 10);
    let db = real_data(1, 0, n, k, 6);
    let qd = real_data(1, 1, nq, k, 6);
    let dbs = Sketch::Real { data: &db, k };
    let qs = Sketch::Real { data: &qd, k };
    for measure in [Measure::Ip, Measure::Cosine] {
        let idx = HnswIndex::build(&dbs, measure, &HnswParams::default()).unwrap();
        assert_eq!((idx.n(), idx.k(), idx.measure()), (n, k, measure));
        let hits = idx
            .search(&qs, top, default_ef(measure, top), None)
            .unwrap();
        assert_eq!(hits.len(), nq);
        check_scores(&dbs, &qs, measure, &hits);
        assert_recall(&dbs, &qs, measure, &hits, 0.95);
    }
    // k not a multiple of 64, garbage in the padding bits of rows and queries.
    let kb = 200;
    let bits = bit_data(3, 0, n, kb, true);
    let qbits = bit_data(3, 1, nq, kb, true);
    let dbs = Sketch::Bits { data: &bits, k: kb };
    let qs = Sketch::Bits {
        data: &qbits,
        k: kb,
    };
    let idx = HnswIndex::build(&dbs, Measure::Hamming, &HnswParams::default()).unwrap();
    let hits = idx
        .search(&qs, top, default_ef(Measure::Hamming, top), None)
        .unwrap();
    check_scores(&dbs, &qs, Measure::Hamming, &hits);
    assert_recall(&dbs, &qs, Measure::Hamming, &hits, 0.95);
}

#[test]
fn zero_rows_and_queries_follow_the_exact_conventions() {
    let (n, k) = (500, 16);
    let mut db = real_data(5, 0, n, k, 4);
    for row in [0usize, 7, 300] {
        db[row * k..(row + 1) * k].fill(0.0);
    }
    let mut qd = real_data(5, 1, 20, k, 4);
    qd[..k].fill(0.0); // query 0 is zero
    let dbs = Sketch::Real { data: &db, k };
    let qs = Sketch::Real { data: &qd, k };
    for measure in [Measure::Ip, Measure::Cosine] {
        let idx = HnswIndex::build(&dbs, measure, &HnswParams::default()).unwrap();
        let hits = idx.search(&qs, 5, 64, None).unwrap();
        let want = exact_hits(&dbs, &qs, measure, 5);
        assert_eq!(hits[0], want[0], "{measure:?}: zero query");
        assert_eq!(
            hits[0].iter().map(|h| h.row).collect::<Vec<_>>(),
            vec![0, 1, 2, 3, 4]
        );
        check_scores(&dbs, &qs, measure, &hits);
    }
}

#[test]
fn tiny_databases_and_progress() {
    // One row, and fewer rows than ef.
    for n in [1usize, 2, 5, 30] {
        let k = 8;
        let db = real_data(7, n as u64, n, k, 3);
        let qd = real_data(7, 1000, 10, k, 3);
        let dbs = Sketch::Real { data: &db, k };
        let qs = Sketch::Real { data: &qd, k };
        let idx = HnswIndex::build(&dbs, Measure::Cosine, &HnswParams::default()).unwrap();
        let top = n.min(3);
        let hits = idx.search(&qs, top, 64, None).unwrap();
        let want = exact_hits(&dbs, &qs, Measure::Cosine, top);
        for (h, w) in hits.iter().zip(&want) {
            assert_eq!(
                h.iter().map(|x| x.row).collect::<Vec<_>>(),
                w.iter().map(|x| x.row).collect::<Vec<_>>(),
                "n = {n}"
            );
        }
    }
    // Progress: serialised, increasing, ending at the number of queries.
    let k = 8;
    let db = real_data(9, 0, 400, k, 4);
    let qd = real_data(9, 1, 1000, k, 4);
    let idx = HnswIndex::build(
        &Sketch::Real { data: &db, k },
        Measure::Ip,
        &HnswParams::default(),
    )
    .unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let cb = |d: usize| seen.lock().unwrap().push(d);
    idx.search(&Sketch::Real { data: &qd, k }, 4, 64, Some(&cb))
        .unwrap();
    let seen = seen.into_inner().unwrap();
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert_eq!(seen.last(), Some(&1000));
}

fn expect_param(r: Result<impl Sized, Error>, name: &str) -> String {
    match r {
        Err(e @ Error::Param { .. }) => {
            let s = e.render(dprp::error::Front::Cli);
            assert!(s.contains(name), "expected a {name} error, got: {s}");
            s
        }
        Err(e) => panic!("expected a {name} parameter error, got: {e}"),
        Ok(_) => panic!("expected a {name} parameter error, got success"),
    }
}

fn expect_format(r: Result<impl Sized, Error>, needle: &str) -> String {
    match r {
        Err(e @ Error::Format { .. }) => {
            let s = e.to_string();
            assert!(s.contains(needle), "expected '{needle}' in: {s}");
            s
        }
        Err(e) => panic!("expected a format error with '{needle}', got: {e}"),
        Ok(_) => panic!("expected a format error with '{needle}', got success"),
    }
}

#[test]
fn bad_requests_are_rejected() {
    let (n, k) = (200, 16);
    let db = real_data(11, 0, n, k, 4);
    let dbs = Sketch::Real { data: &db, k };
    let idx = HnswIndex::build(&dbs, Measure::Ip, &HnswParams::default()).unwrap();
    let qd = real_data(11, 1, 5, k, 4);
    let qs = Sketch::Real { data: &qd, k };
    expect_param(idx.search(&qs, 0, 64, None), "--top");
    expect_param(idx.search(&qs, n + 1, 2 * n + 2, None), "--top");
    expect_param(idx.search(&qs, 10, 5, None), "--ef");
    let q8 = real_data(11, 1, 5, 8, 4);
    expect_param(
        idx.search(&Sketch::Real { data: &q8, k: 8 }, 3, 64, None),
        "--queries",
    );
    let qb = vec![0u64; 5];
    expect_param(
        idx.search(&Sketch::Bits { data: &qb, k: 16 }, 3, 64, None),
        "--queries",
    );
    let mut qnan = qd.clone();
    qnan[3] = f32::NAN;
    expect_param(
        idx.search(&Sketch::Real { data: &qnan, k }, 3, 64, None),
        "--queries",
    );
    // Construction.
    expect_param(
        HnswIndex::build(&dbs, Measure::Hamming, &HnswParams::default()),
        "--measure",
    );
    let bits = vec![1u64; 10];
    expect_param(
        HnswIndex::build(
            &Sketch::Bits { data: &bits, k: 64 },
            Measure::Cosine,
            &HnswParams::default(),
        ),
        "--measure",
    );
    for m in [0, 1, 256, 1000] {
        let p = HnswParams {
            m,
            ef_construction: 200,
        };
        expect_param(HnswIndex::build(&dbs, Measure::Ip, &p), "--m");
    }
    let p = HnswParams {
        m: 16,
        ef_construction: 0,
    };
    expect_param(HnswIndex::build(&dbs, Measure::Ip, &p), "--ef-construction");
    expect_param(
        HnswIndex::build(
            &Sketch::Real { data: &[], k },
            Measure::Ip,
            &HnswParams::default(),
        ),
        "release",
    );
    let mut dnan = db.clone();
    dnan[40] = f32::INFINITY;
    expect_param(
        HnswIndex::build(
            &Sketch::Real { data: &dnan, k },
            Measure::Ip,
            &HnswParams::default(),
        ),
        "release",
    );
}

#[test]
fn save_load_round_trip_and_damaged_files() {
    let dir = tempfile::tempdir().unwrap();
    let (n, k, nq, top) = (1500, 24, 100, 10);
    let db = real_data(21, 0, n, k, 6);
    let qd = real_data(21, 1, nq, k, 6);
    let bits = bit_data(23, 0, n, 130, false);
    let qbits = bit_data(23, 1, nq, 130, false);
    let real = Sketch::Real { data: &db, k };
    let real_q = Sketch::Real { data: &qd, k };
    let sign = Sketch::Bits {
        data: &bits,
        k: 130,
    };
    let sign_q = Sketch::Bits {
        data: &qbits,
        k: 130,
    };
    let checksum = [7u8; 32];
    let params = HnswParams {
        m: 12,
        ef_construction: 100,
    };
    for (measure, dbs, qs) in [
        (Measure::Ip, real, real_q),
        (Measure::Cosine, real, real_q),
        (Measure::Hamming, sign, sign_q),
    ] {
        let idx = HnswIndex::build(&dbs, measure, &params).unwrap();
        let before = idx.search(&qs, top, 40, None).unwrap();
        let path = dir.path().join(format!("{}.hnsw", measure.name()));
        idx.save((&path, Existing::Refuse), checksum).unwrap();
        let (loaded, header) = HnswIndex::load(&path, &dbs).unwrap();
        assert_eq!(header.measure, measure);
        assert_eq!((header.n, header.k), (n as u64, dbs.k()));
        assert_eq!(header.params, params);
        assert_eq!(header.release_checksum, checksum);
        header.check_release(&path, &checksum).unwrap();
        assert_eq!(loaded.params(), params);
        let after = loaded.search(&qs, top, 40, None).unwrap();
        assert_eq!(before, after, "{measure:?}: results differ after reload");
        // Saving the reloaded index gives the same file.
        let again = dir.path().join(format!("again-{measure:?}.hnsw"));
        loaded.save((&again, Existing::Refuse), checksum).unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            std::fs::read(&again).unwrap()
        );
    }
    // No temporary files are left next to the output.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with(".dprp")), "{names:?}");

    let path = dir.path().join("ip.hnsw");
    let good = std::fs::read(&path).unwrap();

    // A different release.
    let (_, header) = HnswIndex::load(&path, &real).unwrap();
    let e = expect_format(header.check_release(&path, &[8u8; 32]), "different release");
    assert!(e.contains("ip.hnsw"), "{e}");
    // Other sketches: different values, different k, different n, the wrong kind.
    let mut other = db.clone();
    other[5] += 1.0;
    expect_param(
        HnswIndex::load(&path, &Sketch::Real { data: &other, k }),
        "different sketches",
    );
    expect_param(
        HnswIndex::load(&path, &Sketch::Real { data: &db, k: 12 }),
        "k = 24",
    );
    expect_param(
        HnswIndex::load(
            &path,
            &Sketch::Real {
                data: &db[..k * 10],
                k,
            },
        ),
        "release",
    );
    expect_param(HnswIndex::load(&path, &sign), "release");

    let write = |bytes: &[u8]| {
        let p = dir.path().join("bad.hnsw");
        std::fs::write(&p, bytes).unwrap();
        p
    };
    // Wrong magic, a release, an empty file, a truncated header, a truncated graph, an extension.
    let mut b = good.clone();
    b[0] = b'X';
    expect_format(HnswIndex::load(&write(&b), &real), "wrong magic");
    let mut b = good.clone();
    b[..8].copy_from_slice(b"DPRPSKCH");
    expect_format(HnswIndex::load(&write(&b), &real), "is a dprp release");
    expect_format(HnswIndex::load(&write(&[]), &real), "empty (0 bytes)");
    expect_format(HnswIndex::load(&write(&good[..100]), &real), "truncated");
    expect_format(
        HnswIndex::load(&write(&good[..good.len() - 1]), &real),
        "truncated",
    );
    let mut b = good.clone();
    b.push(0);
    expect_format(HnswIndex::load(&write(&b), &real), "truncated or extended");
    // A flipped byte in the header or the graph.
    for pos in [20, 60, 200, good.len() / 2, good.len() - 3] {
        let mut b = good.clone();
        b[pos] ^= 0x10;
        expect_format(HnswIndex::load(&write(&b), &real), "checksum mismatch");
    }
    let mut b = good.clone();
    b[8] = 9;
    expect_format(
        HnswIndex::load(&write(&b), &real),
        "unsupported index format version 9",
    );
    // A directory and a missing file.
    assert!(matches!(
        HnswIndex::load(dir.path(), &real),
        Err(Error::Io { .. })
    ));
    assert!(matches!(
        HnswIndex::load(&dir.path().join("missing.hnsw"), &real),
        Err(Error::Io { .. })
    ));
    // Saving into a missing directory fails cleanly.
    let idx = HnswIndex::build(&real, Measure::Ip, &params).unwrap();
    assert!(idx
        .save(
            (&dir.path().join("nope/x.hnsw"), Existing::Refuse),
            checksum
        )
        .is_err());
}

/// Recompute the index checksum after editing bytes, as a crafted file would.
fn reseal(b: &mut [u8]) {
    let mut h = blake3::Hasher::new();
    h.update(&b[..136]);
    h.update(&b[168..]);
    let sum = *h.finalize().as_bytes();
    b[136..168].copy_from_slice(&sum);
}

#[test]
fn crafted_graphs_with_valid_checksums_are_rejected_without_panics() {
    let dir = tempfile::tempdir().unwrap();
    let (n, k) = (300, 8);
    let db = real_data(31, 0, n, k, 4);
    let qd = real_data(31, 1, 20, k, 4);
    let real = Sketch::Real { data: &db, k };
    let qs = Sketch::Real { data: &qd, k };
    let idx = HnswIndex::build(&real, Measure::Cosine, &HnswParams::default()).unwrap();
    let path = dir.path().join("c.hnsw");
    idx.save((&path, Existing::Refuse), [0; 32]).unwrap();
    let good = std::fs::read(&path).unwrap();
    let bad = dir.path().join("bad.hnsw");
    // Header fields with a valid checksum.
    for (off, val, needle) in [
        (12usize, 9u64, "unknown measure"),
        (32, 1, "m = 1"),
        (32, 300, "m = 300"),
        (40, 0, "ef_construction = 0"),
        (48, 0, "0 layers"),
        (48, 17, "17 layers"),
        (56, n as u64 + 5, "entry row"),
        (64, 5, "truncated or extended"),
    ] {
        let mut b = good.clone();
        if off == 12 {
            b[off..off + 4].copy_from_slice(&(val as u32).to_le_bytes());
        } else {
            b[off..off + 8].copy_from_slice(&val.to_le_bytes());
        }
        reseal(&mut b);
        std::fs::write(&bad, &b).unwrap();
        expect_format(HnswIndex::load(&bad, &real), needle);
    }
    // The entry point must be on the top layer: row 0 is on layer 0 only (unless it is the
    // entry), so try a few rows until one is refused.
    let entry = u64::from_le_bytes(good[56..64].try_into().unwrap());
    let layers = u64::from_le_bytes(good[48..56].try_into().unwrap());
    assert!(
        layers >= 2,
        "a 300-row graph with m = 16 has 2 or more layers"
    );
    let other: u64 = if entry == 0 { 1 } else { 0 };
    let mut b = good.clone();
    b[56..64].copy_from_slice(&other.to_le_bytes());
    reseal(&mut b);
    std::fs::write(&bad, &b).unwrap();
    match HnswIndex::load(&bad, &real) {
        Err(Error::Format { msg, .. }) => assert!(msg.contains("entry row"), "{msg}"),
        Ok(_) => {} // row `other` happens to be on the top layer too
        Err(e) => panic!("{e}"),
    }
    // Every byte of a stretch of the graph section, and a sample across it, set to other values:
    // the load either fails with a format error or gives a working index; never a panic.
    let graph = 168..good.len();
    let mut positions: Vec<usize> = (graph.start..graph.start + 400).collect();
    positions.extend((graph.start..graph.end).step_by(97));
    positions.extend(graph.end - 40..graph.end);
    let (mut rejected, mut accepted) = (0, 0);
    for pos in positions {
        for v in [0x00u8, 0xff, good[pos] ^ 0x01, good[pos].wrapping_add(0x40)] {
            if v == good[pos] {
                continue;
            }
            let mut b = good.clone();
            b[pos] = v;
            reseal(&mut b);
            std::fs::write(&bad, &b).unwrap();
            let r = catch_unwind(AssertUnwindSafe(|| {
                HnswIndex::load(&bad, &real).map(|(i, _)| i.search(&qs, 5, 64, None).unwrap())
            }));
            match r {
                Ok(Ok(_)) => accepted += 1,
                Ok(Err(Error::Format { msg, .. })) => {
                    assert!(msg.contains("corrupt index"), "{msg}");
                    rejected += 1
                }
                Ok(Err(e)) => panic!("byte {pos} = {v}: unexpected error kind {e}"),
                Err(_) => panic!("byte {pos} = {v}: load or search panicked"),
            }
        }
    }
    println!("crafted graphs: {rejected} rejected, {accepted} accepted (harmless edits)");
    assert!(rejected > 0);
}

// ---------------------------------------------------------------------------------------------
// MNIST

/// One MNIST image file of `data/mnist` (or `$DPRP_DATA/mnist`), pixels / 255.
fn load_mnist(file: &str) -> Dataset {
    let req = ScalingRequest {
        scale: Some(ScaleArg::Divide(255.0)),
        ..Default::default()
    };
    load_scaled(
        &data_file(&format!("mnist/{file}")),
        &InputOptions::default(),
        &req,
    )
    .unwrap()
}

fn mechanism(kind: MechanismKind, k: usize) -> Box<dyn Mechanism> {
    dprp::mechanism::build(&MechanismParams {
        kind,
        epsilon: 10.0,
        delta: Some(1e-6),
        beta: 1.0,
        neighbour: Neighbour::Coordinate,
        p: 784,
        k: Some(k),
        projection: None,
        seed: Some(dprp::projection::Seed::parse_hex("5eed").unwrap()),
        min_norm: None,
        individual_dp: kind.is_idp(),
        local: Default::default(),
    })
    .unwrap()
}

/// Raw (noiseless) projections of the first `nq` rows of `queries`.
fn project(m: &dyn Mechanism, queries: &Dataset, nq: usize) -> Vec<f32> {
    let k = m.output_dim();
    let mut out = vec![0f32; nq * k];
    m.as_sketch()
        .unwrap()
        .project(&queries.values[..nq * queries.p], &mut out)
        .unwrap();
    out
}

#[test]
fn mnist_recall_at_default_parameters() {
    let train = load_mnist("train-images-idx3-ubyte.gz");
    let test = load_mnist("t10k-images-idx3-ubyte.gz");
    let (k, nq, top) = (256, 500, 10);
    let noise = NoiseSource::from_seed("hnsw");

    // Real sketches, cosine.
    let m = mechanism(MechanismKind::DpOporp, k);
    let Sketches::Real(db) = privatise_dataset(m.as_ref(), &train, &noise).unwrap() else {
        panic!("dp-oporp gives real sketches");
    };
    let qd = project(m.as_ref(), &test, nq);
    let dbs = Sketch::Real { data: &db, k };
    let qs = Sketch::Real { data: &qd, k };
    let t = Instant::now();
    let idx = HnswIndex::build(&dbs, Measure::Cosine, &HnswParams::default()).unwrap();
    println!(
        "dp-oporp k = {k}: built over {} rows in {:.1} s",
        dbs.rows(),
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let hits = idx
        .search(&qs, top, default_ef(Measure::Cosine, top), None)
        .unwrap();
    println!(
        "searched {nq} queries in {:.3} s",
        t.elapsed().as_secs_f64()
    );
    check_scores(&dbs, &qs, Measure::Cosine, &hits);
    assert_recall(&dbs, &qs, Measure::Cosine, &hits, 0.95);

    // Sign sketches, Hamming (ties are frequent: a hit counts when it reaches the K-th score).
    let m = mechanism(MechanismKind::DpSignoporpRr, k);
    let Sketches::Bits(bits) = privatise_dataset(m.as_ref(), &train, &noise).unwrap() else {
        panic!("dp-signoporp-rr gives sign sketches");
    };
    let proj = project(m.as_ref(), &test, nq);
    let w = k.div_ceil(64);
    let mut qbits = vec![0u64; nq * w];
    for (q, words) in proj.chunks(k).zip(qbits.chunks_mut(w)) {
        pack_signs(q, words);
    }
    let dbs = Sketch::Bits { data: &bits, k };
    let qs = Sketch::Bits { data: &qbits, k };
    let t = Instant::now();
    let idx = HnswIndex::build(&dbs, Measure::Hamming, &HnswParams::default()).unwrap();
    println!(
        "dp-signoporp-rr k = {k}: built in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let hits = idx
        .search(&qs, top, default_ef(Measure::Hamming, top), None)
        .unwrap();
    check_scores(&dbs, &qs, Measure::Hamming, &hits);
    assert_recall(&dbs, &qs, Measure::Hamming, &hits, 0.95);
}

/// The speed target: 10000 MNIST-test queries against 60000 train sketches at k = 1024,
/// HNSW at recall@10 ≥ 0.95 versus the exact scan. Prints the build time, the query time per 1000
/// queries, recall and speed-up for a range of `ef` (each time the best of three runs, the exact
/// scan timed before and after, since other work on the machine disturbs single runs). Run with
/// `cargo test --release --test cli -- --ignored --nocapture search_hnsw::bench_hnsw`;
/// `DPRP_BENCH_QUERIES`, `DPRP_BENCH_MEASURES` (`cosine,ip` by default; `hamming` adds sign
/// sketches), `DPRP_BENCH_M`, `DPRP_BENCH_EFC` and
/// `DPRP_BENCH_EFS` (`16,32,...`) choose what runs, and `DPRP_BENCH_INDEX_DIR` keeps the built
/// graphs between runs.
#[test]
#[ignore]
fn bench_hnsw_speedup_mnist_k1024() {
    let train = load_mnist("train-images-idx3-ubyte.gz");
    let test = load_mnist("t10k-images-idx3-ubyte.gz");
    let nq: usize = std::env::var("DPRP_BENCH_QUERIES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10000);
    let measures: Vec<Measure> = std::env::var("DPRP_BENCH_MEASURES")
        .unwrap_or_else(|_| "cosine,ip".into())
        .split(',')
        .map(|m| Measure::parse(m).unwrap())
        .collect();
    let (k, top) = (1024, 10);
    let noise = NoiseSource::from_seed("hnsw");
    // Real sketches: OPORP needs k ≤ p = 784, so k = 1024 takes the dense projection (analytic
    // Gaussian σ). Sign sketches: iDP with Gaussian noise on the same kind of map (ε = 10; the
    // standard-DP sign mechanisms flip nearly every bit with probability close to ½ at k = 1024,
    // which leaves no neighbourhoods for a graph, or a user, to find: DPRP_BENCH_SIGNS names
    // another mechanism).
    let m = mechanism(MechanismKind::DpRpGOpt, k);
    let Sketches::Real(db) = privatise_dataset(m.as_ref(), &train, &noise).unwrap() else {
        panic!("dp-rp-g-opt gives real sketches");
    };
    let qd = project(m.as_ref(), &test, nq);
    let sign_kind = std::env::var("DPRP_BENCH_SIGNS")
        .map(|n| MechanismKind::parse(&n).unwrap())
        .unwrap_or(MechanismKind::IdpSignrpG);
    let (bits, qbits) = if measures.contains(&Measure::Hamming) {
        let m = mechanism(sign_kind, k);
        let Sketches::Bits(bits) = privatise_dataset(m.as_ref(), &train, &noise).unwrap() else {
            panic!("{} gives sign sketches", sign_kind.name());
        };
        let w = k.div_ceil(64);
        let mut qbits = vec![0u64; nq * w];
        for (q, words) in project(m.as_ref(), &test, nq)
            .chunks(k)
            .zip(qbits.chunks_mut(w))
        {
            pack_signs(q, words);
        }
        (bits, qbits)
    } else {
        (Vec::new(), Vec::new())
    };
    println!(
        "k = {k}, {} rows, {nq} queries, {} threads; real sketches: dp-rp-g-opt, signs: {}",
        train.n,
        rayon::current_num_threads(),
        sign_kind.name()
    );
    let timed = |f: &dyn Fn() -> Vec<Vec<Hit>>| {
        let t = Instant::now();
        let r = f();
        (r, t.elapsed().as_secs_f64())
    };
    for measure in measures {
        let (dbs, qs) = if measure == Measure::Hamming {
            (
                Sketch::Bits { data: &bits, k },
                Sketch::Bits { data: &qbits, k },
            )
        } else {
            (Sketch::Real { data: &db, k }, Sketch::Real { data: &qd, k })
        };
        let (want, e1) = timed(&|| exact_hits(&dbs, &qs, measure, top));
        let t = Instant::now();
        // DPRP_BENCH_M / DPRP_BENCH_EFC override the build parameters
        let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<usize>().ok());
        let params = HnswParams {
            m: env("DPRP_BENCH_M").unwrap_or(HnswParams::default().m),
            ef_construction: env("DPRP_BENCH_EFC").unwrap_or(HnswParams::default().ef_construction),
        };
        // DPRP_BENCH_INDEX_DIR keeps built indexes between runs (loading checks that they
        // cover these very sketches).
        let cached = std::env::var_os("DPRP_BENCH_INDEX_DIR").map(|d| {
            let mech = match measure {
                Measure::Hamming => sign_kind.name(),
                _ => "dp-rp-g-opt",
            };
            PathBuf::from(d).join(format!(
                "mnist-k{k}-{mech}-{}-m{}-efc{}.hnsw",
                measure.name(),
                params.m,
                params.ef_construction
            ))
        });
        let idx = match cached.as_deref().filter(|p| p.exists()) {
            Some(p) => HnswIndex::load(p, &dbs).unwrap().0,
            None => {
                let idx = HnswIndex::build(&dbs, measure, &params).unwrap();
                println!(
                    "{}: HNSW build (m = {}, ef_construction = {}) {:.1} s",
                    measure.name(),
                    params.m,
                    params.ef_construction,
                    t.elapsed().as_secs_f64()
                );
                if let Some(p) = cached.as_deref() {
                    idx.save((p, Existing::Replace), [0; 32]).unwrap();
                }
                idx
            }
        };
        let efs: Vec<usize> = std::env::var("DPRP_BENCH_EFS")
            .unwrap_or_else(|_| "16,20,24,28,32,48,64,128".into())
            .split(',')
            .map(|v| v.parse().unwrap())
            .collect();
        if let Ok(s) = std::fs::read_to_string("/proc/self/smaps_rollup") {
            if let Some(l) = s.lines().find(|l| l.starts_with("AnonHugePages")) {
                println!("(process memory on huge pages: {})", l[14..].trim());
            }
        }
        let mut rows = Vec::new();
        for ef in efs {
            let run = || idx.search(&qs, top, ef, None).unwrap();
            let (hits, s1) = timed(&run);
            let (_, s2) = timed(&run);
            let (_, s3) = timed(&run);
            let r = recall(&hits, &want, |q, row| ref_score(&dbs, &qs, measure, q, row));
            rows.push((ef, r, s1.min(s2).min(s3)));
        }
        let (_, e2) = timed(&|| exact_hits(&dbs, &qs, measure, top));
        let exact_s = e1.min(e2);
        println!(
            "{}: exact scan {:.3} s per 1000 queries (runs: {e1:.2} s, {e2:.2} s)",
            measure.name(),
            exact_s * 1000.0 / nq as f64
        );
        for (ef, r, s) in rows {
            println!(
                "{}: ef = {ef:3}: recall@{top} = {r:.4}, {:.3} s per 1000 queries, speed-up {:.1}×",
                measure.name(),
                s * 1000.0 / nq as f64,
                exact_s / s
            );
        }
    }
}
