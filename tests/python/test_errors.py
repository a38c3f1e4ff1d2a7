"""Every error reaches Python as an exception carrying dprp's message; no partial output."""

import os

import numpy as np
import pytest

import dprp

GAUSS = dict(mechanism="dp-oporp", epsilon=5.0, delta=1e-6, k=16)


def no_files(d):
    return sorted(os.listdir(d)) == []


def test_dprp_error_is_a_value_error():
    assert issubclass(dprp.DprpError, ValueError)


@pytest.mark.parametrize("x,exc,match", [
    (np.zeros(10, dtype=np.float32), dprp.DprpError, "2-D array"),
    (np.zeros((2, 3, 4), dtype=np.float32), dprp.DprpError, "2-D array"),
    (np.zeros((10, 4), dtype=np.int32), TypeError, "dtype"),
    (np.zeros((10, 4), dtype=np.float16), TypeError, "dtype"),
    ([[0.1, 0.2]], TypeError, "numpy array or a path"),
    (42, TypeError, "numpy array or a path"),
])
def test_bad_arrays(tmp_path, x, exc, match):
    with pytest.raises(exc, match=match):
        dprp.publish(x, output=tmp_path / "r.dprp", **GAUSS)
    assert no_files(tmp_path)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_name_row_and_column(tmp_path, data, bad):
    x = data.copy()
    x[517, 9] = bad
    with pytest.raises(dprp.DprpError, match=r"row 517, column 9"):
        dprp.publish(x, output=tmp_path / "r.dprp", **GAUSS)
    assert no_files(tmp_path)


def test_f64_beyond_f32_range_is_refused(tmp_path, data):
    x = data.astype(np.float64)
    x[3, 2] = 1e300
    with pytest.raises(dprp.DprpError, match=r"row 3, column 2"):
        dprp.publish(x, output=tmp_path / "r.dprp", **GAUSS)


def test_values_outside_the_domain(tmp_path, data):
    with pytest.raises(dprp.DprpError, match="row 0"):
        dprp.publish(data * 0 + 5.0, output=tmp_path / "r.dprp", **GAUSS)
    assert no_files(tmp_path)


@pytest.mark.parametrize("kw,match", [
    (dict(epsilon=-1.0), "epsilon"),
    (dict(epsilon=0.0), "epsilon"),
    (dict(mechanism="nope"), "mechanism"),
    (dict(delta=None), "δ|delta"),
    (dict(delta=2.0), "δ|delta"),
    (dict(k=0), "k"),
    (dict(seed="xyz"), "seed|hex"),
    (dict(noise="neither"), "noise"),
    (dict(memory=0), "memory"),
    (dict(scale="bogus"), "scale"),
    (dict(normalize="l7"), "normalize|l7"),
])
def test_bad_parameters(tmp_path, data, kw, match):
    args = {**GAUSS, **kw}
    with pytest.raises(dprp.DprpError, match=match):
        dprp.publish(data, output=tmp_path / "r.dprp", **args)
    assert no_files(tmp_path)


def test_bad_paths(tmp_path, data):
    with pytest.raises(dprp.DprpError, match="does not exist|No such file"):
        dprp.publish(data, output=tmp_path / "missing-dir" / "r.dprp", **GAUSS)
    with pytest.raises(dprp.DprpError, match="No such file"):
        dprp.publish(str(tmp_path / "absent.npy"), output=tmp_path / "r.dprp", **GAUSS)
    (tmp_path / "x.txt").write_text("hello")
    with pytest.raises(dprp.DprpError, match="unknown input format"):
        dprp.publish(str(tmp_path / "x.txt"), output=tmp_path / "r.dprp", **GAUSS)
    with pytest.raises(dprp.DprpError, match="labels"):
        dprp.publish(str(tmp_path / "x.txt"), output=tmp_path / "r.dprp",
                     labels=np.zeros(3), **GAUSS)
    with pytest.raises(dprp.DprpError, match="labels"):
        dprp.publish(data, output=tmp_path / "r.dprp", labels=np.zeros(3), **GAUSS)
    assert sorted(os.listdir(tmp_path)) == ["x.txt"]


def test_release_open_errors(tmp_path, data):
    with pytest.raises(dprp.DprpError, match="No such file"):
        dprp.Release.open(tmp_path / "none.dprp")
    (tmp_path / "junk.dprp").write_bytes(b"x" * 200)
    with pytest.raises(dprp.DprpError, match="not a dprp release"):
        dprp.Release.open(tmp_path / "junk.dprp")
    dprp.publish(data, output=tmp_path / "r.dprp", **GAUSS)
    raw = bytearray((tmp_path / "r.dprp").read_bytes())
    raw[200] ^= 1
    (tmp_path / "bad.dprp").write_bytes(bytes(raw))
    with pytest.raises(dprp.DprpError, match="checksum mismatch"):
        dprp.Release.open(tmp_path / "bad.dprp")


