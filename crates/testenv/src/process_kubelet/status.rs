//! The pod status a kubelet reports, from the process kubelet's view of its
//! containers (pure): phase, conditions and container statuses.

use std::time::SystemTime;

use serde_json::{Value, json};

/// A finished run of a container.
#[derive(Clone, Debug, PartialEq)]
pub struct Terminated {
    pub exit_code: i32,
    pub reason: String,
    pub message: String,
    pub started_at: SystemTime,
    pub finished_at: SystemTime,
}

impl Terminated {
    /// `Completed` for 0, `Error` otherwise, as the kubelet names them.
    pub fn exited(
        code: i32,
        message: String,
        started_at: SystemTime,
        finished_at: SystemTime,
    ) -> Terminated {
        Terminated {
            exit_code: code,
            reason: if code == 0 { "Completed" } else { "Error" }.to_string(),
            message,
            started_at,
            finished_at,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum State {
    Waiting { reason: String, message: String },
    Running { started_at: SystemTime },
    Terminated(Terminated),
}

/// One container as the kubelet sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ContainerView {
    pub name: String,
    pub image: String,
    pub state: State,
    pub last: Option<Terminated>,
    pub ready: bool,
    pub restarts: u32,
    /// No further run will happen (its restart policy ends here).
    pub done: bool,
    /// Running and past its startup probe.
    pub started: bool,
    pub container_id: Option<String>,
}

impl ContainerView {
    pub fn new(name: &str, image: &str) -> ContainerView {
        ContainerView {
            name: name.to_string(),
            image: image.to_string(),
            state: State::Waiting {
                reason: "ContainerCreating".into(),
                message: String::new(),
            },
            last: None,
            ready: false,
            restarts: 0,
            done: false,
            started: false,
            container_id: None,
        }
    }
}

/// The pod as a whole.
#[derive(Clone, Debug)]
pub struct PodView {
    pub pod_ip: Option<String>,
    pub host_ip: String,
    pub started: SystemTime,
    pub init_containers: Vec<ContainerView>,
    pub containers: Vec<ContainerView>,
}

fn exited_ok(c: &ContainerView) -> bool {
    matches!(&c.state, State::Terminated(t) if t.exit_code == 0)
}

/// Every init container has completed successfully.
pub fn initialized(view: &PodView) -> bool {
    view.init_containers.iter().all(|c| c.done && exited_ok(c))
}

/// `Pending`, `Running`, `Succeeded` or `Failed` for the whole pod: an init
/// container that failed for good fails the pod; until they all completed it
/// is Pending.
pub fn pod_phase(view: &PodView) -> &'static str {
    if view.init_containers.iter().any(|c| c.done && !exited_ok(c)) {
        return "Failed";
    }
    if !initialized(view) {
        return "Pending";
    }
    phase(&view.containers)
}

pub fn rfc3339(t: SystemTime) -> String {
    k8s_openapi::jiff::Timestamp::try_from(t)
        .map(|ts| {
            ts.round(k8s_openapi::jiff::Unit::Second)
                .unwrap_or(ts)
                .to_string()
        })
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string())
}

/// `Pending`, `Running`, `Succeeded` or `Failed`, by the kubelet's rules.
pub fn phase(containers: &[ContainerView]) -> &'static str {
    if !containers.is_empty() && containers.iter().all(|c| c.done) {
        let all_ok = containers
            .iter()
            .all(|c| matches!(&c.state, State::Terminated(t) if t.exit_code == 0));
        return if all_ok { "Succeeded" } else { "Failed" };
    }
    let started = containers
        .iter()
        .any(|c| matches!(c.state, State::Running { .. } | State::Terminated(_)) || c.restarts > 0);
    if started { "Running" } else { "Pending" }
}

fn terminated_json(t: &Terminated) -> Value {
    let mut v = json!({
        "exitCode": t.exit_code,
        "reason": t.reason,
        "startedAt": rfc3339(t.started_at),
        "finishedAt": rfc3339(t.finished_at),
    });
    if !t.message.is_empty() {
        v["message"] = json!(t.message);
    }
    v
}

fn state_json(state: &State) -> Value {
    match state {
        State::Waiting { reason, message } => {
            let mut w = json!({ "reason": reason });
            if !message.is_empty() {
                w["message"] = json!(message);
            }
            json!({ "waiting": w })
        }
        State::Running { started_at } => {
            json!({ "running": { "startedAt": rfc3339(*started_at) } })
        }
        State::Terminated(t) => json!({ "terminated": terminated_json(t) }),
    }
}

fn condition(kind: &str, status: bool, reason: Option<&str>, message: Option<String>) -> Value {
    let mut c = json!({
        "type": kind,
        "status": if status { "True" } else { "False" },
        "lastProbeTime": null,
    });
    if let Some(reason) = reason {
        c["reason"] = json!(reason);
    }
    if let Some(message) = message {
        c["message"] = json!(message);
    }
    c
}

/// The `status` object to merge into the pod. Transition times are filled by
/// the caller from the previous status (see [`carry_transition_times`]).
fn container_json(c: &ContainerView) -> Value {
    let mut v = json!({
        "name": c.name,
        "image": c.image,
        "imageID": format!("process://{}", c.image),
        "ready": c.ready,
        "started": c.started,
        "restartCount": c.restarts,
        "state": state_json(&c.state),
        "lastState": c.last.as_ref().map(|t| json!({ "terminated": terminated_json(t) })).unwrap_or_else(|| json!({})),
    });
    if let Some(id) = &c.container_id {
        v["containerID"] = json!(id);
    }
    v
}

