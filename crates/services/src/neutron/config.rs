//! `neutron.conf`, rendered from the spec: the server side (ML2 with no
//! mechanism driver by default: a cloud's data plane is its own choice, set
//! in `extraConfig`), worker counts, and the agents' settings. ML2's options
//! are sections of this one file (`[ml2]`, `[ml2_type_vlan]`, …): oslo.config
//! reads every file of the configuration directory as one. Secrets never
//! appear here: the database and transport URLs come through oslo.config's
//! environment variables.

use crate::neutron::profile::CONFIG_DIR;
use crate::neutron::v1alpha1::{Neutron, NeutronSpec};

use ratchet_api::identity::{IdentitySpec, KEYSTONE_API_PORT};
use ratchet_operator::service::ini::{self, ManagedOption, Sections};
use ratchet_operator::service::model::{ENV_DATABASE_CONNECTION, ENV_TRANSPORT_URL};
use ratchet_operator::service::peers::Peers;
use ratchet_operator::service::status::config_refusals;
use ratchet_operator::service::{OpenStackService, identity};

/// The file every process reads: oslo.config's `--config-dir` reads `*.conf`,
/// and the WSGI application the files `OS_NEUTRON_CONFIG_FILES` names.
pub const CONFIG_FILE: &str = "neutron.conf";
/// Where processes keep state (lock files, the agents' sockets).
pub const STATE_DIR: &str = "/var/lib/neutron";

/// `[DEFAULT] host`: a server process is known by its pod's name (its RPC
/// queues are named after it), an agent by its node's (it reports its
/// state under it): set per workload, never by `extraConfig`.
pub const HOST: ManagedOption = ManagedOption {
    section: "DEFAULT",
    option: "host",
    set_from: "Ratchet (a server's pod name, an agent's node name)",
};

/// `[DEFAULT] api_paste_config`: the pipeline Ratchet renders beside the file.
pub const API_PASTE_CONFIG: ManagedOption = ManagedOption {
    section: "DEFAULT",
    option: "api_paste_config",
    set_from: "Ratchet (api-paste.ini in the ConfigMap)",
};

/// What Neutron reads of `spec.identity`: `[DEFAULT] auth_strategy =
/// keystone` for its API, and `[nova]`, its login to find Nova in the
/// catalogue and tell it of ports (see [`NOVA_NOTIFICATIONS`]); no service
/// tokens.
pub const IDENTITY_WIRING: identity::Wiring = identity::Wiring {
    auth_strategy: Some("DEFAULT"),
    service_user: false,
    catalogue_clients: &["nova"],
};

/// The roles Neutron's user holds in the service project: `service`, and
/// `admin` for Nova, which looks up the servers of Neutron's port events
/// in the caller's project unless the caller is an admin
/// (`context_is_admin`); as `service` alone, every event is answered 404 and
/// dropped. Deployment tools grant service users `admin` there too.
pub const USER_ROLES: &[&str] = &["service", "admin"];

/// Whether Neutron tells Nova of its ports (a port plugged, unplugged or
/// changed: the events a server's boot, interface attach and deletion wait
/// for): on exactly when a Nova resource in the namespace registers in
/// Neutron's Keystone (a peer), and Neutron itself logs in there. Without
/// one there is no one to tell, and a notifier that cannot find Nova only
/// logs errors.
pub const NOVA_NOTIFICATIONS: [&str; 2] = [
    "notify_nova_on_port_status_changes",
    "notify_nova_on_port_data_changes",
];

/// The Nova Neutron tells of its ports: a Nova resource among its `peers`
/// in the cloud of its `spec.identity`.
pub fn nova_to_notify<'a>(spec: &NeutronSpec, peers: &'a Peers) -> Option<&'a IdentitySpec> {
    let identity = spec.identity.as_ref()?;
    peers
        .in_cloud_of(crate::nova::SERVICE, identity)?
        .identity
        .as_ref()
}

/// Why `spec.identity` cannot be rendered: other fields setting its options.
pub fn identity_refusals(spec: &NeutronSpec) -> Vec<String> {
    identity::refusals(
        spec.identity.as_ref(),
        &IDENTITY_WIRING,
        &spec.extra_config,
        &spec.secret_options,
    )
}

