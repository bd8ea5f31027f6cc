//! One pod's life on the process kubelet: its network namespace, volumes, init
//! containers then containers (each run by [`super::container`]), the status
//! the kubelet reports at every step, and the final delete once the containers
//! are gone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, PersistentVolumeClaim, Pod, Secret, ServiceAccount,
};
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::ProcessKubeletOptions;
use super::container::ContainerWorker;
use super::images::Catalogue;
use super::network::{Attachment, NetnsRuntime, PodNetwork};
use super::spec::{self, PodFacts, Sources, Waiting};
use super::status::{self, ContainerView, PodView, State};
use super::volumes::{self, VolumeDir};

/// What every pod worker shares.
pub(super) struct Context {
    pub client: Client,
    pub catalogue: Arc<Catalogue>,
    pub network: Arc<PodNetwork>,
    pub node: Arc<NetnsRuntime>,
    pub options: ProcessKubeletOptions,
    pub dir: PathBuf,
}

/// A running pod worker. Sending a grace period stops the pod.
pub(super) struct PodHandle {
    pub stop: watch::Sender<Option<u64>>,
    pub task: JoinHandle<()>,
}

pub(super) fn spawn(ctx: Arc<Context>, pod: Pod) -> PodHandle {
    let (stop, stop_rx) = watch::channel(None);
    let task = tokio::spawn(run_pod(ctx, Arc::new(pod), stop_rx));
    PodHandle { stop, task }
}

/// A PersistentVolumeClaim's storage on this node: a directory per claim (by
/// UID, so a claim made again starts empty), kept across the pods that mount it.
pub fn claim_dir(kubelet_dir: &Path, namespace: &str, uid: &str) -> PathBuf {
    kubelet_dir.join("claims").join(namespace).join(uid)
}

/// The pod's directory: logs, termination messages, volumes.
pub fn pod_dir(kubelet_dir: &Path, namespace: &str, name: &str) -> PathBuf {
    namespace_dir(kubelet_dir, namespace).join(name)
}

/// Where the directories of a namespace's pods are.
pub fn namespace_dir(kubelet_dir: &Path, namespace: &str) -> PathBuf {
    kubelet_dir.join("pods").join(namespace)
}

/// The view of the pod and its last reported status.
pub(super) struct Shared {
    view: std::sync::Mutex<PodView>,
    last: tokio::sync::Mutex<Option<Value>>,
    api: Api<Pod>,
    name: String,
}

/// Which container of the pod: an init container or a regular one, by index.
#[derive(Clone, Copy, Debug)]
pub(super) struct Slot {
    pub init: bool,
    pub index: usize,
}

/// Aborts its tasks when dropped: nothing a pod started outlives it.
#[derive(Default)]
pub(super) struct AbortOnDrop(pub Vec<JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

impl Shared {
    pub(super) fn update(&self, slot: Slot, f: impl FnOnce(&mut ContainerView)) {
        if let Ok(mut view) = self.view.lock() {
            let list = if slot.init {
                &mut view.init_containers
            } else {
                &mut view.containers
            };
            if let Some(c) = list.get_mut(slot.index) {
                f(c);
            }
        }
    }

    fn update_all(&self, f: impl Fn(&mut ContainerView)) {
        if let Ok(mut view) = self.view.lock() {
            view.init_containers.iter_mut().for_each(&f);
            view.containers.iter_mut().for_each(&f);
        }
    }

    fn all_done(&self) -> bool {
        self.view
            .lock()
            .map(|v| v.containers.iter().all(|c| c.done))
            .unwrap_or(true)
    }

    fn init_failed(&self) -> bool {
        self.view
            .lock()
            .map(|v| status::pod_phase(&v) == "Failed")
            .unwrap_or(true)
    }

    /// Writes the current status when it differs from the last one written.
    pub(super) async fn publish(&self) {
        let mut last = self.last.lock().await;
        let Ok(view) = self.view.lock().map(|v| v.clone()) else {
            return;
        };
        let now = SystemTime::now();
        let mut status = status::status(&view, now);
        status::carry_transition_times(&mut status, last.as_ref(), now);
        if last.as_ref() == Some(&status) {
            return;
        }
        let patch = Patch::Merge(json!({ "status": status }));
        match self
            .api
            .patch_status(&self.name, &PatchParams::default(), &patch)
            .await
        {
            Ok(_) => *last = Some(status),
            Err(e) if is_not_found(&e) => {}
            Err(e) => {
                tracing::warn!(pod = %self.name, error = %e, "process kubelet: status update failed")
            }
        }
    }
}

pub(super) fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

pub(super) async fn fetch_sources(
    client: &Client,
    kubelet_dir: &Path,
    namespace: &str,
    pod: &Pod,
) -> kube::Result<Sources> {
    let (config_maps, secrets) = spec::referenced_sources(pod);
    let mut sources = Sources::default();
    let cm_api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    for name in config_maps {
        let found = cm_api.get_opt(&name).await?;
        sources.config_maps.insert(name, found);
    }
    let secret_api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    for name in secrets {
        let found = secret_api.get_opt(&name).await?;
        sources.secrets.insert(name, found);
    }
    sources.tokens = request_tokens(client, namespace, pod).await?;
    let claim_api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), namespace);
    let claims = pod
        .spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .map(|c| c.claim_name.clone());
    for name in claims {
        let found = claim_api.get_opt(&name).await?;
        let dir = found
            .and_then(|c| c.metadata.uid)
            .map(|uid| claim_dir(kubelet_dir, namespace, &uid));
        sources.claims.insert(name, dir);
    }
    Ok(sources)
}

