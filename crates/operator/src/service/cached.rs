//! Ratchet's own cached form of the children it owns: what a pass reads of a
//! Job, a workload, a ConfigMap or a Service, read straight off the wire and
//! nothing else. The generated Kubernetes types cost kilobytes per object
//! even when nearly empty (a `Job` is 2.6 KiB inline, a `Container` 2 KiB,
//! every label map at least one 0.5 KiB B-tree node), and a cache holds one
//! per child of every resource of the fleet; a [`Cached`] object keeps its
//! identity, Ratchet's labels and annotations as short lists, and a few
//! fields per kind ([`Detail`]). The pod template, the data and the managed
//! fields are skipped while parsing, never allocated.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use ratchet_phase_machine::JobOutcome;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Deserializer};

use crate::children::FIELD_MANAGER;

/// A child of kind `K` as a pass reads it: `D` is what it keeps of its spec
/// and status.
pub struct Cached<K, D> {
    /// Identity only: name, namespace, uid, resource version, generation,
    /// creation and deletion time, owner references (which wake the owner's
    /// controller). Its labels and annotations are the fields below.
    pub metadata: ObjectMeta,
    pub labels: Pairs,
    /// Only Ratchet's own (the `c5c3.io` domains): its hashes and releases.
    pub annotations: Pairs,
    /// When Ratchet's field manager last changed the object.
    pub applied_at: Option<Time>,
    pub detail: D,
    kind: PhantomData<fn() -> K>,
}

pub type CachedJob = Cached<k8s_openapi::api::batch::v1::Job, JobDetail>;
pub type CachedDeployment = Cached<k8s_openapi::api::apps::v1::Deployment, WorkloadDetail>;
pub type CachedStatefulSet = Cached<k8s_openapi::api::apps::v1::StatefulSet, WorkloadDetail>;
pub type CachedDaemonSet = Cached<k8s_openapi::api::apps::v1::DaemonSet, WorkloadDetail>;
/// A ConfigMap or Service is compared by its hash annotation and labels only.
pub type CachedConfigMap = Cached<k8s_openapi::api::core::v1::ConfigMap, ()>;
pub type CachedService = Cached<k8s_openapi::api::core::v1::Service, ()>;

impl<K, D: Clone> Clone for Cached<K, D> {
    fn clone(&self) -> Self {
        Cached {
            metadata: self.metadata.clone(),
            labels: self.labels.clone(),
            annotations: self.annotations.clone(),
            applied_at: self.applied_at.clone(),
            detail: self.detail.clone(),
            kind: PhantomData,
        }
    }
}

impl<K: k8s_openapi::Resource, D: fmt::Debug> fmt::Debug for Cached<K, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(K::KIND)
            .field("metadata", &self.metadata)
            .field("labels", &self.labels)
            .field("annotations", &self.annotations)
            .field("applied_at", &self.applied_at)
            .field("detail", &self.detail)
            .finish()
    }
}

impl<K: k8s_openapi::Resource, D> kube::Resource for Cached<K, D> {
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(_: &()) -> std::borrow::Cow<'_, str> {
        K::KIND.into()
    }
    fn group(_: &()) -> std::borrow::Cow<'_, str> {
        K::GROUP.into()
    }
    fn version(_: &()) -> std::borrow::Cow<'_, str> {
        K::VERSION.into()
    }
    fn api_version(_: &()) -> std::borrow::Cow<'_, str> {
        K::API_VERSION.into()
    }
    fn plural(_: &()) -> std::borrow::Cow<'_, str> {
        K::URL_PATH_SEGMENT.into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl<K, D> Cached<K, D> {
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key)
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key)
    }
}

/// What a cached kind keeps of its spec and status, built from the parts of
/// them it names (everything else is skipped unread).
pub trait Detail: Sized {
    type Spec: DeserializeOwned;
    type Status: DeserializeOwned;
    fn read(spec: Option<Self::Spec>, status: Option<Self::Status>) -> Self;
}

impl Detail for () {
    type Spec = IgnoredAny;
    type Status = IgnoredAny;
    fn read(_: Option<IgnoredAny>, _: Option<IgnoredAny>) {}
}

/// A short list of key/value pairs, sorted by key: a handful of labels cost a
/// fraction of a B-tree map's node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pairs(Box<[(String, String)]>);

impl Pairs {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| self.0[i].1.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &String)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// Whether these are exactly `map`'s pairs.
    pub fn equals(&self, map: Option<&BTreeMap<String, String>>) -> bool {
        let map = map.into_iter().flatten();
        self.0.len() == map.clone().count()
            && self
                .0
                .iter()
                .zip(map)
                .all(|((k, v), (mk, mv))| k == mk && v == mv)
    }

    fn kept(map: BTreeMap<String, String>, keep: impl Fn(&str) -> bool) -> Pairs {
        Pairs(map.into_iter().filter(|(k, _)| keep(k)).collect())
    }
}

