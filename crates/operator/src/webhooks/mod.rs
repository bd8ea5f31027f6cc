//! Admission and CRD conversion webhooks: served over TLS by the operator,
//! registered with the API server, deciding through pure functions.

pub mod config;
pub mod conversion;
pub mod registration;
pub mod server;
pub mod tls;
pub mod validation;

use std::net::SocketAddr;
use std::sync::Arc;

use kube::Client;

pub use config::{ConversionTarget, Endpoint, Registration, WebhookConfig};
pub use server::WebhookServer;
pub use tls::TlsSource;

use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::registry::Registry;

/// Starts serving and, when asked, registers the configuration (and the CRDs'
/// conversion, returned so it can be kept). With a URL endpoint whose port is
/// 0, the bound port is filled in.
pub async fn start<R: Registry>(
    client: &Client,
    config: &WebhookConfig,
    metrics: Arc<Metrics>,
) -> Result<(WebhookServer, Option<ConversionTarget>)> {
    let identity = tls::load(client, &config.tls).await?;
    let server =
        server::start::<R>(config.bind, &identity.cert_pem, &identity.key_pem, metrics).await?;
    if let Some(registration) = &config.registration {
        let ca = identity.ca_pem.as_deref().ok_or_else(|| {
            Error::Tls("registering the webhook needs its CA (self-managed, or --webhook-ca-file); it goes into caBundle".into())
        })?;
        let mut registration = registration.clone();
        if let Endpoint::Url(base) = &registration.endpoint
            && base.ends_with(":0")
        {
            let base = base.trim_end_matches(":0");
            registration.endpoint = Endpoint::Url(format!("{base}:{}", server.local_addr.port()));
        }
        if registration.admission {
            registration::register::<R>(client, &registration, ca).await?;
        }
        if registration.conversion {
            let target = ConversionTarget {
                endpoint: registration.endpoint.clone(),
                ca_pem: ca.to_string(),
            };
            registration::ensure_conversion::<R>(client, &target).await?;
            return Ok((server, Some(target)));
        }
    }
    Ok((server, None))
}

/// A webhook server on `bind` with a freshly generated CA and a certificate for
/// localhost: for local clusters, tests and benchmarks that point a CRD or a
/// webhook configuration at it. Returns the server and the CA (PEM).
pub async fn serve_on_localhost<R: Registry>(
    bind: SocketAddr,
    metrics: Arc<Metrics>,
) -> Result<(WebhookServer, String)> {
    let identity = tls::generate(
        &["localhost".to_string()],
        &[std::net::Ipv4Addr::LOCALHOST.into()],
    )?;
    let server = server::start::<R>(bind, &identity.cert_pem, &identity.key_pem, metrics).await?;
    let ca = identity
        .ca_pem
        .ok_or_else(|| Error::Tls("a self-managed identity has a CA".into()))?;
    Ok((server, ca))
}
