#!/usr/bin/env bash
# Peer benchmark: dprp's exact top-10 search vs faiss IndexFlatIP / IndexBinaryFlat on MNIST
# sketches at k = 1024 (see benches/search.rs and benches/peer_faiss.py).
#
#   bash benches/run-search-peers.sh [--rerun] [--reps N] [--threads N]
#
# MNIST is taken from <repo>/data/mnist/{train,t10k}-images-idx3-ubyte.gz, or $DPRP_DATA/mnist/...
# if DPRP_DATA is set; without it the script prints why it skipped and exits 0.
# Creates a virtualenv with numpy and faiss-cpu under target/peer-venv. Exports the sketches with
# `cargo bench --bench search -- --export-only` when target/bench-data/search-* are missing, and
# runs the criterion benchmark (which times dprp and re-exports) when its estimates are missing
# or --rerun is given. Other arguments go to peer_faiss.py.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

RERUN=0
ARGS=()
for a in "$@"; do
    if [[ "$a" == "--rerun" ]]; then RERUN=1; else ARGS+=("$a"); fi
done

DATA_ROOT="${DPRP_DATA:-$ROOT/data}"
for f in train-images-idx3-ubyte.gz t10k-images-idx3-ubyte.gz; do
    if [[ ! -f "$DATA_ROOT/mnist/$f" ]]; then
        echo "skipping: MNIST not found at $DATA_ROOT/mnist/$f (set DPRP_DATA to a directory holding mnist/ and libsvm/)"
        exit 0
    fi
done
if ! command -v python3 >/dev/null 2>&1; then
    echo "skipping: python3 not found"
    exit 0
fi

VENV="$ROOT/target/peer-venv"
if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import numpy, faiss" >/dev/null 2>&1; then
    "$VENV/bin/pip" install --quiet numpy faiss-cpu
fi

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
DATA="$TARGET/bench-data"
CRIT="$TARGET/criterion/search"
missing=0
for f in real-db real-q bits-db bits-q real-top10 bits-top10; do
    [[ -f "$DATA/search-$f.bin" ]] || missing=1
done
[[ -f "$DATA/search-meta.json" ]] || missing=1

if [[ $RERUN == 1 || ! -f "$CRIT/exact-ip/k1024-top10/new/estimates.json" \
      || ! -f "$CRIT/exact-hamming/k1024-top10/new/estimates.json" ]]; then
    # times dprp and (re-)exports the data
    cargo bench --bench search
elif [[ $missing == 1 ]]; then
    cargo bench --bench search -- --export-only
fi

exec "$VENV/bin/python" "$ROOT/benches/peer_faiss.py" --data-dir "$DATA" \
    --criterion-dir "$TARGET/criterion" "${ARGS[@]+"${ARGS[@]}"}"
