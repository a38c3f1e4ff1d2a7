"""dprp.publish → Release: the file the CLI writes, zero-copy sketches, input kinds."""

import json
import os
import subprocess

import numpy as np
import pytest

import dprp

from conftest import dprp_bin, run_cli

GAUSS = dict(mechanism="dp-oporp", epsilon=5.0, delta=1e-6, k=32)


def test_round_trip_zero_copy_and_cli_reads_it(tmp_path, data):
    out = tmp_path / "r.dprp"
    rel = dprp.publish(data, output=str(out), seed=7, **GAUSS)
    assert (rel.n, rel.p, rel.k) == (600, 48, 32)
    s1, s2 = rel.sketches, rel.sketches
    assert s1.dtype == np.float32 and s1.shape == (600, 32)
    assert s1.flags.writeable is False
    with pytest.raises(ValueError):
        s1[0, 0] = 1.0
    # a view of the memory map: the Release is its base, and two accesses share memory
    assert s1.base is rel
    assert np.shares_memory(s1, s2)
    assert not s1.flags.owndata
    # the view keeps the mapping alive after the Release name is gone
    del rel
    reopened = dprp.Release.open(out)
    assert np.array_equal(s1, reopened.sketches)
    # `dprp info` reads the file; the metadata and the guarantee are the CLI's
    info = json.loads(run_cli("info", "--json", str(out)))
    assert info["checksum_verified"] is True
    meta = reopened.meta
    for key in ("n", "p", "k", "payload", "statement", "mechanism", "guarantee", "noise"):
        assert meta[key] == info[key], key
    assert meta["noise"]["source"] == "os-csprng"
    assert meta["private"] is True
    assert reopened.guarantee == info["statement"]
    assert "guarantee    " + reopened.guarantee in run_cli("info", str(out))


def test_same_release_as_the_cli(tmp_path, data):
    """Same input, projection seed and (test-only) noise seed: the payload is byte-identical to
    `dprp publish`, so the module runs the CLI's pipeline, calibration and noise."""
    np.save(tmp_path / "x.npy", data)
    cli = tmp_path / "cli.dprp"
    run_cli("publish", str(tmp_path / "x.npy"), "-m", "dp-oporp", "-e", "5", "-d", "1e-6",
            "-k", "32", "--projection-seed", "abc", "--noise-seed", "t", "-o", str(cli))
    with pytest.warns(UserWarning, match="NOT private"):
        py = dprp.publish(data, output=tmp_path / "py.dprp", seed="abc", noise_seed="t", **GAUSS)
    c = dprp.Release.open(cli)
    assert np.array_equal(py.sketches, c.sketches)
    assert py.meta["mechanism"] == c.meta["mechanism"]
    # power: another noise seed gives other bytes
    other = dprp.publish(data, output=tmp_path / "o.dprp", seed="abc", noise_seed="u", **GAUSS)
    assert not np.array_equal(other.sketches, c.sketches)


def test_f64_fortran_strided_and_path_inputs_give_the_same_rows(tmp_path, data):
    kw = dict(seed="5", noise_seed="n", **GAUSS)
    with pytest.warns(UserWarning):
        base = dprp.publish(data, output=tmp_path / "a.dprp", **kw).sketches
        f64 = dprp.publish(data.astype(np.float64), output=tmp_path / "b.dprp", **kw).sketches
        fort = dprp.publish(np.asfortranarray(data), output=tmp_path / "c.dprp", **kw).sketches
        wide = np.zeros((600, 96), dtype=np.float32)
        wide[:, ::2] = data
        strided = dprp.publish(wide[:, ::2], output=tmp_path / "d.dprp", **kw).sketches
        np.save(tmp_path / "x.npy", data)
        path = dprp.publish(str(tmp_path / "x.npy"), output=tmp_path / "e.dprp", **kw).sketches
    for other in (f64, fort, strided, path):
        assert np.array_equal(base, other)


def test_labels_are_stored(tmp_path, data):
    labels = np.arange(600, dtype=np.float64) % 3
    rel = dprp.publish(data, output=tmp_path / "l.dprp", labels=labels, **GAUSS)
    assert rel.meta["labels"] is True
    assert np.array_equal(rel.labels, labels.astype(np.float32))
    assert np.array_equal(rel.ids, np.arange(600, dtype=np.uint64))


def test_sign_release_packed_words_and_unpacked_signs(tmp_path, data):
    rel = dprp.publish(data, output=tmp_path / "s.dprp", mechanism="dp-signoporp-rr",
                       epsilon=4.0, k=40)
    words = rel.sketches
    assert words.dtype == np.uint64 and words.shape == (600, 1)
    assert words.flags.writeable is False and words.base is rel
    signs = rel.unpack_signs()
    assert signs.shape == (600, 40) and set(np.unique(signs)) <= {-1, 1}
    # repack: bit j set ⇔ sign +1, least significant bit first; padding bits are 0
    packed = ((signs > 0).astype(np.uint64) << np.arange(40, dtype=np.uint64)).sum(axis=1)
    assert np.array_equal(packed, words[:, 0])
    with pytest.raises(dprp.DprpError, match="holds values"):
        dprp.publish(data, output=tmp_path / "g.dprp", **GAUSS).unpack_signs()


