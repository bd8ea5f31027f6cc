//! A simulated kubelet: one Ready node that runs pods' lifecycles without
//! containers.
//!
//! Unscheduled pods are bound to the node unless they belong to the process
//! kubelet (see [`crate::binding`]: a namespace labelled
//! `ratchet.dev/kubelet=process`, or a node selector naming the process node);
//! bound pods go Pending → Running →
//! Ready (long-running) or Running → Succeeded/Failed with an exit code and a
//! termination message (Job pods); terminating pods are finalised so
//! ReplicaSets, Jobs and the garbage collector see them go. What each pod does
//! is chosen by [`Scenarios`] rules.
//!
//! Failed containers report a finish time backdated by
//! [`KubeletOptions::failure_backdate`]: the Job controller waits
//! 10 s · 2^(failures-1) after the last failure before creating the next pod,
//! measured from that finish time, so backdating keeps five failing pods to
//! seconds instead of minutes while the real controller still counts them.

mod pod_status;
pub mod scenario;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Binding, Namespace, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, ResourceExt};
use serde_json::json;
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use crate::binding;
use crate::error::Result;
pub use scenario::{Behaviour, Exit, PodIdentity, PodSelector, RuleId, Scenarios};

use pod_status::Placement;

/// Defaults for pods no rule gives a delay.
#[derive(Clone, Debug)]
pub struct KubeletOptions {
    pub node_name: String,
    pub start_delay: Duration,
    pub ready_delay: Duration,
    pub run_time: Duration,
    /// How far back failed containers' finish times are dated (see module docs).
    pub failure_backdate: Duration,
}

impl Default for KubeletOptions {
    fn default() -> Self {
        KubeletOptions {
            node_name: "sim-node-0".into(),
            start_delay: Duration::ZERO,
            ready_delay: Duration::ZERO,
            run_time: Duration::ZERO,
            failure_backdate: Duration::from_secs(3600),
        }
    }
}

/// A running simulated kubelet; stops when dropped.
pub struct SimKubelet {
    scenarios: Scenarios,
    task: JoinHandle<()>,
}

impl Drop for SimKubelet {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SimKubelet {
    /// Registers the node and starts serving pods on the current runtime.
    pub async fn start(client: Client, options: KubeletOptions) -> Result<SimKubelet> {
        Self::start_with_scenarios(client, options, Scenarios::default()).await
    }

    pub async fn start_with_scenarios(
        client: Client,
        options: KubeletOptions,
        scenarios: Scenarios,
    ) -> Result<SimKubelet> {
        register_node(&client, &options.node_name).await?;
        let state = Arc::new(KubeletState {
            client,
            options,
            scenarios: scenarios.clone(),
            pods: Mutex::new(HashMap::new()),
            next_ip: AtomicU32::new(2),
        });
        let task = tokio::spawn(run(state));
        Ok(SimKubelet { scenarios, task })
    }

    /// The rules deciding what pods do; shared with every clone.
    pub fn scenarios(&self) -> &Scenarios {
        &self.scenarios
    }
}

async fn register_node(client: &Client, name: &str) -> Result<()> {
    crate::node::register(
        client,
        &crate::node::NodeDescription {
            name,
            kind: binding::SIMULATED,
            manager: "ratchet-sim-kubelet",
            cpu: "64",
            memory: "256Gi",
            pods: "10000",
            internal_ip: "127.0.0.1".into(),
            message: "simulated kubelet is posting ready status",
            kubelet_version: "v1.36.3-sim",
            runtime: "sim://1",
            os_image: "simulated",
        },
    )
    .await
}

struct KubeletState {
    client: Client,
    options: KubeletOptions,
    scenarios: Scenarios,
    /// Pods this kubelet acts on, by UID.
    pods: Mutex<HashMap<String, Tracked>>,
    next_ip: AtomicU32,
}

#[derive(Default)]
struct Tracked {
    binding: bool,
    lifecycle: Option<JoinHandle<()>>,
    finalizing: bool,
}

async fn run(state: Arc<KubeletState>) {
    let pods: Api<Pod> = Api::all(state.client.clone());
    let mut events = watcher::watcher(pods, watcher::Config::default())
        .backoff(crate::wait::fast_backoff())
        .boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Apply(pod) | Event::InitApply(pod)) => observe(&state, pod).await,
            Ok(Event::Delete(pod)) => forget(&state, &pod).await,
            Ok(Event::Init | Event::InitDone) => {}
            Err(e) => tracing::warn!(error = %e, "simulated kubelet: pod watch error"),
        }
    }
}

async fn forget(state: &KubeletState, pod: &Pod) {
    let Some(uid) = pod.uid() else { return };
    if let Some(tracked) = state.pods.lock().await.remove(&uid)
        && let Some(task) = tracked.lifecycle
    {
        task.abort();
    }
}

