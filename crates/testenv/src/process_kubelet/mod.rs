//! The process kubelet: a second kubelet whose pods are real Linux processes.
//!
//! It registers a Ready node (`process-node-0`), binds the pods that are its
//! by the rule in [`crate::binding`] (a namespace labelled
//! `ratchet.dev/kubelet=process`, or a node selector naming its node), and runs
//! each container's command as a process: its own network namespace and
//! address on a bridge ([`network`]), a private mount, UTS, IPC and PID
//! namespace with the image's root and the pod's volumes ([`sandbox`],
//! [`volumes`], [`images`]), the environment and identity the spec asks for
//! ([`spec`]), probes ([`probes`]), restarts with back-off, termination with
//! SIGTERM, the grace period and SIGKILL, and kubelet-shaped statuses
//! ([`status`], [`pod`]). It runs beside the simulated kubelet on one cluster.
//!
//! Container logs are files: `<dir>/pods/<namespace>/<pod>/<container>.log`
//! ([`ProcessKubelet::log_path`]), appended across restarts.
//!
//! Failed containers of Job pods (restartPolicy Never/OnFailure) report a
//! `finishedAt` backdated by [`ProcessKubeletOptions::failure_backdate`], as the
//! simulated kubelet does: the Job controller waits 10 s · 2^(n−1) after the
//! n-th failure counted from that time, so five failures take seconds while the
//! real controller still counts every one.
//!
//! Needs root (network namespaces, mounts, uid changes); [`ProcessKubelet::start`]
//! says so plainly otherwise.

pub mod cluster_services;
mod container;
pub mod dns;
pub mod events;
pub mod images;
pub mod network;
pub mod node;
mod pod;
mod pod_state;
pub mod probes;
mod reaper;
pub mod sandbox;
pub mod spec;
pub mod status;
pub mod volumes;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Binding, Namespace, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PostParams;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, ResourceExt};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use crate::binding;
use crate::error::{IoContext, Result, TestEnvError};
pub use images::Catalogue;
pub use network::{NetnsRuntime, POD_CIDR, PodNetwork};

/// How the process kubelet behaves.
#[derive(Clone, Debug)]
pub struct ProcessKubeletOptions {
    pub node_name: String,
    /// First restart delay of a crashed container; doubles per restart up to
    /// `max_restart_backoff`. A real kubelet starts at 10 s; tests want less.
    pub restart_backoff: Duration,
    pub max_restart_backoff: Duration,
    /// How often a container waiting on a missing ConfigMap or Secret retries.
    pub config_retry: Duration,
    /// How far back failed Job containers' finish times are dated (module docs).
    pub failure_backdate: Duration,
    /// Where pod directories (logs, volumes) go; a fresh directory under
    /// `$TMPDIR/ratchet-testenv` when unset.
    pub dir: Option<PathBuf>,
    /// The kubelet's `--cluster-dns`: the address `ClusterFirst` pods' resolv.conf
    /// names ([`dns`]). Unset, they get the node's (empty) resolver, as from a
    /// kubelet started without one; [`cluster_services`] serves it.
    pub cluster_dns: Option<std::net::Ipv4Addr>,
    /// The kubelet's `--cluster-domain`.
    pub cluster_domain: String,
}

impl Default for ProcessKubeletOptions {
    fn default() -> Self {
        ProcessKubeletOptions {
            node_name: "process-node-0".into(),
            restart_backoff: Duration::from_secs(1),
            max_restart_backoff: Duration::from_secs(20),
            config_retry: Duration::from_secs(1),
            failure_backdate: Duration::from_secs(3600),
            dir: None,
            cluster_dns: None,
            cluster_domain: cluster_services::CLUSTER_DOMAIN.into(),
        }
    }
}

/// A running process kubelet; stops its pods and removes its namespaces when dropped.
pub struct ProcessKubelet {
    task: JoinHandle<()>,
    state: Arc<KubeletState>,
    _dir: Option<tempfile::TempDir>,
}

struct KubeletState {
    ctx: Arc<pod_state::Context>,
    pods: Mutex<HashMap<String, Tracked>>,
}

