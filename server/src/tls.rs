//! TLS for the HTTP and gRPC endpoints (rustls, ring): a certificate chain
//! and its private key in PEM files, and optionally a CA file whose
//! certificates client certificates must chain to (mutual TLS: a client
//! without a valid certificate is refused during the handshake).
//!
//! The files are read and checked when the server starts, so a bad file
//! stops the start with an error naming it. HTTP uses the rustls config
//! built here ([`http_acceptor`], ALPN `http/1.1`); gRPC hands the same
//! files to tonic's rustls acceptor ([`grpc_config`], ALPN `h2`), after
//! they passed the same checks.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// An endpoint's TLS files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The server's certificate chain (PEM), its own certificate first.
    pub cert: PathBuf,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// Mutual TLS: client certificates must chain to a certificate in this PEM file.
    pub client_ca: Option<PathBuf>,
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read the TLS {what} {}: {e}", path.display()))
}

fn certificates(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = read(path, what)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("the TLS {what} {} is not PEM certificates: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("the TLS {what} {} holds no certificate (PEM `BEGIN CERTIFICATE`)", path.display()));
    }
    Ok(certs)
}

/// The rustls server config of `files`, offering `alpn` protocols.
fn server_config(files: &TlsFiles, alpn: &[&[u8]]) -> Result<rustls::ServerConfig, String> {
    let chain = certificates(&files.cert, "certificate")?;
    let key = PrivateKeyDer::from_pem_slice(&read(&files.key, "key")?)
        .map_err(|e| format!("the TLS key {} holds no PEM private key: {e}", files.key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up: {e}"))?;
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in certificates(ca, "client CA file")? {
                roots.add(cert).map_err(|e| format!("the TLS client CA file {}: {e}", ca.display()))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("the TLS client CA file {}: {e}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|e| {
        format!("the TLS certificate {} and key {} do not go together: {e}", files.cert.display(), files.key.display())
    })?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

/// The HTTP endpoint's TLS acceptor.
pub fn http_acceptor(files: &TlsFiles) -> Result<TlsAcceptor, String> {
    Ok(TlsAcceptor::from(Arc::new(server_config(files, &[b"http/1.1"])?)))
}

/// The gRPC endpoint's TLS config for tonic, after checking the files as HTTP's are.
pub fn grpc_config(files: &TlsFiles) -> Result<tonic::transport::ServerTlsConfig, String> {
    server_config(files, &[b"h2"])?;
    let identity = tonic::transport::Identity::from_pem(read(&files.cert, "certificate")?, read(&files.key, "key")?);
    let mut config = tonic::transport::ServerTlsConfig::new().identity(identity);
    if let Some(ca) = &files.client_ca {
        config = config.client_ca_root(tonic::transport::Certificate::from_pem(read(ca, "client CA file")?));
    }
    Ok(config)
}
