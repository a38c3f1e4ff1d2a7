"""`dprp export` over TLS, as docs/databases.md describes each sslmode, against the throwaway
server (TCP on 127.0.0.1, a password, SCRAM-SHA-256) behind a TLS front with certificates made
here (pg_tls.py says why a front: the bundled PostgreSQL has no OpenSSL). Every case runs the
`dprp` command as a user does and checks both sides: the table arrived (or did not), and the
front saw a TLS handshake (or a plain connection) — the power check that "TLS" is not a plain
connection that merely succeeded."""

import os
import subprocess

import pytest

import dprp
import dprp.postgres as pg
from conftest import dprp_bin
from pg_tls import TlsFront, issue, make_ca, write_pem

PASSWORD = "pw-Secret9"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    ca, other = make_ca("dprp test CA"), make_ca("another CA")
    good = write_pem(d / "server.pem", *issue(ca, dns=["localhost"], ips=["127.0.0.1"]))
    misnamed = write_pem(d / "misnamed.pem", *issue(ca, dns=["db.example"]))
    return dict(ca=write_pem(d / "ca.pem", ca[0]), other=write_pem(d / "other.pem", other[0]),
                good=good, misnamed=misnamed, dir=d)


@pytest.fixture(scope="module")
def server():
    with pg.TemporaryServer(tcp=True, password=PASSWORD) as s:
        yield s


@pytest.fixture(scope="module")
def front(server, pki):
    with TlsFront(server.port, *pki["good"]) as f:
        yield f


@pytest.fixture(scope="module")
def misnamed(server, pki):
    with TlsFront(server.port, *pki["misnamed"]) as f:
        yield f


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls-release")
    rng = __import__("numpy").random.default_rng(5)
    x = rng.random((300, 32), dtype="float32") - 0.5
    return dprp.publish(x, output=d / "r.dprp", mechanism="dp-oporp", epsilon=8.0, delta=1e-6,
                        k=32)


counter = iter(range(10**6))


def export(release, url, env=None):
    """`dprp export` to a new table; (table, completed process)."""
    table = f"t{next(counter)}"
    out = subprocess.run([dprp_bin(), "export", release.path, "--postgres", url, "--table",
                          table], capture_output=True, text=True, timeout=120,
                         env=None if env is None else {**os.environ, **env})
    assert "panicked" not in out.stderr
    assert PASSWORD not in out.stderr + out.stdout
    return table, out


def url(port, host="127.0.0.1", password=PASSWORD, **params):
    q = "&".join(f"{k}={v}" for k, v in params.items())
    return f"postgresql://postgres:{password}@{host}:{port}/postgres" + (f"?{q}" if q else "")


def arrived(server, table):
    with server.connect() as c:
        return c.execute("SELECT count(*) FROM pg_class WHERE relname = %s",
                         (table,)).fetchone()[0] == 1


def ok(server, release, u, env=None):
    table, out = export(release, u, env)
    assert out.returncode == 0, out.stderr
    assert arrived(server, table)
    return table


def refused(server, release, u, *needles, env=None):
    table, out = export(release, u, env)
    assert out.returncode != 0, out.stdout
    for n in needles:
        assert n in out.stderr, out.stderr
    assert not arrived(server, table)
    return out.stderr


def test_require_encrypts_and_disable_does_not(server, front, release):
    n = len(front.handshakes)
    ok(server, release, url(front.port, sslmode="require"))
    assert len(front.handshakes) == n + 1
    version, sni = front.handshakes[-1]
    assert version in ("TLSv1.3", "TLSv1.2") and sni is None  # no SNI for an IP address
    # the power check: the same front, sslmode=disable, sees a plain connection
    plain = front.plain
    ok(server, release, url(front.port, sslmode="disable"))
    assert len(front.handshakes) == n + 1 and front.plain == plain + 1
    # prefer (the default) takes TLS when offered; allow starts plain
    ok(server, release, url(front.port))
    assert len(front.handshakes) == n + 2
    ok(server, release, url(front.port, sslmode="allow"))
    assert len(front.handshakes) == n + 2 and front.plain == plain + 2
    # TLS 1.3 only, and 1.2 only
    ok(server, release, url(front.port, sslmode="require", ssl_min_protocol_version="TLSv1.3"))
    assert front.handshakes[-1][0] == "TLSv1.3"
    ok(server, release, url(front.port, sslmode="require", ssl_max_protocol_version="TLSv1.2"))
    assert front.handshakes[-1][0] == "TLSv1.2"