def test_search_and_estimate_errors(tmp_path, data):
    rel = dprp.publish(data, output=tmp_path / "r.dprp", **GAUSS)
    with pytest.raises(dprp.DprpError, match="features"):
        rel.search(np.zeros((2, 5), dtype=np.float32))
    with pytest.raises(dprp.DprpError, match="2-D"):
        rel.search(np.zeros(48, dtype=np.float32))
    with pytest.raises(TypeError, match="dtype"):
        rel.search(np.zeros((2, 48), dtype=np.int64))
    with pytest.raises(dprp.DprpError, match="top|K"):
        rel.search(data[:2], top=0)
    with pytest.raises(dprp.DprpError, match="exceeds"):
        rel.search(data[:2], top=601)
    with pytest.raises(dprp.DprpError, match="hamming"):
        rel.search(data[:2], measure="hamming")
    with pytest.raises(dprp.DprpError, match="measure"):
        rel.search(data[:2], measure="euclid")
    q = data[:2].copy()
    q[1, 1] = np.nan
    with pytest.raises(dprp.DprpError, match="row 1, column 1"):
        rel.search(q)
    with pytest.raises(dprp.DprpError, match="out of range"):
        rel.estimate(0, 600)
    with pytest.raises(dprp.DprpError, match="invalid i: must be a non-negative integer, got -1"):
        rel.estimate(-1, 0)


def test_calibrate_errors():
    with pytest.raises(dprp.DprpError, match="delta|δ"):
        dprp.calibrate(epsilon=1.0)
    with pytest.raises(dprp.DprpError, match="dim"):
        dprp.calibrate(epsilon=1.0, delta=1e-6, mechanism="dp-oporp", k=8)
    with pytest.raises(dprp.DprpError, match="epsilon|ε"):
        dprp.calibrate(epsilon=-2.0, delta=1e-6, mechanism="dp-oporp", k=8, dim=32)
    with pytest.raises(dprp.DprpError, match="sensitivity"):
        dprp.calibrate(epsilon=1.0, delta=1e-6, mechanism="dp-oporp", k=8, dim=32,
                       sensitivity=2.0)
    # without a mechanism, an option that describes one is refused as `dprp calibrate` refuses
    # it (it was ignored), naming it
    for kw in (dict(k=8), dict(projection="gaussian"), dict(min_norm=0.5), dict(noise="float")):
        with pytest.raises(dprp.DprpError, match=f"invalid {next(iter(kw))}: describes a mechanism"):
            dprp.calibrate(epsilon=1.0, delta=1e-6, **kw)


# ---- negative integers name their keyword (issue 25 item 5) --------------------------------

LDP = dict(mechanism="privunitg", epsilon=4.0, seed="5eed")


@pytest.mark.parametrize("name,call", [
    ("row", lambda: dprp.privatise(np.full(4, 0.5), row=-1, **LDP)),
    ("k", lambda: dprp.privatise(np.full(4, 0.5), mechanism="projunit", epsilon=4.0,
                                 seed="5eed", k=-2)),
    ("seed", lambda: dprp.privatise(np.full(4, 0.5), mechanism="privunitg", epsilon=4.0,
                                    seed=-5)),
    ("dim", lambda: dprp.MeanAccumulator(dim=-4, **LDP)),
    ("k", lambda: dprp.MeanAccumulator(dim=4, mechanism="projunit", epsilon=4.0,
                                       seed="5eed", k=-1)),
    ("row", lambda: dprp.MeanAccumulator(dim=4, **LDP).add(-3, np.zeros(4, np.float32))),
    ("first_row", lambda: dprp.MeanAccumulator(dim=4, **LDP).add_rows(
        -3, np.zeros((2, 4), np.float32))),
    ("dim", lambda: dprp.calibrate(epsilon=1.0, delta=1e-6, mechanism="dp-oporp", k=8,
                                   dim=-32)),
    ("k", lambda: dprp.calibrate(epsilon=1.0, delta=1e-6, mechanism="dp-oporp", k=-8,
                                 dim=32)),
    ("seed", lambda: dprp.calibrate(epsilon=1.0, delta=1e-6, mechanism="dp-oporp", k=8,
                                    dim=32, seed=-9)),
    ("ks", lambda: dprp.eval_retrieval(np.zeros((4, 3)), np.zeros((2, 3)), mechanisms="dp-oporp",
                                       epsilons=[1.0], ks=[4, -4])),
    ("repeat", lambda: dprp.eval_retrieval(np.zeros((4, 3)), np.zeros((2, 3)),
                                           mechanisms="dp-oporp", epsilons=[1.0], ks=[4],
                                           repeat=-1)),
])
def test_negative_ints_name_the_keyword(name, call):
    with pytest.raises(dprp.DprpError, match=rf"invalid {name}: must be a non-negative"):
        call()


