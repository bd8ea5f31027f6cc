//! Reads what a Cinder owns and turns it into the machine's [`Observed`].

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::ListParams;
use ratchet_api::cinder::v1alpha1::Cinder;
use ratchet_api::common::SecretKeyRef;
use ratchet_phase_machine::{
    ConditionState, JobOutcome, Observed, ObservedJob, ObservedWorkload, Rollout, SpecView,
    StatusView,
};

use super::profile::{SERVICE, desired_workloads};
use super::render::Owner;
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
    cinder: &Cinder,
    owner: &Owner,
    config_hash: String,
) -> Result<(Observed, Children)> {
    let selector = ListParams::default().labels(&instance_selector(SERVICE, &owner.name));
    let jobs_api: Api<Job> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let deployments_api: Api<Deployment> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let (jobs, deployments) =
        tokio::try_join!(jobs_api.list(&selector), deployments_api.list(&selector))?;

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
        missing_secrets: missing_secrets(
            ctx,
            &owner.namespace,
            [&cinder.spec.database, &cinder.spec.transport],
        )
        .await?,
        jobs: jobs
            .iter()
            .map(|(suffix, j)| (suffix.clone(), observed_job(j)))
            .collect(),
        workloads: deployments
            .iter()
            .map(|(name, d)| (name.clone(), observed_workload(name, d)))
            .collect(),
        desired_workloads: desired_workloads(cinder, &owner.name),
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
    let outcome = if condition("Complete").is_some() {
        JobOutcome::Succeeded
    } else if let Some(failed) = condition("Failed") {
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
    }
}

fn observed_workload(name: &str, d: &Deployment) -> ObservedWorkload {
    let spec = d.spec.as_ref();
    let status = d.status.as_ref();
    let image = spec
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    ObservedWorkload {
        name: name.to_string(),
        image,
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
    let mut missing = Vec::new();
    for r in refs {
        let present = api.get_opt(&r.secret_name).await?.is_some_and(|s| {
            s.data.as_ref().is_some_and(|d| d.contains_key(&r.key))
                || s.string_data
                    .as_ref()
                    .is_some_and(|d| d.contains_key(&r.key))
        });
        if !present {
            missing.push(format!("Secret {} key {}", r.secret_name, r.key));
        }
    }
    Ok(missing)
}
