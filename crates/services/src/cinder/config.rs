//! `cinder.conf`, rendered from the spec. Secrets never appear here: the database
//! and transport URLs reach the processes through environment variables that
//! oslo.config reads (`OS_<SECTION>__<OPTION>`), filled from the Secrets.

use std::collections::BTreeMap;

use crate::cinder::v1beta1::{Cinder, CinderSpec, VolumeBackend};

use super::{filters, paste};
use crate::cinder::profile::CONFIG_DIR;
use ratchet_api::identity::KEYSTONE_API_PORT;
use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::ini::{self, ManagedOption, Sections};
use ratchet_operator::service::model::{ENV_DATABASE_CONNECTION, ENV_TRANSPORT_URL};
use ratchet_operator::service::status::config_refusals;
use ratchet_operator::service::{identity, secret_options};

/// A volume Deployment's back end (`[DEFAULT] enabled_backends`), one per pod.
pub const ENV_ENABLED_BACKENDS: &str = "OS_DEFAULT__ENABLED_BACKENDS";
/// Where the posix backup driver writes, the backup claim's mount.
pub const BACKUP_POSIX_PATH: &str = "/var/lib/cinder/backup";
/// Where a back end's `storageVolumeClaim` is mounted, under the back end's name.
pub const BACKEND_STORAGE_PATH: &str = "/var/lib/cinder/backends";
const POSIX_BACKUP_DRIVER: &str = "cinder.backup.drivers.posix.PosixBackupDriver";

/// `[DEFAULT] host`: each scheduler and backup pod registers under its own
/// (stable) name; one host shared by several processes would let each clean up
/// the others' work when it starts.
pub const HOST: ManagedOption = ManagedOption {
    section: "DEFAULT",
    option: "host",
    set_from: "Ratchet (each pod registers under its own name)",
};
pub const API_PASTE_CONFIG: ManagedOption = ManagedOption {
    section: "DEFAULT",
    option: "api_paste_config",
    set_from: "Ratchet (api-paste.ini in the ConfigMap)",
};

/// Whether backups have somewhere to go: the posix claim, or a driver of the
/// user's own in `extraConfig`.
pub fn has_backup_driver(spec: &CinderSpec) -> bool {
    let driver = ManagedOption {
        section: "DEFAULT",
        option: "backup_driver",
        set_from: "",
    };
    spec.backup.posix_volume_claim.is_some()
        || spec
            .extra_config
            .iter()
            .any(|(section, options)| options.keys().any(|o| driver.named_by(section, o)))
}

/// The backup workload's size: 1 by default when it has a driver, else 0.
pub fn backup_replicas(spec: &CinderSpec) -> i32 {
    spec.backup
        .replicas
        .unwrap_or(if has_backup_driver(spec) { 1 } else { 0 })
}

/// A backup workload asked for without a driver: cinder's default (swift) is
/// not installed from 29.0.0 on and needs an object store anyway.
pub fn backup_violations(spec: &CinderSpec) -> Vec<String> {
    match spec.backup.replicas {
        Some(replicas) if replicas > 0 && !has_backup_driver(spec) => vec![format!(
            "spec.backup.replicas: {replicas} backup pods need a backup driver: set spec.backup.posixVolumeClaim, or extraConfig.DEFAULT.backup_driver with its options, or set replicas to 0"
        )],
        _ => Vec::new(),
    }
}

/// Entries of the back ends' `options` that oslo.config would not read back as
/// written, or that name an option Ratchet sets itself (a back end's section is
/// named after it, so a back end named `database` would otherwise write
/// `[database] connection`). `extraConfig` is checked for every service, in
/// `status::spec_view`.
pub fn backend_violations(spec: &CinderSpec) -> Vec<String> {
    let mut violations = Vec::new();
    for backend in &spec.volume_backends {
        let field = format!("spec.volumeBackends[{:?}].options", backend.name);
        violations.extend(ini::unsafe_options(&field, &backend.options));
        for option in backend.options.keys() {
            if let Some(managed) = Cinder::MANAGED_OPTIONS
                .iter()
                .find(|m| m.named_by(&backend.name, option))
            {
                violations.push(format!(
                    "{field}[{option:?}]: set by {}; remove it from the back end's options",
                    managed.set_from
                ));
            }
            if let Some(by) = secret_options::set_by(&spec.secret_options, &backend.name, option) {
                violations.push(format!(
                    "{field}[{option:?}]: set by {by}; remove it from the back end's options"
                ));
            }
        }
    }
    violations
}

/// What Cinder reads of `spec.identity`: `[DEFAULT] auth_strategy =
/// keystone` and service tokens on its calls to peers.
pub const IDENTITY_WIRING: identity::Wiring = identity::Wiring {
    auth_strategy: Some("DEFAULT"),
    service_user: true,
    catalogue_clients: &[],
};

