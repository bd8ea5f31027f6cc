//! One reconcile pass: render → observe → decide (pure) → apply.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference, Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use ratchet_api::common::PendingEvent;
use ratchet_phase_machine::hash::content_hash;
use ratchet_phase_machine::vocabulary::event;
use ratchet_phase_machine::{
    CheckReport, Decision, Event, EventType, JobAction, Observed, Outcome, Profile, WorkloadAction,
    decide,
};

use super::caches::{Caches, named};
use super::contract::OpenStackService;
use super::contract::ServiceStatus;
use super::desired::{self, Desired};
use super::key_secrets;
use super::model::ServiceModel;
use super::observe::{Children, LiveWorkload, observe};
use super::own_writes::{ChildWrites, OwnWrites, cached_form};
use super::ownership::Claims;
use super::registration;
use super::render::{self, Owner, Workload};
use crate::children::{JobEnsured, REPLACE_RETRY, apply, delete_background, ensure_job};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::events;
use crate::labels::{POD_SPEC_HASH, TEMPLATE_HASH};

/// The controller's pass for service `S`: its caches, and the last version of
/// each resource it wrote itself.
pub struct Pass<S> {
    caches: Caches,
    /// The service's profile, built once.
    profile: Profile,
    /// Per resource, the object as Ratchet last wrote it (status or
    /// annotation), and per workload, as it last applied it: a pass never
    /// decides on an object older than its own last write (see `own_writes`).
    written: OwnWrites<S>,
    children_written: ChildWrites,
}

impl<S: OpenStackService> Pass<S> {
    pub fn new(caches: Caches) -> Pass<S> {
        Pass {
            caches,
            profile: S::profile(),
            written: OwnWrites::default(),
            children_written: ChildWrites::default(),
        }
    }

    fn remember(&self, mut object: S) {
        super::caches::drop_managed_fields(&mut object);
        self.written.remember(object);
    }

