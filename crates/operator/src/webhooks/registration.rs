//! The ValidatingWebhookConfiguration that points the API server at us.

use base64::Engine;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, Client};
use serde_json::json;

use super::config::{ConversionTarget, Endpoint, Registration};
use super::server::validation_path;
use crate::children::apply;
use crate::error::Result;
use crate::registry::{PerService, Registry};
use crate::service::contract::OpenStackService;

/// Points the conversion of every CRD whose service converts between versions
/// at `target` unless it already does; true when it had to change one. A CRD
/// re-applied by Helm or GitOps loses its caBundle or endpoint; the operator
/// calls this at start-up and whenever a CRD changes, so the caBundle comes back.
pub async fn ensure_conversion<R: Registry>(
    client: &Client,
    target: &ConversionTarget,
) -> Result<bool> {
    let mut changed = false;
    for (crd, path) in conversions::<R>() {
        changed |= ensure_one_conversion(client, &crd, path, target).await?;
    }
    Ok(changed)
}

/// (CRD name, conversion path) of each service with a conversion.
fn conversions<R: Registry>() -> Vec<(String, &'static str)> {
    struct Conversions;
    impl PerService for Conversions {
        type Item = Option<(String, &'static str)>;
        fn of<S: OpenStackService>(&self) -> Self::Item {
            S::conversion().map(|c| (S::crd_name().to_string(), c.path))
        }
    }
    R::map(&Conversions).into_iter().flatten().collect()
}

async fn ensure_one_conversion(
    client: &Client,
    name: &str,
    path: &str,
    target: &ConversionTarget,
) -> Result<bool> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let Some(crd) = api.get_opt(name).await? else {
        return Ok(false);
    };
    let desired = client_config(&target.endpoint, path, &target.ca_pem);
    let current = crd
        .spec
        .conversion
        .as_ref()
        .filter(|c| c.strategy == "Webhook")
        .and_then(|c| c.webhook.as_ref())
        .map(|w| serde_json::to_value(&w.client_config))
        .transpose()?;
    if current.as_ref() == Some(&desired) {
        return Ok(false);
    }
    register_conversion(client, name, &target.endpoint, path, &target.ca_pem).await?;
    Ok(true)
}

/// Creates or updates the configuration. `ca_pem` is the CA that signed the
/// serving certificate; re-applying it on every start keeps it correct after
/// the object is replaced by Helm or GitOps.
pub async fn register<R: Registry>(
    client: &Client,
    registration: &Registration,
    ca_pem: &str,
) -> Result<()> {
    let webhooks = webhooks::<R>(registration, ca_pem);
    let object: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": { "name": registration.name, "labels": { "app.kubernetes.io/managed-by": "ratchet" } },
        "webhooks": webhooks,
    }))?;
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    apply(&api, &registration.name, &object).await?;
    Ok(())
}

/// The configuration's entries, one per registered service (the chart's
/// copy is held to these by a test).
pub fn webhooks<R: Registry>(registration: &Registration, ca_pem: &str) -> Vec<serde_json::Value> {
    struct Webhooks<'a>(&'a Registration, &'a str);
    impl PerService for Webhooks<'_> {
        type Item = serde_json::Value;
        fn of<S: OpenStackService>(&self) -> Self::Item {
            webhook::<S>(self.0, self.1)
        }
    }
    R::map(&Webhooks(registration, ca_pem))
}

/// One service's entry: its path, its resources, every version.
fn webhook<S: OpenStackService>(registration: &Registration, ca_pem: &str) -> serde_json::Value {
    let path = validation_path::<S>();
    let client_config = client_config(&registration.endpoint, &path, ca_pem);
    let plural = S::plural(&());
    let mut webhook = json!({
        "name": format!("{plural}.validate.ratchet.c5c3.io"),
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": 5,
        "matchPolicy": "Equivalent",
        "clientConfig": client_config,
        "rules": [{
            "apiGroups": [S::group(&())],
            // The version the handler's types speak; requests at any other
            // served version reach it converted (matchPolicy Equivalent).
            "apiVersions": [S::version(&())],
            "operations": ["CREATE", "UPDATE"],
            "resources": [plural],
            "scope": "Namespaced",
        }],
    });
    if let Some(labels) = &registration.namespace_selector {
        webhook["namespaceSelector"] = json!({ "matchLabels": labels });
    }
    webhook
}

/// Points a CRD's conversion at this server: strategy Webhook, its service's
/// conversion path, and the CA that signed the serving certificate. Applied on
/// every start like the admission registration, so a CRD re-applied by Helm or
/// GitOps gets its caBundle back.
pub async fn register_conversion(
    client: &Client,
    crd_name: &str,
    endpoint: &Endpoint,
    path: &str,
    ca_pem: &str,
) -> Result<()> {
    let mut client_config = client_config(endpoint, path, ca_pem);
    // A merge patch: the kind of endpoint not used goes, or the CRD would hold
    // both (the shipped CRD names a Service; local clusters use a URL).
    match endpoint {
        Endpoint::Url(_) => client_config["service"] = serde_json::Value::Null,
        Endpoint::Service { .. } => client_config["url"] = serde_json::Value::Null,
    }
    let patch = json!({
        "spec": { "conversion": {
            "strategy": "Webhook",
            "webhook": { "clientConfig": client_config, "conversionReviewVersions": ["v1"] },
        } }
    });
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    api.patch(
        crd_name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

/// Where the API server calls, and the CA it trusts for that call.
fn client_config(endpoint: &Endpoint, path: &str, ca_pem: &str) -> serde_json::Value {
    let mut config = match endpoint {
        Endpoint::Url(base) => json!({ "url": format!("{base}{path}") }),
        Endpoint::Service {
            namespace,
            name,
            port,
        } => json!({
            "service": { "namespace": namespace, "name": name, "port": port, "path": path }
        }),
    };
    config["caBundle"] = json!(base64::engine::general_purpose::STANDARD.encode(ca_pem));
    config
}