/// Why `spec.identity` cannot be rendered: other fields setting its options
/// (`[DEFAULT] auth_strategy` among them: authenticating is what it asks).
pub fn identity_refusals(spec: &CinderSpec) -> Vec<String> {
    identity::refusals(
        spec.identity.as_ref(),
        &IDENTITY_WIRING,
        &spec.extra_config,
        &spec.secret_options,
    )
}

/// The file, or why it cannot be written: the entries of the spec that
/// oslo.config would read otherwise than written. Nothing is rendered then, not
/// even the entries that are fine.
pub fn render(namespace: &str, name: &str, spec: &CinderSpec) -> Result<String, Vec<String>> {
    let mut refused = config_refusals::<Cinder>(&spec.extra_config, &spec.secret_options);
    refused.extend(backend_violations(spec));
    refused.extend(backup_violations(spec));
    refused.extend(identity_refusals(spec));
    if !refused.is_empty() {
        return Err(refused);
    }
    // By name, the first of a repeated name winning (admission refuses repeats).
    let mut backends: BTreeMap<&str, &VolumeBackend> = BTreeMap::new();
    for backend in &spec.volume_backends {
        backends.entry(backend.name.as_str()).or_insert(backend);
    }
    let mut sections = Sections::new();
    let default = sections.entry("DEFAULT".into()).or_default();
    default.insert(
        "enabled_backends".into(),
        backends.keys().copied().collect::<Vec<_>>().join(","),
    );
    default.insert("use_stderr".into(), "true".into());
    default.insert(
        "api_paste_config".into(),
        format!("{CONFIG_DIR}/{}", paste::FILE),
    );
    default.insert(
        "resource_query_filters_file".into(),
        format!("{CONFIG_DIR}/{}", filters::FILE),
    );
    if spec.backup.posix_volume_claim.is_some() {
        default.insert("backup_driver".into(), POSIX_BACKUP_DRIVER.into());
        default.insert("backup_posix_path".into(), BACKUP_POSIX_PATH.into());
    }
    sections
        .entry("oslo_concurrency".into())
        .or_default()
        .insert("lock_path".into(), "/var/lib/cinder/tmp".into());
    for (backend, spec) in &backends {
        let section = sections.entry(backend.to_string()).or_default();
        section.insert("volume_backend_name".into(), backend.to_string());
        // All replicas of a back end's Deployment present one host to the scheduler.
        section.insert("backend_host".into(), format!("{name}-volume-{backend}"));
        section.extend(spec.options.clone());
    }
    if let Some(identity) = &spec.identity {
        identity::render(
            &mut sections,
            identity,
            &IDENTITY_WIRING,
            crate::cinder::profile::SERVICE,
            namespace,
            KEYSTONE_API_PORT,
        );
    }
    ini::overlay(&mut sections, &spec.extra_config, Cinder::MANAGED_OPTIONS);
    ini::write(
        &[
            format!("Rendered by Ratchet for Cinder {namespace}/{name}; edits are overwritten."),
            "[database] connection and [DEFAULT] transport_url come from Secrets via".into(),
            format!("{ENV_DATABASE_CONNECTION} and {ENV_TRANSPORT_URL}."),
        ],
        sections,
    )
}

#[cfg(test)]
mod tests {

    use super::*;

    fn spec() -> CinderSpec {
        serde_json::from_value(serde_json::json!({
            "openStackRelease": "2026.1",
            "image": { "repository": "cinder", "reference": { "tag": "2026.1" } },
            "database": { "secretName": "db", "key": "connection" },
            "transport": { "secretName": "mq", "key": "url" },
        }))
        .expect("spec")
    }

    #[test]
    fn renders_back_ends_and_extra_config_without_secrets() {
        let mut spec = spec();
        spec.volume_backends.push(VolumeBackend {
            name: "lvm".into(),
            options: BTreeMap::from([(
                "volume_driver".into(),
                "cinder.volume.drivers.lvm.LVMVolumeDriver".into(),
            )]),
            ..Default::default()
        });
        spec.volume_backends.push(VolumeBackend {
            name: "ceph".into(),
            ..Default::default()
        });
        spec.extra_config.insert(
            "DEFAULT".into(),
            BTreeMap::from([("debug".into(), "true".into())]),
        );
        let text = render("ns", "c", &spec).expect("renders");
        assert!(
            text.contains("[DEFAULT]\napi_paste_config = /etc/cinder/cinder.conf.d/api-paste.ini\ndebug = true\nenabled_backends = ceph,lvm\nresource_query_filters_file = /etc/cinder/cinder.conf.d/resource_filters.json\n"),
            "{text}"
        );
        assert!(text.contains("[lvm]\nbackend_host = c-volume-lvm\nvolume_backend_name = lvm\nvolume_driver = cinder.volume.drivers.lvm.LVMVolumeDriver\n"), "{text}");
        assert!(text.find("[DEFAULT]") < text.find("[ceph]"));
        assert!(!text.contains("connection ="), "no secret in the ConfigMap");
        assert!(!text.contains("transport_url ="));
    }

