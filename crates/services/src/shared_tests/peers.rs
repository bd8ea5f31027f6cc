//! Which watch events of a peer wake its readers (`peer_directory::Tap`), and what a
//! reader is given (`peer_directory::Directory`'s view): creation, deletion and a
//! changed identity do; a status update does not.

use kube::runtime::watcher::Event;
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::peer_directory::Tap;
use ratchet_operator::service::peers::{Peer, Peers};

use crate::nova::v1alpha1::Nova;

/// A resource of `service` named `name` registering in Keystone `keystone`
/// (in `region`, or the default): what a reader is given of a peer.
pub fn peer(service: &'static str, name: &str, keystone: &str, region: Option<&str>) -> Peer {
    Peer {
        service,
        name: name.into(),
        identity: Some(
            serde_json::from_value(serde_json::json!({
                "keystone": keystone,
                "password": { "secretName": format!("{name}-keystone"), "key": "password" },
                "region": region,
            }))
            .expect("identity"),
        ),
    }
}

fn nova(namespace: &str, name: &str, region: Option<&str>) -> Nova {
    let mut manifest = Nova::example(name, "2026.1", "nova", 1).manifest;
    manifest["metadata"]["namespace"] = namespace.into();
    manifest["spec"]["identity"] = serde_json::json!({
        "keystone": "keystone",
        "password": { "secretName": "nova-keystone", "key": "password" },
        "region": region,
    });
    serde_json::from_value(manifest).expect("a Nova")
}

#[test]
fn a_first_listing_announces_every_namespace_with_a_peer() {
    let mut tap = Tap::default();
    assert!(tap.observe::<Nova>(&Event::Init).is_empty());
    for object in [
        nova("a", "n1", None),
        nova("a", "n2", None),
        nova("b", "n", None),
    ] {
        assert!(tap.observe(&Event::InitApply(object)).is_empty());
    }
    assert_eq!(tap.observe::<Nova>(&Event::InitDone), ["a", "b"]);
}

#[test]
fn only_creation_deletion_and_identity_changes_wake_readers() {
    let mut tap = Tap::default();
    let created = nova("a", "n", None);
    assert_eq!(tap.observe(&Event::Apply(created.clone())), ["a"]);
    // A status update (or any change outside spec.identity) reads the same.
    let mut status_only = created.clone();
    status_only.metadata.resource_version = Some("2".into());
    status_only
        .spec
        .extra_config
        .insert("DEFAULT".into(), Default::default());
    assert!(tap.observe(&Event::Apply(status_only)).is_empty());
    let moved = nova("a", "n", Some("RegionTwo"));
    assert_eq!(tap.observe(&Event::Apply(moved.clone())), ["a"]);
    assert_eq!(tap.observe(&Event::Delete(moved.clone())), ["a"]);
    // Deleted twice (a relist racing the delete): said once.
    assert!(tap.observe(&Event::Delete(moved)).is_empty());
}

#[test]
fn a_relist_announces_what_changed_while_the_watch_was_down() {
    let mut tap = Tap::default();
    tap.observe(&Event::Apply(nova("a", "kept", None)));
    tap.observe(&Event::Apply(nova("b", "gone", None)));
    tap.observe::<Nova>(&Event::Init);
    tap.observe(&Event::InitApply(nova("a", "kept", None)));
    tap.observe(&Event::InitApply(nova("c", "new", None)));
    assert_eq!(tap.observe::<Nova>(&Event::InitDone), ["b", "c"]);
}

#[test]
fn a_reader_finds_the_peer_of_its_own_cloud_first_by_name() {
    let peer = |name: &str, keystone: &str| peer("nova", name, keystone, None);
    let peers = Peers::new(vec![
        peer("z", "keystone"),
        peer("a", "other"),
        peer("m", "keystone"),
    ]);
    let ours = peer("x", "keystone").identity.expect("identity");
    let found = peers.in_cloud_of("nova", &ours).map(|p| p.name.as_str());
    assert_eq!(found, Some("m"));
    assert!(peers.in_cloud_of("neutron", &ours).is_none());
    assert!(Peers::none().in_cloud_of("nova", &ours).is_none());
}