/// The server side's defaults, each overridable in `extraConfig`.
fn server_defaults(sections: &mut Sections) {
    let mut set = |section: &str, option: &str, value: &str| {
        sections
            .entry(section.to_string())
            .or_default()
            .insert(option.to_string(), value.to_string());
    };
    set("DEFAULT", "use_stderr", "true");
    set("DEFAULT", "core_plugin", "ml2");
    set("DEFAULT", "service_plugins", "");
    set("DEFAULT", "state_path", STATE_DIR);
    // One worker of each kind per pod: pods scale out, not processes. Setting
    // them also keeps neutron-status's "Worker counts" check quiet (2026.1
    // asks for api_workers too; 2026.2 dropped the option and ignores it).
    set("DEFAULT", "api_workers", "1");
    set("DEFAULT", "rpc_workers", "1");
    set("DEFAULT", "rpc_state_report_workers", "1");
    set(
        "oslo_concurrency",
        "lock_path",
        &format!("{STATE_DIR}/lock"),
    );
    // Without OVN, neutron-status would try to reach an OVN northbound
    // database for one check and warn that it cannot.
    set("ovn", "disable_ovn_dhcp_for_baremetal_ports", "true");
    set("ml2", "type_drivers", "flat,vlan");
    set("ml2", "project_network_types", "vlan");
    set("ml2", "mechanism_drivers", "");
    set("ml2", "extension_drivers", "port_security");
    set("ml2_type_flat", "flat_networks", "physnet1");
    set("ml2_type_vlan", "network_vlan_ranges", "physnet1:100:4000");
}

/// `[DEFAULT]`'s notifications to `nova` (see [`NOVA_NOTIFICATIONS`]), and
/// `[nova]` looking it up in its region.
fn notify(sections: &mut Sections, nova: Option<&IdentitySpec>) {
    let on = if nova.is_some() { "true" } else { "false" };
    let defaults = sections.entry("DEFAULT".into()).or_default();
    for option in NOVA_NOTIFICATIONS {
        defaults.insert(option.into(), on.into());
    }
    if let Some(nova) = nova {
        identity::find_in_region_of(sections, "nova", nova);
    }
}

