//! The contract between a service's folder and the shared controller: what
//! a resource type implements ([`OpenStackService`]) to be driven by it, and
//! the small types it hands over (its conversion webhook, its example).

use std::fmt::Debug;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Resource;
use kube::core::crd::MergeError;
use kube::core::object::HasStatus;
use ratchet_api::common::PendingEvent;
use ratchet_phase_machine::{DesiredStatus, Profile, SpecView, StatusView};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::ini;
use super::model::ServiceModel;
use super::peers::Peers;
use ratchet_api::identity::IdentitySpec;

/// A resource's stored status, as the machine reads it and as it stores the
/// machine's decision.
pub trait ServiceStatus: Sized {
    fn view(&self) -> StatusView;
    fn decided(profile: &Profile, decided: &DesiredStatus) -> Self;
    /// The events recorded as due with this status (see `UpgradeStatus`).
    fn pending_events(&self) -> &[PendingEvent];
    fn pending_events_mut(&mut self) -> &mut Vec<PendingEvent>;
}

/// An OpenStack service resource the shared controller drives.
pub trait OpenStackService:
    Resource<Scope = NamespaceResourceScope, DynamicType = ()>
    + kube::CustomResourceExt
    + HasStatus<Status: ServiceStatus + PartialEq + Serialize + Send + Sync + 'static>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// Lower-case service name: labels, metrics, messages.
    const SERVICE: &'static str;
    /// The pod annotation carrying the installed release (the second roll).
    const INSTALLED_RELEASE_ANNOTATION: &'static str;
    /// The resource annotation recording the last Job whose upgrade check was
    /// reported (exactly once per Job).
    const CHECK_REPORTED_ANNOTATION: &'static str;
    /// Configuration options Ratchet sets itself; `extraConfig` may not name them.
    const MANAGED_OPTIONS: &'static [ini::ManagedOption];
    /// Options Ratchet sets through the pods' environment; `spec.secretOptions`
    /// may not name them (one variable, one owner).
    const ENVIRONMENT_OPTIONS: &'static [ini::ManagedOption] = Self::MANAGED_OPTIONS;
    /// The uid its pods run as unless `spec.securityContext` says otherwise.
    const DEFAULT_UID: i64;
    /// The services whose resources in its namespace its configuration reads
    /// (see `peers`): their changes wake it, [`OpenStackService::model`] gets them.
    const PEERS: &'static [&'static str] = &[];

    /// The CRD Ratchet ships: every served version, this type's stored.
    fn served_crd() -> Result<CustomResourceDefinition, MergeError> {
        Ok(Self::crd())
    }
    /// How the API server converts this resource between its served versions
    /// (`None`: one version, nothing to convert).
    fn conversion() -> Option<Conversion> {
        None
    }
    fn profile() -> Profile;
    fn spec_view(&self) -> SpecView;
    fn status_view(&self) -> StatusView {
        self.status().map(ServiceStatus::view).unwrap_or_default()
    }
    /// The status to store for the machine's decision.
    fn desired_status(profile: &Profile, decided: &DesiredStatus) -> Self::Status {
        Self::Status::decided(profile, decided)
    }
    /// What the resource runs, for the resource named `name` among `peers`
    /// (the resources of [`OpenStackService::PEERS`] in its namespace).
    fn model(&self, name: &str, peers: &Peers) -> ServiceModel;
    /// Its `spec.identity`: how it authenticates, what its peers read of it.
    fn identity(&self) -> Option<&IdentitySpec> {
        None
    }
    /// A small resource of this service named `name` (the demo's): `scale`
    /// sizes what a demo varies, Cinder's volume back ends (Ironic runs two APIs
    /// and two conductors whatever it says).
    fn example(name: &str, release: &str, repository: &str, scale: usize) -> Example;
    /// The example as real processes run it on the test environment's process
    /// kubelet (images from `repository` there, back ends and auth that need
    /// neither privileges nor a Keystone): what the real tests, `ratchet demo
    /// --real` and the real benchmarks install. `None`: no real run yet.
    fn real_example(_name: &str, _release: &str, _repository: &str) -> Option<Example> {
        None
    }
    /// Service-specific reasons admission refuses the resource (the release
    /// and image rules are shared).
    fn violations(&self) -> Vec<String> {
        Vec::new()
    }
    /// What admission admits but tells the client about (e.g. a privileged
    /// workload): `kubectl` prints these as warnings.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A resource's conversion webhook: where reviews arrive, and the pure
/// conversion of one object to the desired `apiVersion`.
pub struct Conversion {
    pub path: &'static str,
    pub convert: fn(serde_json::Value, &str) -> Result<serde_json::Value, String>,
}

/// An example resource, and a few words on its shape.
pub struct Example {
    pub manifest: serde_json::Value,
    pub shape: String,
}
