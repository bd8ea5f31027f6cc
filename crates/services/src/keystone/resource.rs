//! The Keystone resource: example manifests.

/// A Keystone manifest for demos and tests: Secrets `keystone-db` (the
/// database URL) and `keystone-admin` (the admin password), `replicas` API pods.
pub fn example_manifest(
    name: &str,
    release: &str,
    repository: &str,
    tag: &str,
    replicas: i32,
) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "keystone.openstack.c5c3.io/v1alpha1",
        "kind": "Keystone",
        "metadata": { "name": name },
        "spec": {
            "openStackRelease": release,
            "image": { "repository": repository, "tag": tag },
            "database": { "secretName": "keystone-db", "key": "connection" },
            "adminPassword": { "secretName": "keystone-admin", "key": "password" },
            "api": { "replicas": replicas },
        }
    })
}

/// `manifest` (any service's) made to authenticate through the Keystone
/// `keystone`: its `spec.identity` names that Keystone, the service user's
/// password (Secret `password_secret`, key `password`) and the token cache
/// (`memcached`, `host:port`), and an `auth_strategy` the example set in any
/// section of `extraConfig` is dropped (it would be refused beside an
/// identity).
pub fn authenticating(
    mut manifest: serde_json::Value,
    keystone: &str,
    password_secret: &str,
    memcached: &str,
) -> serde_json::Value {
    let spec = &mut manifest["spec"];
    // Looked up, not indexed: indexing would add an empty `extraConfig`.
    if let Some(sections) = spec.get_mut("extraConfig").and_then(|e| e.as_object_mut()) {
        for options in sections.values_mut().filter_map(|o| o.as_object_mut()) {
            options.remove("auth_strategy");
        }
    }
    spec["identity"] = serde_json::json!({
        "keystone": keystone,
        "password": { "secretName": password_secret, "key": "password" },
        "memcachedServers": [memcached],
    });
    manifest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_authenticating_example_names_its_keystone_and_drops_noauth() {
        let manifest =
            crate::ironic::resource::real_example_manifest("ironic", "2026.1", "ironic", 1, 1);
        assert_eq!(
            manifest["spec"]["extraConfig"]["DEFAULT"]["auth_strategy"],
            "noauth"
        );
        let manifest = authenticating(manifest, "keystone", "ironic-keystone", "mc.ns.svc:11211");
        let ironic: crate::ironic::v1alpha1::Ironic =
            serde_json::from_value(manifest).expect("an Ironic");
        assert!(!ironic.spec.extra_config["DEFAULT"].contains_key("auth_strategy"));
        let identity = ironic.spec.identity.clone().expect("an identity");
        assert_eq!(identity.keystone, "keystone");
        assert_eq!(identity.password.secret_name, "ironic-keystone");
        assert_eq!(identity.memcached_servers, ["mc.ns.svc:11211"]);
        assert!(crate::ironic::config::identity_refusals(&ironic.spec).is_empty());

        // A manifest without `extraConfig` gains none.
        let glance =
            crate::glance::resource::example_manifest("g", "2026.1", "glance", "2026.1", 1);
        let glance = authenticating(glance, "keystone", "glance-keystone", "mc.ns.svc:11211");
        assert!(glance["spec"].get("extraConfig").is_none(), "{glance}");
    }
}
