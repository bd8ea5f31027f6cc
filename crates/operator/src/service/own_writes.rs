//! A controller's caches lag behind its own writes: the watch event of an
//! object it just wrote may arrive after the next pass has begun. A pass that
//! decided on the older cached version would repeat a transition and its
//! events (the resource), or take a workload it has just moved for one still
//! at rest and skip re-applying it (a child: an abort that found the roll's
//! Deployment as it was before the roll would report it Ready, unreverted).
//! So each pass reads, per object, the newer of the cached version and the
//! one its own last write returned.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::Resource;
use kube::runtime::reflector::ObjectRef;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::cached::{CachedDaemonSet, CachedDeployment, CachedJob, CachedStatefulSet};
use crate::error::Result;

/// The last version of each object of one kind that this controller wrote.
pub struct OwnWrites<T> {
    last: Mutex<HashMap<String, Arc<T>>>,
}

impl<T> Default for OwnWrites<T> {
    fn default() -> Self {
        OwnWrites {
            last: Mutex::new(HashMap::new()),
        }
    }
}

impl<T: Resource<DynamicType = ()>> OwnWrites<T> {
    /// The newer of the cached object and the one last written; an entry the
    /// cache has caught up with is dropped.
    pub fn freshest(&self, cached: Arc<T>) -> Arc<T> {
        let key = ObjectRef::from_obj(cached.as_ref()).to_string();
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        match last.get(&key) {
            // Only a write to this very object (a predecessor's of the same
            // name is another one).
            Some(ours)
                if ours.meta().uid == cached.meta().uid
                    && newer(ours.as_ref(), cached.as_ref()) =>
            {
                ours.clone()
            }
            Some(_) => {
                last.remove(&key);
                cached
            }
            None => cached,
        }
    }

    pub fn remember(&self, object: T) {
        let key = ObjectRef::from_obj(&object).to_string();
        self.last
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, Arc::new(object));
    }

    /// Forgets a deleted object: a write remembered from before its deletion
    /// must not stand in for a successor of the same name.
    pub fn forget(&self, namespace: &str, name: &str) {
        let key = ObjectRef::<T>::new(name).within(namespace).to_string();
        self.last
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
    }
}

/// The children a service's controller last wrote, in their cached form: a
/// Job it created (a stale cache would show the one it replaced, whose other
/// hash would have it replaced again), the workloads it applied.
#[derive(Default)]
pub struct ChildWrites {
    pub jobs: OwnWrites<CachedJob>,
    pub deployments: OwnWrites<CachedDeployment>,
    pub stateful_sets: OwnWrites<CachedStatefulSet>,
    pub daemon_sets: OwnWrites<CachedDaemonSet>,
}

impl ChildWrites {
    pub fn forget_workload(&self, namespace: &str, name: &str) {
        self.deployments.forget(namespace, name);
        self.stateful_sets.forget(namespace, name);
        self.daemon_sets.forget(namespace, name);
    }
}

/// An object as the server returned it, read into its cached form.
pub fn cached_form<K: Serialize, C: DeserializeOwned>(written: &K) -> Result<C> {
    Ok(serde_json::from_value(serde_json::to_value(written)?)?)
}

/// Whether `ours` is a later version of the object than `cached`. Since
/// Kubernetes 1.35 (KEP-5504) the resource versions of one resource are
/// comparable as integers of any size: more digits is later, equally many
/// compare digit by digit. A version that is not such an integer is not
/// comparable, and the cache is trusted.
fn newer<T: Resource>(ours: &T, cached: &T) -> bool {
    let version = |o: &T| o.meta().resource_version.clone().unwrap_or_default();
    let (ours, cached) = (version(ours), version(cached));
    let comparable =
        |v: &str| !v.is_empty() && !v.starts_with('0') && v.bytes().all(|b| b.is_ascii_digit());
    comparable(&ours)
        && comparable(&cached)
        && (ours.len(), ours.as_str()) > (cached.len(), cached.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn at(version: Option<&str>) -> ConfigMap {
        let mut c = ConfigMap::default();
        c.metadata.resource_version = version.map(str::to_owned);
        c
    }

    #[test]
    fn a_write_is_newer_than_a_cache_that_has_not_seen_it() {
        assert!(newer(&at(Some("120")), &at(Some("99"))));
        assert!(!newer(&at(Some("120")), &at(Some("120"))), "caught up");
        assert!(!newer(&at(Some("120")), &at(Some("121"))), "moved on");
        assert!(
            newer(&at(Some("1000")), &at(Some("999"))),
            "by length first"
        );
        let huge = "18446744073709551616"; // u64::MAX + 1
        assert!(newer(&at(Some(huge)), &at(Some("18446744073709551615"))));
    }

    #[test]
    fn unreadable_versions_trust_the_cache() {
        assert!(!newer(&at(Some("abc")), &at(Some("1"))));
        assert!(!newer(&at(None), &at(Some("1"))));
        assert!(!newer(&at(Some("2")), &at(None)));
        assert!(!newer(&at(Some("012")), &at(Some("11"))), "leading zero");
        assert!(!newer(&at(Some("-5")), &at(Some("1"))));
    }

    fn deployment(version: &str, image: &str) -> CachedDeployment {
        let written: Deployment = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "c-api", "namespace": "ns", "resourceVersion": version },
            "spec": {
                "selector": {},
                "template": { "spec": { "containers": [{ "name": "api", "image": image }] } }
            }
        }))
        .expect("a valid Deployment");
        cached_form(&written).expect("its cached form")
    }

    #[test]
    fn a_write_to_a_predecessor_of_the_same_name_is_not_read() {
        let writes = OwnWrites::default();
        let mut predecessor = deployment("20", "predecessor's");
        predecessor.metadata.uid = Some("before".into());
        writes.remember(predecessor);
        let mut successor = deployment("10", "successor's");
        successor.metadata.uid = Some("now".into());
        assert_eq!(
            image(&writes.freshest(Arc::new(successor))),
            Some("successor's")
        );
    }

    fn image(d: &CachedDeployment) -> Option<&str> {
        d.detail.image.as_deref()
    }

    #[test]
    fn a_stale_cache_yields_to_the_write_until_it_catches_up() {
        let writes = OwnWrites::default();
        writes.remember(deployment("20", "new"));
        let stale = Arc::new(deployment("10", "old"));
        assert_eq!(image(&writes.freshest(stale.clone())), Some("new"));
        let caught_up = Arc::new(deployment("21", "new, rolled"));
        assert_eq!(image(&writes.freshest(caught_up)), Some("new, rolled"));
        assert_eq!(
            image(&writes.freshest(stale)),
            Some("old"),
            "the write is dropped once the cache has passed it"
        );
    }

    #[test]
    fn a_forgotten_write_does_not_outlive_its_object() {
        let writes = OwnWrites::default();
        writes.remember(deployment("20", "new"));
        writes.forget("ns", "c-api");
        let successor = Arc::new(deployment("15", "successor"));
        assert_eq!(image(&writes.freshest(successor)), Some("successor"));
    }
}