/// Ratchet's annotations are all in a `c5c3.io` domain; the rest (the
/// controllers' revisions, `kubectl`'s last applied object) no pass reads.
fn ratchets(key: &str) -> bool {
    key.split_once('/')
        .is_some_and(|(domain, _)| domain == "c5c3.io" || domain.ends_with(".c5c3.io"))
}

#[derive(Deserialize)]
#[serde(bound = "D::Spec: DeserializeOwned, D::Status: DeserializeOwned")]
struct Wire<D: Detail> {
    #[serde(default)]
    metadata: WireMeta,
    spec: Option<D::Spec>,
    status: Option<D::Status>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct WireMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    owner_references: Option<Vec<OwnerReference>>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
    managed_fields: Vec<WireManager>,
}

#[derive(Deserialize)]
struct WireManager {
    manager: Option<String>,
    time: Option<Time>,
}

impl<'de, K, D: Detail> Deserialize<'de> for Cached<K, D> {
    fn deserialize<De: Deserializer<'de>>(deserializer: De) -> Result<Self, De::Error> {
        let Wire::<D> {
            metadata: meta,
            spec,
            status,
        } = Wire::deserialize(deserializer)?;
        let applied_at = meta
            .managed_fields
            .into_iter()
            .filter(|m| m.manager.as_deref() == Some(FIELD_MANAGER))
            .filter_map(|m| m.time)
            .max_by_key(|t| t.0);
        Ok(Cached {
            metadata: ObjectMeta {
                name: meta.name,
                namespace: meta.namespace,
                uid: meta.uid,
                resource_version: meta.resource_version,
                generation: meta.generation,
                creation_timestamp: meta.creation_timestamp,
                deletion_timestamp: meta.deletion_timestamp,
                owner_references: meta.owner_references,
                ..ObjectMeta::default()
            },
            labels: Pairs::kept(meta.labels.unwrap_or_default(), |_| true),
            annotations: Pairs::kept(meta.annotations.unwrap_or_default(), ratchets),
            applied_at,
            detail: D::read(spec, status),
            kind: PhantomData,
        })
    }
}

/// What a pass reads of a Job: the Job controller's verdict, and when it
/// gave up on a failed one.
#[derive(Clone, Debug, PartialEq)]
pub struct JobDetail {
    pub outcome: JobOutcome,
    /// When the failure condition turned true (a failed Job only).
    pub failed_at: Option<Time>,
}

/// The Job controller's verdicts: SuccessCriteriaMet and FailureTarget come
/// first, Complete and Failed once the last pod is gone; reacting to the first
/// saves a round of status updates.
impl Detail for JobDetail {
    type Spec = IgnoredAny;
    type Status = JobStatus;

    fn read(_: Option<IgnoredAny>, status: Option<JobStatus>) -> JobDetail {
        let conditions = status.map(|s| s.conditions).unwrap_or_default();
        let verdict = |kind: &str| {
            conditions
                .iter()
                .find(|c| c.type_ == kind && c.status == "True")
        };
        if verdict("Complete")
            .or_else(|| verdict("SuccessCriteriaMet"))
            .is_some()
        {
            JobDetail {
                outcome: JobOutcome::Succeeded,
                failed_at: None,
            }
        } else if let Some(failed) = verdict("Failed").or_else(|| verdict("FailureTarget")) {
            JobDetail {
                outcome: JobOutcome::Failed {
                    message: [failed.reason.as_deref(), failed.message.as_deref()]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join(": "),
                },
                failed_at: failed.last_transition_time.clone(),
            }
        } else {
            JobDetail {
                outcome: JobOutcome::Running,
                failed_at: None,
            }
        }
    }
}

#[derive(Deserialize)]
pub struct JobStatus {
    #[serde(default)]
    conditions: Vec<Condition>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
struct Condition {
    #[serde(rename = "type")]
    type_: String,
    status: String,
    reason: Option<String>,
    message: Option<String>,
    #[serde(rename = "lastTransitionTime")]
    last_transition_time: Option<Time>,
}

/// What a pass reads of a Deployment, StatefulSet or DaemonSet.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkloadDetail {
    pub replicas: Option<i32>,
    /// The selector's labels (which find a StatefulSet's pods).
    pub selector: Pairs,
    /// Ratchet's annotations on the pod template.
    pub template_annotations: Pairs,
    /// The first container's image.
    pub image: Option<String>,
    pub status: Option<WorkloadStatus>,
    /// A Deployment's Progressing=False with ProgressDeadlineExceeded.
    pub progress_deadline_exceeded: bool,
    /// A StatefulSet's rolling-update partition (0 when it has none).
    pub partition: i32,
}

