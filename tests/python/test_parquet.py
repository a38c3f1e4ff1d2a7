"""Parquet with the tools people use: pyarrow/pandas and DuckDB write the inputs dprp publishes,
and read the Parquet releases dprp writes (columns id, label, sketch; the metadata as JSON)."""

import json

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dprp
from conftest import run_cli

ARGS = dict(mechanism="dp-oporp", epsilon=5.0, delta=1e-6, k=16, seed="5eed", noise_seed="n")


def rows(n=500, p=24, seed=3):
    return np.random.default_rng(seed).random((n, p), dtype=np.float32)


def test_pandas_input_and_a_release_pyarrow_and_duckdb_read(tmp_path):
    x = rows()
    ids = np.arange(len(x), dtype=np.int64) * 3 + 100
    labels = (np.arange(len(x)) % 4).astype(np.float64)
    # pandas writes a column of arrays as list<float>
    pd.DataFrame({"key": ids, "y": labels, "emb": list(x)}).to_parquet(tmp_path / "in.parquet")
    with pytest.warns(UserWarning, match="NOT private"):
        r = dprp.publish(tmp_path / "in.parquet", output=tmp_path / "out.parquet", column="emb",
                         label_column="y", id_column="key", **ARGS)
        ref = dprp.publish(x, output=tmp_path / "ref.dprp", **ARGS)
    assert r.meta["ids"] and r.meta["labels"]
    assert np.array_equal(r.ids, ids.astype(np.uint64))
    assert np.array_equal(r.sketches, ref.sketches)  # the same rows, the same release
    # pyarrow sees the columns and the metadata
    t = pq.read_table(tmp_path / "out.parquet")
    assert t.schema.names == ["id", "label", "sketch"]
    assert t.schema.field("sketch").type == pa.list_(pa.field("item", pa.float32(), nullable=False), 16)
    assert np.array_equal(t["id"].to_numpy(), ids)
    assert np.array_equal(t["label"].to_numpy(), labels.astype(np.float32))
    sk = np.stack(t["sketch"].to_numpy(zero_copy_only=False))
    assert np.array_equal(sk, ref.sketches)
    meta = json.loads(pq.read_metadata(tmp_path / "out.parquet").metadata[b"dprp.release"])
    assert meta["n"] == len(x) and meta["mechanism"] == r.meta["mechanism"]
    # DuckDB reads it and can score with SQL what Release.search scores
    q = ref.sketches[7].astype(np.float64)
    got = duckdb.sql(
        f"SELECT id, list_inner_product(sketch::DOUBLE[], {list(map(float, q))}::DOUBLE[]) AS s "
        f"FROM '{tmp_path / 'out.parquet'}' ORDER BY s DESC, id LIMIT 3").fetchall()
    want = np.argsort(-(ref.sketches.astype(np.float64) @ q), kind="stable")[:3]
    assert [g[0] for g in got] == list(ids[want])
    # and the Python module and the CLI open it like a native release
    again = dprp.Release.open(tmp_path / "out.parquet")
    assert np.array_equal(again.sketches, ref.sketches)
    info = json.loads(run_cli("info", "--json", str(tmp_path / "out.parquet")))
    assert info["file_format"] == "parquet"


def test_duckdb_written_input_and_sign_release(tmp_path):
    x = rows(300, 16, seed=5)
    np.save(tmp_path / "x.npy", x)
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM (SELECT range AS rid FROM range(300)) r")
    con.execute("ALTER TABLE t ADD COLUMN v FLOAT[]")
    con.executemany("UPDATE t SET v = ? WHERE rid = ?",
                    [(list(map(float, x[i])), i) for i in range(300)])
    con.execute(f"COPY (SELECT rid, v FROM t ORDER BY rid) TO '{tmp_path / 'd.parquet'}' "
                "(FORMAT PARQUET)")
    common = ["-m", "dp-signrp-rr", "-e", "5", "-d", "1e-6", "-k", "70", "--normalize", "l2",
              "--projection-seed", "5eed", "--noise-seed", "n"]
    run_cli("publish", str(tmp_path / "d.parquet"), "--column", "v", "--id-column", "rid",
            *common, "-o", str(tmp_path / "s.parquet"))
    run_cli("publish", str(tmp_path / "x.npy"), *common, "-o", str(tmp_path / "s.dprp"))
    a, b = dprp.Release.open(tmp_path / "s.parquet"), dprp.Release.open(tmp_path / "s.dprp")
    assert np.array_equal(a.sketches, b.sketches)
    # packed signs: fixed_size_binary(16) holding the sign words, little-endian
    t = pq.read_table(tmp_path / "s.parquet")
    assert t.schema.field("sketch").type == pa.binary(16)
    words = np.frombuffer(b"".join(t["sketch"].to_pylist()), dtype="<u8").reshape(300, 2)
    assert np.array_equal(words, b.sketches)
    assert duckdb.sql(f"SELECT count(*) FROM '{tmp_path / 's.parquet'}'").fetchall() == [(300,)]


