"""Ctrl-C during a long publish raises KeyboardInterrupt and leaves no output file."""

import os
import signal
import threading

import numpy as np
import pytest

import dprp


@pytest.fixture(autouse=True)
def python_handles_sigint():
    """Python raises KeyboardInterrupt only if SIGINT was not ignored when it started; a test run
    launched in the background by a non-interactive shell (`cmd &`) inherits SIG_IGN. Install
    Python's handler for these tests, as an interactive session has it, and restore what was."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def interrupt_after(seconds):
    main = threading.main_thread().ident
    t = threading.Timer(seconds, lambda: signal.pthread_kill(main, signal.SIGINT))
    t.start()
    return t


class InterruptWhenWriting(threading.Thread):
    """SIGINT to the main thread as soon as the release's temporary file exists in `directory`
    (publish is then in its pipeline), so the test does not depend on how fast the machine is
    (a fixed 0.3 s delay came after the whole publish on an idle 2-core machine)."""

    def __init__(self, directory):
        super().__init__(daemon=True)
        self.directory, self.main = directory, threading.main_thread().ident
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(0.001):
            if any(f.startswith(".dprp-tmp-") for f in os.listdir(self.directory)):
                signal.pthread_kill(self.main, signal.SIGINT)
                return

    def cancel(self):
        self.stop.set()


@pytest.mark.parametrize("source", ["array", "path"])
def test_sigint_during_publish(tmp_path, source):
    # dense projection of 120k × 256 rows to k = 1024: about a second of work on two idle cores
    x = np.random.default_rng(1).random((120_000, 256), dtype=np.float32)
    if source == "path":
        np.save(tmp_path / "x.npy", x)
        x = str(tmp_path / "x.npy")
    out = tmp_path / "big.dprp"
    t = InterruptWhenWriting(tmp_path)
    t.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            dprp.publish(x, output=out, mechanism="dp-rp-g-opt", epsilon=1.0, delta=1e-6,
                         k=1024)
    finally:
        t.cancel()
    left = sorted(os.listdir(tmp_path))
    assert left == (["x.npy"] if source == "path" else []), left
    # the module still works after the interrupt
    small = dprp.publish(np.random.default_rng(2).random((50, 8), dtype=np.float32), output=out,
                         mechanism="dp-oporp", epsilon=1.0, delta=1e-6, k=4)
    assert small.n == 50


def test_sigint_during_search(tmp_path):
    x = np.random.default_rng(1).random((20_000, 64), dtype=np.float32)
    rel = dprp.publish(x, output=tmp_path / "r.dprp", mechanism="dp-oporp", epsilon=1.0,
                       delta=1e-6, k=64)
    # 200k queries against 20k rows: seconds of work, interrupted after 0.3 s
    queries = np.random.default_rng(2).random((200_000, 64), dtype=np.float32)
    t = interrupt_after(0.3)
    try:
        with pytest.raises(KeyboardInterrupt):
            rel.search(queries, top=10)
    finally:
        t.cancel()