/// The file, or why it cannot be written: the entries of `extraConfig` that
/// oslo.config would read otherwise than written, or options `spec.identity`
/// or Ratchet set (nothing is rendered then). `peers`: the resources of the
/// namespace it reads (a Nova to notify).
pub fn render(
    namespace: &str,
    name: &str,
    spec: &NeutronSpec,
    peers: &Peers,
) -> Result<String, Vec<String>> {
    let mut refused = config_refusals::<Neutron>(&spec.extra_config, &spec.secret_options);
    refused.extend(identity_refusals(spec));
    if !refused.is_empty() {
        return Err(refused);
    }
    let mut sections = Sections::new();
    server_defaults(&mut sections);
    sections.entry("DEFAULT".into()).or_default().insert(
        API_PASTE_CONFIG.option.into(),
        format!("{CONFIG_DIR}/{}", super::paste::FILE),
    );
    if let Some(identity) = &spec.identity {
        identity::render(
            &mut sections,
            identity,
            &IDENTITY_WIRING,
            crate::neutron::SERVICE,
            namespace,
            KEYSTONE_API_PORT,
        );
    }
    notify(&mut sections, nova_to_notify(spec, peers));
    ini::overlay(&mut sections, &spec.extra_config, Neutron::MANAGED_OPTIONS);
    ini::write(
        &[
            format!("Rendered by Ratchet for Neutron {namespace}/{name}; edits are overwritten."),
            "[database] connection and [DEFAULT] transport_url come from Secrets via".into(),
            format!("{ENV_DATABASE_CONNECTION} and {ENV_TRANSPORT_URL}; [DEFAULT] host per pod."),
        ],
        sections,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratchet_operator::service::peers::Peer;

    fn spec(extra: serde_json::Value, identity: bool) -> NeutronSpec {
        let mut spec = serde_json::json!({
            "openStackRelease": "2026.1",
            "image": { "repository": "neutron", "tag": "2026.1" },
            "database": { "secretName": "db", "key": "connection" },
            "transport": { "secretName": "mq", "key": "url" },
            "extraConfig": extra,
        });
        if identity {
            spec["identity"] = serde_json::json!({
                "keystone": "keystone",
                "password": { "secretName": "neutron-keystone", "key": "password" },
            });
        }
        serde_json::from_value(spec).expect("spec")
    }

    #[test]
    fn the_server_side_runs_ml2_without_a_data_plane_and_with_one_worker_each() {
        let text = alone(serde_json::json!({}), false);
        for written in [
            "core_plugin = ml2\n",
            "rpc_workers = 1\n",
            "notify_nova_on_port_status_changes = false\n",
            "[ml2]\n",
            "mechanism_drivers = \n",
            "disable_ovn_dhcp_for_baremetal_ports = true\n",
        ] {
            assert!(text.contains(written), "{written:?} in {text}");
        }
        assert!(!text.contains("connection ="), "{text}");
        assert!(!text.contains("auth_strategy"), "{text}");
    }

    #[test]
    fn extra_config_overrides_the_defaults_but_not_what_ratchet_sets() {
        let extra = serde_json::json!({
            "ml2": { "mechanism_drivers": "openvswitch" },
            "DEFAULT": { "host": "one-for-all" },
        });
        let spec = spec(extra, false);
        let text = render("ns", "n", &spec, &Peers::none()).expect("renders");
        assert!(text.contains("mechanism_drivers = openvswitch\n"), "{text}");
        assert!(!text.contains("one-for-all"), "{text}");
        let refused = Neutron::new("n", spec).spec_view().invalid_config;
        assert!(
            refused.iter().any(|r| r.contains("DEFAULT.host")),
            "{refused:?}"
        );
    }

    #[test]
    fn an_identity_authenticates_the_api_by_keystones_service_name() {
        let text = alone(serde_json::json!({}), true);
        for written in [
            "auth_strategy = keystone\n",
            "[keystone_authtoken]\nauth_type = password\nauth_url = http://keystone.ns.svc:5000\n",
            "username = neutron\n",
        ] {
            assert!(text.contains(written), "{written:?} in {text}");
        }
        assert!(!text.contains("password ="), "{text}");
    }

    fn nova(name: &str, keystone: &str, region: Option<&str>) -> Peer {
        crate::shared_tests::peers::peer(crate::nova::SERVICE, name, keystone, region)
    }

    /// The file of the spec `extra` and `identity` make, alone in its namespace.
    fn alone(extra: serde_json::Value, identity: bool) -> String {
        render("ns", "n", &spec(extra, identity), &Peers::none()).expect("renders")
    }

    #[test]
    fn a_nova_in_the_same_cloud_is_told_of_ports_in_its_region() {
        let peers = Peers::new(vec![nova("nova", "keystone", Some("RegionTwo"))]);
        let text = render("ns", "n", &spec(serde_json::json!({}), true), &peers).expect("renders");
        for written in [
            "notify_nova_on_port_status_changes = true
",
            "notify_nova_on_port_data_changes = true
",
            "[nova]
auth_type = password
auth_url = http://keystone.ns.svc:5000
",
            "region_name = RegionTwo
",
        ] {
            assert!(text.contains(written), "{written:?} in {text}");
        }
        // Its own login stays in its own region.
        assert!(
            text.contains(
                "[keystone_authtoken]
auth_type = password
auth_url = http://keystone.ns.svc:5000
password_placeholder"
            ) || text.contains(
                "region_name = RegionOne
"
            ),
            "{text}"
        );
    }

    #[test]
    fn no_nova_of_its_cloud_no_notifications() {
        let other_cloud = Peers::new(vec![nova("nova", "another-keystone", None)]);
        for (spec, peers) in [
            (spec(serde_json::json!({}), true), Peers::none()),
            (spec(serde_json::json!({}), true), other_cloud.clone()),
            // Without its own login Neutron cannot reach any Nova.
            (spec(serde_json::json!({}), false), other_cloud),
        ] {
            let text = render("ns", "n", &spec, &peers).expect("renders");
            assert!(
                text.contains(
                    "notify_nova_on_port_data_changes = false
"
                ),
                "{text}"
            );
        }
        let unauthenticated = spec(serde_json::json!({}), false);
        let alone = Peers::new(vec![nova("nova", "keystone", None)]);
        let text = render("ns", "n", &unauthenticated, &alone).expect("renders");
        assert!(!text.contains("[nova]"), "{text}");
    }

    #[test]
    fn extra_config_may_keep_notifications_off_but_not_move_the_login() {
        let extra = serde_json::json!({
            "DEFAULT": { "notify_nova_on_port_data_changes": "false" },
        });
        let peers = Peers::new(vec![nova("nova", "keystone", None)]);
        let text = render("ns", "n", &spec(extra, true), &peers).expect("renders");
        assert!(
            text.contains(
                "notify_nova_on_port_data_changes = false
"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "notify_nova_on_port_status_changes = true
"
            ),
            "{text}"
        );
        let moved = serde_json::json!({ "nova": { "region_name": "Elsewhere" } });
        let refused = render("ns", "n", &spec(moved, true), &peers).expect_err("refused");
        assert!(
            refused.iter().any(|r| r.contains("nova.region_name")),
            "{refused:?}"
        );
    }
}
