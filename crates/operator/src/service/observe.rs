//! Reads what a resource owns and turns it into the machine's [`Observed`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;
use ratchet_api::common::SecretKeyRef;
use ratchet_phase_machine::{
    JobOutcome, Observed, ObservedJob, ObservedWorkload, Profile, Rollout, drain,
};

use super::cached::{
    CachedDaemonSet, CachedDeployment, CachedJob, CachedStatefulSet, WorkloadDetail,
};
use super::caches::Caches;
use super::contract::OpenStackService;
use super::model::{ServiceModel, WorkloadKind};
use super::own_writes::ChildWrites;
use super::ownership::Claims;
use super::render::{Owner, PIN_ANNOTATION};
use super::stall::{self, Stall};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::labels::{self, COMPONENT, CONFIG_HASH, POD_SPEC_HASH};

/// A workload as read, of any kind.
pub enum LiveWorkload {
    Deployment(Arc<CachedDeployment>),
    StatefulSet(Arc<CachedStatefulSet>),
    DaemonSet(Arc<CachedDaemonSet>),
}

impl LiveWorkload {
    pub fn kind(&self) -> WorkloadKind {
        match self {
            LiveWorkload::Deployment(_) => WorkloadKind::Deployment,
            LiveWorkload::StatefulSet(_) => WorkloadKind::StatefulSet,
            LiveWorkload::DaemonSet(_) => WorkloadKind::DaemonSet,
        }
    }

    pub fn metadata(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        match self {
            LiveWorkload::Deployment(d) => &d.metadata,
            LiveWorkload::StatefulSet(s) => &s.metadata,
            LiveWorkload::DaemonSet(d) => &d.metadata,
        }
    }

    pub fn annotation(&self, key: &str) -> Option<&str> {
        match self {
            LiveWorkload::Deployment(d) => d.annotation(key),
            LiveWorkload::StatefulSet(s) => s.annotation(key),
            LiveWorkload::DaemonSet(d) => d.annotation(key),
        }
    }

    fn detail(&self) -> &WorkloadDetail {
        match self {
            LiveWorkload::Deployment(d) => &d.detail,
            LiveWorkload::StatefulSet(s) => &s.detail,
            LiveWorkload::DaemonSet(d) => &d.detail,
        }
    }
}

/// The children as read, kept for the apply step (to skip unchanged objects).
pub struct Children {
    pub jobs: BTreeMap<String, Arc<CachedJob>>,
    pub workloads: BTreeMap<String, LiveWorkload>,
    /// When an unfinished StatefulSet or DaemonSet roll would pass its
    /// deadline: nothing else wakes the controller if it never moves.
    pub recheck_after: Option<Duration>,
    /// StatefulSet pods that never got ready and are not of the revision their
    /// set rolls to: the set will not replace them by itself.
    pub stuck_pods: Vec<String>,
    /// Workloads of the wrong kind, by name: deleted (with their pods) before
    /// the model's kind is created, so two processes never share a service host.
    pub replaced: BTreeMap<String, LiveWorkload>,
}

