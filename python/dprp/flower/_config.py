"""The public configuration of a private Flower run, shared by the server strategy and the client
mods: what is planned, how it travels in Flower's config records, and its fingerprint (a
client or a message of another configuration is refused by it)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import secrets
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .. import DistributedEncoder, DprpError, RoundsAccountant

PREFIX = "dprp."

#: Flower's SecAgg+ sums modulo at most 2^32 (its `modulus_range`).
FLOWER_MODULUS_BITS = 32


def _check(cond: bool, name: str, why: str) -> None:
    if not cond:
        raise DprpError(f"{name}: {why}")


def _integer(obj, name: str, minimum: int, optional: bool = False) -> None:
    """Make field `name` of a frozen configuration an int: an integral float (5.0, as TOML run
    configs or arithmetic give) is taken as that integer; anything else that is not an integer
    ≥ `minimum` is refused, saying which."""
    v = getattr(obj, name)
    if v is None and optional:
        return
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise DprpError(f"{name}: must be an integer, got {v!r}")
    if isinstance(v, (float, np.floating)):
        if not (math.isfinite(v) and float(v).is_integer()):
            raise DprpError(f"{name}: must be an integer, got {v!r}")
    v = int(v)
    _check(v >= minimum, name, f"must be ≥ {minimum}, got {v}")
    object.__setattr__(obj, name, v)


def _seed() -> str:
    return secrets.token_hex(32)


@dataclass(frozen=True)
class _Common:
    def to_config(self) -> dict[str, Any]:
        """The configuration as Flower config-record values (`dprp.`-prefixed keys; None left
        out), sent to every client with its instructions."""
        out: dict[str, Any] = {PREFIX + "kind": type(self).__name__}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None:
                out[PREFIX + f.name] = v
        out[PREFIX + "fingerprint"] = self.fingerprint
        return out

    @classmethod
    def from_config(cls, config: dict[str, Any]):
        """Rebuild the configuration a server sent; refused when it is missing, of another
        kind, or does not match its fingerprint."""
        kind = config.get(PREFIX + "kind")
        if kind != cls.__name__:
            raise DprpError(
                f"config: the server sent no {cls.__name__} (got {kind!r}): is the server's strategy "
                "dprp's, with the same mechanism family as this client's mod?"
            )
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k[len(PREFIX):]: v for k, v in config.items() if k.startswith(PREFIX)}
        got = cls(**{k: v for k, v in values.items() if k in names})
        if got.fingerprint != values.get("fingerprint"):
            raise DprpError("config: its fingerprint does not match its values")
        return got

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the configuration's canonical JSON (first 32 hex digits)."""
        body = json.dumps(
            {type(self).__name__: dataclasses.asdict(self)}, sort_keys=True, separators=(",", ":")
        )
        return hashlib.sha256(body.encode()).hexdigest()[:32]


#: The distributed mechanisms dprp.flower runs (dprp.DistributedEncoder's).
DISTRIBUTED_MECHANISMS = ("ddg", "sketch-ddg", "binomial")