def test_verify_full_checks_the_chain_and_the_name(server, front, misnamed, release, pki):
    ok(server, release, url(front.port, host="localhost", sslmode="verify-full",
                            sslrootcert=pki["ca"]))
    assert front.handshakes[-1][1] == "localhost"  # SNI sent for a host name
    ok(server, release, url(front.port, sslmode="verify-full", sslrootcert=pki["ca"]))
    # a certificate for db.example, reached as 127.0.0.1: the name does not match
    refused(server, release, url(misnamed.port, sslmode="verify-full", sslrootcert=pki["ca"]),
            "TLS failed", 'certificate not valid for name "127.0.0.1"', "db.example",
            "sslmode=verify-full")
    # verify-ca checks the chain only, require nothing (no root file given)
    ok(server, release, url(misnamed.port, sslmode="verify-ca", sslrootcert=pki["ca"]))
    ok(server, release, url(misnamed.port, sslmode="require"))
    # another authority: refused by verify-ca, verify-full, and by require given that root
    # file (libpq checks the chain whenever a root file is at hand)
    for mode in ("verify-ca", "verify-full", "require"):
        refused(server, release, url(front.port, sslmode=mode, sslrootcert=pki["other"]),
                "TLS failed", "UnknownIssuer", pki["other"])


def test_verify_full_without_a_root_file_uses_the_systems_roots(server, front, release, pki,
                                                                 tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    u = url(front.port, sslmode="verify-full")
    # the system's trusted roots, here taken from SSL_CERT_FILE as rustls-native-certs reads it
    ok(server, release, u, env={"HOME": str(home), "SSL_CERT_FILE": pki["ca"]})
    refused(server, release, u, "TLS failed", "UnknownIssuer", "the system's trusted roots",
            env={"HOME": str(home), "SSL_CERT_FILE": pki["other"]})
    # libpq's default root file, ~/.postgresql/root.crt, comes first when it exists
    (home / ".postgresql").mkdir()
    root = home / ".postgresql" / "root.crt"
    root.write_bytes(open(pki["other"], "rb").read())
    refused(server, release, url(front.port, sslmode="require"), "TLS failed", str(root),
            env={"HOME": str(home)})
    root.write_bytes(open(pki["ca"], "rb").read())
    ok(server, release, url(front.port, sslmode="require"), env={"HOME": str(home)})
    ok(server, release, u, env={"HOME": str(home), "SSL_CERT_FILE": pki["other"]})


def test_a_server_without_tls(server, front, release):
    refused(server, release, url(server.port, sslmode="require"), "TLS failed",
            "the server does not support TLS (sslmode=require requires it)")
    ok(server, release, url(server.port))  # prefer falls back to a plain connection


def test_a_wrong_password_is_an_authentication_failure(server, front, release):
    for port, mode in ((front.port, "require"), (server.port, "disable")):
        err = refused(server, release, url(port, password="Wrong-pw-1", sslmode=mode),
                      "authenticate failed", 'password authentication failed for user '
                      '"postgres" (28P01)', "postgres:***@")
        assert "Wrong-pw-1" not in err
    with pytest.raises(dprp.DprpError, match="authenticate failed") as e:
        release.to_postgres(url(front.port, password="Wrong-pw-1", sslmode="require"), "t")
    assert "Wrong-pw-1" not in str(e.value)


def test_python_export_over_verified_tls(server, front, release, pki):
    n = len(front.handshakes)
    done = release.to_postgres(url(front.port, host="localhost", sslmode="verify-full",
                                   sslrootcert=pki["ca"]), "from_python", index="hnsw")
    assert done["rows"] == release.n and done["hnsw"]
    assert len(front.handshakes) == n + 1
    with server.connect() as c:
        assert pg.check_table(c, release, "from_python")["rows"] == release.n
