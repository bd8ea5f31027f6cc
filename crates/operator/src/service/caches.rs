//! Watch caches of the objects Ratchet owns. The same watch streams that wake
//! the controllers fill these stores (a reflector updates its store before the
//! change reaches a controller), so a pass woken by a child's change reads
//! that change from memory instead of listing it again: no round trip for
//! observing Jobs, workloads, ConfigMaps and Services.
//!
//! The operator watches each child kind once, whatever the number of services
//! it runs: one store per kind, shared by every service's controller, and a
//! router that hands each changed object to the controller of the service its
//! name label names ([`Caches::start`]). Watches and cached copies therefore
//! do not multiply with the services.
//!
//! A watch that fails (the API server restarting, a dropped connection) retries
//! on its own within a second ([`WATCH_RETRY`]) and its errors stop here: passed
//! on, they would put the controller's whole trigger stream into kube's default
//! back-off (up to 30 s without any trigger, for every resource), which is what
//! stalled upgrades for minutes after a few seconds of API-server outage.

use std::sync::Arc;

use std::time::Duration;

use std::collections::HashMap;

use futures::channel::mpsc;
use futures::future::BoxFuture;
use futures::{FutureExt, SinkExt, Stream, StreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, StatefulSet, StatefulSetSpec};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, PodTemplateSpec, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};
use kube::Resource;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::ExponentialBackoff;
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;

use super::api;
use crate::children::FIELD_MANAGER;
use crate::context::Context;
use crate::error::Result;
use crate::labels::{INSTANCE, MANAGED_BY, MANAGER, NAME};

/// The stores of every child Ratchet manages, shared by all controllers (each
/// reads its own children out of them with [`owned_by`] and [`named`]).
#[derive(Clone)]
pub struct Caches {
    pub jobs: Store<Job>,
    pub deployments: Store<Deployment>,
    pub stateful_sets: Store<StatefulSet>,
    pub config_maps: Store<ConfigMap>,
    pub services: Store<Service>,
    /// The Secrets of the namespaces Ratchet reconciles in, by key name only
    /// (never a value): a pass checks that the Secret keys its pods read exist
    /// without a request to the API server.
    pub secret_keys: Store<Secret>,
}

/// One service's share of the child watches: the changes to its children, each
/// for `Controller::owns_stream`.
pub struct Triggers {
    pub jobs: Trigger<Job>,
    pub deployments: Trigger<Deployment>,
    pub stateful_sets: Trigger<StatefulSet>,
    pub config_maps: Trigger<ConfigMap>,
    pub services: Trigger<Service>,
}

pub type Trigger<K> = std::pin::Pin<Box<dyn Stream<Item = Result<K, watcher::Error>> + Send>>;

/// The longest a failed watch waits before it tries again: the API server is
/// back for the operator within this long of serving again. A handful of watches
/// retrying once a second is nothing to an API server; waiting longer is what
/// users see as a stalled upgrade.
pub const WATCH_RETRY: Duration = Duration::from_secs(1);

/// 100 ms doubling to [`WATCH_RETRY`], with jitter, for as long as it takes.
pub fn watch_backoff() -> ExponentialBackoff {
    backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(100))
        .with_max_delay(WATCH_RETRY)
        .with_jitter()
        .without_max_times()
        .into()
}

/// A reflector over `api` with `config`: fills its store with objects cut
/// down by `trim` to what decisions read ([`Slim`]), retries on its own and
/// yields only objects (errors are logged, see the module docs).
pub fn reflected<K>(
    api: kube::Api<K>,
    config: watcher::Config,
    trim: fn(&mut K),
) -> (Store<K>, Trigger<K>)
where
    K: Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let kind = K::kind(&()).into_owned();
    let (store, writer) = reflector::store();
    let stream = reflector::reflector(writer, watcher(api, config).modify(trim))
        .backoff(watch_backoff())
        .touched_objects()
        .filter_map(move |item| {
            let kept = match item {
                Ok(object) => Some(Ok(object)),
                // An expired resource version is the watch protocol at work
                // (the watcher lists again), not a fault worth a warning.
                Err(watcher::Error::WatchError(status)) if status.code == 410 => {
                    tracing::debug!(kind = %kind, %status, "watch expired; listing again");
                    None
                }
                Err(error) => {
                    tracing::warn!(kind = %kind, %error, "watch failed; retrying");
                    None
                }
            };
            std::future::ready(kept)
        });
    (store, Box::pin(stream))
}

