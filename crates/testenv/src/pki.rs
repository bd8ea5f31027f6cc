//! Certificates for one local control plane: a CA, the API server's serving
//! certificate, an admin client certificate in `system:masters`, and the
//! service-account signing key. Generated fresh for every cluster with `rcgen`
//! (pure Rust, no openssl binary needed).

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use ratchet_pki::CertificateAuthority;
use rcgen::KeyPair;

use crate::error::{IoContext, Result};

/// PEM files written into the cluster's directory.
#[derive(Clone, Debug)]
pub struct PkiFiles {
    pub ca_cert: PathBuf,
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    pub service_account_key: PathBuf,
    pub service_account_public_key: PathBuf,
    /// etcd's serving identity and the client identity it trusts (used when
    /// etcd serves TLS).
    pub etcd_cert: PathBuf,
    pub etcd_key: PathBuf,
    pub etcd_client_cert: PathBuf,
    pub etcd_client_key: PathBuf,
    /// PEM strings of the admin client identity, embedded into the kubeconfig.
    pub ca_pem: String,
    pub admin_cert_pem: String,
    pub admin_key_pem: String,
}

/// Generates and writes every file a control plane needs into `dir`.
pub fn write_cluster_pki(dir: &Path) -> Result<PkiFiles> {
    std::fs::create_dir_all(dir).at(dir)?;
    let ca = CertificateAuthority::new("ratchet-local-ca")?;
    let serving = ca.issue_server(
        "kube-apiserver",
        &[
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ],
        &[
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
        ],
    )?;
    let admin = ca.issue_client("ratchet-admin", &["system:masters"])?;
    let etcd =
        ca.issue_server_and_client("etcd", &["localhost"], &[IpAddr::V4(Ipv4Addr::LOCALHOST)])?;
    let etcd_client = ca.issue_client("kube-apiserver-etcd-client", &[])?;
    let service_account = KeyPair::generate()?;

    let files = PkiFiles {
        ca_cert: dir.join("ca.crt"),
        serving_cert: dir.join("apiserver.crt"),
        serving_key: dir.join("apiserver.key"),
        service_account_key: dir.join("service-account.key"),
        service_account_public_key: dir.join("service-account.pub"),
        etcd_cert: dir.join("etcd.crt"),
        etcd_key: dir.join("etcd.key"),
        etcd_client_cert: dir.join("etcd-client.crt"),
        etcd_client_key: dir.join("etcd-client.key"),
        ca_pem: ca.cert_pem(),
        admin_cert_pem: admin.cert_pem,
        admin_key_pem: admin.key_pem,
    };
    for (path, content) in [
        (&files.ca_cert, &files.ca_pem),
        (&files.serving_cert, &serving.cert_pem),
        (&files.serving_key, &serving.key_pem),
        (&files.service_account_key, &service_account.serialize_pem()),
        (
            &files.service_account_public_key,
            &service_account.public_key_pem(),
        ),
        (&files.etcd_cert, &etcd.cert_pem),
        (&files.etcd_key, &etcd.key_pem),
        (&files.etcd_client_cert, &etcd_client.cert_pem),
        (&files.etcd_client_key, &etcd_client.key_pem),
    ] {
        std::fs::write(path, content).at(path)?;
    }
    Ok(files)
}