@pytest.mark.parametrize("kw,name", [
    (dict(k=-16), "k"),
    (dict(first_row=-1), "first_row"),
    (dict(memory=-1), "memory"),
    (dict(seed=-1), "seed"),
    (dict(shard=(-1, 2), seed=7), "shard"),
    (dict(shard=(0, -2), seed=7), "shard"),
])
def test_negative_publish_ints_name_the_keyword(tmp_path, data, kw, name):
    args = {**GAUSS, **kw}
    with pytest.raises(dprp.DprpError, match=rf"invalid {name}: must be a non-negative"):
        dprp.publish(data, output=tmp_path / "r.dprp", **args)
    assert no_files(tmp_path)


def test_negative_and_huge_release_ints(tmp_path, data):
    rel = dprp.publish(data, output=tmp_path / "r.dprp", **GAUSS)
    with pytest.raises(dprp.DprpError, match="invalid top: must be a non-negative"):
        rel.search(data[:2], top=-1)
    with pytest.raises(dprp.DprpError, match="invalid j: must be a non-negative"):
        rel.estimate(0, -2)
    with pytest.raises(dprp.DprpError, match="invalid i: .* too large"):
        rel.estimate(2**64, 0)
    with pytest.raises(dprp.DprpError, match="invalid row: .* too large"):
        dprp.privatise(np.full(4, 0.5), row=2**200, **LDP)
    with pytest.raises(dprp.DprpError, match="invalid row: must be a non-negative"):
        dprp.privatise(np.full(4, 0.5), row=-(2**200), **LDP)
    # numpy integers are ints too; a float is still a TypeError
    assert rel.estimate(np.int64(0), np.uint32(1))[1] > 0
    with pytest.raises(TypeError):
        rel.estimate(0.5, 1)


# ---- a release truncated while open (issue 25 item 5) ----------------------------------------


@pytest.mark.parametrize("verify", [True, False])
@pytest.mark.parametrize("mechanism", ["dp-oporp", "dp-signoporp-rr"])
def test_release_truncated_while_open_raises_instead_of_crashing(tmp_path, data, mechanism,
                                                                 verify):
    """Reading the memory map of a file truncated under it would kill the interpreter (SIGBUS):
    every reader of the map checks the file's length first."""
    kw = dict(GAUSS, mechanism=mechanism)
    if mechanism.endswith("-rr"):
        kw.pop("delta")
    path = tmp_path / "r.dprp"
    dprp.publish(data, output=path, labels=np.arange(600.0), **kw)
    rel = dprp.Release.open(path, verify=verify)
    os.truncate(path, os.path.getsize(path) // 2)
    for read in (lambda: rel.sketches, rel.unpack_signs, lambda: rel.labels, lambda: rel.ids,
                 rel.verify, lambda: rel.search(data[:2]), lambda: rel.estimate(0, 1)):
        with pytest.raises(dprp.DprpError, match="the file was truncated while open"):
            read()
    assert rel.n == 600 and rel.meta["n"] == 600  # the metadata was read at open
    os.truncate(path, 100)
    with pytest.raises(dprp.DprpError, match=r"truncated while open \(now 100 bytes"):
        rel.sketches
    with pytest.raises(dprp.DprpError, match="truncated"):
        dprp.Release.open(path)


def test_release_docs_warn_about_truncation():
    assert "truncate" in dprp.Release.sketches.__doc__


def test_release_replaced_or_removed_while_open_stays_readable(tmp_path, data):
    """Publishing again to the same name renames a new file over the old one, and removing the
    file only unlinks it: the map keeps the old file, intact, so neither is refused."""
    path = tmp_path / "r.dprp"
    rel = dprp.publish(data, output=path, **GAUSS)
    before = rel.sketches.copy()
    dprp.publish(data[:10], output=path, overwrite=True, **GAUSS)  # a new, shorter file there
    assert os.path.getsize(path) < rel.n * rel.k * 4
    np.testing.assert_array_equal(rel.sketches, before)
    rel.verify()
    os.remove(path)
    np.testing.assert_array_equal(rel.sketches, before)
    assert rel.estimate(0, 1)[1] > 0
