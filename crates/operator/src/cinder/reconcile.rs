//! One reconcile pass for a Cinder: render → observe → decide (pure) → apply.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, Resource};
use ratchet_api::cinder::v1alpha1::{Cinder, CinderStatus, CinderUpgradePhase};
use ratchet_phase_machine::hash::content_hash;
use ratchet_phase_machine::vocabulary::event;
use ratchet_phase_machine::{
    CheckReport, Decision, Event, EventType, JobAction, Outcome, WorkloadAction, decide,
};

use super::config;
use super::observe::{Children, observe};
use super::profile::{Role, profile, roles};
use super::render::{self, CHECK_REPORTED_ANNOTATION, Owner};
use crate::children::{apply, delete_background, ensure_job};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::events;
use crate::labels::TEMPLATE_HASH;

pub async fn reconcile(cinder: Arc<Cinder>, ctx: Arc<Context>) -> Result<Action> {
    let owner = Owner::of(&cinder)?;
    let rendered = config::render(&owner.namespace, &owner.name, &cinder.spec);
    let config_hash = content_hash(rendered.as_bytes());
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let config_map = render::config_map(&owner, &rendered)?;
    let config_map_name = owner.config_map_name();
    let profile = profile();
    // The ConfigMap is applied while the children are read: both finish before
    // any Job or workload that mounts it is created.
    let (_, (observed, children)) = tokio::try_join!(
        apply(&config_maps, &config_map_name, &config_map),
        observe(&ctx, &profile, &cinder, &owner, config_hash.clone()),
    )?;
    let decision = decide(&profile, &observed);
    record_phase(&ctx, &owner, &observed, &decision);
    tracing::debug!(cinder = %owner.name, namespace = %owner.namespace, outcome = ?decision.outcome, "decided");

    execute_jobs(&ctx, &cinder, &owner, &children, &decision).await?;
    execute_workloads(&ctx, &cinder, &owner, &children, &decision, &config_hash).await?;
    write_status(&ctx, &cinder, &owner, &decision).await?;
    let reference = cinder.object_ref(&());
    events::publish(&ctx, &reference, &decision.events).await;
    if let Some(report) = &decision.check_report {
        report_check(&ctx, &owner, &reference, report).await?;
    }

    match decision.outcome {
        Outcome::Settled | Outcome::Waiting => Ok(Action::await_change()),
        Outcome::Failed { reason, message } => Err(Error::Blocked { reason, message }),
    }
}

async fn execute_jobs(
    ctx: &Context,
    cinder: &Cinder,
    owner: &Owner,
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
                    cinder,
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
                delete_background(&api, &format!("{}-{suffix}", owner.name)).await?;
            }
        }
    }
    Ok(())
}

async fn execute_workloads(
    ctx: &Context,
    cinder: &Cinder,
    owner: &Owner,
    children: &Children,
    decision: &Decision,
    config_hash: &str,
) -> Result<()> {
    let api: Api<Deployment> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let roles = roles(cinder);
    for action in &decision.workloads {
        match action {
            WorkloadAction::Apply {
                name,
                image,
                installed_release,
                // Cinder pins itself from the services table: no explicit pin.
                pin: _,
            } => {
                let Some(role) = roles.iter().find(|r| r.workload_name(&owner.name) == *name)
                else {
                    continue;
                };
                let desired =
                    render::deployment(owner, cinder, role, image, installed_release, config_hash)?;
                if !unchanged(children.deployments.get(name), &desired) {
                    apply(&api, name, &desired).await?;
                }
                if *role == Role::Api {
                    let services: Api<Service> =
                        Api::namespaced(ctx.client.clone(), &owner.namespace);
                    apply(&services, &owner.name, &render::service(owner)?).await?;
                }
            }
            WorkloadAction::Delete { name } => delete_background(&api, name).await?,
        }
    }
    Ok(())
}

/// True when the live Deployment was applied from the same rendering.
fn unchanged(live: Option<&Deployment>, desired: &Deployment) -> bool {
    let hash = |d: &Deployment| {
        d.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(TEMPLATE_HASH).cloned())
    };
    live.is_some_and(|l| hash(l).is_some() && hash(l) == hash(desired))
}

async fn write_status(
    ctx: &Context,
    cinder: &Cinder,
    owner: &Owner,
    decision: &Decision,
) -> Result<()> {
    let status = CinderStatus {
        installed_release: decision.status.installed_release.clone(),
        target_release: decision.status.target_release.clone(),
        upgrade_phase: serde_json::from_value(serde_json::Value::String(
            decision.status.phase.clone(),
        ))
        .unwrap_or(CinderUpgradePhase::None),
        upgrade_phase_started_at: decision.status.phase_started_at.clone(),
        rolling_workload: decision.status.rolling_workload.clone(),
        conditions: decision
            .status
            .conditions
            .iter()
            .map(|c| Condition {
                type_: c.kind.clone(),
                status: if c.status { "True" } else { "False" }.into(),
                reason: c.reason.clone(),
                message: c.message.clone(),
                last_transition_time: Time(
                    c.last_transition_time
                        .parse()
                        .unwrap_or_else(|_| k8s_openapi::jiff::Timestamp::now()),
                ),
                observed_generation: c.observed_generation,
            })
            .collect(),
        observed_generation: Some(decision.status.observed_generation),
    };
    if cinder.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let api: Api<Cinder> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let patch = serde_json::json!({ "status": status });
    api.patch_status(&owner.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Reports an upgrade check exactly once per Job: the Job's UID is recorded on
/// the Cinder first, then the event is published. If recording fails, a Warning
/// says the report is deferred and the pass fails, so the next one reports it.
async fn report_check(
    ctx: &Context,
    owner: &Owner,
    reference: &ObjectReference,
    report: &CheckReport,
) -> Result<()> {
    let api: Api<Cinder> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let patch = serde_json::json!({ "metadata": { "annotations": { CHECK_REPORTED_ANNOTATION: report.job_uid } } });
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
    owner: &Owner,
    observed: &ratchet_phase_machine::Observed,
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
        super::profile::SERVICE,
        &owner.namespace,
        &owner.name,
        &decision.status.phase,
        left,
    );
}