/// Tokens for the pod's projected service-account token volumes, bound to the
/// pod, through the TokenRequest API (what the kubelet does).
async fn request_tokens(
    client: &Client,
    namespace: &str,
    pod: &Pod,
) -> kube::Result<BTreeMap<String, String>> {
    let mut tokens = BTreeMap::new();
    let Some(spec) = pod.spec.as_ref() else {
        return Ok(tokens);
    };
    let account = spec
        .service_account_name
        .clone()
        .unwrap_or_else(|| "default".into());
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    for volume in spec.volumes.iter().flatten() {
        for source in volume
            .projected
            .iter()
            .flat_map(|p| p.sources.iter().flatten())
        {
            let Some(token) = &source.service_account_token else {
                continue;
            };
            let request = TokenRequest {
                spec: Some(TokenRequestSpec {
                    audiences: Some(token.audience.iter().cloned().collect()),
                    expiration_seconds: token.expiration_seconds,
                    bound_object_ref: Some(BoundObjectReference {
                        api_version: Some("v1".into()),
                        kind: Some("Pod".into()),
                        name: pod.metadata.name.clone(),
                        uid: pod.metadata.uid.clone(),
                    }),
                }),
                ..TokenRequest::default()
            };
            let issued: TokenRequest = accounts
                .create_subresource(
                    "token",
                    &account,
                    &kube::api::PostParams::default(),
                    &request,
                )
                .await?;
            let value = issued.status.and_then(|s| s.token).unwrap_or_default();
            tokens.insert(format!("{}/{}", volume.name, token.path), value);
        }
    }
    Ok(tokens)
}

/// Waits `delay` unless the pod is stopped first (then true).
pub(super) async fn sleep_or_stop(
    stop: &mut watch::Receiver<Option<u64>>,
    delay: Duration,
) -> bool {
    let stopped = tokio::select! {
        _ = tokio::time::sleep(delay) => false,
        _ = stop.wait_for(Option::is_some) => true,
    };
    stopped || stop.borrow().is_some()
}

fn new_shared(
    ctx: &Context,
    pod: &Pod,
    init: &[Container],
    containers: &[Container],
) -> Arc<Shared> {
    let views = |list: &[Container]| -> Vec<ContainerView> {
        list.iter()
            .map(|c| ContainerView::new(&c.name, c.image.as_deref().unwrap_or_default()))
            .collect()
    };
    Arc::new(Shared {
        view: std::sync::Mutex::new(PodView {
            pod_ip: None,
            host_ip: ctx.network.bridge_ip().to_string(),
            started: SystemTime::now(),
            init_containers: views(init),
            containers: views(containers),
        }),
        last: tokio::sync::Mutex::new(None),
        api: Api::namespaced(ctx.client.clone(), &pod.namespace().unwrap_or_default()),
        name: pod.name_any(),
    })
}

/// The pod's directory and its network namespace on the bridge.
async fn attach(ctx: &Context, dir: &Path) -> Result<Attachment, String> {
    let network = ctx.network.clone();
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || {
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        network.attach_pod().map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| e.to_string())
    .and_then(|r| r)
}

/// A hosts file as the kubelet writes one: localhost and the pod's own name.
fn write_hosts(path: &Path, ip: std::net::Ipv4Addr, name: &str) {
    let text = format!(
        "# Kubernetes-managed hosts file (process kubelet).\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n{ip}\t{name}\n"
    );
    if let Err(e) = std::fs::write(path, text) {
        tracing::warn!(pod = %name, error = %e, "process kubelet: cannot write the hosts file");
    }
}

