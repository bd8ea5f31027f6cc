//! `nova.conf`, rendered from the spec: one file for every process; what
//! differs per process (a cell's database and bus, a compute's host) comes
//! through oslo.config's environment variables, so Secrets never appear here.

use crate::nova::profile::{CONFIG_DIR, STATE_DIR};
use crate::nova::v1alpha1::{Nova, NovaSpec};

use ratchet_api::identity::KEYSTONE_API_PORT;
use ratchet_operator::service::ini::{self, ManagedOption, Sections};
use ratchet_operator::service::peers::Peers;
use ratchet_operator::service::status::config_refusals;
use ratchet_operator::service::{OpenStackService, identity};

/// The file every process reads (`--config-dir` reads `*.conf`; the WSGI
/// application the files `OS_NOVA_CONFIG_FILES` names, the paste file first).
pub const CONFIG_FILE: &str = "nova.conf";
/// The API database's environment variable (`[api_database] connection`).
pub const ENV_API_DATABASE_CONNECTION: &str = "OS_API_DATABASE__CONNECTION";

pub const API_DATABASE_CONNECTION: ManagedOption = ManagedOption {
    section: "api_database",
    option: "connection",
    set_from: "spec.apiDatabase (a Secret)",
};

/// `[DEFAULT] host`: a conductor, scheduler or compute is known by its pod's
/// (stable) name, every API pod by one shared name: set per workload.
pub const HOST: ManagedOption = ManagedOption {
    section: "DEFAULT",
    option: "host",
    set_from: "Ratchet (a StatefulSet pod's name; the API's resource name)",
};

/// `[upgrade_levels] compute`: `auto`, the pin to the oldest compute that
/// the second roll releases (`PinStrategy::ReleasedBySecondRoll`).
pub const COMPUTE_PIN: ManagedOption = ManagedOption {
    section: "upgrade_levels",
    option: "compute",
    set_from: "Ratchet (auto: pinned to the oldest compute during an upgrade)",
};

/// `[DEFAULT] compute_driver`: the fake driver that keeps its node identity
/// in `state_path` (`fake.FakeDriver` makes a new one at every start, and a
/// restarted compute then refuses to start).
pub const COMPUTE_DRIVER: ManagedOption = ManagedOption {
    section: "DEFAULT",
    option: "compute_driver",
    set_from: "Ratchet (fake.FakeDriverWithoutFakeNodes)",
};

/// What Nova reads of `spec.identity`: `[keystone_authtoken]` (its API
/// authenticates only through Keystone: it has no `auth_strategy` left),
/// service tokens beside a user's (`nova-status` fails without them), and
/// its logins to Placement and Neutron, found in the catalogue.
pub const IDENTITY_WIRING: identity::Wiring = identity::Wiring {
    auth_strategy: None,
    service_user: true,
    catalogue_clients: &["placement", "neutron"],
};

/// Why `spec.identity` cannot be rendered: other fields setting its options.
pub fn identity_refusals(spec: &NovaSpec) -> Vec<String> {
    identity::refusals(
        spec.identity.as_ref(),
        &IDENTITY_WIRING,
        &spec.extra_config,
        &spec.secret_options,
    )
}

/// Why the cells cannot be rendered: a name taken twice or `cell0`'s, a
/// message bus shared with the top level or another cell.
pub fn cell_refusals(spec: &NovaSpec) -> Vec<String> {
    let mut refused = Vec::new();
    for (index, cell) in spec.cells.iter().enumerate() {
        if cell.name == "cell0" {
            refused.push(format!(
                "spec.cells[{index}].name: cell0 is spec.cell0, not a cell of computes"
            ));
        }
        // The super-conductor and a cell's conductors serve one RPC topic:
        // on one bus they would take each other's calls, each writing to its
        // own database (a compute's record made in one, looked up in the other).
        if cell.transport == spec.transport {
            refused.push(format!(
                "spec.cells[{index}].transport: the same Secret key as spec.transport; a cell needs a message bus (or vhost) of its own"
            ));
        }
        if spec.cells[..index]
            .iter()
            .any(|c| c.transport == cell.transport)
        {
            refused.push(format!(
                "spec.cells[{index}].transport: shared with another cell; each cell needs a message bus (or vhost) of its own"
            ));
        }
        if spec.cells[..index].iter().any(|c| c.name == cell.name) {
            refused.push(format!(
                "spec.cells[{index}].name: {:?} names two cells",
                cell.name
            ));
        }
    }
    refused
}

fn defaults(sections: &mut Sections) {
    let mut set = |section: &str, option: &str, value: &str| {
        sections
            .entry(section.to_string())
            .or_default()
            .insert(option.to_string(), value.to_string());
    };
    set("DEFAULT", "use_stderr", "true");
    set("DEFAULT", "state_path", STATE_DIR);
    set(
        COMPUTE_DRIVER.section,
        COMPUTE_DRIVER.option,
        "fake.FakeDriverWithoutFakeNodes",
    );
    set(COMPUTE_PIN.section, COMPUTE_PIN.option, "auto");
    set(
        "oslo_concurrency",
        "lock_path",
        &format!("{STATE_DIR}/lock"),
    );
    // New computes are mapped to their cell by the scheduler itself, every
    // 30 s, instead of a Job that would have to wait for them.
    set("scheduler", "discover_hosts_in_cells_interval", "30");
    // One worker process per pod: pods scale out (the default is one per
    // CPU of the node, each reporting into the same service row).
    set("conductor", "workers", "1");
    set("scheduler", "workers", "1");
    // 33.0.2's conductor and compute wait this long on SIGTERM even when
    // idle (160 s by default), longer than a pod's grace: a roll would take
    // minutes per pod and end in SIGKILL.
    set("DEFAULT", "manager_shutdown_timeout", "10");
}