    pub async fn run(&self, cached: Arc<S>, ctx: Arc<Context>) -> Result<Action> {
        if let Err(message) = self.caches.ready(ctx.config.cache_sync_timeout).await {
            // Said on the resource too: its owner sees why nothing happens.
            ctx.events.publish(
                &cached.object_ref(&()),
                &[Event {
                    kind: EventType::Warning,
                    reason: event::CACHE_NOT_READY.into(),
                    message: message.clone(),
                }],
            );
            return Err(Error::Blocked {
                reason: event::CACHE_NOT_READY.into(),
                message,
            });
        }
        let object = self.written.freshest(cached);
        let owner = Owner::of(S::SERVICE, object.as_ref())?;
        let peers = self.caches.peers.peers(&owner.namespace, S::PEERS);
        let model = object.model(&owner.name, &peers);
        self.caches.name_secrets(&owner, &model);
        // A configuration the renderer refused is not written: the machine sees
        // the refusal (InvalidConfig) and creates nothing that would mount it.
        let files = model.files();
        let registration = registration::observe(&ctx, &self.caches, &owner, &model).await?;
        let mut hashed = serde_json::to_string(&files)?;
        if let Some(found) = &registration {
            // The service password's version: a new one restarts the pods.
            hashed.push_str("\0registration:");
            hashed.push_str(&found.observed.inputs);
        }
        let config_hash = model.config_hash(&hashed);
        let config_map = files
            .map(|files| render::config_map(&owner, &files))
            .transpose()?;
        let profile = &self.profile;
        let claims = Claims::read(&self.caches, &owner);
        claims.settle(&ctx, &owner).await?;
        // Children in the way (a deleted predecessor's) are never touched: the
        // pass applies nothing until they are gone.
        let clear = claims.clear();
        // The ConfigMap is applied (when it changed) and absent key Secrets are
        // created while the Secrets are checked: all finish before any Job or
        // workload that mounts them is created.
        let (predecessor_keys, (mut observed, children)) = tokio::try_join!(
            async {
                if !clear {
                    return Ok(Vec::new());
                }
                if let Some(config_map) = &config_map {
                    self.apply_config_map(&ctx, &owner, config_map).await?;
                }
                key_secrets::ensure(&ctx, &owner, &model).await
            },
            observe(
                &ctx,
                &self.caches,
                claims,
                &self.children_written,
                profile,
                object.as_ref(),
                &owner,
                &model,
                config_hash.clone()
            ),
        )?;
        observed.children_in_the_way.extend(predecessor_keys);
        observed.registration = registration.as_ref().map(|r| r.observed.clone());
        let decision = decide(profile, &observed);
        record_phase(&ctx, S::SERVICE, &owner, &observed, &decision);
        tracing::debug!(service = S::SERVICE, name = %owner.name, namespace = %owner.namespace, outcome = ?decision.outcome, "decided");
        // Everything the pass writes is rendered before anything is applied.
        let desired = Desired::render(
            &owner,
            &model,
            &decision,
            &desired::Inputs {
                config_hash: &config_hash,
                installed_release_annotation: S::INSTALLED_RELEASE_ANNOTATION,
                registration_secrets: registration.as_ref().map(|r| r.secrets.as_slice()),
            },
        )?;

        // Deletions land before the status moves on (an abort clears the phase
        // only once its Jobs are going); everything else is independent and runs
        // at once: a crash between any two leaves a state the next pass repeats.
        let (deletions, ensures): (Vec<&JobAction>, Vec<&JobAction>) = decision
            .jobs
            .iter()
            .partition(|a| matches!(a, JobAction::Delete { .. }));
        self.execute_jobs(&ctx, &owner, &children, &desired, &deletions)
            .await?;
        let reference = object.object_ref(&());
        let (replacing, _, written) = tokio::try_join!(
            self.execute_jobs(&ctx, &owner, &children, &desired, &ensures),
            self.execute_workloads(&ctx, &owner, &model, &children, &decision, &desired),
            record_transition(
                &ctx,
                profile,
                object.as_ref(),
                &owner,
                &reference,
                &decision
            ),
        )?;
        if let Some(written) = written {
            self.remember(written);
        }
        replace_stuck_pods(&ctx, &owner, &reference, &children.stuck_pods).await?;
        if let Some(report) = &decision.check_report {
            let annotated =
                report_check::<S>(&ctx, object.as_ref(), &owner, &reference, report).await?;
            self.remember(annotated);
        }

        // What is in the way goes by itself; a predecessor's child's deletion
        // wakes this resource (its owner reference names the same name), an
        // orphaned Job's end does not.
        let waiting = !observed.children_in_the_way.is_empty();
        let recheck_after = match (children.recheck_after, replacing || waiting) {
            (after, false) => after,
            (after, true) => Some(after.map_or(REPLACE_RETRY, |a| a.min(REPLACE_RETRY))),
        };
        match (decision.outcome, recheck_after) {
            (Outcome::Settled | Outcome::Waiting, Some(after)) => Ok(Action::requeue(after)),
            (Outcome::Settled | Outcome::Waiting, None) => Ok(Action::await_change()),
            (Outcome::Failed { reason, message }, _) => Err(Error::Blocked { reason, message }),
        }
    }

