#!/usr/bin/env bash
# Issue 39 §2: dense publishing against its own noiseless projection and against numpy, for
# p = 384, 768, 1536, 4096 (uniform rows in [−1, 1], generated here) and MNIST (p = 784), at
# k = 256 and 1024 (benches/peer_publish.py says what is timed).
#
#   bash benches/run-publish-peers.sh [--reps N] [--only P] [--no-variants]
#
# Creates a virtualenv with numpy under target/peer-venv (shared with the other peer scripts),
# builds dprp in release mode, converts MNIST (<repo>/data/mnist, or $DPRP_DATA/mnist) once to
# target/bench-data/mnist-train.bin and writes the uniform rows (20000 × p float32 .npy, fixed
# seed) under target/bench-data. Extra arguments go to peer_publish.py.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

DATA_ROOT="${DPRP_DATA:-$ROOT/data}"
MNIST="$DATA_ROOT/mnist/train-images-idx3-ubyte.gz"
if [[ ! -f "$MNIST" ]]; then
    echo "skipping: MNIST not found at $MNIST (set DPRP_DATA to a directory holding mnist/)"
    exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "skipping: python3 not found"
    exit 0
fi
VENV="$ROOT/target/peer-venv"
[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
"$VENV/bin/python" -c "import numpy" >/dev/null 2>&1 || "$VENV/bin/pip" install --quiet numpy

cargo build --release --bin dprp
DPRP="$ROOT/target/release/dprp"

DATA_DIR="$ROOT/target/bench-data"
mkdir -p "$DATA_DIR"
[[ -f "$DATA_DIR/mnist-train.bin" ]] || "$DPRP" convert "$MNIST" --scale 255 -o "$DATA_DIR/mnist-train.bin"
for P in 384 768 1536 4096; do
    F="$DATA_DIR/uniform-20000x$P.npy"
    [[ -f "$F" ]] || "$VENV/bin/python" -c "
import numpy as np
np.save('$F', np.random.default_rng(1).uniform(-1, 1, size=(20000, $P)).astype(np.float32))"
done

echo "uptime: $(uptime)"
"$VENV/bin/python" "$ROOT/benches/peer_publish.py" "$DPRP" "$DATA_DIR" "$@"
echo "uptime: $(uptime)"
