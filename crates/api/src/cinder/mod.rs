//! The Cinder resource, by API version, and the conversion between them.

pub mod conversion;
pub mod v1alpha1;
pub mod v1beta1;

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

#[cfg(test)]
mod tests {
    use kube::CustomResourceExt;

    use super::*;

    #[test]
    fn v1beta1_schema_merges_back_ends_by_name_and_replaces_the_image_reference() {
        let crd = v1beta1::Cinder::crd();
        let json = serde_json::to_value(&crd).expect("CRD serialises");
        let spec = &json["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        let backends = &spec["properties"]["volumeBackends"];
        assert_eq!(backends["type"], "array");
        assert_eq!(backends["x-kubernetes-list-type"], "map");
        assert_eq!(
            backends["x-kubernetes-list-map-keys"],
            serde_json::json!(["name"])
        );
        let name = &backends["items"]["properties"]["name"];
        // A pattern, not a CEL rule: per item of an unbounded list, the rule's estimated
        // cost exceeds the API server's budget.
        assert_eq!(name["maxLength"], 40);
        assert_eq!(name["pattern"], "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
        assert_eq!(backends["items"]["required"], serde_json::json!(["name"]));

        let image = &spec["properties"]["image"];
        assert_eq!(
            image["required"],
            serde_json::json!(["reference", "repository"])
        );
        let reference = &image["properties"]["reference"];
        assert_eq!(reference["x-kubernetes-map-type"], "atomic");
        assert_eq!(
            reference["x-kubernetes-validations"][0]["rule"],
            "has(self.tag) != has(self.digest)"
        );
        assert!(spec["properties"].get("volumes").is_none());
    }
}
