//! The Cinder resource, by API version.

pub mod v1alpha1;

/// A Cinder manifest for demos and tests: secrets `cinder-db`/`cinder-mq`, one
/// back end per name, every back end on the LVM driver.
pub fn example_manifest(
    name: &str,
    release: &str,
    repository: &str,
    tag: &str,
    backends: &[&str],
) -> serde_json::Value {
    let volumes: serde_json::Map<String, serde_json::Value> = backends
        .iter()
        .map(|b| {
            (
                b.to_string(),
                serde_json::json!({ "options": { "volume_driver": "cinder.volume.drivers.lvm.LVMVolumeDriver" } }),
            )
        })
        .collect();
    serde_json::json!({
        "apiVersion": "cinder.openstack.c5c3.io/v1alpha1",
        "kind": "Cinder",
        "metadata": { "name": name },
        "spec": {
            "openStackRelease": release,
            "image": { "repository": repository, "tag": tag },
            "database": { "secretName": "cinder-db", "key": "connection" },
            "transport": { "secretName": "cinder-mq", "key": "transport_url" },
            "volumes": volumes,
        }
    })
}
