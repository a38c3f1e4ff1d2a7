"""Advisory 2026-11 through the Python module: numpy arrays and files published with every read
capped to an odd number of rows (DPRP_CHUNK_ROWS, read by the library at each publish) give the
bytes of the CLI's whole-file release, identical rows give no identical outputs, and a release
written by dprp 0.1.0 raises the advisory's UserWarning when opened."""

import json
import os

import numpy as np
import pytest

import dprp
from conftest import run_cli

N, P = 700, 300
FAMILIES = [
    ("dp-rp-g-opt", dict(epsilon=5, delta=1e-6, k=64)),
    ("dp-signoporp-rr", dict(epsilon=1, k=64)),
    ("idp-signrp-rr", dict(epsilon=1, k=64, individual_dp=True)),
    ("privunit2", dict(epsilon=4)),
    ("projunit", dict(epsilon=8, k=50)),
]


def identical_rows() -> np.ndarray:
    row = ((np.arange(P) * 37 % 129) - 64) / 64.0
    return np.tile(row, (N, 1))


def cli_args(mech, kw):
    args = ["-m", mech, "-e", str(kw["epsilon"])]
    if "delta" in kw:
        args += ["-d", str(kw["delta"])]
    if "k" in kw:
        args += ["-k", str(kw["k"])]
    if kw.get("individual_dp"):
        args += ["--individual-dp"]
    return args


@pytest.mark.parametrize("mech,kw", FAMILIES)
def test_arrays_and_files_at_odd_read_sizes_are_the_cli_release(tmp_path, monkeypatch, mech, kw):
    x = identical_rows()
    np.save(tmp_path / "x.npy", x)
    ref = tmp_path / "ref.dprp"
    run_cli("publish", str(tmp_path / "x.npy"), *cli_args(mech, kw), "--normalize", "l2",
            "--projection-seed", "5eed", "--noise-seed", "py", "-o", str(ref))
    want = dprp.Release.open(ref).sketches
    rows = [bytes(r) for r in np.ascontiguousarray(want).view(np.uint8).reshape(N, -1)]
    assert len(set(rows)) == N, "identical rows gave identical outputs"
    for cap in ("1", "255", "257"):
        monkeypatch.setenv("DPRP_CHUNK_ROWS", cap)
        for i, src in enumerate((x, x.astype(np.float32), str(tmp_path / "x.npy"))):
            with pytest.warns(UserWarning, match="NOT private"):
                got = dprp.publish(src, mechanism=mech, output=tmp_path / f"{cap}-{i}.dprp",
                                   seed="5eed", noise_seed="py", normalize="l2", **kw)
            assert np.array_equal(got.sketches, want), f"{mech}, reads of {cap} rows, input {i}"


def test_a_bad_read_cap_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("DPRP_CHUNK_ROWS", "0")
    with pytest.raises(dprp.DprpError, match="DPRP_CHUNK_ROWS"):
        dprp.publish(identical_rows(), mechanism="privunit2", epsilon=4, normalize="l2",
                     output=tmp_path / "x.dprp")
    assert not (tmp_path / "x.dprp").exists()


def test_a_0_1_0_release_warns_on_open(tmp_path):
    """A release whose writer is dprp 0.1.0 (the version string rewritten in place: same length;
    opened without the checksum, which the rewrite breaks) raises the advisory as a UserWarning
    and lists it in .advisories; the same file as 0.2.0 wrote it raises nothing."""
    import warnings

    # 7000 rows at p = 300: more than one 0.1.0 float64 read (⌊2²¹/300⌋ = 6990 rows)
    np.save(tmp_path / "x.npy", np.tile(identical_rows()[0], (7000, 1)))
    new = tmp_path / "new.dprp"
    run_cli("publish", str(tmp_path / "x.npy"), "-m", "privunit2", "-e", "4", "--normalize", "l2",
            "-o", str(new))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dprp.Release.open(new).advisories == []
    assert json.loads(run_cli("info", "--json", str(new)))["advisories"] == []
    data = new.read_bytes()
    tool = json.loads(run_cli("info", "--json", str(new)))["tool"].encode()
    assert tool.startswith(b"dprp 0.") and data.count(b'"' + tool + b'"') == 1
    old = tmp_path / "old.dprp"
    old.write_bytes(data.replace(b'"' + tool + b'"', b'"dprp 0.1.0"'))
    with pytest.warns(UserWarning, match="ADVISORY 2026-11"):
        r = dprp.Release.open(old, verify=False)
    assert len(r.advisories) == 1
    assert "withdraw it and publish again" in r.advisories[0]


def test_warnings_reach_python_when_publish_fails(tmp_path):
    """Issue 25: warnings raised before a failure (a free-space warning before the disk fills, here
    the --noise-seed one) are issued as Python warnings even though the call raises; before, they
    were collected in the outcome the failure never returned."""
    x = np.full((300, 8), 0.5, dtype=np.float32)
    x[200, 3] = 7.0  # outside [-1, 1]: refused at row 200
    with pytest.warns(UserWarning, match="NOT private"):
        with pytest.raises(dprp.DprpError, match="row 200"):
            dprp.publish(x, mechanism="dp-oporp", epsilon=5, delta=1e-6, k=4, noise_seed="w",
                         output=tmp_path / "x.dprp")
    assert not (tmp_path / "x.dprp").exists()
