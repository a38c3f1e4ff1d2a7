#!/usr/bin/env bash
# The project's one test command (the README's; .ci/run runs it): formatting, lints and every
# test. Python packages the tests use (numpy, for the README's numpy reader) are installed into a
# virtual environment this script creates under target/test-venv, and the tests find that Python
# through DPRP_PYTHON — no test is skipped for want of a package.
set -euo pipefail
cd "$(dirname "$0")"

VENV=target/test-venv
if ! "$VENV/bin/python" -c "import numpy" >/dev/null 2>&1; then
    echo "test.sh: creating $VENV with the packages in tests/requirements.txt"
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt
fi
export DPRP_PYTHON="$PWD/$VENV/bin/python"

cargo fmt --all -- --check
cargo clippy --all-targets --release -- -D warnings
cargo test --release
