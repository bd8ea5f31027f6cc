//! `ironic.openstack.c5c3.io/v1alpha1`, kind `Ironic`: the resource; its model
//! is `model.rs` beside it, its upgrade flow `profile.rs`.

use std::collections::BTreeMap;

use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use ratchet_api::common::{
    ImageSpec, PodSecurity, SecretKeyRef, SecretOption, UpgradeStatus, WorkloadSpec,
};
use ratchet_api::identity::IdentitySpec;

/// An Ironic deployment, and the release it runs.
///
/// Move `openStackRelease` one release forward together with `image` to upgrade;
/// revert both to `status.installedRelease` to abort before unpinning starts.
/// Run at least two API and two conductor replicas for minimal downtime.
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "ironic.openstack.c5c3.io",
    version = "v1alpha1",
    kind = "Ironic",
    plural = "ironics",
    namespaced,
    status = "IronicStatus",
    printcolumn = r#"{"name":"Release","type":"string","jsonPath":".status.installedRelease"}"#,
    printcolumn = r#"{"name":"Target","type":"string","jsonPath":".status.targetRelease","priority":1}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.upgradePhase"}"#,
    printcolumn = r#"{"name":"Pinned","type":"string","jsonPath":".status.pinnedRelease"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct IronicSpec {
    /// OpenStack release, `YYYY.N` with N 1 or 2 (e.g. 2026.1).
    #[schemars(regex(pattern = ratchet_release::RELEASE_PATTERN))]
    pub open_stack_release: String,
    /// The image every Ironic Job and workload runs.
    pub image: ImageSpec,
    /// The database connection URL (`[database] connection`).
    pub database: SecretKeyRef,
    /// The message bus URL (`[DEFAULT] transport_url`).
    pub transport: SecretKeyRef,
    /// The Keystone ironic-api validates every request's token against, and
    /// Ironic's service user there (registered by Ratchet: user, catalogue
    /// entry `baremetal`, endpoints), which conductors also log in as to find
    /// the API in the catalogue (`[service_catalog]`). Without it,
    /// `[DEFAULT] auth_strategy` is Ironic's default or what `extraConfig` sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentitySpec>,
    /// ironic-api (Deployment `<name>-api` and Service `<name>`). Default 1;
    /// fewer than 2 is reported as a warning.
    #[serde(default)]
    pub api: WorkloadSpec,
    /// ironic-conductor (StatefulSet `<name>-conductor`: conductors register
    /// their host names in the database, so their identities are stable).
    #[serde(default)]
    pub conductor: WorkloadSpec,
    /// Seconds a rollout may make no progress before it is reported as stalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 10, max = 86400))]
    pub rollout_deadline_seconds: Option<i32>,
    /// Extra `ironic.conf` settings: section → option → value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "ratchet_api::oslo::sections_schema")]
    pub extra_config: BTreeMap<String, BTreeMap<String, String>>,
    /// `ironic.conf` options whose values come from Secret keys: each reaches the
    /// processes as the variable oslo.config reads, `OS_<SECTION>__<OPTION>`, never
    /// the ConfigMap. Keyed by section and option; `extraConfig` may not name them
    /// too. At most 128.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["section".into(), "option".into()]))]
    #[schemars(length(max = 128))]
    pub secret_options: Vec<SecretOption>,
    /// The user and groups every Ironic pod runs as (default 42422 for all three).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurity>,
}

/// Where an upgrade is. Empty in steady state.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum IronicUpgradePhase {
    #[default]
    #[serde(rename = "")]
    None,
    DatabaseUpgrade,
    UpgradeCheck,
    PinnedRoll,
    Unpinning,
    OnlineMigrations,
}

/// What Ratchet observed and did, and the pin new pods run with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct IronicStatus {
    #[serde(flatten)]
    pub upgrade: UpgradeStatus<IronicUpgradePhase>,
    /// The `[DEFAULT] pin_release_version` new pods run with; empty when unpinned.
    #[serde(default)]
    pub pinned_release: String,
}
