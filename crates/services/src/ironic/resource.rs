//! The Ironic resource: example manifests.

/// An Ironic manifest for demos and tests: secrets `ironic-db`/`ironic-mq`,
/// `replicas` API and conductor pods.
pub fn example_manifest(
    name: &str,
    release: &str,
    repository: &str,
    tag: &str,
    replicas: i32,
) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "ironic.openstack.c5c3.io/v1alpha1",
        "kind": "Ironic",
        "metadata": { "name": name },
        "spec": {
            "openStackRelease": release,
            "image": { "repository": repository, "tag": tag },
            "database": { "secretName": "ironic-db", "key": "connection" },
            "transport": { "secretName": "ironic-mq", "key": "transport_url" },
            "api": { "replicas": replicas },
            "conductor": { "replicas": replicas },
        }
    })
}
