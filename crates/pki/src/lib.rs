//! A small certificate authority (`rcgen`, pure Rust): the local cluster's PKI
//! and the operator's self-managed webhook serving certificates.

use std::net::IpAddr;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, SanType,
};

pub use rcgen::Error;

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
    pub fn new(common_name: &str) -> Result<Self, Error> {
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

    /// A serving certificate valid for the given DNS names and IP addresses.
    pub fn issue_server(
        &self,
        common_name: &str,
        dns_names: &[&str],
        ips: &[IpAddr],
    ) -> Result<IssuedCertificate, Error> {
        self.issue_serving(
            common_name,
            dns_names,
            ips,
            &[ExtendedKeyUsagePurpose::ServerAuth],
        )
    }

    /// A serving certificate its holder also presents as a client: etcd's
    /// JSON gateway dials etcd's own gRPC port with it when client certificates
    /// are required (as kubeadm's etcd server certificate allows).
    pub fn issue_server_and_client(
        &self,
        common_name: &str,
        dns_names: &[&str],
        ips: &[IpAddr],
    ) -> Result<IssuedCertificate, Error> {
        self.issue_serving(
            common_name,
            dns_names,
            ips,
            &[
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        )
    }

    fn issue_serving(
        &self,
        common_name: &str,
        dns_names: &[&str],
        ips: &[IpAddr],
        usages: &[ExtendedKeyUsagePurpose],
    ) -> Result<IssuedCertificate, Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name = name(common_name, &[]);
        params.subject_alt_names = dns_names
            .iter()
            .map(|n| (*n).try_into().map(SanType::DnsName))
            .collect::<Result<Vec<_>, _>>()?;
        params
            .subject_alt_names
            .extend(ips.iter().copied().map(SanType::IpAddress));
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = usages.to_vec();
        self.sign(params)
    }

    /// A client certificate; Kubernetes reads the user from CN and groups from O.
    pub fn issue_client(&self, user: &str, groups: &[&str]) -> Result<IssuedCertificate, Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name = name(user, groups);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> Result<IssuedCertificate, Error> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issues_pem_certificates() {
        let ca = CertificateAuthority::new("test-ca").expect("ca");
        assert!(ca.cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
        let server = ca
            .issue_server("svc", &["svc.ns.svc"], &[IpAddr::from([127, 0, 0, 1])])
            .expect("server");
        assert!(server.cert_pem.contains("BEGIN CERTIFICATE"));
        assert!(server.key_pem.contains("PRIVATE KEY"));
        assert!(ca.issue_client("admin", &["system:masters"]).is_ok());
    }
}
