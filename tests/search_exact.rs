//! Exact search (`dprp::search::exact::search`) against the brute-force reference (`naive`):
//! every measure, several k (for signs also k not a multiple of 64, and k = 1), top = 1, 10 and n,
//! data full of exact ties (duplicated rows, few distinct values, few sign bits), several database
//! blocks and query batches, NaN scores, and the error cases.

use std::sync::Mutex;

use dprp::search::exact::{naive, search, BITS_DB_BLOCK, GROUP, REAL_DB_BLOCK};
use dprp::search::{Hit, Measure, Sketch};

/// splitmix64: a small deterministic generator for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..m`.
    fn below(&mut self, m: u64) -> u64 {
        self.next() % m
    }
    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f32 {
        let u1 = ((self.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let u2 = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
    }
}

/// Copy some earlier rows over later ones (exact duplicates) and zero a few rows.
fn add_ties<T: Copy + Default>(data: &mut [T], per_row: usize, rng: &mut Rng, zero: bool) {
    let n = data.len() / per_row;
    for i in 1..n {
        match rng.below(6) {
            0 | 1 => {
                let src = rng.below(i as u64) as usize;
                data.copy_within(src * per_row..(src + 1) * per_row, i * per_row);
            }
            2 if zero => data[i * per_row..(i + 1) * per_row].fill(T::default()),
            _ => {}
        }
    }
}

/// `n×k` small integers in −3..=3 (every product and sum is exact in f32), with ties.
fn int_real(n: usize, k: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    let mut v: Vec<f32> = (0..n * k).map(|_| rng.below(7) as f32 - 3.0).collect();
    add_ties(&mut v, k, &mut rng, true);
    v
}

/// `n×k` Gaussian values, with duplicated and zero rows.
fn gauss_real(n: usize, k: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    let mut v: Vec<f32> = (0..n * k).map(|_| rng.normal()).collect();
    add_ties(&mut v, k, &mut rng, true);
    v
}

/// `n×⌈k/64⌉` random words (the bits beyond k too, so masking is exercised), with duplicates.
fn bits(n: usize, k: usize, seed: u64) -> Vec<u64> {
    let w = k.div_ceil(64);
    let mut rng = Rng(seed);
    let mut v: Vec<u64> = (0..n * w).map(|_| rng.next()).collect();
    add_ties(&mut v, w, &mut rng, false);
    v
}

fn tops(n: usize) -> Vec<usize> {
    let mut t = vec![1, 10.min(n), n];
    t.dedup();
    t
}

/// Exact equality, NaN scores included (and −0 = +0).
fn assert_same(fast: &[Vec<Hit>], slow: &[Vec<Hit>], what: &str) {
    assert_eq!(fast.len(), slow.len(), "{what}: number of queries");
    for (i, (f, s)) in fast.iter().zip(slow).enumerate() {
        let key = |h: &[Hit]| -> Vec<(usize, u32)> {
            h.iter()
                .map(|h| (h.row, (h.score + 0.0).to_bits()))
                .collect()
        };
        assert_eq!(key(f), key(s), "{what}: query {i}");
    }
}

/// `fast` is a valid top list up to float rounding: distinct rows, each row's reference score
/// (from `all`, the full naive ranking) within `tol` of the reference score at its position, and
/// identical rows wherever the reference has no near-tie.
fn assert_close(fast: &[Vec<Hit>], slow: &[Vec<Hit>], all: &[Vec<Hit>], tol: f32, what: &str) {
    assert_eq!(fast.len(), slow.len(), "{what}: number of queries");
    for (i, ((f, s), a)) in fast.iter().zip(slow).zip(all).enumerate() {
        assert_eq!(f.len(), s.len(), "{what}: query {i} length");
        let mut reference = vec![f32::NAN; a.len()];
        for h in a {
            reference[h.row] = h.score;
        }
        let mut seen = std::collections::HashSet::new();
        for (p, (hf, hs)) in f.iter().zip(s).enumerate() {
            assert!(
                seen.insert(hf.row),
                "{what}: query {i}: row {} twice",
                hf.row
            );
            let r = reference[hf.row];
            let near = |x: f32, y: f32| (x - y).abs() <= tol * (1.0 + y.abs());
            assert!(
                near(r, hs.score),
                "{what}: query {i} position {p}: row {} scores {r}, the reference's {} scores {}",
                hf.row,
                hs.row,
                hs.score
            );
            assert!(
                near(hf.score, r),
                "{what}: query {i}: reported {hf:?}, reference {r}"
            );
            let tie = a.iter().any(|h| h.row != hs.row && near(h.score, hs.score));
            if !tie {
                assert_eq!(hf.row, hs.row, "{what}: query {i} position {p}");
            }
        }
    }
}

#[test]
fn real_integer_data_matches_naive_exactly() {
    // Integer data: every score is exact in f32, so ranks (and tie order) must agree exactly.
    for (k, n, nq) in [
        (1, 40, 9),
        (3, 120, 21),
        (17, 333, 37),
        (64, 200, 13),
        (300, 150, 6),
    ] {
        let db = int_real(n, k, 11 + k as u64);
        let q = int_real(nq, k, 97 + k as u64);
        let (db, q) = (Sketch::Real { data: &db, k }, Sketch::Real { data: &q, k });
        for top in tops(n) {
            let fast = search(&db, &q, Measure::Ip, top, None).unwrap();
            let slow = naive(&db, &q, Measure::Ip, top).unwrap();
            assert_same(&fast, &slow, &format!("ip k={k} top={top}"));
        }
    }
}

#[test]
fn real_cosine_matches_naive() {
    for (k, n, nq) in [
        (1, 40, 9),
        (3, 120, 21),
        (17, 333, 37),
        (64, 200, 13),
        (300, 150, 6),
    ] {
        for (kind, db, q) in [
            (
                "int",
                int_real(n, k, 5 + k as u64),
                int_real(nq, k, 7 + k as u64),
            ),
            (
                "gauss",
                gauss_real(n, k, 5 + k as u64),
                gauss_real(nq, k, 7 + k as u64),
            ),
        ] {
            let (db, q) = (Sketch::Real { data: &db, k }, Sketch::Real { data: &q, k });
            let all = naive(&db, &q, Measure::Cosine, n).unwrap();
            for top in tops(n) {
                let fast = search(&db, &q, Measure::Cosine, top, None).unwrap();
                let slow = naive(&db, &q, Measure::Cosine, top).unwrap();
                assert_close(
                    &fast,
                    &slow,
                    &all,
                    1e-5,
                    &format!("cosine {kind} k={k} top={top}"),
                );
            }
        }
    }
}

#[test]
fn real_gaussian_ip_matches_naive() {
    for (k, n, nq) in [(2, 100, 10), (33, 257, 19), (128, 300, 12)] {
        let db = gauss_real(n, k, 1 + k as u64);
        let q = gauss_real(nq, k, 2 + k as u64);
        let (db, q) = (Sketch::Real { data: &db, k }, Sketch::Real { data: &q, k });
        let all = naive(&db, &q, Measure::Ip, n).unwrap();
        for top in tops(n) {
            let fast = search(&db, &q, Measure::Ip, top, None).unwrap();
            let slow = naive(&db, &q, Measure::Ip, top).unwrap();
            assert_close(
                &fast,
                &slow,
                &all,
                1e-4,
                &format!("ip gauss k={k} top={top}"),
            );
        }
    }
}

#[test]
fn bits_match_naive_exactly() {
    for k in [
        1, 2, 3, 63, 64, 65, 127, 128, 200, 256, 512, 1000, 1024, 2048,
    ] {
        let (n, nq) = (150, 23);
        let db = bits(n, k, 3 + k as u64);
        let q = bits(nq, k, 4 + k as u64);
        let (db, q) = (Sketch::Bits { data: &db, k }, Sketch::Bits { data: &q, k });
        for top in tops(n) {
            let fast = search(&db, &q, Measure::Hamming, top, None).unwrap();
            let slow = naive(&db, &q, Measure::Hamming, top).unwrap();
            assert_same(&fast, &slow, &format!("hamming k={k} top={top}"));
        }
    }
}

#[test]
fn several_blocks_batches_and_query_groups() {
    // More database rows than one block, and a query count that leaves a partial query group.
    let nq = 4 * GROUP + 3;
    let k = 70;
    let n = BITS_DB_BLOCK + REAL_DB_BLOCK + 5;
    let db = bits(n, k, 21);
    let q = bits(nq, k, 22);
    let (db, q) = (Sketch::Bits { data: &db, k }, Sketch::Bits { data: &q, k });
    for top in [1, 10, n] {
        let fast = search(&db, &q, Measure::Hamming, top, None).unwrap();
        assert_same(
            &fast,
            &naive(&db, &q, Measure::Hamming, top).unwrap(),
            "bits blocks",
        );
    }
    let k = 9;
    let db = int_real(n, k, 23);
    let q = int_real(nq, k, 24);
    let (db, q) = (Sketch::Real { data: &db, k }, Sketch::Real { data: &q, k });
    for top in [1, 10, n] {
        let fast = search(&db, &q, Measure::Ip, top, None).unwrap();
        assert_same(
            &fast,
            &naive(&db, &q, Measure::Ip, top).unwrap(),
            "real blocks",
        );
    }
    // Many queries: several parallel batches.
    let q = int_real(1100, k, 25);
    let small = int_real(50, k, 26);
    let (db, q) = (
        Sketch::Real { data: &small, k },
        Sketch::Real { data: &q, k },
    );
    let fast = search(&db, &q, Measure::Ip, 7, None).unwrap();
    assert_same(
        &fast,
        &naive(&db, &q, Measure::Ip, 7).unwrap(),
        "real batches",
    );
}

#[test]
fn ties_go_to_the_smaller_row() {
    // Five identical rows and a better one after them.
    let k = 4;
    let mut db = vec![1f32; 5 * k];
    db.extend([2f32; 4]);
    let q = vec![1f32; k];
    let (db, q) = (Sketch::Real { data: &db, k }, Sketch::Real { data: &q, k });
    let hits = search(&db, &q, Measure::Ip, 4, None).unwrap();
    let rows: Vec<usize> = hits[0].iter().map(|h| h.row).collect();
    assert_eq!(rows, [5, 0, 1, 2]);
    assert_eq!(hits[0][0].score, 8.0);
    let hits = search(&db, &q, Measure::Cosine, 6, None).unwrap();
    let rows: Vec<usize> = hits[0].iter().map(|h| h.row).collect();
    assert_eq!(rows, [0, 1, 2, 3, 4, 5], "equal cosines, by row");

    // One sign per row: agreements are 0 or 1, so almost everything ties.
    let db: Vec<u64> = (0..300u64).map(|i| (i * 7 % 3 == 0) as u64).collect();
    let q = [1u64, 0, 0xffff_fffe];
    let (dbs, qs) = (
        Sketch::Bits { data: &db, k: 1 },
        Sketch::Bits { data: &q, k: 1 },
    );
    let hits = search(&dbs, &qs, Measure::Hamming, 300, None).unwrap();
    for (qi, h) in hits.iter().enumerate() {
        let want_bit = q[qi] & 1;
        let mut expect: Vec<usize> = (0..300).filter(|&j| db[j] == want_bit).collect();
        expect.extend((0..300).filter(|&j| db[j] != want_bit));
        assert_eq!(h.iter().map(|h| h.row).collect::<Vec<_>>(), expect);
    }
}

#[test]
fn nan_scores_rank_last_without_breaking_the_order() {
    let k = 3;
    let mut db = int_real(60, k, 31);
    db[5 * k] = f32::NAN;
    db[17 * k + 1] = f32::NAN;
    db[40 * k..41 * k].fill(f32::NEG_INFINITY);
    let mut q = int_real(5, k, 32);
    q[3 * k + 2] = f32::NAN; // every score of query 3 is NaN
    let (dbs, qs) = (Sketch::Real { data: &db, k }, Sketch::Real { data: &q, k });
    for m in [Measure::Ip, Measure::Cosine] {
        for top in [1, 10, 60] {
            let fast = search(&dbs, &qs, m, top, None).unwrap();
            let slow = naive(&dbs, &qs, m, top).unwrap();
            assert_eq!(fast.len(), 5);
            for (i, (f, s)) in fast.iter().zip(&slow).enumerate() {
                assert_eq!(f.len(), top);
                if m == Measure::Ip {
                    assert_eq!(
                        f.iter().map(|h| h.row).collect::<Vec<_>>(),
                        s.iter().map(|h| h.row).collect::<Vec<_>>(),
                        "{m:?} top={top} query {i}"
                    );
                }
            }
            // Query 3 scores NaN everywhere: all tie at −∞, so rows come in order.
            let rows: Vec<usize> = fast[3].iter().map(|h| h.row).collect();
            assert_eq!(rows, (0..top).collect::<Vec<_>>());
            assert!(fast[3].iter().all(|h| h.score.is_nan()));
            // NaN rows come after every row scoring more than −∞ (and tie with −∞).
            if top == 60 {
                for f in [&fast[0], &fast[1]] {
                    let first_nan = f.iter().position(|h| h.score.is_nan()).unwrap();
                    assert!(f[first_nan..]
                        .iter()
                        .all(|h| h.score.is_nan() || h.score == f32::NEG_INFINITY));
                }
            }
        }
    }
}

#[test]
fn k_zero_and_empty_queries() {
    let db = [1f32, 2.0, 3.0];
    let empty: [f32; 0] = [];
    let (dbs, qs) = (
        Sketch::Real { data: &db, k: 3 },
        Sketch::Real { data: &empty, k: 3 },
    );
    assert!(search(&dbs, &qs, Measure::Ip, 1, None).unwrap().is_empty());
    assert!(naive(&dbs, &qs, Measure::Ip, 1).unwrap().is_empty());
    let w: [u64; 4] = [1, 2, 3, 4];
    let none: [u64; 0] = [];
    let (dbs, qs) = (
        Sketch::Bits { data: &w, k: 128 },
        Sketch::Bits {
            data: &none,
            k: 128,
        },
    );
    assert!(search(&dbs, &qs, Measure::Hamming, 2, None)
        .unwrap()
        .is_empty());

    // k = 0: every score is 0, so the first `top` rows in order.
    let (dbs, qs) = (
        Sketch::Real { data: &db, k: 0 },
        Sketch::Real {
            data: &db[..2],
            k: 0,
        },
    );
    let fast = search(&dbs, &qs, Measure::Cosine, 2, None).unwrap();
    assert_same(&fast, &naive(&dbs, &qs, Measure::Cosine, 2).unwrap(), "k=0");
    assert_eq!(fast[0].iter().map(|h| h.row).collect::<Vec<_>>(), [0, 1]);

    // Trailing values that do not fill a row are ignored.
    let (dbs, qs) = (
        Sketch::Real { data: &db, k: 2 },
        Sketch::Real { data: &db, k: 2 },
    );
    let fast = search(&dbs, &qs, Measure::Ip, 1, None).unwrap();
    assert_eq!(fast.len(), 1);
    assert_same(&fast, &naive(&dbs, &qs, Measure::Ip, 1).unwrap(), "ragged");
}

#[test]
fn progress_counts_up_to_the_number_of_queries() {
    let k = 8;
    let db = int_real(100, k, 41);
    let q = int_real(1234, k, 42);
    let (dbs, qs) = (Sketch::Real { data: &db, k }, Sketch::Real { data: &q, k });
    let seen = Mutex::new(Vec::new());
    let cb = |d: usize| seen.lock().unwrap().push(d);
    search(&dbs, &qs, Measure::Ip, 3, Some(&cb)).unwrap();
    let seen = seen.into_inner().unwrap();
    assert!(seen.len() > 1, "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert_eq!(*seen.last().unwrap(), 1234);

    let b = bits(50, 100, 43);
    let qb = bits(77, 100, 44);
    let (dbs, qs) = (
        Sketch::Bits { data: &b, k: 100 },
        Sketch::Bits { data: &qb, k: 100 },
    );
    let last = Mutex::new(0);
    let cb = |d: usize| *last.lock().unwrap() = d;
    search(&dbs, &qs, Measure::Hamming, 3, Some(&cb)).unwrap();
    assert_eq!(*last.lock().unwrap(), 77);
}

fn param_name(e: dprp::Error) -> String {
    let text = e.render(dprp::error::Front::Cli);
    match e {
        dprp::Error::Param { name, .. } => {
            let name = dprp::error::Front::Cli.render_name(&name);
            assert!(text.contains(&name), "{text}");
            name
        }
        other => panic!("expected a parameter error, got {other}"),
    }
}

#[test]
fn bad_requests_are_errors_naming_the_option() {
    let real = int_real(10, 4, 51);
    let real5 = int_real(10, 5, 52);
    let words = bits(10, 100, 53);
    let r = Sketch::Real { data: &real, k: 4 };
    let r5 = Sketch::Real { data: &real5, k: 5 };
    let b = Sketch::Bits {
        data: &words,
        k: 100,
    };
    let b70 = Sketch::Bits {
        data: &words,
        k: 70,
    };
    type Case<'a> = (Sketch<'a>, Sketch<'a>, Measure, usize, &'static str);
    let cases: [Case; 10] = [
        (r, r, Measure::Ip, 0, "--top"),
        (r, r, Measure::Ip, 11, "--top"),
        (b, b, Measure::Hamming, 0, "--top"),
        (b, b, Measure::Hamming, 11, "--top"),
        (r, r5, Measure::Ip, 1, "--queries"),
        (b, b70, Measure::Hamming, 1, "--queries"),
        (r, b, Measure::Ip, 1, "--queries"),
        (r, r, Measure::Hamming, 1, "--measure"),
        (b, b, Measure::Ip, 1, "--measure"),
        (b, b, Measure::Cosine, 1, "--measure"),
    ];
    for (db, q, m, top, name) in cases {
        let e = search(&db, &q, m, top, None).unwrap_err();
        assert_eq!(param_name(e), name, "{m:?} top={top}");
        let e = naive(&db, &q, m, top).unwrap_err();
        assert_eq!(param_name(e), name, "{m:?} top={top} (naive)");
    }
    // An empty database cannot give even one neighbour.
    let none: [f32; 0] = [];
    let e = search(
        &Sketch::Real { data: &none, k: 4 },
        &r,
        Measure::Ip,
        1,
        None,
    )
    .unwrap_err();
    assert_eq!(param_name(e), "--top");
}
