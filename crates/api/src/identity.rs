//! How a service authenticates through Keystone: declared once, in the same
//! shape for every service that has an API (`spec.identity`).

use kube::KubeSchema;
use serde::{Deserialize, Serialize};

use crate::common::SecretKeyRef;

/// The region every endpoint and token check names when the spec names none.
pub const DEFAULT_REGION: &str = "RegionOne";
/// The project service users belong to, in the `Default` domain.
pub const SERVICE_PROJECT: &str = "service";
/// The domain of the service users and the service project.
pub const SERVICE_DOMAIN: &str = "Default";
/// The port Keystone's API listens on, behind its Service.
pub const KEYSTONE_API_PORT: i32 = 5000;
/// The Keystone resource a service names, as the operator reads it.
pub const KEYSTONE_GROUP: &str = "keystone.openstack.c5c3.io";
pub const KEYSTONE_VERSION: &str = "v1alpha1";
pub const KEYSTONE_KIND: &str = "Keystone";
/// The user and project `keystone-manage bootstrap` creates, whose password
/// the Keystone resource names in `spec.adminPassword`.
pub const ADMIN_USER: &str = "admin";
pub const ADMIN_PROJECT: &str = "admin";

/// The Keystone a service validates every request against, and its own
/// service user there.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, KubeSchema)]
#[serde(rename_all = "camelCase")]
pub struct IdentitySpec {
    /// Name of the Keystone resource in this namespace. The service reaches
    /// it by its Service's DNS name, `http://<keystone>.<namespace>.svc:5000`.
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub keystone: String,
    /// The service user's password. The user (`username`) belongs to the
    /// project `service` of the `Default` domain and holds the `service` role
    /// there, which lets it validate users' tokens.
    pub password: SecretKeyRef,
    /// The service user's name (default: the service's, e.g. `glance`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 64),
        regex(pattern = r"^[A-Za-z0-9][-A-Za-z0-9_.]*$")
    )]
    pub username: Option<String>,
    /// The region the service's endpoints are in (default `RegionOne`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        length(min = 1, max = 64),
        regex(pattern = r"^[A-Za-z0-9][-A-Za-z0-9_.]*$")
    )]
    pub region: Option<String>,
    /// memcached servers (`host:port`, e.g. `memcached.openstack.svc:11211`)
    /// where keystonemiddleware caches validated tokens; none: every request's
    /// token is checked with Keystone. At most 8.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = 8),
        inner(regex(pattern = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?:[0-9]{1,5}$"))
    )]
    pub memcached_servers: Vec<String>,
}

impl IdentitySpec {
    pub fn username_or<'a>(&'a self, service: &'a str) -> &'a str {
        self.username.as_deref().unwrap_or(service)
    }

    pub fn region_or_default(&self) -> &str {
        self.region.as_deref().unwrap_or(DEFAULT_REGION)
    }

    /// Keystone's URL as the service's pods reach it: its Service's DNS name.
    pub fn keystone_url(&self, namespace: &str, port: i32) -> String {
        format!("http://{}.{namespace}.svc:{port}", self.keystone)
    }
}
