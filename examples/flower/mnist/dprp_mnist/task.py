"""The task shared by the server and client apps: MNIST from the project's data, a non-IID split
over 100 clients, multinomial logistic regression in numpy (d = 784·10 + 10 = 7850), local SGD
and the server's test-set evaluation, and the run configuration (which privacy arm, budget,
clip, ...)."""

from __future__ import annotations

import dataclasses
import functools
import gzip
import os
import pathlib
from typing import Any, Mapping, Optional

import numpy as np

FEATURES = 28 * 28
CLASSES = 10
DIM = FEATURES * CLASSES + CLASSES  # 7850

#: The privacy arms, in the order the benchmark reports them.
ARMS = (
    "none",
    "flower-central",
    "flower-localdp",
    "dprp-privunit2",
    "dprp-projunit-srht",
    "dprp-ddg16",
    "dprp-sketch-ddg-1bit",
    "dprp-sketch-ddg-2bit",
)
LOCAL_ARMS = ("flower-localdp", "dprp-privunit2", "dprp-projunit-srht")
DISTRIBUTED_ARMS = ("dprp-ddg16", "dprp-sketch-ddg-1bit", "dprp-sketch-ddg-2bit")

#: The run configuration's defaults: the same keys and values as pyproject.toml's
#: [tool.flwr.app.config] (the deployment engine reads those; the simulation script passes its
#: own over these).
DEFAULTS: dict[str, Any] = {
    "arm": "dprp-ddg16",
    "num-server-rounds": 30,
    "num-partitions": 100,
    "epsilon": 10.0,
    "delta": 1e-5,
    "clip": 1.0,
    "local-steps": 10,
    "batch-size": 32,
    "lr": 0.5,
    "dirichlet-alpha": 0.5,
    "partition-seed": 2024,
    "projunit-k": 256,
    "ddg-bits": 16,
    "sketch-bits": 0,
    "localdp-sensitivity": 0.0,
    "num-shares": 15,
    "reconstruction-threshold": 10,
    "data-dir": "",
    "meter-dir": "",
    "results-file": "",
}


@dataclasses.dataclass(frozen=True)
class Settings:
    """The run configuration, typed (keys as in DEFAULTS, with `-` → `_`)."""

    arm: str
    num_server_rounds: int
    num_partitions: int
    epsilon: float
    delta: float
    clip: float
    local_steps: int
    batch_size: int
    lr: float
    dirichlet_alpha: float
    partition_seed: int
    projunit_k: int
    ddg_bits: int
    sketch_bits: int  # 0: the b with the least planned error within the bits-per-parameter cap
    localdp_sensitivity: float  # 0: 2·clip, the ℓ₂ diameter of the clip ball (local DP's neighbours)
    num_shares: int
    reconstruction_threshold: int
    data_dir: str
    meter_dir: str

    def __post_init__(self) -> None:
        if self.arm not in ARMS:
            raise ValueError(f"arm: {self.arm!r} is not one of {', '.join(ARMS)}")

    @property
    def sensitivity(self) -> float:
        return self.localdp_sensitivity if self.localdp_sensitivity > 0 else 2.0 * self.clip


def settings(*configs: Optional[Mapping[str, Any]]) -> Settings:
    """DEFAULTS, then each mapping over it (a Flower run config, the script's flags)."""
    merged = dict(DEFAULTS)
    for c in configs:
        if c:
            merged.update({k: v for k, v in c.items() if k in DEFAULTS})
    typed = {}
    for f in dataclasses.fields(Settings):
        v = merged[f.name.replace("_", "-")]
        typed[f.name] = {"int": int, "float": float, "str": str}[f.type](v)
    return Settings(**typed)


# -- data ------------------------------------------------------------------------------------


def data_dir(configured: str = "") -> pathlib.Path:
    """The project's data directory: the run config's `data-dir`, else $DPRP_DATA (as
    data/README.md says), else the `data/` of the source tree this file lies in."""
    if configured:
        return pathlib.Path(configured)
    if os.environ.get("DPRP_DATA"):
        return pathlib.Path(os.environ["DPRP_DATA"])
    here = pathlib.Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "data" / "mnist").is_dir() and (parent / "Cargo.toml").is_file():
            return parent / "data"
    raise FileNotFoundError(
        f"MNIST: no data directory found above {here}; set DPRP_DATA to a directory holding "
        "mnist/ (laid out as the project's data/), or the run config's data-dir"
    )