/// What a cached child keeps: only what a pass reads, so memory follows the
/// number of objects, not the size of their pod templates and configuration.
/// The generated Kubernetes types are large even when nearly empty (a
/// `Container` is 2 KiB inline, every label map at least one 0.5 KiB node), so
/// a slim object keeps as few maps and nested structs as the pass allows
/// (`ratchet-bench operator` prints what each cache costs).
pub trait Slim: Resource {
    fn slim(&mut self);
}

/// The Job controller's verdicts, the only conditions a pass reads.
const JOB_VERDICTS: [&str; 4] = ["Complete", "SuccessCriteriaMet", "Failed", "FailureTarget"];

/// A Job is read for its labels, annotations (its pod-spec hash) and verdict.
impl Slim for Job {
    fn slim(&mut self) {
        drop_managed_fields(self);
        self.spec = None;
        if let Some(conditions) = self.status.as_mut().and_then(|s| s.conditions.as_mut()) {
            conditions.retain(|c| c.status == "True" && JOB_VERDICTS.contains(&c.type_.as_str()));
        }
    }
}

/// A workload is read for its replicas, status, annotations and its template's
/// annotations and first image; a Deployment's conditions only for a missed
/// progress deadline.
impl Slim for Deployment {
    fn slim(&mut self) {
        drop_managed_fields(self);
        if let Some(spec) = self.spec.as_mut() {
            *spec = DeploymentSpec {
                replicas: spec.replicas,
                template: slim_template(std::mem::take(&mut spec.template)),
                ..DeploymentSpec::default()
            };
        }
        if let Some(conditions) = self.status.as_mut().and_then(|s| s.conditions.as_mut()) {
            conditions.retain(|c| c.type_ == "Progressing" && c.status == "False");
        }
    }
}

/// A StatefulSet also keeps when Ratchet last changed it (its field manager's
/// time), since its stall is judged from that, and its selector, which finds
/// its pods.
impl Slim for StatefulSet {
    fn slim(&mut self) {
        let ratchets = self.metadata.managed_fields.take().map(|entries| {
            entries
                .into_iter()
                .filter(|e| e.manager.as_deref() == Some(FIELD_MANAGER))
                .map(|e| ManagedFieldsEntry {
                    manager: e.manager,
                    time: e.time,
                    ..ManagedFieldsEntry::default()
                })
                .collect()
        });
        self.metadata.managed_fields = ratchets;
        if let Some(spec) = self.spec.as_mut() {
            *spec = StatefulSetSpec {
                replicas: spec.replicas,
                selector: std::mem::take(&mut spec.selector),
                template: slim_template(std::mem::take(&mut spec.template)),
                ..StatefulSetSpec::default()
            };
        }
    }
}

/// A ConfigMap is compared by its content hash annotation, never its data.
impl Slim for ConfigMap {
    fn slim(&mut self) {
        drop_managed_fields(self);
        self.data = None;
        self.binary_data = None;
    }
}

/// A Secret is read by name for which keys it has; its values are never kept.
impl Slim for Secret {
    fn slim(&mut self) {
        self.metadata = ObjectMeta {
            name: self.metadata.name.take(),
            namespace: self.metadata.namespace.take(),
            resource_version: self.metadata.resource_version.take(),
            uid: self.metadata.uid.take(),
            ..ObjectMeta::default()
        };
        for value in self.data.iter_mut().flat_map(|d| d.values_mut()) {
            *value = ByteString(Vec::new());
        }
        for value in self.string_data.iter_mut().flat_map(|d| d.values_mut()) {
            value.clear();
        }
    }
}