    async fn apply_config_map(
        &self,
        ctx: &Context,
        owner: &Owner,
        desired: &ConfigMap,
    ) -> Result<()> {
        let name = owner.config_map_name();
        let live = named(&self.caches.config_maps, &owner.namespace, &name);
        if live.is_some_and(|l| {
            l.annotation(TEMPLATE_HASH).is_some()
                && l.annotation(TEMPLATE_HASH) == desired_hash(&desired.metadata)
                && l.labels.equals(desired.metadata.labels.as_ref())
        }) {
            return Ok(());
        }
        let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &owner.namespace);
        apply(&api, &name, desired).await?;
        Ok(())
    }

    /// Applies a Service unless the cached one was applied from the same rendering.
    async fn apply_service(&self, ctx: &Context, owner: &Owner, desired: &Service) -> Result<()> {
        let name = desired.metadata.name.clone().unwrap_or_default();
        let live = named(&self.caches.services, &owner.namespace, &name);
        if live.is_some_and(|l| {
            l.annotation(TEMPLATE_HASH).is_some()
                && l.annotation(TEMPLATE_HASH) == desired_hash(&desired.metadata)
        }) {
            return Ok(());
        }
        let api: Api<Service> = Api::namespaced(ctx.client.clone(), &owner.namespace);
        apply(&api, &name, desired).await?;
        Ok(())
    }

    async fn execute_workloads(
        &self,
        ctx: &Context,
        owner: &Owner,
        model: &ServiceModel,
        children: &Children,
        decision: &Decision,
        desired: &Desired,
    ) -> Result<()> {
        let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &owner.namespace);
        let stateful_sets: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), &owner.namespace);
        let daemon_sets: Api<DaemonSet> = Api::namespaced(ctx.client.clone(), &owner.namespace);
        let workload_apis = WorkloadApis {
            deployments: &deployments,
            stateful_sets: &stateful_sets,
            daemon_sets: &daemon_sets,
        };
        let services: Api<Service> = Api::namespaced(ctx.client.clone(), &owner.namespace);
        for action in &decision.workloads {
            match action {
                WorkloadAction::Apply { name, .. } => {
                    let (Some(workload), Some(wanted)) =
                        (model.workload(name), desired.workload(name))
                    else {
                        continue;
                    };
                    if let Some(old) = children.replaced.get(name) {
                        // Its pods go first (foreground); its deletion wakes the next pass.
                        self.children_written
                            .forget_workload(&owner.namespace, name);
                        delete_foreground(&workload_apis, name, old).await?;
                        continue;
                    }
                    let live = children.workloads.get(name);
                    let unchanged = live.is_some_and(|l| {
                        l.kind() == workload.kind
                            && l.annotation(TEMPLATE_HASH).is_some()
                            && l.annotation(TEMPLATE_HASH) == wanted.object.template_hash()
                    });
                    if let Some(headless) = &wanted.headless {
                        self.apply_service(ctx, owner, headless).await?;
                    }
                    match &wanted.object {
                        Workload::Deployment(deployment) if !unchanged => {
                            let applied = apply(&deployments, name, deployment).await?;
                            let written = cached_form(&applied)?;
                            self.children_written.deployments.remember(written);
                        }
                        Workload::StatefulSet(set) if !unchanged => {
                            let applied = apply(&stateful_sets, name, set).await?;
                            let written = cached_form(&applied)?;
                            self.children_written.stateful_sets.remember(written);
                        }
                        Workload::DaemonSet(set) if !unchanged => {
                            let applied = apply(&daemon_sets, name, set).await?;
                            let written = cached_form(&applied)?;
                            self.children_written.daemon_sets.remember(written);
                        }
                        Workload::Deployment(_)
                        | Workload::StatefulSet(_)
                        | Workload::DaemonSet(_) => {}
                    }
                    if let Some(api) = &wanted.api {
                        self.apply_service(ctx, owner, api).await?;
                    }
                }
                WorkloadAction::Delete { name } => {
                    self.children_written
                        .forget_workload(&owner.namespace, name);
                    match children.workloads.get(name) {
                        Some(LiveWorkload::StatefulSet(_)) => {
                            delete_background(&stateful_sets, name).await?;
                            delete_background(&services, name).await?;
                        }
                        Some(LiveWorkload::DaemonSet(_)) => {
                            delete_background(&daemon_sets, name).await?
                        }
                        _ => delete_background(&deployments, name).await?,
                    }
                }
            }
        }
        Ok(())
    }

    /// Creates, replaces and deletes phase Jobs; true when a create met a Job of
    /// the same name still on the server (the pass then looks again shortly).
    async fn execute_jobs(
        &self,
        ctx: &Context,
        owner: &Owner,
        children: &Children,
        desired: &Desired,
        actions: &[&JobAction],
    ) -> Result<bool> {
        let api: Api<Job> = Api::namespaced(ctx.client.clone(), &owner.namespace);
        let mut replacing = false;
        for action in actions {
            match action {
                JobAction::Ensure { suffix, .. } => {
                    let Some(wanted) = desired.job(suffix) else {
                        continue;
                    };
                    let live_hash = children
                        .jobs
                        .get(suffix)
                        .map(|live| live.annotation(POD_SPEC_HASH));
                    match ensure_job(&api, live_hash, wanted).await? {
                        JobEnsured::Unchanged => {}
                        JobEnsured::Created(job) => {
                            self.children_written.jobs.remember(cached_form(&job)?)
                        }
                        JobEnsured::Replacing => {
                            tracing::debug!(name = %owner.name, namespace = %owner.namespace, suffix, "a Job of that name is still on the server; looking again shortly");
                            replacing = true;
                        }
                    }
                }
                JobAction::Delete { suffix } => {
                    let name = owner.job_name(suffix);
                    self.children_written.jobs.forget(&owner.namespace, &name);
                    delete_background(&api, &name).await?;
                }
            }
        }
        Ok(replacing)
    }
}

