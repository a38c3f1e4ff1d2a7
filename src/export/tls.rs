//! TLS for `dprp export`: a rustls client configuration for each `sslmode`, as libpq documents
//! them (PostgreSQL 16, "SSL Mode Descriptions"):
//!
//! - `prefer`, `allow`, `require`: the connection is encrypted; the certificate's chain is checked
//!   only when root certificates are at hand (`sslrootcert=FILE`, or libpq's default file
//!   `~/.postgresql/root.crt` when it exists), its host name never.
//! - `verify-ca`: the chain is checked against the root certificates (`sslrootcert=FILE` or
//!   `~/.postgresql/root.crt`; without either, refused as libpq refuses it).
//! - `verify-full`: the chain and the host name (or IP address) are checked. Without a root file
//!   dprp uses the operating system's trusted roots (`rustls-native-certs`: the system's bundle,
//!   or `SSL_CERT_FILE` / `SSL_CERT_DIR`), where libpq would fail — managed PostgreSQL services
//!   mostly present certificates from public authorities. `sslrootcert=system` asks for them
//!   explicitly, as in libpq.
//!
//! The handshake signature is always verified (an unchecked certificate still proves nothing
//! about a peer that cannot sign with its key, but it stops a passive listener). ALPN offers
//! `postgresql` (required by PostgreSQL 17's direct TLS). Crypto: rustls with *ring*.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use super::conninfo::{RootCert, SslMode, Tls};

/// What the certificate check is, for messages ("sslmode=verify-full, roots from /x/ca.pem").
#[derive(Debug, Clone)]
pub struct Checked {
    /// The TLS client configuration.
    pub config: ClientConfig,
    /// How the server's certificate is checked, in words.
    pub how: String,
}

/// libpq's default root file, `~/.postgresql/root.crt`, if it exists.
fn default_root_file() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    let p = Path::new(&home).join(".postgresql").join("root.crt");
    p.is_file().then_some(p)
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The roots of a PEM file; an error names the file.
fn roots_from_file(path: &Path) -> Result<RootCertStore, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("sslrootcert={}: cannot read it: {e}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("sslrootcert={}: not a PEM file: {e}", path.display()))?;
    let mut store = RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(certs);
    if added == 0 {
        return Err(format!(
            "sslrootcert={}: no certificate in it (expected PEM `BEGIN CERTIFICATE` blocks)",
            path.display()
        ));
    }
    Ok(store)
}

/// The operating system's trusted roots.
fn system_roots() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut store = RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found
            .errors
            .first()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        return Err(format!(
            "no trusted root certificates found on this system{why}; give sslrootcert=FILE"
        ));
    }
    Ok(store)
}

/// The client configuration for `tls` (whose mode is not `disable`), or why there is none.
pub fn client_config(tls: &Tls) -> Result<Checked, String> {
    let file = match &tls.root {
        RootCert::File(p) => Some(p.clone()),
        RootCert::Default => default_root_file(),
        RootCert::System => None,
    };
    let provider = provider();
    let roots =
        match (&file, &tls.root, tls.mode) {
            (Some(f), _, _) => Some((roots_from_file(f)?, format!("roots from {}", f.display()))),
            (None, RootCert::System, _) | (None, RootCert::Default, SslMode::VerifyFull) => {
                Some((system_roots()?, "the system's trusted roots".to_string()))
            }
            (None, _, SslMode::VerifyCa) => return Err(
                "sslmode=verify-ca needs root certificates: give sslrootcert=FILE (the CA that \
                 signed the server's certificate), or use verify-full, which can check against \
                 the system's trusted roots"
                    .into(),
            ),
            (None, _, _) => None,
        };
    let (verifier, how): (Arc<dyn ServerCertVerifier>, String) = match roots {
        None => (
            Arc::new(Unchecked(provider.clone())),
            "the certificate not checked".into(),
        ),
        Some((store, from)) => {
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
                    .build()
                    .map_err(|e| format!("cannot use the root certificates: {e}"))?;
            if tls.mode == SslMode::VerifyFull {
                (
                    webpki,
                    format!("chain and host name checked against {from}"),
                )
            } else {
                (
                    Arc::new(ChainOnly(webpki)),
                    format!("chain checked against {from}, host name not"),
                )
            }
        }
    };
    let versions: &[&rustls::SupportedProtocolVersion] = if tls.tls13_only {
        &[&rustls::version::TLS13]
    } else if tls.tls12_only {
        &[&rustls::version::TLS12]
    } else {
        &[&rustls::version::TLS13, &rustls::version::TLS12]
    };
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|e| format!("TLS versions: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    config.enable_sni = tls.sni;
    Ok(Checked {
        config,
        how: format!("sslmode={}, {how}", tls.mode.name()),
    })
}

/// No check of the certificate (`prefer`, `allow`, `require` without roots); the handshake's
/// signatures are still verified.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The chain checked, the host name not (`verify-ca`). webpki checks the chain before the name,
/// so a name error means the chain passed.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
