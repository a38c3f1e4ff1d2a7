#!/usr/bin/env bash
# Private federated learning on MNIST in Flower: every privacy arm (Flower's central and local
# DP, dprp's PrivUnit2, ProjUnit, DDG and count sketch + DDG under SecAgg+, no privacy) over the
# same 100 non-IID clients, rounds and budget (see benches/flower_compare.py), then the costs
# (benches/flower_costs.py: encoding, decoding and bytes per client).
#
#   bash benches/run-flower-compare.sh [--rounds 30] [--epsilon 10] [--delta 1e-5] [--local-epsilon 300]
#
# Creates a virtualenv under target/flower-venv with flwr[simulation] 1.42, matplotlib and
# maturin, builds dprp into it (maturin develop --release) and writes target/flower-compare/
# (table.md, accuracy.csv, accuracy.svg, results.json, costs.md). Arguments go to
# flower_compare.py. The run takes about 20-25 minutes on 2 cores at the defaults (3 of the
# arms run SecAgg+ among 100 simulated clients every round). FLOWER_COSTS_ONLY=1 skips the
# comparison and measures the costs only.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if ! command -v python3 >/dev/null 2>&1; then
    echo "skipping: python3 not found"
    exit 0
fi

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="$TARGET/flower-venv"
if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
REQS="$(mktemp)"
trap 'rm -f "$REQS"' EXIT
cat >"$REQS" <<'REQ'
flwr[simulation]>=1.42,<1.43
numpy>=1.24
matplotlib>=3.7
maturin>=1.9,<2
REQ
if ! "$VENV/bin/python" -c "import flwr, ray, numpy, matplotlib, maturin" >/dev/null 2>&1; then
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQS"
fi
VIRTUAL_ENV="$VENV" PYO3_PYTHON="$VENV/bin/python" "$VENV/bin/maturin" develop --release --quiet

OUT="$TARGET/flower-compare"
mkdir -p "$OUT"
if [[ "${FLOWER_COSTS_ONLY:-0}" != 1 ]]; then
    "$VENV/bin/python" "$ROOT/benches/flower_compare.py" --out "$OUT" "$@"
fi
"$VENV/bin/python" "$ROOT/benches/flower_costs.py" --out "$OUT"
