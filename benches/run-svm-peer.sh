#!/usr/bin/env bash
# Peer benchmark: dprp's linear SVM (src/learn/svm/, via examples/svm_train.rs) vs
# scikit-learn's LinearSVC (bundled liblinear, dual=True) on the same data in the same run.
#
#   bash benches/run-svm-peer.sh [--help] [options for benches/peer_svm.py]
#
# (a) raw LIBSVM a9a and ijcnn1 (train file → test file), C = 1;
# (b) MNIST sketches: `dprp publish -m dp-rp-g-opt --epsilon 10 --k 1024` of MNIST/255 with a fixed
#     projection seed and fixed noise seeds (reproducible, NOT private), train 60000 × 1024 →
#     test 10000 × 1024, one-vs-rest over 10 classes, C = 1. The payloads are exported once to
#     .npy and both tools read the identical arrays.
# Prints training time (fit only, data loading excluded), the ratio dprp/sklearn, epochs and
# accuracy for both tools, and the versions.
#
# Data: <repo>/data (or $DPRP_DATA if set) with libsvm/ and mnist/; a part whose files are
# missing is skipped with the reason. Creates a virtualenv with numpy and scikit-learn
# under target/peer-venv (shared with the other peer scripts) and builds dprp and the example in
# release mode. Work files go to target/svm-peer/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

for a in "$@"; do
    if [[ "$a" == "-h" || "$a" == "--help" ]]; then
        sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        echo
        echo "Options (passed to benches/peer_svm.py):"
        echo "  --skip-libsvm        do not run part (a)"
        echo "  --skip-mnist         do not run part (b) (the slow part: sklearn takes minutes)"
        echo "  --reps N             timed repetitions per tool for part (a) (median; default 3)"
        echo "  --c C                penalty (default 1)"
        echo "  --tol T              stopping tolerance for both tools (default 1e-4)"
        echo "  --max-iter N         epochs per binary problem for both tools (default 1000)"
        echo "  --loss L             squared_hinge (default) or hinge"
        echo "  --threads N          dprp worker threads (default: all cores; sklearn is single-threaded)"
        echo "  --epsilon E, --k K   sketch parameters for part (b) (default 10, 1024)"
        echo "  --mnist-rows N       train on the first N MNIST rows only (default: all 60000)"
        echo "  --json FILE          also write the results as JSON"
        exit 0
    fi
done

DATA_ROOT="${DPRP_DATA:-$ROOT/data}"
if [[ ! -d "$DATA_ROOT" ]]; then
    echo "skipping: no data directory at $DATA_ROOT (set DPRP_DATA to a directory holding mnist/ and libsvm/)"
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
if ! "$VENV/bin/python" -c "import numpy, sklearn" >/dev/null 2>&1; then
    "$VENV/bin/pip" install --quiet numpy scikit-learn
fi

cargo build --release --bin dprp --example svm_train
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

exec "$VENV/bin/python" "$ROOT/benches/peer_svm.py" \
    --dprp "$TARGET/release/dprp" --svm-train "$TARGET/release/examples/svm_train" \
    --data "$DATA_ROOT" --work "$TARGET/svm-peer" "$@"
