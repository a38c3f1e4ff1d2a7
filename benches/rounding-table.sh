#!/usr/bin/env bash
# Issue 26's table: what the arithmetic and the lattice charge to the sensitivity of dense and
# OPORP releases, by input width. For each setting: `dprp publish FILE -m MECH -e E -d 1e-6 -k K
# --projection-seed 7` then `dprp info --json`, printing E, Δ₂ of the exact map, Δ_r/Δ₂ and σ
# (and, for 0.3.0 releases, σ against the textbook σ for Δ₂).
#
#   bash benches/rounding-table.sh [OTHER_DPRP]
#
# OTHER_DPRP (e.g. target/bench-base-target/release/dprp from benches/run-arith-peers.sh) is run on
# the same files for comparison. Data: MNIST/255 from data/ (or $DPRP_DATA) and uniform rows in
# [−1, 1] generated with numpy (seed 1) under target/bench-data.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DATA_ROOT="${DPRP_DATA:-$ROOT/data}"
VENV="$ROOT/target/peer-venv"
[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
"$VENV/bin/python" -c "import numpy" >/dev/null 2>&1 || "$VENV/bin/pip" install --quiet numpy
cargo build --release
NEW="$ROOT/target/release/dprp"
BINS=("$NEW")
[[ $# -ge 1 ]] && BINS+=("$1")
D="$ROOT/target/bench-data"
mkdir -p "$D"
[[ -f "$D/mnist-train.bin" ]] || "$NEW" convert "$DATA_ROOT/mnist/train-images-idx3-ubyte.gz" --scale 255 -o "$D/mnist-train.bin"
"$VENV/bin/python" - "$D" <<'PY'
import os, sys, numpy as np
d = sys.argv[1]
r = np.random.default_rng(1)
for n, p in [(2000, 1024), (10000, 4096), (200, 65536)]:
    f = os.path.join(d, f"uniform-{n}x{p}.npy")
    if not os.path.exists(f):
        np.save(f, r.uniform(-1, 1, size=(n, p)).astype(np.float32))
PY
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
row() { # label file eps k mech [extra...]
    local label=$1 f=$2 e=$3 k=$4 mech=$5
    shift 5
    for B in "${BINS[@]}"; do
        "$B" publish "$f" -m "$mech" -e "$e" -d 1e-6 -k "$k" --projection-seed 7 "$@" -o "$TMP/r.dprp" >/dev/null 2>&1
        "$B" info --json "$TMP/r.dprp" 2>/dev/null >"$TMP/i.json"
        "$VENV/bin/python" - "$label" "$TMP/i.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[2])); m = v["mechanism"]; l = m["noise"]; g = m["gaussian"]
a = m.get("arithmetic")
sens = a["sensitivity_exact"] if a else g["sensitivity"]
t = v.get("rounding_cost", {}).get("sigma_textbook")
extra = f"  textbook σ {t:.6f} ({(g['sigma'] / t - 1) * 100:+.3f}%)" if t else ""
print(f"{sys.argv[1]:34s} {v['tool']:11s} E = {l['fp_error']:.2e}  Δ₂ = {sens:.6f}  "
      f"Δ_r/Δ₂ = {l['sensitivity_r'] / sens:.6f}  σ = {g['sigma']:.6f}{extra}")
PY
    done
}
row "MNIST p=784, ε=50, k=256" "$D/mnist-train.bin" 50 256 dp-rp-g-opt
row "uniform p=1024, k=256" "$D/uniform-2000x1024.npy" 10 256 dp-rp-g-opt
row "uniform p=4096, k=256" "$D/uniform-10000x4096.npy" 10 256 dp-rp-g-opt
row "uniform p=4096, k=1024" "$D/uniform-10000x4096.npy" 10 1024 dp-rp-g-opt
row "uniform p=65536, k=64" "$D/uniform-200x65536.npy" 10 64 dp-rp-g-opt
row "uniform p=65536, k=256" "$D/uniform-200x65536.npy" 10 256 dp-rp-g-opt
row "gaussian map p=4096, k=256" "$D/uniform-10000x4096.npy" 10 256 dp-rp-g-opt --projection gaussian
row "sparse:3 map p=4096, k=256" "$D/uniform-10000x4096.npy" 10 256 dp-rp-g-opt --projection sparse:3
row "uniform map p=65536, k=64" "$D/uniform-200x65536.npy" 10 64 dp-rp-g-opt --projection uniform
row "oporp p=65536, k=64" "$D/uniform-200x65536.npy" 10 64 dp-oporp
row "oporp MNIST p=784, k=256" "$D/mnist-train.bin" 10 256 dp-oporp
