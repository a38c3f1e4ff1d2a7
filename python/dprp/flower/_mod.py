"""What both client mods do around the client's `fit`: read the server's configuration, take the
update (new − received weights), and replace the reply's weights by what the mechanism sends."""

from __future__ import annotations

from typing import Callable

from flwr.common import MessageType, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.compat.common import recorddict_compat as compat

from .. import DprpError
from ._weights import check_update


def refuse_train_actions(msg, mod: str) -> None:
    """Refuse a Message-API training action (`train.<action>`): dprp's mods read Flower's legacy
    `train` messages only, and would let its reply (a model in clear) pass un-privatised."""
    mt = msg.metadata.message_type
    if mt.startswith(MessageType.TRAIN + "."):
        raise DprpError(
            f"{mod}: refused a {mt!r} message (a Message-API training action): dprp's mods "
            "privatise Flower's 'train' messages only, and this one's reply would leave the client "
            "un-privatised (docs/flower.md)"
        )


def replace_update(msg, ctxt, call_next, parse: Callable, send: Callable, mod: str = "dprp mod"):
    """Run the client's `fit` (the rest of the mod chain) and replace its weights by
    `send(cfg, config, update, msg) -> (arrays, metrics)`, where `cfg = parse(config)` is the
    server's configuration. The reply carries weight 1 and the configuration's fingerprint.
    Anything refused raises, so the client's reply is an error (a dropout for the server)."""
    refuse_train_actions(msg, mod)
    if msg.metadata.message_type != MessageType.TRAIN:
        return call_next(msg, ctxt)
    fit_ins = compat.recorddict_to_fitins(msg.content, keep_input=True)
    cfg = parse(fit_ins.config)
    received = parameters_to_ndarrays(fit_ins.parameters)
    out = call_next(msg, ctxt)
    if out.has_error():
        return out
    fit_res = compat.recorddict_to_fitres(out.content, keep_input=True)
    update = check_update(parameters_to_ndarrays(fit_res.parameters), received, cfg.dim)
    arrays, metrics = send(cfg, fit_ins.config, update, msg)
    fit_res.parameters = ndarrays_to_parameters(arrays)
    fit_res.num_examples = 1
    fit_res.metrics = {"dprp.fingerprint": cfg.fingerprint, **metrics}
    out.content = compat.fitres_to_recorddict(fit_res, keep_input=True)
    return out


__all__ = ["refuse_train_actions", "replace_update"]