/// A Service is compared by its rendering's hash annotation.
impl Slim for Service {
    fn slim(&mut self) {
        drop_managed_fields(self);
        self.spec = None;
    }
}

/// Drops an object's managed fields (the bulk of most objects' metadata),
/// which no pass reads. Also what a service's own resource loses in its cache.
pub fn drop_managed_fields<K: Resource>(object: &mut K) {
    object.meta_mut().managed_fields = None;
}

/// Where a slim template keeps its first container's image: an annotation
/// only the cache writes (Ratchet renders no such key), since a `Container`
/// to hold one string would cost 2 KiB per workload.
const CACHED_IMAGE: &str = "ratchet.c5c3.io/cached-image";

/// A pod template's annotations and its first container's image.
fn slim_template(template: PodTemplateSpec) -> PodTemplateSpec {
    let image = template
        .spec
        .and_then(|s| s.containers.into_iter().next())
        .and_then(|c| c.image);
    let mut annotations = template.metadata.and_then(|m| m.annotations);
    if let Some(image) = image {
        annotations
            .get_or_insert_with(Default::default)
            .insert(CACHED_IMAGE.to_string(), image);
    }
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            annotations,
            ..ObjectMeta::default()
        }),
        spec: None,
    }
}

/// The first container's image of a template, slim or whole.
pub fn template_image(template: &PodTemplateSpec) -> Option<String> {
    let cached = template
        .metadata
        .as_ref()
        .and_then(|m| m.annotations.as_ref())
        .and_then(|a| a.get(CACHED_IMAGE));
    let whole = template
        .spec
        .as_ref()
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.as_ref());
    cached.or(whole).cloned()
}

/// How many changed objects wait for one controller before the router waits
/// for it: the controller drains its triggers into its queue at once, so this
/// is only slack for a burst.
const ROUTE_BUFFER: usize = 256;

/// The started child watches: each service's triggers, and the routing that
/// feeds them (to run for as long as the controllers do).
pub struct Routed {
    pub triggers: HashMap<&'static str, Triggers>,
    pub routing: Vec<BoxFuture<'static, ()>>,
}

/// The senders of one kind's changes, by service name.
type Routes<K> = HashMap<&'static str, mpsc::Sender<K>>;

/// A new route for `service`: the sender goes into `routes`, the receiving
/// end is the service's trigger.
fn add_route<K: Send + 'static>(routes: &mut Routes<K>, service: &'static str) -> Trigger<K> {
    let (sender, receiver) = mpsc::channel(ROUTE_BUFFER);
    routes.insert(service, sender);
    Box::pin(receiver.map(Ok))
}

/// The label selector of every child Ratchet manages for one of `services`.
pub fn managed_selector(services: &[&str]) -> String {
    format!("{MANAGED_BY}={MANAGER},{NAME} in ({})", services.join(","))
}

