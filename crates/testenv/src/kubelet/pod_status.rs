//! Pod statuses as a kubelet reports them, built without I/O.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use std::time::SystemTime;

use super::scenario::Exit;

/// A timestamp in the API's RFC 3339 form, second precision.
fn rfc3339(t: SystemTime) -> String {
    k8s_openapi::jiff::Timestamp::try_from(t)
        .map(|ts| {
            ts.round(k8s_openapi::jiff::Unit::Second)
                .unwrap_or(ts)
                .to_string()
        })
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string())
}

fn condition(kind: &str, status: bool, at: &str, reason: Option<&str>) -> Value {
    let mut c = json!({
        "type": kind,
        "status": if status { "True" } else { "False" },
        "lastTransitionTime": at,
        "lastProbeTime": null,
    });
    if let Some(reason) = reason {
        c["reason"] = json!(reason);
    }
    c
}

fn container_names(pod: &Pod) -> Vec<(String, String)> {
    pod.spec
        .as_ref()
        .map(|s| {
            s.containers
                .iter()
                .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default()
}

/// Where the pod runs: fixed per pod for its whole life.
#[derive(Clone, Debug)]
pub struct Placement {
    pub pod_ip: String,
    pub host_ip: String,
    pub started: SystemTime,
}

fn base(
    placement: &Placement,
    phase: &str,
    conditions: Vec<Value>,
    containers: Vec<Value>,
) -> Value {
    json!({
        "phase": phase,
        "hostIP": placement.host_ip,
        "hostIPs": [{ "ip": placement.host_ip }],
        "podIP": placement.pod_ip,
        "podIPs": [{ "ip": placement.pod_ip }],
        "startTime": rfc3339(placement.started),
        "conditions": conditions,
        "containerStatuses": containers,
    })
}

/// Containers running; `ready` says whether readiness has been reached.
/// `restarts` and `last_exit` describe earlier crashes.
pub fn running(
    pod: &Pod,
    placement: &Placement,
    ready: bool,
    restarts: u32,
    last_exit: Option<&Exit>,
    now: SystemTime,
) -> Value {
    let at = rfc3339(now);
    let started = rfc3339(placement.started);
    let containers = container_names(pod)
        .into_iter()
        .map(|(name, image)| {
            let mut c = json!({
                "name": name,
                "image": image,
                "imageID": format!("sim://{image}"),
                "containerID": format!("sim://{name}-{restarts}"),
                "ready": ready,
                "started": true,
                "restartCount": restarts,
                "state": { "running": { "startedAt": at } },
            });
            if let Some(exit) = last_exit {
                c["lastState"] = terminated_state(exit, &started, &at);
            }
            c
        })
        .collect();
    let reason = (!ready).then_some("ContainersNotReady");
    base(
        placement,
        "Running",
        vec![
            condition("PodReadyToStartContainers", true, &started, None),
            condition("Initialized", true, &started, None),
            condition("Ready", ready, &at, reason),
            condition("ContainersReady", ready, &at, reason),
            condition("PodScheduled", true, &started, None),
        ],
        containers,
    )
}

/// A container waiting in CrashLoopBackOff after its `restarts`-th crash.
pub fn crash_looping(
    pod: &Pod,
    placement: &Placement,
    restarts: u32,
    exit: &Exit,
    now: SystemTime,
) -> Value {
    let at = rfc3339(now);
    let started = rfc3339(placement.started);
    let containers = container_names(pod)
        .into_iter()
        .map(|(name, image)| {
            json!({
                "name": name,
                "image": image,
                "imageID": format!("sim://{image}"),
                "ready": false,
                "started": false,
                "restartCount": restarts,
                "state": { "waiting": { "reason": "CrashLoopBackOff", "message": "back-off restarting failed container" } },
                "lastState": terminated_state(exit, &started, &at),
            })
        })
        .collect();
    base(
        placement,
        "Running",
        vec![
            condition("PodReadyToStartContainers", true, &started, None),
            condition("Initialized", true, &started, None),
            condition("Ready", false, &at, Some("ContainersNotReady")),
            condition("ContainersReady", false, &at, Some("ContainersNotReady")),
            condition("PodScheduled", true, &started, None),
        ],
        containers,
    )
}

fn terminated_state(exit: &Exit, started: &str, finished: &str) -> Value {
    json!({
        "terminated": {
            "exitCode": exit.code,
            "reason": if exit.code == 0 { "Completed" } else { "Error" },
            "message": exit.message,
            "startedAt": started,
            "finishedAt": finished,
        }
    })
}

/// Every container terminated with `exit`; the pod Succeeded or Failed.
/// `finished` may lie in the past (see the kubelet's failure backdating).
pub fn terminated(pod: &Pod, placement: &Placement, exit: &Exit, finished: SystemTime) -> Value {
    let at = rfc3339(finished);
    let started = rfc3339(placement.started.min(finished));
    let containers = container_names(pod)
        .into_iter()
        .map(|(name, image)| {
            json!({
                "name": name,
                "image": image,
                "imageID": format!("sim://{image}"),
                "containerID": format!("sim://{name}"),
                "ready": false,
                "started": false,
                "restartCount": 0,
                "state": terminated_state(exit, &started, &at),
            })
        })
        .collect();
    let phase = if exit.code == 0 {
        "Succeeded"
    } else {
        "Failed"
    };
    base(
        &Placement {
            started: placement.started.min(finished),
            ..placement.clone()
        },
        phase,
        vec![
            condition("PodReadyToStartContainers", false, &at, None),
            condition("Initialized", true, &started, Some("PodCompleted")),
            condition("Ready", false, &at, Some("PodCompleted")),
            condition("ContainersReady", false, &at, Some("PodCompleted")),
            condition("PodScheduled", true, &started, None),
        ],
        containers,
    )
}
