//! Reads what a Cinder owns and turns it into the machine's [`Observed`].

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::Api;
use kube::api::ListParams;
use ratchet_api::cinder::v1alpha1::Cinder;
use ratchet_api::common::SecretKeyRef;
use ratchet_phase_machine::{
    ConditionState, JobOutcome, Observed, ObservedJob, ObservedWorkload, Profile, Rollout,
    SpecView, StatusView, Step,
};

use super::profile::{SERVICE, desired_workloads};
use super::render::{
    CHECK_REPORTED_ANNOTATION, INSTALLED_RELEASE_ANNOTATION, Owner, PIN_ANNOTATION,
};
use crate::context::Context;
use crate::error::Result;
use crate::labels::{COMPONENT, POD_SPEC_HASH, instance_selector};

/// The children as read, kept for the apply step (to skip unchanged objects).
pub struct Children {
    pub jobs: BTreeMap<String, Job>,
    pub deployments: BTreeMap<String, Deployment>,
}

pub async fn observe(
    ctx: &Context,
    profile: &Profile,
    cinder: &Cinder,
    owner: &Owner,
    config_hash: String,
) -> Result<(Observed, Children)> {
    let selector = ListParams::default().labels(&instance_selector(SERVICE, &owner.name));
    let jobs_api: Api<Job> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let deployments_api: Api<Deployment> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    // Independent reads, in parallel: a reconcile's latency is its round trips.
    let (jobs, deployments, missing_secrets) = tokio::try_join!(
        async { Ok::<_, crate::error::Error>(jobs_api.list(&selector).await?) },
        async { Ok(deployments_api.list(&selector).await?) },
        missing_secrets(
            ctx,
            &owner.namespace,
            [&cinder.spec.database, &cinder.spec.transport]
        ),
    )?;

    let jobs: BTreeMap<String, Job> = jobs
        .items
        .into_iter()
        .filter(|j| j.metadata.deletion_timestamp.is_none())
        .filter_map(|j| {
            let suffix = j.metadata.labels.as_ref()?.get(COMPONENT)?.clone();
            Some((suffix, j))
        })
        .collect();
    let deployments: BTreeMap<String, Deployment> = deployments
        .items
        .into_iter()
        .filter_map(|d| Some((d.metadata.name.clone()?, d)))
        .collect();

    let reported_check_job = cinder
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CHECK_REPORTED_ANNOTATION).cloned());
    let mut observed_jobs = BTreeMap::new();
    for (suffix, job) in &jobs {
        let mut observed = observed_job(job);
        if needs_pod_details(profile, suffix, &observed, reported_check_job.as_deref()) {
            let (exit_code, message) =
                last_pod_termination(ctx, &owner.namespace, &observed.name).await?;
            observed.exit_code = exit_code;
            observed.termination_message = message;
        }
        observed_jobs.insert(suffix.clone(), observed);
    }
    let observed = Observed {
        spec: SpecView {
            generation: cinder.metadata.generation.unwrap_or_default(),
            release: cinder.spec.open_stack_release.clone(),
            image_repository: cinder.spec.image.repository.clone(),
            image_tag: cinder.spec.image.tag.clone(),
            image_digest: cinder.spec.image.digest.clone(),
        },
        status: status_view(cinder),
        config_hash,
        missing_secrets,
        jobs: observed_jobs,
        workloads: deployments
            .iter()
            .map(|(name, d)| (name.clone(), observed_workload(name, d)))
            .collect(),
        desired_workloads: desired_workloads(cinder, &owner.name),
        reported_check_job,
        now: k8s_openapi::jiff::Timestamp::now().to_string(),
    };
    Ok((observed, Children { jobs, deployments }))
}

fn status_view(cinder: &Cinder) -> StatusView {
    let Some(status) = cinder.status.as_ref() else {
        return StatusView::default();
    };
    StatusView {
        installed_release: status.installed_release.clone(),
        target_release: status.target_release.clone(),
        phase: serde_json::to_value(status.upgrade_phase)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
        phase_started_at: status.upgrade_phase_started_at.clone(),
        conditions: status
            .conditions
            .iter()
            .map(|c| ConditionState {
                kind: c.type_.clone(),
                status: c.status == "True",
                reason: c.reason.clone(),
                message: c.message.clone(),
                last_transition_time: c.last_transition_time.0.to_string(),
                observed_generation: c.observed_generation,
            })
            .collect(),
    }
}

