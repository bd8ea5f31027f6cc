//! `keystone.openstack.c5c3.io/v1alpha1`, kind `Keystone`: the resource; its
//! model is `model.rs` beside it, its upgrade flow `profile.rs`.

use std::collections::BTreeMap;

use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use ratchet_api::common::{
    ImageSpec, PodSecurity, SecretKeyRef, SecretOption, UpgradeStatus, WorkloadSpec,
};

/// A Keystone deployment, and the release it runs.
///
/// Move `openStackRelease` one release forward together with `image` to upgrade;
/// revert both to `status.installedRelease` to abort before Contracting starts.
/// Run at least two API replicas for an upgrade without downtime.
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "keystone.openstack.c5c3.io",
    version = "v1alpha1",
    kind = "Keystone",
    plural = "keystones",
    namespaced,
    status = "KeystoneStatus",
    printcolumn = r#"{"name":"Release","type":"string","jsonPath":".status.installedRelease"}"#,
    printcolumn = r#"{"name":"Target","type":"string","jsonPath":".status.targetRelease","priority":1}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.upgradePhase"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct KeystoneSpec {
    /// OpenStack release, `YYYY.N` with N 1 or 2 (e.g. 2026.1).
    #[schemars(regex(pattern = ratchet_release::RELEASE_PATTERN))]
    pub open_stack_release: String,
    /// The image every Keystone Job and workload runs.
    pub image: ImageSpec,
    /// The database connection URL (`[database] connection`).
    pub database: SecretKeyRef,
    /// The password of the `admin` user that `keystone-manage bootstrap`
    /// creates (and resets to this value whenever the sync Job runs).
    pub admin_password: SecretKeyRef,
    /// The region the identity endpoints are registered in. Default `RegionOne`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 64),
        regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    )]
    pub region: Option<String>,
    /// keystone's API (Deployment `<name>-api` and Service `<name>`, port 5000).
    /// Default 1; fewer than 2 is reported as a warning.
    #[serde(default)]
    pub api: WorkloadSpec,
    /// Seconds a rollout may make no progress before it is reported as stalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 10, max = 86400))]
    pub rollout_deadline_seconds: Option<i32>,
    /// Extra `keystone.conf` settings: section → option → value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "ratchet_api::oslo::sections_schema")]
    pub extra_config: BTreeMap<String, BTreeMap<String, String>>,
    /// `keystone.conf` options whose values come from Secret keys: each reaches
    /// the processes as the variable oslo.config reads, `OS_<SECTION>__<OPTION>`,
    /// never the ConfigMap. Keyed by section and option; `extraConfig` may not
    /// name them too. At most 128.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["section".into(), "option".into()]))]
    #[schemars(length(max = 128))]
    pub secret_options: Vec<SecretOption>,
    /// The user and groups every Keystone pod runs as (default 42425 for all three).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurity>,
}

/// Where an upgrade is. Empty in steady state.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum KeystoneUpgradePhase {
    #[default]
    #[serde(rename = "")]
    None,
    Expanding,
    Migrating,
    RollingUpdate,
    Contracting,
}

/// What Ratchet observed and did.
pub type KeystoneStatus = UpgradeStatus<KeystoneUpgradePhase>;

#[cfg(test)]
mod tests {
    use kube::Resource;
    use ratchet_api::identity::{KEYSTONE_GROUP, KEYSTONE_KIND, KEYSTONE_VERSION};

    use super::*;

    /// The operator reads a Keystone named by `spec.identity` by these words,
    /// and its `spec.adminPassword` by that name.
    #[test]
    fn the_identity_constants_name_this_resource() {
        assert_eq!(Keystone::group(&()), KEYSTONE_GROUP);
        assert_eq!(Keystone::version(&()), KEYSTONE_VERSION);
        assert_eq!(Keystone::kind(&()), KEYSTONE_KIND);
        let manifest =
            crate::keystone::resource::example_manifest("k", "2026.1", "keystone", "2026.1", 1);
        let keystone: Result<Keystone, _> = serde_json::from_value(manifest);
        let spec = keystone
            .ok()
            .and_then(|k| serde_json::to_value(k.spec).ok())
            .unwrap_or_default();
        assert_eq!(
            spec["adminPassword"]["secretName"], "keystone-admin",
            "{spec}"
        );
    }
}
