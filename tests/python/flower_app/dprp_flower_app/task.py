"""What the clients of this app learn: each adds a known update to the weights it receives, so
the server's decoded mean can be compared with the true mean of the clients' updates (the same
updates as tests/python/flower_apps.py)."""

from __future__ import annotations

import numpy as np

SHAPES = [(4, 5), (20,)]
DIM = 40


def initial_weights() -> list[np.ndarray]:
    return [np.zeros(s) for s in SHAPES]


def true_update(partition: int) -> np.ndarray:
    """Partition `partition`'s update: a direction common to all clients plus one of its own,
    norm 0.5."""
    common = np.random.default_rng(999).normal(size=DIM)
    own = np.random.default_rng(1000 + partition).normal(size=DIM)
    u = 2.0 * common / np.linalg.norm(common) + own / np.linalg.norm(own)
    return 0.5 * u / np.linalg.norm(u)
