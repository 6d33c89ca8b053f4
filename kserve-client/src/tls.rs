//! TLS for `https://` and `grpcs://` URLs (rustls, ring): the server's
//! certificate must chain to a certificate of the CA file the client was
//! given (`ClientOptions::tls_ca`) and name the URL's host.

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::TlsConnector;

/// The trust a client's TLS connections start from.
#[derive(Clone)]
pub(crate) struct ClientTls {
    config: rustls::ClientConfig,
}

impl ClientTls {
    /// Trusting the certificates of the PEM file `ca`.
    pub fn from_ca_file(ca: &Path) -> Result<ClientTls, String> {
        let pem = std::fs::read(ca).map_err(|e| format!("cannot read the TLS CA file {}: {e}", ca.display()))?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| format!("the TLS CA file {} is not PEM certificates: {e}", ca.display()))?;
            roots.add(cert).map_err(|e| format!("the TLS CA file {}: {e}", ca.display()))?;
        }
        if roots.is_empty() {
            return Err(format!("the TLS CA file {} holds no certificate", ca.display()));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS set-up: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(ClientTls { config })
    }

    /// A connector offering the one application protocol `alpn` (`http/1.1`, `h2`).
    pub fn connector(&self, alpn: &[u8]) -> TlsConnector {
        let mut config = self.config.clone();
        config.alpn_protocols = vec![alpn.to_vec()];
        TlsConnector::from(Arc::new(config))
    }
}
