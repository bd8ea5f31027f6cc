//! The controller every OpenStack service shares. A service is a resource type
//! implementing [`OpenStackService`]: its profile on the phase machine, how its
//! spec and status read, and the [`ServiceModel`] of what it runs. Observing the
//! cluster, deciding (the pure machine) and applying the decision happen here,
//! once for all services.

mod cached;
mod caches;
pub mod identity;
pub mod ini;
mod key_secrets;
pub mod model;
mod observe;
mod own_writes;
mod ownership;
pub mod plan;
pub mod readiness;
mod reconcile;
mod referrers;
mod registration;
pub mod render;
pub mod secret_options;
mod stall;
pub mod status;
pub mod uwsgi;

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::crd::MergeError;
use kube::core::object::HasStatus;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Resource};
use ratchet_phase_machine::{DesiredStatus, Profile, SpecView, StatusView};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use caches::watch_backoff;
pub use model::ServiceModel;
pub use render::Owner;
pub use status::ServiceStatus;

pub use cached::{
    Cached, CachedConfigMap, CachedDeployment, CachedJob, CachedService, CachedStatefulSet,
};
pub use caches::{
    Caches, Routed, Triggers, drop_managed_fields, managed_selector, parsed_lean, secret_key_names,
};

use crate::context::Context;
use crate::error::Error;

/// An OpenStack service resource the shared controller drives.
pub trait OpenStackService:
    Resource<Scope = NamespaceResourceScope, DynamicType = ()>
    + kube::CustomResourceExt
    + HasStatus<Status: ServiceStatus + PartialEq + Serialize + Send + Sync + 'static>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// Lower-case service name: labels, metrics, messages.
    const SERVICE: &'static str;
    /// The pod annotation carrying the installed release (the second roll).
    const INSTALLED_RELEASE_ANNOTATION: &'static str;
    /// The resource annotation recording the last Job whose upgrade check was
    /// reported (exactly once per Job).
    const CHECK_REPORTED_ANNOTATION: &'static str;
    /// Configuration options Ratchet sets itself; `extraConfig` may not name them.
    const MANAGED_OPTIONS: &'static [ini::ManagedOption];
    /// Options Ratchet sets through the pods' environment; `spec.secretOptions`
    /// may not name them (one variable, one owner).
    const ENVIRONMENT_OPTIONS: &'static [ini::ManagedOption] = Self::MANAGED_OPTIONS;
    /// The uid its pods run as unless `spec.securityContext` says otherwise.
    const DEFAULT_UID: i64;

    /// The CRD Ratchet ships: every served version, this type's stored.
    fn served_crd() -> Result<CustomResourceDefinition, MergeError> {
        Ok(Self::crd())
    }
    /// How the API server converts this resource between its served versions
    /// (`None`: one version, nothing to convert).
    fn conversion() -> Option<Conversion> {
        None
    }
    fn profile() -> Profile;
    fn spec_view(&self) -> SpecView;
    fn status_view(&self) -> StatusView {
        self.status().map(ServiceStatus::view).unwrap_or_default()
    }
    /// The status to store for the machine's decision.
    fn desired_status(profile: &Profile, decided: &DesiredStatus) -> Self::Status {
        Self::Status::decided(profile, decided)
    }
    /// What the resource runs, for the resource named `name`.
    fn model(&self, name: &str) -> ServiceModel;
    /// A small resource of this service named `name` (the demo's): `scale`
    /// sizes what a demo varies, Cinder's volume back ends (Ironic runs two APIs
    /// and two conductors whatever it says).
    fn example(name: &str, release: &str, repository: &str, scale: usize) -> Example;
    /// The example as real processes run it on the test environment's process
    /// kubelet (images from `repository` there, back ends and auth that need
    /// neither privileges nor a Keystone): what the real tests, `ratchet demo
    /// --real` and the real benchmarks install. `None`: no real run yet.
    fn real_example(_name: &str, _release: &str, _repository: &str) -> Option<Example> {
        None
    }
    /// Service-specific reasons admission refuses the resource (the release
    /// and image rules are shared).
    fn violations(&self) -> Vec<String> {
        Vec::new()
    }
    /// What admission admits but tells the client about (e.g. a privileged
    /// workload): `kubectl` prints these as warnings.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A resource's conversion webhook: where reviews arrive, and the pure
