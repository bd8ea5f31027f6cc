//! The webhook server's identity: read from files (cert-manager or any other
//! issuer) or generated (self-managed), in which case the operator also
//! publishes its CA in the webhook configuration's caBundle. A generated
//! identity can be kept in a Secret so that every replica serves the same one
//! and one caBundle fits them all.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::{Api, Client};

use crate::error::{Error, Result};

/// Where the serving certificate comes from.
#[derive(Clone, Debug)]
pub enum TlsSource {
    /// Generate a CA and a serving certificate for these names at start-up.
    SelfManaged {
        dns_names: Vec<String>,
        ips: Vec<IpAddr>,
    },
    /// As `SelfManaged`, generated once and kept in Secret `namespace/name`:
    /// the first replica to start creates it, the others serve what it holds.
    /// It is generated anew when the names it was issued for change.
    SelfManagedShared {
        dns_names: Vec<String>,
        ips: Vec<IpAddr>,
        namespace: String,
        name: String,
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

/// A fresh CA and a serving certificate it signed for these names.
pub fn generate(dns_names: &[String], ips: &[IpAddr]) -> Result<ServingIdentity> {
    let tls_error = |e: ratchet_pki::Error| Error::Tls(e.to_string());
    let ca = ratchet_pki::CertificateAuthority::new("ratchet-webhook-ca").map_err(tls_error)?;
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

pub async fn load(client: &Client, source: &TlsSource) -> Result<ServingIdentity> {
    match source {
        TlsSource::SelfManaged { dns_names, ips } => generate(dns_names, ips),
        TlsSource::SelfManagedShared {
            dns_names,
            ips,
            namespace,
            name,
        } => shared(client, dns_names, ips, namespace, name).await,
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

/// The annotation naming what a shared identity's certificate was issued for.
pub const ISSUED_FOR_ANNOTATION: &str = "ratchet.c5c3.io/issued-for";

/// The names and addresses a certificate is issued for, as one comparable text.
fn issued_for(dns_names: &[String], ips: &[IpAddr]) -> String {
    let mut all: Vec<String> = dns_names.to_vec();
    all.extend(ips.iter().map(IpAddr::to_string));
    all.sort();
    all.join(",")
}

/// The identity a Secret holds, if it is complete and issued for `wanted`.
fn held_in(secret: &Secret, wanted: &str) -> Option<ServingIdentity> {
    let issued = secret
        .metadata
        .annotations
        .as_ref()?
        .get(ISSUED_FOR_ANNOTATION)?;
    if issued != wanted {
        return None;
    }
    let data = secret.data.as_ref()?;
    let text = |key: &str| String::from_utf8(data.get(key)?.0.clone()).ok();
    Some(ServingIdentity {
        cert_pem: text("tls.crt")?,
        key_pem: text("tls.key")?,
        ca_pem: Some(text("ca.crt")?),
    })
}

fn secret_holding(name: &str, identity: &ServingIdentity, issued: &str) -> Secret {
    let bytes = |s: &str| ByteString(s.as_bytes().to_vec());
    let mut data = BTreeMap::from([
        ("tls.crt".to_string(), bytes(&identity.cert_pem)),
        ("tls.key".to_string(), bytes(&identity.key_pem)),
    ]);
    if let Some(ca) = &identity.ca_pem {
        data.insert("ca.crt".to_string(), bytes(ca));
    }
    let mut secret = Secret {
        type_: Some("kubernetes.io/tls".into()),
        data: Some(data),
        ..Secret::default()
    };
    secret.metadata.name = Some(name.to_string());
    secret.metadata.annotations = Some(BTreeMap::from([(
        ISSUED_FOR_ANNOTATION.to_string(),
        issued.to_string(),
    )]));
    secret
}

/// Reads the shared identity, or generates and stores it. Creation and
/// replacement are guarded (AlreadyExists, resourceVersion): replicas starting
/// together all end up serving whichever identity was stored first.
async fn shared(
    client: &Client,
    dns_names: &[String],
    ips: &[IpAddr],
    namespace: &str,
    name: &str,
) -> Result<ServingIdentity> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let wanted = issued_for(dns_names, ips);
    for _ in 0..3 {
        let current = api.get_opt(name).await?;
        if let Some(identity) = current.as_ref().and_then(|s| held_in(s, &wanted)) {
            return Ok(identity);
        }
        let fresh = generate(dns_names, ips)?;
        let mut secret = secret_holding(name, &fresh, &wanted);
        let stored = match current {
            Some(old) => {
                secret.metadata.resource_version = old.metadata.resource_version;
                api.replace(name, &PostParams::default(), &secret).await
            }
            None => api.create(&PostParams::default(), &secret).await,
        };
        match stored {
            Ok(_) => return Ok(fresh),
            // Another replica stored one first: serve that.
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(Error::Tls(format!(
        "the shared webhook certificate in Secret {namespace}/{name} kept changing while it was read"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_identity_is_used_only_for_the_names_it_was_issued_for() {
        let names = vec!["ratchet.ns.svc".to_string(), "localhost".to_string()];
        let ips: Vec<IpAddr> = vec![std::net::Ipv4Addr::LOCALHOST.into()];
        let issued = issued_for(&names, &ips);
        assert_eq!(issued, "127.0.0.1,localhost,ratchet.ns.svc");
        let identity = generate(&names, &ips).expect("identity");
        let secret = secret_holding("ratchet-webhook-tls", &identity, &issued);
        let held = held_in(&secret, &issued).expect("held");
        assert_eq!(held.cert_pem, identity.cert_pem);
        assert_eq!(held.ca_pem, identity.ca_pem);
        assert!(
            held_in(&secret, "localhost").is_none(),
            "other names: issue anew"
        );
        let mut partial = secret.clone();
        if let Some(data) = partial.data.as_mut() {
            data.remove("ca.crt");
        }
        assert!(
            held_in(&partial, &issued).is_none(),
            "incomplete: issue anew"
        );
    }
}
