//! Other services' resources in a resource's namespace, as its configuration
//! reads them: Neutron notifies a Nova that shares its Keystone, Nova finds
//! that Neutron in its region. A service names the services it reads
//! ([`OpenStackService::PEERS`]); its pass gets them from the operator's own
//! watch caches of those resources (`peer_directory.rs`).
//!
//! [`OpenStackService::PEERS`]: super::contract::OpenStackService::PEERS

use ratchet_api::identity::IdentitySpec;

/// A service resource as a peer's configuration reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    pub service: &'static str,
    pub name: String,
    /// Its `spec.identity`: the Keystone it registers in, its region.
    pub identity: Option<IdentitySpec>,
}

impl Peer {
    /// Whether it registers in the Keystone `identity` names: the one cloud's
    /// catalogue both find each other in.
    pub fn shares_keystone(&self, identity: &IdentitySpec) -> bool {
        self.identity
            .as_ref()
            .is_some_and(|own| own.keystone == identity.keystone)
    }
}

/// The peers of one resource: the resources of the services it reads, in its
/// namespace, by service then name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Peers(Vec<Peer>);

impl Peers {
    /// No peers: a resource alone (and what `ratchet plan` renders with).
    pub fn none() -> Peers {
        Peers::default()
    }

    pub fn new(mut peers: Vec<Peer>) -> Peers {
        peers.sort_by(|a, b| (a.service, &a.name).cmp(&(b.service, &b.name)));
        Peers(peers)
    }

    /// The first resource of `service` (by name) registering in the Keystone
    /// `identity` names: two would register the same catalogue entry, so at
    /// most one serves a cloud.
    pub fn in_cloud_of(&self, service: &str, identity: &IdentitySpec) -> Option<&Peer> {
        self.0
            .iter()
            .find(|peer| peer.service == service && peer.shares_keystone(identity))
    }
}