#[allow(clippy::too_many_arguments)]
pub async fn observe<S: OpenStackService>(
    ctx: &Context,
    caches: &Caches,
    claims: Claims,
    written: &ChildWrites,
    profile: &Profile,
    object: &S,
    owner: &Owner,
    model: &ServiceModel,
    config_hash: String,
) -> Result<(Observed, Children)> {
    let mut secret_refs: Vec<&SecretKeyRef> = model.all_secrets().map(|s| &s.source).collect();
    secret_refs.sort_by(|a, b| (&a.secret_name, &a.key).cmp(&(&b.secret_name, &b.key)));
    secret_refs.dedup();
    let missing_secrets = missing_secrets(caches, &owner.namespace, secret_refs);
    let namespace = owner.namespace.as_str();
    let jobs: BTreeMap<String, Arc<CachedJob>> = claims
        .jobs
        .into_iter()
        .map(|j| written.jobs.freshest(j))
        .filter(|j| j.metadata.deletion_timestamp.is_none())
        .filter_map(|j| Some((j.label(COMPONENT)?.to_string(), j)))
        .collect();
    // A workload of another kind than the model's (rendered by an older
    // Ratchet) is replaced: deleted first, its successor made once it is gone.
    let (workloads, replaced): (
        BTreeMap<String, LiveWorkload>,
        BTreeMap<String, LiveWorkload>,
    ) = claims
        .deployments
        .into_iter()
        .map(|d| LiveWorkload::Deployment(written.deployments.freshest(d)))
        .chain(
            claims
                .stateful_sets
                .into_iter()
                .map(|s| LiveWorkload::StatefulSet(written.stateful_sets.freshest(s))),
        )
        .chain(
            claims
                .daemon_sets
                .into_iter()
                .map(|d| LiveWorkload::DaemonSet(written.daemon_sets.freshest(d))),
        )
        .filter_map(|live| Some((live.metadata().name.clone()?, live)))
        .partition(|(name, live)| model.workload(name).is_none_or(|w| w.kind == live.kind()));

    let reported_check_job = object
        .meta()
        .annotations
        .as_ref()
        .and_then(|a| a.get(S::CHECK_REPORTED_ANNOTATION).cloned());
    let deadline =
        Duration::from_secs(u64::try_from(model.rollout_deadline_seconds).unwrap_or(600));
    let mut observed_workloads: BTreeMap<String, ObservedWorkload> = workloads
        .iter()
        .map(|(name, w)| (name.clone(), observed_workload::<S>(name, w)))
        .collect();
    // Neither kind reports a stalled roll itself (see `stall`). The pods of
    // every rolling set are read in one request, however many roll at once.
    let rolling_sets: Vec<(&String, &LiveWorkload)> = workloads
        .iter()
        .filter(|(name, live)| {
            matches!(
                live,
                LiveWorkload::StatefulSet(_) | LiveWorkload::DaemonSet(_)
            ) && observed_workloads
                .get(*name)
                .is_some_and(|o| !o.rollout.complete())
        })
        .collect();
    let pods_selector = labels::instance_selector(S::SERVICE, &owner.name);
    let rolling_pods = async {
        if rolling_sets.is_empty() {
            return Ok(Vec::new());
        }
        stall::resource_pods(ctx, namespace, &pods_selector).await
    };
    let groups = model.job_group_names();
    let current_phase = object.status_view().phase;
    let drains_to_report = drains_to_report(model, &jobs);
    let job_reads = jobs.iter().map(|(suffix, job)| {
        let mut observed = observed_job(job);
        let details = drains_to_report.contains(suffix)
            || needs_pod_details(
                profile,
                &groups,
                suffix,
                &observed,
                reported_check_job.as_deref(),
                &current_phase,
            );
        async move {
            if details {
                let (exit_code, message) =
                    last_pod_termination(ctx, &owner.namespace, &observed.name).await?;
                observed.exit_code = exit_code;
                observed.termination_message = message;
            }
            Ok::<_, Error>((suffix.clone(), observed))
        }
    });
    let (pods, observed_jobs) =
        futures::try_join!(rolling_pods, futures::future::try_join_all(job_reads))?;
    let stalls = rolling_sets.iter().filter_map(|(name, live)| {
        let judged = match live {
            LiveWorkload::StatefulSet(set) => stall::judge_set(set.as_ref(), &pods, deadline),
            LiveWorkload::DaemonSet(set) => stall::judge_set(set.as_ref(), &pods, deadline),
            LiveWorkload::Deployment(_) => return None,
        };
        Some((*name, judged))
    });
    let mut recheck_after: Option<Duration> = None;
    let mut stuck_pods = Vec::new();
    for (name, (stall, stuck)) in stalls {
        match stall {
            Stall::Stalled => {
                if let Some(observed) = observed_workloads.get_mut(name) {
                    observed.stalled = true;
                }
            }
            Stall::CheckIn(left) => {
                let at = left + Duration::from_secs(1);
                recheck_after = Some(recheck_after.map_or(at, |r| r.min(at)));
            }
        }
        stuck_pods.extend(stuck);
    }
    let observed_jobs: BTreeMap<String, ObservedJob> = observed_jobs.into_iter().collect();
    let observed = Observed {
        spec: super::status::observed_spec(object, model),
        status: object.status_view(),
        config_hash,
        missing_secrets,
        children_in_the_way: claims.waiting_for,
        jobs: observed_jobs,
        job_groups: groups,
        workloads: observed_workloads,
        desired_workloads: model.workload_ids(),
        reported_check_job,
        registration: None,
        now: k8s_openapi::jiff::Timestamp::now().to_string(),
    };
    Ok((
        observed,
        Children {
            jobs,
            workloads,
            recheck_after,
            stuck_pods,
            replaced,
        },
    ))
}

