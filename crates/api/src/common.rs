//! Types every OpenStack service resource shares.

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::KubeSchema;
use serde::{Deserialize, Serialize};

/// The service image: a repository plus exactly one of tag or digest.
///
/// The image and `openStackRelease` are bumped together; a tag that names a release
/// must name the declared one (the lockstep guard). A digest, or a tag that names no
/// release, is trusted to match.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("has(self.tag) != has(self.digest)").message("set exactly one of spec.image.tag and spec.image.digest"))]
pub struct ImageSpec {
    /// Image repository, e.g. `registry.example/openstack/cinder`.
    #[schemars(
        length(min = 1, max = 255),
        regex(pattern = ratchet_release::REPOSITORY_CHARACTERS_PATTERN)
    )]
    pub repository: String,
    /// Image tag, e.g. `2026.1` or `2026.1-p1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128), regex(pattern = ratchet_release::TAG_PATTERN))]
    pub tag: Option<String>,
    /// Image digest, `sha256:<64 hex digits>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^sha256:[a-f0-9]{64}$"))]
    pub digest: Option<String>,
}

/// A key in a Secret in the resource's namespace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub secret_name: String,
    /// Key within the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

/// Size of one long-running workload.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpec {
    /// Number of pods (default 1). Two or more keep the service up while it rolls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub replicas: Option<i32>,
    /// CPU and memory requests and limits of the service container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
}

impl WorkloadSpec {
    pub fn replicas_or_default(&self) -> i32 {
        self.replicas.unwrap_or(1)
    }
}

/// The user and groups the service's pods run as (every Deployment,
/// StatefulSet and Job). Each field has a default: the service's own uid
/// (Cinder 42407, Ironic 42422, the uids their usual images give the service
/// user), then the user for the group, then the group for `fsGroup`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodSecurity {
    /// The uid every container runs as; not 0 (pods run with `runAsNonRoot`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 2147483647))]
    pub run_as_user: Option<i64>,
    /// The primary gid every container runs with (default: `runAsUser`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 2147483647))]
    pub run_as_group: Option<i64>,
    /// The supplementary gid that owns the pods' volumes (default: `runAsGroup`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 2147483647))]
    pub fs_group: Option<i64>,
}

/// The user and groups a service's pods run as, defaults applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodIdentity {
    pub run_as_user: i64,
    pub run_as_group: i64,
    pub fs_group: i64,
}

impl PodSecurity {
    /// The identity for a service whose own uid is `default_uid`.
    pub fn identity(security: Option<&PodSecurity>, default_uid: i64) -> PodIdentity {
        let spec = security.cloned().unwrap_or_default();
        let run_as_user = spec.run_as_user.unwrap_or(default_uid);
        let run_as_group = spec.run_as_group.unwrap_or(run_as_user);
        PodIdentity {
            run_as_user,
            run_as_group,
            fs_group: spec.fs_group.unwrap_or(run_as_group),
        }
    }
}

/// One configuration option whose value comes from a Secret key: it reaches the
/// processes as the environment variable oslo.config reads it from
/// (`OS_<SECTION>__<OPTION>`, upper-cased, `-` in the option read as `_`) and never
/// enters the ConfigMap. `extraConfig` may not name it too.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new(crate::oslo::SECRET_DEFAULT_RULE).message("section: write DEFAULT in capitals (oslo.config reads a file's [default] as a group of its own)"))]
pub struct SecretOption {
    /// The section (oslo.config group), e.g. `keystone_authtoken` or a Cinder back
    /// end's name. Words of ASCII letters, digits, `-` and `.`, joined by single `_`.
    #[schemars(length(min = 1, max = 128), regex(pattern = crate::oslo::SECRET_SECTION_PATTERN))]
    pub section: String,
    /// The option, e.g. `password`. Words of ASCII letters, digits and `.`, joined by
    /// single `_` or `-`.
    #[schemars(length(min = 1, max = 128), regex(pattern = crate::oslo::SECRET_OPTION_PATTERN))]
    pub option: String,
    /// Name of the Secret, in the resource's namespace.
    #[schemars(length(min = 1, max = 253))]
    pub secret_name: String,
    /// Key within the Secret whose value is the option's value.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

impl SecretOption {
    /// The Secret key it reads.
    pub fn source(&self) -> SecretKeyRef {
        SecretKeyRef {
            secret_name: self.secret_name.clone(),
            key: self.key.clone(),
        }
    }
}

/// What an upgrade may do beyond keeping every service up.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpgradePolicy {
    /// Whether Ratchet may stop service processes for work that cannot run
    /// while they serve (e.g. Neutron's contract migrations, which need every
    /// server stopped): an outage, taken only with this consent, e.g. in a
    /// maintenance window. Without it such an upgrade holds with
    /// `OutageNotAllowed` before stopping anything. Default false.
    #[serde(default)]
    pub allow_outage: bool,
    /// How many workloads of one role restart at once in a roll, where a role
    /// has several (a Cinder's volume back ends, independent hosts): each is
    /// drained, restarted and given back on its own, and the next role waits
    /// for all of them. Default 1, one after another, as seed `000`'s strict
    /// gate has it; more shortens the roll of many back ends and lengthens the
    /// time old and new code run side by side on fewer of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub max_parallel: Option<u32>,
}

impl UpgradePolicy {
    /// The bound the phase machine rolls by (`SpecView::max_parallel`).
    pub fn parallel_bound(policy: Option<&UpgradePolicy>) -> u32 {
        policy.and_then(|p| p.max_parallel).unwrap_or(1).max(1)
    }
}

// The status every service stores, with the service's own vocabulary of
// upgrade phases `P` (empty, its `Default`, in steady state). A service that
// stores more flattens this into its status. (Not a doc comment: the doc
// comment is what `kubectl explain` shows for `status`.)
/// What Ratchet observed and did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(bound = "P: schemars::JsonSchema + Default + Serialize")]
pub struct UpgradeStatus<P: Default> {
    /// The release the database schema and services are at. During an upgrade,
    /// the release before it; promoted only when the upgrade's last phase succeeds.
    #[serde(default)]
    pub installed_release: String,
    /// The release being upgraded to; empty in steady state.
    #[serde(default)]
    pub target_release: String,
    /// The current upgrade phase; empty in steady state.
    #[serde(default)]
    pub upgrade_phase: P,
    /// When the current upgrade phase began; empty in steady state.
    #[serde(default)]
    pub upgrade_phase_started_at: String,
    /// The workload an upgrade roll is waiting on; empty otherwise.
    #[serde(default)]
    pub rolling_workload: String,
    /// DatabaseReady, DeploymentsReady, Ready.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The events announcing the last change of this status, between the
    /// status write and Ratchet's confirmation that they are published: a
    /// restarted operator publishes them under the same names (never lost,
    /// never doubled). Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_events: Vec<PendingEvent>,
}

/// An event Ratchet has recorded as due and publishes under this name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingEvent {
    /// The Event object's name (derived from the resource and the transition).
    pub name: String,
    /// Normal or Warning.
    #[serde(rename = "type")]
    pub type_: String,
    pub reason: String,
    pub message: String,
}
