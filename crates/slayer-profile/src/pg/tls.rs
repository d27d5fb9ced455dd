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
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::dsn::{PgTarget, SslMode};

/// How the server's certificate is checked.
#[derive(Debug)]
enum Check {
    /// Encrypt only (signatures on the handshake are still verified).
    Nothing(Arc<CryptoProvider>),
    /// The chain, not the name (`verify-ca`).
    Chain(Arc<WebPkiServerVerifier>),
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
        match self {
            Check::Nothing(_) => Ok(ServerCertVerified::assertion()),
            Check::Chain(inner) => {
                match inner.verify_server_cert(
                    end_entity,
                    intermediates,
                    server_name,
                    ocsp_response,
                    now,
                ) {
                    Err(rustls::Error::InvalidCertificate(
                        CertificateError::NotValidForName
                        | CertificateError::NotValidForNameContext { .. },
                    )) => Ok(ServerCertVerified::assertion()),
                    other => other,
                }
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        match self {
            Check::Nothing(p) => rustls::crypto::verify_tls12_signature(
                message,
                cert,
                dss,
                &p.signature_verification_algorithms,
            ),
            Check::Chain(inner) => inner.verify_tls12_signature(message, cert, dss),
        }
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        match self {
            Check::Nothing(p) => rustls::crypto::verify_tls13_signature(
                message,
                cert,
                dss,
                &p.signature_verification_algorithms,
            ),
            Check::Chain(inner) => inner.verify_tls13_signature(message, cert, dss),
        }
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        match self {
            Check::Nothing(p) => p.signature_verification_algorithms.supported_schemes(),
            Check::Chain(inner) => inner.supported_verify_schemes(),
        }
    }
}

/// The root certificate file libpq looks for when `sslrootcert` is not given.
fn default_root_cert() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    let path = PathBuf::from(home).join(".postgresql/root.crt");
    path.is_file().then_some(path)
}

fn roots(target: &PgTarget) -> Result<Option<RootCertStore>, String> {
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
        .map_err(|e| format!("cannot read the root certificate {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "the root certificate file {} holds no PEM certificate",
            path.display()
        ));
    }
    for cert in certs {
        store
            .add(cert)
            .map_err(|e| format!("bad root certificate in {}: {e}", path.display()))?;
    }
    Ok(Some(store))
}

/// The TLS connector for `target`'s `sslmode`.
pub fn connector(target: &PgTarget) -> Result<MakeRustlsConnect, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = roots(target)?;
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let verifier = |roots: RootCertStore| {
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| e.to_string())
    };
    let config = match (target.sslmode, roots) {
        (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
            return Err(format!(
                "sslmode={} needs a root certificate: set sslrootcert=FILE (or PGSSLROOTCERT), \
                 or put it in ~/.postgresql/root.crt; sslrootcert=system trusts the usual web roots",
                if target.sslmode == SslMode::VerifyCa { "verify-ca" } else { "verify-full" }
            ))
        }
        (SslMode::VerifyFull, Some(roots)) => builder
            .with_webpki_verifier(verifier(roots)?)
            .with_no_client_auth(),
        (_, Some(roots)) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Check::Chain(verifier(roots)?)))
            .with_no_client_auth(),
        (_, None) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Check::Nothing(provider.clone())))
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
        Check::Chain(
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap(),
        )
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
        let Check::Chain(full) = chain_check(ca) else {
            unreachable!()
        };
        assert!(verify(full.as_ref(), &server, "db.internal"));
        assert!(!verify(full.as_ref(), &server, "10.1.2.3.example"));
    }

    #[test]
    fn require_without_a_root_accepts_any_certificate() {
        let (_, server) = ca_and_server("anything");
        let check = Check::Nothing(Arc::new(rustls::crypto::ring::default_provider()));
        assert!(verify(&check, &server, "db.internal"));
    }
}
