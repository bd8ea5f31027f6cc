//! One reconcile pass: render → observe → decide (pure) → apply.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference, Service};
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use ratchet_phase_machine::hash::content_hash;
use ratchet_phase_machine::vocabulary::event;
use ratchet_phase_machine::{
    CheckReport, Decision, Event, EventType, JobAction, Observed, Outcome, WorkloadAction, decide,
};

use super::OpenStackService;
use super::model::{ServiceModel, WorkloadKind};
use super::observe::{Children, LiveWorkload, observe};
use super::render::{self, Owner, PodParams};
use crate::children::{apply, delete_background, ensure_job};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::events;
use crate::labels::TEMPLATE_HASH;

pub async fn reconcile<S: OpenStackService>(object: Arc<S>, ctx: Arc<Context>) -> Result<Action> {
    let owner = Owner::of(S::SERVICE, object.as_ref())?;
    let model = object.model(&owner.name);
    let config_hash = content_hash(model.config.as_bytes());
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let config_map = render::config_map(&owner, &model)?;
    let config_map_name = owner.config_map_name();
    let profile = S::profile();
    // The ConfigMap is applied while the children are read: both finish before
    // any Job or workload that mounts it is created.
    let (_, (observed, children)) = tokio::try_join!(
        apply(&config_maps, &config_map_name, &config_map),
        observe(
            &ctx,
            &profile,
            object.as_ref(),
            &owner,
            &model,
            config_hash.clone()
        ),
    )?;
    let decision = decide(&profile, &observed);
    record_phase(&ctx, S::SERVICE, &owner, &observed, &decision);
    tracing::debug!(service = S::SERVICE, name = %owner.name, namespace = %owner.namespace, outcome = ?decision.outcome, "decided");

    execute_jobs(&ctx, &owner, &model, &children, &decision).await?;
    execute_workloads::<S>(&ctx, &owner, &model, &children, &decision, &config_hash).await?;
    write_status(&ctx, object.as_ref(), &owner, &decision).await?;
    let reference = object.object_ref(&());
    events::publish(&ctx, &reference, &decision.events).await;
    if let Some(report) = &decision.check_report {
        report_check::<S>(&ctx, &owner, &reference, report).await?;
    }

    match decision.outcome {
        Outcome::Settled | Outcome::Waiting => Ok(Action::await_change()),
        Outcome::Failed { reason, message } => Err(Error::Blocked { reason, message }),
    }
}

async fn execute_jobs(
    ctx: &Context,
    owner: &Owner,
    model: &ServiceModel,
    children: &Children,
    decision: &Decision,
) -> Result<()> {
    let api: Api<Job> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    for action in &decision.jobs {
        match action {
            JobAction::Ensure {
                suffix,
                image,
                command,
                spec_hash,
                backoff_limit,
                fail_fast_exit_codes,
            } => {
                let desired = render::job(
                    owner,
                    model,
                    &render::JobSpec {
                        suffix,
                        image,
                        command,
                        spec_hash,
                        backoff_limit: *backoff_limit,
                        fail_fast_exit_codes,
                    },
                )?;
                ensure_job(&api, children.jobs.get(suffix), &desired).await?;
            }
            JobAction::Delete { suffix } => {
                delete_background(&api, &owner.job_name(suffix)).await?;
            }
        }
    }
    Ok(())
}

