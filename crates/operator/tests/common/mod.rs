//! A namespace in the shared local cluster with the CRDs installed, Secrets in
//! place and an operator scoped to it.

#![allow(dead_code)] // each test binary uses a different part

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, Result};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use ratchet_api::cinder::v1alpha1::Cinder;
use ratchet_operator::webhooks::{Endpoint, Registration, TlsSource, WebhookConfig};
use ratchet_operator::{OperatorConfig, OperatorHandle};
use ratchet_testenv::wait::until;
use ratchet_testenv::{TestEnv, TestNamespace};
use serde_json::json;

pub const TIMEOUT: Duration = Duration::from_secs(60);

pub struct Harness {
    pub env: &'static TestEnv,
    pub client: Client,
    pub ns: TestNamespace,
    pub operator: Option<OperatorHandle>,
}

impl Harness {
    pub async fn start(prefix: &str) -> Result<Harness> {
        let env = TestEnv::shared()?;
        let client = env.client()?;
        install_crds(&client).await?;
        let ns = env.namespace(&client, prefix).await?;
        let secrets: Api<Secret> = Api::namespaced(client.clone(), ns.name());
        for (name, key, value) in [
            (
                "cinder-db",
                "connection",
                "mysql+pymysql://cinder:secret@db/cinder",
            ),
            (
                "cinder-mq",
                "transport_url",
                "rabbit://cinder:secret@mq:5672/",
            ),
        ] {
            let secret: Secret = serde_json::from_value(json!({
                "metadata": { "name": name },
                "stringData": { key: value },
            }))?;
            secrets.create(&PostParams::default(), &secret).await?;
        }
        // Each test's operator serves its own admission webhook on a free port,
        // registered for its namespace only.
        let webhook = WebhookConfig {
            bind: "127.0.0.1:0".parse()?,
            tls: TlsSource::SelfManaged {
                dns_names: vec!["localhost".into()],
                ips: vec![std::net::Ipv4Addr::LOCALHOST.into()],
            },
            registration: Some(Registration {
                name: format!("ratchet-{}", ns.name()),
                endpoint: Endpoint::Url("https://127.0.0.1:0".into()),
                namespace_selector: Some(BTreeMap::from([(
                    "kubernetes.io/metadata.name".to_string(),
                    ns.name().to_string(),
                )])),
            }),
        };
        let operator = ratchet_operator::start(
            client.clone(),
            OperatorConfig {
                namespace: Some(ns.name().to_string()),
                instance: format!("test-{}", ns.name()),
                webhook: Some(webhook),
                ..OperatorConfig::default()
            },
        )
        .await?;
        Ok(Harness {
            env,
            client,
            ns,
            operator: Some(operator),
        })
    }

    pub fn name(&self) -> &str {
        self.ns.name()
    }

    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client.clone(), self.ns.name())
    }

    pub async fn create_cinder(&self, manifest: serde_json::Value) -> Result<Cinder> {
        let cinder: Cinder = serde_json::from_value(manifest)?;
        Ok(self
            .api::<Cinder>()
            .create(&PostParams::default(), &cinder)
            .await?)
    }

    pub async fn patch_cinder(&self, name: &str, patch: serde_json::Value) -> Result<Cinder> {
        Ok(self
            .api::<Cinder>()
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?)
    }

    /// Waits for a condition of the Cinder to have this status and reason.
    pub async fn wait_condition(
        &self,
        name: &str,
        kind: &str,
        status: &str,
        reason: &str,
    ) -> Result<Cinder> {
        let what = format!("{kind}={status} ({reason})");
        Ok(
            until(&self.api::<Cinder>(), name, TIMEOUT, &what, |c: &Cinder| {
                condition(c, kind).is_some_and(|(s, r)| s == status && r == reason)
            })
            .await?,
        )
    }

    /// Waits until the Cinder is Ready for its current generation.
    pub async fn wait_ready(&self, name: &str) -> Result<Cinder> {
        Ok(until(
            &self.api::<Cinder>(),
            name,
            TIMEOUT,
            "Ready=True",
            |c: &Cinder| {
                let current =
                    c.status.as_ref().and_then(|s| s.observed_generation) == c.metadata.generation;
                current && condition(c, "Ready").is_some_and(|(s, _)| s == "True")
            },
        )
        .await?)
    }

    /// Events about one object, oldest first.
    pub async fn events_for(&self, name: &str) -> Result<Vec<Event>> {
        let mut events: Vec<Event> = self
            .api::<Event>()
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
            .collect();
        events.sort_by_key(|e| e.event_time.as_ref().map(|t| t.0));
        Ok(events)
    }

    pub async fn event_reasons(&self, name: &str) -> Result<Vec<String>> {
        Ok(self
            .events_for(name)
            .await?
            .into_iter()
            .filter_map(|e| e.reason)
            .collect())
    }

    pub async fn finish(mut self) {
        if let Some(op) = self.operator.take() {
            op.stop().await;
        }
        let webhooks: Api<ValidatingWebhookConfiguration> = Api::all(self.client.clone());
        let _ = webhooks
            .delete(&format!("ratchet-{}", self.ns.name()), &Default::default())
            .await;
        self.ns.cleanup().await;
    }
}

pub fn condition(c: &Cinder, kind: &str) -> Option<(String, String)> {
    c.status
        .as_ref()?
        .conditions
        .iter()
        .find(|x| x.type_ == kind)
        .map(|x| (x.status.clone(), x.reason.clone()))
}

pub fn cinder_manifest(
    name: &str,
    release: &str,
    tag: &str,
    backends: &[&str],
) -> serde_json::Value {
    let volumes: serde_json::Map<String, serde_json::Value> = backends
        .iter()
        .map(|b| (b.to_string(), json!({ "options": { "volume_driver": "cinder.volume.drivers.lvm.LVMVolumeDriver" } })))
        .collect();
    json!({
        "apiVersion": "cinder.openstack.c5c3.io/v1alpha1",
        "kind": "Cinder",
        "metadata": { "name": name },
        "spec": {
            "openStackRelease": release,
            "image": { "repository": "registry.invalid/openstack/cinder", "tag": tag },
            "database": { "secretName": "cinder-db", "key": "connection" },
            "transport": { "secretName": "cinder-mq", "key": "transport_url" },
            "volumes": volumes,
        }
    })
}

/// Applies Ratchet's CRDs (idempotent) and waits until they are served.
pub async fn install_crds(client: &Client) -> Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for (_, crd) in ratchet_api::crds() {
        let name = crd.metadata.name.clone().context("CRD name")?;
        crds.patch(
            &name,
            &PatchParams::apply("ratchet-tests").force(),
            &Patch::Apply(&crd),
        )
        .await?;
        until(
            &crds,
            &name,
            TIMEOUT,
            "CRD Established",
            |c: &CustomResourceDefinition| {
                c.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c.type_ == "Established" && c.status == "True")
                    })
            },
        )
        .await?;
    }
    Ok(())
}
