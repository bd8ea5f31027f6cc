//! `ironic.conf`, rendered from the spec. As for every service, the database and
//! transport URLs come from Secrets through oslo.config's environment variables,
//! and so does the upgrade pin (`[DEFAULT] pin_release_version`), which is set
//! per pod rather than here: a pinned and an unpinned pod share this file.

use crate::ironic::v1alpha1::{Ironic, IronicSpec};

use ratchet_api::identity::KEYSTONE_API_PORT;
use ratchet_operator::service::ini::{self, ManagedOption, Sections};
use ratchet_operator::service::model::{ENV_DATABASE_CONNECTION, ENV_TRANSPORT_URL};
use ratchet_operator::service::{OpenStackService, identity};

use ratchet_operator::service::status::config_refusals;

/// Where conductors write the boot files they serve over HTTP (iPXE's
/// `boot.ipxe` is written there when the driver loads, into a directory that
/// must exist) and over TFTP: emptyDirs Ratchet mounts in every pod and Job.
pub const HTTP_ROOT: &str = "/var/lib/ironic/httpboot";
pub const TFTP_ROOT: &str = "/var/lib/ironic/tftpboot";

/// Ironic's pin (seed 002): the release whose RPC and object versions new
/// pods speak while old ones still run, set per pod during the pinned roll
/// and removed by the second roll; Ironic's folder owns it, the shared
/// renderer only sets the variable the model names.
pub const PIN_RELEASE_VERSION: ManagedOption = ManagedOption {
    section: "DEFAULT",
    option: "pin_release_version",
    set_from: "Ratchet, during an upgrade's pinned roll only",
};
/// Its variable, as oslo.config reads it.
pub const ENV_PIN_RELEASE_VERSION: &str = "OS_DEFAULT__PIN_RELEASE_VERSION";

pub const HTTP_ROOT_OPTION: ManagedOption = ManagedOption {
    section: "deploy",
    option: "http_root",
    set_from: "Ratchet (an emptyDir at /var/lib/ironic/httpboot)",
};
pub const TFTP_ROOT_OPTION: ManagedOption = ManagedOption {
    section: "pxe",
    option: "tftp_root",
    set_from: "Ratchet (an emptyDir at /var/lib/ironic/tftpboot)",
};
/// ironic-api's workers each bind the API port themselves (cheroot, forked
/// after configuration), so every worker past the first fails with "Address
/// already in use" and is restarted forever: one per pod, scaled by replicas.
pub const API_WORKERS_OPTION: ManagedOption = ManagedOption {
    section: "api",
    option: "api_workers",
    set_from: "Ratchet (one worker per pod: scale with spec.api.replicas)",
};

/// How long a conductor that stops keeps serving RPC after it deregisters
/// (`[DEFAULT] hash_ring_reset_interval`, ironic's default), unless `extraConfig`
/// says otherwise.
const DEFAULT_HASH_RING_RESET_INTERVAL: u32 = 15;

/// The hash ring interval for API pods, passed in their environment (which
/// oslo.config reads before files): a fifteenth of the conductors', 1 s by
/// default. A stopping conductor deregisters, shuts its workers down, then
/// keeps consuming RPC for one interval (less the seconds its deregistration
/// took, rounded down) so that every API's ring drops it first. A call that
/// reaches it in that time fails ("Can not schedule new futures after being
/// shutdown", a 500 to the client), so an API must drop it at once: with the
/// same interval on both sides an API ring refreshed just before the
/// deregistration still pointed at the conductor as it stopped consuming, and
/// with a third of it (5 s) a power switch still failed in CI.
pub fn api_hash_ring_reset_interval(spec: &IronicSpec) -> (String, String) {
    let conductors = spec
        .extra_config
        .get("DEFAULT")
        .and_then(|options| options.get("hash_ring_reset_interval"))
        .and_then(|value| value.trim().parse::<u32>().ok())
        .unwrap_or(DEFAULT_HASH_RING_RESET_INTERVAL);
    (
        ENV_API_HASH_RING_RESET_INTERVAL.into(),
        (conductors / 15).max(1).to_string(),
    )
}

pub const ENV_API_HASH_RING_RESET_INTERVAL: &str = "OS_DEFAULT__HASH_RING_RESET_INTERVAL";

/// What Ironic reads of `spec.identity`: `[DEFAULT] auth_strategy =
/// keystone` for its API, and `[service_catalog]`, where conductors look up
/// the API's own URL (the one deploy ramdisks call back). Ironic sends no
/// service tokens: it has no `[service_user]`.
pub const IDENTITY_WIRING: identity::Wiring = identity::Wiring {
    auth_strategy: Some("DEFAULT"),
    service_user: false,
    catalogue_clients: &["service_catalog"],
};

/// Why `spec.identity` cannot be rendered: other fields setting its options
/// (`[DEFAULT] auth_strategy` among them: authenticating is what it asks).
pub fn identity_refusals(spec: &IronicSpec) -> Vec<String> {
    identity::refusals(
        spec.identity.as_ref(),
        &IDENTITY_WIRING,
        &spec.extra_config,
        &spec.secret_options,
    )
}