#[derive(Default)]
struct Tracked {
    binding: bool,
    worker: Option<pod::PodHandle>,
    finalizing: bool,
}

/// An error unless this process runs as root.
pub fn require_root() -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        Ok(())
    } else {
        Err(TestEnvError::NotRoot(
            "the process kubelet needs root: it creates network namespaces, bind mounts and changes uids (CI runs the tests as root; run `sudo -E cargo test …`)".into(),
        ))
    }
}

impl ProcessKubelet {
    /// Registers the node and starts serving pods on the current runtime.
    pub async fn start(client: Client, options: ProcessKubeletOptions) -> Result<ProcessKubelet> {
        require_root()?;
        for tool in ["/usr/bin/bwrap", "/usr/bin/setpriv", "/usr/bin/nsenter"] {
            if !Path::new(tool).is_file() {
                return Err(TestEnvError::BinaryMissing {
                    component: "process kubelet tool (apt-get install bubblewrap util-linux)",
                    path: PathBuf::from(tool),
                });
            }
        }
        let orphans = reaper::reap_orphans();
        if !orphans.is_empty() {
            tracing::warn!(
                pids = ?orphans,
                "killed containers left running by a test process that no longer runs"
            );
        }
        let (tempdir, dir) = match &options.dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).at(dir)?;
                (None, dir.clone())
            }
            None => {
                let t = crate::cluster::new_work_dir("kubelet")?;
                let path = t.path().to_path_buf();
                (Some(t), path)
            }
        };
        let network = Arc::new(
            tokio::task::spawn_blocking(PodNetwork::create)
                .await
                .map_err(|e| TestEnvError::Network(e.to_string()))??,
        );
        let node = Arc::new(NetnsRuntime::start(network.node_netns())?);
        let catalogue = Arc::new(Catalogue::load()?);
        register_node(&client, &options.node_name, &network).await?;
        let state = Arc::new(KubeletState {
            ctx: Arc::new(pod_state::Context {
                client,
                catalogue,
                network,
                node,
                options,
                dir,
            }),
            pods: Mutex::new(HashMap::new()),
        });
        let task = tokio::spawn(run(state.clone()));
        Ok(ProcessKubelet {
            task,
            state,
            _dir: tempdir,
        })
    }

    pub fn node_name(&self) -> &str {
        &self.state.ctx.options.node_name
    }

    /// The directory holding `pods/<namespace>/<pod>/` (logs, volumes).
    pub fn dir(&self) -> &Path {
        &self.state.ctx.dir
    }

    /// Where a container's log is written.
    pub fn log_path(&self, namespace: &str, pod: &str, container: &str) -> PathBuf {
        log_path(&self.state.ctx.dir, namespace, pod, container)
    }

    /// The pod network (to attach client namespaces).
    pub fn network(&self) -> Arc<PodNetwork> {
        self.state.ctx.network.clone()
    }
}

/// Where a namespace's pod directories (with their logs) are under a process
/// kubelet's directory.
pub fn namespace_dir(dir: &Path, namespace: &str) -> PathBuf {
    pod::namespace_dir(dir, namespace)
}

/// Where a pod's volume lives on the host, given its namespace's directory
/// ([`namespace_dir`]) and the pod's uid.
pub fn volume_dir(namespace_dir: &Path, pod: &str, uid: &str, volume: &str) -> PathBuf {
    pod::volume_root(&namespace_dir.join(pod), uid).join(volume)
}

/// Where a container's log is written under a process kubelet's directory.
pub fn log_path(dir: &Path, namespace: &str, pod: &str, container: &str) -> PathBuf {
    pod::pod_dir(dir, namespace, pod).join(format!("{container}.log"))
}

impl Drop for ProcessKubelet {
    fn drop(&mut self) {
        self.task.abort();
        if let Ok(mut pods) = self.state.pods.try_lock() {
            for (_, tracked) in pods.drain() {
                if let Some(worker) = tracked.worker {
                    // Aborting drops each container's kill guard: SIGKILL.
                    worker.task.abort();
                }
            }
        }
    }
}

