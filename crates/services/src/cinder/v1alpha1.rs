//! `cinder.openstack.c5c3.io/v1alpha1`, kind `Cinder`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use ratchet_api::common::{ImageSpec, SecretKeyRef, UpgradeStatus, WorkloadSpec};

/// A Cinder deployment, and the release it runs.
///
/// Move `openStackRelease` one release forward together with `image` to upgrade;
/// revert both to `status.installedRelease` to abort before the contract phase.
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "cinder.openstack.c5c3.io",
    version = "v1alpha1",
    kind = "Cinder",
    plural = "cinders",
    namespaced,
    status = "CinderStatus",
    printcolumn = r#"{"name":"Release","type":"string","jsonPath":".status.installedRelease"}"#,
    printcolumn = r#"{"name":"Target","type":"string","jsonPath":".status.targetRelease","priority":1}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.upgradePhase"}"#,
    printcolumn = r#"{"name":"Rolling","type":"string","jsonPath":".status.rollingWorkload","priority":1}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct CinderSpec {
    /// OpenStack release, `YYYY.N` with N 1 or 2 (e.g. 2026.1). Only a single step
    /// forward starts an upgrade.
    #[schemars(regex(pattern = ratchet_release::RELEASE_PATTERN))]
    pub open_stack_release: String,
    /// The image every Cinder Job and workload runs.
    pub image: ImageSpec,
    /// The database connection URL (`[database] connection`).
    pub database: SecretKeyRef,
    /// The message bus URL (`[DEFAULT] transport_url`).
    pub transport: SecretKeyRef,
    /// cinder-api (Deployment `<name>` and Service `<name>`).
    #[serde(default)]
    pub api: WorkloadSpec,
    /// cinder-scheduler (Deployment `<name>-scheduler`).
    #[serde(default)]
    pub scheduler: WorkloadSpec,
    /// cinder-backup (Deployment `<name>-backup`).
    #[serde(default)]
    pub backup: super::BackupSpec,
    /// Volume back ends by name; each runs as Deployment `<name>-volume-<backend>`.
    /// At most 64.
    #[serde(default)]
    #[schemars(extend("maxProperties" = 64))]
    #[x_kube(validation = Rule::new("self.all(k, k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && size(k) <= 40)").message("volume back-end names must be lowercase DNS labels of at most 40 characters"))]
    pub volumes: BTreeMap<String, VolumeBackendSpec>,
    /// Seconds a workload's rollout may make no progress before it is reported
    /// as stalled (condition and Warning event; the upgrade keeps waiting).
    /// Default 600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 10, max = 86400))]
    pub rollout_deadline_seconds: Option<i32>,
    /// Extra `cinder.conf` settings: section → option → value. Secrets do not belong
    /// here (the ConfigMap is readable); the database and transport URLs come from
    /// their Secrets.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "ratchet_api::oslo::sections_schema")]
    pub extra_config: BTreeMap<String, BTreeMap<String, String>>,
}

/// One volume back end.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeBackendSpec {
    /// Number of cinder-volume pods for this back end (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Options of the back end's section in `cinder.conf` (e.g. `volume_driver`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "ratchet_api::oslo::options_schema")]
    pub options: BTreeMap<String, String>,
}

/// Where an upgrade is. Empty in steady state.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum CinderUpgradePhase {
    #[default]
    #[serde(rename = "")]
    None,
    Expanding,
    Migrating,
    RollingUpdate,
    Contracting,
}

/// What Ratchet observed and did.
pub type CinderStatus = UpgradeStatus<CinderUpgradePhase>;