/// The rendering hash a desired object carries.
fn desired_hash(metadata: &ObjectMeta) -> Option<&str> {
    metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(TEMPLATE_HASH))
        .map(String::as_str)
}

/// The API of each workload kind in the resource's namespace.
struct WorkloadApis<'a> {
    deployments: &'a Api<Deployment>,
    stateful_sets: &'a Api<StatefulSet>,
    daemon_sets: &'a Api<DaemonSet>,
}

/// Deletes a workload and, before the object itself goes, its pods.
async fn delete_foreground(apis: &WorkloadApis<'_>, name: &str, live: &LiveWorkload) -> Result<()> {
    if live.metadata().deletion_timestamp.is_some() {
        return Ok(());
    }
    let params = DeleteParams::foreground();
    let deleted = match live {
        LiveWorkload::Deployment(_) => apis.deployments.delete(name, &params).await.map(|_| ()),
        LiveWorkload::StatefulSet(_) => apis.stateful_sets.delete(name, &params).await.map(|_| ()),
        LiveWorkload::DaemonSet(_) => apis.daemon_sets.delete(name, &params).await.map(|_| ()),
    };
    match deleted {
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        other => Ok(other?),
    }
}

/// Deletes StatefulSet pods their set will not replace by itself (see
/// `stall::stuck_pods`); the set recreates them from its current template.
async fn replace_stuck_pods(
    ctx: &Context,
    owner: &Owner,
    reference: &ObjectReference,
    pods: &[String],
) -> Result<()> {
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    for pod in pods {
        delete_background(&api, pod).await?;
        tracing::info!(name = %owner.name, namespace = %owner.namespace, pod, "replaced a stuck StatefulSet pod");
        ctx.events.publish(
            reference,
            &[Event {
                kind: EventType::Normal,
                reason: event::STUCK_POD_REPLACED.into(),
                message: format!(
                    "deleted pod {pod}: it never got ready and is not of the revision its StatefulSet now rolls to, which a StatefulSet does not replace by itself"
                ),
            }],
        );
    }
    Ok(())
}

