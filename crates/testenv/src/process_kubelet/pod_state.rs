//! What a pod's workers share ([`super::pod`] runs the pod, [`super::container`]
//! each container): the kubelet's context, the pod's view and the status last
//! reported from it, which container a worker runs, and what the pod's volumes
//! are made from, fetched from the API server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, PersistentVolumeClaim, Pod, Secret, ServiceAccount,
};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::ProcessKubeletOptions;
use super::images::Catalogue;
use super::network::{NetnsRuntime, PodNetwork};
use super::spec::{self, Sources};
use super::status::{self, ContainerView, PodView};

/// What every pod worker shares.
pub(super) struct Context {
    pub client: Client,
    pub catalogue: Arc<Catalogue>,
    pub network: Arc<PodNetwork>,
    pub node: Arc<NetnsRuntime>,
    pub options: ProcessKubeletOptions,
    pub dir: PathBuf,
}

/// A PersistentVolumeClaim's storage on this node: a directory per claim (by
/// UID, so a claim made again starts empty), kept across the pods that mount it.
pub fn claim_dir(kubelet_dir: &Path, namespace: &str, uid: &str) -> PathBuf {
    kubelet_dir.join("claims").join(namespace).join(uid)
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
    /// Records the address the pod's network namespace got.
    pub(super) fn set_pod_ip(&self, ip: String) {
        if let Ok(mut view) = self.view.lock() {
            view.pod_ip = Some(ip);
        }
    }

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

    pub(super) fn update_all(&self, f: impl Fn(&mut ContainerView)) {
        if let Ok(mut view) = self.view.lock() {
            view.init_containers.iter_mut().for_each(&f);
            view.containers.iter_mut().for_each(&f);
        }
    }

    pub(super) fn all_done(&self) -> bool {
        self.view
            .lock()
            .map(|v| v.containers.iter().all(|c| c.done))
            .unwrap_or(true)
    }

    pub(super) fn init_failed(&self) -> bool {
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

/// The pod's shared state before any container ran.
pub(super) fn new_shared(
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
