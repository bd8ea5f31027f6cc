//! Which kubelet binds a pod when the simulated and the process kubelet serve one
//! cluster (pure; both kubelets decide with it, so they never bind the same pod).
//!
//! The rule, in order:
//! 0. A pod whose required node affinity names nodes by `metadata.name` (what
//!    the DaemonSet controller gives each of its pods) goes to the named node.
//! 1. A pod whose `spec.nodeSelector` names a node explicitly — by
//!    `kubernetes.io/hostname` or by [`KUBELET_LABEL`] — goes to the node whose
//!    labels match the whole selector, as the scheduler would place it.
//! 2. Otherwise a pod in a namespace labelled `ratchet.dev/kubelet=process` goes
//!    to the process kubelet: the operator's rendered pods need no change to run
//!    as real processes.
//! 3. Every other pod goes to the simulated kubelet.
//!
//! In every case the pod's `nodeSelector` must match the node's labels. Pods
//! created with `spec.nodeName` are already bound: the kubelet of that node runs them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

/// The label on namespaces (and nodes) saying which kubelet serves them.
pub const KUBELET_LABEL: &str = "ratchet.dev/kubelet";
/// [`KUBELET_LABEL`]'s value for the process kubelet.
pub const PROCESS: &str = "process";
/// [`KUBELET_LABEL`]'s value for the simulated kubelet's node.
pub const SIMULATED: &str = "sim";
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// The labels a kubelet's node carries.
pub fn node_labels(node_name: &str, kind: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (HOSTNAME_LABEL.to_string(), node_name.to_string()),
        ("kubernetes.io/os".to_string(), "linux".to_string()),
        (KUBELET_LABEL.to_string(), kind.to_string()),
    ])
}

/// Whether the kubelet whose node has `node_labels` should bind the unbound
/// `pod`, whose namespace has `namespace_labels`.
pub fn binds(
    pod: &Pod,
    namespace_labels: &BTreeMap<String, String>,
    node_labels: &BTreeMap<String, String>,
) -> bool {
    let empty = BTreeMap::new();
    let selector = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_selector.as_ref())
        .unwrap_or(&empty);
    let matches = selector.iter().all(|(k, v)| node_labels.get(k) == Some(v));
    if !matches {
        return false;
    }
    if let Some(named) = nodes_named_by_affinity(pod) {
        return node_labels
            .get(HOSTNAME_LABEL)
            .is_some_and(|node| named.contains(node));
    }
    let explicit = selector.contains_key(HOSTNAME_LABEL) || selector.contains_key(KUBELET_LABEL);
    if explicit {
        return true;
    }
    let namespace_wants_process =
        namespace_labels.get(KUBELET_LABEL).map(String::as_str) == Some(PROCESS);
    let node_is_process = node_labels.get(KUBELET_LABEL).map(String::as_str) == Some(PROCESS);
    namespace_wants_process == node_is_process
}

/// The node names a pod's required node affinity allows by `metadata.name`,
/// if it names any (the DaemonSet controller pins each pod to its node so).
fn nodes_named_by_affinity(pod: &Pod) -> Option<Vec<String>> {
    let terms = &pod
        .spec
        .as_ref()?
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    let named: Vec<String> = terms
        .iter()
        .flat_map(|t| t.match_fields.iter().flatten())
        .filter(|f| f.key == "metadata.name" && f.operator == "In")
        .flat_map(|f| f.values.iter().flatten().cloned())
        .collect();
    (!named.is_empty()).then_some(named)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(selector: &[(&str, &str)]) -> Pod {
        let mut pod = Pod::default();
        let mut spec = k8s_openapi::api::core::v1::PodSpec::default();
        if !selector.is_empty() {
            spec.node_selector = Some(
                selector
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            );
        }
        pod.spec = Some(spec);
        pod
    }

    /// `pod` as the DaemonSet controller pins it to `node`.
    fn on_node(mut pod: Pod, node: &str) -> Pod {
        use k8s_openapi::api::core::v1::{
            Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
        };
        let term = NodeSelectorTerm {
            match_fields: Some(vec![NodeSelectorRequirement {
                key: "metadata.name".into(),
                operator: "In".into(),
                values: Some(vec![node.into()]),
            }]),
            ..NodeSelectorTerm::default()
        };
        if let Some(spec) = pod.spec.as_mut() {
            spec.affinity = Some(Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                        node_selector_terms: vec![term],
                    }),
                    ..NodeAffinity::default()
                }),
                ..Affinity::default()
            });
        }
        pod
    }

    fn ns(process: bool) -> BTreeMap<String, String> {
        if process {
            BTreeMap::from([(KUBELET_LABEL.to_string(), PROCESS.to_string())])
        } else {
            BTreeMap::new()
        }
    }

    #[test]
    fn exactly_one_kubelet_binds_each_pod() {
        let sim = node_labels("sim-node-0", SIMULATED);
        let process = node_labels("process-node-0", PROCESS);
        let cases = [
            (pod(&[]), false, "sim"),
            (pod(&[]), true, "process"),
            (pod(&[("kubernetes.io/os", "linux")]), true, "process"),
            (pod(&[(HOSTNAME_LABEL, "process-node-0")]), false, "process"),
            (pod(&[(KUBELET_LABEL, PROCESS)]), false, "process"),
            (pod(&[(HOSTNAME_LABEL, "sim-node-0")]), true, "sim"),
            (pod(&[(HOSTNAME_LABEL, "elsewhere")]), false, "none"),
            (on_node(pod(&[]), "process-node-0"), false, "process"),
            (on_node(pod(&[]), "sim-node-0"), true, "sim"),
            (on_node(pod(&[]), "elsewhere"), true, "none"),
            (
                on_node(pod(&[(KUBELET_LABEL, PROCESS)]), "sim-node-0"),
                false,
                "none",
            ),
        ];
        for (pod, process_ns, want) in cases {
            let labels = ns(process_ns);
            let got = match (binds(&pod, &labels, &sim), binds(&pod, &labels, &process)) {
                (true, false) => "sim",
                (false, true) => "process",
                (false, false) => "none",
                (true, true) => "both",
            };
            assert_eq!(
                got, want,
                "{:?} in process namespace: {process_ns}",
                pod.spec
            );
        }
    }
}
