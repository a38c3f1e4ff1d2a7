"""Run a Flower App in Flower's deployment engine on this machine: a `flower-superlink` and N
`flower-supernode` processes on free loopback ports (insecure, 127.0.0.1 only; Flower 1.42 serves
the Fleet, Control and Runtime APIs on one HTTP port), the App submitted with `flwr run`, waited
for with `flwr ls`, its server log read with `flwr log`. Flower's files go to a temporary
FLWR_HOME. Every process started here, and whatever Flower spawns from them (SuperExec,
`flwr-serverapp`, `flwr-clientapp`, some in sessions of their own), carries an environment marker
and is stopped on exit, errors and timeouts included. `kill_on={i: path}` SIGKILLs SuperNode i's
process group (SuperNode, SuperExec, ClientApps) as soon as the file `path` appears.

    with LocalDeployment(supernodes=3) as d:
        result = d.run("tests/python/flower_app", {"num-server-rounds": 2}, kill_on={1: marker})

CLI: python examples/flower/local_deployment.py APP_DIR [--supernodes N] [-c 'k=v ...']
     [--kill-on I=PATH] [--timeout S] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from typing import Any, Mapping, Optional

TOKEN_ENV = "DPRP_LOCAL_DEPLOYMENT"
CONNECTION = "dprp-local"


class DeploymentError(RuntimeError):
    """The deployment did not start, the run did not finish in time, or the SuperLink died."""


@dataclasses.dataclass
class Killed:  # a SuperNode killed by `kill_on`: when (since submission; time.time()), which pids
    partition: int
    marker: str
    after_seconds: float
    at: float
    pids: list[int]


@dataclasses.dataclass
class DeploymentResult:
    run_id: int
    status: str  # Flower's final run status, e.g. "finished:completed"
    server_log: str  # `flwr log <run> --show`
    seconds: float  # from submission to the finished status
    killed: dict[int, Killed]
    workdir: pathlib.Path


def free_ports(n: int) -> list[int]:
    """n distinct free loopback ports (held open together while chosen)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string
    raise TypeError(f"run config: {v!r} is not a bool, number or string")


