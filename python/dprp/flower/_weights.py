"""Model weights as one vector: what the mechanisms privatise is the flattened update."""

from __future__ import annotations

from logging import WARNING
from typing import Any, Sequence

import numpy as np
from flwr.app import ArrayRecord
from flwr.common import Parameters, parameters_to_ndarrays
from flwr.common.logger import log

from .. import DprpError


def flatten(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """The arrays' values, in order, as one float64 vector."""
    if not arrays:
        return np.zeros(0)
    return np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in arrays])


def unflatten(vector: np.ndarray, like: Sequence[np.ndarray]) -> list[np.ndarray]:
    """`vector` cut into arrays of the shapes (and dtypes) of `like`."""
    out, at = [], 0
    for a in like:
        a = np.asarray(a)
        out.append(vector[at : at + a.size].reshape(a.shape).astype(a.dtype, copy=False))
        at += a.size
    if at != vector.size:
        raise DprpError(f"weights: a vector of {vector.size} values for a model of {at}")
    return out


def as_ndarrays(weights: Any) -> list[np.ndarray]:
    """Model weights as a list of numpy arrays, from any form a Flower user holds them in: a
    list (or tuple) of arrays, Flower's `Parameters` (legacy strategies' `initial_parameters`,
    e.g. `ndarrays_to_parameters(weights)`) or an `ArrayRecord` (the Message API's)."""
    if isinstance(weights, Parameters):
        return parameters_to_ndarrays(weights)
    if isinstance(weights, ArrayRecord):
        return weights.to_numpy_ndarrays()
    if isinstance(weights, np.ndarray):
        raise DprpError(
            "weights: got one numpy array; give the model as a list of arrays, Flower Parameters "
            "or an ArrayRecord"
        )
    try:
        return [np.asarray(w) for w in weights]
    except TypeError:
        raise DprpError(
            f"weights: a {type(weights).__name__} is not model weights: give a list of numpy arrays, "
            "Flower Parameters or an ArrayRecord"
        ) from None


def initial_model(initial_parameters: Any, dim: int) -> tuple[list[np.ndarray], list[np.dtype]]:
    """A strategy's model from its initial parameters (arrays, `Parameters` or an
    `ArrayRecord`, `as_ndarrays`): the arrays as float64 (the mean updates add up without
    rounding) and their own dtypes (what the clients get); refused when the model's size is not
    the configuration's `dim`."""
    initial_parameters = as_ndarrays(initial_parameters)
    dtypes = [np.asarray(w).dtype for w in initial_parameters]
    weights = [np.asarray(w, dtype=np.float64) for w in initial_parameters]
    size = sum(w.size for w in weights)
    if size != dim:
        raise DprpError(f"dim: the model has {size} parameters, the configuration says {dim}")
    return weights, dtypes


def model(weights: Sequence[np.ndarray], dtypes: Sequence[np.dtype]) -> list[np.ndarray]:
    """The model as the clients get it: the strategy keeps float64 (the mean updates add up
    without rounding), and sends each array in the dtype it started with."""
    return [np.asarray(w).astype(dt, copy=False) for w, dt in zip(weights, dtypes)]


def check_update(new: Sequence[np.ndarray], received: Sequence[np.ndarray], dim: int) -> np.ndarray:
    """The client's update `new − received` as one vector, refused when the client returned
    weights of other shapes or values that are not finite (nothing is sent then)."""
    shapes_new = [np.shape(a) for a in new]
    shapes_old = [np.shape(a) for a in received]
    if shapes_new != shapes_old:
        raise DprpError(f"update: the client returned arrays of shapes {shapes_new}, it received {shapes_old}")
    update = flatten(new) - flatten(received)
    if update.size != dim:
        raise DprpError(f"update: {update.size} parameters, the configuration says dim = {dim}")
    bad = np.flatnonzero(~np.isfinite(update))
    if bad.size:
        # the reason travels to the server in the error reply: no value, no position (those stay
        # in the client's own log)
        log(WARNING, "dprp: update value %s at parameter %d is not finite", update[bad[0]], bad[0])
        raise DprpError("update: not finite; nothing was sent (the client's log says where)")
    return update
