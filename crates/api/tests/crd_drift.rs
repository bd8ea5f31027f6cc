//! The checked-in CRDs are exactly what the Rust types generate.

use std::path::Path;

#[test]
fn checked_in_crds_match_the_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds");
    for (file, crd) in ratchet_api::crds() {
        let generated = ratchet_api::crd_yaml(&crd).expect("CRD serialises");
        let checked_in = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        assert!(
            generated == checked_in,
            "deploy/crds/{file} is out of date: run `cargo run -p ratchet -- crds --write deploy/crds`"
        );
    }
}

#[test]
fn release_pattern_and_cel_rules_are_in_the_schema() {
    let (_, crd) = ratchet_api::crds().remove(0);
    let json = serde_json::to_value(&crd).expect("CRD serialises");
    let spec = &json["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(
        spec["properties"]["openStackRelease"]["pattern"],
        ratchet_release::RELEASE_PATTERN
    );
    let image_rules = &spec["properties"]["image"]["x-kubernetes-validations"];
    assert_eq!(image_rules[0]["rule"], "has(self.tag) != has(self.digest)");
    assert_eq!(
        json["spec"]["versions"][0]["subresources"]["status"],
        serde_json::json!({})
    );
}
