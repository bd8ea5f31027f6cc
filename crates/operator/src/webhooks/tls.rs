//! The webhook server's identity: read from files (cert-manager or any other
//! issuer) or generated at start-up (self-managed), in which case the operator
//! also publishes its CA in the webhook configuration's caBundle.

use std::net::IpAddr;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// Where the serving certificate comes from.
#[derive(Clone, Debug)]
pub enum TlsSource {
    /// Generate a CA and a serving certificate for these names at start-up.
    SelfManaged {
        dns_names: Vec<String>,
        ips: Vec<IpAddr>,
    },
    /// PEM files mounted into the pod (e.g. by cert-manager). With `ca`, the
    /// operator can keep caBundles itself; without, whoever issued the files must.
    Files {
        cert: PathBuf,
        key: PathBuf,
        ca: Option<PathBuf>,
    },
}

/// PEM-encoded serving identity, plus the CA when self-managed.
pub struct ServingIdentity {
    pub cert_pem: String,
    pub key_pem: String,
    pub ca_pem: Option<String>,
}

pub fn load(source: &TlsSource) -> Result<ServingIdentity> {
    match source {
        TlsSource::SelfManaged { dns_names, ips } => {
            let tls_error = |e: ratchet_pki::Error| Error::Tls(e.to_string());
            let ca =
                ratchet_pki::CertificateAuthority::new("ratchet-webhook-ca").map_err(tls_error)?;
            let names: Vec<&str> = dns_names.iter().map(String::as_str).collect();
            let issued = ca
                .issue_server("ratchet-webhook", &names, ips)
                .map_err(tls_error)?;
            Ok(ServingIdentity {
                cert_pem: issued.cert_pem,
                key_pem: issued.key_pem,
                ca_pem: Some(ca.cert_pem()),
            })
        }
        TlsSource::Files { cert, key, ca } => {
            let read = |p: &PathBuf| {
                std::fs::read_to_string(p)
                    .map_err(|e| Error::Tls(format!("reading {}: {e}", p.display())))
            };
            Ok(ServingIdentity {
                cert_pem: read(cert)?,
                key_pem: read(key)?,
                ca_pem: ca.as_ref().map(read).transpose()?,
            })
        }
    }
}