/// The rollout counters of every kind (a Deployment has no revisions; a
/// DaemonSet counts nodes, not replicas).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadStatus {
    pub observed_generation: Option<i64>,
    pub replicas: Option<i32>,
    pub updated_replicas: Option<i32>,
    pub ready_replicas: Option<i32>,
    pub available_replicas: Option<i32>,
    pub current_revision: Option<String>,
    pub update_revision: Option<String>,
    /// A DaemonSet's nodes that should run its pod, …
    pub desired_number_scheduled: Option<i32>,
    /// … that run one, …
    pub current_number_scheduled: Option<i32>,
    /// … whose pod is of the current template, …
    pub updated_number_scheduled: Option<i32>,
    /// … and whose pod is ready, and available.
    pub number_ready: Option<i32>,
    pub number_available: Option<i32>,
    #[serde(default)]
    conditions: Vec<Condition>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    replicas: Option<i32>,
    #[serde(default)]
    selector: Selector,
    #[serde(default)]
    template: Template,
    #[serde(default)]
    update_strategy: UpdateStrategy,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateStrategy {
    #[serde(default)]
    rolling_update: RollingUpdate,
}

#[derive(Default, Deserialize)]
struct RollingUpdate {
    /// A StatefulSet's (a Deployment's rollingUpdate has none).
    partition: Option<i32>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Selector {
    match_labels: Option<BTreeMap<String, String>>,
}

#[derive(Default, Deserialize)]
struct Template {
    #[serde(default)]
    metadata: TemplateMeta,
    #[serde(default)]
    spec: PodSpec,
}

#[derive(Default, Deserialize)]
struct TemplateMeta {
    annotations: Option<BTreeMap<String, String>>,
}

#[derive(Default, Deserialize)]
struct PodSpec {
    #[serde(default)]
    containers: Vec<Container>,
}

#[derive(Deserialize)]
struct Container {
    image: Option<String>,
}

impl Detail for WorkloadDetail {
    type Spec = WorkloadSpec;
    type Status = WorkloadStatus;

    fn read(spec: Option<WorkloadSpec>, status: Option<WorkloadStatus>) -> WorkloadDetail {
        let (replicas, selector, template, partition) = match spec {
            Some(s) => (
                s.replicas,
                s.selector,
                s.template,
                s.update_strategy.rolling_update.partition,
            ),
            None => (None, Selector::default(), Template::default(), None),
        };
        let status = status.map(|mut s| {
            // Only the deadline verdict is read; the list itself is not kept.
            s.conditions.retain(|c| {
                c.type_ == "Progressing"
                    && c.status == "False"
                    && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
            });
            s
        });
        let progress_deadline_exceeded = status.as_ref().is_some_and(|s| !s.conditions.is_empty());
        WorkloadDetail {
            replicas,
            selector: Pairs::kept(selector.match_labels.unwrap_or_default(), |_| true),
            template_annotations: Pairs::kept(
                template.metadata.annotations.unwrap_or_default(),
                ratchets,
            ),
            image: template
                .spec
                .containers
                .into_iter()
                .next()
                .and_then(|c| c.image),
            status: status.map(|s| WorkloadStatus {
                conditions: Vec::new(),
                ..s
            }),
            progress_deadline_exceeded,
            partition: partition.unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload_json(kind: &str) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "apps/v1", "kind": kind,
            "metadata": {
                "name": "cinder", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                "generation": 3,
                "labels": { "app.kubernetes.io/name": "cinder", "app.kubernetes.io/instance": "c" },
                "annotations": {
                    "ratchet.c5c3.io/template-hash": "h1",
                    "deployment.kubernetes.io/revision": "4",
                },
                "ownerReferences": [{ "apiVersion": "cinder.openstack.c5c3.io/v1beta1",
                    "kind": "Cinder", "name": "c", "uid": "o1", "controller": true }],
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
                        "annotations": {
                            "cinder.c5c3.io/installed-release": "2026.1",
                            "kubectl.kubernetes.io/restartedAt": "now",
                        },
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
                "observedGeneration": 3,
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
    fn a_cached_workload_keeps_what_a_pass_reads_and_skips_the_rest() {
        let set: CachedStatefulSet =
            serde_json::from_value(workload_json("StatefulSet")).expect("a StatefulSet");
        let meta = &set.metadata;
        assert_eq!(
            (meta.name.as_deref(), meta.namespace.as_deref()),
            (Some("cinder"), Some("ns"))
        );
        assert_eq!(
            (meta.uid.as_deref(), meta.resource_version.as_deref()),
            (Some("u1"), Some("7"))
        );
        assert_eq!(meta.generation, Some(3));
        assert!(meta.labels.is_none() && meta.annotations.is_none());
        assert!(meta.managed_fields.is_none());
        assert_eq!(meta.owner_references.as_ref().map(Vec::len), Some(1));
        assert_eq!(set.label("app.kubernetes.io/instance"), Some("c"));
        assert_eq!(set.annotation("ratchet.c5c3.io/template-hash"), Some("h1"));
        assert_eq!(set.annotation("deployment.kubernetes.io/revision"), None);
        assert_eq!(
            set.applied_at.as_ref().map(|t| t.0.to_string()).as_deref(),
            Some("2026-12-03T10:00:00Z")
        );
        let detail = &set.detail;
        assert_eq!(detail.replicas, Some(2));
        assert_eq!(detail.selector.get("app"), Some("cinder"));
        assert_eq!(detail.image.as_deref(), Some("repo/cinder:2026.1"));
        assert_eq!(
            detail.template_annotations,
            Pairs(Box::new([(
                "cinder.c5c3.io/installed-release".into(),
                "2026.1".into()
            )]))
        );
        let status = detail.status.as_ref().expect("status");
        assert_eq!(status.ready_replicas, Some(2));
        assert_eq!(status.update_revision.as_deref(), Some("r2"));
        assert!(status.conditions.is_empty());
        assert!(detail.progress_deadline_exceeded);
    }

    #[test]
    fn a_deployment_short_of_its_deadline_is_not_marked_exceeded() {
        let mut json = workload_json("Deployment");
        json["status"]["conditions"][1]["reason"] = "NewReplicaSetAvailable".into();
        let deployment: CachedDeployment = serde_json::from_value(json).expect("a Deployment");
        assert!(!deployment.detail.progress_deadline_exceeded);
    }

    fn job(conditions: serde_json::Value) -> CachedJob {
        serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "c-db-sync",
                "labels": { "app.kubernetes.io/component": "db-sync" },
                "annotations": { "ratchet.c5c3.io/pod-spec-hash": "p" },
            },
            "spec": { "backoffLimit": 4, "template": { "spec": {
                "containers": [{ "name": "db-sync", "image": "i" }], "restartPolicy": "Never" } } },
            "status": { "conditions": conditions },
        }))
        .expect("a Job")
    }

