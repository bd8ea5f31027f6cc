//! `neutron.openstack.c5c3.io/v1alpha1`, kind `Neutron`: the resource; its
//! model is `model.rs` beside it, its upgrade flow `profile.rs`.

use std::collections::BTreeMap;

use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use ratchet_api::common::{
    ImageSpec, PodSecurity, SecretKeyRef, SecretOption, UpgradePolicy, UpgradeStatus, WorkloadSpec,
};
use ratchet_api::identity::IdentitySpec;

/// A Neutron deployment (its server side and its per-node agents), and the
/// release it runs.
///
/// Move `openStackRelease` one release forward together with `image` to upgrade;
/// revert both to `status.installedRelease` to abort before Contracting starts.
/// Run at least two API and two RPC server replicas for an upgrade without
/// downtime. Upgrade it after Nova and before Cinder.
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "neutron.openstack.c5c3.io",
    version = "v1alpha1",
    kind = "Neutron",
    plural = "neutrons",
    namespaced,
    status = "NeutronStatus",
    printcolumn = r#"{"name":"Release","type":"string","jsonPath":".status.installedRelease"}"#,
    printcolumn = r#"{"name":"Target","type":"string","jsonPath":".status.targetRelease","priority":1}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.upgradePhase"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct NeutronSpec {
    /// OpenStack release, `YYYY.N` with N 1 or 2 (e.g. 2026.1).
    #[schemars(regex(pattern = ratchet_release::RELEASE_PATTERN))]
    pub open_stack_release: String,
    /// The image every Neutron Job and workload runs.
    pub image: ImageSpec,
    /// The database connection URL (`[database] connection`).
    pub database: SecretKeyRef,
    /// The message bus URL (`[DEFAULT] transport_url`).
    pub transport: SecretKeyRef,
    /// The Keystone every API request is authenticated through (`[DEFAULT]
    /// auth_strategy = keystone`, `[keystone_authtoken]`), and Neutron's
    /// service user there (registered by Ratchet: user, catalogue entry
    /// `network`, endpoints). Without it, the API authenticates as
    /// `extraConfig` says (`[DEFAULT] auth_strategy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentitySpec>,
    /// The API under uWSGI (Deployment `<name>-api` and Service `<name>`,
    /// port 9696). Default 1; fewer than 2 is reported as a warning.
    #[serde(default)]
    pub api: WorkloadSpec,
    /// neutron-rpc-server (Deployment `<name>-rpc-server`): the agents' and
    /// plugins' RPC. Default 1; fewer than 2 is reported as a warning.
    #[serde(default)]
    pub rpc_server: WorkloadSpec,
    /// neutron-periodic-workers (Deployment `<name>-periodic-workers`): the
    /// plugins' periodic tasks (e.g. marking agents dead). Default 1.
    #[serde(default)]
    pub periodic_workers: WorkloadSpec,
    /// The per-node agents, one pod on each node they are placed on.
    #[serde(default)]
    pub agents: NeutronAgents,
    /// What an upgrade may do: `allowOutage` lets contract migrations that need
    /// every server stopped run (none has been added since Newton; Ratchet
    /// asks `neutron-db-manage has_offline_migrations` at each upgrade).
    #[serde(default)]
    pub upgrade: UpgradePolicy,
    /// Seconds a rollout may make no progress before it is reported as stalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 10, max = 86400))]
    pub rollout_deadline_seconds: Option<i32>,
    /// Extra `neutron.conf` settings: section → option → value (ML2's
    /// options are sections of this file, e.g. `ml2`, `ml2_type_vlan`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "ratchet_api::oslo::sections_schema")]
    pub extra_config: BTreeMap<String, BTreeMap<String, String>>,
    /// `neutron.conf` options whose values come from Secret keys: each
    /// reaches the processes as the variable oslo.config reads,
    /// `OS_<SECTION>__<OPTION>`, never the ConfigMap. Keyed by section and
    /// option; `extraConfig` may not name them too. At most 128.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["section".into(), "option".into()]))]
    #[schemars(length(max = 128))]
    pub secret_options: Vec<SecretOption>,
    /// The user and groups every Neutron pod runs as (default 42435 for all three).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurity>,
}

/// Neutron's agents: each a DaemonSet on the nodes `nodeSelector` picks,
/// known to the server by the node's name (`[DEFAULT] host`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct NeutronAgents {
    /// Labels a node must carry to run the agents (e.g. the network nodes);
    /// empty: every node.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// neutron-metadata-agent (DaemonSet `<name>-metadata-agent`): proxies
    /// instances' metadata requests to Nova; it reports its state to the
    /// server like every agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<AgentSpec>,
}

/// One agent's pods.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentSpec {
    /// CPU and memory requests and limits of the agent's container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<k8s_openapi::api::core::v1::ResourceRequirements>,
}

/// Where an upgrade is. Empty in steady state.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum NeutronUpgradePhase {
    #[default]
    #[serde(rename = "")]
    None,
    Expanding,
    Migrating,
    RollingUpdate,
    Contracting,
}

/// What Ratchet observed and did.
pub type NeutronStatus = UpgradeStatus<NeutronUpgradePhase>;
