//! Watch caches of the objects Ratchet owns. The same watch streams that wake
//! the controllers fill these stores (a reflector updates its store before the
//! change reaches a controller), so a pass woken by a child's change reads
//! that change from memory instead of listing it again: no round trip for
//! observing Jobs, workloads, ConfigMaps and Services.
//!
//! The operator watches each child kind once, whatever the number of services
//! it runs: one store per kind, shared by every service's controller, and a
//! router that hands each changed object to the controller of the service its
//! name label names ([`Caches::start`]). Watches and cached copies therefore
//! do not multiply with the services.
//!
//! A watch that fails (the API server restarting, a dropped connection) retries
//! on its own within a second ([`WATCH_RETRY`]) and its errors stop here: passed
//! on, they would put the controller's whole trigger stream into kube's default
//! back-off (up to 30 s without any trigger, for every resource), which is what
//! stalled upgrades for minutes after a few seconds of API-server outage.

use ratchet_api::common::SecretKeyRef;
use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::mpsc;
use futures::future::BoxFuture;
use futures::{FutureExt, SinkExt, Stream, StreamExt, TryStreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::ExponentialBackoff;
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::cached::{
    Cached, CachedConfigMap, CachedDaemonSet, CachedDeployment, CachedJob, CachedService,
    CachedStatefulSet, Detail,
};
use super::model::ServiceModel;
use super::peer_directory::{self, Directory};
use super::referrers::{self, Referrer, Referrers};
use super::render::Owner;
use crate::context::Context;
use crate::error::Result;
use crate::labels::{MANAGED_BY, MANAGER, NAME};

/// The stores of every child Ratchet manages, shared by all controllers (each
/// reads its own children out of them: [`super::ownership::Claims`], [`named`]).
#[derive(Clone)]
pub struct Caches {
    pub jobs: Store<CachedJob>,
    pub deployments: Store<CachedDeployment>,
    pub stateful_sets: Store<CachedStatefulSet>,
    pub daemon_sets: Store<CachedDaemonSet>,
    pub config_maps: Store<CachedConfigMap>,
    pub services: Store<CachedService>,
    /// The Secrets of the namespaces Ratchet reconciles in, by key name only
    /// (never a value): a pass checks that the Secret keys its pods read exist
    /// without a request to the API server.
    pub secret_keys: Store<Secret>,
    /// Which resources name which Secret: a pass records its own, the
    /// Secret watch wakes them (see `referrers`).
    pub referrers: Arc<Mutex<Referrers>>,
    /// Every service's resources, for the configurations that read them.
    pub peers: Directory,
    /// Which of these stores (and of the services' own) have listed.
    listed: Listed,
}

impl Caches {
    /// The resource version of the Secret holding `key` in `namespace`, if
    /// both exist: whether a pod could read it, and what changes when it does.
    pub fn secret_version(&self, namespace: &str, key: &SecretKeyRef) -> Option<String> {
        let secret = named(&self.secret_keys, namespace, &key.secret_name)?;
        let has_key = secret
            .data
            .as_ref()
            .is_some_and(|d| d.contains_key(&key.key))
            || secret
                .string_data
                .as_ref()
                .is_some_and(|d| d.contains_key(&key.key));
        has_key.then(|| secret.metadata.resource_version.clone().unwrap_or_default())
    }
}

/// One service's share of the child watches: the changes to its children, each
/// for `Controller::owns_stream`.
pub struct Triggers {
    pub jobs: Trigger<CachedJob>,
    pub deployments: Trigger<CachedDeployment>,
    pub stateful_sets: Trigger<CachedStatefulSet>,
    pub daemon_sets: Trigger<CachedDaemonSet>,
    pub config_maps: Trigger<CachedConfigMap>,
    pub services: Trigger<CachedService>,
    /// Resources of the service whose named Secrets appeared, went or
    /// changed their keys.
    pub secrets: Pin<Box<dyn Stream<Item = Referrer> + Send>>,
}

pub type Trigger<K> = Pin<Box<dyn Stream<Item = Result<K, watcher::Error>> + Send>>;

/// A service's own watch: its store, and the stream that fills it.
pub type Reflected<S> = (Store<S>, Trigger<S>);

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

/// What a reflector can watch and keep.
pub trait Watched:
    Resource<DynamicType = ()> + Clone + std::fmt::Debug + DeserializeOwned + Send + Sync + 'static
{
}
impl<K> Watched for K where
    K: Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

/// A reflector over `api` with `config`: fills its store with objects cut
/// down by `trim` to what decisions read, retries on its own and
/// yields only objects (errors are logged, see the module docs).
pub fn reflected<K>(
    api: kube::Api<K>,
    config: watcher::Config,
    trim: fn(&mut K),
) -> (Store<K>, Trigger<K>)
where
    K: Watched,
{
    reflected_tapped(api, config, trim, |_| {})
}

/// [`reflected`], with `tap` seeing every watch event once the store holds it.
pub fn reflected_tapped<K>(
    api: kube::Api<K>,
    config: watcher::Config,
    trim: fn(&mut K),
    mut tap: impl FnMut(&watcher::Event<K>) + Send + 'static,
) -> (Store<K>, Trigger<K>)
where
    K: Watched,
{
    let kind = K::kind(&()).into_owned();
    let (store, writer) = reflector::store();
    let stream = reflector::reflector(writer, watcher(api, config).modify(trim))
        .backoff(watch_backoff())
        .inspect_ok(move |event| tap(event))
        .touched_objects()
        .filter_map(move |item| std::future::ready(without_errors(&kind, item).map(Ok)));
    (store, Box::pin(stream))
}

/// Logs a watch error and drops it (see the module docs).
fn without_errors<T>(kind: &str, item: Result<T, watcher::Error>) -> Option<T> {
    match item {
        Ok(item) => Some(item),
        // An expired resource version is the watch protocol at work (the
        // watcher lists again), not a fault worth a warning.
        Err(watcher::Error::WatchError(status)) if status.code == 410 => {
            tracing::debug!(kind, %status, "watch expired; listing again");
            None
        }
        Err(error) => {
            tracing::warn!(kind, %error, "watch failed; retrying");
            None
        }
    }
}

/// The Secret watch: fills `store` with key names only, and for each Secret
/// that appeared, went or changed its keys wakes the resources naming it.
fn secret_watch(
    ctx: &Context,
    referrers: Arc<Mutex<Referrers>>,
    mut routes: Routes<Referrer>,
) -> (Store<Secret>, BoxFuture<'static, ()>) {
    let (store, mut writer) = reflector::store();
    let before = store.clone();
    let events = watcher(ctx.api::<Secret>(), watcher::Config::default())
        .modify(secret_key_names)
        .backoff(watch_backoff())
        .filter_map(|item| std::future::ready(without_errors("Secret", item)));
    let watching = async move {
        let mut events = std::pin::pin!(events);
        let mut relisted = HashSet::new();
        while let Some(event) = events.next().await {
            let changed = referrers::changed_by(&before, &event, &mut relisted);
            writer.apply_watcher_event(&event);
            let woken: Vec<Referrer> = {
                let index = referrers.lock().unwrap_or_else(|p| p.into_inner());
                changed
                    .iter()
                    .flat_map(|s| index.of(s.namespace.as_deref().unwrap_or_default(), &s.name))
                    .collect()
            };
            for referrer in woken {
                if let Some(route) = routes.get_mut(referrer.service) {
                    // A closed route is a controller that has stopped.
                    let _ = route.send(referrer).await;
                }
            }
        }
    };
    (store, watching.boxed())
}

/// A Secret is read by name for which keys it has; its values are never kept.
pub fn secret_key_names(secret: &mut Secret) {
    secret.metadata = ObjectMeta {
        name: secret.metadata.name.take(),
        namespace: secret.metadata.namespace.take(),
        resource_version: secret.metadata.resource_version.take(),
        uid: secret.metadata.uid.take(),
        ..ObjectMeta::default()
    };
    for value in secret.data.iter_mut().flat_map(|d| d.values_mut()) {
        *value = ByteString(Vec::new());
    }
    for value in secret.string_data.iter_mut().flat_map(|d| d.values_mut()) {
        value.clear();
    }
}

/// Drops an object's managed fields (the bulk of most objects' metadata),
/// which no pass reads: what a service's own resource loses in its cache.
pub fn drop_managed_fields<K: Resource>(object: &mut K) {
    object.meta_mut().managed_fields = None;
}

/// A cached child needs no trimming: it is parsed lean ([`Cached`]).
pub fn parsed_lean<K>(_: &mut K) {}

/// How many changed objects wait for one controller before the router waits
/// for it: the controller drains its triggers into its queue at once, so this
/// is only slack for a burst.
const ROUTE_BUFFER: usize = 256;

/// The started child watches: each service's triggers, and the routing that
/// feeds them (to run for as long as the controllers do).
pub struct Routed {
    pub triggers: HashMap<&'static str, Triggers>,
    pub routing: Vec<BoxFuture<'static, ()>>,
}

/// The senders of one kind's changes, by service name.
type Routes<K> = HashMap<&'static str, mpsc::Sender<K>>;

/// A new route for `service`: the sender goes into `routes`, the receiving
/// end is the service's.
fn add_route<K>(routes: &mut Routes<K>, service: &'static str) -> mpsc::Receiver<K> {
    let (sender, receiver) = mpsc::channel(ROUTE_BUFFER);
    routes.insert(service, sender);
    receiver
}

/// A new route for `service`'s changes of one child kind, as its trigger.
fn add_trigger<K: Send + 'static>(routes: &mut Routes<K>, service: &'static str) -> Trigger<K> {
    Box::pin(add_route(routes, service).map(Ok))
}

