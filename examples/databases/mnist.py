"""MNIST for the database examples: the project's own copy (data/mnist, or $DPRP_DATA/mnist), read
from its IDX files — pixels / 255, so every value is in [0, 1] as a release's rows must be — and
the ground truth the examples compare with: each query's ten nearest training images by the
cosine of the raw pixels."""

import gzip
import os
import pathlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(os.environ.get("DPRP_DATA", ROOT / "data")) / "mnist"


def _idx(name):
    with gzip.open(DATA / name, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def images(split, rows):
    """The first `rows` images of `split` ("train" or "t10k") as float32 rows of 784 values in
    [0, 1], and their digit labels."""
    x = _idx(f"{split}-images-idx3-ubyte.gz")[:rows].reshape(-1, 784)
    y = _idx(f"{split}-labels-idx1-ubyte.gz")[:rows]
    return (x.astype(np.float32) / np.float32(255)), y.astype(np.int64)


def true_top(db, queries, top=10):
    """Each query's `top` nearest rows of `db` by the cosine of the raw vectors, best first."""
    def unit(a):
        a = np.asarray(a, dtype=np.float64)
        return a / np.linalg.norm(a, axis=1, keepdims=True)
    return np.argsort(-(unit(queries) @ unit(db).T), axis=1, kind="stable")[:, :top]


def precision(found, truth):
    """Mean |found ∩ truth| / |truth| over the queries."""
    return float(np.mean([len(set(np.asarray(f).astype(np.int64).tolist())
                                & set(t.tolist())) / truth.shape[1]
                          for f, t in zip(found, truth)]))


def cosines(db, queries, ids):
    """The true cosines of the rows `ids` (queries × top) with their queries."""
    def unit(a):
        a = np.asarray(a, dtype=np.float64)
        return a / np.linalg.norm(a, axis=1, keepdims=True)
    return np.einsum("qtd,qd->qt", unit(db)[np.asarray(ids).astype(np.int64)], unit(queries))
