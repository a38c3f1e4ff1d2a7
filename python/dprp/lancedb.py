"""A dprp release as a LanceDB table (`pip install "dprp[lancedb]"`).

``to_lancedb(release, db, "items")`` writes the release's rows as a LanceDB table::

    id     int64                                  the release's row ids
    label  float32 (only when the release has labels)
    vector fixed_size_list<float32, k>            real-valued releases
           fixed_size_list<uint8, ceil(k/8)>      sign releases: signs packed 8 to a byte

The rows are streamed to LanceDB in record batches built straight from the release's
memory-mapped arrays, so the release is never copied whole into memory. The schema's metadata
key ``b"dprp"`` holds the release's stamp, the JSON object ``dprp export --postgres`` puts in
its table comment (``fingerprint``, ``p``, ``k``, ``payload``, ``measure``, ``tool``,
``rows``); ``search`` refuses a table whose stamp is not the release's, since queries projected
with another release's map would find meaningless neighbours.

``search`` projects raw query vectors with the release's public map (``Release.project``) and
asks LanceDB for the nearest rows, by its metric ``dot`` (inner product), ``cosine`` or
``hamming`` (sign releases). ``exact=True`` bypasses any vector index (a flat scan: the exact
top); otherwise LanceDB uses the table's index (``create_index``), tuned by ``nprobes``,
``refine_factor`` and ``ef``. Scores follow dprp's convention, larger is better, as
``Release.search`` reports them: the inner product, the cosine, or for signs the number of
agreeing signs ``k - hamming``. ``search_reranked`` re-ranks a longer candidate list with dprp's
debiased estimates and their standard errors (``Release.rerank``).

Bit order of sign vectors: sign ``i`` is bit ``i % 8`` (least significant first) of byte
``i // 8``, the little-endian bytes of the release's packed words (sign ``i`` = bit ``i % 64``
of word ``i // 64``), with bits past k cleared; Hamming distances need only the rows and the
queries to agree on it, and both are packed here.
"""

from __future__ import annotations

import json
import os
from typing import Optional, Tuple

import numpy as np

from .postgres import PADDING, _as_queries, _check_stamp, _get, _measure, _payload, _positive

__all__ = ["check_table", "create_index", "search", "search_reranked", "signs_to_bytes", "table_stamp",
           "to_lancedb"]

_METRIC = {"ip": "dot", "cosine": "cosine", "hamming": "hamming"}


def _lancedb():
    try:
        import lancedb
    except ImportError as e:
        raise ImportError(
            'dprp.lancedb needs LanceDB: install it with pip install "dprp[lancedb]" '
            "(or pip install lancedb)"
        ) from e
    return lancedb


def signs_to_bytes(words: np.ndarray, k: int) -> np.ndarray:
    """Packed sign words (n × ⌈k/64⌉ uint64) as n × ⌈k/8⌉ uint8, bits past k cleared."""
    words = np.ascontiguousarray(words, dtype="<u8")
    nbytes = (k + 7) // 8
    b = words.view(np.uint8).reshape(words.shape[0], -1)[:, :nbytes].copy()
    if k % 8:
        b[:, -1] &= np.uint8((1 << (k % 8)) - 1)
    return b


def _stamp_of(release, measure: Optional[str]) -> dict:
    """The stamp ``dprp export --postgres`` writes, built by the library (``Release.stamp``)."""
    bits = _payload(release) == "bits"
    m = _measure(measure if measure is not None else ("hamming" if bits else "cosine"), bits)
    return release.stamp(m)


def _batches(release, schema, rows: int):
    """Record batches of at most `rows` rows, shard by shard."""
    import pyarrow as pa

    k = int(_get(release, "k"))
    bits = _payload(release) == "bits"
    has_labels = schema.get_field_index("label") >= 0
    parts = _get(release, "shards") if _get(release, "sharded") else [release]
    for part in parts:
        ids, sk = _get(part, "ids"), _get(part, "sketches")
        labels = _get(part, "labels") if has_labels else None
        for s in range(0, len(ids), rows):
            e = min(s + rows, len(ids))
            i = np.asarray(ids[s:e], dtype=np.uint64)
            if i.size and int(i.max()) >= 2**63:
                raise ValueError("row ids of 2**63 and more do not fit LanceDB's int64 id column")
            if bits:
                vals, width = signs_to_bytes(sk[s:e], k).ravel(), (k + 7) // 8
            else:
                vals, width = np.ascontiguousarray(sk[s:e], dtype=np.float32).ravel(), k
            cols = [pa.array(i.view(np.int64)),
                    pa.FixedSizeListArray.from_arrays(pa.array(vals), width)]
            if has_labels:
                cols.insert(1, pa.array(np.asarray(labels[s:e], dtype=np.float32)))
            yield pa.RecordBatch.from_arrays(cols, schema=schema)


