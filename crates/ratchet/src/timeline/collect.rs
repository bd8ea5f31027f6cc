//! Reading one resource's last upgrade from the cluster: the resource, its
//! events, the Jobs and workloads it owns, each workload's revisions
//! (ReplicaSets, ControllerRevisions) and their pods, into a [`Record`].

use anyhow::Context;
use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet,
};
use k8s_openapi::api::batch::v1::{Job, JobCondition};
use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DynamicObject, ListParams};
use kube::{Api, Client, Resource};
use ratchet_operator::labels::instance_selector;
use ratchet_operator::registry::Registered;

use super::record::{
    AttemptRecord, EventRecord, JobRecord, JobVerdict, PodRecord, Record, RevisionRecord,
    WorkloadRecord,
};
use crate::resource_status::status_text;

/// The Deployment controller's revision of a ReplicaSet.
const REVISION: &str = "deployment.kubernetes.io/revision";
/// The revision of a StatefulSet's or DaemonSet's pod: its ControllerRevision's
/// name (StatefulSet) or the hash that revision carries under the same label
/// (DaemonSet).
const POD_REVISION: &str = "controller-revision-hash";

pub async fn collect(
    client: &Client,
    service: &Registered,
    namespace: &str,
    name: &str,
) -> anyhow::Result<Record> {
    let resource: DynamicObject =
        Api::namespaced_with(client.clone(), namespace, &service.api_resource())
            .get(name)
            .await
            .with_context(|| format!("reading {} {namespace}/{name}", service.kind))?;
    let uid = resource.metadata.uid.clone().unwrap_or_default();
    let owned = ListParams::default().labels(&instance_selector(service.service, name));
    let pods: Vec<Pod> = Api::namespaced(client.clone(), namespace)
        .list(&owned)
        .await
        .context("listing pods")?
        .items;
    let jobs: Vec<Job> = list_owned(client, namespace, &owned, &uid).await?;
    let deployments: Vec<Deployment> = list_owned(client, namespace, &owned, &uid).await?;
    let stateful_sets: Vec<StatefulSet> = list_owned(client, namespace, &owned, &uid).await?;
    let daemon_sets: Vec<DaemonSet> = list_owned(client, namespace, &owned, &uid).await?;
    // Revisions carry their workload's pod labels, so the same selector finds them.
    let replica_sets: Vec<ReplicaSet> = Api::namespaced(client.clone(), namespace)
        .list(&owned)
        .await
        .context("listing replica sets")?
        .items;
    let controller_revisions: Vec<ControllerRevision> = Api::namespaced(client.clone(), namespace)
        .list(&owned)
        .await
        .context("listing controller revisions")?
        .items;
    let mut workloads: Vec<WorkloadRecord> = deployments
        .iter()
        .map(|d| deployment_record(d, &replica_sets, &pods))
        .collect();
    workloads.extend(stateful_sets.iter().map(|s| {
        let replicas = s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        revisions_record(
            "StatefulSet",
            &s.metadata,
            replicas,
            &controller_revisions,
            &pods,
        )
    }));
    workloads.extend(daemon_sets.iter().map(|d| {
        let nodes = d.status.as_ref().map_or(0, |s| s.desired_number_scheduled);
        revisions_record(
            "DaemonSet",
            &d.metadata,
            nodes,
            &controller_revisions,
            &pods,
        )
    }));
    Ok(Record {
        subject: format!("{} {namespace}/{name}", service.kind),
        installed_release: status_text(&resource.data, "installedRelease"),
        target_release: status_text(&resource.data, "targetRelease"),
        upgrade_phase: status_text(&resource.data, "upgradePhase"),
        read_at: Timestamp::now(),
        events: events(client, namespace, &uid).await?,
        jobs: jobs.iter().map(|j| job_record(j, &pods)).collect(),
        workloads,
    })
}

/// Objects of kind `K` carrying the resource's labels and owned by it (a
/// resource deleted and made again under the same name owns nothing old).
async fn list_owned<K>(
    client: &Client,
    namespace: &str,
    params: &ListParams,
    owner: &str,
) -> anyhow::Result<Vec<K>>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let list = Api::<K>::namespaced(client.clone(), namespace)
        .list(params)
        .await
        .with_context(|| format!("listing {}", K::plural(&())))?;
    Ok(list
        .items
        .into_iter()
        .filter(|o| owned_by(o.meta(), owner))
        .collect())
}

fn owned_by(meta: &ObjectMeta, owner: &str) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|r| r.uid == owner)
}

/// The resource's events, oldest first, each at the time it first happened.
async fn events(client: &Client, namespace: &str, uid: &str) -> anyhow::Result<Vec<EventRecord>> {
    let params = ListParams::default().fields(&format!("involvedObject.uid={uid}"));
    let list = Api::<Event>::namespaced(client.clone(), namespace)
        .list(&params)
        .await
        .context("listing events")?;
    let mut events: Vec<EventRecord> = list
        .items
        .iter()
        .filter_map(|e| {
            // events.k8s.io events have eventTime; core ones the timestamps.
            let at = e
                .event_time
                .as_ref()
                .map(|t| t.0)
                .or_else(|| e.first_timestamp.as_ref().map(|t| t.0))
                .or_else(|| e.last_timestamp.as_ref().map(|t| t.0))
                .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0))?;
            Some(EventRecord {
                at,
                warning: e.type_.as_deref() == Some("Warning"),
                reason: e.reason.clone().unwrap_or_default(),
                message: e.message.clone().unwrap_or_default(),
            })
        })
        .collect();
    events.sort_by_key(|e| e.at);
    Ok(events)
}