def test_open_without_verifying_then_verify(tmp_path, data):
    """`Release.open(path, verify=False)` maps without hashing the file; `verify()` checks it
    later. A damaged payload is refused by the default open and by `verify()`, and only the
    checksum is skipped: a damaged header is still refused without verifying."""
    out = tmp_path / "r.dprp"
    dprp.publish(data, output=str(out), seed=7, **GAUSS)
    fresh = dprp.Release.open(out)
    assert fresh.verified is True
    lazy = dprp.Release.open(out, verify=False)
    assert lazy.verified is False
    assert np.array_equal(lazy.sketches, fresh.sketches)
    lazy.verify()
    assert lazy.verified is True
    del lazy, fresh

    raw = bytearray(out.read_bytes())
    raw[128 + 5] ^= 0x01  # one bit of the payload
    bad = tmp_path / "bad.dprp"
    bad.write_bytes(bytes(raw))
    with pytest.raises(dprp.DprpError, match="checksum mismatch"):
        dprp.Release.open(bad)
    unchecked = dprp.Release.open(bad, verify=False)
    assert unchecked.verified is False
    with pytest.raises(dprp.DprpError, match="checksum mismatch"):
        unchecked.verify()
    assert unchecked.verified is False

    raw = bytearray(out.read_bytes())
    raw[16] ^= 0x01  # n in the header
    header = tmp_path / "header.dprp"
    header.write_bytes(bytes(raw))
    with pytest.raises(dprp.DprpError):
        dprp.Release.open(header, verify=False)


def test_a_ledger_counts_a_notebook_release_as_the_cli_does(tmp_path, data):
    """dprp.publish(…, ledger=, budget=) is `dprp publish --ledger --budget` (issue 41): the array
    and the same rows in a .npy file are one dataset with one fingerprint; the CLI counts the
    Python release, Python counts the CLI's, and the release past the budget is refused by either
    front end before anything is written. Power: other rows are another dataset, charged apart."""
    led = tmp_path / "ledger"
    npy = tmp_path / "x.npy"
    np.save(npy, data)
    # a pure-ε mechanism: both totals (basic, and zCDP's ρ = ε²/2) put a third release past 5
    opts = dict(mechanism="dp-signoporp-rr", epsilon=2.0, k=16)
    cli = ["-m", "dp-signoporp-rr", "-e", "2", "-k", "16"]

    def totals():
        d = json.loads(run_cli("ledger", str(led), "--json"))["datasets"]
        return sorted((x["total"]["releases"], x["total"]["epsilon"]) for x in d)

    a = dprp.publish(data, output=tmp_path / "a.dprp", ledger=led, budget=(5.0, 1e-5), **opts)
    assert totals() == [(1, 2.0)]
    run_cli("publish", str(npy), *cli, "-o", str(tmp_path / "b.dprp"), "--ledger", str(led), "--budget", "5,1e-5")
    b = dprp.Release.open(tmp_path / "b.dprp")
    assert a.meta["dataset"]["fingerprint"] == b.meta["dataset"]["fingerprint"]
    assert totals() == [(2, 4.0)]

    # a third release (ε 6 > 5) is refused by Python as by the CLI, and writes nothing
    with pytest.raises(dprp.DprpError, match="exceed the privacy budget"):
        dprp.publish(data, output=tmp_path / "c.dprp", ledger=led, budget="5,1e-5", **opts)
    assert not (tmp_path / "c.dprp").exists()
    out = subprocess.run([dprp_bin(), "publish", str(npy), *cli, "-o", str(tmp_path / "c.dprp"),
                          "--ledger", str(led), "--budget", "5,1e-5"], capture_output=True, text=True)
    assert out.returncode == 1 and "exceed the privacy budget" in out.stderr
    assert not (tmp_path / "c.dprp").exists() and totals() == [(2, 4.0)]

    # power: one value changed is another dataset, with its own budget
    other = data.copy()
    other[7, 3] = 0.25 if other[7, 3] != 0.25 else 0.5
    o = dprp.publish(other, output=tmp_path / "o.dprp", ledger=led, budget=5.0, **opts)
    assert o.meta["dataset"]["fingerprint"] != a.meta["dataset"]["fingerprint"]
    assert totals() == [(1, 2.0), (2, 4.0)]

    # the refusals a user can reach, spelt for Python
    with pytest.raises(dprp.DprpError, match="ledger"):
        dprp.publish(data, output=tmp_path / "d.dprp", budget=5.0, **opts)
    with pytest.raises(TypeError, match="budget"):
        dprp.publish(data, output=tmp_path / "d.dprp", ledger=led, budget=[5.0], **opts)
    assert not (tmp_path / "d.dprp").exists()
    # a worker's shard cannot be recorded (it sees only its rows): refused before its shard
    # directory or a new ledger is made
    with pytest.raises(dprp.DprpError, match="shard"):
        dprp.publish(data, output=tmp_path / "s", shard=(0, 2), seed=7, ledger=tmp_path / "new", **opts)
    assert not (tmp_path / "s").exists() and not (tmp_path / "new").exists()

    # the dataset hashed in parts where the rows are (dprp.fingerprint_part, as Spark's tasks
    # do): an array's two halves, and two row windows of the .npy file, make the fingerprint the
    # CLI recorded; power: a part left out makes another
    with dprp.LedgerGate(led) as gate:
        key, p = gate.rows_key(), data.shape[1]
        halves = [dprp.fingerprint_part(data[:250], key), dprp.fingerprint_part(data[250:], key)]
        windows = [dprp.fingerprint_part(npy, key, rows=(0, 100)), dprp.fingerprint_part(npy, key, rows=(100, 600))]
        for parts in (halves, windows):
            assert sum(r for r, _, _ in parts) == len(data) and {d for _, d, _ in parts} == {p}
            assert gate.dataset(p, [(r, s) for r, _, s in parts])["fingerprint"] == b.meta["dataset"]["fingerprint"]
        assert gate.dataset(p, [(r, s) for r, _, s in windows[1:]])["fingerprint"] != b.meta["dataset"]["fingerprint"]
        with pytest.raises(dprp.DprpError, match="rows"):
            dprp.fingerprint_part(npy, key, rows=(300, 100))
