#!/usr/bin/env bash
# Peer benchmark for the exact discrete Gaussian: dprp (examples/exact_peer.rs) against OpenDP's
# exact discrete Gaussian (PyPI `opendp`) in the same run; see benches/peer_opendp.py for what is
# timed.
#
#   bash benches/run-exact-peers.sh [--reps N] [--n 1000000] [--peer-n 20000] [--sigma 10,100]
#
# Creates a virtualenv under target/exact-peer-venv and installs opendp into it from PyPI. Without
# python3, or when opendp cannot be installed (offline), the script says why and exits 0.
# Arguments go to peer_opendp.py.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if ! command -v python3 >/dev/null 2>&1; then
    echo "skipping: python3 not found"
    exit 0
fi

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="$TARGET/exact-peer-venv"
if [[ ! -x "$VENV/bin/python" ]]; then
    if ! python3 -m venv "$VENV"; then
        echo "skipping: could not create a virtualenv at $VENV (python3-venv missing?)"
        exit 0
    fi
fi
if ! "$VENV/bin/python" -c "import opendp" >/dev/null 2>&1; then
    if ! "$VENV/bin/pip" install --quiet opendp; then
        echo "skipping: could not install opendp from PyPI (offline?)"
        exit 0
    fi
fi

cargo build --release --example exact_peer
exec "$VENV/bin/python" "$ROOT/benches/peer_opendp.py" "$TARGET/release/examples/exact_peer" "$@"
