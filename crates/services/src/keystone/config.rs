//! `keystone.conf`, rendered from the spec. The database URL comes from a
//! Secret through oslo.config's environment variable; the fernet and credential
//! keys are Secrets Ratchet creates once, mounted where this file points.

use crate::keystone::v1alpha1::{Keystone, KeystoneSpec};

use ratchet_operator::service::OpenStackService;
use ratchet_operator::service::ini::{self, ManagedOption, Sections};
use ratchet_operator::service::model::ENV_DATABASE_CONNECTION;
use ratchet_operator::service::status::config_refusals;

/// Where the keys are mounted: Keystone's own defaults, which
/// `keystone-status upgrade check` assumes whatever the file says.
pub const FERNET_KEYS: &str = "/etc/keystone/fernet-keys";
pub const CREDENTIAL_KEYS: &str = "/etc/keystone/credential-keys";

pub const FERNET_TOKENS_KEYS: ManagedOption = ManagedOption {
    section: "fernet_tokens",
    option: "key_repository",
    set_from: "Ratchet (the Secret <name>-fernet-keys, mounted at /etc/keystone/fernet-keys)",
};
pub const FERNET_RECEIPTS_KEYS: ManagedOption = ManagedOption {
    section: "fernet_receipts",
    option: "key_repository",
    set_from: "Ratchet (the Secret <name>-fernet-keys, mounted at /etc/keystone/fernet-keys)",
};
pub const CREDENTIAL_KEYS_OPTION: ManagedOption = ManagedOption {
    section: "credential",
    option: "key_repository",
    set_from: "Ratchet (the Secret <name>-credential-keys, mounted at /etc/keystone/credential-keys)",
};

/// The file, or why it cannot be written: the entries of `extraConfig` that
/// oslo.config would read otherwise than written (nothing is rendered then).
pub fn render(namespace: &str, name: &str, spec: &KeystoneSpec) -> Result<String, Vec<String>> {
    let refused = config_refusals::<Keystone>(&spec.extra_config, &spec.secret_options);
    if !refused.is_empty() {
        return Err(refused);
    }
    let mut sections = Sections::new();
    sections
        .entry("DEFAULT".into())
        .or_default()
        .insert("use_stderr".into(), "true".into());
    for (option, value) in [
        (FERNET_TOKENS_KEYS, FERNET_KEYS),
        (FERNET_RECEIPTS_KEYS, FERNET_KEYS),
        (CREDENTIAL_KEYS_OPTION, CREDENTIAL_KEYS),
    ] {
        sections
            .entry(option.section.into())
            .or_default()
            .insert(option.option.into(), value.into());
    }
    ini::overlay(&mut sections, &spec.extra_config, Keystone::MANAGED_OPTIONS);
    ini::write(
        &[
            format!("Rendered by Ratchet for Keystone {namespace}/{name}; edits are overwritten."),
            format!("[database] connection comes from a Secret via {ENV_DATABASE_CONNECTION}."),
        ],
        sections,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(extra: serde_json::Value) -> KeystoneSpec {
        serde_json::from_value(serde_json::json!({
            "openStackRelease": "2026.1",
            "image": { "repository": "keystone", "tag": "2026.1" },
            "database": { "secretName": "db", "key": "connection" },
            "adminPassword": { "secretName": "admin", "key": "password" },
            "extraConfig": extra,
        }))
        .expect("spec")
    }

    #[test]
    fn the_key_repositories_are_where_the_secrets_are_mounted() {
        let text = render(
            "ns",
            "k",
            &spec(serde_json::json!({
                "token": { "expiration": "7200" },
            })),
        )
        .expect("renders");
        for expected in [
            "[fernet_tokens]\nkey_repository = /etc/keystone/fernet-keys\n",
            "[fernet_receipts]\nkey_repository = /etc/keystone/fernet-keys\n",
            "[credential]\nkey_repository = /etc/keystone/credential-keys\n",
            "[token]\nexpiration = 7200\n",
        ] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
        assert!(
            !text.lines().any(|l| l.starts_with("connection")),
            "the database URL stays in its Secret: {text}"
        );
    }
}
