"""Masks for Flower's SecAgg+ from a cryptographic PRG.

Flower 1.42's SecAgg+ expands each 32-byte mask seed (a client's private seed, and every pairwise
key) with `pseudo_rand_gen`, which XOR-folds the seed to **32 bits** and draws from numpy's
Mersenne Twister (`flwr/common/secure_aggregation/secaggplus_utils.py`): every mask is one of 2³²
known streams, so a server holding a masked vector whose other masks it can remove (a dropped
client's, once its pairwise keys are reconstructed) recovers the vector with about 2³² trials.
Its draws are also in `[0, M − 2]`, not uniform mod `M`.

dprp replaces it, for dprp's rounds only, by `shake_masks`: SHAKE-256 (FIPS 202, an extendable
output function) of a domain tag and the whole seed, read as little-endian 32-bit words reduced
mod `M` (a power of two ≤ 2³², so exactly uniform). The swap is done around Flower's own code —
the client's `secaggplus_mod` call (`dprp.flower.secaggplus_mod`) and the server's unmask stage
(`DistributedSecAggPlusWorkflow`) — and undone after it, so other SecAgg+ runs in the same process
keep Flower's function. A client's stage-2 reply carries `MASKS_ID`; the server refuses a masked
vector without it (a client running Flower's plain `secaggplus_mod` would not cancel).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
from typing import Iterator

import numpy as np
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key

# the modules themselves (the client package re-exports a function under the module's name)
_client_secagg = importlib.import_module("flwr.client.mod.secure_aggregation.secaggplus_mod")
_server_secagg = importlib.import_module("flwr.server.workflow.secure_aggregation.secaggplus_workflow")

from .. import DprpError

#: What a client's stage-2 reply says its masks were drawn with (checked by the server).
MASKS_ID = "shake256-v1"
MASKS_KEY = "dprp.masks"
_DOMAIN = b"dprp.flower SecAgg+ mask v1\x00"


def shake_masks(seed: bytes, num_range: int, dimensions_list: list[tuple[int, ...]]) -> list[np.ndarray]:
    """Flower's `pseudo_rand_gen` signature: one int64 array per shape, uniform in
    `[0, num_range)`, from SHAKE-256 of the whole seed."""
    if not (2 <= num_range <= 2**32 and num_range & (num_range - 1) == 0):
        raise DprpError(f"SecAgg+ modulus {num_range}: dprp's masks need a power of two ≤ 2^32")
    sizes = [int(np.prod(d, dtype=np.int64)) for d in dimensions_list]
    words = hashlib.shake_256(_DOMAIN + bytes(seed)).digest(4 * sum(sizes))
    values = np.frombuffer(words, dtype="<u4").astype(np.int64) & (num_range - 1)
    out, at = [], 0
    for shape, n in zip(dimensions_list, sizes):
        out.append(values[at : at + n].reshape(shape).copy())
        at += n
    return out


@contextlib.contextmanager
def _swapped(module) -> Iterator[None]:
    old = module.pseudo_rand_gen
    module.pseudo_rand_gen = shake_masks
    try:
        yield
    finally:
        module.pseudo_rand_gen = old


def secaggplus_mod(msg, ctxt, call_next):
    """Flower's `secaggplus_mod` with masks from `shake_masks`; use it in place of Flower's, first
    in the client's mods: `mods=[dprp.flower.secaggplus_mod, distributed_dp_mod]`."""
    with _swapped(_client_secagg):
        out = _client_secagg.secaggplus_mod(msg, ctxt, call_next)
    configs = out.content.config_records.get(RECORD_KEY_CONFIGS) if not out.has_error() else None
    if configs is not None and Key.MASKED_PARAMETERS in configs:
        configs[MASKS_KEY] = MASKS_ID
    return out


def server_masks():
    """The context in which the server's SecAgg+ stages rebuild masks with `shake_masks`."""
    return _swapped(_server_secagg)
