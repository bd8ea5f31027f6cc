//! Registering a kubelet's Ready node: what both kubelets (simulated and
//! process) say about themselves, told apart only by these fields.

use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::json;

use crate::binding;
use crate::error::Result;

/// How a kubelet describes its node.
pub struct NodeDescription<'a> {
    pub name: &'a str,
    /// `binding::SIMULATED` or `binding::PROCESS`.
    pub kind: &'a str,
    /// The server-side-apply field manager.
    pub manager: &'a str,
    pub cpu: &'a str,
    pub memory: &'a str,
    pub pods: &'a str,
    pub internal_ip: String,
    /// The Ready condition's message.
    pub message: &'a str,
    pub kubelet_version: &'a str,
    pub runtime: &'a str,
    pub os_image: &'a str,
}

/// Creates (or takes over) the node and reports it Ready.
pub async fn register(client: &Client, node: &NodeDescription<'_>) -> Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let name = node.name;
    let object = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": { "name": name, "labels": binding::node_labels(name, node.kind) },
    });
    let params = PatchParams::apply(node.manager).force();
    nodes.patch(name, &params, &Patch::Apply(&object)).await?;
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let resources = json!({ "cpu": node.cpu, "memory": node.memory, "pods": node.pods });
    let status = json!({
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "addresses": [{ "type": "InternalIP", "address": node.internal_ip }, { "type": "Hostname", "address": name }],
            "conditions": [{
                "type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": node.message,
                "lastHeartbeatTime": now, "lastTransitionTime": now,
            }],
            "nodeInfo": {
                "architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": node.kubelet_version,
                "kubeProxyVersion": "", "containerRuntimeVersion": node.runtime, "kernelVersion": "",
                "osImage": node.os_image, "machineID": "", "systemUUID": "", "bootID": "",
            },
        }
    });
    nodes
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    // The API server taints a new node `node.kubernetes.io/not-ready`
    // (admission's TaintNodesByCondition) and the node lifecycle controller,
    // which the local cluster leaves out, lifts it once the node is Ready. A
    // DaemonSet places no pod on a node with that taint: lifted here, as that
    // controller would.
    let untainted = json!({ "spec": { "taints": [] } });
    nodes
        .patch(name, &PatchParams::default(), &Patch::Merge(&untainted))
        .await?;
    Ok(())
}
