//! Types every OpenStack service resource shares.

use k8s_openapi::api::core::v1::ResourceRequirements;
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