    #[test]
    fn a_cached_job_keeps_its_hash_and_the_controllers_first_verdict() {
        let running = job(serde_json::json!([{ "type": "Suspended", "status": "False" }]));
        assert_eq!(running.detail.outcome, JobOutcome::Running);
        assert_eq!(
            running.annotation("ratchet.c5c3.io/pod-spec-hash"),
            Some("p")
        );
        assert_eq!(
            running.label("app.kubernetes.io/component"),
            Some("db-sync")
        );
        let met = job(serde_json::json!([{ "type": "SuccessCriteriaMet", "status": "True" }]));
        assert_eq!(met.detail.outcome, JobOutcome::Succeeded);
        let failing = job(serde_json::json!([
            { "type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded",
              "message": "Job has reached the specified backoff limit",
              "lastTransitionTime": "2026-12-05T09:41:40Z" },
        ]));
        assert_eq!(
            failing.detail.outcome,
            JobOutcome::Failed {
                message: "BackoffLimitExceeded: Job has reached the specified backoff limit".into()
            }
        );
        assert_eq!(
            failing.detail.failed_at.map(|t| t.0.to_string()),
            Some("2026-12-05T09:41:40Z".to_string())
        );
    }

    #[test]
    fn pairs_compare_with_the_map_they_came_from() {
        let map = BTreeMap::from([("a".to_string(), "1".to_string()), ("b".into(), "2".into())]);
        let pairs = Pairs::kept(map.clone(), |_| true);
        assert!(pairs.equals(Some(&map)));
        let mut other = map.clone();
        other.insert("c".into(), "3".into());
        assert!(!pairs.equals(Some(&other)));
        assert!(!pairs.equals(None));
        assert!(Pairs::default().equals(None));
        assert_eq!(pairs.get("b"), Some("2"));
        assert_eq!(pairs.get("z"), None);
    }

    #[test]
    fn only_ratchets_domains_count_as_its_annotations() {
        assert!(ratchets("ratchet.c5c3.io/pin-release"));
        assert!(ratchets("cinder.c5c3.io/installed-release"));
        assert!(!ratchets("notc5c3.io/x"));
        assert!(!ratchets("deployment.kubernetes.io/revision"));
        assert!(!ratchets("c5c3.io"));
    }
}
