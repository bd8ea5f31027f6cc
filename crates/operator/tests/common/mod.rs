//! A namespace in the shared local cluster with the CRDs installed, Secrets in
//! place and an operator scoped to it.

#![allow(dead_code)] // each test binary uses a different part

pub mod real;
pub mod real_cinder;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::events::v1::Event;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use ratchet_operator::webhooks::{Endpoint, Registration, TlsSource, WebhookConfig};
use ratchet_operator::{OperatorConfig, OperatorHandle};
use ratchet_services::Services;
use ratchet_services::cinder::v1beta1::{Cinder, CinderUpgradePhase};
use ratchet_testenv::wait::until;
use ratchet_testenv::{TestEnv, TestNamespace};

pub const TIMEOUT: Duration = Duration::from_secs(60);

pub struct Harness {
    pub env: &'static TestEnv,
    pub client: Client,
    pub ns: TestNamespace,
    pub operator: Option<OperatorHandle>,
    config: OperatorConfig,
}

impl Harness {
    pub async fn start(prefix: &str) -> Result<Harness> {
        let env = TestEnv::shared()?;
        let client = env.client()?;
        ratchet_operator::install::install_crds::<Services>(&client, TIMEOUT).await?;
        let ns = env.namespace(&client, prefix).await?;
        ratchet_operator::install::ensure_example_secrets::<Services>(&client, ns.name()).await?;
        Harness::with(env, client, ns).await
    }

    /// A namespace whose pods run as real processes (the process kubelet); no
    /// Secrets are made: the test points them at its own database and bus.
    pub async fn start_real(prefix: &str) -> Result<Harness> {
        let env = TestEnv::shared_with_processes()?;
        let client = env.client()?;
        ratchet_operator::install::install_crds::<Services>(&client, TIMEOUT).await?;
        let ns = env.process_namespace(&client, prefix).await?;
        Harness::with(env, client, ns).await
    }

