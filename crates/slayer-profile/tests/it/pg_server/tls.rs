//! The server that listens on 127.0.0.1 with TLS only, and the throwaway CA and certificate it
//! serves.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

use super::cluster::{free_port, Cluster, RunAs};
use super::{
    create_reader, grant_reader_sql, path_str, percent_encode, started, TlsServer, OS_USER, READER,
    READER_PASSWORD, TLS_DB,
};

impl TlsServer {
    /// The TLS server of this test process, started on first use, with [`TLS_DB`] loaded and
    /// granted to [`READER`].
    pub fn shared() -> &'static TlsServer {
        static TLS: OnceLock<Result<TlsServer, String>> = OnceLock::new();
        started(&TLS, TlsServer::start, "TLS server")
    }

    fn start() -> Result<TlsServer, String> {
        // No plain `host` line: a TCP connection without TLS is refused.
        let mut cluster =
            Cluster::create("local all admin trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n")?;
        let (cert, key) = write_certs(&cluster.root, cluster.run_as.as_ref())?;
        let ssl = format!(
            " -c ssl=on -c ssl_cert_file='{}' -c ssl_key_file='{}'",
            path_str(&cert),
            path_str(&key)
        );
        // The port is free when picked but may be taken before the server binds it: retry.
        let mut tries = 0;
        loop {
            tries += 1;
            match cluster.start("127.0.0.1", free_port()?, &ssl) {
                Ok(()) => break,
                Err(e) if tries < 3 && e.contains("already in use") => {}
                Err(e) => return Err(e),
            }
        }
        create_reader(&cluster)?;
        cluster.create_database_result(TLS_DB)?;
        cluster.psql_result(
            TLS_DB,
            "CREATE TABLE t (id integer PRIMARY KEY, colour text);
             COMMENT ON TABLE t IS 'Read over TLS';
             INSERT INTO t VALUES (1, 'red'), (2, 'green'), (3, 'blue');
             ANALYZE t;",
            false,
        )?;
        cluster.psql_result(TLS_DB, &grant_reader_sql(TLS_DB), false)?;
        Ok(TlsServer {
            dir: cluster.root.clone(),
            port: cluster.port,
            host: "127.0.0.1",
            ca_path: cluster.root.join("ca.pem"),
            cluster,
        })
    }

    /// The database holding table `t` ([`TLS_DB`]).
    pub fn db(&self) -> &'static str {
        TLS_DB
    }

    /// `postgres://slayer_reader:<password>@127.0.0.1:<port>/<db>` with no TLS parameters (add
    /// `?sslmode=…&sslrootcert=…`, or see [`TlsServer::verify_full_url`]).
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://{READER}:{}@{}:{}/{}",
            percent_encode(READER_PASSWORD),
            self.host,
            self.port,
            percent_encode(db)
        )
    }

    /// [`TlsServer::url`] with `?sslmode=verify-full&sslrootcert=<ca_path, percent-encoded>`.
    pub fn verify_full_url(&self, db: &str) -> String {
        format!(
            "{}?sslmode=verify-full&sslrootcert={}",
            self.url(db),
            percent_encode(&path_str(&self.ca_path))
        )
    }
}
/// A CA and a server certificate it signs for `localhost` and `127.0.0.1`, written to
/// `root/ca.pem`, `root/server.crt` and `root/server.key` (mode 0600, owned by the server's
/// user). Returns the certificate's and the key's paths.
fn write_certs(root: &Path, run_as: Option<&RunAs>) -> Result<(PathBuf, PathBuf), String> {
    let rcgen_err = |e: rcgen::Error| format!("making the test certificates: {e}");

    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(rcgen_err)?;
    ca_params.distinguished_name = DistinguishedName::new();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "slayer test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca_params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    ca_params.not_after = rcgen::date_time_ymd(2100, 1, 1);
    let ca_key = KeyPair::generate().map_err(rcgen_err)?;
    let ca_cert = ca_params.self_signed(&ca_key).map_err(rcgen_err)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let mut params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .map_err(rcgen_err)?;
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    params.use_authority_key_identifier_extension = true;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2100, 1, 1);
    let key = KeyPair::generate().map_err(rcgen_err)?;
    let cert = params.signed_by(&key, &issuer).map_err(rcgen_err)?;

    let io_err = |path: &Path| {
        let path = path.display().to_string();
        move |e: std::io::Error| format!("writing {path}: {e}")
    };
    let ca_path = root.join("ca.pem");
    let cert_path = root.join("server.crt");
    let key_path = root.join("server.key");
    fs::write(&ca_path, ca_cert.pem()).map_err(io_err(&ca_path))?;
    fs::write(&cert_path, cert.pem()).map_err(io_err(&cert_path))?;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&key_path)
        .and_then(|mut file| file.write_all(key.serialize_pem().as_bytes()))
        .map_err(io_err(&key_path))?;
    if let Some(user) = run_as {
        for path in [&cert_path, &key_path] {
            std::os::unix::fs::chown(path, Some(user.uid), Some(user.gid))
                .map_err(|e| format!("chown {} to {OS_USER}: {e}", path.display()))?;
        }
    }
    Ok((cert_path, key_path))
}

/// Certificates for another server of the tests (MariaDB's): the CA's, the server's and its
/// key's paths in `root`, owned by the test process's user.
pub fn tls_certificates(root: &Path) -> Result<(PathBuf, PathBuf, PathBuf), String> {
    let (cert, key) = write_certs(root, None)?;
    Ok((root.join("ca.pem"), cert, key))
}
