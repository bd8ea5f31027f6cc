//! Admission of arbitrary JSON Cinder and Ironic objects (and whole
//! AdmissionReviews, as the webhook endpoints receive them): never panics, and
//! the decision is deterministic.
#![no_main]

use kube::core::admission::AdmissionReview;
use libfuzzer_sys::fuzz_target;
use ratchet_operator::webhooks::server::admission_answer;
use ratchet_operator::webhooks::validation::validate;
use ratchet_services::cinder::v1beta1::Cinder;
use ratchet_services::ironic::v1alpha1::Ironic;
use serde_json::{Value, json};

fn admit<S: ratchet_operator::service::OpenStackService>(new: &Value, old: &Value) {
    let Ok(typed) = serde_json::from_value::<S>(new.clone()) else {
        return;
    };
    let old = serde_json::from_value::<S>(old.clone()).ok();
    let first = validate(&typed, old.as_ref());
    assert_eq!(first, validate(&typed, old.as_ref()), "not deterministic");
    for message in &first {
        assert!(message.starts_with("spec."), "{message}");
    }
}

fn review<S: ratchet_operator::service::OpenStackService>(new: &Value, old: &Value) {
    let body = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u",
            "kind": { "group": "", "version": "v1", "kind": "X" },
            "resource": { "group": "", "version": "v1", "resource": "x" },
            "operation": "UPDATE",
            "userInfo": {},
            "object": new,
            "oldObject": old,
        }
    });
    let Ok(review) = serde_json::from_value::<AdmissionReview<S>>(body) else {
        return;
    };
    let first = serde_json::to_value(admission_answer(review.clone()).0).ok();
    let second = serde_json::to_value(admission_answer(review).0).ok();
    assert_eq!(first, second, "not deterministic");
}

fuzz_target!(|data: &[u8]| {
    let mut u = arbitrary::Unstructured::new(data);
    let templates = [
        ratchet_fuzz::cinder_v1beta1,
        ratchet_fuzz::cinder_v1alpha1,
        ratchet_fuzz::ironic,
    ];
    let (Ok(new), Ok(old)) = (
        ratchet_fuzz::object(&mut u, &templates),
        ratchet_fuzz::object(&mut u, &templates),
    ) else {
        return;
    };
    admit::<Cinder>(&new, &old);
    admit::<Ironic>(&new, &old);
    review::<Cinder>(&new, &old);
    review::<Ironic>(&new, &old);
    // Raw bytes as a review body.
    if let Ok(raw) = serde_json::from_slice::<AdmissionReview<Cinder>>(data) {
        let _ = admission_answer(raw);
    }
});