/// The label selector of every child Ratchet manages for one of `services`.
pub fn managed_selector(services: &[&str]) -> String {
    format!("{MANAGED_BY}={MANAGER},{NAME} in ({})", services.join(","))
}

/// One kind's shared watch: every object Ratchet manages for one of
/// `services`, its store, and the routing of each change to its service.
fn shared<K, D>(
    ctx: &Context,
    services: &[&'static str],
    routes: Routes<Cached<K, D>>,
) -> (Store<Cached<K, D>>, BoxFuture<'static, ()>)
where
    K: k8s_openapi::Resource<Scope = NamespaceResourceScope> + 'static,
    D: Detail + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    let managed = watcher::Config::default().labels(&managed_selector(services));
    let (store, changes) = reflected(ctx.api::<Cached<K, D>>(), managed, parsed_lean);
    (store, route(changes, routes).boxed())
}

/// Hands each changed object to the controller of the service it belongs to.
async fn route<K, D>(mut changes: Trigger<Cached<K, D>>, mut routes: Routes<Cached<K, D>>) {
    while let Some(change) = changes.next().await {
        let Ok(object) = change else { continue };
        if let Some(route) = object.label(NAME).and_then(|s| routes.get_mut(s)) {
            // A closed route is a controller that has stopped; the rest go on.
            let _ = route.send(object).await;
        }
    }
}

impl Caches {
    /// Starts one watch per child kind for all of `services` (their
    /// [`super::contract::OpenStackService::SERVICE`] names), beside the
    /// services' own stores (`resources`, each listed when its future
    /// resolves), which peers are read from.
    pub fn start(
        ctx: &Context,
        services: &[&'static str],
        resources: peer_directory::Sources,
        resources_listed: Vec<(&'static str, BoxFuture<'static, ()>)>,
    ) -> (Caches, Routed) {
        let (mut jobs, mut deployments, mut stateful_sets, mut daemon_sets) =
            (Routes::new(), Routes::new(), Routes::new(), Routes::new());
        let (mut config_maps, mut kube_services) = (Routes::new(), Routes::new());
        let mut secrets = Routes::new();
        let triggers = services
            .iter()
            .map(|&service| {
                let triggers = Triggers {
                    jobs: add_trigger(&mut jobs, service),
                    deployments: add_trigger(&mut deployments, service),
                    stateful_sets: add_trigger(&mut stateful_sets, service),
                    daemon_sets: add_trigger(&mut daemon_sets, service),
                    config_maps: add_trigger(&mut config_maps, service),
                    services: add_trigger(&mut kube_services, service),
                    secrets: Box::pin(add_route(&mut secrets, service)),
                };
                (service, triggers)
            })
            .collect();
        let (jobs, job_routing) = shared(ctx, services, jobs);
        let (deployments, deployment_routing) = shared(ctx, services, deployments);
        let (stateful_sets, stateful_set_routing) = shared(ctx, services, stateful_sets);
        let (daemon_sets, daemon_set_routing) = shared(ctx, services, daemon_sets);
        let (config_maps, config_map_routing) = shared(ctx, services, config_maps);
        let (services_cache, service_routing) = shared(ctx, services, kube_services);
        let referrers = Arc::new(Mutex::new(Referrers::default()));
        let (secret_keys, secret_routing) = secret_watch(ctx, referrers.clone(), secrets);
        let mut stores = vec![
            ("jobs", listed(&jobs)),
            ("deployments", listed(&deployments)),
            ("statefulsets", listed(&stateful_sets)),
            ("daemonsets", listed(&daemon_sets)),
            ("configmaps", listed(&config_maps)),
            ("services", listed(&services_cache)),
            ("secrets", listed(&secret_keys)),
        ];
        stores.extend(resources_listed);
        let (listed, listing) = Listed::track(stores);
        (
            Caches {
                jobs,
                deployments,
                stateful_sets,
                daemon_sets,
                config_maps,
                services: services_cache,
                secret_keys,
                referrers,
                peers: Directory::new(resources),
                listed,
            },
            Routed {
                triggers,
                routing: vec![
                    job_routing,
                    deployment_routing,
                    stateful_set_routing,
                    daemon_set_routing,
                    config_map_routing,
                    service_routing,
                    secret_routing,
                    listing,
                ],
            },
        )
    }

    /// Records the Secrets `owner`'s resource names now (its model's Secret
    /// references and key Secrets), so their changes wake it.
    pub fn name_secrets(&self, owner: &Owner, model: &ServiceModel) {
        let named = model
            .all_secrets()
            .map(|s| s.source.secret_name.clone())
            .chain(model.key_secrets.iter().map(|k| k.secret_name.clone()))
            .collect();
        let referrer = Referrer {
            service: owner.service,
            namespace: owner.namespace.clone(),
            name: owner.name.clone(),
        };
        self.referrers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .name(&referrer, named);
    }

    /// Resolves once every store holds its initial list: before that, a missing
    /// child may only be unlisted, and deciding on it would flap the status.
    /// Bounded by `timeout`: a store that cannot list (e.g. RBAC without
    /// `statefulsets`) fails with a message naming it instead of stalling
    /// the pass.
    pub async fn ready(&self, timeout: Duration) -> Result<(), String> {
        self.listed.wait(timeout).await
    }
}

/// Which child watches have not listed yet, as every pass may wait on it.
/// kube's `Store::wait_until_ready` wakes only the last of several tasks
/// waiting on it at once (its one-shot channel keeps one waker), so passes
/// that waited on the stores directly each slept until their timeout but
/// one: 30 s for a standby taking over with more than one resource to
/// reconcile. One task waits on each store and publishes here instead.
#[derive(Clone)]
struct Listed(watch::Receiver<Vec<&'static str>>);

impl Listed {
    /// The tracker of `stores` (kind, readiness), and the task that fills it.
    fn track(
        stores: Vec<(&'static str, BoxFuture<'static, ()>)>,
    ) -> (Listed, BoxFuture<'static, ()>) {
        let (sender, receiver) =
            watch::channel(stores.iter().map(|(kind, _)| *kind).collect::<Vec<_>>());
        let sender = Arc::new(sender);
        let tracking = futures::future::join_all(stores.into_iter().map(|(kind, listed)| {
            let sender = sender.clone();
            async move {
                listed.await;
                sender.send_modify(|pending| pending.retain(|k| *k != kind));
            }
        }));
        (Listed(receiver), tracking.map(|_| ()).boxed())
    }

    async fn wait(&self, timeout: Duration) -> Result<(), String> {
        let mut receiver = self.0.clone();
        if tokio::time::timeout(timeout, receiver.wait_for(Vec::is_empty))
            .await
            .is_ok()
        {
            return Ok(());
        }
        let kinds = self.0.borrow().join(", ");
        Err(format!(
            "the watch cache of {kinds} did not fill within {timeout:?}; check that the operator may list and watch {kinds}"
        ))
    }
}

/// Resolves once `store` holds its initial list (or its writer is gone).
fn listed<K>(store: &Store<K>) -> BoxFuture<'static, ()>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    let store = store.clone();
    async move {
        let _ = store.wait_until_ready().await;
    }
    .boxed()
}

/// One cached object by name.
pub fn named<K>(store: &Store<K>, namespace: &str, name: &str) -> Option<Arc<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    store.get(&ObjectRef::new(name).within(namespace))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labelled(name: &str, service: Option<&str>) -> CachedConfigMap {
        let labels = service.map(|s| serde_json::json!({ "app.kubernetes.io/name": s }));
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": name, "labels": labels },
        }))
        .expect("a ConfigMap")
    }

    #[test]
    fn a_slim_secret_keeps_its_key_names_and_no_value_anywhere() {
        let mut secret: Secret = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "db", "namespace": "ns",
                "annotations": { "kubectl.kubernetes.io/last-applied-configuration":
                                 "{\"data\":{\"password\":\"c2VjcmV0\"}}" },
            },
            "data": { "password": "c2VjcmV0" },
            "stringData": { "user": "cinder" },
        }))
        .expect("a Secret");
        secret_key_names(&mut secret);
        assert_eq!(secret.metadata.name.as_deref(), Some("db"));
        assert_eq!(secret.metadata.namespace.as_deref(), Some("ns"));
        assert!(secret.metadata.annotations.is_none());
        let data = secret.data.expect("data");
        assert_eq!(data.keys().collect::<Vec<_>>(), ["password"]);
        assert!(data.values().all(|v| v.0.is_empty()));
        let string_data = secret.string_data.expect("stringData");
        assert_eq!(string_data.keys().collect::<Vec<_>>(), ["user"]);
        assert!(string_data.values().all(String::is_empty));
    }

    /// Passes waiting at once all go on as soon as the stores have listed,
    /// none sleeps until its timeout (virtual time: it only moves when every
    /// task waits, so a waiter nobody wakes would show as the whole timeout).
    #[tokio::test(start_paused = true)]
    async fn every_pass_waiting_for_the_stores_goes_on_once_they_listed() {
        let (first, mut first_writer) = reflector::store::<Secret>();
        let (second, mut second_writer) = reflector::store::<Secret>();
        let (listed, listing) =
            Listed::track(vec![("jobs", listed(&first)), ("secrets", listed(&second))]);
        tokio::spawn(listing);
        let timeout = Duration::from_secs(30);
        let started = tokio::time::Instant::now();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let listed = listed.clone();
                tokio::spawn(async move { listed.wait(timeout).await })
            })
            .collect();
        tokio::task::yield_now().await;
        for writer in [&mut first_writer, &mut second_writer] {
            writer.apply_watcher_event(&watcher::Event::Init);
            writer.apply_watcher_event(&watcher::Event::InitDone);
        }
        for waiter in waiters {
            assert_eq!(waiter.await.expect("a waiter"), Ok(()));
        }
        assert!(started.elapsed() < timeout, "{:?}", started.elapsed());
    }

    #[tokio::test(start_paused = true)]
    async fn a_store_that_never_lists_is_named() {
        let (first, mut first_writer) = reflector::store::<Secret>();
        let (second, _never) = reflector::store::<Secret>();
        let (listed, listing) = Listed::track(vec![
            ("jobs", listed(&first)),
            ("statefulsets", listed(&second)),
        ]);
        tokio::spawn(listing);
        first_writer.apply_watcher_event(&watcher::Event::Init);
        first_writer.apply_watcher_event(&watcher::Event::InitDone);
        let refused = listed
            .wait(Duration::from_secs(2))
            .await
            .expect_err("not listed");
        assert!(
            refused.ends_with("may list and watch statefulsets"),
            "{refused}"
        );
    }

    #[tokio::test]
    async fn each_change_reaches_only_the_controller_of_its_service() {
        let changes = futures::stream::iter([
            labelled("c1", Some("cinder")),
            labelled("g1", Some("glance")),
            labelled("stray", Some("nova")),
            labelled("unlabelled", None),
            labelled("c2", Some("cinder")),
        ])
        .map(Ok);
        let (cinder, cinder_changes) = mpsc::channel(ROUTE_BUFFER);
        let (glance, glance_changes) = mpsc::channel(ROUTE_BUFFER);
        route(
            Box::pin(changes),
            HashMap::from([("cinder", cinder), ("glance", glance)]),
        )
        .await;
        let names = |changes: mpsc::Receiver<CachedConfigMap>| {
            changes
                .map(|c| c.metadata.name.unwrap_or_default())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(cinder_changes).await, ["c1", "c2"]);
        assert_eq!(names(glance_changes).await, ["g1"]);
    }
}