/// conversion of one object to the desired `apiVersion`.
pub struct Conversion {
    pub path: &'static str,
    pub convert: fn(serde_json::Value, &str) -> Result<serde_json::Value, String>,
}

/// An example resource, and a few words on its shape.
pub struct Example {
    pub manifest: serde_json::Value,
    pub shape: String,
}

fn api<K>(ctx: &Context) -> Api<K>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
{
    match &ctx.config.namespace {
        Some(ns) => Api::namespaced(ctx.client.clone(), ns),
        None => Api::all(ctx.client.clone()),
    }
}

fn key<S: OpenStackService>(object: &S) -> String {
    ObjectRef::from_obj(object).to_string()
}

fn error_policy<S: OpenStackService>(object: Arc<S>, error: &Error, ctx: Arc<Context>) -> Action {
    ctx.metrics.failed(S::SERVICE, &error.metric_label());
    let transient = error.is_transient();
    let (failures, delay) = ctx.record_failure(&key(object.as_ref()), transient);
    tracing::warn!(resource = %key(object.as_ref()), error = %error, transient, failures = failures.real, retry_in = ?delay, "reconcile failed");
    // A blocked pass has said why through the machine's condition and event.
    if !matches!(error, Error::Blocked { .. }) && failures.worth_an_event(transient) {
        let count = if transient {
            failures.transient
        } else {
            failures.real
        };
        ctx.events.publish(
            &object.object_ref(&()),
            &[ratchet_phase_machine::Event {
                kind: ratchet_phase_machine::EventType::Warning,
                reason: ratchet_phase_machine::vocabulary::event::RECONCILE_FAILING.into(),
                message: format!("{count} passes in a row failed: {error}; retrying in {delay:?}"),
            }],
        );
    }
    Action::requeue(delay)
}

/// Runs the controller for service `S` until `shutdown` resolves. Its Jobs,
/// workloads, ConfigMaps and Services wake it on every change (`triggers`, no
/// polling), from the shared watches that keep the `caches` a pass reads its
/// children from.
pub async fn run<S: OpenStackService>(
    ctx: Arc<Context>,
    caches: Caches,
    triggers: Triggers,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let referrers = caches.referrers.clone();
    let pass = Arc::new(reconcile::Pass::<S>::new(caches));
    // Our own reflector rather than `Controller::new`'s: it retries a failed
    // watch within a second and keeps its errors out of the trigger stream.
    let (resources, resource_stream) = caches::reflected(
        api::<S>(&ctx),
        watcher::Config::default(),
        caches::drop_managed_fields,
    );
    let present = resources.clone();
    let woken_by_secrets = triggers.secrets.filter_map(move |referrer| {
        let reference = ObjectRef::<S>::new(&referrer.name).within(&referrer.namespace);
        let woken = if present.get(&reference).is_some() {
            Some(reference)
        } else {
            // Gone since it last named the Secret: it names nothing now.
            referrers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .forget(&referrer);
            None
        };
        std::future::ready(woken)
    });
    Controller::for_stream(resource_stream, resources)
        .owns_stream(triggers.jobs)
        .owns_stream(triggers.deployments)
        .owns_stream(triggers.stateful_sets)
        .owns_stream(triggers.config_maps)
        .owns_stream(triggers.services)
        .reconcile_on(woken_by_secrets)
        .with_config(controller::Config::default().concurrency(ctx.config.concurrency))
        .graceful_shutdown_on(shutdown)
        .run(
            move |object, ctx: Arc<Context>| {
                let pass = pass.clone();
                async move {
                    let key = key(object.as_ref());
                    let started = std::time::Instant::now();
                    let result = pass.run(object, ctx.clone()).await;
                    ctx.metrics.reconciled(S::SERVICE, started.elapsed());
                    if result.is_ok() {
                        ctx.record_success(&key);
                    }
                    result
                }
            },
            error_policy::<S>,
            ctx.clone(),
        )
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "controller event");
            }
        })
        .await;
}
