//! Where a pass finds its peers ([`Directory`]): the operator's own watch
//! caches of the peers' resources, no request; and what wakes their readers
//! ([`Tap`]): a peer appearing, going or changing its identity.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use ratchet_api::identity::IdentitySpec;
use tokio::sync::{broadcast, watch};

use super::contract::OpenStackService;
use super::peers::{Peer, Peers};

/// A change of a peer: its service and namespace, whose readers wake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub service: &'static str,
    pub namespace: String,
}

type Source = Box<dyn Fn(&str) -> Vec<Peer> + Send + Sync>;

/// Every registered service's resources, read from the stores their
/// controllers' watches fill, and the changes that wake their readers.
#[derive(Clone)]
pub struct Directory {
    sources: Arc<HashMap<&'static str, Source>>,
    changes: broadcast::Sender<Change>,
}

/// How many peer changes a slow reader may fall behind before it wakes all
/// its resources instead (see [`Directory::subscribe`]).
const CHANGE_BUFFER: usize = 256;

/// The directory's sources, collected before the controllers start, and the
/// channel their watches announce changes on.
pub struct Sources {
    sources: HashMap<&'static str, Source>,
    changes: broadcast::Sender<Change>,
}

impl Default for Sources {
    fn default() -> Sources {
        Sources {
            sources: HashMap::new(),
            changes: broadcast::channel(CHANGE_BUFFER).0,
        }
    }
}

impl Sources {
    /// What `S`'s watch calls with each event: announces the namespaces whose
    /// peers it changed. The future resolves once the watch first listed.
    /// (Not `Store::wait_until_ready`: kube's controller already waits on the
    /// store, and the store wakes only one of two waiters.)
    pub fn tap<S: OpenStackService>(
        &self,
    ) -> (
        impl FnMut(&watcher::Event<S>) + Send + 'static,
        BoxFuture<'static, ()>,
    ) {
        let mut tap = Tap::default();
        let changes = self.changes.clone();
        let (listed, mut listing) = watch::channel(false);
        let on_event = move |event: &watcher::Event<S>| {
            if matches!(event, watcher::Event::InitDone) {
                listed.send_replace(true);
            }
            for namespace in tap.observe(event) {
                // No receiver: no service reads it.
                let _ = changes.send(Change {
                    service: S::SERVICE,
                    namespace,
                });
            }
        };
        let first_listed = async move {
            let _ = listing.wait_for(|listed| *listed).await;
        };
        (on_event, first_listed.boxed())
    }

    /// Adds the resources of `S` from its controller's store.
    pub fn add<S: OpenStackService>(&mut self, store: Store<S>) {
        let source = move |namespace: &str| {
            store
                .state()
                .iter()
                .filter(|object| object.meta().namespace.as_deref() == Some(namespace))
                .filter_map(|object| {
                    Some(Peer {
                        service: S::SERVICE,
                        name: object.meta().name.clone()?,
                        identity: object.identity().cloned(),
                    })
                })
                .collect()
        };
        self.sources.insert(S::SERVICE, Box::new(source));
    }
}

impl Directory {
    pub fn new(sources: Sources) -> Directory {
        Directory {
            sources: Arc::new(sources.sources),
            changes: sources.changes,
        }
    }

    /// The resources of `services` in `namespace`.
    pub fn peers(&self, namespace: &str, services: &[&str]) -> Peers {
        Peers::new(
            services
                .iter()
                .filter_map(|service| self.sources.get(service))
                .flat_map(|source| source(namespace))
                .collect(),
        )
    }

    /// The changes from now on; a receiver that lags gets `Lagged` and should
    /// wake every resource it serves.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }
}

/// What a reader sees of a resource: a change of it wakes the readers.
type Seen = Option<IdentitySpec>;

/// Follows one service's watch events and tells which namespaces' peers
/// changed: a resource created or deleted, or its identity changed. Status
/// updates change nothing a peer reads, so they wake no one.
#[derive(Default)]
pub struct Tap {
    seen: BTreeMap<(String, String), Seen>,
    /// The relist in progress (between `Init` and `InitDone`).
    relisting: Option<BTreeMap<(String, String), Seen>>,
}

impl Tap {
    /// The namespaces whose peers `event` changed.
    pub fn observe<S: OpenStackService>(&mut self, event: &watcher::Event<S>) -> Vec<String> {
        match event {
            watcher::Event::Init => {
                self.relisting = Some(BTreeMap::new());
                Vec::new()
            }
            watcher::Event::InitApply(object) => {
                if let (Some(relisting), Some(key)) = (self.relisting.as_mut(), key(object)) {
                    relisting.insert(key, object.identity().cloned());
                }
                Vec::new()
            }
            watcher::Event::InitDone => {
                let listed = self.relisting.take().unwrap_or_default();
                let old = std::mem::replace(&mut self.seen, listed);
                let mut changed: Vec<String> = old
                    .iter()
                    .filter(|(key, seen)| self.seen.get(*key) != Some(*seen))
                    .chain(
                        self.seen
                            .iter()
                            .filter(|(key, seen)| old.get(*key) != Some(*seen)),
                    )
                    .map(|((namespace, _), _)| namespace.clone())
                    .collect();
                changed.sort();
                changed.dedup();
                changed
            }
            watcher::Event::Apply(object) => key(object)
                .filter(|key| {
                    let seen = object.identity().cloned();
                    self.seen.insert(key.clone(), seen.clone()) != Some(seen)
                })
                .map(|(namespace, _)| namespace)
                .into_iter()
                .collect(),
            watcher::Event::Delete(object) => key(object)
                .filter(|key| self.seen.remove(key).is_some())
                .map(|(namespace, _)| namespace)
                .into_iter()
                .collect(),
        }
    }
}

fn key<S: OpenStackService>(object: &S) -> Option<(String, String)> {
    Some((
        object.meta().namespace.clone()?,
        object.meta().name.clone()?,
    ))
}