def to_lancedb(release, db, table: str, mode: str = "create", measure: Optional[str] = None,
               batch_rows: int = 65536):
    """Write ``release`` as the LanceDB table ``table`` of ``db`` (a LanceDB connection or a
    path, opened with ``lancedb.connect``) and return the table.

    ``mode`` is LanceDB's: ``"create"`` (an existing table is an error) or ``"overwrite"``.
    ``measure`` (``ip`` or ``cosine`` for real releases, ``hamming`` for signs; default cosine
    or hamming) is recorded in the stamp as the default of ``search`` and ``create_index``."""
    import pyarrow as pa

    lancedb = _lancedb()
    if isinstance(db, (str, os.PathLike)):
        db = lancedb.connect(db)
    k = int(_get(release, "k"))
    bits = _payload(release) == "bits"
    stamp = _stamp_of(release, measure)
    fields = [pa.field("id", pa.int64(), nullable=False)]
    if _get(release, "labels") is not None:
        fields.append(pa.field("label", pa.float32(), nullable=True))
    fields.append(pa.field("vector", pa.list_(pa.uint8(), (k + 7) // 8) if bits
                           else pa.list_(pa.float32(), k)))
    schema = pa.schema(fields, metadata={b"dprp": json.dumps(stamp).encode()})
    batch_rows = _positive(batch_rows, "batch_rows")
    return db.create_table(table, data=_batches(release, schema, batch_rows), schema=schema,
                           mode=mode)


def table_stamp(table) -> dict:
    """The dprp stamp in the table's schema metadata; ValueError when it has none."""
    meta = table.schema.metadata or {}
    try:
        stamp = json.loads(meta[b"dprp"])
    except (KeyError, ValueError):
        stamp = None
    if not isinstance(stamp, dict) or not isinstance(stamp.get("fingerprint"), str):
        raise ValueError(f"LanceDB table {getattr(table, 'name', '?')!r} has no dprp stamp: it "
                         "was not written by dprp.lancedb.to_lancedb")
    return stamp


def check_table(release, table) -> dict:
    """Raise ValueError unless ``table`` holds ``release``'s sketches; return its stamp."""
    stamp = table_stamp(table)
    _check_stamp(stamp, release, f"LanceDB table {getattr(table, 'name', '?')!r}")
    return stamp


def create_index(table, release, kind: Optional[str] = None, measure: Optional[str] = None,
                 **params):
    """Build a LanceDB vector index on ``vector`` with the metric of the stamp's measure
    (or ``measure``). ``kind``: one of IVF_FLAT, IVF_SQ, IVF_PQ, IVF_RQ, IVF_HNSW_SQ,
    IVF_HNSW_PQ, IVF_HNSW_FLAT (default IVF_HNSW_SQ for real sketches, IVF_FLAT for signs:
    the only kind LanceDB offers for Hamming distance); ``params`` go to LanceDB's index
    configuration (num_partitions, m, ef_construction, ...)."""
    _lancedb()
    from lancedb import index as li

    stamp = check_table(release, table)
    bits = stamp["payload"] == "bits"
    m = _measure(measure if measure is not None else stamp.get("measure"), bits)
    kinds = {"IVF_FLAT": li.IvfFlat, "IVF_SQ": li.IvfSq, "IVF_PQ": li.IvfPq,
             "IVF_RQ": li.IvfRq, "IVF_HNSW_SQ": li.HnswSq, "IVF_HNSW_PQ": li.HnswPq,
             "IVF_HNSW_FLAT": li.HnswFlat}
    kind = (kind or ("IVF_FLAT" if bits else "IVF_HNSW_SQ")).upper()
    if kind not in kinds:
        raise ValueError(f"unknown index kind {kind!r} (expected one of {', '.join(kinds)})")
    if bits and kind != "IVF_FLAT":
        raise ValueError(f"{kind} does not support Hamming distance; use IVF_FLAT for signs")
    table.create_index("vector", config=kinds[kind](distance_type=_METRIC[m], **params))
    return table


def _search(release, table, queries, top, measure, exact, nprobes, refine_factor, ef,
            no_scale):
    q = _as_queries(release, queries)
    top = _positive(top, "top")
    stamp = check_table(release, table)
    k, bits = int(_get(release, "k")), stamp["payload"] == "bits"
    m = _measure(measure if measure is not None else stamp.get("measure"), bits)
    proj = np.asarray(release.project(q, no_scale=no_scale))
    vecs = signs_to_bytes(proj, k) if bits else np.asarray(proj, dtype=np.float32)
    nq = vecs.shape[0]
    ids = np.full((nq, top), PADDING, dtype=np.uint64)
    scores = np.full((nq, top), np.nan, dtype=np.float64)
    if nq == 0:
        return ids, scores, m
    b = table.search(vecs if nq > 1 else vecs[0], vector_column_name="vector") \
        .distance_type(_METRIC[m]).limit(top).select(["id", "_distance"])
    if exact:
        b = b.bypass_vector_index()
    else:
        if nprobes is not None:
            b = b.nprobes(_positive(nprobes, "nprobes"))
        if refine_factor is not None:
            b = b.refine_factor(_positive(refine_factor, "refine_factor"))
        if ef is not None:
            b = b.ef(_positive(ef, "ef"))
    res = b.to_arrow()
    qi = (res["query_index"].to_numpy() if "query_index" in res.column_names
          else np.zeros(res.num_rows, dtype=np.int64))
    r_ids = res["id"].to_numpy().astype(np.int64).view(np.uint64)
    d = res["_distance"].to_numpy().astype(np.float64)
    order = np.lexsort((d, qi))  # by query, then by distance
    qi, r_ids, d = qi[order], r_ids[order], d[order]
    starts = np.searchsorted(qi, np.arange(nq))
    rank = np.arange(len(qi)) - starts[qi]
    keep = rank < top
    ids[qi[keep], rank[keep]] = r_ids[keep]
    # LanceDB's distances: dot 1 - x·y, cosine 1 - cos, hamming differing bits
    scores[qi[keep], rank[keep]] = (k - d[keep]) if bits else (1.0 - d[keep])
    return ids, scores, m


def search(release, table, queries, top: int = 10, measure: Optional[str] = None,
           exact: bool = True, nprobes: Optional[int] = None,
           refine_factor: Optional[int] = None, ef: Optional[int] = None,
           no_scale: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """Nearest rows of the LanceDB ``table`` (written by ``to_lancedb`` from ``release``) to
    raw query vectors (nq × p): projected with the release's public map (``Release.project``),
    then searched by ``measure`` (default: the stamp's; ``ip`` or ``cosine``, ``hamming`` for
    signs). ``exact=True`` bypasses the vector index; otherwise ``nprobes``, ``refine_factor``
    and ``ef`` tune LanceDB's ANN search. Set ``refine_factor`` with the default index of real
    sketches (IVF_HNSW_SQ ranks by 8-bit quantised vectors; ``refine_factor=r`` re-scores the
    ``r × top`` best by the full vectors): on MNIST its recall@10 was 0.940 without and 0.9999
    with ``refine_factor=10`` (docs/databases.md).

    Returns (ids uint64 nq×top, scores float64 nq×top), best first, with dprp's scores (inner
    product, cosine, agreeing signs ``k - hamming``); missing rows are id 2**64-1, score NaN."""
    ids, scores, _ = _search(release, table, queries, top, measure, exact, nprobes,
                             refine_factor, ef, no_scale)
    return ids, scores


def search_reranked(release, table, queries, top: int = 10, candidates: int = 100,
                    measure: Optional[str] = None, exact: bool = False,
                    nprobes: Optional[int] = None, refine_factor: Optional[int] = None,
                    ef: Optional[int] = None, no_scale: bool = False
                    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``candidates`` rows per query from LanceDB (``search``), re-ranked by dprp's debiased
    estimates (``Release.rerank``): (ids uint64, estimates float64, standard errors float64),
    each nq×top, best first. Sign releases are re-ranked by their debiased cosine."""
    top, candidates = _positive(top, "top"), _positive(candidates, "candidates")
    if candidates < top:
        raise ValueError(f"candidates ({candidates}) must be at least top ({top})")
    cand, _, m = _search(release, table, queries, candidates, measure, exact, nprobes,
                         refine_factor, ef, no_scale)
    return release.rerank(_as_queries(release, queries), cand, top=top,
                          measure=None if m == "hamming" else m, no_scale=no_scale)