class LocalDeployment:
    def __init__(self, supernodes: int = 3, *, bin_dir: Optional[str] = None, workdir: Optional[str] = None,
                 startup_timeout: float = 60.0, keep_workdir: bool = False) -> None:
        if supernodes < 1:
            raise ValueError("supernodes must be ≥ 1")
        self.n = supernodes
        self.bin = pathlib.Path(bin_dir or os.path.dirname(sys.executable))
        for exe in ("flower-superlink", "flower-supernode", "flower-superexec", "flwr"):
            if not (self.bin / exe).exists():
                raise DeploymentError(f"{self.bin / exe} missing: install flwr in this environment or pass bin_dir")
        self.startup_timeout = startup_timeout
        self.keep = keep_workdir
        self.workdir = pathlib.Path(workdir or tempfile.mkdtemp(prefix="dprp-flower-"))
        self.token = uuid.uuid4().hex
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, pathlib.Path] = {}
        self.address = ""
        self.subreaper = False

    # -- processes ----------------------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            TOKEN_ENV: self.token,
            "FLWR_HOME": str(self.workdir / "flwr-home"),
            "PATH": f"{self.bin}{os.pathsep}{env.get('PATH', '')}",  # Flower spawns flower-superexec by name
            "FLWR_DISABLE_UPDATE_CHECK": "1",
            "FLWR_SUPEREXEC_TASK_POLL_INTERVAL": "0.1",  # default 1 s per ClientApp start
            "PYTHONUNBUFFERED": "1",
        })
        for k in ("NO_PROXY", "no_proxy"):  # everything here talks to 127.0.0.1
            env[k] = ",".join(filter(None, ["127.0.0.1", "localhost", env.get(k)]))
        return env

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        log = self.workdir / f"{name}.log"
        self.logs[name] = log
        with open(log, "wb") as f:
            p = subprocess.Popen([str(self.bin / args[0]), *args[1:]], stdout=f, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, cwd=self.workdir, env=self._env(), start_new_session=True)
        self.procs[name] = p
        return p

    def _flwr(self, *args: str, timeout: float = 60.0) -> str:
        """Run the `flwr` CLI against this deployment's SuperLink; its stdout."""
        out = subprocess.run([str(self.bin / "flwr"), *args], capture_output=True, text=True, cwd=self.workdir,
                             env=self._env(), timeout=timeout, stdin=subprocess.DEVNULL)
        if out.returncode != 0:
            raise DeploymentError(f"flwr {' '.join(args)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
        return out.stdout

    def log_tail(self, name: str, lines: int = 30) -> str:
        p = self.logs.get(name)
        return "\n".join(p.read_text(errors="replace").splitlines()[-lines:]) if p and p.exists() else ""

    def _wait(self, what: str, ok, proc: subprocess.Popen, name: str) -> None:
        end = time.monotonic() + self.startup_timeout
        while not ok():
            if proc.poll() is not None:
                raise DeploymentError(f"{name} exited ({proc.returncode}) before {what}:\n{self.log_tail(name)}")
            if time.monotonic() > end:
                raise DeploymentError(f"{name}: no {what} within {self.startup_timeout:.0f} s:\n{self.log_tail(name)}")
            time.sleep(0.1)

    def start(self) -> "LocalDeployment":
        # Orphans of killed processes (a SuperNode's SuperExec) are re-parented to us, not to
        # init, so close() collects them at once (Linux; elsewhere init does, later).
        self.subreaper = _set_subreaper(True)
        try:
            (self.workdir / "flwr-home").mkdir(parents=True, exist_ok=True)
            link_port, *node_ports = free_ports(1 + self.n)
            self.address = f"127.0.0.1:{link_port}"
            (self.workdir / "flwr-home" / "config.toml").write_text(
                f'[superlink]\ndefault = "{CONNECTION}"\n\n[superlink.{CONNECTION}]\n'
                f'address = "{self.address}"\ninsecure = true\n'
            )
            link = self._spawn("superlink", ["flower-superlink", "--insecure", "--host", "127.0.0.1", "--port",
                                             str(link_port), "--disable-runtime-dependency-installation"])

            for i, port in enumerate(node_ports):  # they retry until the SuperLink answers
                self._spawn(f"supernode{i}", [
                    "flower-supernode", "--insecure", "--superlink", self.address, "--host", "127.0.0.1",
                    "--port", str(port), "--node-config", f"partition-id={i} num-partitions={self.n}"])

            self._wait("health", self._healthy, link, "superlink")
            for i in range(self.n):
                name = f"supernode{i}"
                self._wait("registration", lambda: "SuperNode ID:" in self.logs[name].read_text(errors="replace"),
                           self.procs[name], name)
        except BaseException:
            self.close()
            raise
        return self

    def _healthy(self) -> bool:
        try:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
            with opener.open(f"http://{self.address}/health", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    def kill_supernode(self, i: int) -> list[int]:
        """SIGKILL SuperNode i's process group (SuperNode, its SuperExec and ClientApps)."""
        p = self.procs[f"supernode{i}"]
        pids = [pid for pid, pgid in _processes(self.token) if pgid == p.pid]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
        self._reap(set(pids), 2.0)  # its SuperExec, orphaned to us
        return pids

    # -- a run ---------------------------------------------------------------------------------
    def run(self, app_dir: str | os.PathLike, run_config: Optional[Mapping[str, Any]] = None, *,
            overrides: tuple[str, ...] = (), kill_on: Optional[Mapping[int, str | os.PathLike]] = None,
            timeout: float = 300.0, poll: float = 1.0, done_file: Optional[str | os.PathLike] = None,
            ) -> DeploymentResult:
        """Submit the App, kill SuperNode i when `kill_on[i]` appears, wait until the run is
        finished (any outcome) and return its status and server log; DeploymentError when it
        is not finished after `timeout` seconds (the run is stopped) or the SuperLink dies.
        The status is asked (`flwr ls`: 1–4 s, a second of CPU) every `poll` seconds, or, given
        a `done_file` the App writes when it ends, every 30 s until that file appears."""
        pending = {int(i): pathlib.Path(m) for i, m in (kill_on or {}).items()}
        if not set(pending) <= set(range(self.n)):
            raise ValueError(f"kill_on: SuperNodes are 0..{self.n - 1}, got {sorted(pending)}")
        args = ["run", str(pathlib.Path(app_dir).resolve()), CONNECTION, "--format", "json"]
        if run_config:
            f = self.workdir / f"run-config-{uuid.uuid4().hex[:8]}.toml"
            f.write_text("".join(f"{k} = {toml_value(v)}\n" for k, v in run_config.items()))
            args += ["--run-config", str(f)]
        for o in overrides:
            args += ["--run-config", o]
        out = self._flwr(*args)
        try:
            run_id = int(json.loads(out[out.index("{"):])["run-id"])
        except (ValueError, KeyError, TypeError) as e:
            raise DeploymentError(f"flwr run: no run id in its output:\n{out}") from e
        t0 = time.monotonic()
        killed: dict[int, Killed] = {}
        status, last_poll = "", -1e9
        while True:
            for i, marker in list(pending.items()):
                if marker.exists():
                    killed[i] = Killed(i, str(marker), time.monotonic() - t0, time.time(), self.kill_supernode(i))
                    del pending[i]
            if self.procs["superlink"].poll() is not None:
                raise DeploymentError(f"the SuperLink died during run {run_id}:\n{self.log_tail('superlink')}")
            waiting = done_file is not None and not pathlib.Path(done_file).exists()
            if time.monotonic() >= last_poll + (30.0 if waiting else poll):
                status, last_poll = self.status(run_id), time.monotonic()
                if status.startswith("finished"):
                    break
            if time.monotonic() - t0 > timeout:
                with contextlib.suppress(DeploymentError, subprocess.TimeoutExpired):
                    self._flwr("stop", str(run_id), CONNECTION, timeout=30)
                raise DeploymentError(f"run {run_id} not finished after {timeout:.0f} s (status {status!r}); "
                                      f"stopped.\nserver log:\n{self.server_log(run_id)[-4000:]}")
            time.sleep(0.1)
        seconds, log = time.monotonic() - t0, self.server_log(run_id)
        (self.workdir / f"run-{run_id}.log").write_text(log)
        return DeploymentResult(run_id, status, log, seconds, killed, self.workdir)

    def status(self, run_id: int) -> str:
        out = self._flwr("ls", CONNECTION, "--run-id", str(run_id), "--format", "json")
        try:
            runs = json.loads(out[out.index("{"):]).get("runs", [])
        except ValueError as e:
            raise DeploymentError(f"flwr ls: unreadable output:\n{out}") from e
        return str(runs[0]["status"]) if runs else ""

    def server_log(self, run_id: int) -> str:
        try:
            return self._flwr("log", str(run_id), CONNECTION, "--show", timeout=30)
        except (DeploymentError, subprocess.TimeoutExpired) as e:
            return f"(no server log: {e})"

    # -- cleanup -------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop every process this deployment started (and Flower's children of them): SIGTERM
        to each process group, then SIGKILL by pid to whatever still carries the marker."""
        seen = {pid for pid, _ in _processes(self.token)} | _descendants({p.pid for p in self.procs.values()})
        for p in self.procs.values():
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
        end = time.monotonic() + 5
        for p in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=max(0.1, end - time.monotonic()))
        for _ in range(50):  # whatever is left (other sessions, orphans): SIGKILL, by pid
            left = [pid for pid, _ in _processes(self.token)]
            if not left:
                break
            seen.update(left)
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self._reap(seen, 0.1)
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
            p.wait(timeout=5)
        self._reap(seen | _adopted(), 2.0)
        if self.subreaper:
            self.subreaper = not _set_subreaper(False)
        if not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _reap(self, pids: set[int], seconds: float) -> None:
        """Collect the exit status of orphans re-parented to us (no zombies left behind);
        the processes started here are reaped by their Popen."""
        own = {p.pid for p in self.procs.values()}
        left, end = set(pids) - own, time.monotonic() + seconds
        while left:
            for pid in list(left):
                try:
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        left.discard(pid)
                except ChildProcessError:  # not our child (or already collected)
                    left.discard(pid)
            if not left or time.monotonic() > end:
                break
            time.sleep(0.05)

    def __enter__(self) -> "LocalDeployment":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def _set_subreaper(on: bool) -> bool:
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, int(on), 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _descendants(roots: set[int]) -> set[int]:
    """The descendants of `roots` (zombies included: they are reaped once orphaned to us)."""
    children: dict[int, list[int]] = {}
    for d in pathlib.Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, ValueError):
            stat = (d / "stat").read_text()
            children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(d.name))
    out, todo = set(), list(roots)
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _adopted() -> set[int]:
    """Flower's processes re-parented to us (their subreaper), zombies included."""
    found = set()
    for d in pathlib.Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, ValueError):
            stat = (d / "stat").read_text()
            comm, ppid = stat[stat.index("(") + 1:stat.rindex(")")], int(stat[stat.rindex(")") + 2:].split()[1])
            if ppid == os.getpid() and comm.startswith(("flwr-", "flower-")):
                found.add(int(d.name))
    return found


def _processes(token: str) -> list[tuple[int, int]]:
    """(pid, process group) of the live processes whose environment carries `token`."""
    out, me = [], os.getpid()
    for d in pathlib.Path("/proc").iterdir() if os.path.isdir("/proc") else []:  # Linux only
        if not d.name.isdigit() or int(d.name) == me:
            continue
        try:
            if f"{TOKEN_ENV}={token}".encode() not in (d / "environ").read_bytes().split(b"\0"):
                continue
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z":  # zombies are gone already (their parent or init reaps them)
            out.append((int(d.name), int(fields[2])))
    return out


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("app", help="the Flower App directory (with its pyproject.toml)")
    ap.add_argument("--supernodes", type=int, default=3)
    ap.add_argument("-c", "--run-config", action="append", default=[], help="'k=v k2=v2' (TOML values), repeatable")
    ap.add_argument("--kill-on", action="append", default=[], metavar="I=PATH",
                    help="kill SuperNode I when PATH appears, repeatable")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--keep", action="store_true", help="keep the working directory (logs)")
    a = ap.parse_args(argv)
    kill_on = {int(k): v for k, v in (s.split("=", 1) for s in a.kill_on)}
    with LocalDeployment(a.supernodes, keep_workdir=a.keep) as d:
        r = d.run(a.app, overrides=tuple(a.run_config), kill_on=kill_on, timeout=a.timeout)
    print(r.server_log)
    print(json.dumps({"run_id": r.run_id, "status": r.status, "seconds": round(r.seconds, 1),
                      "killed": {i: dataclasses.asdict(k) for i, k in r.killed.items()},
                      "workdir": str(r.workdir) if a.keep else None}, indent=1))
    return 0 if r.status == "finished:completed" else 1


if __name__ == "__main__":
    sys.exit(main())
