//! `cinder.conf`, rendered from the spec. Secrets never appear here: the database
//! and transport URLs reach the processes through environment variables that
//! oslo.config reads (`OS_<SECTION>__<OPTION>`), filled from the Secrets.

use std::collections::BTreeMap;

use ratchet_api::cinder::v1beta1::{Cinder, CinderSpec, VolumeBackend};

use crate::service::OpenStackService;
use crate::service::ini::{self, Sections};
use crate::service::model::{ENV_DATABASE_CONNECTION, ENV_TRANSPORT_URL};

/// A volume Deployment's back end (`[DEFAULT] enabled_backends`), one per pod.
pub const ENV_ENABLED_BACKENDS: &str = "OS_DEFAULT__ENABLED_BACKENDS";

pub fn render(namespace: &str, name: &str, spec: &CinderSpec) -> String {
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
        let text = render("ns", "c", &spec);
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
    fn rendering_is_deterministic() {
        let spec = spec();
        assert_eq!(render("ns", "c", &spec), render("ns", "c", &spec));
    }
}
