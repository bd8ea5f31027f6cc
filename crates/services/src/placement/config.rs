//! `placement.conf`, rendered from the spec. The database URL comes from a
//! Secret through oslo.config's environment variable
//! (`OS_PLACEMENT_DATABASE__CONNECTION`), never this file.

use crate::placement::v1alpha1::{Placement, PlacementSpec};

use ratchet_api::identity::KEYSTONE_API_PORT;
use ratchet_operator::service::ini::{self, ManagedOption, Sections};
use ratchet_operator::service::status::config_refusals;
use ratchet_operator::service::{OpenStackService, identity};

/// The file the WSGI application reads: exactly `placement.conf` in
/// `OS_PLACEMENT_CONFIG_DIR` (placement/wsgi/__init__.py).
pub const CONFIG_FILE: &str = "placement.conf";
/// The database's environment variable: placement keeps its connection in
/// `[placement_database]`, not `[database]`.
pub const ENV_DATABASE_CONNECTION: &str = "OS_PLACEMENT_DATABASE__CONNECTION";
pub const DATABASE_CONNECTION: ManagedOption = ManagedOption {
    section: "placement_database",
    option: "connection",
    set_from: "spec.database (a Secret)",
};

/// What Placement reads of `spec.identity`: `[api] auth_strategy =
/// keystone` for its API. Placement calls no other service: no service
/// tokens, no catalogue clients.
pub const IDENTITY_WIRING: identity::Wiring = identity::Wiring {
    auth_strategy: Some("api"),
    service_user: false,
    catalogue_clients: &[],
};

/// Why `spec.identity` cannot be rendered: other fields setting its options
/// (`[api] auth_strategy` among them: authenticating is what it asks).
pub fn identity_refusals(spec: &PlacementSpec) -> Vec<String> {
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
pub fn render(namespace: &str, name: &str, spec: &PlacementSpec) -> Result<String, Vec<String>> {
    let mut refused = config_refusals::<Placement>(&spec.extra_config, &spec.secret_options);
    refused.extend(identity_refusals(spec));
    if !refused.is_empty() {
        return Err(refused);
    }
    let mut sections = Sections::new();
    sections
        .entry("DEFAULT".into())
        .or_default()
        .insert("use_stderr".into(), "true".into());
    if let Some(identity) = &spec.identity {
        identity::render(
            &mut sections,
            identity,
            &IDENTITY_WIRING,
            crate::placement::SERVICE,
            namespace,
            KEYSTONE_API_PORT,
        );
    }
    ini::overlay(
        &mut sections,
        &spec.extra_config,
        Placement::MANAGED_OPTIONS,
    );
    ini::write(
        &[
            format!("Rendered by Ratchet for Placement {namespace}/{name}; edits are overwritten."),
            format!(
                "[placement_database] connection comes from a Secret via {ENV_DATABASE_CONNECTION}."
            ),
        ],
        sections,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratchet_operator::service::OpenStackService;

    fn spec(extra: serde_json::Value) -> PlacementSpec {
        serde_json::from_value(serde_json::json!({
            "openStackRelease": "2026.1",
            "image": { "repository": "placement", "tag": "2026.1" },
            "database": { "secretName": "db", "key": "connection" },
            "identity": {
                "keystone": "keystone",
                "password": { "secretName": "placement-keystone", "key": "password" },
            },
            "extraConfig": extra,
        }))
        .expect("spec")
    }

    #[test]
    fn an_identity_authenticates_the_api_by_keystones_service_name() {
        let text = render("ns", "p", &spec(serde_json::json!({}))).expect("renders");
        for written in [
            "[api]\nauth_strategy = keystone\n",
            "[keystone_authtoken]\nauth_type = password\nauth_url = http://keystone.ns.svc:5000\n",
            "username = placement\n",
        ] {
            assert!(text.contains(written), "{written} in {text}");
        }
        assert!(!text.contains("[service_user]"), "{text}");
        assert!(!text.contains("connection ="), "{text}");
        assert!(!text.contains("password ="), "{text}");
    }

    #[test]
    fn the_database_and_the_strategy_are_not_extra_config() {
        let spec = spec(serde_json::json!({
            "placement_database": { "connection": "sqlite://" },
            "api": { "auth_strategy": "noauth2" },
        }));
        let refused = render("ns", "p", &spec).expect_err("refused");
        assert!(refused[0].contains("api.auth_strategy"), "{refused:?}");
        let placement = Placement::new("p", spec);
        let refused = placement.spec_view().invalid_config;
        for named in ["api.auth_strategy", "placement_database.connection"] {
            assert!(refused.iter().any(|r| r.contains(named)), "{refused:?}");
        }
    }
}
