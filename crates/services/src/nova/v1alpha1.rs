//! `nova.openstack.c5c3.io/v1alpha1`, kind `Nova`: the resource; its model is
//! `model.rs` beside it, its upgrade flow `profile.rs`.

use std::collections::BTreeMap;

use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use ratchet_api::common::{
    ImageSpec, PodSecurity, SecretKeyRef, SecretOption, UpgradeStatus, WorkloadSpec,
};
use ratchet_api::identity::IdentitySpec;

/// A Nova deployment: its API, scheduler and super-conductor over the API
/// database and cell0, and its cells, each with its own database, message
/// bus, conductors and computes; and the release it runs.
///
/// Move `openStackRelease` one release forward together with `image` to upgrade;
/// revert both to `status.installedRelease` to abort while the computes still
/// roll. Run at least two replicas of each control-plane workload for an
/// upgrade without downtime. Upgrade it after Placement and Ironic, before
/// Neutron.
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "nova.openstack.c5c3.io",
    version = "v1alpha1",
    kind = "Nova",
    plural = "novas",
    namespaced,
    status = "NovaStatus",
    printcolumn = r#"{"name":"Release","type":"string","jsonPath":".status.installedRelease"}"#,
    printcolumn = r#"{"name":"Target","type":"string","jsonPath":".status.targetRelease","priority":1}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.upgradePhase"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct NovaSpec {
    /// OpenStack release, `YYYY.N` with N 1 or 2 (e.g. 2026.1).
    #[schemars(regex(pattern = ratchet_release::RELEASE_PATTERN))]
    pub open_stack_release: String,
    /// The image every Nova Job and workload runs.
    pub image: ImageSpec,
    /// The API database's connection URL (`[api_database] connection`): cell
    /// mappings, flavors, request specs.
    pub api_database: SecretKeyRef,
    /// The message bus of the API, the scheduler and the super-conductor
    /// (`[DEFAULT] transport_url`).
    pub transport: SecretKeyRef,
    /// cell0, where instances that were never scheduled live.
    pub cell0: Cell0Spec,
    /// The cells the computes run in (at least one), each with its own
    /// database, message bus, conductors and computes. Names are unique DNS
    /// labels of at most 15 characters, not `cell0`.
    #[schemars(length(min = 1, max = 16))]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub cells: Vec<CellSpec>,
    /// The Keystone every API request is authenticated through
    /// (`[keystone_authtoken]`), and Nova's service user there (registered by
    /// Ratchet: user, catalogue entry `compute`, endpoints), which Nova also
    /// logs in as to reach Placement and Neutron through the catalogue
    /// (`[placement]`, `[neutron]`) and sends beside a user's token
    /// (`[service_user]`). Nova's API authenticates only through Keystone:
    /// without this field, configure those sections in `extraConfig`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentitySpec>,
    /// The compute API under uWSGI (Deployment `<name>-api` and Service
    /// `<name>`, port 8774). Default 1; fewer than 2 is reported as a warning.
    #[serde(default)]
    pub api: WorkloadSpec,
    /// nova-scheduler (StatefulSet `<name>-scheduler`). Default 1.
    #[serde(default)]
    pub scheduler: WorkloadSpec,
    /// The super-conductor (StatefulSet `<name>-conductor`): builds and
    /// reschedules across cells. Default 1.
    #[serde(default)]
    pub conductor: WorkloadSpec,
    /// What an upgrade does, before its roll, with a service row whose host
    /// none of this resource's pods is (a compute scaled in, a node
    /// removed): `ForceDown` (the default) forces it down through Nova, so it
    /// neither holds the `compute = auto` pin at its old version nor trips
    /// Nova's version checks, and unsetting it undoes that; `Report` only
    /// names it. Either way the upgrade's `MigrateComplete` event names them.
    #[serde(default)]
    pub stale_services: StaleServices,
    /// Seconds a rollout may make no progress before it is reported as stalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 10, max = 86400))]
    pub rollout_deadline_seconds: Option<i32>,
    /// Extra `nova.conf` settings: section → option → value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "ratchet_api::oslo::sections_schema")]
    pub extra_config: BTreeMap<String, BTreeMap<String, String>>,
    /// `nova.conf` options whose values come from Secret keys: each reaches
    /// the processes as the variable oslo.config reads,
    /// `OS_<SECTION>__<OPTION>`, never the ConfigMap. Keyed by section and
    /// option; `extraConfig` may not name them too. At most 128.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["section".into(), "option".into()]))]
    #[schemars(length(max = 128))]
    pub secret_options: Vec<SecretOption>,
    /// The user and groups every Nova pod runs as (default 42436 for all three).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurity>,
}

/// What an upgrade does with stale service rows.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum StaleServices {
    /// Force them down (reversible: `openstack compute service set --up`).
    #[default]
    ForceDown,
    /// Only name them.
    Report,
}

impl StaleServices {
    pub fn as_str(self) -> &'static str {
        match self {
            StaleServices::ForceDown => "ForceDown",
            StaleServices::Report => "Report",
        }
    }
}

/// cell0's database.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cell0Spec {
    /// cell0's database connection URL.
    pub database: SecretKeyRef,
}

/// One cell.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct CellSpec {
    /// The cell's name in Nova's cell mappings, and the end of its Jobs' and
    /// workloads' names.
    #[schemars(regex(pattern = r"^[a-z]([a-z0-9-]{0,13}[a-z0-9])?$"))]
    pub name: String,
    /// The cell's database connection URL.
    pub database: SecretKeyRef,
    /// The cell's message bus URL.
    pub transport: SecretKeyRef,
    /// The cell's conductors (StatefulSet `<name>-<cell>-conductor`). Default 1.
    #[serde(default)]
    pub conductor: WorkloadSpec,
    /// The cell's computes (StatefulSet `<name>-<cell>-compute`): Nova's fake
    /// driver, a hypervisor per pod named after it, whose node identity lives
    /// on a claim of its own. Default 1.
    #[serde(default)]
    pub computes: WorkloadSpec,
}

/// Where an upgrade is. Empty in steady state.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum NovaUpgradePhase {
    #[default]
    #[serde(rename = "")]
    None,
    Expanding,
    Migrating,
    RollingUpdate,
    Contracting,
}

/// What Ratchet observed and did.
pub type NovaStatus = UpgradeStatus<NovaUpgradePhase>;
