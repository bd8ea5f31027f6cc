//! One pod's life on the process kubelet: its network namespace, volumes, init
//! containers then containers (each run by [`super::container`]), the status
//! the kubelet reports at every step, and the final delete once the containers
//! are gone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Pod};
use kube::api::DeleteParams;
use kube::{Api, Client, ResourceExt};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::container::ContainerWorker;
use super::network::Attachment;
use super::pod_state::{
    AbortOnDrop, Context, Shared, Slot, fetch_sources, is_not_found, new_shared, sleep_or_stop,
};
use super::spec::{PodFacts, Waiting};
use super::status::State;
use super::volumes::{self, VolumeDir};

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

/// The pod's directory: logs, termination messages, volumes.
pub fn pod_dir(kubelet_dir: &Path, namespace: &str, name: &str) -> PathBuf {
    namespace_dir(kubelet_dir, namespace).join(name)
}

/// Where a pod's volumes are, under its directory: one root per pod uid (its
/// first 8 characters), so a pod created again under the same name starts
/// with fresh volumes.
pub fn volume_root(pod_dir: &Path, uid: &str) -> PathBuf {
    let short: String = uid.chars().take(8).collect();
    pod_dir.join(format!("volumes-{short}"))
}

/// Where the directories of a namespace's pods are.
pub fn namespace_dir(kubelet_dir: &Path, namespace: &str) -> PathBuf {
    kubelet_dir.join("pods").join(namespace)
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

/// The pod's resolv.conf from its `dnsPolicy` ([`super::dns`]).
fn write_resolv_conf(ctx: &Context, path: &Path, pod: &Pod, namespace: &str) {
    let cluster = ctx
        .options
        .cluster_dns
        .map(|server| super::dns::ClusterDns {
            server,
            domain: ctx.options.cluster_domain.clone(),
        });
    let spec = pod.spec.clone().unwrap_or_default();
    let text = super::dns::resolv_conf(&spec, namespace, cluster.as_ref());
    if let Err(e) = std::fs::write(path, text) {
        tracing::warn!(pod = %pod.name_any(), error = %e, "process kubelet: cannot write resolv.conf");
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
    shared.set_pod_ip(attachment.ip.to_string());
    shared.publish().await;
    let facts = PodFacts {
        pod_ip: attachment.ip.to_string(),
        host_ip: ctx.network.bridge_ip().to_string(),
        node_name: ctx.options.node_name.clone(),
    };
    let hosts = dir.join(format!("hosts-{uid}"));
    write_hosts(&hosts, attachment.ip, &name);
    let resolv = dir.join(format!("resolv-{uid}.conf"));
    write_resolv_conf(&ctx, &resolv, &pod, &namespace);
    let volume_root = volume_root(&dir, &uid);
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
        resolv: resolv.clone(),
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