    #[test]
    fn identity_authenticates_through_keystone_and_owns_the_strategy() {
        let mut spec = spec();
        spec.identity = serde_json::from_value(serde_json::json!({
            "keystone": "keystone",
            "password": { "secretName": "cinder-keystone", "key": "password" },
        }))
        .ok();
        let text = render("ns", "c", &spec).expect("renders");
        assert!(text.contains("auth_strategy = keystone\n"), "{text}");
        assert!(
            text.contains("[keystone_authtoken]\nauth_type = password\nauth_url = http://keystone.ns.svc:5000\n"),
            "{text}"
        );
        assert!(text.contains("[service_user]\n"), "{text}");
        assert!(!text.contains("password ="), "no password in the ConfigMap");

        spec.extra_config.insert(
            "DEFAULT".into(),
            BTreeMap::from([("auth-strategy".into(), "noauth".into())]),
        );
        let refused = render("ns", "c", &spec).expect_err("refused");
        assert!(
            refused
                .iter()
                .any(|r| r.contains("DEFAULT.auth-strategy: set by spec.identity")),
            "{refused:?}"
        );
        spec.identity = None;
        assert!(render("ns", "c", &spec).is_ok(), "noauth without identity");
    }

    #[test]
    fn hostile_entries_are_refused_and_nothing_is_rendered() {
        let mut spec = spec();
        spec.extra_config.insert(
            "DEFAULT".into(),
            BTreeMap::from([
                (
                    "debug".into(),
                    "true\n[database]\nconnection = mysql://x".into(),
                ),
                ("verbose".into(), "true".into()),
            ]),
        );
        spec.extra_config.insert(
            "weird]\n[keystone_authtoken".into(),
            BTreeMap::from([("a".into(), "b".into())]),
        );
        spec.volume_backends.push(VolumeBackend {
            name: "lvm".into(),
            options: BTreeMap::from([("volume_driver".into(), "x\r[DEFAULT]".into())]),
            ..Default::default()
        });
        let refused = render("ns", "c", &spec).expect_err("refused");
        assert_eq!(refused.len(), 3, "{refused:?}");
        assert!(refused[0].starts_with("spec.extraConfig[\"DEFAULT\"][\"debug\"]: values may not"));
        assert!(refused[1].starts_with(
            "spec.extraConfig[\"weird]\\n[keystone_authtoken\"]: section names may contain only"
        ));
        assert!(refused[2].starts_with(
            "spec.volumeBackends[\"lvm\"].options[\"volume_driver\"]: values may not"
        ));
        assert_eq!(backend_violations(&spec), refused[2..]);
    }

    #[test]
    fn a_back_end_named_database_may_not_set_the_connection() {
        let mut spec = spec();
        spec.volume_backends.push(VolumeBackend {
            name: "database".into(),
            options: BTreeMap::from([("connection".into(), "mysql://evil".into())]),
            ..Default::default()
        });
        let refused = render("ns", "c", &spec).expect_err("refused");
        assert_eq!(
            refused,
            [
                "spec.volumeBackends[\"database\"].options[\"connection\"]: set by spec.database (a Secret); remove it from the back end's options"
            ]
        );
    }

    #[test]
    fn a_back_end_name_the_schema_would_refuse_is_not_written_either() {
        let mut spec = spec();
        spec.volume_backends.push(VolumeBackend {
            name: "x]\n[database".into(),
            ..Default::default()
        });
        assert!(render("ns", "c", &spec).is_err());
    }

    #[test]
    fn a_backup_claim_renders_the_posix_driver_and_one_replica() {
        let mut spec = spec();
        assert_eq!(backup_replicas(&spec), 0, "no driver: no backup pods");
        spec.backup.posix_volume_claim = Some("backups".into());
        let text = render("ns", "c", &spec).expect("renders");
        assert!(text.contains("backup_driver = cinder.backup.drivers.posix.PosixBackupDriver\nbackup_posix_path = /var/lib/cinder/backup\n"), "{text}");
        assert_eq!(backup_replicas(&spec), 1);
    }

    #[test]
    fn backup_replicas_without_a_driver_are_refused() {
        let mut spec = spec();
        spec.backup.replicas = Some(2);
        let refused = render("ns", "c", &spec).expect_err("refused");
        assert!(
            refused[0].starts_with("spec.backup.replicas: 2 backup pods need a backup driver"),
            "{refused:?}"
        );
        spec.extra_config.insert(
            "DEFAULT".into(),
            BTreeMap::from([(
                "backup-driver".into(),
                "cinder.backup.drivers.nfs.NFSBackupDriver".into(),
            )]),
        );
        assert!(
            render("ns", "c", &spec).is_ok(),
            "a driver of the user's own counts"
        );
        assert_eq!(backup_replicas(&spec), 2);
    }

    #[test]
    fn rendering_is_deterministic() {
        let spec = spec();
        assert_eq!(render("ns", "c", &spec), render("ns", "c", &spec));
    }
}
