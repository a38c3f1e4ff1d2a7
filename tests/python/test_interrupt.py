"""Ctrl-C during a long publish raises KeyboardInterrupt and leaves no output file."""

import os
import signal
import threading

import numpy as np
import pytest

import dprp


def interrupt_after(seconds):
    main = threading.main_thread().ident
    t = threading.Timer(seconds, lambda: signal.pthread_kill(main, signal.SIGINT))
    t.start()
    return t


@pytest.mark.parametrize("source", ["array", "path"])
def test_sigint_during_publish(tmp_path, source):
    # dense projection of 60k × 256 rows to k = 1024: several seconds of work on two cores
    x = np.random.default_rng(1).random((60_000, 256), dtype=np.float32)
    if source == "path":
        np.save(tmp_path / "x.npy", x)
        x = str(tmp_path / "x.npy")
    out = tmp_path / "big.dprp"
    t = interrupt_after(0.3)
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
    queries = np.random.default_rng(2).random((50_000, 64), dtype=np.float32)
    t = interrupt_after(0.3)
    try:
        with pytest.raises(KeyboardInterrupt):
            rel.search(queries, top=10)
    finally:
        t.cancel()
