//! The HNSW index reader on arbitrary bytes, against two fixed releases (real sketches and sign
//! sketches, `fuzz/fixtures/`). An index is bound to its release by the payload hash at bytes
//! 104..136 and protected by a checksum at 136..168; so that the fuzzer reaches the graph
//! section, the target writes the fixture's row count and k (bytes 16..32), its payload hash and
//! the right checksum into every input of at least the 168-byte header (the mismatch paths are
//! covered by the unit tests). A loaded index is then searched with the first rows as queries:
//! `load` promises that no graph it accepts makes a search index out of bounds.
#![no_main]

use std::sync::OnceLock;

use dprp::release::Release;
use dprp::search::hnsw::HnswIndex;
use dprp::search::{Measure, Sketch};
use libfuzzer_sys::fuzz_target;

const HEADER_LEN: usize = 168;

struct Fixtures {
    real: Release,
    bits: Release,
}

fn fixtures() -> &'static Fixtures {
    static F: OnceLock<Fixtures> = OnceLock::new();
    F.get_or_init(|| {
        let open = |name: &str, bytes: &[u8]| {
            let path = dprp_fuzz::write(name, bytes);
            Release::open(&path).expect("the fixture release opens")
        };
        Fixtures {
            real: open("real.release", include_bytes!("../fixtures/real.release")),
            bits: open("bits.release", include_bytes!("../fixtures/bits.release")),
        }
    })
}

fn payload_hash(bytes: &[u8]) -> [u8; 32] {
    *blake3::hash(bytes).as_bytes()
}

fuzz_target!(|data: &[u8]| {
    let f = fixtures();
    let mut bytes = data.to_vec();
    let bits = bytes.len() >= 16 && u32::from_le_bytes(bytes[12..16].try_into().unwrap()) == 2;
    let db = if bits {
        Sketch::Bits {
            data: f.bits.bits().unwrap(),
            k: f.bits.k(),
        }
    } else {
        Sketch::Real {
            data: f.real.values().unwrap(),
            k: f.real.k(),
        }
    };
    if bytes.len() >= HEADER_LEN {
        bytes[16..24].copy_from_slice(&(db.rows() as u64).to_le_bytes());
        bytes[24..32].copy_from_slice(&(db.k() as u64).to_le_bytes());
        let payload: Vec<u8> = match db {
            Sketch::Real { data, .. } => data.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Sketch::Bits { data, .. } => data.iter().flat_map(|x| x.to_le_bytes()).collect(),
        };
        bytes[104..136].copy_from_slice(&payload_hash(&payload));
        let mut h = blake3::Hasher::new();
        h.update(&bytes[..136]);
        h.update(&bytes[HEADER_LEN..]);
        let sum = *h.finalize().as_bytes();
        bytes[136..168].copy_from_slice(&sum);
    }
    let path = dprp_fuzz::write("input.hnsw", &bytes);
    let Ok((index, _header)) = HnswIndex::load(&path, &db) else {
        return;
    };
    let queries = db.rows_range(0, 4);
    let top = 3.min(db.rows());
    let hits = index
        .search(&queries, top, 8, None)
        .expect("a search of a loaded index with valid queries");
    assert_eq!(hits.len(), queries.rows());
    for h in &hits {
        assert_eq!(h.len(), top);
        assert!(h.iter().all(|x| x.row < db.rows()));
    }
    let _ = index.measure() == Measure::Hamming;
});