/// One kind's shared watch: every object Ratchet manages for one of
/// `services`, its store, and the routing of each change to its service.
fn shared<K>(
    ctx: &Context,
    services: &[&'static str],
    routes: Routes<K>,
) -> (Store<K>, BoxFuture<'static, ()>)
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Slim
        + Clone
        + std::fmt::Debug
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let managed = watcher::Config::default().labels(&managed_selector(services));
    let (store, changes) = reflected(api::<K>(ctx), managed, K::slim);
    (store, route(changes, routes).boxed())
}

/// Hands each changed object to the controller of the service it belongs to.
async fn route<K: Resource>(mut changes: Trigger<K>, mut routes: Routes<K>) {
    while let Some(change) = changes.next().await {
        let Ok(object) = change else { continue };
        let service = object.meta().labels.as_ref().and_then(|l| l.get(NAME));
        if let Some(route) = service.and_then(|s| routes.get_mut(s.as_str())) {
            // A closed route is a controller that has stopped; the rest go on.
            let _ = route.send(object).await;
        }
    }
}

impl Caches {
    /// Starts one watch per child kind for all of `services` (their
    /// [`super::OpenStackService::SERVICE`] names).
    pub fn start(ctx: &Context, services: &[&'static str]) -> (Caches, Routed) {
        let (mut jobs, mut deployments, mut stateful_sets, mut config_maps, mut kube_services) = (
            Routes::new(),
            Routes::new(),
            Routes::new(),
            Routes::new(),
            Routes::new(),
        );
        let triggers = services
            .iter()
            .map(|&service| {
                let triggers = Triggers {
                    jobs: add_route(&mut jobs, service),
                    deployments: add_route(&mut deployments, service),
                    stateful_sets: add_route(&mut stateful_sets, service),
                    config_maps: add_route(&mut config_maps, service),
                    services: add_route(&mut kube_services, service),
                };
                (service, triggers)
            })
            .collect();
        let (jobs, job_routing) = shared(ctx, services, jobs);
        let (deployments, deployment_routing) = shared(ctx, services, deployments);
        let (stateful_sets, stateful_set_routing) = shared(ctx, services, stateful_sets);
        let (config_maps, config_map_routing) = shared(ctx, services, config_maps);
        let (services_cache, service_routing) = shared(ctx, services, kube_services);
        // Secrets wake no pass (a pass waiting for one is requeued), so their
        // stream only fills the store.
        let (secret_keys, secret_changes) =
            reflected(api::<Secret>(ctx), watcher::Config::default(), Secret::slim);
        (
            Caches {
                jobs,
                deployments,
                stateful_sets,
                config_maps,
                services: services_cache,
                secret_keys,
            },
            Routed {
                triggers,
                routing: vec![
                    job_routing,
                    deployment_routing,
                    stateful_set_routing,
                    config_map_routing,
                    service_routing,
                    secret_changes.for_each(|_| std::future::ready(())).boxed(),
                ],
            },
        )
    }

    /// Resolves once every store holds its initial list: before that, a missing
    /// child may only be unlisted, and deciding on it would flap the status.
    /// Bounded by `timeout`: a store that cannot list (e.g. RBAC without
    /// `statefulsets`) fails with a message naming it instead of stalling
    /// the pass.
    pub async fn ready(&self, timeout: std::time::Duration) -> Result<(), String> {
        let waits = [
            ("jobs", wait(&self.jobs).boxed()),
            ("deployments", wait(&self.deployments).boxed()),
            ("statefulsets", wait(&self.stateful_sets).boxed()),
            ("configmaps", wait(&self.config_maps).boxed()),
            ("services", wait(&self.services).boxed()),
            ("secrets", wait(&self.secret_keys).boxed()),
        ];
        for (kind, ready) in waits {
            if tokio::time::timeout(timeout, ready).await.is_err() {
                return Err(format!(
                    "the watch cache of {kind} did not fill within {timeout:?}; check that the operator may list and watch {kind}"
                ));
            }
        }
        Ok(())
    }
}

async fn wait<K>(store: &Store<K>)
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    let _ = store.wait_until_ready().await;
}

/// The cached objects one resource owns (by its service and instance labels).
pub fn owned_by<K>(store: &Store<K>, service: &str, namespace: &str, instance: &str) -> Vec<Arc<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    store.state_filter(|object| {
        let meta = object.meta();
        meta.namespace.as_deref() == Some(namespace)
            && meta.labels.as_ref().is_some_and(|l| {
                l.get(NAME).map(String::as_str) == Some(service)
                    && l.get(INSTANCE).map(String::as_str) == Some(instance)
            })
    })
}