fn observed_job(job: &Job) -> ObservedJob {
    let condition = |kind: &str| {
        job.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == kind && c.status == "True"))
    };
    // SuccessCriteriaMet and FailureTarget are the Job controller's verdicts; it
    // adds Complete or Failed only once the last pod is gone. Reacting to the
    // verdict saves a round of status updates.
    let outcome = if condition("Complete")
        .or_else(|| condition("SuccessCriteriaMet"))
        .is_some()
    {
        JobOutcome::Succeeded
    } else if let Some(failed) = condition("Failed").or_else(|| condition("FailureTarget")) {
        JobOutcome::Failed {
            message: [failed.reason.as_deref(), failed.message.as_deref()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(": "),
        }
    } else {
        JobOutcome::Running
    };
    ObservedJob {
        name: job.metadata.name.clone().unwrap_or_default(),
        uid: job.metadata.uid.clone().unwrap_or_default(),
        spec_hash: job
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(POD_SPEC_HASH).cloned())
            .unwrap_or_default(),
        outcome,
        exit_code: None,
        termination_message: None,
    }
}

/// Pods are read only when the machine needs what they say: the upgrade-check
/// exit code of a finished, unreported reporting Job, or the exit code of a
/// failed Job whose phase maps exit codes to reasons.
fn needs_pod_details(
    profile: &Profile,
    suffix: &str,
    job: &ObservedJob,
    reported: Option<&str>,
) -> bool {
    profile.phases.iter().any(|p| match &p.step {
        Step::Job(t) if t.suffix == suffix => {
            let unreported_check = t.reports_check
                && job.outcome == JobOutcome::Succeeded
                && reported != Some(job.uid.as_str());
            let failed_with_reasons =
                !t.exit_reasons.is_empty() && matches!(job.outcome, JobOutcome::Failed { .. });
            unreported_check || failed_with_reasons
        }
        _ => false,
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
            let terminated = p
                .status
                .as_ref()?
                .container_statuses
                .as_ref()?
                .first()?
                .state
                .as_ref()?
                .terminated
                .clone()?;
            Some((terminated.finished_at.as_ref().map(|t| t.0), terminated))
        })
        .max_by_key(|(finished, _)| *finished);
    Ok(match latest {
        Some((_, t)) => (Some(t.exit_code), t.message),
        None => (None, None),
    })
}

fn observed_workload(name: &str, d: &Deployment) -> ObservedWorkload {
    let spec = d.spec.as_ref();
    let status = d.status.as_ref();
    let image = spec
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    let annotation = |key: &str| {
        spec.and_then(|s| s.template.metadata.as_ref())
            .and_then(|m| m.annotations.as_ref())
            .and_then(|a| a.get(key).cloned())
    };
    let stalled = status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.type_ == "Progressing"
                    && c.status == "False"
                    && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
            })
        });
    ObservedWorkload {
        name: name.to_string(),
        image,
        installed_release: annotation(INSTALLED_RELEASE_ANNOTATION),
        pin: annotation(PIN_ANNOTATION),
        stalled,
        rollout: Rollout {
            generation: d.metadata.generation.unwrap_or_default(),
            observed_generation: status
                .and_then(|s| s.observed_generation)
                .unwrap_or_default(),
            desired: spec.and_then(|s| s.replicas).unwrap_or(1),
            total: status.and_then(|s| s.replicas).unwrap_or_default(),
            updated: status.and_then(|s| s.updated_replicas).unwrap_or_default(),
            ready: status.and_then(|s| s.ready_replicas).unwrap_or_default(),
            available: status
                .and_then(|s| s.available_replicas)
                .unwrap_or_default(),
        },
    }
}

/// References whose Secret or key does not exist. Values are never read into logs.
async fn missing_secrets<'a>(
    ctx: &Context,
    namespace: &str,
    refs: impl IntoIterator<Item = &'a SecretKeyRef>,
) -> Result<Vec<String>> {
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), namespace);
    let checks = refs.into_iter().map(|r| {
        let api = api.clone();
        async move {
            let present = api.get_opt(&r.secret_name).await?.is_some_and(|s| {
                s.data.as_ref().is_some_and(|d| d.contains_key(&r.key))
                    || s.string_data
                        .as_ref()
                        .is_some_and(|d| d.contains_key(&r.key))
            });
            Ok::<_, crate::error::Error>(
                (!present).then(|| format!("Secret {} key {}", r.secret_name, r.key)),
            )
        }
    });
    let results = futures::future::try_join_all(checks).await?;
    Ok(results.into_iter().flatten().collect())
}
