//! Watch caches of the objects Ratchet owns. The same watch streams that wake
//! the controller fill these stores (a reflector updates its store before the
//! change reaches the controller), so a pass woken by a child's change reads
//! that change from memory instead of listing it again: no round trip for
//! observing Jobs, workloads, ConfigMaps and Services.
//!
//! A watch that fails (the API server restarting, a dropped connection) retries
//! on its own within a second ([`WATCH_RETRY`]) and its errors stop here: passed
//! on, they would put the controller's whole trigger stream into kube's default
//! back-off (up to 30 s without any trigger, for every resource), which is what
//! stalled upgrades for minutes after a few seconds of API-server outage.

use std::sync::Arc;

use std::time::Duration;

use futures::{FutureExt, Stream, StreamExt};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::Resource;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::ExponentialBackoff;
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;

use super::api;
use crate::context::Context;
use crate::error::Result;
use crate::labels::{INSTANCE, MANAGED_BY, MANAGER, NAME};

/// The stores of one service's controller (its own children only).
#[derive(Clone)]
pub struct Caches {
    pub jobs: Store<Job>,
    pub deployments: Store<Deployment>,
    pub stateful_sets: Store<StatefulSet>,
    pub config_maps: Store<ConfigMap>,
    pub services: Store<Service>,
}

/// The trigger streams that fill [`Caches`]; each goes to `Controller::owns_stream`.
pub struct Triggers {
    pub jobs: Trigger<Job>,
    pub deployments: Trigger<Deployment>,
    pub stateful_sets: Trigger<StatefulSet>,
    pub config_maps: Trigger<ConfigMap>,
    pub services: Trigger<Service>,
}

pub type Trigger<K> = std::pin::Pin<Box<dyn Stream<Item = Result<K, watcher::Error>> + Send>>;

/// The longest a failed watch waits before it tries again: the API server is
/// back for the operator within this long of serving again. A handful of watches
/// retrying once a second is nothing to an API server; waiting longer is what
/// users see as a stalled upgrade.
pub const WATCH_RETRY: Duration = Duration::from_secs(1);

/// 100 ms doubling to [`WATCH_RETRY`], with jitter, for as long as it takes.
pub fn watch_backoff() -> ExponentialBackoff {
    backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(100))
        .with_max_delay(WATCH_RETRY)
        .with_jitter()
        .without_max_times()
        .into()
}

/// A reflector over `api` with `config`: fills its store, retries on its own
/// and yields only objects (errors are logged, see the module docs).
pub fn reflected<K>(api: kube::Api<K>, config: watcher::Config) -> (Store<K>, Trigger<K>)
where
    K: Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let kind = K::kind(&()).into_owned();
    let (store, writer) = reflector::store();
    let stream = reflector::reflector(writer, watcher(api, config).modify(slim))
        .backoff(watch_backoff())
        .touched_objects()
        .filter_map(move |item| {
            let kept = match item {
                Ok(object) => Some(Ok(object)),
                Err(error) => {
                    tracing::warn!(kind = %kind, %error, "watch failed; retrying");
                    None
                }
            };
            std::future::ready(kept)
        });
    (store, Box::pin(stream))
}

/// Drops what no decision reads before an object is cached: the field sets
/// of its managed fields (the bulk of most objects' metadata). Each entry's
/// manager and time stay: a StatefulSet's stall is judged from when Ratchet
/// last changed it.
fn slim<K: Resource>(object: &mut K) {
    for entry in object.meta_mut().managed_fields.iter_mut().flatten() {
        entry.fields_v1 = None;
    }
}

/// A cache of the children of one service's resources: only objects Ratchet
/// manages for `service`, so each service's controller holds its own
/// children and no other's.
fn cached<K>(ctx: &Context, service: &str) -> (Store<K>, Trigger<K>)
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let owned =
        watcher::Config::default().labels(&format!("{MANAGED_BY}={MANAGER},{NAME}={service}"));
    reflected(api::<K>(ctx), owned)
}

impl Caches {
    pub fn start(ctx: &Context, service: &str) -> (Caches, Triggers) {
        let (jobs, job_stream) = cached(ctx, service);
        let (deployments, deployment_stream) = cached(ctx, service);
        let (stateful_sets, stateful_set_stream) = cached(ctx, service);
        let (config_maps, config_map_stream) = cached(ctx, service);
        let (services, service_stream) = cached(ctx, service);
        (
            Caches {
                jobs,
                deployments,
                stateful_sets,
                config_maps,
                services,
            },
            Triggers {
                jobs: job_stream,
                deployments: deployment_stream,
                stateful_sets: stateful_set_stream,
                config_maps: config_map_stream,
                services: service_stream,
            },
        )
    }

    /// Resolves once every store holds its initial list: before that, a missing
    /// child may only be unlisted, and deciding on it would flap the status.
    /// Bounded by `timeout`: a store that cannot list (e.g. RBAC without
    /// `statefulsets`) fails with a message naming it instead of stalling
    /// the pass.
    pub async fn ready(&self, timeout: std::time::Duration) -> Result<(), String> {
        let waits = [
            ("jobs", wait(&self.jobs).boxed()),
            ("deployments", wait(&self.deployments).boxed()),
            ("statefulsets", wait(&self.stateful_sets).boxed()),
            ("configmaps", wait(&self.config_maps).boxed()),
            ("services", wait(&self.services).boxed()),
        ];
        for (kind, ready) in waits {
            if tokio::time::timeout(timeout, ready).await.is_err() {
                return Err(format!(
                    "the watch cache of {kind} did not fill within {timeout:?}; check that the operator may list and watch {kind}"
                ));
            }
        }
        Ok(())
    }
}

async fn wait<K>(store: &Store<K>)
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    let _ = store.wait_until_ready().await;
}

/// The cached objects one resource owns (by its service and instance labels).
pub fn owned_by<K>(store: &Store<K>, service: &str, namespace: &str, instance: &str) -> Vec<Arc<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    store.state_filter(|object| {
        let meta = object.meta();
        meta.namespace.as_deref() == Some(namespace)
            && meta.labels.as_ref().is_some_and(|l| {
                l.get(NAME).map(String::as_str) == Some(service)
                    && l.get(INSTANCE).map(String::as_str) == Some(instance)
            })
    })
}

/// One cached object by name.
pub fn named<K>(store: &Store<K>, namespace: &str, name: &str) -> Option<Arc<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    store.get(&ObjectRef::new(name).within(namespace))
}
