//! The controller loop every service shares: one `kube` controller per
//! resource type, woken by its children's shared watches and by Secrets it
//! names, each pass observing, deciding (the pure machine) and applying
//! (`reconcile.rs`); failures back off per object and are said once.

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use tokio::sync::broadcast::error::RecvError;

use super::caches::{Caches, Reflected, Triggers};
use super::contract::OpenStackService;
use super::peer_directory::Directory;
use super::reconcile;
use crate::context::Context;
use crate::error::Error;

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

/// Runs the controller for service `S` until `shutdown` resolves, over its
/// resources' watch (`resources`, filled by `resource_stream`). Its Jobs,
/// workloads, ConfigMaps and Services wake it on every change (`triggers`, no
/// polling), from the shared watches that keep the `caches` a pass reads its
/// children from; so do the Secrets it names and the peers it reads.
pub async fn run<S: OpenStackService>(
    ctx: Arc<Context>,
    caches: Caches,
    triggers: Triggers,
    (resources, resource_stream): Reflected<S>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let referrers = caches.referrers.clone();
    let woken_by_peers = woken_by_peers(&caches.peers, resources.clone());
    let pass = Arc::new(reconcile::Pass::<S>::new(caches));
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
        .owns_stream(triggers.daemon_sets)
        .owns_stream(triggers.config_maps)
        .owns_stream(triggers.services)
        .reconcile_on(futures::stream::select(woken_by_secrets, woken_by_peers))
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

/// The resources of `S` to reconcile because a peer they read changed: those
/// in the peer's namespace, or every one when this reader fell behind the
/// changes. Nothing for a service that reads no peers.
fn woken_by_peers<S: OpenStackService>(
    directory: &Directory,
    resources: Store<S>,
) -> futures::stream::BoxStream<'static, ObjectRef<S>> {
    if S::PEERS.is_empty() {
        return futures::stream::empty().boxed();
    }
    let changes = directory.subscribe();
    futures::stream::unfold(changes, move |mut changes| {
        let resources = resources.clone();
        async move {
            let namespace = loop {
                match changes.recv().await {
                    Ok(change) if S::PEERS.contains(&change.service) => {
                        break Some(change.namespace);
                    }
                    Ok(_) => continue,
                    Err(RecvError::Lagged(_)) => break None,
                    Err(RecvError::Closed) => return None,
                }
            };
            let woken: Vec<ObjectRef<S>> = resources
                .state()
                .iter()
                .filter(|object| namespace.is_none() || object.meta().namespace == namespace)
                .map(|object| ObjectRef::from_obj(object.as_ref()))
                .collect();
            Some((futures::stream::iter(woken), changes))
        }
    })
    .flatten()
    .boxed()
}
