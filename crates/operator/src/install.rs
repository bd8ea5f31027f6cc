//! Installing Ratchet's CRDs into a cluster (the demo, tests, benchmarks).

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, Client};

use crate::error::{Error, Result};
use crate::registry::{PerService, Registry};
use crate::service::contract::OpenStackService;

/// Applies every CRD (server-side, idempotent) and waits until each is served.
pub async fn install_crds<R: Registry>(client: &Client, timeout: Duration) -> Result<()> {
    apply_crds(client, R::crds()?, timeout).await
}

/// Every CRD, with the Cinder CRD's conversion served by a webhook server on
/// localhost, started here: upgrading Ratchet's CRDs on a local cluster, where
/// no operator Service exists. Conversion works while the server is kept.
pub async fn install_crds_with_local_conversion<R: Registry>(
    client: &Client,
    timeout: Duration,
) -> Result<crate::webhooks::WebhookServer> {
    let (server, ca_pem) = crate::webhooks::serve_on_localhost::<R>(
        std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0)),
        std::sync::Arc::new(crate::metrics::Metrics::default()),
    )
    .await?;
    install_crds::<R>(client, timeout).await?;
    let target = crate::webhooks::ConversionTarget {
        endpoint: crate::webhooks::Endpoint::Url(format!(
            "https://127.0.0.1:{}",
            server.local_addr.port()
        )),
        ca_pem,
    };
    crate::webhooks::registration::ensure_conversion::<R>(client, &target).await?;
    Ok(server)
}

/// Applies `crds` (server-side, idempotent) and waits until each is served.
pub async fn apply_crds(
    client: &Client,
    crds: impl IntoIterator<Item = CustomResourceDefinition>,
    timeout: Duration,
) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for mut crd in crds {
        let name = crd
            .metadata
            .name
            .clone()
            .ok_or(Error::MissingField("metadata.name"))?;
        if let Some(live) = api.get_opt(&name).await? {
            keep_conversion_endpoint(&mut crd, &live);
        }
        api.patch(
            &name,
            &PatchParams::apply("ratchet").force(),
            &Patch::Apply(&crd),
        )
        .await?;
        tokio::time::timeout(
            timeout,
            await_condition(api.clone(), &name, conditions::is_crd_established()),
        )
        .await
        .map_err(|_| Error::Blocked {
            reason: "CRDNotEstablished".into(),
            message: format!("CRD {name} was not established within {timeout:?}"),
        })?
        .map_err(|e| Error::Blocked {
            reason: "CRDNotEstablished".into(),
            message: e.to_string(),
        })?;
    }
    Ok(())
}

/// Keeps the conversion endpoint and CA the operator registered on the live
/// CRD (a URL or a Service, whichever it was started with): the shipped CRD
/// names a Service without a caBundle, and applying it over a URL would leave
/// both, which the API server refuses ("exactly one of url or service").
fn keep_conversion_endpoint(crd: &mut CustomResourceDefinition, live: &CustomResourceDefinition) {
    let live_webhook = live
        .spec
        .conversion
        .as_ref()
        .filter(|c| c.strategy == "Webhook")
        .and_then(|c| c.webhook.as_ref())
        .and_then(|w| w.client_config.clone());
    let shipped = crd
        .spec
        .conversion
        .as_mut()
        .filter(|c| c.strategy == "Webhook")
        .and_then(|c| c.webhook.as_mut());
    if let (Some(shipped), Some(live)) = (shipped, live_webhook) {
        shipped.client_config = Some(live);
    }
}

/// Creates the Secrets every registered service's example resource
/// ([`OpenStackService::example`]) refers to, with placeholder URLs (for demos
/// and tests; nothing connects to them).
pub async fn ensure_example_secrets<R: Registry>(client: &Client, namespace: &str) -> Result<()> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    for (name, key, value) in example_secrets::<R>() {
        let secret: Secret = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": { "name": &name },
            "stringData": { key: value },
        }))?;
        api.patch(
            &name,
            &PatchParams::apply("ratchet").force(),
            &Patch::Apply(&secret),
        )
        .await?;
    }
    Ok(())
}

/// (Secret, key, placeholder) for every Secret key each service's example
/// resource refers to in its spec (`{ secretName, key }` objects, at any
/// depth: a Nova cell's database and bus too), each once: URLs for a database
/// (`database`, `apiDatabase`) and a message bus (`transport`), a word for
/// anything else (a password).
pub fn example_secrets<R: Registry>() -> Vec<(String, String, String)> {
    struct Secrets;
    impl PerService for Secrets {
        type Item = Vec<(String, String, String)>;
        fn of<S: OpenStackService>(&self) -> Self::Item {
            let service = S::SERVICE;
            let example = S::example(service, "2026.1", "example", 1).manifest;
            let mut found = Vec::new();
            secret_references(service, "spec", &example["spec"], &mut found);
            found
        }
    }
    R::map(&Secrets).into_iter().flatten().collect()
}

/// Every `{ secretName, key }` object in `value` (the field `field`), with its
/// placeholder, into `found` unless already there.
fn secret_references(
    service: &str,
    field: &str,
    value: &serde_json::Value,
    found: &mut Vec<(String, String, String)>,
) {
    let reference = value["secretName"].as_str().zip(value["key"].as_str());
    if let Some((name, key)) = reference {
        let placeholder = match field {
            "database" | "apiDatabase" => {
                format!("mysql+pymysql://{service}:placeholder@db/{service}")
            }
            "transport" => format!("rabbit://{service}:placeholder@mq:5672/"),
            _ => "placeholder".to_string(),
        };
        if !found.iter().any(|(n, k, _)| n == name && k == key) {
            found.push((name.into(), key.into(), placeholder));
        }
        return;
    }
    match value {
        serde_json::Value::Object(fields) => {
            for (field, value) in fields {
                secret_references(service, field, value, found);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                secret_references(service, field, item, found);
            }
        }
        _ => {}
    }
}
