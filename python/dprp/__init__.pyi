"""Type stubs of the dprp Python module (the compiled ``dprp._dprp``)."""

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str

PathLike = Union[str, "os.PathLike[str]"]

class DprpError(ValueError):
    """An error reported by dprp, carrying dprp's message (what and where)."""

class Release:
    """A release opened for reading: checksum verified, payload memory-mapped.

    Do not modify or truncate a release file while it is open: reading a memory-mapped file
    that was truncated kills the process with SIGBUS. ``sketches``, ``unpack_signs``,
    ``labels``, ``ids``, ``verify``, ``search`` and ``estimate`` check the file's length first
    and raise ``DprpError`` ("the file was truncated while open"); a ``sketches`` array already
    handed out cannot be checked."""

    @staticmethod
    def open(path: PathLike, verify: bool = True) -> "Release": ...
    def verify(self) -> None: ...
    @property
    def verified(self) -> bool: ...
    @property
    def advisories(self) -> list[str]: ...
    @property
    def path(self) -> str: ...
    @property
    def n(self) -> int: ...
    @property
    def k(self) -> int: ...
    @property
    def p(self) -> int: ...
    def __len__(self) -> int: ...
    @property
    def sketches(self) -> Union[npt.NDArray[np.float32], npt.NDArray[np.uint64]]:
        """Read-only view of the payload (no copy): n×k float32, or n×⌈k/64⌉ uint64 sign words.
        A sharded release has one payload per shard: use ``shards``. Raises ``DprpError`` when
        the file was truncated since it was opened; do not truncate it while the view is used."""
    @property
    def shards(self) -> List["Release"]:
        """The shards of a sharded release (one-file Releases with global row ids)."""
    @property
    def sharded(self) -> bool: ...
    def unpack_signs(self) -> npt.NDArray[np.int8]:
        """n×k array of ±1 signs of a sign release."""
    @property
    def labels(self) -> Optional[npt.NDArray[np.float32]]: ...
    @property
    def ids(self) -> npt.NDArray[np.uint64]: ...
    @property
    def meta(self) -> dict[str, Any]:
        """The release metadata (as ``dprp info --json``)."""
    @property
    def guarantee(self) -> str:
        """The privacy guarantee, as the sentence ``dprp info`` prints."""
    def search(
        self,
        queries: npt.NDArray[Union[np.float32, np.float64]],
        top: int = 10,
        measure: Optional[str] = None,
        no_scale: bool = False,
    ) -> Tuple[npt.NDArray[np.uint64], npt.NDArray[np.float32]]:
        """(ids, scores), each queries×top, best first, as ``dprp query``; a zero query under
        the cosine or hamming measure has no neighbours (ids 2**64−1, scores NaN): its cosine
        is undefined."""
    @overload
    def estimate(self, i: int, j: int) -> Tuple[float, float]: ...
    @overload
    def estimate(self, i: int, j: int, full: bool) -> Any: ...
    def estimate(self, i: int, j: int, full: bool = False) -> Any:
        """(value, standard error) for rows i and j, as ``dprp estimate``: the inner product
        (real sketches; a row with itself: its squared norm, noise energy removed) or the
        cosine (signs). ``full=True``: the dict ``dprp estimate --json`` prints, with the 95%
        intervals (``ip_lo``/``ip_hi``, ``cosine_lo``/``cosine_hi``) and why a cosine is
        undefined (``cosine_note``). The intervals hold over independent releases for a pair
        chosen in advance (docs/error-bars.md)."""
    @property
    def fingerprint(self) -> str:
        """64 hex digits of the release's BLAKE3 checksum; stored with a database table loaded
        from it and checked by ``dprp.postgres`` / ``dprp.lancedb``."""
    def stamp(self, measure: Optional[str] = None) -> Dict[str, Any]:
        """The stamp a database table holding the release carries (fingerprint, p, k, payload,
        measure — default cosine, hamming for signs —, rows, tool), as ``dprp export`` writes it."""
    def check_stamp(self, stamp: Dict[str, Any], place: str) -> None:
        """Raise ``DprpError`` naming ``place`` unless a table's stamp is this release's (its
        fingerprint, then its k and payload)."""
    def project(
        self, queries: npt.ArrayLike, no_scale: bool = False
    ) -> npt.NDArray[Any]:
        """Raw queries on the release's scale, projected with its public map (no noise): float32
        queries×k, or uint64 queries×⌈k/64⌉ packed signs; as ``dprp project``."""
    def rerank(
        self,
        queries: npt.ArrayLike,
        candidates: npt.ArrayLike,
        top: int = 10,
        measure: Optional[str] = None,
        no_scale: bool = False,
    ) -> Tuple[npt.NDArray[np.uint64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """(ids, estimates, standard errors), queries×top, best first: the candidate row ids
        re-ranked by the debiased estimates of ``dprp estimate --query-vector``."""
    def to_postgres(
        self,
        url: str,
        table: str,
        replace: bool = False,
        index: Optional[str] = None,
        measure: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Load into PostgreSQL + pgvector in one transaction, as ``dprp export``; returns rows,
        table, fingerprint, measure, hnsw, copy_seconds, total_seconds. ``url`` is a libpq
        connection string (TLS by ``sslmode``/``sslrootcert``, ``connect_timeout`` default
        15 s); a failure names its step with every password masked."""

# Every integer argument is a non-negative int (numpy integers too): a negative or too large
# value raises DprpError naming the keyword ("invalid row: must be a non-negative integer, got
# -1"); a float or a string raises TypeError.

def publish(
    x: Union[npt.NDArray[Union[np.float32, np.float64]], PathLike],
    *,
    mechanism: str,
    epsilon: float,
    output: PathLike,
    delta: Optional[float] = None,
    k: Optional[int] = None,
    seed: Optional[Union[int, str]] = None,
    beta: Optional[float] = None,
    neighbour: Optional[str] = None,
    projection: Optional[str] = None,
    min_norm: Optional[float] = None,
    individual_dp: bool = False,
    epsilon_norm: Optional[float] = None,
    radius: Optional[float] = None,
    first_row: int = 0,
    noise: Optional[str] = None,
    noise_seed: Optional[str] = None,
    labels: Optional[npt.NDArray[Union[np.float32, np.float64]]] = None,
    scale: Optional[Union[float, str]] = None,
    normalize: Optional[str] = None,
    clip: bool = False,
    clip_norm: Optional[float] = None,
    memory: int = 256,
    shard: Optional[Tuple[int, int]] = None,
    output_format: Optional[str] = None,
    column: Optional[str] = None,
    label_column: Optional[str] = None,
    id_column: Optional[str] = None,
    rows: Optional[Tuple[int, int]] = None,
    overwrite: bool = False,
    dataset: Optional[Dict[str, str]] = None,
    ledger: Optional[PathLike] = None,
    budget: Optional[Union[float, Tuple[float, float], str]] = None,
) -> Release:
    """Publish x as a private release at output (the file ``dprp publish`` writes).

    An existing file at ``output`` is refused unless ``overwrite=True`` (the release that was
    there is then gone; if it was shared, its copies remain); a link, device, pipe, socket or
    directory is always refused.

    ``output_format`` is ``"native"`` or ``"parquet"`` (default: parquet when output ends in
    ``.parquet``). For a Parquet file x, ``column`` names the vector column (default: its only
    list column), ``label_column`` a numeric label column and ``id_column`` unique non-negative
    integer row ids stored in the release (CSV: ``label_column`` is a column number).
    With ``shard``, ``rows=(lo, hi)`` publishes only input rows lo..hi of the file (or directory
    of Parquet files; whole row groups before lo are not read): a worker's part of one dataset.

    With ``shard=(i, N)``, write shard i of N of a sharded release: ``output`` is the shard
    directory, the rows get the global ids ``first_row, first_row + 1, ...`` (any first row: each
    row's noise is that of its id), and ``finish_shards(output)`` writes the manifest once every
    shard exists; a shard already written, or a finished release, is never replaced.

    With ``ledger=DIR`` (and ``budget=ε``, ``(ε, δ)`` or ``"ε,δ"``), as ``dprp publish --ledger
    DIR --budget …``: the rows are fingerprinted with the ledger's key, the release is recorded in
    its journal, and one that would exceed the dataset's budget is refused (no output file)."""

def finish_shards(dir: PathLike) -> Release:
    """Check the shards in dir and write its manifest (``dprp shards finish``); open it."""

def calibrate(
    *,
    epsilon: float,
    mechanism: Optional[str] = None,
    delta: Optional[float] = None,
    dim: Optional[int] = None,
    k: Optional[int] = None,
    sensitivity: Optional[float] = None,
    beta: Optional[float] = None,
    neighbour: Optional[str] = None,
    projection: Optional[str] = None,
    seed: Optional[Union[int, str]] = None,
    min_norm: Optional[float] = None,
    individual_dp: bool = False,
    epsilon_norm: Optional[float] = None,
    radius: Optional[float] = None,
    noise: Optional[str] = None,
) -> dict[str, Any]: ...

def privatise(
    v: Union[npt.NDArray[Union[np.float32, np.float64]], Sequence[float]],
    *,
    mechanism: str,
    epsilon: float,
    seed: Union[int, str],
    row: int = 0,
    k: Optional[int] = None,
    projection: Optional[str] = None,
    epsilon_norm: Optional[float] = None,
    radius: Optional[float] = None,
) -> npt.NDArray[np.float32]:
    """One user's local-DP message for v (noise from the OS).

    ``v`` is one vector: a 1-D float32 or float64 array, or a list of numbers (any other shape
    raises ``DprpError`` naming it). ``k`` is the projected dimension of projunit and
    projunit-correlated and ``projection`` projunit's map (srht, rotation, gaussian,
    srht-nearly-unbiased), as ``dprp publish -k K --projection MAP``; ``seed`` the public seed
    (hex string or non-negative int) the server also uses."""

class MeanAccumulator:
    """The server's streaming, mergeable mean of local-DP messages."""

    def __init__(
        self,
        *,
        mechanism: str,
        epsilon: float,
        dim: int,
        seed: Union[int, str],
        k: Optional[int] = None,
        projection: Optional[str] = None,
        epsilon_norm: Optional[float] = None,
        radius: Optional[float] = None,
    ) -> None:
        """An empty accumulator for the mechanism with the clients' public parameters."""
    def add(
        self, row: int, message: Union[npt.NDArray[Union[np.float32, np.float64]], Sequence[float]]
    ) -> None:
        """Add user ``row``'s message. A message with a NaN or infinite value raises
        ``DprpError`` naming the position, and the accumulator is left unchanged."""
    def add_rows(
        self, first_row: int, messages: npt.NDArray[Union[np.float32, np.float64]]
    ) -> None:
        """Add the messages (one per row) of users first_row, first_row + 1, ...; nothing is
        added when one is refused."""
    @staticmethod
    def of_release(path: PathLike, rows: bool = True) -> "MeanAccumulator":
        """The accumulator of a local-DP release's mechanism (as ``dprp mean`` builds it), with
        every row of the release added by global id when ``rows`` (a shard file: its own rows);
        ``rows=False``: empty, from the header and metadata only."""
    def merge(self, other: "MeanAccumulator") -> None: ...
    @property
    def n(self) -> int: ...
    def to_json(self) -> str: ...
    def merge_json(self, state: str) -> None: ...
    def finish(self) -> dict[str, Any]: ...

class DistributedEncoder:
    """A client's distributed-DP encoder into residues mod 2^bits and the server's decoder of
    their secure sum (DDG, count sketch + DDG, Binomial): every client and the server build it
    from the same public parameters and get the same plan. One message is not private alone:
    send it only into a secure sum (``dprp.flower`` uses Flower's SecAgg+)."""

    def __init__(
        self,
        mechanism: str,
        *,
        dim: int,
        clients: int,
        epsilon: float,
        delta: float,
        clip: float,
        seed: Union[int, str],
        bits: int = 16,
        bits_per_parameter: Optional[float] = None,
        max_wrap: float = 1e-6,
        max_clients: Optional[int] = None,
    ) -> None:
        """Plan for sums whose noise shares come from ``clients`` clients (ε, δ met with that
        many) and whose modulus holds up to ``max_clients`` messages (default ``clients``)."""
    @property
    def dim(self) -> int: ...
    @property
    def message_len(self) -> int: ...
    @property
    def bits(self) -> int: ...
    @property
    def bits_per_parameter(self) -> float: ...
    @property
    def family(self) -> str:
        """``zcdp`` (DDG family) or ``approx`` (Binomial): how rounds compose."""
    def plan(self) -> dict[str, Any]:
        """ε, δ, bits, message length, wrap bound, expected squared error, the mechanism's
        parameters and the guarantee's statement."""
    def encode(
        self, x: Union[npt.NDArray[Union[np.float32, np.float64]], Sequence[float]]
    ) -> npt.NDArray[np.uint64]:
        """One client's message: ``message_len`` residues (noise share from the OS CSPRNG)."""
    def decode(
        self, residues: npt.NDArray[Union[np.uint64, np.int64]], clients: int
    ) -> npt.NDArray[np.float64]:
        """The mean of ``clients`` clients' vectors from the residues of their messages' sum."""
    def guarantee_at(self, survivors: int) -> dict[str, Any]:
        """The guarantee of a sum of ``survivors`` messages (fewer shares: larger ε), with its
        ``cost`` for ``RoundsAccountant.charge``."""
    def wrap_probability_at(self, clients: int) -> float: ...

class RoundsAccountant:
    """Composition over training rounds against a budget given up front: ``zcdp`` (ρ's add),
    ``approx`` (basic composition) or ``local`` (pure ε-LDP, δ = 0)."""

    def __init__(self, family: str, *, epsilon: float, delta: float) -> None: ...
    def per_round(self, rounds: int) -> dict[str, float]:
        """Each round's share of the budget split evenly over ``rounds``."""
    def check(self, cost: dict[str, float]) -> dict[str, Any]:
        """The total if a round of ``cost`` ran next; ``DprpError`` past the budget."""
    def charge(self, cost: dict[str, float]) -> dict[str, Any]:
        """Record a round (refused, nothing recorded, past the budget); the new total."""
    def total(self) -> dict[str, Any]: ...
    @property
    def budget(self) -> tuple[float, float]: ...

def eval_retrieval(
    train: npt.NDArray[Union[np.float32, np.float64]],
    test: npt.NDArray[Union[np.float32, np.float64]],
    *,
    mechanisms: str,
    epsilons: list[float],
    ks: list[int],
    delta: float = 1e-6,
    beta: float = 1.0,
    min_norm: Optional[float] = None,
    query_mode: str = "both",
    repeat: int = 1,
    seed: Optional[Union[int, str]] = None,
) -> dict[str, Any]:
    """The retrieval report of ``dprp eval retrieval`` (precision@10, recall@100) as a dict."""
