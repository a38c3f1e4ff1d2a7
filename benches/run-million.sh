#!/usr/bin/env bash
# One million rows end to end (benches/million.py): synthetic clustered 1 000 000 × 768 float32
# rows as .npy and Parquet → dprp publish (dp-oporp, dp-rp-g-opt, k = 256) → dprp index →
# 10 000 raw queries (index and exact) → LanceDB, with numpy + hnswlib doing the same job beside
# it; wall, CPU, peak RSS and rows/s of every step, and the ratios.
#
#   bash benches/run-million.sh [--rows N] [--dim P] [--k K] [--queries Q] [--keep] ...
#
# Needs about 3.1 GB for the .npy at the default size, as much again for the Parquet file, and
# 1 GB per release, under target/million (removed afterwards unless --keep). Builds dprp
# (release), and makes a virtualenv under target/million-venv with numpy, pyarrow, hnswlib,
# lancedb and dprp's Python module (maturin). Arguments go to million.py.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

VENV="$ROOT/target/million-venv"
[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
if ! "$VENV/bin/python" -c "import numpy, pyarrow, hnswlib, lancedb, maturin" >/dev/null 2>&1; then
    "$VENV/bin/pip" install --quiet --disable-pip-version-check numpy pyarrow hnswlib "lancedb>=0.40,<0.41" "maturin>=1.9,<2"
fi
cargo build --release --quiet --bin dprp
PYO3_PYTHON="$VENV/bin/python" VIRTUAL_ENV="$VENV" "$VENV/bin/maturin" develop --release --quiet
exec "$VENV/bin/python" "$ROOT/benches/million.py" --dprp "${CARGO_TARGET_DIR:-$ROOT/target}/release/dprp" "$@"
