//! The Placement resource: example manifests.

/// A Placement manifest for demos and tests: Secret `placement-db` (the
/// database URL), `replicas` API pods.
pub fn example_manifest(
    name: &str,
    release: &str,
    repository: &str,
    tag: &str,
    replicas: i32,
) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "placement.openstack.c5c3.io/v1alpha1",
        "kind": "Placement",
        "metadata": { "name": name },
        "spec": {
            "openStackRelease": release,
            "image": { "repository": repository, "tag": tag },
            "database": { "secretName": "placement-db", "key": "connection" },
            "api": { "replicas": replicas },
        }
    })
}

/// The example as real processes run it without a Keystone: two APIs,
/// `[api] auth_strategy = noauth2` (placement's test mode: the token names
/// `user:project`, roles come from a header), chosen explicitly.
pub fn real_example_manifest(name: &str, release: &str, repository: &str) -> serde_json::Value {
    let mut manifest = example_manifest(name, release, repository, release, 2);
    manifest["spec"]["extraConfig"] = serde_json::json!({ "api": { "auth_strategy": "noauth2" } });
    manifest
}
