use crate::cinder::conversion::convert;
use crate::cinder::v1beta1::Cinder;
use crate::ironic::v1alpha1::Ironic;
use serde_json::json;

use kube::core::conversion::ConversionReview;
use ratchet_operator::webhooks::conversion;

fn answer(review: ConversionReview) -> ConversionReview {
    conversion::answer::<Cinder>(review)
}

fn review(desired: &str, objects: Vec<serde_json::Value>) -> ConversionReview {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": { "uid": "u-1", "desiredAPIVersion": desired, "objects": objects },
    }))
    .expect("review")
}

fn alpha(name: &str) -> serde_json::Value {
    let mut object = crate::cinder::example_manifest(name, "2026.1", "cinder", "2026.1", &["lvm"]);
    object["metadata"]["namespace"] = json!("ns");
    convert(object, crate::cinder::conversion::V1ALPHA1).expect("a v1alpha1 form")
}

#[test]
fn converts_every_object_and_keeps_the_uid() {
    let answer = answer(review(
        "cinder.openstack.c5c3.io/v1beta1",
        vec![alpha("a"), alpha("b")],
    ));
    let response = answer.response.expect("response");
    assert_eq!(response.uid, "u-1");
    assert_eq!(
        response.result.status,
        Some(kube::core::response::StatusSummary::Success)
    );
    assert_eq!(response.converted_objects.len(), 2);
    assert_eq!(
        alpha("a")["apiVersion"],
        "cinder.openstack.c5c3.io/v1alpha1"
    );
    for object in &response.converted_objects {
        assert_eq!(object["apiVersion"], "cinder.openstack.c5c3.io/v1beta1");
        assert_eq!(object["spec"]["volumeBackends"][0]["name"], "lvm");
    }
}

#[test]
fn one_bad_object_fails_the_review_naming_it() {
    let mut bad = alpha("broken");
    bad["spec"] = json!("not an object");
    let answer = answer(review(
        "cinder.openstack.c5c3.io/v1beta1",
        vec![alpha("a"), bad],
    ));
    let response = answer.response.expect("response");
    assert_eq!(
        response.result.status,
        Some(kube::core::response::StatusSummary::Failure)
    );
    assert!(
        response.result.message.contains("Cinder broken"),
        "{}",
        response.result.message
    );
    assert!(response.converted_objects.is_empty());
}

#[test]
fn a_one_version_resource_converts_nothing() {
    let answer = conversion::answer::<Ironic>(review("ironic.openstack.c5c3.io/v1", vec![]));
    let response = answer.response.expect("response");
    assert_eq!(
        response.result.message,
        "Ironic has one version: nothing converts it"
    );
}

#[test]
fn an_unknown_version_is_refused() {
    let answer = answer(review("cinder.openstack.c5c3.io/v2", vec![alpha("a")]));
    let response = answer.response.expect("response");
    assert!(
        response.result.message.contains("v2"),
        "{}",
        response.result.message
    );
}