async fn observe(state: &Arc<KubeletState>, pod: Pod) {
    let Some(uid) = pod.uid() else { return };
    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    let ours = node.as_deref() == Some(state.options.node_name.as_str());
    let mut pods = state.pods.lock().await;
    let tracked = pods.entry(uid).or_default();

    if pod.metadata.deletion_timestamp.is_some() {
        if (ours || node.is_none()) && !tracked.finalizing {
            tracked.finalizing = true;
            if let Some(task) = tracked.lifecycle.take() {
                task.abort();
            }
            tokio::spawn(finalize(state.client.clone(), pod));
        }
        return;
    }
    if node.is_none() {
        if !tracked.binding {
            tracked.binding = true;
            tokio::spawn(bind(state.clone(), pod));
        }
        return;
    }
    if ours && tracked.lifecycle.is_none() && !is_terminal(&pod) {
        tracked.lifecycle = Some(tokio::spawn(lifecycle(state.clone(), pod)));
    }
}

fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Deletes a terminating pod for good, as a kubelet does once its containers stopped.
async fn finalize(client: Client, pod: Pod) {
    let (Some(ns), name) = (pod.namespace(), pod.name_any()) else {
        return;
    };
    let api: Api<Pod> = Api::namespaced(client, &ns);
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: pod.uid().map(|uid| kube::api::Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    // Retried while the API server is away: a terminating pod left behind
    // would hold its StatefulSet's roll for good.
    if let Err(e) = retrying(|| api.delete(&name, &params)).await
        && !is_not_found(&e)
    {
        tracing::warn!(pod = %name, namespace = %ns, error = %e, "simulated kubelet: finalising failed");
    }
}

async fn bind(state: Arc<KubeletState>, pod: Pod) {
    let (Some(ns), name) = (pod.namespace(), pod.name_any()) else {
        return;
    };
    // The namespace is read when the pod is bound, not from a cache: a watch of
    // namespaces could deliver a new namespace's labels after its first pod.
    let namespaces: Api<Namespace> = Api::all(state.client.clone());
    let labels = match retrying(|| namespaces.get_opt(&ns)).await {
        Ok(Some(namespace)) => namespace.labels().clone(),
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(pod = %name, namespace = %ns, error = %e, "simulated kubelet: reading the namespace failed");
            if let Some(uid) = pod.uid()
                && let Some(tracked) = state.pods.lock().await.get_mut(&uid)
            {
                tracked.binding = false;
            }
            return;
        }
    };
    let node_labels = binding::node_labels(&state.options.node_name, binding::SIMULATED);
    if !binding::binds(&pod, &labels, &node_labels) {
        // Another kubelet's pod; `tracked.binding` stays set so it is not looked at again.
        return;
    }
    let api: Api<Pod> = Api::namespaced(state.client.clone(), &ns);
    let binding = Binding {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(ns.clone()),
            uid: pod.uid(),
            ..ObjectMeta::default()
        },
        target: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(state.options.node_name.clone()),
            ..ObjectReference::default()
        },
    };
    let params = PostParams::default();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let result = retrying(|| {
            api.create_subresource::<Binding, kube::core::Status>(
                "binding", &name, &params, &binding,
            )
        })
        .await;
        let Err(e) = result else { return };
        if is_not_found(&e) {
            return;
        }
        // A conflict is also what an API server without etcd answers: the pod
        // may or may not be bound. Look, as a scheduler would, and try again.
        let bound = match retrying(|| api.get_opt(&name)).await {
            Ok(Some(now)) => now.spec.and_then(|s| s.node_name).is_some(),
            Ok(None) => return,
            Err(_) => false,
        };
        if bound {
            return;
        }
        if tokio::time::Instant::now() >= deadline {
            tracing::warn!(pod = %name, namespace = %ns, error = %e, "simulated kubelet: binding failed");
            // Let a later event for this pod try again.
            if let Some(uid) = pod.uid()
                && let Some(tracked) = state.pods.lock().await.get_mut(&uid)
            {
                tracked.binding = false;
            }
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The owning workload's name: Job, StatefulSet, or the Deployment behind a ReplicaSet.
pub fn workload_of(pod: &Pod) -> String {
    let owner = pod
        .metadata
        .owner_references
        .as_ref()
        .and_then(|refs| refs.iter().find(|r| r.controller == Some(true)));
    match owner {
        Some(o) if o.kind == "ReplicaSet" => {
            let hash = pod
                .labels()
                .get("pod-template-hash")
                .map(|h| format!("-{h}"))
                .unwrap_or_default();
            o.name
                .strip_suffix(hash.as_str())
                .filter(|_| !hash.is_empty())
                .unwrap_or(&o.name)
                .to_string()
        }
        Some(o) => o.name.clone(),
        None => pod.name_any(),
    }
}

fn identity(pod: &Pod) -> PodIdentity {
    PodIdentity {
        namespace: pod.namespace().unwrap_or_default(),
        workload: workload_of(pod),
        images: pod
            .spec
            .as_ref()
            .map(|s| {
                s.containers
                    .iter()
                    .filter_map(|c| c.image.clone())
                    .collect()
            })
            .unwrap_or_default(),
        annotations: pod.annotations().clone(),
    }
}

fn runs_to_completion(pod: &Pod) -> bool {
    let policy = pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref());
    matches!(policy, Some("Never" | "OnFailure"))
}

