"""dprp from Python: differentially private random-projection sketches.

Publish a numpy array (or a dataset file) as a private release, open releases as read-only numpy
views of their memory-mapped payload, search them and estimate inner products with standard
errors. The work is done by the dprp Rust library (the same code as the ``dprp`` command); see
the README's "From Python" section.
"""

from ._dprp import (
    DistributedEncoder,
    DprpError,
    LedgerGate,
    MeanAccumulator,
    Release,
    RoundsAccountant,
    __version__,
    calibrate,
    eval_retrieval,
    finish_shards,
    fingerprint_part,
    privatise,
    publish,
)

__all__ = [
    "DistributedEncoder",
    "DprpError",
    "LedgerGate",
    "MeanAccumulator",
    "Release",
    "RoundsAccountant",
    "__version__",
    "calibrate",
    "eval_retrieval",
    "finish_shards",
    "fingerprint_part",
    "privatise",
    "publish",
]