@dataclass(frozen=True)
class DistributedConfig(_Common):
    """Distributed DP under Flower's SecAgg+: each sampled client clips its model update to ℓ₂
    norm `clip`, encodes it with `mechanism` (`ddg`, `sketch-ddg` or `binomial`) into residues
    mod `2^bits`, and only their secure sum reaches the server.

    `epsilon`, `delta` is the budget of the whole run of `rounds` rounds; each round is planned
    for an even share (zCDP composition for the DDG family, basic composition for the Binomial).
    `clients` are sampled each round; the noise is calibrated so that `min_clients` noise shares
    already meet the round's share. A round in which fewer than `min_clients` valid masked
    vectors arrive is halted before anything is unmasked. `seed` is the public seed of the
    rotation and sketch (fresh when not given, sent to the clients)."""

    mechanism: str
    epsilon: float
    delta: float
    rounds: int
    clip: float
    clients: int
    dim: int
    min_clients: Optional[int] = None
    bits: int = 16
    bits_per_parameter: Optional[float] = None
    max_wrap: float = 1e-6
    seed: str = dataclasses.field(default_factory=_seed)

    def __post_init__(self) -> None:
        _check(
            self.mechanism in DISTRIBUTED_MECHANISMS,
            "mechanism",
            f"{self.mechanism!r} is not a distributed mechanism: one of {', '.join(DISTRIBUTED_MECHANISMS)}",
        )
        _integer(self, "rounds", 1)
        _integer(self, "dim", 1)
        _integer(self, "bits", 0)
        _integer(self, "clients", 0)
        _integer(self, "min_clients", 0, optional=True)
        if self.min_clients is None:
            object.__setattr__(self, "min_clients", self.clients)
        _check(self.clients >= 2, "clients", f"secure aggregation needs ≥ 2 clients per round, got {self.clients}")
        _check(
            2 <= self.min_clients <= self.clients,
            "min_clients",
            f"must lie in [2, clients = {self.clients}], got {self.min_clients}",
        )
        _check(
            2 <= self.bits <= 31,
            "bits",
            f"Flower's SecAgg+ quantises to int32 and sums mod at most 2^32: b must lie in [2, 31], got {self.bits}",
        )
        _check(
            self.clients * 2**self.bits < 2**FLOWER_MODULUS_BITS,
            "bits",
            f"clients·2^b = {self.clients}·2^{self.bits} must stay below Flower's modulus 2^32 "
            "(its SecAgg+ sums each client's weight factor 2^b with the vectors)",
        )
        if self.mechanism == "binomial":
            _check(
                self.min_clients == self.clients,
                "min_clients",
                "the Binomial plan holds for its n fixed (cpSGD's neighbours): min_clients must "
                "equal clients, so a round with a dropout is halted",
            )

    @property
    def family(self) -> str:
        return "approx" if self.mechanism == "binomial" else "zcdp"

    def accountant(self) -> RoundsAccountant:
        return RoundsAccountant(self.family, epsilon=self.epsilon, delta=self.delta)

    def encoder(self) -> DistributedEncoder:
        """The round's encoder (the same plan every round), cached per configuration."""
        enc = _ENCODERS.get(self.fingerprint)
        if enc is None:
            share = self.accountant().per_round(self.rounds)
            enc = DistributedEncoder(
                self.mechanism,
                dim=self.dim,
                clients=self.min_clients,
                epsilon=share["epsilon"],
                delta=share["delta"],
                clip=self.clip,
                seed=self.seed,
                bits=self.bits,
                bits_per_parameter=self.bits_per_parameter,
                max_wrap=self.max_wrap,
                max_clients=self.clients,
            )
            _ENCODERS[self.fingerprint] = enc
        return enc

    # -- how residues travel through Flower's float SecAgg+ path, exactly --------------------
    #
    # With clipping_range c = 2^(b−1), quantization_range Q = 2^b, modulus_range 2^32 and a
    # client weight equal to max_weight (Flower multiplies by q_ratio/Q = 1), Flower quantises
    # x ↦ round((clip(x, −c, c) + c)·Q/(2c)) = x + c exactly for every integer x in [−c, c): the
    # client sends x = r − c for its residue r ∈ [0, 2^b). The server's SecAgg+ sums mod 2^32,
    # and dequantises the sum S_M (of the r's) of n clients to v = (S_M − n·c)/n. So
    # S_M = round(n·v + n·c) (exact: |S_M| < 2^33, far inside float64's 2^53), and the residues
    # of the clients' sum mod 2^b are S_M mod 2^b.

    def to_flower(self, residues: np.ndarray) -> np.ndarray:
        return residues.astype(np.float64) - float(2 ** (self.bits - 1))

    def from_flower(self, v: np.ndarray, clients: int) -> np.ndarray:
        s = np.rint(np.asarray(v, dtype=np.float64) * clients + clients * 2.0 ** (self.bits - 1))
        return s.astype(np.int64) % (2**self.bits)

    def secagg_ranges(self) -> dict[str, Any]:
        """The SecAggPlusWorkflow arguments that carry the residues exactly."""
        return {
            "clipping_range": float(2 ** (self.bits - 1)),
            "quantization_range": 2**self.bits,
            "modulus_range": 2**FLOWER_MODULUS_BITS,
            "max_weight": 1.0,
        }