/// The file, or why it cannot be written: the entries of `extraConfig` that
/// oslo.config would read otherwise than written, or options `spec.identity`
/// sets (nothing is rendered then).
pub fn render(namespace: &str, name: &str, spec: &IronicSpec) -> Result<String, Vec<String>> {
    let mut refused = config_refusals::<Ironic>(&spec.extra_config, &spec.secret_options);
    refused.extend(identity_refusals(spec));
    if !refused.is_empty() {
        return Err(refused);
    }
    let mut sections = Sections::new();
    sections
        .entry("DEFAULT".into())
        .or_default()
        .insert("use_stderr".into(), "true".into());
    sections
        .entry("oslo_concurrency".into())
        .or_default()
        .insert("lock_path".into(), "/var/lib/ironic/tmp".into());
    for (option, value) in [
        (HTTP_ROOT_OPTION, HTTP_ROOT),
        (TFTP_ROOT_OPTION, TFTP_ROOT),
        (API_WORKERS_OPTION, "1"),
    ] {
        sections
            .entry(option.section.into())
            .or_default()
            .insert(option.option.into(), value.into());
    }
    if let Some(identity) = &spec.identity {
        identity::render(
            &mut sections,
            identity,
            &IDENTITY_WIRING,
            crate::ironic::SERVICE,
            namespace,
            KEYSTONE_API_PORT,
        );
    }
    ini::overlay(&mut sections, &spec.extra_config, Ironic::MANAGED_OPTIONS);
    ini::write(
        &[
            format!("Rendered by Ratchet for Ironic {namespace}/{name}; edits are overwritten."),
            "[database] connection and [DEFAULT] transport_url come from Secrets via".into(),
            format!("{ENV_DATABASE_CONNECTION} and {ENV_TRANSPORT_URL}; during an upgrade's"),
            format!(
                "pinned roll, new pods get [DEFAULT] pin_release_version via {ENV_PIN_RELEASE_VERSION}."
            ),
        ],
        sections,
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn spec_with(extra: &[(&str, &str)]) -> IronicSpec {
        let mut spec: IronicSpec = serde_json::from_value(serde_json::json!({
            "openStackRelease": "2026.1",
            "image": { "repository": "ironic", "tag": "2026.1" },
            "database": { "secretName": "db", "key": "connection" },
            "transport": { "secretName": "mq", "key": "url" },
        }))
        .expect("spec");
        for (option, value) in extra {
            spec.extra_config
                .entry("DEFAULT".into())
                .or_default()
                .insert((*option).into(), (*value).into());
        }
        spec
    }

    #[test]
    fn api_rings_refresh_fifteen_times_within_the_conductors_wait() {
        for (configured, api) in [
            (None, "1"),
            (Some("60"), "4"),
            (Some(" 30 "), "2"),
            (Some("2"), "1"),
            (Some("0"), "1"),
            // oslo.config refuses it in every pod; the API keeps a safe figure.
            (Some("soon"), "1"),
        ] {
            let spec = spec_with(
                &configured
                    .map(|v| vec![("hash_ring_reset_interval", v)])
                    .unwrap_or_default(),
            );
            assert_eq!(
                api_hash_ring_reset_interval(&spec),
                (
                    ENV_API_HASH_RING_RESET_INTERVAL.to_string(),
                    api.to_string()
                ),
                "{configured:?}"
            );
        }
    }

    #[test]
    fn renders_extra_config_without_secrets_or_pin() {
        let mut spec = spec_with(&[]);
        spec.extra_config.insert(
            "conductor".into(),
            BTreeMap::from([("automated_clean".into(), "false".into())]),
        );
        let text = render("ns", "i", &spec).expect("renders");
        assert!(
            text.contains("[conductor]\nautomated_clean = false\n"),
            "{text}"
        );
        assert!(!text.contains("connection ="));
        assert!(!text.contains("pin_release_version ="));
        // Boot files go to the conductors' emptyDirs; one API worker per pod.
        for written in [
            "[deploy]\nhttp_root = /var/lib/ironic/httpboot\n",
            "[pxe]\ntftp_root = /var/lib/ironic/tftpboot\n",
            "[api]\napi_workers = 1\n",
        ] {
            assert!(text.contains(written), "{written} in {text}");
        }

        spec.extra_config.insert(
            "conductor".into(),
            BTreeMap::from([("automated_clean".into(), "false\n[DEFAULT]".into())]),
        );
        let refused = render("ns", "i", &spec).expect_err("refused");
        assert_eq!(
            refused,
            [format!(
                "spec.extraConfig[\"conductor\"][\"automated_clean\"]: values {}",
                ratchet_api::oslo::VALUE_RULE
            )]
        );
    }

    #[test]
    fn an_identity_authenticates_the_api_and_lets_conductors_read_the_catalogue() {
        let mut spec = spec_with(&[]);
        spec.identity = Some(
            serde_json::from_value(serde_json::json!({
                "keystone": "keystone",
                "password": { "secretName": "ironic-keystone", "key": "password" },
                "memcachedServers": ["memcached.ns.svc:11211"],
            }))
            .expect("identity"),
        );
        let text = render("ns", "i", &spec).expect("renders");
        for written in [
            "auth_strategy = keystone\n",
            "[keystone_authtoken]\nauth_type = password\nauth_url = http://keystone.ns.svc:5000\n",
            "memcached_servers = memcached.ns.svc:11211\n",
            "[service_catalog]\nauth_type = password\nauth_url = http://keystone.ns.svc:5000\n",
            "username = ironic\n",
        ] {
            assert!(text.contains(written), "{written} in {text}");
        }
        assert!(!text.contains("[service_user]"), "{text}");
        assert!(!text.contains("password ="), "{text}");

        // The example's explicit noauth cannot stay beside an identity.
        let mut noauth = spec.clone();
        noauth.extra_config.insert(
            "DEFAULT".into(),
            BTreeMap::from([("auth_strategy".into(), "noauth".into())]),
        );
        let refused = render("ns", "i", &noauth).expect_err("refused");
        assert!(
            refused.iter().any(|r| r.contains("DEFAULT.auth_strategy")),
            "{refused:?}"
        );
    }
}
