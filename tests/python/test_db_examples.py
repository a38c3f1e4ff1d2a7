"""The database examples run as a user runs them (examples/databases/): each publishes 10 000
MNIST training images, loads them (a throwaway PostgreSQL server / a temporary LanceDB
directory), searches 200 held-out test images and re-ranks, and prints what it found. The checks
are the issue's (37 §7): on the held-out queries the exact top-10 through the database equals
`dprp query`'s, and the example's parameters show retrieval working — precision@10 against the
true top-10 far above chance (0.001; measured 0.51 for the database, 0.59 re-ranked; the
per-query precision's standard deviation was 0.17, so the 200-query mean has a standard error of
0.012 and 0.35 lies more than 10 of them below) and re-ranked cosines near the true ones. The
parameters the examples had before (ε = 8 with --normalize l2 on the bundled sample) gave
chance-level precision and re-ranked "cosines" of 2.6–3.2 against true cosines of 0.77: these
checks fail on them."""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(name):
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "databases" / name)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout


def number(pattern, out):
    m = re.search(pattern, out)
    assert m, f"{pattern!r} not in:\n{out}"
    return [float(g) for g in m.groups()]


def test_pgvector_example():
    out = run("pgvector_search.py")
    assert "loaded 10000 rows into mnist_sketches" in out
    assert re.search(r"SQL, query 0: \d+ \(", out), out
    assert "exact SQL top-10 = dprp query's top-10 for 100% of 200 held-out queries" in out, out
    (hnsw,) = number(r"HNSW \(ef_search 100\) recall@10 against the exact top-10: ([\d.]+)", out)
    assert hnsw >= 0.9, out
    db, reranked = number(r"database ([\d.]+), HNSW top-100 re-ranked ([\d.]+)", out)
    assert db >= 0.35 and reranked >= 0.35, out
    est, true, _ = number(r"re-ranked cosines: mean ([-\d.]+) \(true ([-\d.]+)\), (\d+)% "
                          r"within 2 standard errors", out)
    assert abs(est - true) < 0.2, out
    # The top-10 by the estimates is selected for its noise (the winner's curse), so the share
    # of it within 2 standard errors moves with the noise: 70-97 % in 22 runs on 2026-12-07
    # (75 % in a CI run): no level is checked there. The error bars are checked on the true
    # top-10, chosen without the noise. 2 000 pairs share one public map, whose draw moves them
    # together, so one release's share varies more than a binomial's: 86.9-97.8 % in 21 runs
    # (mean 95 %, sd 2.8). 75 % is 2.5 times the worst shortfall seen below the mean. Power:
    # standard errors half as large would give about 68 %.
    (cover_true,) = number(r"the true top-10's estimated cosines: ([\d.]+)% within 2 standard "
                           r"errors", out)
    assert cover_true >= 75, out
    d_db, d_rr, _ = number(r"top-10 of the query's digit: database (\d+)%, re-ranked (\d+)% "
                           r"\(the true top-10: (\d+)%\)", out)
    assert d_db >= 60 and d_rr >= 60, out
    assert len(re.findall(r"re-ranked((?:\s+\d+:\d [+-]\d\.\d{3}±\d\.\d{3}){5})", out)) == 3, out


def test_lancedb_example():
    out = run("lancedb_search.py")
    assert out.count("top-10 = dprp query's for 100% of 200 held-out queries") == 2, out
    raw, refined = number(r"IVF_HNSW_SQ recall@10: ([\d.]+) on its quantised distances, "
                          r"([\d.]+) with refine_factor=10", out)
    assert refined >= 0.95, out
    (flat,) = number(r"IVF_FLAT recall@10 \(nprobes 20\): ([\d.]+)", out)
    assert flat >= 0.8, out
    db, reranked = number(r"noisy sketches ([\d.]+), its top-100 re-ranked by dprp's debiased "
                          r"cosine ([\d.]+)", out)
    assert db >= 0.35 and reranked >= 0.35, out
    (signs,) = number(r"exact Hamming ([\d.]+)", out)
    assert signs >= 0.2, out
