//! What a StatefulSet or DaemonSet roll lacks next to a Deployment's, made up
//! from what the cluster shows.
//!
//! - A progress deadline. A Deployment reports it (`Progressing`:
//!   `ProgressDeadlineExceeded`); for Ironic's conductors Ratchet judges it: a
//!   roll moves when Ratchet applies a new template or one of the set's pods is
//!   created or changes readiness. Nothing moving for the deadline is a stall.
//!   Nothing wakes the controller when nothing moves, so an unfinished roll
//!   asks to be looked at again when its deadline would pass.
//!   A DaemonSet reports no deadline either; its roll is judged the same way.
//! - Rolling back. A pod of another revision that never got ready is never
//!   replaced by the StatefulSet controller, even after the template is
//!   reverted (Kubernetes' "forced rollback"): an abort during a stuck
//!   conductor roll would wait for ever. Such pods are named for deletion.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::ListParams;

use super::cached::{Cached, WorkloadDetail};
use crate::context::Context;
use crate::error::Result;

/// The verdict on an unfinished roll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stall {
    /// No progress for longer than the deadline.
    Stalled,
    /// Still within the deadline: look again after this long.
    CheckIn(Duration),
}

/// When the roll last moved: Ratchet's last change of the set (its field
/// manager's time), or a pod of the set created or turning (un)ready.
pub fn last_progress<K>(set: &Cached<K, WorkloadDetail>, pods: &[Pod]) -> Option<Timestamp> {
    let applied = set.applied_at.iter().map(|t| t.0);
    let pods = pods.iter().flat_map(|pod| {
        let created = pod.metadata.creation_timestamp.as_ref().map(|t| t.0);
        let readiness = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .filter(|c| c.type_ == "Ready")
            .filter_map(|c| c.last_transition_time.as_ref().map(|t| t.0));
        created.into_iter().chain(readiness)
    });
    applied
        .chain(pods)
        .chain(set.metadata.creation_timestamp.as_ref().map(|t| t.0))
        .max()
}

/// Stalled once `deadline` has passed since `last` without progress.
pub fn judge(last: Timestamp, now: Timestamp, deadline: Duration) -> Stall {
    let quiet = now
        .duration_since(last)
        .try_into()
        .unwrap_or(Duration::ZERO);
    match deadline.checked_sub(quiet) {
        Some(left) if !left.is_zero() => Stall::CheckIn(left),
        _ => Stall::Stalled,
    }
}

/// Pods the set will not replace by itself: not ready and not of the revision
/// it rolls to (once its controller has seen the current template). Only a
/// StatefulSet reports that revision: a DaemonSet replaces such pods itself.
pub fn stuck_pods<K>(set: &Cached<K, WorkloadDetail>, pods: &[Pod]) -> Vec<String> {
    let status = set.detail.status.as_ref();
    let seen = status.and_then(|s| s.observed_generation) >= set.metadata.generation;
    let update_revision = status.and_then(|s| s.update_revision.as_deref());
    let Some(update_revision) = update_revision.filter(|_| seen) else {
        return Vec::new();
    };
    pods.iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter(|pod| {
            pod.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(REVISION_LABEL))
                .is_some_and(|revision| revision != update_revision)
        })
        .filter(|pod| !is_ready(pod))
        .filter_map(|pod| pod.metadata.name.clone())
        .collect()
}

/// The label the StatefulSet controller puts on each pod: its revision.
const REVISION_LABEL: &str = "controller-revision-hash";

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The set's pods among `pods`: those carrying every label of its selector.
/// A set without a selector has none: an empty selector would match every
/// pod, each a candidate for deletion as stuck.
fn pods_of<'a, K>(set: &Cached<K, WorkloadDetail>, pods: &'a [Pod]) -> Vec<&'a Pod> {
    let selector = &set.detail.selector;
    if selector.iter().next().is_none() {
        return Vec::new();
    }
    pods.iter()
        .filter(|pod| {
            let labels = pod.metadata.labels.as_ref();
            selector
                .iter()
                .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
        })
        .collect()
}

/// The pods of one resource's workloads (`selector`: its instance labels),
/// read once a pass for every rolling set, however many roll side by side.
pub async fn resource_pods(ctx: &Context, namespace: &str, selector: &str) -> Result<Vec<Pod>> {
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    // The watch cache is recent enough to tell minutes of silence.
    Ok(api
        .list(&ListParams::default().labels(selector).match_any())
        .await?
        .items)
}

