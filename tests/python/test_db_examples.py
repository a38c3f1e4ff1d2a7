"""The database examples run as a user runs them (examples/databases/): each publishes the
bundled sample, loads it (a throwaway PostgreSQL server / a temporary LanceDB directory), searches
raw queries and re-ranks, and prints what it found."""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(name):
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "databases" / name)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_pgvector_example():
    out = run("pgvector_search.py")
    assert "loaded 2000 rows into sample_sketches" in out
    assert re.search(r"SQL, query 0: \d+ \(", out), out
    assert len(re.findall(r"database((?: +\d+ [+-]\d\.\d{3}){5})", out)) == 5, out
    assert len(re.findall(r"re-ranked((?: +\d+ [+-]\d\.\d{3}±\d\.\d{3}){5})", out)) == 5, out


def test_lancedb_example():
    out = run("lancedb_search.py")
    assert out.count("exact search: top-10 shared with dprp query 100%") == 2, out
    assert out.count("recall@10") == 2 and out.count("re-ranked by the debiased") == 2, out
