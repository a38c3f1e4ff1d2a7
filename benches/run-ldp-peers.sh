#!/usr/bin/env bash
# Peer benchmark for the local-DP mechanisms: dprp (examples/ldp_peer.rs) against the authors'
# Python code on the same vectors (see benches/peer_ldp.py for what is timed and compared).
#
#   DPRP_PEER_PFL=/path/to/pfl-research DPRP_PEER_PROJUNIT=/path/to/ml-projunit \
#       bash benches/run-ldp-peers.sh [--reps N] [--only privunitg] [--epsilon 4]
#
# Obtaining the peers (their code is used in place, never copied into dprp):
#   git clone https://github.com/apple/ml-projunit                      # DPRP_PEER_PROJUNIT
#   git clone https://github.com/apple/pfl-research \
#       && git -C pfl-research checkout 291a968^                        # DPRP_PEER_PFL
# (pfl-research removed PrivUnit in commit 291a968, February 2024; no PyPI release of pfl has it.)
# A peer whose variable is unset is skipped with a message; with neither, or without python3, the
# script says why and exits 0. Creates a virtualenv with numpy and scipy under target/peer-venv
# and writes the synthetic vectors to target/bench-data/ldp-*.npy. Other arguments go to
# peer_ldp.py.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [[ -z "${DPRP_PEER_PFL:-}" && -z "${DPRP_PEER_PROJUNIT:-}" ]]; then
    echo "skipping: no peer checkout given. Set DPRP_PEER_PROJUNIT to a clone of"
    echo "  https://github.com/apple/ml-projunit"
    echo "and/or DPRP_PEER_PFL to a clone of https://github.com/apple/pfl-research checked out at"
    echo "  291a968^ (git -C pfl-research checkout 291a968^: PrivUnit was removed in 291a968)."
    exit 0
fi
for var in DPRP_PEER_PFL DPRP_PEER_PROJUNIT; do
    dir="${!var:-}"
    if [[ -n "$dir" && ! -d "$dir" ]]; then
        echo "skipping: $var=$dir is not a directory"
        exit 0
    fi
done
if [[ -n "${DPRP_PEER_PFL:-}" && ! -f "$DPRP_PEER_PFL/pfl/internal/priv_unit_functions.py" ]]; then
    echo "note: $DPRP_PEER_PFL has no pfl/internal/priv_unit_functions.py; check out 291a968^"
    echo "      (git -C \"$DPRP_PEER_PFL\" checkout 291a968^). Skipping the pfl peer."
    unset DPRP_PEER_PFL
fi
if [[ -n "${DPRP_PEER_PROJUNIT:-}" && ! -f "$DPRP_PEER_PROJUNIT/PrivUnitAlgs.py" ]]; then
    echo "note: $DPRP_PEER_PROJUNIT has no PrivUnitAlgs.py. Skipping the ml-projunit peer."
    unset DPRP_PEER_PROJUNIT
fi
if [[ -z "${DPRP_PEER_PFL:-}" && -z "${DPRP_PEER_PROJUNIT:-}" ]]; then
    echo "skipping: no usable peer checkout"
    exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "skipping: python3 not found"
    exit 0
fi

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="$TARGET/peer-venv"
if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import numpy, scipy" >/dev/null 2>&1; then
    "$VENV/bin/pip" install --quiet numpy scipy
fi

cargo build --release --example ldp_peer
exec "$VENV/bin/python" "$ROOT/benches/peer_ldp.py" "$TARGET/release/examples/ldp_peer" \
    --data-dir "$TARGET/bench-data" "$@"
