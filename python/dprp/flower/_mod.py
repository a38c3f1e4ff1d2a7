"""What both client mods do around the client's training: read the server's configuration, take
the update (new − received weights), and replace the reply's weights by what the mechanism sends.

Two forms of Flower's `train` message reach a mod: the legacy one (a `FitIns` as records,
`fitins.parameters` / `fitins.config`: `NumPyClient`s, legacy strategies) and the Message API's
(one `ArrayRecord`, e.g. `arrays`, and a `ConfigRecord`, e.g. `config`: an `@app.train()`
function, `flwr.serverapp.strategy` strategies). `replace_update` handles both when its mod has
a Message-API path (local DP), and refuses the Message API's otherwise (distributed DP)."""

from __future__ import annotations

from typing import Callable

from flwr.app import ArrayRecord, ConfigRecord, RecordDict
from flwr.common import MessageType, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS
from flwr.compat.common import recorddict_compat as compat

from .. import DprpError
from ._config import PREFIX
from ._weights import check_update

#: Where a legacy training message keeps the model (Flower's `FitIns` as records).
LEGACY_PARAMETERS = "fitins.parameters"

#: The record of a Message-API reply that carries dprp's metadata (fingerprint, row id).
DPRP_RECORD = "dprp"

#: The Message-API wiring of local DP, named in refusals.
MESSAGE_WIRING = (
    "ClientApp(mods=[dprp.flower.local_dp_mod]) with an @app.train() function (the default action) "
    "on the clients, and dprp.flower.MessageLocalDpFedAvg on the server"
)

#: Why distributed DP has no Message-API path (docs/flower.md, "The Message API").
NO_MESSAGE_SECAGG = (
    "Flower 1.42 has SecAgg+ only for its legacy API (flwr.server.workflow.SecAggPlusWorkflow "
    "drives a legacy strategy and flwr.client.mod.secaggplus_mod reads the reply as a FitRes; "
    "flwr.serverapp and flwr.clientapp have no secure aggregation), and distributed DP without "
    "masking would send each client's residues in clear"
)


def is_legacy(content: RecordDict) -> bool:
    """Whether a training message is Flower's legacy form (a `FitIns` as records)."""
    return LEGACY_PARAMETERS in content.array_records


def refuse_train_actions(msg, mod: str, message_api: bool = True) -> None:
    """Refuse a Message-API training action (`train.<action>`): dprp's mods privatise the
    default `train` messages only, and would let its reply (a model in clear) pass
    un-privatised. The message says where the supported path is (`message_api`: the mod has a
    Message-API path)."""
    mt = msg.metadata.message_type
    if mt.startswith(MessageType.TRAIN + "."):
        where = (
            f"register the training function as @app.train() (message type 'train') and use {MESSAGE_WIRING}"
            if message_api
            else f"distributed DP runs on the legacy API only: {NO_MESSAGE_SECAGG}"
        )
        raise DprpError(
            f"{mod}: refused a {mt!r} message (a Message-API training action): dprp's mods "
            f"privatise 'train' messages only, and this one's reply would leave the client "
            f"un-privatised; {where} (docs/flower.md)"
        )


def is_message_api(content: RecordDict) -> bool:
    """Whether a training message is the Message API's: neither a legacy `FitIns` nor a SecAgg+
    stage (whose messages but the masking stage's carry no model)."""
    return not is_legacy(content) and RECORD_KEY_CONFIGS not in content.config_records


def refuse_message_api(msg, mod: str) -> None:
    """Refuse a Message-API `train` message for a mod that has no Message-API path (distributed
    DP: no SecAgg+ there), before the client trains."""
    if msg.metadata.message_type == MessageType.TRAIN and is_message_api(msg.content):
        raise DprpError(
            f"{mod}: refused a Message-API 'train' message (no {LEGACY_PARAMETERS!r} record: the "
            f"server runs a flwr.serverapp strategy, or the client an @app.train function): dprp "
            f"has no distributed DP on the Message API because {NO_MESSAGE_SECAGG}. Use the legacy "
            f"wiring of docs/flower.md, or local DP on the Message API: {MESSAGE_WIRING}"
        )