async fn execute_workloads<S: OpenStackService>(
    ctx: &Context,
    owner: &Owner,
    model: &ServiceModel,
    children: &Children,
    decision: &Decision,
    config_hash: &str,
) -> Result<()> {
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let stateful_sets: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let services: Api<Service> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    for action in &decision.workloads {
        match action {
            WorkloadAction::Apply {
                name,
                image,
                installed_release,
                pin,
            } => {
                let Some(workload) = model.workload(name) else {
                    continue;
                };
                let desired = render::workload(
                    owner,
                    model,
                    workload,
                    &PodParams {
                        image,
                        installed_release,
                        pin: pin.as_deref(),
                        config_hash,
                        installed_release_annotation: S::INSTALLED_RELEASE_ANNOTATION,
                    },
                )?;
                let live = children.workloads.get(name);
                let unchanged = live.is_some_and(|l| {
                    l.kind() == workload.kind
                        && l.annotation(TEMPLATE_HASH).is_some()
                        && l.annotation(TEMPLATE_HASH)
                            == desired["metadata"]["annotations"][TEMPLATE_HASH]
                                .as_str()
                                .map(str::to_owned)
                                .as_ref()
                });
                match workload.kind {
                    WorkloadKind::Deployment if !unchanged => {
                        apply(&deployments, name, &render::deployment(desired)?).await?;
                    }
                    WorkloadKind::Deployment => {}
                    WorkloadKind::StatefulSet => {
                        // The headless Service gives the pods their names.
                        apply(&services, name, &render::headless_service(owner, workload)?).await?;
                        if !unchanged {
                            apply(&stateful_sets, name, &render::stateful_set(desired)?).await?;
                        }
                    }
                }
                if let Some(port) = workload.api_port {
                    apply(
                        &services,
                        &owner.name,
                        &render::api_service(owner, workload, port)?,
                    )
                    .await?;
                }
            }
            WorkloadAction::Delete { name } => match children.workloads.get(name) {
                Some(LiveWorkload::StatefulSet(_)) => {
                    delete_background(&stateful_sets, name).await?;
                    delete_background(&services, name).await?;
                }
                _ => delete_background(&deployments, name).await?,
            },
        }
    }
    Ok(())
}

async fn write_status<S: OpenStackService>(
    ctx: &Context,
    object: &S,
    owner: &Owner,
    decision: &Decision,
) -> Result<()> {
    let status = S::desired_status(&S::profile(), &decision.status);
    if object.current_status() == Some(&status) {
        return Ok(());
    }
    let api: Api<S> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let patch = serde_json::json!({ "status": status });
    api.patch_status(&owner.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Reports an upgrade check exactly once per Job: the Job's UID is recorded on
/// the resource first, then the event is published. If recording fails, a
/// Warning says the report is deferred and the pass fails, so the next one
/// reports it.
async fn report_check<S: OpenStackService>(
    ctx: &Context,
    owner: &Owner,
    reference: &ObjectReference,
    report: &CheckReport,
) -> Result<()> {
    let api: Api<S> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let patch = serde_json::json!({ "metadata": { "annotations": { S::CHECK_REPORTED_ANNOTATION: report.job_uid } } });
    match api
        .patch(&owner.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => {
            events::publish(ctx, reference, std::slice::from_ref(&report.event)).await;
            Ok(())
        }
        Err(e) => {
            let deferred = Event {
                kind: EventType::Warning,
                reason: event::UPGRADE_CHECK_EVENT_EMISSION_DEFERRED.into(),
                message: format!(
                    "could not record the reported check Job {} ({e}); reporting on the next pass",
                    report.job_uid
                ),
            };
            events::publish(ctx, reference, std::slice::from_ref(&deferred)).await;
            Err(e.into())
        }
    }
}

/// The phase gauge, and the duration of a phase the decision leaves.
fn record_phase(
    ctx: &Context,
    service: &str,
    owner: &Owner,
    observed: &Observed,
    decision: &Decision,
) {
    let was = &observed.status;
    let left = (!was.phase.is_empty() && was.phase != decision.status.phase)
        .then(|| {
            let started: k8s_openapi::jiff::Timestamp = was.phase_started_at.parse().ok()?;
            let took = k8s_openapi::jiff::Timestamp::now().duration_since(started);
            Some((
                was.phase.as_str(),
                std::time::Duration::try_from(took).unwrap_or_default(),
            ))
        })
        .flatten();
    ctx.metrics.phase(
        service,
        &owner.namespace,
        &owner.name,
        &decision.status.phase,
        left,
    );
}
