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