_ENCODERS: dict[str, DistributedEncoder] = {}


#: The local mechanisms dprp.flower runs, with how each carries the update's norm.
LOCAL_MECHANISMS = ("privunit2", "privunitg", "projunit", "privunit2-norm")


@dataclass(frozen=True)
class LocalConfig(_Common):
    """Local DP: each sampled client clips its model update to ℓ₂ norm `clip` and privatises it
    on its device with `mechanism`; the server decodes each message with the unbiased decoder
    and averages.

    `privunit2`, `privunitg`, `projunit` take the update divided by `clip` (a vector of the unit
    ball): the mechanism rounds it to the unit sphere at random (unbiased; no ε spent on the
    norm) before privatising the direction. `privunit2-norm` is Bhowmick et al.'s composite
    (eq. 22): PrivUnit2 on the direction (ε − `epsilon_norm` of the round's share) times ScalarDP
    on the norm (`epsilon_norm`), radius `clip`. `epsilon` is the run's budget (each round ε/R of
    every taking-part user's data, by basic composition); `k`, `projection` are ProjUnit's
    (e.g. `projection="srht"` for large models)."""

    mechanism: str
    epsilon: float
    rounds: int
    clip: float
    dim: int
    k: Optional[int] = None
    projection: Optional[str] = None
    epsilon_norm: Optional[float] = None
    seed: str = dataclasses.field(default_factory=_seed)

    def __post_init__(self) -> None:
        _check(
            self.mechanism in LOCAL_MECHANISMS,
            "mechanism",
            f"{self.mechanism!r} is not one of {', '.join(LOCAL_MECHANISMS)}",
        )
        _integer(self, "rounds", 1)
        _integer(self, "dim", 1)
        _integer(self, "k", 1, optional=True)
        _check(math.isfinite(self.clip) and self.clip > 0, "clip", f"must be positive, got {self.clip}")
        per = self.epsilon / self.rounds
        if self.mechanism == "privunit2-norm":
            _check(
                self.epsilon_norm is not None and 0 < self.epsilon_norm < per,
                "epsilon_norm",
                f"privunit2-norm splits each round's ε = {per:.6g}: give 0 < epsilon_norm < that",
            )
        else:
            _check(self.epsilon_norm is None, "epsilon_norm", "applies to privunit2-norm only")

    def accountant(self) -> RoundsAccountant:
        return RoundsAccountant("local", epsilon=self.epsilon, delta=0.0)

    def round_epsilon(self) -> float:
        return self.accountant().per_round(self.rounds)["epsilon"]

    def round_seed(self, server_round: int) -> str:
        """Each round's public seed: fresh maps every round from the run's seed."""
        return hashlib.sha256(f"{self.seed}:{server_round}".encode()).hexdigest()

    def mechanism_args(self, server_round: int) -> dict[str, Any]:
        """The keyword arguments of `dprp.privatise` and `dprp.MeanAccumulator` for a round."""
        eps = self.round_epsilon()
        args: dict[str, Any] = {"mechanism": self.mechanism, "seed": self.round_seed(server_round)}
        if self.mechanism == "privunit2-norm":
            args.update(epsilon=eps - self.epsilon_norm, epsilon_norm=self.epsilon_norm, radius=self.clip)
        else:
            args["epsilon"] = eps
        if self.k is not None:
            args["k"] = self.k
        if self.projection is not None:
            args["projection"] = self.projection
        return args

    def scale(self) -> float:
        """What the decoded mean is multiplied by (the clients divided by `clip`)."""
        return 1.0 if self.mechanism == "privunit2-norm" else self.clip
