//! Per-node agents (Neutron's, Nova's computes to come): what a DaemonSet
//! renders — the node's name as the agent's host, its nodes picked by the
//! spec, a node's old pod gone before its new one starts — and the registry's
//! rule that an offline step never names a per-node workload (a DaemonSet has
//! no replicas to scale to none).

use ratchet_operator::registry::{Registry, ServiceFn};
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::model::{ServiceModel, WorkloadKind, WorkloadModel};
use ratchet_operator::service::peers::Peers;
use ratchet_operator::service::render::{self, Owner, PodParams};
use ratchet_phase_machine::Replicas;
use serde_json::Value;

use crate::neutron::v1alpha1::Neutron;

/// Components an offline step of the service's profile stops that its
/// example's model runs per node.
struct StoppedAgents;

impl ServiceFn for StoppedAgents {
    type Output = Vec<String>;
    fn call<S: OpenStackService>(self) -> Self::Output {
        let example: S = super::stored(S::example(S::SERVICE, "2026.1", "repo", 1).manifest);
        let model = example.model(S::SERVICE, &Peers::none());
        let stops: Vec<&str> = S::profile()
            .phases
            .iter()
            .filter_map(|p| p.offline())
            .flat_map(|o| o.stops.iter().copied())
            .collect();
        model
            .workloads
            .iter()
            .filter(|w| w.kind == WorkloadKind::DaemonSet && stops.contains(&w.component.as_str()))
            .map(|w| w.component.clone())
            .collect()
    }
}

#[test]
fn no_offline_step_stops_a_per_node_workload() {
    for name in crate::Services::service_names() {
        let stopped = crate::Services::with_service(name, StoppedAgents).expect("registered");
        assert!(stopped.is_empty(), "{name}: stops per-node {stopped:?}");
    }
}

fn metadata_agent(model: &ServiceModel) -> &WorkloadModel {
    model
        .workloads
        .iter()
        .find(|w| w.kind == WorkloadKind::DaemonSet)
        .expect("the metadata agent")
}

fn neutron(node_selector: Value) -> (Owner, Neutron) {
    let mut manifest = crate::neutron::example_manifest("n", "2026.1", "repo", "2026.1");
    manifest["spec"]["agents"]["nodeSelector"] = node_selector;
    let neutron: Neutron = super::stored(manifest);
    let owner = Owner::of(crate::neutron::SERVICE, &neutron).expect("owner");
    (owner, neutron)
}

fn params(stopped: bool) -> PodParams<'static> {
    PodParams {
        image: "neutron:2026.1",
        installed_release: "2026.1",
        pin: None,
        config_hash: "h",
        installed_release_annotation: Neutron::INSTALLED_RELEASE_ANNOTATION,
        stopped,
        partition: None,
    }
}

#[test]
fn an_agent_runs_on_its_nodes_as_their_host_one_node_at_a_time() {
    let (owner, neutron) = neutron(serde_json::json!({ "node-role/network": "true" }));
    let model = neutron.model("n", &Peers::none());
    let agent = metadata_agent(&model);
    let ids = model.workload_ids();
    let id = ids.iter().find(|w| w.name == agent.name).expect("its id");
    assert_eq!(id.replicas, Replicas::PerNode);
    let rendered = serde_json::to_value(
        render::workload(&owner, &model, agent, &params(false)).expect("renders"),
    )
    .expect("json");
    assert_eq!(rendered["kind"], "DaemonSet", "{rendered}");
    assert_eq!(
        rendered["spec"]["updateStrategy"]["rollingUpdate"],
        serde_json::json!({ "maxSurge": 0, "maxUnavailable": 1 })
    );
    let pod = &rendered["spec"]["template"]["spec"];
    assert_eq!(
        pod["nodeSelector"],
        serde_json::json!({ "node-role/network": "true" })
    );
    let host = pod["containers"][0]["env"]
        .as_array()
        .expect("env")
        .iter()
        .find(|e| e["name"] == "OS_DEFAULT__HOST")
        .expect("the host variable");
    assert_eq!(host["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName");
    assert!(rendered["spec"].get("replicas").is_none());
    // The servers are Deployments placed anywhere, known by their pods' names.
    let server = &model.workloads[0];
    let rendered = serde_json::to_value(
        render::workload(&owner, &model, server, &params(false)).expect("renders"),
    )
    .expect("json");
    assert_eq!(rendered["kind"], "Deployment");
    assert!(rendered["spec"]["template"]["spec"]["nodeSelector"].is_null());
}

#[test]
fn agents_restart_up_to_max_parallel_nodes_at_once() {
    let (owner, mut neutron) = neutron(serde_json::json!({}));
    neutron.spec.upgrade.max_parallel = Some(5);
    let model = neutron.model("n", &Peers::none());
    let agent = metadata_agent(&model);
    let rendered = serde_json::to_value(
        render::workload(&owner, &model, agent, &params(false)).expect("renders"),
    )
    .expect("json");
    assert_eq!(
        rendered["spec"]["updateStrategy"]["rollingUpdate"],
        serde_json::json!({ "maxSurge": 0, "maxUnavailable": 5 })
    );
    // The servers keep their zero-downtime strategy.
    let api = model
        .workloads
        .iter()
        .find(|w| w.component == "api")
        .expect("api");
    let rendered = serde_json::to_value(
        render::workload(&owner, &model, api, &params(false)).expect("renders"),
    )
    .expect("json");
    assert_eq!(
        rendered["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"],
        0
    );
}

#[test]
fn a_per_node_workload_is_never_stopped() {
    let (owner, neutron) = neutron(serde_json::json!({}));
    let model = neutron.model("n", &Peers::none());
    let agent = metadata_agent(&model);
    assert!(render::workload(&owner, &model, agent, &params(true)).is_err());
}
