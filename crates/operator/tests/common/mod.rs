//! A namespace in the shared local cluster with the CRDs installed, Secrets in
//! place and an operator scoped to it.

#![allow(dead_code)] // each test binary uses a different part

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::events::v1::Event;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use ratchet_api::cinder::v1alpha1::Cinder;
use ratchet_operator::webhooks::{Endpoint, Registration, TlsSource, WebhookConfig};
use ratchet_operator::{OperatorConfig, OperatorHandle};
use ratchet_testenv::wait::until;
use ratchet_testenv::{TestEnv, TestNamespace};

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
        ratchet_operator::install::install_crds(&client, TIMEOUT).await?;
        let ns = env.namespace(&client, prefix).await?;
        ratchet_operator::install::ensure_example_secrets(&client, ns.name()).await?;
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
    ratchet_api::cinder::example_manifest(
        name,
        release,
        "registry.invalid/openstack/cinder",
        tag,
        backends,
    )
}
