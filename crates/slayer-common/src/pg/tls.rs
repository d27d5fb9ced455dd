//! TLS for PostgreSQL connections through rustls (ring), with libpq's `sslmode` meanings:
//!
//! - `prefer` / `require`: encrypt; the certificate is checked only when a root certificate is
//!   given (`sslrootcert`, or `~/.postgresql/root.crt` when it exists), as libpq does;
//! - `verify-ca`: the chain must lead to the root certificate; the host name is not checked;
//! - `verify-full`: chain and host name.
//!
//! `sslrootcert=system` trusts the bundled web roots (webpki-roots) rather than a file.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{VerifierBuilderError, WebPkiServerVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::dsn::{PgTarget, SslMode};

/// How the server's certificate is checked. The handshake's signatures are verified either
/// way, with the provider's algorithms (those a [`WebPkiServerVerifier`] of it uses too).
#[derive(Debug)]
struct Check {
    /// The provider's signature algorithms.
    algorithms: WebPkiSupportedAlgorithms,
    /// The chain, not the name (`verify-ca`); `None`: encrypt only.
    chain: Option<Arc<WebPkiServerVerifier>>,
}

impl Check {
    fn new(provider: &CryptoProvider, chain: Option<Arc<WebPkiServerVerifier>>) -> Check {
        Check {
            algorithms: provider.signature_verification_algorithms,
            chain,
        }
    }
}

impl ServerCertVerifier for Check {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
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
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The root certificate file cannot be read or parsed.
    #[error("cannot read the root certificate {}: {cause}", .path.display())]
    ReadRoot {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: rustls::pki_types::pem::Error,
    },
    /// The root certificate file holds no certificate.
    #[error("the root certificate file {} holds no PEM certificate", .0.display())]
    EmptyRoot(PathBuf),
    /// A certificate of the root file is not a usable trust anchor.
    #[error("bad root certificate in {}: {cause}", .path.display())]
    BadRoot {
        /// The file.
        path: PathBuf,
        /// Why.
        cause: rustls::Error,
    },
    /// `verify-ca` / `verify-full` without a root certificate to verify against.
    #[error(
        "sslmode={mode} needs a root certificate: set sslrootcert=FILE (or PGSSLROOTCERT), \
         or put it in ~/.postgresql/root.crt; sslrootcert=system trusts the usual web roots"
    )]
    NoRoot {
        /// `verify-ca` or `verify-full`.
        mode: &'static str,
    },
    /// rustls refused the configuration.
    #[error("{0}")]
    Config(rustls::Error),
    /// rustls refused the certificate verifier.
    #[error("{0}")]
    Verifier(VerifierBuilderError),
}

/// The root certificate file libpq looks for when `sslrootcert` is not given.
fn default_root_cert() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    let path = PathBuf::from(home).join(".postgresql/root.crt");
    path.is_file().then_some(path)
}

fn roots(target: &PgTarget) -> Result<Option<RootCertStore>, TlsError> {
    let mut store = RootCertStore::empty();
    let path = match target.sslrootcert.as_deref() {
        Some("system") => {
            store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            return Ok(Some(store));
        }
        Some(p) => PathBuf::from(p),
        None => match default_root_cert() {
            Some(p) => p,
            None => return Ok(None),
        },
    };
    let certs = CertificateDer::pem_file_iter(&path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|cause| TlsError::ReadRoot {
            path: path.clone(),
            cause,
        })?;
    if certs.is_empty() {
        return Err(TlsError::EmptyRoot(path));
    }
    for cert in certs {
        store.add(cert).map_err(|cause| TlsError::BadRoot {
            path: path.clone(),
            cause,
        })?;
    }
    Ok(Some(store))
}

/// The TLS connector for `target`'s `sslmode`.
pub fn connector(target: &PgTarget) -> Result<MakeRustlsConnect, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = roots(target)?;
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Config)?;
    let verifier = |roots: RootCertStore| {
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(TlsError::Verifier)
    };
    let config = match (target.sslmode, roots) {
        (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
            return Err(TlsError::NoRoot {
                mode: if target.sslmode == SslMode::VerifyCa {
                    "verify-ca"
                } else {
                    "verify-full"
                },
            })
        }
        (SslMode::VerifyFull, Some(roots)) => builder
            .with_webpki_verifier(verifier(roots)?)
            .with_no_client_auth(),
        (_, Some(roots)) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Check::new(
                &provider,
                Some(verifier(roots)?),
            )))
            .with_no_client_auth(),
        (_, None) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Check::new(&provider, None)))
            .with_no_client_auth(),
    };
    Ok(MakeRustlsConnect::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};

    /// A CA certificate and a server certificate it signed for `name`.
    fn ca_and_server(name: &str) -> (CertificateDer<'static>, CertificateDer<'static>) {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_key = KeyPair::generate().unwrap();
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let server = CertificateParams::new(vec![name.to_owned()])
            .unwrap()
            .signed_by(&KeyPair::generate().unwrap(), &issuer)
            .unwrap();
        (ca.der().clone(), server.der().clone())
    }

    fn chain_check(root: CertificateDer<'static>) -> Check {
        let mut roots = RootCertStore::empty();
        roots.add(root).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let chain = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .unwrap();
        Check::new(&provider, Some(chain))
    }

    fn verify(check: &dyn ServerCertVerifier, cert: &CertificateDer<'_>, name: &str) -> bool {
        let name = ServerName::try_from(name.to_owned()).unwrap();
        check
            .verify_server_cert(cert, &[], &name, &[], UnixTime::now())
            .is_ok()
    }

    #[test]
    fn verify_ca_checks_the_chain_but_not_the_name() {
        let (ca, server) = ca_and_server("db.internal");
        let (other_ca, _) = ca_and_server("elsewhere");
        let check = chain_check(ca.clone());
        assert!(verify(&check, &server, "db.internal"));
        assert!(verify(&check, &server, "10.1.2.3.example"));
        // Another authority's certificate fails, whatever the name.
        assert!(!verify(&chain_check(other_ca), &server, "db.internal"));
        // verify-full's verifier refuses the wrong name.
        let Some(full) = chain_check(ca).chain else {
            unreachable!()
        };
        assert!(verify(full.as_ref(), &server, "db.internal"));
        assert!(!verify(full.as_ref(), &server, "10.1.2.3.example"));
    }

    #[test]
    fn require_without_a_root_accepts_any_certificate() {
        let (_, server) = ca_and_server("anything");
        let check = Check::new(&rustls::crypto::ring::default_provider(), None);
        assert!(verify(&check, &server, "db.internal"));
    }
}