def test_bad_parquet_input_raises_dprp_errors(tmp_path):
    args = dict(ARGS, k=2)
    ragged = pa.table({"v": pa.array([[1.0, 2.0], [3.0, 4.0], [5.0]], pa.list_(pa.float32()))})
    pq.write_table(ragged, tmp_path / "ragged.parquet")
    with pytest.raises(dprp.DprpError, match=r"row 2 .*1 values but row 0 has 2"):
        dprp.publish(tmp_path / "ragged.parquet", output=tmp_path / "o.parquet", **args)
    text = pa.table({"v": pa.array([["a"], ["b"]])})
    pq.write_table(text, tmp_path / "text.parquet")
    with pytest.raises(dprp.DprpError, match="list of (Utf8|LargeUtf8|Utf8View), not of numbers"):
        dprp.publish(tmp_path / "text.parquet", output=tmp_path / "o.parquet", **args)
    pq.write_table(pa.table({"v": pa.array([[1.0, 2.0]])}), tmp_path / "ok.parquet")
    with pytest.raises(dprp.DprpError, match=r"invalid column: columns are named only in Parquet"):
        dprp.publish(rows(), output=tmp_path / "o.parquet", column="v", **args)
    # the message names the keyword, not the CLI flag
    with pytest.raises(dprp.DprpError, match=r"no column 'w' \(given with column=\)") as e:
        dprp.publish(tmp_path / "ok.parquet", output=tmp_path / "o.parquet", column="w", **args)
    assert "--" not in str(e.value)
    with pytest.raises(dprp.DprpError, match=r"no column 'y' \(given with label_column=\)"):
        dprp.publish(tmp_path / "ok.parquet", output=tmp_path / "o.parquet", label_column="y",
                     **args)
    with pytest.raises(dprp.DprpError, match="invalid output_format"):
        dprp.publish(rows(), output=tmp_path / "o.x", output_format="arrow", **args)
    assert not (tmp_path / "o.parquet").exists() and not (tmp_path / "o.x").exists()


def test_a_worker_publishes_its_rows_of_a_parquet_dataset(tmp_path):
    """rows=(lo, hi) with shard=: dprp reads only the shard's rows of the whole dataset (a
    directory of files, as Spark writes it), giving the shard `--shards` writes."""
    x = rows(1000, 24, seed=9)
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "ds").mkdir()
    for j, (a, b) in enumerate([(0, 300), (300, 610), (610, 1000)]):
        pq.write_table(pa.table({"emb": pa.FixedSizeListArray.from_arrays(
            pa.array(x[a:b].ravel()), 24)}), tmp_path / "ds" / f"part-{j}.parquet",
            row_group_size=100)
    run_cli("publish", str(tmp_path / "x.npy"), "-m", "dp-oporp", "-e", "5", "-d", "1e-6",
            "-k", "16", "--projection-seed", "5eed", "--noise-seed", "n", "--shards", "3",
            "-o", str(tmp_path / "cli"))
    cli = dprp.Release.open(tmp_path / "cli")
    (tmp_path / "w").mkdir()
    with pytest.warns(UserWarning, match="NOT private"):
        for i, part in enumerate(cli.shards):
            lo = int(part.ids[0])
            dprp.publish(tmp_path / "ds", column="emb", shard=(i, 3), first_row=lo,
                         rows=(lo, lo + part.n), output=tmp_path / "w", **ARGS)
    w = dprp.finish_shards(tmp_path / "w")
    assert np.array_equal(np.concatenate([p.sketches for p in w.shards]), cli_payload(cli))
    with pytest.raises(dprp.DprpError, match="invalid rows: .*shard="):
        dprp.publish(tmp_path / "ds", rows=(0, 10), output=tmp_path / "o.dprp", **ARGS)
    with pytest.raises(dprp.DprpError, match="invalid rows: .*slice a numpy array"):
        dprp.publish(x, rows=(0, 10), shard=(0, 2), output=tmp_path / "o2", **ARGS)


def cli_payload(release):
    return np.concatenate([p.sketches for p in release.shards])
