//! `ironic.conf`, rendered from the spec. As for every service, the database and
//! transport URLs come from Secrets through oslo.config's environment variables,
//! and so does the upgrade pin (`[DEFAULT] pin_release_version`), which is set
//! per pod rather than here: a pinned and an unpinned pod share this file.

use ratchet_api::ironic::v1alpha1::{Ironic, IronicSpec};

use crate::service::OpenStackService;
use crate::service::ini::{self, Sections};
use crate::service::model::{ENV_DATABASE_CONNECTION, ENV_PIN_RELEASE_VERSION, ENV_TRANSPORT_URL};
use crate::service::secret_options;
use crate::service::status::EXTRA_CONFIG;

/// The file, or why it cannot be written: the entries of `extraConfig` that
/// oslo.config would read otherwise than written (nothing is rendered then).
pub fn render(namespace: &str, name: &str, spec: &IronicSpec) -> Result<String, Vec<String>> {
    let mut refused = ini::unsafe_entries(EXTRA_CONFIG, &spec.extra_config);
    refused.extend(secret_options::violations::<Ironic>(
        &spec.secret_options,
        &spec.extra_config,
    ));
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

    #[test]
    fn renders_extra_config_without_secrets_or_pin() {
        let mut spec: IronicSpec = serde_json::from_value(serde_json::json!({
            "openStackRelease": "2026.1",
            "image": { "repository": "ironic", "tag": "2026.1" },
            "database": { "secretName": "db", "key": "connection" },
            "transport": { "secretName": "mq", "key": "url" },
        }))
        .expect("spec");
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
}
