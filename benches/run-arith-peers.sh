#!/usr/bin/env bash
# Issue 26's publish benchmark (benches/peer_arith.py): this checkout against an earlier dprp
# build with the f32 projection path, and against numpy, on MNIST and on uniform rows of p = 4096.
#
#   bash benches/run-arith-peers.sh [BASE_REV] [--reps N]
#
# BASE_REV (default 61c6dff, the last commit before the proven arithmetic) is built in a git
# worktree under target/bench-base. MNIST comes from <repo>/data (or $DPRP_DATA); the uniform
# rows (10000 × 4096, float32 .npy, fixed seed) are generated under target/bench-data.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BASE="${1:-61c6dff}"
shift || true

DATA_ROOT="${DPRP_DATA:-$ROOT/data}"
MNIST="$DATA_ROOT/mnist/train-images-idx3-ubyte.gz"
if [[ ! -f "$MNIST" ]]; then
    echo "skipping: MNIST not found at $MNIST (set DPRP_DATA to a directory holding mnist/)"
    exit 0
fi
VENV="$ROOT/target/peer-venv"
[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
"$VENV/bin/python" -c "import numpy" >/dev/null 2>&1 || "$VENV/bin/pip" install --quiet numpy

cargo build --release
WT="$ROOT/target/bench-base"
if [[ ! -d "$WT" ]]; then
    git worktree add --detach "$WT" "$BASE"
else
    git -C "$WT" checkout --quiet --detach "$BASE"
fi
(cd "$WT" && CARGO_TARGET_DIR="$ROOT/target/bench-base-target" cargo build --release --bin dprp)
OLD="$ROOT/target/bench-base-target/release/dprp"
NEW="$ROOT/target/release/dprp"

DATA_DIR="$ROOT/target/bench-data"
mkdir -p "$DATA_DIR"
[[ -f "$DATA_DIR/mnist-train.bin" ]] || "$NEW" convert "$MNIST" --scale 255 -o "$DATA_DIR/mnist-train.bin"
UNI="$DATA_DIR/uniform-10000x4096.npy"
[[ -f "$UNI" ]] || "$VENV/bin/python" -c "
import numpy as np
np.save('$UNI', np.random.default_rng(1).uniform(-1, 1, size=(10000, 4096)).astype(np.float32))"

exec "$VENV/bin/python" "$ROOT/benches/peer_arith.py" "$NEW" "$OLD" "$DATA_DIR/mnist-train.bin" "$UNI" "$@"