/// The first condition of `job` among `kinds` that is true.
fn true_condition(job: &Job, kinds: &[&str]) -> Option<JobCondition> {
    job.status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| kinds.contains(&c.type_.as_str()) && c.status == "True")
        .cloned()
}

/// The Job controller's verdict on `job`; its early verdicts
/// (`SuccessCriteriaMet`, `FailureTarget`) count.
pub fn job_verdict(job: &Job) -> JobVerdict {
    if true_condition(job, &["Complete", "SuccessCriteriaMet"]).is_some() {
        JobVerdict::Succeeded
    } else if let Some(c) = true_condition(job, &["Failed", "FailureTarget"]) {
        JobVerdict::Failed(c.reason.unwrap_or_default())
    } else {
        JobVerdict::Running
    }
}

fn job_record(job: &Job, pods: &[Pod]) -> JobRecord {
    let status = job.status.clone().unwrap_or_default();
    let failed = true_condition(job, &["Failed", "FailureTarget"]);
    let verdict = job_verdict(job);
    let uid = job.metadata.uid.as_deref().unwrap_or_default();
    let mut attempts: Vec<&Pod> = pods.iter().filter(|p| owned_by(&p.metadata, uid)).collect();
    attempts.sort_by_key(|p| p.metadata.creation_timestamp.as_ref().map(|t| t.0));
    JobRecord {
        name: job.metadata.name.clone().unwrap_or_default(),
        created: created(&job.metadata),
        started: status.start_time.as_ref().map(|t| t.0),
        finished: status
            .completion_time
            .as_ref()
            .map(|t| t.0)
            .or_else(|| failed.and_then(|c| c.last_transition_time).map(|t| t.0)),
        verdict,
        counted_attempts: status.succeeded.unwrap_or(0)
            + status.failed.unwrap_or(0)
            + status.active.unwrap_or(0),
        attempts: attempts.into_iter().map(attempt).collect(),
    }
}

fn attempt(pod: &Pod) -> AttemptRecord {
    let terminated = ratchet_operator::pods::terminated(pod);
    AttemptRecord {
        exit_code: terminated.map(|t| t.exit_code),
        message: terminated.and_then(|t| t.message.clone()),
    }
}

/// A Deployment's revisions: its ReplicaSets, each with its own pods.
fn deployment_record(
    deployment: &Deployment,
    replica_sets: &[ReplicaSet],
    pods: &[Pod],
) -> WorkloadRecord {
    let uid = deployment.metadata.uid.as_deref().unwrap_or_default();
    let revisions = replica_sets
        .iter()
        .filter(|rs| owned_by(&rs.metadata, uid))
        .map(|rs| {
            let rs_uid = rs.metadata.uid.as_deref().unwrap_or_default();
            RevisionRecord {
                number: rs
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(REVISION))
                    .and_then(|r| r.parse().ok())
                    .unwrap_or(0),
                created: created(&rs.metadata),
                sequence: None,
                pods: pod_records(pods.iter().filter(|p| owned_by(&p.metadata, rs_uid))),
            }
        })
        .collect();
    WorkloadRecord {
        kind: "Deployment".into(),
        name: deployment.metadata.name.clone().unwrap_or_default(),
        replicas: deployment
            .spec
            .as_ref()
            .and_then(|s| s.replicas)
            .unwrap_or(1),
        revisions,
    }
}

/// A StatefulSet's or DaemonSet's revisions (`kind`, its `metadata` and
/// `replicas`): its ControllerRevisions, each with the pods of that revision.
fn revisions_record(
    kind: &str,
    metadata: &ObjectMeta,
    replicas: i32,
    controller_revisions: &[ControllerRevision],
    pods: &[Pod],
) -> WorkloadRecord {
    let uid = metadata.uid.as_deref().unwrap_or_default();
    let revisions = controller_revisions
        .iter()
        .filter(|r| owned_by(&r.metadata, uid))
        .map(|r| {
            let name = r.metadata.name.as_deref();
            let hash = r
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(POD_REVISION))
                .map(String::as_str);
            let current = pods.iter().filter(|p| {
                let revision = p
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(POD_REVISION))
                    .map(String::as_str);
                owned_by(&p.metadata, uid)
                    && revision.is_some()
                    && (revision == name || revision == hash)
            });
            RevisionRecord {
                number: r.revision,
                created: created(&r.metadata),
                sequence: r
                    .metadata
                    .resource_version
                    .as_deref()
                    .and_then(|v| v.parse().ok()),
                pods: pod_records(current),
            }
        })
        .collect();
    WorkloadRecord {
        kind: kind.into(),
        name: metadata.name.clone().unwrap_or_default(),
        replicas,
        revisions,
    }
}

fn pod_records<'a>(pods: impl Iterator<Item = &'a Pod>) -> Vec<PodRecord> {
    pods.map(|p| PodRecord {
        created: created(&p.metadata),
        ready_at: ready_since(p),
    })
    .collect()
}

/// When the pod's Ready condition turned True, if it is True.
fn ready_since(pod: &Pod) -> Option<Timestamp> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready" && c.status == "True")?
        .last_transition_time
        .as_ref()
        .map(|t| t.0)
}

fn created(meta: &ObjectMeta) -> Timestamp {
    meta.creation_timestamp
        .as_ref()
        .map_or(Timestamp::UNIX_EPOCH, |t| t.0)
}
