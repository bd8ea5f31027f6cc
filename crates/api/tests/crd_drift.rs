//! The checked-in CRDs are exactly what the Rust types generate.

use std::path::Path;

#[test]
fn checked_in_crds_match_the_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds");
    for (file, crd) in ratchet_api::crds().expect("the CRDs build") {
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
    let (_, crd) = ratchet_api::crds().expect("the CRDs build").remove(0);
    let json = serde_json::to_value(&crd).expect("CRD serialises");
    let spec = &json["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(
        spec["properties"]["openStackRelease"]["pattern"],
        ratchet_release::RELEASE_PATTERN
    );
    assert_eq!(json["spec"]["versions"][0]["name"], "v1beta1");
    let image_rules =
        &spec["properties"]["image"]["properties"]["reference"]["x-kubernetes-validations"];
    assert_eq!(image_rules[0]["rule"], "has(self.tag) != has(self.digest)");
    assert_eq!(
        json["spec"]["versions"][0]["subresources"]["status"],
        serde_json::json!({})
    );
}

#[test]
fn the_shipped_cinder_crd_stores_v1beta1_and_converts_through_the_operator() {
    let (_, crd) = ratchet_api::crds().expect("the CRDs build").remove(0);
    let stored: Vec<_> = crd
        .spec
        .versions
        .iter()
        .filter(|v| v.storage)
        .map(|v| v.name.as_str())
        .collect();
    assert_eq!(stored, ["v1beta1"]);
    let conversion = crd.spec.conversion.as_ref().expect("conversion is set");
    assert_eq!(conversion.strategy, "Webhook");
    let webhook = conversion.webhook.as_ref().expect("webhook conversion");
    assert_eq!(webhook.conversion_review_versions, ["v1"]);
    let service = webhook
        .client_config
        .as_ref()
        .and_then(|c| c.service.as_ref())
        .expect("a Service");
    assert_eq!(
        (service.namespace.as_str(), service.name.as_str()),
        ratchet_api::cinder::DEFAULT_CONVERSION_SERVICE
    );
    assert_eq!(
        service.path.as_deref(),
        Some(ratchet_api::cinder::CONVERSION_PATH)
    );
}
