#!/usr/bin/env bash
# Publishing at scale (issue 14): 10^6 and 10^7 synthetic rows × 96 dims with the CLI (rows per
# second, peak memory with /usr/bin/time -v) and the Python module (overhead against the CLI,
# opening a 10^7-row release). See benches/large_publish.py.
#
#   bash benches/run-large-publish.sh [--sizes 1000000,10000000] [--reps 3]
#
# Needs about 7 GB free under target/large-publish (the 10^7-row input is 3.8 GB, a release
# 2.6 GB); the inputs are kept there between runs. Uses the test virtualenv that test.sh creates
# (target/test-venv, with numpy and the dprp module), else plain python3 with numpy (then the
# Python-module part is skipped).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${DPRP_PYTHON:-$ROOT/target/test-venv/bin/python}"
[[ -x "$PY" ]] || PY=python3
if ! "$PY" -c "import numpy" >/dev/null 2>&1; then
    echo "skipping: numpy not importable by $PY (run bash test.sh first, or set DPRP_PYTHON)"
    exit 0
fi
if [[ ! -x /usr/bin/time ]]; then
    echo "skipping: /usr/bin/time not found (Debian package 'time')"
    exit 0
fi
cargo build --release
exec "$PY" benches/large_publish.py --dprp "$ROOT/target/release/dprp" \
    --dir "$ROOT/target/large-publish" "$@"
