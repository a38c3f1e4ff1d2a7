#!/usr/bin/env bash
# Peer benchmark: dprp publish vs the same job in numpy, on MNIST (see benches/peer_numpy.py).
#
#   bash benches/run-peers.sh [--reps N]
#
# MNIST is taken from <repo>/data/mnist/train-images-idx3-ubyte.gz, or $DPRP_DATA/mnist/... if
# DPRP_DATA is set; without it the script prints why it skipped and exits 0.
# Creates a virtualenv with numpy under target/peer-venv, builds dprp in release mode and
# converts MNIST once to target/bench-data/mnist-train.bin. Extra arguments go to peer_numpy.py.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

DATA_ROOT="${DPRP_DATA:-$ROOT/data}"
MNIST="$DATA_ROOT/mnist/train-images-idx3-ubyte.gz"
if [[ ! -f "$MNIST" ]]; then
    echo "skipping: MNIST not found at $MNIST (set DPRP_DATA to a directory holding mnist/ and libsvm/)"
    exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "skipping: python3 not found"
    exit 0
fi

VENV="$ROOT/target/peer-venv"
if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import numpy" >/dev/null 2>&1; then
    "$VENV/bin/pip" install --quiet numpy
fi

cargo build --release
DPRP="$ROOT/target/release/dprp"

DATA_DIR="$ROOT/target/bench-data"
DATASET="$DATA_DIR/mnist-train.bin"
if [[ ! -f "$DATASET" ]]; then
    mkdir -p "$DATA_DIR"
    "$DPRP" convert "$MNIST" --scale 255 -o "$DATASET"
fi

exec "$VENV/bin/python" "$ROOT/benches/peer_numpy.py" "$DPRP" "$DATASET" --mnist-gz "$MNIST" "$@"
