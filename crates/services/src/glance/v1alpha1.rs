//! `glance.openstack.c5c3.io/v1alpha1`, kind `Glance`: the resource; its
//! model is `model.rs` beside it, its upgrade flow `profile.rs`.

use std::collections::BTreeMap;

use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use ratchet_api::common::{
    ImageSpec, PodSecurity, SecretKeyRef, SecretOption, UpgradeStatus, WorkloadSpec,
};
use ratchet_api::identity::IdentitySpec;

/// A Glance deployment, and the release it runs.
///
/// Move `openStackRelease` one release forward together with `image` to upgrade;
/// revert both to `status.installedRelease` to abort before Contracting starts.
/// Run at least two API replicas for an upgrade without downtime.
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "glance.openstack.c5c3.io",
    version = "v1alpha1",
    kind = "Glance",
    plural = "glances",
    namespaced,
    status = "GlanceStatus",
    printcolumn = r#"{"name":"Release","type":"string","jsonPath":".status.installedRelease"}"#,
    printcolumn = r#"{"name":"Target","type":"string","jsonPath":".status.targetRelease","priority":1}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.upgradePhase"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct GlanceSpec {
    /// OpenStack release, `YYYY.N` with N 1 or 2 (e.g. 2026.1).
    #[schemars(regex(pattern = ratchet_release::RELEASE_PATTERN))]
    pub open_stack_release: String,
    /// The image every Glance Job and workload runs.
    pub image: ImageSpec,
    /// The database connection URL (`[database] connection`).
    pub database: SecretKeyRef,
    /// Where image data is kept.
    pub image_store: ImageStoreSpec,
    /// The Keystone every request is authenticated through (the `keystone`
    /// paste flavor, `[keystone_authtoken]`, `[service_user]`). Without it,
    /// Glance serves every request unauthenticated (an explicit choice; not
    /// for production).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentitySpec>,
    /// glance's API (Deployment `<name>-api` and Service `<name>`, port 9292).
    /// Default 1; fewer than 2 is reported as a warning.
    #[serde(default)]
    pub api: WorkloadSpec,
    /// Seconds a rollout may make no progress before it is reported as stalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 10, max = 86400))]
    pub rollout_deadline_seconds: Option<i32>,
    /// Extra `glance-api.conf` settings: section → option → value (e.g.
    /// `paste_deploy.flavor: keystone+caching`, or further stores through
    /// `DEFAULT.enabled_backends`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "ratchet_api::oslo::sections_schema")]
    pub extra_config: BTreeMap<String, BTreeMap<String, String>>,
    /// `glance-api.conf` options whose values come from Secret keys: each
    /// reaches the processes as the variable oslo.config reads,
    /// `OS_<SECTION>__<OPTION>`, never the ConfigMap. Keyed by section and
    /// option; `extraConfig` may not name them too. At most 128.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["section".into(), "option".into()]))]
    #[schemars(length(max = 128))]
    pub secret_options: Vec<SecretOption>,
    /// The user and groups every Glance pod runs as (default 42415 for all three).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurity>,
}

/// Glance's image store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageStoreSpec {
    /// The PersistentVolumeClaim holding image files (glance's file store,
    /// the default store `file`), mounted at `/var/lib/glance/images` in every
    /// API pod. With more than one replica on more than one node it must be
    /// ReadWriteMany: any API pod may serve or delete any image.
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    )]
    pub file_volume_claim: String,
}

/// Where an upgrade is. Empty in steady state.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum GlanceUpgradePhase {
    #[default]
    #[serde(rename = "")]
    None,
    Expanding,
    Migrating,
    RollingUpdate,
    Contracting,
}

/// What Ratchet observed and did.
pub type GlanceStatus = UpgradeStatus<GlanceUpgradePhase>;
