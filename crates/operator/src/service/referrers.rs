//! Which resources name which Secret, so that a Secret that appears, goes or
//! changes its keys wakes exactly the resources that name it, at once.
//!
//! Without it a resource created before its Secrets (GitOps tools apply in any
//! order) sat in `SecretMissing` until its failure back-off ran out, minutes
//! after the Secrets arrived. A pass records what its resource names
//! ([`Referrers::name`]); the Secret watch compares each change with what its
//! store held before it ([`changed_by`]) and wakes the resources naming the
//! Secrets that changed. Only key names count: they are all a pass reads of a
//! Secret (values reach the pods directly, which read them when they start).

use std::collections::{BTreeSet, HashMap, HashSet};

use k8s_openapi::api::core::v1::Secret;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::Event;

/// A resource of a service, by namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Referrer {
    pub service: &'static str,
    pub namespace: String,
    pub name: String,
}

/// The index: Secret (namespace, name) → the resources naming it, and back.
#[derive(Debug, Default)]
pub struct Referrers {
    by_secret: HashMap<(String, String), BTreeSet<Referrer>>,
    by_resource: HashMap<Referrer, BTreeSet<String>>,
}

impl Referrers {
    /// Records the Secrets (of its own namespace) `referrer` names now,
    /// replacing what it named before.
    pub fn name(&mut self, referrer: &Referrer, secrets: BTreeSet<String>) {
        if self.by_resource.get(referrer) == Some(&secrets) {
            return;
        }
        self.forget(referrer);
        for secret in &secrets {
            self.by_secret
                .entry((referrer.namespace.clone(), secret.clone()))
                .or_default()
                .insert(referrer.clone());
        }
        if !secrets.is_empty() {
            self.by_resource.insert(referrer.clone(), secrets);
        }
    }

    /// Drops a resource that is gone.
    pub fn forget(&mut self, referrer: &Referrer) {
        for secret in self.by_resource.remove(referrer).into_iter().flatten() {
            let key = (referrer.namespace.clone(), secret);
            if let Some(referrers) = self.by_secret.get_mut(&key) {
                referrers.remove(referrer);
                if referrers.is_empty() {
                    self.by_secret.remove(&key);
                }
            }
        }
    }

    /// The resources naming Secret `name` in `namespace`.
    pub fn of(&self, namespace: &str, name: &str) -> Vec<Referrer> {
        self.by_secret
            .get(&(namespace.to_string(), name.to_string()))
            .map(|r| r.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// The key names a Secret has (`data` and `stringData`).
fn key_names(secret: &Secret) -> BTreeSet<&str> {
    let data = secret.data.iter().flat_map(|d| d.keys());
    let string_data = secret.string_data.iter().flat_map(|d| d.keys());
    data.chain(string_data).map(String::as_str).collect()
}

/// The Secrets a watch event changes for a pass, judged against `store` as it
/// was before the event: one that appeared, went, or has other key names.
/// A re-list (after a watch broke) also tells which Secrets went unseen while
/// the watch was down: `relisted` collects the ones it names, and when it is
/// done, those the store held but the list lacked have gone.
pub fn changed_by(
    store: &Store<Secret>,
    event: &Event<Secret>,
    relisted: &mut HashSet<ObjectRef<Secret>>,
) -> Vec<ObjectRef<Secret>> {
    match event {
        Event::Apply(secret) | Event::InitApply(secret) => {
            let reference = ObjectRef::from_obj(secret);
            if matches!(event, Event::InitApply(_)) {
                relisted.insert(reference.clone());
            }
            let before = store.get(&reference);
            let same = before.is_some_and(|b| key_names(&b) == key_names(secret));
            if same { Vec::new() } else { vec![reference] }
        }
        Event::Delete(secret) => vec![ObjectRef::from_obj(secret)],
        Event::Init => {
            relisted.clear();
            Vec::new()
        }
        Event::InitDone => {
            let gone = store
                .state()
                .iter()
                .map(|s| ObjectRef::from_obj(s.as_ref()))
                .filter(|r| !relisted.contains(r))
                .collect();
            relisted.clear();
            gone
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::reflector;

    fn referrer(name: &str) -> Referrer {
        Referrer {
            service: "cinder",
            namespace: "ns".into(),
            name: name.into(),
        }
    }

    fn names(secrets: &[&str]) -> BTreeSet<String> {
        secrets.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_secret_wakes_those_that_name_it_now() {
        let mut index = Referrers::default();
        index.name(&referrer("a"), names(&["db", "bus"]));
        index.name(&referrer("b"), names(&["db"]));
        assert_eq!(index.of("ns", "db"), [referrer("a"), referrer("b")]);
        assert_eq!(index.of("other", "db"), []);
        index.name(&referrer("a"), names(&["bus"]));
        assert_eq!(index.of("ns", "db"), [referrer("b")], "a named it before");
        index.forget(&referrer("b"));
        assert_eq!(index.of("ns", "db"), []);
        assert!(!index.by_secret.contains_key(&("ns".into(), "db".into())));
        index.forget(&referrer("a"));
        assert!(index.by_secret.is_empty() && index.by_resource.is_empty());
    }

    fn secret(name: &str, keys: &[&str]) -> Secret {
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": name, "namespace": "ns" },
            "data": keys.iter().map(|k| (k.to_string(), "")).collect::<HashMap<_, _>>(),
        }))
        .expect("a Secret")
    }

    fn changed(
        store: &Store<Secret>,
        writer: &mut reflector::store::Writer<Secret>,
        relisted: &mut HashSet<ObjectRef<Secret>>,
        event: Event<Secret>,
    ) -> Vec<String> {
        let changed = changed_by(store, &event, relisted);
        writer.apply_watcher_event(&event);
        changed.into_iter().map(|r| r.name).collect()
    }

    #[test]
    fn only_appearing_going_or_other_keys_count_as_a_change() {
        let (store, mut writer) = reflector::store::<Secret>();
        let mut relisted = HashSet::new();
        let mut step = |event| changed(&store, &mut writer, &mut relisted, event);
        assert!(step(Event::Init).is_empty());
        assert_eq!(step(Event::InitApply(secret("db", &["password"]))), ["db"]);
        assert_eq!(step(Event::InitApply(secret("old", &["key"]))), ["old"]);
        assert!(step(Event::InitDone).is_empty(), "both listed");
        assert!(
            step(Event::Apply(secret("db", &["password"]))).is_empty(),
            "a new value, the same keys"
        );
        assert_eq!(
            step(Event::Apply(secret("db", &["password", "user"]))),
            ["db"]
        );
        assert_eq!(step(Event::Apply(secret("bus", &["url"]))), ["bus"]);
        assert_eq!(step(Event::Delete(secret("bus", &["url"]))), ["bus"]);
        // The watch broke; "old" was deleted meanwhile, "db" unchanged.
        assert!(step(Event::Init).is_empty());
        assert!(step(Event::InitApply(secret("db", &["password", "user"]))).is_empty());
        assert_eq!(step(Event::InitDone), ["old"], "gone while unwatched");
    }
}
