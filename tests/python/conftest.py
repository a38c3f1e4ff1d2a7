"""Shared fixtures of the Python module's tests (run by test.sh after `cargo test`)."""

import os
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def dprp_bin() -> str:
    """The dprp command built by `cargo test --release` / `cargo build --release` (DPRP_BIN
    overrides). Missing is a failure, not a skip: test.sh builds it before pytest runs."""
    path = os.environ.get("DPRP_BIN", str(ROOT / "target" / "release" / "dprp"))
    assert os.path.exists(path), f"{path} missing: run `cargo build --release` first"
    return path


def run_cli(*args: str) -> str:
    out = subprocess.run([dprp_bin(), *args], capture_output=True, text=True)
    assert out.returncode == 0, f"dprp {' '.join(args)} failed: {out.stderr}"
    return out.stdout


@pytest.fixture(scope="session")
def data() -> np.ndarray:
    """600 rows × 48 features in [0, 1], C-ordered float32, from a fixed seed."""
    rng = np.random.default_rng(20261123)
    return rng.random((600, 48), dtype=np.float32)


def _xdist_group(path: pathlib.Path) -> str:
    """Which tests run one after another when test.sh runs pytest on two workers (pytest-xdist,
    `--dist loadgroup`): one test file at a time per worker (its module fixtures, e.g. a
    PostgreSQL server, start once), and every Flower simulation file in one group, so that two
    Ray clusters never start side by side."""
    name = path.name
    if name.startswith("test_flower") and name != "test_flower_deployment.py":
        return "flower-simulation"
    return name


# The longest groups first (each 2–5 min of test.sh's run; the rest are seconds each), so that
# the two workers finish together: with `--no-loadscope-reorder` (test.sh) xdist hands out the
# groups in this order, the next to the first worker free. By default it would order them by
# their number of tests, which put the one-test Spark cluster group last, alone on one worker.
LONGEST_FIRST = ["test_flower_deployment.py", "flower-simulation", "test_spark.py", "test_spark_cluster.py"]


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_xdist_group(item.path)))

    def rank(item) -> int:
        group = _xdist_group(item.path)
        return LONGEST_FIRST.index(group) if group in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each file keeps its order