async fn register_node(client: &Client, name: &str, network: &PodNetwork) -> Result<()> {
    crate::node::register(
        client,
        &crate::node::NodeDescription {
            name,
            kind: binding::PROCESS,
            manager: "ratchet-process-kubelet",
            cpu: "2",
            memory: "16Gi",
            pods: "500",
            internal_ip: network.bridge_ip().to_string(),
            message: "process kubelet is posting ready status",
            kubelet_version: "v1.36.3-process",
            runtime: "bubblewrap://0.8",
            os_image: "host processes",
        },
    )
    .await
}

async fn run(state: Arc<KubeletState>) {
    let pods: Api<Pod> = Api::all(state.ctx.client.clone());
    let mut events = watcher::watcher(pods, watcher::Config::default())
        .backoff(crate::wait::fast_backoff())
        .boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Apply(pod) | Event::InitApply(pod)) => observe(&state, pod).await,
            Ok(Event::Delete(pod)) => forget(&state, &pod).await,
            Ok(Event::Init | Event::InitDone) => {}
            Err(e) => tracing::warn!(error = %e, "process kubelet: pod watch error"),
        }
    }
}

/// A pod removed from the API: its processes go at once.
async fn forget(state: &KubeletState, pod: &Pod) {
    let Some(uid) = pod.uid() else { return };
    if let Some(tracked) = state.pods.lock().await.remove(&uid)
        && let Some(worker) = tracked.worker
    {
        let _ = worker.stop.send(Some(0));
    }
}

fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

async fn observe(state: &Arc<KubeletState>, pod: Pod) {
    let Some(uid) = pod.uid() else { return };
    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    let ours = node.as_deref() == Some(state.ctx.options.node_name.as_str());
    let mut pods = state.pods.lock().await;
    let tracked = pods.entry(uid).or_default();

    if pod.metadata.deletion_timestamp.is_some() {
        if !ours || tracked.finalizing {
            return;
        }
        tracked.finalizing = true;
        let grace = pod
            .metadata
            .deletion_grace_period_seconds
            .unwrap_or(0)
            .max(0) as u64;
        match &tracked.worker {
            Some(worker) => {
                let _ = worker.stop.send(Some(grace));
            }
            None => {
                let client = state.ctx.client.clone();
                tokio::spawn(async move { pod::finalize(&client, &pod).await });
            }
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
    if ours && tracked.worker.is_none() && !is_terminal(&pod) {
        tracked.worker = Some(pod::spawn(state.ctx.clone(), pod));
    }
}

async fn bind(state: Arc<KubeletState>, pod: Pod) {
    let (Some(ns), name) = (pod.namespace(), pod.name_any()) else {
        return;
    };
    let client = state.ctx.client.clone();
    let retry = || async {
        if let Some(uid) = pod.uid()
            && let Some(tracked) = state.pods.lock().await.get_mut(&uid)
        {
            tracked.binding = false;
        }
    };
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let labels = match namespaces.get_opt(&ns).await {
        Ok(Some(namespace)) => namespace.labels().clone(),
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(pod = %name, namespace = %ns, error = %e, "process kubelet: reading the namespace failed");
            retry().await;
            return;
        }
    };
    let node = &state.ctx.options.node_name;
    if !binding::binds(&pod, &labels, &binding::node_labels(node, binding::PROCESS)) {
        return;
    }
    let api: Api<Pod> = Api::namespaced(client, &ns);
    let body = Binding {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(ns.clone()),
            uid: pod.uid(),
            ..ObjectMeta::default()
        },
        target: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some(node.clone()),
            ..ObjectReference::default()
        },
    };
    let result = api
        .create_subresource::<Binding, kube::core::Status>(
            "binding",
            &name,
            &PostParams::default(),
            &body,
        )
        .await;
    if let Err(e) = result
        && !pod_state::is_not_found(&e)
    {
        tracing::warn!(pod = %name, namespace = %ns, error = %e, "process kubelet: binding failed");
        retry().await;
    }
}