/// How the set's unfinished roll stands, and the pods that stand in its way,
/// judged from the resource's pods.
pub fn judge_set<K>(
    set: &Cached<K, WorkloadDetail>,
    pods: &[Pod],
    deadline: Duration,
) -> (Stall, Vec<String>) {
    let own: Vec<Pod> = pods_of(set, pods).into_iter().cloned().collect();
    let stall = match last_progress(set, &own) {
        Some(last) => judge(last, Timestamp::now(), deadline),
        None => Stall::CheckIn(deadline),
    };
    (stall, stuck_pods(set, &own))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::cached::CachedStatefulSet;
    use serde_json::json;

    fn at(seconds: i64) -> String {
        Timestamp::from_second(1_800_000_000 + seconds)
            .expect("a time")
            .to_string()
    }

    fn set(applied_at: i64) -> CachedStatefulSet {
        serde_json::from_value(json!({
            "metadata": {
                "name": "i-conductor",
                "creationTimestamp": at(0),
                "managedFields": [
                    { "manager": "ratchet", "operation": "Apply", "time": at(applied_at) },
                    { "manager": "kube-controller-manager", "operation": "Update", "time": at(applied_at + 500) },
                ],
            },
        }))
        .expect("a StatefulSet")
    }

    fn pod(created: i64, ready_changed: Option<i64>) -> Pod {
        let conditions: Vec<_> = ready_changed
            .map(|t| json!({ "type": "Ready", "status": "True", "lastTransitionTime": at(t) }))
            .into_iter()
            .collect();
        serde_json::from_value(json!({
            "metadata": { "name": "p", "creationTimestamp": at(created) },
            "status": { "conditions": conditions },
        }))
        .expect("a Pod")
    }

    #[test]
    fn progress_is_ratchets_last_apply_or_the_newest_pod_change() {
        let parse = |s: String| s.parse::<Timestamp>().expect("a time");
        assert_eq!(last_progress(&set(100), &[]), Some(parse(at(100))));
        assert_eq!(
            last_progress(&set(100), &[pod(50, Some(60)), pod(120, None)]),
            Some(parse(at(120))),
            "a pod created after the apply"
        );
        assert_eq!(
            last_progress(&set(100), &[pod(120, Some(150))]),
            Some(parse(at(150))),
            "a pod turning ready"
        );
        assert_eq!(
            last_progress(&set(100), &[pod(10, Some(20))]),
            Some(parse(at(100))),
            "old pods do not count; other managers' writes (status) do not either"
        );
    }

    fn revision_pod(name: &str, revision: &str, ready: bool) -> Pod {
        serde_json::from_value(json!({
            "metadata": { "name": name, "labels": { "controller-revision-hash": revision } },
            "status": { "conditions": [{ "type": "Ready", "status": if ready { "True" } else { "False" } }] },
        }))
        .expect("a Pod")
    }

    fn rolling_to(revision: &str, generation: i64, observed: i64) -> CachedStatefulSet {
        with_spec(revision, generation, observed, None)
    }

    fn with_spec(
        revision: &str,
        generation: i64,
        observed: i64,
        spec: Option<serde_json::Value>,
    ) -> CachedStatefulSet {
        serde_json::from_value(json!({
            "metadata": { "name": "i-conductor", "generation": generation },
            "spec": spec,
            "status": { "replicas": 2, "observedGeneration": observed, "updateRevision": revision },
        }))
        .expect("a StatefulSet")
    }

    #[test]
    fn a_set_without_match_labels_selects_no_pods_rather_than_all() {
        let labelled = |name: &str, labels: serde_json::Value| -> Pod {
            serde_json::from_value(json!({ "metadata": { "name": name, "labels": labels } }))
                .expect("a Pod")
        };
        let pods = [
            labelled("c-0", json!({ "app": "c", "tier": "x", "extra": "y" })),
            labelled("c-other-0", json!({ "app": "c", "tier": "z" })),
            labelled("unlabelled", json!({})),
        ];
        let names = |set: &CachedStatefulSet| -> Vec<String> {
            pods_of(set, &pods)
                .into_iter()
                .filter_map(|p| p.metadata.name.clone())
                .collect()
        };
        assert!(names(&rolling_to("r2", 2, 2)).is_empty());
        let selecting = |labels| json!({ "selector": { "matchLabels": labels }, "template": {} });
        let set = with_spec("r2", 2, 2, Some(selecting(json!({}))));
        assert!(names(&set).is_empty());
        let set = with_spec(
            "r2",
            2,
            2,
            Some(selecting(json!({ "app": "c", "tier": "x" }))),
        );
        assert_eq!(
            names(&set),
            ["c-0"],
            "the set's own pods, read from the resource's"
        );
    }

    #[test]
    fn only_unready_pods_of_another_revision_are_stuck() {
        let pods = [
            revision_pod("i-conductor-0", "old", true),
            revision_pod("i-conductor-1", "bad", false),
        ];
        // Reverted to "old": the unready pod of "bad" is never replaced by itself.
        assert_eq!(
            stuck_pods(&rolling_to("old", 3, 3), &pods),
            ["i-conductor-1"]
        );
        // Rolling forward to "bad": a pod already at it is left to get ready;
        // the ready old one is the controller's to replace.
        assert!(stuck_pods(&rolling_to("bad", 2, 2), &pods).is_empty());
        // The controller has not seen the latest template yet: wait for it.
        assert!(stuck_pods(&rolling_to("old", 3, 2), &pods).is_empty());
    }

    #[test]
    fn a_roll_stalls_once_its_deadline_passes_without_progress() {
        let last: Timestamp = at(100).parse().expect("a time");
        let now = |s: i64| at(s).parse::<Timestamp>().expect("a time");
        let deadline = Duration::from_secs(600);
        assert_eq!(
            judge(last, now(160), deadline),
            Stall::CheckIn(Duration::from_secs(540))
        );
        assert_eq!(judge(last, now(700), deadline), Stall::Stalled);
        assert_eq!(judge(last, now(701), deadline), Stall::Stalled);
        assert_eq!(
            judge(last, now(50), deadline),
            Stall::CheckIn(deadline),
            "a clock behind the last progress waits the whole deadline"
        );
    }
}
