//! Certificates for one local control plane: a CA, the API server's serving
//! certificate, an admin client certificate in `system:masters`, and the
//! service-account signing key. Generated fresh for every cluster with `rcgen`
//! (pure Rust, no openssl binary needed).

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, SanType,
};

use crate::error::{IoContext, Result};

/// PEM files written into the cluster's directory.
#[derive(Clone, Debug)]
pub struct PkiFiles {
    pub ca_cert: PathBuf,
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    pub service_account_key: PathBuf,
    pub service_account_public_key: PathBuf,
    /// PEM strings of the admin client identity, embedded into the kubeconfig.
    pub ca_pem: String,
    pub admin_cert_pem: String,
    pub admin_key_pem: String,
}

/// A certificate authority that can issue leaf certificates.
pub struct CertificateAuthority {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A leaf certificate and its private key, PEM-encoded.
pub struct IssuedCertificate {
    pub cert_pem: String,
    pub key_pem: String,
}

impl CertificateAuthority {
    pub fn new(common_name: &str) -> Result<Self> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name = name(common_name, &[]);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        Ok(CertificateAuthority { issuer })
    }

    pub fn cert_pem(&self) -> String {
        self.issuer.pem()
    }

    /// A serving certificate valid for the given DNS names and loopback addresses.
    pub fn issue_server(&self, common_name: &str, dns_names: &[&str]) -> Result<IssuedCertificate> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name = name(common_name, &[]);
        params.subject_alt_names = dns_names
            .iter()
            .map(|n| (*n).try_into().map(SanType::DnsName))
            .collect::<Result<Vec<_>, _>>()?;
        params
            .subject_alt_names
            .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        params
            .subject_alt_names
            .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))));
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params)
    }

    /// A client certificate; Kubernetes reads the user from CN and groups from O.
    pub fn issue_client(&self, user: &str, groups: &[&str]) -> Result<IssuedCertificate> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name = name(user, groups);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> Result<IssuedCertificate> {
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(IssuedCertificate {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

fn name(common_name: &str, organisations: &[&str]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    for org in organisations {
        dn.push(DnType::OrganizationName, *org);
    }
    dn
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
    )?;
    let admin = ca.issue_client("ratchet-admin", &["system:masters"])?;
    let service_account = KeyPair::generate()?;

    let files = PkiFiles {
        ca_cert: dir.join("ca.crt"),
        serving_cert: dir.join("apiserver.crt"),
        serving_key: dir.join("apiserver.key"),
        service_account_key: dir.join("service-account.key"),
        service_account_public_key: dir.join("service-account.pub"),
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
    ] {
        std::fs::write(path, content).at(path)?;
    }
    Ok(files)
}