    async fn with(env: &'static TestEnv, client: Client, ns: TestNamespace) -> Result<Harness> {
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
                // Many tests share the cluster-wide CRDs: none owns their conversion.
                conversion: false,
                admission: true,
            }),
        };
        let config = OperatorConfig {
            namespace: Some(ns.name().to_string()),
            instance: format!("test-{}", ns.name()),
            webhook: Some(webhook),
            metrics_bind: Some("127.0.0.1:0".parse()?),
            ..OperatorConfig::default()
        };
        let operator = ratchet_operator::start::<Services>(client.clone(), config.clone()).await?;
        Ok(Harness {
            env,
            client,
            ns,
            operator: Some(operator),
            config,
        })
    }

    /// Stops the operator (gracefully) and starts a new one, as a pod restart would.
    pub async fn restart_operator(&mut self) -> Result<()> {
        if let Some(op) = self.operator.take() {
            op.stop().await;
        }
        self.operator = Some(
            ratchet_operator::start::<Services>(self.client.clone(), self.config.clone()).await?,
        );
        Ok(())
    }

    /// GET /metrics from the operator's HTTP endpoint.
    pub async fn scrape(&self) -> Result<String> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let addr = self
            .operator
            .as_ref()
            .and_then(|o| o.metrics_addr())
            .ok_or_else(|| anyhow::anyhow!("no metrics endpoint"))?;
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream
            .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
            .await?;
        let mut body = String::new();
        stream.read_to_string(&mut body).await?;
        Ok(body)
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

    /// Moves the Cinder's release and image tag to `release` together.
    pub async fn bump(&self, name: &str, release: &str) -> Result<Cinder> {
        self.patch_cinder(
            name,
            serde_json::json!({ "spec": { "openStackRelease": release, "image": { "reference": { "tag": release } } } }),
        )
        .await
    }

    /// Waits until the upgrade to `release` has finished and everything is Ready.
    pub async fn wait_installed(&self, name: &str, release: &str) -> Result<Cinder> {
        Ok(until(
            &self.api::<Cinder>(),
            name,
            Duration::from_secs(120),
            "upgrade complete and Ready",
            ratchet_services::testing::settled_at(release),
        )
        .await?)
    }

    /// Upgrades Cinder `name` to `release` and checks it passed every phase in order.
    pub async fn upgrade_through_every_phase(&self, name: &str, release: &str) -> Result<()> {
        let statuses = StatusRecorder::start(self.api(), name).await?;
        self.bump(name, release).await?;
        self.wait_installed(name, release).await?;
        let phases = statuses.phases();
        anyhow::ensure!(phases == EVERY_PHASE, "phases {phases:?}");
        Ok(())
    }

    pub async fn wait_phase(&self, name: &str, phase: CinderUpgradePhase) -> Result<Cinder> {
        Ok(until(
            &self.api::<Cinder>(),
            name,
            TIMEOUT,
            &format!("phase {phase:?}"),
            |c: &Cinder| c.status.as_ref().is_some_and(|s| s.upgrade_phase == phase),
        )
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

    /// Waits until an event with this reason about `name` exists. Events are
    /// published after the status write, so a test that saw the condition must
    /// wait for the event rather than read at once.
    pub async fn wait_event(&self, name: &str, reason: &str) -> Result<()> {
        ratchet_testenv::wait::until_any(
            &self.api::<Event>(),
            TIMEOUT,
            &format!("a {reason} event about {name}"),
            |e: &Event| {
                e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                    && e.reason.as_deref() == Some(reason)
            },
        )
        .await?;
        Ok(())
    }

    /// The type (Normal, Warning) of each event about `name` with `reason`.
    pub async fn event_types(&self, name: &str, reason: &str) -> Result<Vec<String>> {
        Ok(self
            .events_for(name)
            .await?
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .filter_map(|e| e.type_)
            .collect())
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
    ratchet_services::cinder::example_manifest(
        name,
        release,
        "registry.invalid/openstack/cinder",
        tag,
        backends,
    )
}

/// The phases a Cinder's status passes through in one whole upgrade (seed 000).
pub const EVERY_PHASE: [&str; 6] = [
    "",
    "Expanding",
    "Migrating",
    "RollingUpdate",
    "Contracting",
    "",
];

/// Records every distinct status of a Cinder as it changes (phase, installed,
/// target, DatabaseReady reason), from a watch started before the change.
/// A list shared with a recording task.
pub type Log<T> = std::sync::Arc<std::sync::Mutex<Vec<T>>>;

/// (phase, installedRelease, targetRelease, DatabaseReady reason)
pub type SeenStatus = (String, String, String, String);

pub struct StatusRecorder {
    seen: Log<SeenStatus>,
    task: tokio::task::JoinHandle<()>,
}

impl StatusRecorder {
    pub async fn start(api: Api<Cinder>, name: &str) -> Result<StatusRecorder> {
        use futures::StreamExt;
        use kube::runtime::watcher;
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let mut stream = watcher::watcher(api, config).boxed();
        // Wait for the initial list so nothing after this point is missed.
        loop {
            match tokio::time::timeout(TIMEOUT, stream.next()).await? {
                Some(Ok(watcher::Event::InitDone)) => break,
                Some(_) => continue,
                None => anyhow::bail!("watch ended"),
            }
        }
        let sink = seen.clone();
        let task = tokio::spawn(async move {
            while let Some(event) = stream.next().await {
                let Ok(watcher::Event::Apply(c) | watcher::Event::InitApply(c)) = event else {
                    continue;
                };
                let Some(s) = c.status.as_ref() else { continue };
                let phase = serde_json::to_value(s.upgrade_phase)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                let db = condition(&c, "DatabaseReady")
                    .map(|(_, r)| r)
                    .unwrap_or_default();
                let entry = (
                    phase,
                    s.installed_release.clone(),
                    s.target_release.clone(),
                    db,
                );
                let mut seen = sink.lock().unwrap_or_else(|p| p.into_inner());
                if seen.last() != Some(&entry) {
                    seen.push(entry);
                }
            }
        });
        Ok(StatusRecorder { seen, task })
    }

    pub fn statuses(&self) -> Vec<SeenStatus> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The distinct upgrade phases seen, in order.
    pub fn phases(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (phase, ..) in self.statuses() {
            if out.last() != Some(&phase) {
                out.push(phase);
            }
        }
        out
    }
}

impl Drop for StatusRecorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A long-running workload as a test sees it, whatever its kind (Cinder's API
/// is a Deployment, its scheduler, volume and backup services StatefulSets).
#[derive(Clone, Debug)]
pub struct Workload {
    pub name: String,
    pub kind: &'static str,
    pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    pub template: k8s_openapi::api::core::v1::PodTemplateSpec,
    /// Every replica updated, ready and available, nothing else running.
    pub complete: bool,
}

impl Workload {
    pub fn from_deployment(d: &k8s_openapi::api::apps::v1::Deployment) -> Workload {
        let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let complete = d.status.as_ref().is_some_and(|s| {
            s.observed_generation == d.metadata.generation
                && s.updated_replicas.unwrap_or(0) == want
                && s.ready_replicas.unwrap_or(0) == want
                && s.available_replicas.unwrap_or(0) == want
                && s.replicas.unwrap_or(0) == want
        });
        Workload {
            name: d.metadata.name.clone().unwrap_or_default(),
            kind: "Deployment",
            metadata: d.metadata.clone(),
            template: d
                .spec
                .as_ref()
                .map(|s| s.template.clone())
                .unwrap_or_default(),
            complete,
        }
    }

    pub fn from_stateful_set(s: &k8s_openapi::api::apps::v1::StatefulSet) -> Workload {
        let want = s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let complete = s.status.as_ref().is_some_and(|st| {
            st.observed_generation == s.metadata.generation
                && st.updated_replicas.unwrap_or(0) == want
                && st.ready_replicas.unwrap_or(0) == want
                && st.available_replicas.unwrap_or(0) == want
                && st.replicas == want
                && st.current_revision == st.update_revision
        });
        Workload {
            name: s.metadata.name.clone().unwrap_or_default(),
            kind: "StatefulSet",
            metadata: s.metadata.clone(),
            template: s
                .spec
                .as_ref()
                .map(|s| s.template.clone())
                .unwrap_or_default(),
            complete,
        }
    }

    pub fn pod_spec(&self) -> k8s_openapi::api::core::v1::PodSpec {
        self.template.spec.clone().unwrap_or_default()
    }

    pub fn image(&self) -> String {
        self.pod_spec()
            .containers
            .first()
            .and_then(|c| c.image.clone())
            .unwrap_or_default()
    }

    pub fn template_annotation(&self, key: &str) -> Option<String> {
        self.template
            .metadata
            .as_ref()
            .and_then(|m| m.annotations.as_ref())
            .and_then(|a| a.get(key).cloned())
    }
}

impl Harness {
    /// Every Deployment and StatefulSet in the namespace, by name.
    pub async fn workloads(&self) -> Result<BTreeMap<String, Workload>> {
        use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
        let mut out = BTreeMap::new();
        for d in self
            .api::<Deployment>()
            .list(&ListParams::default())
            .await?
            .items
        {
            let w = Workload::from_deployment(&d);
            out.insert(w.name.clone(), w);
        }
        for s in self
            .api::<StatefulSet>()
            .list(&ListParams::default())
            .await?
            .items
        {
            let w = Workload::from_stateful_set(&s);
            out.insert(w.name.clone(), w);
        }
        Ok(out)
    }

    /// One workload, of whichever kind it is.
    pub async fn workload(&self, name: &str) -> Result<Workload> {
        self.workloads()
            .await?
            .remove(name)
            .ok_or_else(|| anyhow::anyhow!("no workload {name}"))
    }

    /// Waits (one watch per kind, up to `timeout`) until `name` passes `check`.
    pub async fn wait_workload(
        &self,
        name: &str,
        what: &str,
        timeout: Duration,
        check: impl Fn(&Workload) -> bool,
    ) -> Result<Workload> {
        use futures::StreamExt;
        let mut stream = self.watch_workloads();
        let mut seen = None;
        let found = tokio::time::timeout(timeout, async {
            while let Some(change) = stream.next().await {
                if let Ok(WorkloadChange::Applied(w)) = change
                    && w.name == name
                {
                    if check(&w) {
                        return Some(*w);
                    }
                    seen = Some(w);
                }
            }
            None
        })
        .await;
        match found {
            Ok(Some(w)) => Ok(w),
            _ => anyhow::bail!("{name}: {what} not reached within {timeout:?}; last {seen:?}"),
        }
    }

    /// Every workload of either kind as it is listed and changes (two watches,
    /// merged); the initial lists end with one `Listed` per kind.
    pub fn watch_workloads(
        &self,
    ) -> futures::stream::BoxStream<'static, kube::runtime::watcher::Result<WorkloadChange>> {
        use futures::StreamExt;
        use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
        use kube::runtime::watcher::{self, Event};
        fn change<K>(event: Event<K>, to: impl Fn(&K) -> Workload) -> WorkloadChange {
            match event {
                Event::Apply(k) | Event::InitApply(k) => WorkloadChange::Applied(Box::new(to(&k))),
                Event::Delete(k) => WorkloadChange::Deleted(to(&k).name),
                Event::Init => WorkloadChange::Other,
                Event::InitDone => WorkloadChange::Listed,
            }
        }
        let deployments = watcher::watcher(self.api::<Deployment>(), watcher::Config::default())
            .map(|r| r.map(|e| change(e, Workload::from_deployment)));
        let sets = watcher::watcher(self.api::<StatefulSet>(), watcher::Config::default())
            .map(|r| r.map(|e| change(e, Workload::from_stateful_set)));
        futures::stream::select(deployments, sets).boxed()
    }
}

/// One event of [`Harness::watch_workloads`].
#[derive(Clone, Debug)]
pub enum WorkloadChange {
    Applied(Box<Workload>),
    Deleted(String),
    /// One kind's initial list is complete.
    Listed,
    Other,
}
