//! `cinder.openstack.c5c3.io/v1beta1`, kind `Cinder`.
//!
//! Differs from v1alpha1 in two places: volume back ends are a list of named
//! entries (`volumeBackends`, merged by name) instead of a map, and the image's tag
//! or digest is one field, `image.reference`, replaced as a whole. It also has
//! fields v1alpha1 lacks (`secretOptions`, `securityContext`, `identity`, a
//! back end's `privileged`); conversion carries them in an annotation.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use ratchet_api::common::{
    ImageSpec, PodSecurity, SecretKeyRef, SecretOption, UpgradePolicy, UpgradeStatus, WorkloadSpec,
};
use ratchet_api::identity::IdentitySpec;

/// A Cinder deployment, and the release it runs.
///
/// Move `openStackRelease` one release forward together with `image` to upgrade;
/// revert both to `status.installedRelease` to abort before the contract phase.
#[derive(CustomResource, KubeSchema, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "cinder.openstack.c5c3.io",
    version = "v1beta1",
    kind = "Cinder",
    plural = "cinders",
    namespaced,
    status = "CinderStatus",
    derive = "PartialEq",
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
    pub image: Image,
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
    /// Volume back ends, each with a unique name; each runs as Deployment
    /// `<name>-volume-<backend>`. Server-side apply merges entries by name.
    /// At most 64 (a bound the API server needs to afford the CEL rules on each
    /// back end's option names).
    #[serde(default)]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    #[schemars(length(max = 64))]
    pub volume_backends: Vec<VolumeBackend>,
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
    /// `cinder.conf` options whose values come from Secret keys (passwords, keys):
    /// each reaches the processes as the variable oslo.config reads,
    /// `OS_<SECTION>__<OPTION>`, never the ConfigMap. Keyed by section and option;
    /// `extraConfig` and back-end options may not name them too. At most 128.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["section".into(), "option".into()]))]
    #[schemars(length(max = 128))]
    pub secret_options: Vec<SecretOption>,
    /// The user and groups every Cinder pod runs as (default 42407 for all three).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurity>,
    /// The Keystone cinder-api validates every request's token against, and
    /// Cinder's service user there (registered by Ratchet: user, catalogue
    /// entry `block-storage`, endpoints). Without it, `[DEFAULT] auth_strategy`
    /// is Cinder's default or what `extraConfig` sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<IdentitySpec>,
    /// How the upgrade rolls: `maxParallel` volume back ends restart at once
    /// (default 1). `allowOutage` has no effect on Cinder, whose upgrade
    /// stops nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<UpgradePolicy>,
}

/// The service image.
///
/// The image and `openStackRelease` are bumped together; a tag that names a release
/// must name the declared one (the lockstep guard). A digest, or a tag that names no
/// release, is trusted to match.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// Image repository, e.g. `registry.example/openstack/cinder`.
    #[schemars(
        length(min = 1, max = 255),
        regex(pattern = ratchet_release::REPOSITORY_CHARACTERS_PATTERN)
    )]
    pub repository: String,
    /// Which image of the repository: a tag or a digest. Always replaced as a whole,
    /// so switching from a tag to a digest needs no removal of the tag.
    #[x_kube(merge_strategy = MapMerge::Atomic)]
    pub reference: ImageReference,
}

impl Image {
    /// The same image in the flat form Ironic and v1alpha1 use.
    pub fn to_image_spec(&self) -> ImageSpec {
        ImageSpec {
            repository: self.repository.clone(),
            tag: self.reference.tag.clone(),
            digest: self.reference.digest.clone(),
        }
    }
}

/// Exactly one of tag or digest.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("has(self.tag) != has(self.digest)").message("set exactly one of spec.image.reference.tag and spec.image.reference.digest"))]
pub struct ImageReference {
    /// Image tag, e.g. `2026.1` or `2026.1-p1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128), regex(pattern = ratchet_release::TAG_PATTERN))]
    pub tag: Option<String>,
    /// Image digest, `sha256:<64 hex digits>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^sha256:[a-f0-9]{64}$"))]
    pub digest: Option<String>,
}

/// One volume back end.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct VolumeBackend {
    /// The back end's name: a lowercase DNS label of at most 40 characters, unique
    /// among the back ends. It names the back end's section in `cinder.conf` and its
    /// Deployment.
    #[schemars(
        length(min = 1, max = 40),
        regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub name: String,
    /// Number of cinder-volume pods for this back end (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub replicas: Option<i32>,
    /// CPU and memory requests and limits of the cinder-volume container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Options of the back end's section in `cinder.conf` (e.g. `volume_driver`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "ratchet_api::oslo::options_schema")]
    pub options: BTreeMap<String, String>,
    /// Run this back end's cinder-volume as root, privileged, with privilege
    /// escalation allowed: what drivers that call rootwrap (`sudo
    /// cinder-rootwrap`) and manage host devices need, e.g. LVM. Default false:
    /// restricted like every other Cinder pod. Admission answers with a warning.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub privileged: bool,
    /// A PersistentVolumeClaim holding the back end's storage, for drivers that
    /// keep volumes as files: mounted at `/var/lib/cinder/backends/<name>` in the
    /// back end's cinder-volume pods and in every cinder-backup pod, which reads a
    /// volume it backs up from there (a `local` connection). Shared by pods on
    /// more than one node, it must be ReadWriteMany.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
    )]
    pub storage_volume_claim: Option<String>,
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
