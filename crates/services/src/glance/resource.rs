//! The Glance resource: example manifests.

/// The PersistentVolumeClaim the example keeps its images on.
pub const EXAMPLE_CLAIM: &str = "glance-images";

/// A Glance manifest for demos and tests: Secret `glance-db` (the database
/// URL), images on the claim [`EXAMPLE_CLAIM`], `replicas` API pods.
pub fn example_manifest(
    name: &str,
    release: &str,
    repository: &str,
    tag: &str,
    replicas: i32,
) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "glance.openstack.c5c3.io/v1alpha1",
        "kind": "Glance",
        "metadata": { "name": name },
        "spec": {
            "openStackRelease": release,
            "image": { "repository": repository, "tag": tag },
            "database": { "secretName": "glance-db", "key": "connection" },
            "imageStore": { "fileVolumeClaim": EXAMPLE_CLAIM },
            "api": { "replicas": replicas },
        }
    })
}