/// One cached object by name.
pub fn named<K>(store: &Store<K>, namespace: &str, name: &str) -> Option<Arc<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    store.get(&ObjectRef::new(name).within(namespace))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labelled(name: &str, service: Option<&str>) -> ConfigMap {
        let mut config = ConfigMap::default();
        config.metadata.name = Some(name.into());
        config.metadata.labels =
            service.map(|s| std::collections::BTreeMap::from([(NAME.to_string(), s.to_string())]));
        config
    }

    #[test]
    fn a_slim_secret_keeps_its_key_names_and_no_value_anywhere() {
        let mut secret: Secret = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "db", "namespace": "ns",
                "annotations": { "kubectl.kubernetes.io/last-applied-configuration":
                                 "{\"data\":{\"password\":\"c2VjcmV0\"}}" },
            },
            "data": { "password": "c2VjcmV0" },
            "stringData": { "user": "cinder" },
        }))
        .expect("a Secret");
        secret.slim();
        assert_eq!(secret.metadata.name.as_deref(), Some("db"));
        assert_eq!(secret.metadata.namespace.as_deref(), Some("ns"));
        assert!(secret.metadata.annotations.is_none());
        let data = secret.data.expect("data");
        assert_eq!(data.keys().collect::<Vec<_>>(), ["password"]);
        assert!(data.values().all(|v| v.0.is_empty()));
        let string_data = secret.string_data.expect("stringData");
        assert_eq!(string_data.keys().collect::<Vec<_>>(), ["user"]);
        assert!(string_data.values().all(String::is_empty));
    }

    #[tokio::test]
    async fn each_change_reaches_only_the_controller_of_its_service() {
        let changes = futures::stream::iter([
            labelled("c1", Some("cinder")),
            labelled("g1", Some("glance")),
            labelled("stray", Some("nova")),
            labelled("unlabelled", None),
            labelled("c2", Some("cinder")),
        ])
        .map(Ok);
        let (cinder, cinder_changes) = mpsc::channel(ROUTE_BUFFER);
        let (glance, glance_changes) = mpsc::channel(ROUTE_BUFFER);
        route(
            Box::pin(changes),
            HashMap::from([("cinder", cinder), ("glance", glance)]),
        )
        .await;
        let names = |changes: mpsc::Receiver<ConfigMap>| {
            changes
                .map(|c| c.metadata.name.unwrap_or_default())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(cinder_changes).await, ["c1", "c2"]);
        assert_eq!(names(glance_changes).await, ["g1"]);
    }

    /// The types of the conditions a slim status kept, in order.
    fn condition_types<C>(conditions: &Option<Vec<C>>, type_of: fn(&C) -> &String) -> Vec<&str> {
        conditions
            .iter()
            .flatten()
            .map(|c| type_of(c).as_str())
            .collect()
    }

    fn workload_json(kind: &str) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "apps/v1", "kind": kind,
            "metadata": {
                "name": "cinder", "namespace": "ns",
                "labels": { "app.kubernetes.io/name": "cinder" },
                "annotations": { "ratchet.c5c3.io/template-hash": "h1" },
                "managedFields": [
                    { "manager": "ratchet", "operation": "Apply",
                      "time": "2026-12-03T10:00:00Z", "fieldsV1": { "f:spec": {} } },
                    { "manager": "kube-controller-manager", "operation": "Update",
                      "time": "2026-12-03T10:00:05Z", "fieldsV1": { "f:status": {} } },
                ],
            },
            "spec": {
                "replicas": 2,
                "serviceName": "cinder",
                "selector": { "matchLabels": { "app": "cinder" } },
                "template": {
                    "metadata": {
                        "labels": { "app": "cinder" },
                        "annotations": { "cinder.c5c3.io/installed-release": "2026.1" },
                    },
                    "spec": {
                        "containers": [{
                            "name": "api", "image": "repo/cinder:2026.1",
                            "command": ["cinder-api"], "env": [{ "name": "A", "value": "b" }],
                        }, { "name": "sidecar", "image": "repo/other" }],
                        "volumes": [{ "name": "config", "configMap": { "name": "cinder-config" } }],
                    },
                },
            },
            "status": {
                "replicas": 2, "readyReplicas": 2,
                "updateRevision": "r2", "currentRevision": "r2",
                "conditions": [
                    { "type": "Available", "status": "True", "message": "has minimum availability" },
                    { "type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded" },
                ],
            },
        })
    }

    #[test]
    fn a_slim_deployment_keeps_what_a_pass_reads_and_no_pod_spec_or_managed_fields() {
        let mut deployment: Deployment =
            serde_json::from_value(workload_json("Deployment")).expect("a Deployment");
        deployment.slim();
        let spec = deployment.spec.as_ref().expect("spec");
        assert_eq!(spec.replicas, Some(2));
        assert!(spec.template.spec.is_none() && spec.selector.match_labels.is_none());
        assert_eq!(
            template_image(&spec.template).as_deref(),
            Some("repo/cinder:2026.1")
        );
        let template = spec.template.metadata.as_ref().expect("template metadata");
        assert!(template.labels.is_none());
        assert_eq!(
            template
                .annotations
                .as_ref()
                .and_then(|a| a.get("cinder.c5c3.io/installed-release"))
                .map(String::as_str),
            Some("2026.1")
        );
        assert!(deployment.metadata.managed_fields.is_none());
        assert!(deployment.metadata.labels.is_some() && deployment.metadata.annotations.is_some());
        let status = deployment.status.expect("status");
        assert_eq!(status.ready_replicas, Some(2));
        assert_eq!(
            condition_types(&status.conditions, |c| &c.type_),
            ["Progressing"]
        );
    }

    #[test]
    fn a_slim_stateful_set_keeps_when_ratchet_last_changed_it_and_its_revisions() {
        let mut set: StatefulSet =
            serde_json::from_value(workload_json("StatefulSet")).expect("a StatefulSet");
        set.slim();
        let managed = set
            .metadata
            .managed_fields
            .as_ref()
            .expect("managed fields");
        assert_eq!(managed.len(), 1);
        assert_eq!(managed[0].manager.as_deref(), Some(FIELD_MANAGER));
        assert!(managed[0].time.is_some() && managed[0].fields_v1.is_none());
        let spec = set.spec.as_ref().expect("spec");
        assert_eq!(spec.replicas, Some(2));
        assert!(spec.service_name.is_none() && spec.template.spec.is_none());
        assert_eq!(
            spec.selector
                .match_labels
                .as_ref()
                .and_then(|l| l.get("app")),
            Some(&"cinder".to_string())
        );
        assert_eq!(
            template_image(&spec.template).as_deref(),
            Some("repo/cinder:2026.1")
        );
        let status = set.status.expect("status");
        assert_eq!(status.update_revision.as_deref(), Some("r2"));
        assert_eq!(status.current_revision.as_deref(), Some("r2"));
    }

    #[test]
    fn a_whole_template_gives_its_first_image_too() {
        let set: StatefulSet =
            serde_json::from_value(workload_json("StatefulSet")).expect("a StatefulSet");
        let template = &set.spec.expect("spec").template;
        assert_eq!(
            template_image(template).as_deref(),
            Some("repo/cinder:2026.1")
        );
    }

    #[test]
    fn a_slim_config_map_keeps_its_hash_not_its_files_and_a_job_only_its_verdict() {
        let mut config: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "c", "annotations": { "ratchet.c5c3.io/template-hash": "h" } },
            "data": { "cinder.conf": "[DEFAULT]\n" },
        }))
        .expect("a ConfigMap");
        config.slim();
        assert!(config.data.is_none());
        assert!(config.metadata.annotations.is_some_and(|a| a.len() == 1));
        let mut job: Job = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "c-db-sync",
                "labels": { "app.kubernetes.io/component": "db-sync" },
                "annotations": { "ratchet.c5c3.io/pod-spec-hash": "p" },
            },
            "spec": { "backoffLimit": 4, "template": { "spec": {
                "containers": [{ "name": "db-sync", "image": "i" }], "restartPolicy": "Never" } } },
            "status": { "succeeded": 1, "conditions": [
                { "type": "SuccessCriteriaMet", "status": "True" },
                { "type": "Complete", "status": "True" },
                { "type": "Suspended", "status": "False" },
            ] },
        }))
        .expect("a Job");
        job.slim();
        assert!(job.spec.is_none());
        assert!(job.metadata.labels.is_some() && job.metadata.annotations.is_some());
        let status = job.status.expect("status");
        assert_eq!(
            condition_types(&status.conditions, |c| &c.type_),
            ["SuccessCriteriaMet", "Complete"]
        );
    }
}