/// Writes the pod's volumes, holding every container in `ContainerCreating`
/// (retried, as the kubelet retries mounts) while a source is missing.
/// `None` when the pod is deleted first.
async fn prepare_volumes(
    ctx: &Context,
    pod: &Pod,
    facts: &PodFacts,
    root: &Path,
    shared: &Shared,
    stop: &mut watch::Receiver<Option<u64>>,
) -> Option<Arc<BTreeMap<String, VolumeDir>>> {
    let namespace = pod.namespace().unwrap_or_default();
    loop {
        let prepared = match fetch_sources(&ctx.client, &ctx.dir, &namespace, pod).await {
            Ok(sources) => volumes::prepare(pod, facts, root, &sources),
            Err(e) => Err(Waiting::new(
                "ContainerCreating",
                format!("reading volume sources: {e}"),
            )),
        };
        match prepared {
            Ok(v) => return Some(Arc::new(v)),
            Err(waiting) => {
                shared.update_all(|c| {
                    c.state = State::Waiting {
                        reason: waiting.reason.clone(),
                        message: waiting.message.clone(),
                    }
                });
                shared.publish().await;
                if sleep_or_stop(stop, ctx.options.config_retry).await {
                    return None;
                }
            }
        }
    }
}

async fn run_pod(ctx: Arc<Context>, pod: Arc<Pod>, mut stop: watch::Receiver<Option<u64>>) {
    let namespace = pod.namespace().unwrap_or_default();
    let name = pod.name_any();
    let spec = pod.spec.clone().unwrap_or_default();
    let containers = spec.containers;
    let init_containers = spec.init_containers.unwrap_or_default();
    let shared = new_shared(&ctx, &pod, &init_containers, &containers);
    let dir = pod_dir(&ctx.dir, &namespace, &name);
    let uid: String = pod.uid().unwrap_or_default().chars().take(8).collect();
    let attachment = match attach(&ctx, &dir).await {
        Ok(a) => a,
        Err(e) => {
            shared.update_all(|c| {
                c.state = State::Waiting {
                    reason: "ContainerCreating".into(),
                    message: format!("failed to set up the pod network: {e}"),
                }
            });
            shared.publish().await;
            let _ = stop.wait_for(Option::is_some).await;
            finalize(&ctx.client, &pod).await;
            return;
        }
    };
    if let Ok(mut view) = shared.view.lock() {
        view.pod_ip = Some(attachment.ip.to_string());
    }
    shared.publish().await;
    let facts = PodFacts {
        pod_ip: attachment.ip.to_string(),
        host_ip: ctx.network.bridge_ip().to_string(),
        node_name: ctx.options.node_name.clone(),
    };
    let hosts = dir.join(format!("hosts-{uid}"));
    write_hosts(&hosts, attachment.ip, &name);
    let volume_root = dir.join(format!("volumes-{uid}"));
    let Some(volumes) = prepare_volumes(&ctx, &pod, &facts, &volume_root, &shared, &mut stop).await
    else {
        finalize(&ctx.client, &pod).await;
        return;
    };

    let worker = |init: bool, index: usize, container: &Container| ContainerWorker {
        ctx: ctx.clone(),
        shared: shared.clone(),
        pod: pod.clone(),
        slot: Slot { init, index },
        container: container.clone(),
        volumes: volumes.clone(),
        facts: facts.clone(),
        netns: attachment.path(),
        hosts: hosts.clone(),
        dir: dir.clone(),
    };
    // Init containers one after another, each to success, before the others start.
    if !init_containers.is_empty() {
        shared.update_all(|c| {
            c.state = State::Waiting {
                reason: "PodInitializing".into(),
                message: String::new(),
            }
        });
        for (index, container) in init_containers.iter().enumerate() {
            worker(true, index, container).run(stop.clone()).await;
            if stop.borrow().is_some() || shared.init_failed() {
                break;
            }
        }
        if shared.init_failed() {
            // The pod failed for good: its containers will never start.
            shared.update_all(|c| c.done = true);
        }
    }
    if stop.borrow().is_none() && !shared.init_failed() {
        let mut workers = AbortOnDrop(
            containers
                .iter()
                .enumerate()
                .map(|(index, c)| tokio::spawn(worker(false, index, c).run(stop.clone())))
                .collect(),
        );
        for task in workers.0.iter_mut() {
            // A worker that panicked counts as finished.
            let _ = task.await;
        }
    }
    shared.publish().await;
    // Every container is done: the pod's network goes now (a finished Job pod
    // keeps no namespace); the object stays until it is deleted.
    drop(attachment);
    if stop.borrow().is_none() && shared.all_done() {
        let _ = stop.wait_for(Option::is_some).await;
    }
    finalize(&ctx.client, &pod).await;
}

/// Deletes the pod for good (grace 0), as a kubelet does once its containers are gone.
pub(super) async fn finalize(client: &Client, pod: &Pod) {
    let (Some(namespace), name) = (pod.namespace(), pod.name_any()) else {
        return;
    };
    let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: pod.uid().map(|uid| kube::api::Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(&name, &params).await {
        Ok(_) => {}
        Err(e) if is_not_found(&e) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => tracing::warn!(pod = %name, error = %e, "process kubelet: finalising failed"),
    }
}