def replace_update(
    msg, ctxt, call_next, parse: Callable, send: Callable, mod: str = "dprp mod", message_api: bool = False
):
    """Run the client's training (the rest of the mod chain) and replace its weights by
    `send(cfg, config, update, msg) -> (arrays, metadata)`, where `cfg = parse(config)` is the
    server's configuration. The reply carries weight 1, the configuration's fingerprint and
    `metadata`, and nothing else of the client's (its metrics are dropped: they were computed on
    its data, un-privatised). Anything refused raises, so the client's reply is an error (a
    dropout for the server). A Message-API message takes `_replace_message` when `message_api`
    (the mod has that path), and is refused otherwise."""
    refuse_train_actions(msg, mod, message_api)
    if msg.metadata.message_type != MessageType.TRAIN:
        return call_next(msg, ctxt)
    if not is_legacy(msg.content):
        if not message_api:
            refuse_message_api(msg, mod)
        return _replace_message(msg, ctxt, call_next, parse, send, mod)
    fit_ins = compat.recorddict_to_fitins(msg.content, keep_input=True)
    cfg = parse(fit_ins.config)
    received = parameters_to_ndarrays(fit_ins.parameters)
    out = call_next(msg, ctxt)
    if out.has_error():
        return out
    fit_res = compat.recorddict_to_fitres(out.content, keep_input=True)
    update = check_update(parameters_to_ndarrays(fit_res.parameters), received, cfg.dim)
    arrays, metadata = send(cfg, fit_ins.config, update, msg)
    fit_res.parameters = ndarrays_to_parameters(arrays)
    fit_res.num_examples = 1
    fit_res.metrics = {PREFIX + "fingerprint": cfg.fingerprint, **metadata}
    out.content = compat.fitres_to_recorddict(fit_res, keep_input=True)
    return out


def _one_array_record(content: RecordDict, mod: str, what: str) -> tuple[str, ArrayRecord]:
    records = content.array_records
    if len(records) != 1:
        raise DprpError(
            f"{mod}: {what} carries {len(records)} ArrayRecords ({', '.join(map(repr, records)) or 'none'}), "
            "expected exactly one (the model)"
        )
    return next(iter(records.items()))


def _dprp_config(content: RecordDict, mod: str) -> dict:
    """The server's ConfigRecord that carries dprp's configuration (the one with `dprp.kind`)."""
    found = [dict(r) for r in content.config_records.values() if PREFIX + "kind" in r]
    if len(found) != 1:
        names = ", ".join(map(repr, content.config_records)) or "none"
        raise DprpError(
            f"{mod}: the server's 'train' message carries {len(found)} dprp configurations (config "
            f"records: {names}), expected one: is the server's strategy dprp's "
            f"(dprp.flower.MessageLocalDpFedAvg on the Message API)?"
        )
    return found[0]


def _replace_message(msg, ctxt, call_next, parse: Callable, send: Callable, mod: str):
    """The Message-API form of `replace_update`: the server's message has one ArrayRecord (the
    model) and a ConfigRecord with dprp's configuration; the client's reply must have one
    ArrayRecord with the same array names. The reply sent is `{<its ArrayRecord's name>:
    ArrayRecord([message]), "dprp": ConfigRecord(fingerprint, metadata)}`, nothing else."""
    config = _dprp_config(msg.content, mod)
    cfg = parse(config)
    _, sent = _one_array_record(msg.content, mod, "the server's 'train' message")
    names, received = list(sent.keys()), sent.to_numpy_ndarrays()
    out = call_next(msg, ctxt)
    if out.has_error():
        return out
    key, reply = _one_array_record(out.content, mod, "the client's reply")
    if list(reply.keys()) != names:
        raise DprpError(
            f"{mod}: the client's reply names its arrays {list(reply.keys())}, the server sent {names}"
        )
    update = check_update(reply.to_numpy_ndarrays(), received, cfg.dim)
    arrays, metadata = send(cfg, config, update, msg)
    out.content = RecordDict(
        {
            key: ArrayRecord(list(arrays)),
            DPRP_RECORD: ConfigRecord({PREFIX + "fingerprint": cfg.fingerprint, **metadata}),
        }
    )
    return out


__all__ = [
    "DPRP_RECORD",
    "MESSAGE_WIRING",
    "NO_MESSAGE_SECAGG",
    "is_legacy",
    "is_message_api",
    "refuse_message_api",
    "refuse_train_actions",
    "replace_update",
]
