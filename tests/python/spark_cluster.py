"""A Spark standalone cluster on this machine for the tests: a master and N workers as separate
JVMs on loopback (the master on 127.0.0.1, worker i on 127.0.0.(i+2)) (pyspark's own jars, `spark-class`, the machine's Java), free ports, their own
work and log directories; every process stopped (SIGTERM, then SIGKILL) on exit, errors included.

    with StandaloneCluster(workers=2, tmp=tmp_path) as c:
        spark = c.session()          # a SparkSession on spark://127.0.0.1:<port>
        ...
        c.executor_pids()            # the executors' JVMs (CoarseGrainedExecutorBackend)
"""

from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
import uuid

import pyspark

SPARK_HOME = pathlib.Path(pyspark.__file__).resolve().parent
MARK = "DPRP_SPARK_CLUSTER"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pids_with(token: str) -> list[int]:
    """Processes whose environment carries our marker (the cluster's JVMs and their children)."""
    out = []
    for d in pathlib.Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if f"{MARK}={token}".encode() in (d / "environ").read_bytes().split(b"\0"):
                out.append(int(d.name))
        except OSError:
            continue
    return out


class StandaloneCluster:
    def __init__(self, workers: int, tmp: pathlib.Path, cores: int = 1, memory: str = "1g") -> None:
        self.n, self.tmp, self.cores, self.memory = workers, pathlib.Path(tmp), cores, memory
        self.token = uuid.uuid4().hex
        self.procs: list[subprocess.Popen] = []
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.spark = None

    def _env(self, ip: str = "127.0.0.1") -> dict:
        env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP=ip, PYSPARK_PYTHON=sys.executable,
                   SPARK_LOG_DIR=str(self.tmp / "logs"), SPARK_NO_DAEMONIZE="1")
        env[MARK] = self.token
        return env

    def _start(self, name: str, args: list[str], ip: str = "127.0.0.1") -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "wb")
        p = subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], stdout=log, stderr=subprocess.STDOUT,
                             env=self._env(ip), start_new_session=True)
        self.procs.append(p)
        return p

    def __enter__(self) -> "StandaloneCluster":
        (self.tmp / "logs").mkdir(parents=True, exist_ok=True)
        try:
            self._start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", "0"])
            self._wait_port(self.port, 90)
            for i in range(self.n):
                work = self.tmp / f"worker{i}"
                work.mkdir(exist_ok=True)
                # each worker on an address of its own (127.0.0.2, .3, …: all loopback on Linux),
                # so Spark sees two hosts (it never runs a speculative copy on the host of the
                # attempt it copies)
                ip = f"127.0.0.{i + 2}"
                self._start(f"worker{i}", ["org.apache.spark.deploy.worker.Worker", self.url, "--host", ip, "--cores", str(self.cores),
                                           "--memory", self.memory, "--webui-port", "0", "--work-dir", str(work)], ip)
            self._wait_workers(90)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_port(self, port: int, timeout: float) -> None:
        end = time.time() + timeout
        while time.time() < end:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return
            if any(p.poll() is not None for p in self.procs):
                raise RuntimeError(f"a cluster process died:\n{self.logs()}")
            time.sleep(0.5)
        raise RuntimeError(f"the master did not listen on {port} within {timeout} s:\n{self.logs()}")

    def _wait_workers(self, timeout: float) -> None:
        end = time.time() + timeout
        while time.time() < end:
            text = (self.tmp / "master.log").read_text(errors="replace")
            if text.count("Registering worker") >= self.n:
                return
            if any(p.poll() is not None for p in self.procs):
                raise RuntimeError(f"a cluster process died:\n{self.logs()}")
            time.sleep(0.5)
        raise RuntimeError(f"{self.n} workers did not register within {timeout} s:\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-2000:]}" for f in sorted(self.tmp.glob("*.log")))

    def session(self, **conf):
        from pyspark.sql import SparkSession

        os.environ.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
        b = (SparkSession.builder.master(self.url).appName("dprp-cluster-test").config("spark.ui.enabled", "false")
             .config("spark.executor.memory", "700m").config("spark.executor.cores", "1").config("spark.driver.host", "127.0.0.1")
             .config("spark.executorEnv." + MARK, self.token).config("spark.task.maxFailures", "4")
             # a lost executor is noticed in seconds, not after the default 120 s
             .config("spark.network.timeout", "20s").config("spark.network.timeoutInterval", "5s")
             .config("spark.executor.heartbeatInterval", "2s")
             # a few hundred rows: 4 partitions after a sort, not Spark's default 200 tasks
             .config("spark.sql.shuffle.partitions", "4"))
        for k, v in conf.items():
            b = b.config(k, v)
        self.spark = b.getOrCreate()
        return self.spark

    def pids(self) -> list[int]:
        """Every process of the cluster (JVMs, Python daemons and workers: they inherit the marker)."""
        return _pids_with(self.token)

    def executor_pids(self) -> list[int]:
        """The executors' JVMs (started by the workers; they inherit the marker)."""
        out = []
        for pid in _pids_with(self.token):
            try:
                cmd = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"CoarseGrainedExecutorBackend" in cmd:
                out.append(pid)
        return out

    def __exit__(self, *exc) -> None:
        if self.spark is not None:
            try:
                self.spark.stop()
            except Exception:  # noqa: BLE001 - stopping must go on
                pass
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        end = time.time() + 15
        while time.time() < end and any(p.poll() is None for p in self.procs):
            time.sleep(0.2)
        for pid in _pids_with(self.token) + [p.pid for p in self.procs if p.poll() is None]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
