#!/usr/bin/env bash
# Peer benchmark of the HNSW index (issue 39 §1): `dprp index` / `dprp query --index` against
# hnswlib and faiss (IndexHNSWFlat, IndexBinaryHNSW) on the same noisy sketches, same M and
# ef_construction, all cores. Prints build time, peak memory, recall@10 against the exact top-10
# and query time at equal recall, as ratios (see benches/peer_index.py for what is timed).
#
#   bash benches/run-index-peers.sh [--rows N] [--synthetic N] [--queries N] [--k K]
#                                   [--epsilon E] [--m M] [--efc EFC] [--reps R] [--kinds real sign]
#
# MNIST is taken from <repo>/data/mnist/{train,t10k}-images-idx3-ubyte.gz, or $DPRP_DATA/mnist
# if DPRP_DATA is set; `--synthetic N` uses N generated clustered rows instead (no data needed).
# Creates a virtualenv with numpy, hnswlib and faiss-cpu under target/peer-venv, builds dprp
# (release), and works in target/index-peers (results.json there).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SYNTH=0
for a in "$@"; do
    [[ "$a" == "--synthetic" ]] && SYNTH=1
done
DATA_ROOT="${DPRP_DATA:-$ROOT/data}"
if [[ $SYNTH == 0 ]]; then
    for f in train-images-idx3-ubyte.gz t10k-images-idx3-ubyte.gz; do
        if [[ ! -f "$DATA_ROOT/mnist/$f" ]]; then
            echo "skipping: MNIST not found at $DATA_ROOT/mnist/$f (set DPRP_DATA, or use --synthetic N)"
            exit 0
        fi
    done
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "skipping: python3 not found"
    exit 0
fi

VENV="$ROOT/target/peer-venv"
if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import numpy, hnswlib, faiss" >/dev/null 2>&1; then
    "$VENV/bin/pip" install --quiet numpy hnswlib faiss-cpu
fi

cargo build --release --quiet --bin dprp
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
WORK="$TARGET/index-peers"
mkdir -p "$WORK"
echo "machine: $(nproc) cores; $(uptime)"
exec "$VENV/bin/python" "$ROOT/benches/peer_index.py" run --dprp "$TARGET/release/dprp" \
    --work "$WORK" --mnist "$DATA_ROOT/mnist" "$@"
