//! `cinder.conf`, rendered from the spec. Secrets never appear here: the database
//! and transport URLs reach the processes through environment variables that
//! oslo.config reads (`OS_<SECTION>__<OPTION>`), filled from the Secrets.

use std::collections::BTreeMap;

use ratchet_api::cinder::v1beta1::{Cinder, CinderSpec, VolumeBackend};

use crate::service::OpenStackService;
use crate::service::ini::{self, Sections};
use crate::service::model::{ENV_DATABASE_CONNECTION, ENV_TRANSPORT_URL};
use crate::service::secret_options;
use crate::service::status::EXTRA_CONFIG;

/// A volume Deployment's back end (`[DEFAULT] enabled_backends`), one per pod.
pub const ENV_ENABLED_BACKENDS: &str = "OS_DEFAULT__ENABLED_BACKENDS";

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

/// The file, or why it cannot be written: the entries of the spec that
/// oslo.config would read otherwise than written. Nothing is rendered then, not
/// even the entries that are fine.
pub fn render(namespace: &str, name: &str, spec: &CinderSpec) -> Result<String, Vec<String>> {
    let mut refused = ini::unsafe_entries(EXTRA_CONFIG, &spec.extra_config);
    refused.extend(backend_violations(spec));
    refused.extend(secret_options::violations::<Cinder>(
        &spec.secret_options,
        &spec.extra_config,
    ));
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
            text.contains("[DEFAULT]\ndebug = true\nenabled_backends = ceph,lvm\n"),
            "{text}"
        );
        assert!(text.contains("[lvm]\nbackend_host = c-volume-lvm\nvolume_backend_name = lvm\nvolume_driver = cinder.volume.drivers.lvm.LVMVolumeDriver\n"), "{text}");
        assert!(text.find("[DEFAULT]") < text.find("[ceph]"));
        assert!(!text.contains("connection ="), "no secret in the ConfigMap");
        assert!(!text.contains("transport_url ="));
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
    fn rendering_is_deterministic() {
        let spec = spec();
        assert_eq!(render("ns", "c", &spec), render("ns", "c", &spec));
    }
}
