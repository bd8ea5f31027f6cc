//! How the operator serves and registers its webhooks: plain settings, read
//! by the operator's configuration without pulling in the handlers.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use super::tls::TlsSource;

/// How the operator serves its webhooks.
#[derive(Clone, Debug)]
pub struct WebhookConfig {
    pub bind: SocketAddr,
    pub tls: TlsSource,
    /// Keep a ValidatingWebhookConfiguration and the CRDs' conversion pointing at
    /// this server (requires the CA that signed the certificate: self-managed,
    /// or given as a file).
    pub registration: Option<Registration>,
}

/// How the API server reaches the webhook.
#[derive(Clone, Debug)]
pub enum Endpoint {
    /// A URL base, e.g. `https://127.0.0.1:9443` (local clusters, tests).
    Url(String),
    /// A Service in the cluster.
    Service {
        namespace: String,
        name: String,
        port: i32,
    },
}

/// The configuration object Ratchet keeps up to date.
#[derive(Clone, Debug)]
pub struct Registration {
    pub name: String,
    pub endpoint: Endpoint,
    /// Only namespaces with these labels are validated (None: all).
    pub namespace_selector: Option<BTreeMap<String, String>>,
    /// Keep the ValidatingWebhookConfiguration (false where it is deployed
    /// with its caBundle injected by cert-manager).
    pub admission: bool,
    /// Also keep the conversion of Ratchet's multi-version CRDs pointed at this
    /// server (one operator per cluster: the CRDs are cluster-wide).
    pub conversion: bool,
}

/// Where a CRD's conversion webhook must point, and the CA it must trust.
#[derive(Clone, Debug)]
pub struct ConversionTarget {
    pub endpoint: Endpoint,
    pub ca_pem: String,
}