fn unready_message(kind: &str, names: &[&str]) -> String {
    format!("containers with {kind} status: [{}]", names.join(" "))
}

pub fn status(view: &PodView, now: SystemTime) -> Value {
    let phase = pod_phase(view);
    let finished = matches!(phase, "Succeeded" | "Failed");
    let initialized = initialized(view);
    let ready = !finished && initialized && view.containers.iter().all(|c| c.ready);
    let unready: Vec<&str> = view
        .containers
        .iter()
        .filter(|c| !c.ready)
        .map(|c| c.name.as_str())
        .collect();
    let (reason, message) = if finished {
        (Some("PodCompleted"), None)
    } else if ready {
        (None, None)
    } else {
        (
            Some("ContainersNotReady"),
            Some(unready_message("unready", &unready)),
        )
    };
    let incomplete: Vec<&str> = view
        .init_containers
        .iter()
        .filter(|c| !(c.done && exited_ok(c)))
        .map(|c| c.name.as_str())
        .collect();
    let init_condition = if initialized {
        condition("Initialized", true, None, None)
    } else {
        condition(
            "Initialized",
            false,
            Some("ContainersNotInitialized"),
            Some(unready_message("incomplete", &incomplete)),
        )
    };
    let mut status = json!({
        "phase": phase,
        "hostIP": view.host_ip,
        "hostIPs": [{ "ip": view.host_ip }],
        "startTime": rfc3339(view.started),
        "conditions": [
            condition("PodReadyToStartContainers", view.pod_ip.is_some() && !finished, None, None),
            init_condition,
            condition("Ready", ready, reason, message.clone()),
            condition("ContainersReady", ready, reason, message),
            condition("PodScheduled", true, None, None),
        ],
        "containerStatuses": view.containers.iter().map(container_json).collect::<Vec<_>>(),
    });
    if !view.init_containers.is_empty() {
        status["initContainerStatuses"] = json!(
            view.init_containers
                .iter()
                .map(container_json)
                .collect::<Vec<_>>()
        );
    }
    if let Some(ip) = &view.pod_ip {
        status["podIP"] = json!(ip);
        status["podIPs"] = json!([{ "ip": ip }]);
    }
    carry_transition_times(&mut status, None, now);
    status
}

/// Sets each condition's `lastTransitionTime`: kept from `previous` when the
/// status did not change, `now` otherwise.
pub fn carry_transition_times(status: &mut Value, previous: Option<&Value>, now: SystemTime) {
    let now = rfc3339(now);
    let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) else {
        return;
    };
    for c in conditions {
        let kind = c.get("type").cloned();
        let same = previous
            .and_then(|p| p.get("conditions"))
            .and_then(Value::as_array)
            .and_then(|prev| prev.iter().find(|p| p.get("type") == kind.as_ref()))
            .filter(|p| p.get("status") == c.get("status"));
        let at = same
            .and_then(|p| p.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| json!(now));
        c["lastTransitionTime"] = at;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(code: i32) -> ContainerView {
        let now = SystemTime::now();
        ContainerView {
            state: State::Terminated(Terminated::exited(code, String::new(), now, now)),
            done: true,
            ..ContainerView::new("c", "i")
        }
    }

    #[test]
    fn phases_follow_the_kubelet() {
        assert_eq!(phase(&[ContainerView::new("c", "i")]), "Pending");
        assert_eq!(phase(&[done(0)]), "Succeeded");
        assert_eq!(phase(&[done(0), done(3)]), "Failed");
        let mut restarting = ContainerView::new("c", "i");
        restarting.restarts = 1;
        assert_eq!(phase(&[restarting]), "Running");
    }

    #[test]
    fn init_containers_hold_the_pod_pending_or_fail_it() {
        let mut view = PodView {
            pod_ip: None,
            host_ip: "10.245.0.1".into(),
            started: SystemTime::now(),
            init_containers: vec![ContainerView::new("init", "i")],
            containers: vec![ContainerView::new("main", "i")],
        };
        assert_eq!(pod_phase(&view), "Pending");
        let s = status(&view, SystemTime::now());
        assert_eq!(s["conditions"][1]["reason"], "ContainersNotInitialized");
        view.init_containers = vec![done(3)];
        assert_eq!(pod_phase(&view), "Failed");
        view.init_containers = vec![done(0)];
        assert_eq!(pod_phase(&view), "Pending");
        assert!(initialized(&view));
    }

    #[test]
    fn unready_pods_say_which_containers() {
        let view = PodView {
            pod_ip: Some("10.245.1.2".into()),
            host_ip: "10.245.0.1".into(),
            started: SystemTime::now(),
            init_containers: vec![],
            containers: vec![ContainerView::new("web", "i")],
        };
        let s = status(&view, SystemTime::now());
        assert_eq!(s["conditions"][2]["type"], "Ready");
        assert_eq!(
            s["conditions"][2]["message"],
            "containers with unready status: [web]"
        );
        assert_eq!(s["podIP"], "10.245.1.2");
        assert_eq!(
            s["containerStatuses"][0]["state"]["waiting"]["reason"],
            "ContainerCreating"
        );
    }
}
