//! When a StatefulSet's roll has made no progress for its deadline.
//!
//! A Deployment reports this itself (`Progressing`: `ProgressDeadlineExceeded`);
//! a StatefulSet has no progress deadline, so Ratchet keeps the same promise
//! for Ironic's conductors from what the cluster shows: a roll moves when
//! Ratchet applies a new template or one of the set's pods is created or
//! changes readiness. Nothing moving for the deadline is a stall. Nothing
//! wakes the controller when nothing moves, so an unfinished roll asks to be
//! looked at again when its deadline would pass.

use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::ListParams;

use crate::children::FIELD_MANAGER;
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
pub fn last_progress(set: &StatefulSet, pods: &[Pod]) -> Option<Timestamp> {
    let applied = set
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|f| f.manager.as_deref() == Some(FIELD_MANAGER))
        .filter_map(|f| f.time.as_ref().map(|t| t.0));
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

/// Reads the set's pods and judges its unfinished roll.
pub async fn check(
    ctx: &Context,
    namespace: &str,
    set: &StatefulSet,
    deadline: Duration,
) -> Result<Stall> {
    let selector = set
        .spec
        .as_ref()
        .and_then(|s| s.selector.match_labels.as_ref())
        .map(|labels| {
            labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    // The watch cache is recent enough to tell minutes of silence.
    let pods = api
        .list(&ListParams::default().labels(&selector).match_any())
        .await?
        .items;
    let now = Timestamp::now();
    Ok(match last_progress(set, &pods) {
        Some(last) => judge(last, now, deadline),
        None => Stall::CheckIn(deadline),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(seconds: i64) -> String {
        Timestamp::from_second(1_800_000_000 + seconds)
            .expect("a time")
            .to_string()
    }

    fn set(applied_at: i64) -> StatefulSet {
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
