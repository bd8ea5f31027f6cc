//! A witness of upgrades under faults: from watches of its own (not the
//! operator's), it records each resource's phases in order and every UID each
//! Job name had, then says what broke the rules: a phase out of order, a phase
//! Job created twice, an event published other than once.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::events::v1::Event;
use kube::api::ListParams;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use kube::{Api, Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use ratchet_phase_machine::Profile;
use ratchet_phase_machine::vocabulary::event;

use crate::error::Result;
use crate::service::caches::watch_backoff;

/// The resource's `status.upgradePhase` ("" in steady state), read the way
/// every service stores it.
pub fn phase_of<K: Serialize>(object: &K) -> String {
    serde_json::to_value(object)
        .ok()
        .and_then(|v| v["status"]["upgradePhase"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Installed at `release`, no upgrade running, Ready for its generation, and
/// every event of its last transition published (none pending in its
/// status); for any service.
pub fn settled<K: Serialize>(release: &str) -> impl Fn(&K) -> bool + use<K> {
    let release = release.to_string();
    move |object: &K| {
        let Ok(v) = serde_json::to_value(object) else {
            return false;
        };
        let status = &v["status"];
        // Ready and rolled out: the second roll is part of a settled upgrade.
        let ready = ["Ready", "DeploymentsReady"].iter().all(|kind| {
            status["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == *kind && c["status"] == "True")
            })
        });
        status["installedRelease"] == release.as_str()
            && status["upgradePhase"]
                .as_str()
                .unwrap_or_default()
                .is_empty()
            && status["observedGeneration"] == v["metadata"]["generation"]
            && status["pendingEvents"]
                .as_array()
                .is_none_or(|pending| pending.is_empty())
            && ready
    }
}

/// A clean upgrade: phases in order, phase Job keys, events published once.
pub type Expected = (Vec<&'static str>, Vec<String>, Vec<&'static str>);

/// What a clean upgrade of a service with `profile` shows: its phases in
/// order, its phase Jobs (each created once), and the events each published
/// once (initiation, each phase's completion, the check's report when it
/// exits 0, completion), for a resource with these Job `groups`.
pub fn expected_upgrade(profile: &Profile, groups: &[String]) -> Expected {
    let phases = profile.phases.iter().map(|p| p.name).collect();
    let runs = profile.phase_job_runs(groups);
    let reports_check = runs.iter().any(|run| run.template.reports_check());
    let events = std::iter::once(event::UPGRADE_INITIATED)
        .chain(profile.phases.iter().filter_map(|p| p.complete_event))
        .chain(reports_check.then_some(event::UPGRADE_CHECK_COMPLETED))
        .chain(std::iter::once(event::UPGRADE_COMPLETE))
        .collect();
    (phases, runs.iter().map(|run| run.key()).collect(), events)
}

/// The state of the workloads and pods in `namespace`, one line each, for a
/// failure message: what a person would look at with kubectl.
pub async fn describe_workloads(client: &Client, namespace: &str) -> String {
    use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
    use k8s_openapi::api::core::v1::Pod;
    let mut lines = Vec::new();
    let params = ListParams::default();
    if let Ok(list) = Api::<Deployment>::namespaced(client.clone(), namespace)
        .list(&params)
        .await
    {
        for d in list.items {
            let s = d.status.unwrap_or_default();
            lines.push(format!(
                "deployment {}: generation {:?} observed {:?} replicas {:?} updated {:?} ready {:?} available {:?}",
                d.metadata.name.unwrap_or_default(),
                d.metadata.generation,
                s.observed_generation,
                s.replicas,
                s.updated_replicas,
                s.ready_replicas,
                s.available_replicas
            ));
        }
    }
    if let Ok(list) = Api::<StatefulSet>::namespaced(client.clone(), namespace)
        .list(&params)
        .await
    {
        for set in list.items {
            let s = set.status.unwrap_or_default();
            lines.push(format!(
                "statefulset {}: generation {:?} observed {:?} replicas {} updated {:?} ready {:?} available {:?} revision {:?} → {:?}",
                set.metadata.name.unwrap_or_default(),
                set.metadata.generation,
                s.observed_generation,
                s.replicas,
                s.updated_replicas,
                s.ready_replicas,
                s.available_replicas,
                s.current_revision,
                s.update_revision
            ));
        }
    }
    if let Ok(list) = Api::<Pod>::namespaced(client.clone(), namespace)
        .list(&params)
        .await
    {
        for p in list.items {
            let s = p.status.unwrap_or_default();
            let ready = s
                .conditions
                .unwrap_or_default()
                .into_iter()
                .any(|c| c.type_ == "Ready" && c.status == "True");
            lines.push(format!(
                "pod {}: node {:?} phase {:?} ready {ready} deleting {}",
                p.metadata.name.unwrap_or_default(),
                p.spec.and_then(|s| s.node_name),
                s.phase,
                p.metadata.deletion_timestamp.is_some()
            ));
        }
    }
    lines.join("\n")
}

/// What the witness saw.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    /// Per resource name, each distinct phase in the order seen.
    pub phases: BTreeMap<String, Vec<String>>,
    /// Per Job name, every UID it had.
    pub job_uids: BTreeMap<String, BTreeSet<String>>,
}

/// Watches resources of kind `K` and Jobs in one namespace until dropped.
pub struct Witness {
    seen: Arc<Mutex<Seen>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Witness {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Witness {
    pub fn start<K>(client: &Client, namespace: &str) -> Witness
    where
        K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
            + Clone
            + DeserializeOwned
            + Debug
            + Serialize
            + Send
            + Sync
            + 'static,
    {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let resources: Api<K> = Api::namespaced(client.clone(), namespace);
        let jobs: Api<Job> = Api::namespaced(client.clone(), namespace);
        let sink = seen.clone();
        let phases = tokio::spawn(async move {
            let mut stream = watcher::watcher(resources, watcher::Config::default())
                .backoff(watch_backoff())
                .applied_objects()
                .boxed();
            while let Some(item) = stream.next().await {
                let Ok(object) = item else { continue };
                let name = object.meta().name.clone().unwrap_or_default();
                let phase = phase_of(&object);
                let mut seen = sink.lock().unwrap_or_else(|p| p.into_inner());
                let list = seen.phases.entry(name).or_default();
                if list.last() != Some(&phase) {
                    list.push(phase);
                }
            }
        });
        let sink = seen.clone();
        let job_uids = tokio::spawn(async move {
            let mut stream = watcher::watcher(jobs, watcher::Config::default())
                .backoff(watch_backoff())
                .applied_objects()
                .boxed();
            while let Some(item) = stream.next().await {
                let Ok(job) = item else { continue };
                let (Some(name), Some(uid)) = (job.metadata.name, job.metadata.uid) else {
                    continue;
                };
                let mut seen = sink.lock().unwrap_or_else(|p| p.into_inner());
                seen.job_uids.entry(name).or_default().insert(uid);
            }
        });
        Witness {
            seen,
            tasks: vec![phases, job_uids],
        }
    }

    pub fn seen(&self) -> Seen {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// What broke the rules for resource `name`, whose upgrade runs `phases` in
/// this order: the phases it was seen in must follow that order (a pass may
/// pass a phase whose work is already done, so one may be missing), Jobs
/// whose name starts with `name-` exist once, and each of `events` was
/// published exactly once (`counts`: events by reason about it).
pub fn violations(
    seen: &Seen,
    name: &str,
    (phases, jobs, events): &Expected,
    counts: &BTreeMap<String, usize>,
) -> Vec<String> {
    let mut out = Vec::new();
    let observed: Vec<&str> = seen
        .phases
        .get(name)
        .map(|p| {
            p.iter()
                .map(String::as_str)
                .filter(|p| !p.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let order: Vec<Option<usize>> = observed
        .iter()
        .map(|p| phases.iter().position(|x| x == p))
        .collect();
    let in_order = order.iter().all(Option::is_some) && order.windows(2).all(|w| w[0] < w[1]);
    if !in_order {
        out.push(format!(
            "{name}: phases {observed:?}, not in the order {phases:?}"
        ));
    }
    for suffix in jobs {
        let job = format!("{name}-{suffix}");
        let created = seen.job_uids.get(&job).map_or(0, BTreeSet::len);
        if created > 1 {
            out.push(format!("Job {job} was created {created} times"));
        }
    }
    for reason in events {
        let count = counts.get(*reason).copied().unwrap_or(0);
        if count != 1 {
            out.push(format!("{name}: event {reason} published {count} times"));
        }
    }
    out
}

/// Events about resource `name` in `namespace`, counted by reason.
pub async fn event_counts(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<BTreeMap<String, usize>> {
    let events = Api::<Event>::namespaced(client.clone(), namespace)
        .list(&ListParams::default())
        .await?;
    let mut counts = BTreeMap::new();
    for event in events.items {
        let about = event.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name);
        if let (true, Some(reason)) = (about, event.reason) {
            // An EventSeries counts repeats of one event object.
            let repeats = event.series.map(|s| s.count.max(1) as usize).unwrap_or(1);
            *counts.entry(reason).or_insert(0) += repeats;
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(phases: &[&str], jobs: &[(&str, &[&str])]) -> Seen {
        Seen {
            phases: BTreeMap::from([(
                "c".to_string(),
                phases.iter().map(|p| p.to_string()).collect(),
            )]),
            job_uids: jobs
                .iter()
                .map(|(n, u)| (n.to_string(), u.iter().map(|u| u.to_string()).collect()))
                .collect(),
        }
    }

    const PHASES: &[&str] = &["Expanding", "Migrating", "RollingUpdate", "Contracting"];

    #[test]
    fn a_clean_upgrade_has_no_violations() {
        let s = seen(
            &[
                "",
                "Expanding",
                "Migrating",
                "RollingUpdate",
                "Contracting",
                "",
            ],
            // The steady-state sync runs again after an upgrade: not a phase Job.
            &[("c-db-expand", &["u1"]), ("c-db-sync", &["s1", "s2"])],
        );
        let counts = BTreeMap::from([("ExpandComplete".to_string(), 1)]);
        let expected = (
            PHASES.to_vec(),
            vec!["db-expand".to_string()],
            vec!["ExpandComplete"],
        );
        assert!(violations(&s, "c", &expected, &counts).is_empty());
    }

    #[test]
    fn reordered_phases_doubled_jobs_and_lost_or_doubled_events_are_named() {
        let s = seen(
            &["", "Migrating", "Expanding", ""],
            &[
                ("c-db-expand", &["u1", "u2"]),
                ("other-db-expand", &["a", "b"]),
            ],
        );
        let counts = BTreeMap::from([("ExpandComplete".to_string(), 2)]);
        let expected = (
            PHASES.to_vec(),
            vec!["db-expand".to_string()],
            vec!["ExpandComplete", "UpgradeComplete"],
        );
        let v = violations(&s, "c", &expected, &counts);
        assert_eq!(v.len(), 4, "{v:?}");
        assert!(v[0].contains("not in the order"));
        assert!(v[1].contains("c-db-expand was created 2 times"));
        assert!(v[2].contains("ExpandComplete published 2 times"));
        assert!(v[3].contains("UpgradeComplete published 0 times"));
    }
}