async fn lifecycle(state: Arc<KubeletState>, pod: Pod) {
    let (Some(ns), name) = (pod.namespace(), pod.name_any()) else {
        return;
    };
    let api: Api<Pod> = Api::namespaced(state.client.clone(), &ns);
    let assignment = state.scenarios.assign(&identity(&pod));
    let behaviour = assignment.behaviour;
    let opts = &state.options;
    let ip = state.next_ip.fetch_add(1, Ordering::Relaxed);
    let placement = Placement {
        pod_ip: format!("10.244.{}.{}", (ip >> 8) & 0xff, ip & 0xff),
        host_ip: "127.0.0.1".into(),
        started: SystemTime::now(),
    };
    let patch = |status: serde_json::Value| {
        let api = api.clone();
        let name = name.clone();
        async move {
            let status = json!({ "status": status });
            let (params, merge) = (PatchParams::default(), Patch::Merge(&status));
            retrying(|| api.patch_status(&name, &params, &merge)).await
        }
    };
    let report = |result: kube::Result<Pod>| match result {
        Ok(_) => true,
        Err(e) if is_not_found(&e) => false,
        Err(e) => {
            tracing::warn!(pod = %name, namespace = %ns, error = %e, "simulated kubelet: status update failed");
            false
        }
    };

    tokio::time::sleep(behaviour.start_delay.unwrap_or(opts.start_delay)).await;

    if runs_to_completion(&pod) {
        let on_failure =
            pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()) == Some("OnFailure");
        let mut attempt = assignment.attempt;
        let mut restarts = 0u32;
        let mut last_exit: Option<Exit> = None;
        loop {
            let running = pod_status::running(
                &pod,
                &placement,
                false,
                restarts,
                last_exit.as_ref(),
                SystemTime::now(),
            );
            if !report(patch(running).await) || behaviour.hang {
                return;
            }
            tokio::time::sleep(behaviour.run_time.unwrap_or(opts.run_time)).await;
            let exit = behaviour.exit_for_attempt(attempt);
            if exit.code != 0 && on_failure {
                // The kubelet restarts the container in place; the Job controller
                // counts restarts against backoffLimit.
                restarts += 1;
                attempt += 1;
                last_exit = Some(exit);
                continue;
            }
            let finished = if exit.code == 0 {
                SystemTime::now()
            } else {
                SystemTime::now() - opts.failure_backdate
            };
            report(patch(pod_status::terminated(&pod, &placement, &exit, finished)).await);
            return;
        }
    }

    let crash = Exit::code(1, "simulated crash");
    for restarts in 1..=behaviour.crash_times {
        let status =
            pod_status::crash_looping(&pod, &placement, restarts, &crash, SystemTime::now());
        if !report(patch(status).await) {
            return;
        }
        tokio::time::sleep(behaviour.start_delay.unwrap_or(opts.start_delay)).await;
    }
    let last_crash = (behaviour.crash_times > 0).then_some(&crash);
    let running = pod_status::running(
        &pod,
        &placement,
        false,
        behaviour.crash_times,
        last_crash,
        SystemTime::now(),
    );
    if !report(patch(running).await) || behaviour.hang {
        return;
    }
    tokio::time::sleep(behaviour.ready_delay.unwrap_or(opts.ready_delay)).await;
    let ready = pod_status::running(
        &pod,
        &placement,
        true,
        behaviour.crash_times,
        last_crash,
        SystemTime::now(),
    );
    report(patch(ready).await);
}

/// Runs `call` until it succeeds or fails for a reason other than the API
/// server being away (refused connections, 5xx), as a kubelet keeps syncing
/// status through an API-server restart; gives up after two minutes.
async fn retrying<T, F, Fut>(mut call: F) -> kube::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = kube::Result<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        match call().await {
            Err(e) if unavailable(&e) && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            other => return other,
        }
    }
}

fn unavailable(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s.code >= 500 || s.code == 429,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}