def _idx(path: pathlib.Path, magic: int) -> np.ndarray:
    if not path.is_file():
        raise FileNotFoundError(f"MNIST: {path} is missing (the data ships with the project: see data/README.md)")
    with gzip.open(path, "rb") as f:
        raw = f.read()
    got = int.from_bytes(raw[:4], "big")
    if got != magic:
        raise ValueError(f"MNIST: {path} has magic number {got:#010x}, expected {magic:#010x}")
    count = int.from_bytes(raw[4:8], "big")
    if magic == 0x803:
        return np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(count, FEATURES)
    return np.frombuffer(raw, dtype=np.uint8, offset=8)


@functools.lru_cache(maxsize=2)
def mnist(directory: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(train images uint8 (60000, 784), train labels, test images (10000, 784), test labels),
    read once per process."""
    d = pathlib.Path(directory) / "mnist"
    return (
        _idx(d / "train-images-idx3-ubyte.gz", 0x803),
        _idx(d / "train-labels-idx1-ubyte.gz", 0x801),
        _idx(d / "t10k-images-idx3-ubyte.gz", 0x803),
        _idx(d / "t10k-labels-idx1-ubyte.gz", 0x801),
    )


@functools.lru_cache(maxsize=4)
def partitions(directory: str, clients: int, alpha: float, seed: int) -> tuple[np.ndarray, ...]:
    """The training set's indices split over `clients` by label with Dirichlet(α) proportions
    per class (Hsu et al. 2019), from a fixed seed: the same split in every process. Redrawn
    until every client holds at least 10 examples."""
    labels = mnist(directory)[1]
    rng = np.random.default_rng(seed)
    for _ in range(100):
        parts: list[list[np.ndarray]] = [[] for _ in range(clients)]
        for c in range(CLASSES):
            idx = rng.permutation(np.flatnonzero(labels == c))
            cuts = (np.cumsum(rng.dirichlet(np.full(clients, alpha))) * idx.size).astype(int)[:-1]
            for p, chunk in enumerate(np.split(idx, cuts)):
                parts[p].append(chunk)
        out = tuple(np.sort(np.concatenate(p)) for p in parts)
        if min(p.size for p in out) >= 10:
            return out
    raise RuntimeError("partitions: no split with ≥ 10 examples per client in 100 draws")


def client_data(s: Settings, partition: int) -> tuple[np.ndarray, np.ndarray]:
    """Client `partition`'s examples: features in [0, 1] (float32) and labels."""
    directory = str(data_dir(s.data_dir))
    x, y, _, _ = mnist(directory)
    idx = partitions(directory, s.num_partitions, s.dirichlet_alpha, s.partition_seed)[partition]
    return x[idx].astype(np.float32) / 255.0, y[idx]


def test_data(s: Settings) -> tuple[np.ndarray, np.ndarray]:
    _, _, x, y = mnist(str(data_dir(s.data_dir)))
    return x.astype(np.float32) / 255.0, y


# -- model -----------------------------------------------------------------------------------


def initial_weights() -> list[np.ndarray]:
    """[W (784, 10), b (10,)], zeros (float32, as a model travels in Flower)."""
    return [np.zeros((FEATURES, CLASSES), dtype=np.float32), np.zeros(CLASSES, dtype=np.float32)]


def _logits(weights, x):
    w, b = weights
    return x @ w + b


def loss_and_accuracy(weights, x, y) -> tuple[float, float]:
    z = _logits(weights, x)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-logp[np.arange(y.size), y].mean()), float((z.argmax(axis=1) == y).mean())


def train(weights, x, y, steps: int, batch_size: int, lr: float, rng: np.random.Generator) -> list[np.ndarray]:
    """`steps` steps of minibatch SGD on the softmax cross-entropy; the new weights (float64)."""
    w, b = (np.array(a, dtype=np.float64) for a in weights)
    for _ in range(steps):
        i = rng.choice(y.size, size=min(batch_size, y.size), replace=False)
        xb, yb = x[i], y[i]
        z = xb @ w + b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        p[np.arange(yb.size), yb] -= 1.0
        p /= yb.size
        w -= lr * (xb.T @ p)
        b -= lr * p.sum(axis=0)
    return [w, b]


def bits_per_parameter(s: Settings, message_len: Optional[int] = None, bits: Optional[int] = None) -> float:
    """Bits each client sends per model parameter, as the mechanism's message (not counting
    Flower's framing or SecAgg+'s keys and shares): float32 for the model and the local-DP
    messages, b bits per residue for the distributed arms."""
    if s.arm in DISTRIBUTED_ARMS:
        return bits * message_len / DIM
    if s.arm == "dprp-projunit-srht":
        return 32.0 * s.projunit_k / DIM
    return 32.0
