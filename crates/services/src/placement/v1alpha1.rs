//! `placement.openstack.c5c3.io/v1alpha1`, kind `Placement`: the resource;
//! its model is `model.rs` beside it, its upgrade flow `profile.rs`.

use std::collections::BTreeMap;

use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use ratchet_api::common::{
    ImageSpec, PodSecurity, SecretKeyRef, SecretOption, UpgradeStatus, WorkloadSpec,
};
use ratchet_api::identity::IdentitySpec;

/// A Placement deployment, and the release it runs.
///
/// Move `openStackRelease` one release forward together with `image` to upgrade;
/// revert both to `status.installedRelease` to abort before Contracting starts.
/// Run at least two API replicas for an upgrade without downtime. Upgrade it
/// before Nova: nova's services call the newer Placement API, never the reverse.
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "placement.openstack.c5c3.io",
    version = "v1alpha1",
    kind = "Placement",
    plural = "placements",
    namespaced,
    status = "PlacementStatus",
    printcolumn = r#"{"name":"Release","type":"string","jsonPath":".status.installedRelease"}"#,
    printcolumn = r#"{"name":"Target","type":"string","jsonPath":".status.targetRelease","priority":1}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.upgradePhase"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct PlacementSpec {
    /// OpenStack release, `YYYY.N` with N 1 or 2 (e.g. 2026.1).
    #[schemars(regex(pattern = ratchet_release::RELEASE_PATTERN))]
    pub open_stack_release: String,
    /// The image every Placement Job and workload runs.
    pub image: ImageSpec,
    /// The database connection URL (`[placement_database] connection`).
    pub database: SecretKeyRef,
    /// The Keystone every request is authenticated through (`[api]
    /// auth_strategy = keystone`, `[keystone_authtoken]`), and Placement's
    /// service user there (registered by Ratchet: user, catalogue entry
    /// `placement`, endpoints). Without it, the API authenticates as
    /// `extraConfig` says (`[api] auth_strategy`; Placement's default is
    /// `keystone`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentitySpec>,
    /// placement-api (Deployment `<name>-api` and Service `<name>`, port
    /// 8778). Default 1; fewer than 2 is reported as a warning.
    #[serde(default)]
    pub api: WorkloadSpec,
    /// Seconds a rollout may make no progress before it is reported as stalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 10, max = 86400))]
    pub rollout_deadline_seconds: Option<i32>,
    /// Extra `placement.conf` settings: section → option → value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "ratchet_api::oslo::sections_schema")]
    pub extra_config: BTreeMap<String, BTreeMap<String, String>>,
    /// `placement.conf` options whose values come from Secret keys: each
    /// reaches the processes as the variable oslo.config reads,
    /// `OS_<SECTION>__<OPTION>`, never the ConfigMap. Keyed by section and
    /// option; `extraConfig` may not name them too. At most 128.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["section".into(), "option".into()]))]
    #[schemars(length(max = 128))]
    pub secret_options: Vec<SecretOption>,
    /// The user and groups every Placement pod runs as (default 42482 for all three).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurity>,
}

/// Where an upgrade is. Empty in steady state.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum PlacementUpgradePhase {
    #[default]
    #[serde(rename = "")]
    None,
    Expanding,
    Migrating,
    RollingUpdate,
    Contracting,
}

/// What Ratchet observed and did.
pub type PlacementStatus = UpgradeStatus<PlacementUpgradePhase>;