fn observed_job(job: &CachedJob) -> ObservedJob {
    ObservedJob {
        name: job.metadata.name.clone().unwrap_or_default(),
        uid: job.metadata.uid.clone().unwrap_or_default(),
        spec_hash: job
            .annotation(POD_SPEC_HASH)
            .unwrap_or_default()
            .to_string(),
        outcome: job.detail.outcome.clone(),
        exit_code: None,
        termination_message: None,
        failed_seconds_ago: job.detail.failed_at.as_ref().map(|at| {
            let since = k8s_openapi::jiff::Timestamp::now().duration_since(at.0);
            u64::try_from(since.as_secs()).unwrap_or(0)
        }),
    }
}

/// The drain Jobs whose pods' messages are still to be reported
/// (`drain::report_due`).
fn drains_to_report(
    model: &ServiceModel,
    jobs: &BTreeMap<String, Arc<CachedJob>>,
) -> BTreeSet<String> {
    model
        .workloads
        .iter()
        .filter_map(|w| Some((w, w.drain.as_ref()?)))
        .flat_map(|(w, drain)| {
            drain::hosts(&w.name, drain, w.replicas)
                .into_iter()
                .filter_map(|host| {
                    let key = host.drain_key();
                    let drained = observed_job(jobs.get(&key)?);
                    let returned = jobs.get(&host.undrain_key()).map(|j| observed_job(j));
                    drain::report_due(host, drain, &drained, returned.as_ref()).then_some(key)
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Pods are read only when the machine needs what they say: the upgrade-check
/// exit code of a finished, unreported reporting Job, the exit code of a
/// failed Job whose phase maps exit codes to reasons or may ask for its
/// offline step, or the report of a succeeded Job that reports its work
/// while its phase (`current_phase`) is the upgrade's.
fn needs_pod_details(
    profile: &Profile,
    groups: &[String],
    suffix: &str,
    job: &ObservedJob,
    reported: Option<&str>,
    current_phase: &str,
) -> bool {
    let template = profile.template_of(suffix, groups);
    // The registration's messages say why it fails (Keystone unreachable, a
    // password refused) while the Job still retries.
    if suffix == ratchet_phase_machine::registration::SUFFIX {
        return job.outcome != JobOutcome::Succeeded;
    }
    template.is_some_and(|t| {
        let unreported_check = t.reports_check()
            && job.outcome == JobOutcome::Succeeded
            && reported != Some(job.uid.as_str());
        let asks_offline = profile
            .phases
            .iter()
            .any(|p| p.may_ask_offline(suffix, groups));
        let failed_with_reasons = (!t.exit_reasons.is_empty() || asks_offline)
            && matches!(job.outcome, JobOutcome::Failed { .. });
        let report_due = t.reports
            && job.outcome == JobOutcome::Succeeded
            && profile.phase(current_phase).is_some_and(|(_, phase)| {
                ratchet_phase_machine::job_runs(phase.templates(), groups)
                    .iter()
                    .any(|run| run.key() == suffix)
            });
        unreported_check || failed_with_reasons || report_due
    })
}

/// Exit code and termination message of the Job's most recently finished pod.
async fn last_pod_termination(
    ctx: &Context,
    namespace: &str,
    job: &str,
) -> Result<(Option<i32>, Option<String>)> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let list = pods
        .list(&ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}")))
        .await?;
    let latest = list
        .items
        .iter()
        .filter_map(|p| {
            let terminated = crate::pods::terminated(p)?;
            Some((terminated.finished_at.as_ref().map(|t| t.0), terminated))
        })
        .max_by_key(|(finished, _)| *finished);
    Ok(match latest {
        Some((_, t)) => (Some(t.exit_code), t.message.clone()),
        None => (None, None),
    })
}

/// A StatefulSet or DaemonSet does not report stalls itself: [`stall::judge_set`]
/// decides that for it afterwards.
fn observed_workload<S: OpenStackService>(name: &str, live: &LiveWorkload) -> ObservedWorkload {
    let (rollout, stalled) = match live {
        LiveWorkload::Deployment(d) => (deployment_rollout(d), d.detail.progress_deadline_exceeded),
        LiveWorkload::StatefulSet(s) => (stateful_set_rollout(s), false),
        LiveWorkload::DaemonSet(d) => (daemon_set_rollout(d), false),
    };
    let detail = live.detail();
    let annotation = |key: &str| detail.template_annotations.get(key).map(str::to_string);
    ObservedWorkload {
        name: name.to_string(),
        image: detail.image.clone().unwrap_or_default(),
        installed_release: annotation(S::INSTALLED_RELEASE_ANNOTATION),
        pin: annotation(PIN_ANNOTATION),
        config_hash: annotation(CONFIG_HASH),
        stalled,
        rollout,
        partition: detail.partition,
    }
}

fn deployment_rollout(d: &CachedDeployment) -> Rollout {
    let status = d.detail.status.as_ref();
    Rollout {
        generation: d.metadata.generation.unwrap_or_default(),
        observed_generation: status
            .and_then(|s| s.observed_generation)
            .unwrap_or_default(),
        desired: d.detail.replicas.unwrap_or(1),
        total: status.and_then(|s| s.replicas).unwrap_or_default(),
        updated: status.and_then(|s| s.updated_replicas).unwrap_or_default(),
        ready: status.and_then(|s| s.ready_replicas).unwrap_or_default(),
        available: status
            .and_then(|s| s.available_replicas)
            .unwrap_or_default(),
    }
}

/// A StatefulSet has no progress deadline (see [`stall`]); its rollout is
/// complete when every pod runs the update revision and is ready and available.
fn stateful_set_rollout(s: &CachedStatefulSet) -> Rollout {
    let status = s.detail.status.as_ref();
    let desired = s.detail.replicas.unwrap_or(1);
    let revision_current = status.is_some_and(|st| {
        st.update_revision.is_none() || st.current_revision == st.update_revision
    });
    let updated = status.and_then(|s| s.updated_replicas).unwrap_or_default();
    Rollout {
        generation: s.metadata.generation.unwrap_or_default(),
        observed_generation: status
            .and_then(|s| s.observed_generation)
            .unwrap_or_default(),
        desired,
        total: status.and_then(|s| s.replicas).unwrap_or_default(),
        // Until the controller marks the update revision current, the last pod
        // is still being replaced.
        updated: if revision_current {
            updated
        } else {
            updated.min(desired - 1)
        },
        ready: status.and_then(|s| s.ready_replicas).unwrap_or_default(),
        available: status
            .and_then(|s| s.available_replicas)
            .unwrap_or_default(),
    }
}

/// A DaemonSet counts nodes: its rollout is complete when every node it
/// places a pod on runs one of the current template, ready and available.
fn daemon_set_rollout(d: &CachedDaemonSet) -> Rollout {
    let status = d.detail.status.as_ref();
    let count = |field: fn(&super::cached::WorkloadStatus) -> Option<i32>| {
        status.and_then(field).unwrap_or_default()
    };
    Rollout {
        generation: d.metadata.generation.unwrap_or_default(),
        observed_generation: status
            .and_then(|s| s.observed_generation)
            .unwrap_or_default(),
        desired: count(|s| s.desired_number_scheduled),
        total: count(|s| s.current_number_scheduled),
        updated: count(|s| s.updated_number_scheduled),
        ready: count(|s| s.number_ready),
        available: count(|s| s.number_available),
    }
}

/// References whose Secret or key does not exist. Values are never read into logs.
fn missing_secrets(caches: &Caches, namespace: &str, refs: Vec<&SecretKeyRef>) -> Vec<String> {
    refs.into_iter()
        .filter(|r| caches.secret_version(namespace, r).is_none())
        .map(|r| format!("Secret {} key {}", r.secret_name, r.key))
        .collect()
}
