"""Comparing top-k lists up to ties, for the database tests (test_postgres, test_lancedb)."""

import numpy as np


def assert_same_top(got_ids, got_scores, want_ids, want_scores, tol):
    """Same top lists up to ties: the scores agree rank by rank (within tol), and every id that
    one side scores clearly above the k-th score is in the other side's list."""
    assert got_ids.shape == want_ids.shape and got_scores.shape == want_scores.shape
    np.testing.assert_allclose(got_scores, want_scores, rtol=0, atol=tol)
    for q in range(len(got_ids)):
        kth = want_scores[q, -1]
        for a, sa, b in ((got_ids[q], got_scores[q], want_ids[q]),
                         (want_ids[q], want_scores[q], got_ids[q])):
            sure = set(a[sa > kth + tol].tolist())
            assert sure <= set(b.tolist()), (q, sure - set(b.tolist()))


def recall(found_ids, found_scores, truth_ids, truth_scores, tol):
    """Fraction of the true top found, counting a found row scored as the k-th as correct."""
    good = [min(len(t), sum(1 for i, s in zip(f, fs) if i in set(t.tolist())
                            or s >= ts[-1] - tol))
            for f, fs, t, ts in zip(found_ids, found_scores, truth_ids, truth_scores)]
    return np.sum(good) / truth_ids.size
