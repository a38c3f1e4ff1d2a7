"""Sharded releases from Python: open a shard directory, search and estimate across shards, and
write shards as workers do (shard=(i, N), finish_shards) — the Spark example's building blocks."""

import numpy as np
import pytest

import dprp
from conftest import run_cli

ARGS = dict(mechanism="dp-oporp", epsilon=5.0, delta=1e-6, k=16, seed="5eed")


def test_open_search_estimate_a_shard_directory(tmp_path):
    rng = np.random.default_rng(7)
    x = rng.random((1000, 24), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    common = ["-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "16", "--projection-seed",
              "5eed", "--noise-seed", "n"]
    run_cli("publish", str(tmp_path / "x.npy"), *common, "-o", str(tmp_path / "one.dprp"))
    run_cli("publish", str(tmp_path / "x.npy"), *common, "--shards", "3",
            "-o", str(tmp_path / "sh"))
    one = dprp.Release.open(tmp_path / "one.dprp")
    sh = dprp.Release.open(tmp_path / "sh")
    assert sh.sharded and not one.sharded
    assert (sh.n, sh.k, sh.p) == (1000, 16, 24)
    assert sh.guarantee == one.guarantee
    with pytest.raises(dprp.DprpError, match="one payload per shard"):
        sh.sketches
    parts = sh.shards
    assert [p.n for p in parts] == [333, 333, 334]
    # each shard's sketches are a zero-copy view; together they are the one-file payload
    assert all(p.sketches.flags.writeable is False for p in parts)
    assert np.array_equal(np.concatenate([p.sketches for p in parts]), one.sketches)
    assert np.array_equal(sh.ids, np.arange(1000, dtype=np.uint64))
    assert np.array_equal(parts[2].ids, np.arange(666, 1000, dtype=np.uint64))
    q = rng.random((4, 24), dtype=np.float32)
    for top in (1, 7, 1000):
        ids_s, sc_s = sh.search(q, top=top)
        ids_o, sc_o = one.search(q, top=top)
        assert np.array_equal(ids_s, ids_o) and np.array_equal(sc_s, sc_o)
    assert sh.estimate(3, 900) == one.estimate(3, 900)
    assert parts[2].estimate(800, 999) == one.estimate(800, 999)
    assert parts[0].estimate(0, 255) == one.estimate(0, 255)
    with pytest.raises(dprp.DprpError, match="not in the release"):
        sh.estimate(3, 1000)
    with pytest.raises(dprp.DprpError, match="not in the release"):
        parts[2].estimate(3, 800)
    # a corrupted shard is refused by the directory's open, found by verify() when unverified
    f = tmp_path / "sh" / "shard-00001-of-00003.dprp"
    raw = bytearray(f.read_bytes())
    raw[300] ^= 1
    f.write_bytes(bytes(raw))
    with pytest.raises(dprp.DprpError, match="checksum"):
        dprp.Release.open(tmp_path / "sh")
    lazy = dprp.Release.open(tmp_path / "sh", verify=False)
    with pytest.raises(dprp.DprpError, match="checksum"):
        lazy.verify()


def test_workers_write_shards_and_finish(tmp_path):
    rng = np.random.default_rng(8)
    x = rng.random((700, 24), dtype=np.float32)
    out = tmp_path / "w"
    cuts = [(0, 100), (100, 401), (401, 700)]  # any first row (since 0.2.0)
    with pytest.warns(UserWarning, match="NOT private"):
        for i, (lo, hi) in enumerate(cuts):
            r = dprp.publish(x[lo:hi], output=out, shard=(i, 3), first_row=lo, noise_seed="t",
                             **ARGS)
            assert r.n == hi - lo and r.ids[0] == lo
        whole = dprp.publish(x, output=tmp_path / "one.dprp", noise_seed="t", **ARGS)
    with pytest.raises(dprp.DprpError, match="manifest"):
        dprp.Release.open(out)
    rel = dprp.finish_shards(out)
    assert rel.sharded and rel.n == 700
    assert np.array_equal(np.concatenate([p.sketches for p in rel.shards]), whole.sketches)
    assert "dprp-shards" in (out / "_manifest.json").read_text()
    with pytest.raises(dprp.DprpError, match="shard"):
        dprp.publish(x, output=tmp_path / "bad", shard=(3, 3), **ARGS)
    with pytest.raises(dprp.DprpError, match="public seed"):
        dprp.publish(x, output=tmp_path / "bad", shard=(0, 3), mechanism="dp-oporp", epsilon=5.0,
                     delta=1e-6, k=16)
    with pytest.raises(dprp.DprpError, match="overflow"):
        dprp.publish(x, output=tmp_path / "bad", shard=(0, 3), first_row=2**64 - 256, **ARGS)
    assert not (tmp_path / "bad").exists() or not any((tmp_path / "bad").iterdir())


def test_a_worker_never_privatises_a_shard_twice(tmp_path):
    """The same refusals as `dprp publish --shard i/N` (one library path since 0.3.1): a shard
    already written, or a finished release, is not written again (fresh noise on the same rows
    would spend their budget twice); the shard directory is created, not its parents."""
    rng = np.random.default_rng(9)
    x = rng.random((40, 24), dtype=np.float32)
    out = tmp_path / "w"
    dprp.publish(x[:20], output=out, shard=(0, 2), **ARGS)
    before = (out / "shard-00000-of-00002.dprp").read_bytes()
    with pytest.raises(dprp.DprpError, match="shard: shard 0 of 2 is already written"):
        dprp.publish(x[:20], output=out, shard=(0, 2), **ARGS)
    assert (out / "shard-00000-of-00002.dprp").read_bytes() == before
    dprp.publish(x[20:], output=out, shard=(1, 2), first_row=20, **ARGS)
    dprp.finish_shards(out)
    with pytest.raises(dprp.DprpError, match="finished sharded release"):
        dprp.publish(x[20:], output=out, shard=(1, 2), first_row=20, **ARGS)
    with pytest.raises(dprp.DprpError, match="the parent of .* does not exist"):
        dprp.publish(x, output=tmp_path / "no" / "such", shard=(0, 2), **ARGS)
    with pytest.raises(dprp.DprpError, match="seed: the shards of one release share its public "
                                             "seed: give every worker the same seed"):
        dprp.publish(x, output=tmp_path / "s", shard=(0, 2), mechanism="dp-oporp",
                     epsilon=5.0, delta=1e-6, k=16)