/// The file, or why it cannot be written.
///
/// `peers`: the namespace's resources it reads: `[neutron]` looks up the
/// Neutron of its cloud in the region that Neutron registers in.
pub fn render(
    namespace: &str,
    name: &str,
    spec: &NovaSpec,
    peers: &Peers,
) -> Result<String, Vec<String>> {
    let mut refused = config_refusals::<Nova>(&spec.extra_config, &spec.secret_options);
    refused.extend(identity_refusals(spec));
    refused.extend(cell_refusals(spec));
    if !refused.is_empty() {
        return Err(refused);
    }
    let mut sections = Sections::new();
    defaults(&mut sections);
    if let Some(identity) = &spec.identity {
        identity::render(
            &mut sections,
            identity,
            &IDENTITY_WIRING,
            crate::nova::SERVICE,
            namespace,
            KEYSTONE_API_PORT,
        );
        let neutron = peers.in_cloud_of(crate::neutron::SERVICE, identity);
        if let Some(neutron) = neutron.and_then(|peer| peer.identity.as_ref()) {
            identity::find_in_region_of(&mut sections, "neutron", neutron);
        }
    }
    ini::overlay(&mut sections, &spec.extra_config, Nova::MANAGED_OPTIONS);
    ini::write(
        &[
            format!("Rendered by Ratchet for Nova {namespace}/{name}; edits are overwritten."),
            "[api_database] and [database] connection and [DEFAULT] transport_url come from".into(),
            format!("Secrets via {ENV_API_DATABASE_CONNECTION}, OS_DATABASE__CONNECTION and"),
            "OS_DEFAULT__TRANSPORT_URL, each process's cell's; [DEFAULT] host per pod.".into(),
            format!("The API's pipeline is api-paste.ini in {CONFIG_DIR}."),
        ],
        sections,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file of the spec `extra` and `identity` make, alone in its namespace.
    fn alone(extra: serde_json::Value, identity: bool) -> String {
        render("ns", "n", &spec(extra, identity), &Peers::none()).expect("renders")
    }

    fn spec(extra: serde_json::Value, identity: bool) -> NovaSpec {
        let mut spec =
            crate::nova::example_manifest("n", "2026.1", "nova", "2026.1")["spec"].clone();
        spec["extraConfig"] = extra;
        if identity {
            spec["identity"] = serde_json::json!({
                "keystone": "keystone",
                "password": { "secretName": "nova-keystone", "key": "password" },
            });
        }
        serde_json::from_value(spec).expect("spec")
    }

    #[test]
    fn computes_pin_themselves_and_run_the_fake_driver_that_keeps_its_node() {
        let text = alone(serde_json::json!({}), false);
        for written in [
            "[upgrade_levels]\ncompute = auto\n",
            "compute_driver = fake.FakeDriverWithoutFakeNodes\n",
            "state_path = /var/lib/nova\n",
            "discover_hosts_in_cells_interval = 30\n",
        ] {
            assert!(text.contains(written), "{written:?} in {text}");
        }
        assert!(!text.contains("connection ="), "{text}");
        assert!(!text.contains("transport_url ="), "{text}");
    }

    #[test]
    fn an_identity_logs_in_to_placement_and_neutron_and_sends_service_tokens() {
        let text = alone(serde_json::json!({}), true);
        for written in [
            "[service_user]\n",
            "send_service_user_token = true\n",
            "[placement]\nauth_type = password\nauth_url = http://keystone.ns.svc:5000\n",
            "[neutron]\nauth_type = password\n",
            "username = nova\n",
        ] {
            assert!(text.contains(written), "{written:?} in {text}");
        }
        assert!(!text.contains("password ="), "{text}");
    }

    #[test]
    fn the_pin_and_the_cells_are_ratchet_s() {
        let extra = serde_json::json!({ "upgrade_levels": { "compute": "6.4" } });
        let mut spec = spec(extra, false);
        let refused = Nova::new("n", spec.clone()).spec_view().invalid_config;
        assert!(
            refused.iter().any(|r| r.contains("upgrade_levels.compute")),
            "{refused:?}"
        );
        spec.extra_config.clear();
        spec.cells.push(spec.cells[0].clone());
        let refused = render("ns", "n", &spec, &Peers::none()).expect_err("refused");
        assert!(
            refused.iter().any(|r| r.contains("names two cells")),
            "{refused:?}"
        );
        spec.cells[0].name = "cell0".into();
        let refused = render("ns", "n", &spec, &Peers::none()).expect_err("refused");
        assert!(
            refused.iter().any(|r| r.contains("cell0 is spec.cell0")),
            "{refused:?}"
        );
    }

    #[test]
    fn neutron_is_looked_up_in_the_region_its_resource_registers_in() {
        let neutron = |keystone: &str| {
            crate::shared_tests::peers::peer(
                crate::neutron::SERVICE,
                "neutron",
                keystone,
                Some("RegionTwo"),
            )
        };
        let spec = spec(serde_json::json!({}), true);
        let ours = Peers::new(vec![neutron("keystone")]);
        let text = render("ns", "n", &spec, &ours).expect("renders");
        let section = text.split("[neutron]\n").nth(1).expect("[neutron]");
        let section = section.split("\n[").next().unwrap_or(section);
        assert!(section.contains("region_name = RegionTwo\n"), "{text}");
        let theirs = Peers::new(vec![neutron("another-keystone")]);
        let text = render("ns", "n", &spec, &theirs).expect("renders");
        assert!(!text.contains("RegionTwo"), "{text}");
    }
}