/// Writes the decided status when it differs from the stored one, with the
/// decision's events, which are published at the same time; returns the
/// resource as last written. The events are named after the status they
/// leave (`events::announcing`) and recorded in the new status as pending
/// until published, then cleared: a crash before the status write repeats the
/// decision from the same status (same names: `AlreadyExists`), a crash after
/// it leaves them pending for the next pass, which publishes them first. The
/// new status is visible after one write, not after the events' writes too.
async fn record_transition<S: OpenStackService>(
    ctx: &Context,
    profile: &Profile,
    object: &S,
    owner: &Owner,
    reference: &ObjectReference,
    decision: &Decision,
) -> Result<Option<S>> {
    let publish = |named: Vec<PendingEvent>| async move {
        if !named.is_empty() {
            let others =
                events::publish_named(&ctx.client, &ctx.config.instance, reference, &named).await?;
            warn_of_other_replicas(ctx, owner, &others);
        }
        Ok::<(), Error>(())
    };
    let stored = object.status();
    // Due since an earlier pass: published before a new status replaces them.
    publish(
        stored
            .map(|s| s.pending_events().to_vec())
            .unwrap_or_default(),
    )
    .await?;
    let left = serde_json::to_vec(&stored)?;
    let announced = events::announcing(
        reference,
        &format!("status/{}", content_hash(&left)),
        &decision.events,
    );
    let mut status = S::desired_status(profile, &decision.status);
    if stored == Some(&status) {
        // No new status to record them: a repeat of this pass names them alike.
        publish(announced).await?;
        return Ok(None);
    }
    let api: Api<S> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let write = |patch: serde_json::Value| {
        let api = api.clone();
        async move {
            Ok::<S, Error>(
                api.patch_status(&owner.name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?,
            )
        }
    };
    // Said even when none are (a merge patch keeps what it does not name):
    // `null` removes the events an earlier pass left due.
    let recording = |status: &S::Status| -> Result<serde_json::Value> {
        let mut patch = serde_json::json!({ "status": status });
        patch["status"]["pendingEvents"] = match status.pending_events() {
            [] => serde_json::Value::Null,
            due => serde_json::to_value(due)?,
        };
        Ok(patch)
    };
    if announced.is_empty() {
        return Ok(Some(write(recording(&status)?).await?));
    }
    status.pending_events_mut().clone_from(&announced);
    tokio::try_join!(write(recording(&status)?), publish(announced))?;
    let published = serde_json::json!({ "status": { "pendingEvents": null } });
    Ok(Some(write(published).await?))
}

/// Reports an upgrade check exactly once per Job, also across crashes, in
/// three steps: the resource records that Job's report as due
/// (`reporting:<uid>`), the event is published under a name derived from the
/// Job's UID, then the resource records it as done (`<uid>`). If the first
/// record fails, nothing is reported: a Warning says the report is deferred
/// and the pass fails, so the next one reports it (seed C15). A crash after it
/// leaves the report due, and the repeat publication finds it already there.
async fn report_check<S: OpenStackService>(
    ctx: &Context,
    object: &S,
    owner: &Owner,
    reference: &ObjectReference,
    report: &CheckReport,
) -> Result<S> {
    let api: Api<S> = Api::namespaced(ctx.client.clone(), &owner.namespace);
    let record = |value: String| {
        let api = api.clone();
        let name = owner.name.clone();
        async move {
            let patch = serde_json::json!({ "metadata": { "annotations": { S::CHECK_REPORTED_ANNOTATION: value } } });
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
        }
    };
    let due = format!("{CHECK_REPORT_DUE}{}", report.job_uid);
    let recorded = object
        .meta()
        .annotations
        .as_ref()
        .and_then(|a| a.get(S::CHECK_REPORTED_ANNOTATION));
    if recorded != Some(&due)
        && let Err(e) = record(due).await
    {
        let deferred = Event {
            kind: EventType::Warning,
            reason: event::UPGRADE_CHECK_EVENT_EMISSION_DEFERRED.into(),
            message: format!(
                "could not record the check Job {} as reported ({e}); reporting on the next pass",
                report.job_uid
            ),
        };
        ctx.events
            .publish(reference, std::slice::from_ref(&deferred));
        return Err(e.into());
    }
    let others = events::publish_once(
        &ctx.client,
        &ctx.config.instance,
        reference,
        &format!("check/{}", report.job_uid),
        std::slice::from_ref(&report.event),
    )
    .await?;
    warn_of_other_replicas(ctx, owner, &others);
    Ok(record(report.job_uid.clone()).await?)
}

/// Without leader election, another instance that published the same
/// transition first is a second operator acting on the same resources: said
/// loudly, since only the event names keep the two from doubling everything.
fn warn_of_other_replicas(ctx: &Context, owner: &Owner, others: &[String]) {
    if ctx.config.leader_election.is_none() && !others.is_empty() {
        tracing::error!(
            name = %owner.name,
            namespace = %owner.namespace,
            instance = %ctx.config.instance,
            others = ?others,
            "another operator instance acts on this resource and leader election is off: run one replica, or enable --leader-election on every replica"
        );
        ctx.metrics.other_replica_acting();
    }
}

/// The prefix of a check report recorded as due but not yet known published.
const CHECK_REPORT_DUE: &str = "reporting:";

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
