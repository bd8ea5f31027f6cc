//! What the Cinder CRD Ratchet ships says of its fields and versions.

#[test]
fn release_pattern_and_cel_rules_are_in_the_schema() {
    let crd = ratchet_services::cinder::crd().expect("the CRD builds");
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
fn the_shipped_cinder_crd_converts_through_the_operator() {
    // That it stores v1beta1 is the operator registry's test, for every CRD.
    let crd = ratchet_services::cinder::crd().expect("the CRD builds");
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
        ratchet_services::cinder::DEFAULT_CONVERSION_SERVICE
    );
    assert_eq!(
        service.path.as_deref(),
        Some(ratchet_services::cinder::CONVERSION_PATH)
    );
}
