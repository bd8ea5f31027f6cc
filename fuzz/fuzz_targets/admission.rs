//! Admission of arbitrary JSON objects of every registered service (and whole
//! AdmissionReviews, as the webhook endpoints receive them): never panics, and
//! the decision is deterministic. The inputs start from hand-written rich
//! objects and every service's own example.
#![no_main]

use kube::core::admission::AdmissionReview;
use libfuzzer_sys::fuzz_target;
use ratchet_operator::webhooks::server::admission_answer;
use ratchet_operator::webhooks::validation::validate;
use ratchet_operator::registry::{PerService, ServiceVisitor};
use ratchet_operator::service::OpenStackService;
use ratchet_services::cinder::v1beta1::Cinder;
use ratchet_services::{Registry, Services};
use serde_json::{Value, json};

fn admit<S: OpenStackService>(new: &Value, old: &Value) {
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

fn review<S: OpenStackService>(new: &Value, old: &Value) {
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

/// Admits the pair as every registered service would.
struct Admission<'a> {
    new: &'a Value,
    old: &'a Value,
}

impl ServiceVisitor for Admission<'_> {
    fn visit<S: OpenStackService>(&mut self) {
        admit::<S>(self.new, self.old);
        review::<S>(self.new, self.old);
    }
}

/// A service's example manifest, as a valid starting point.
struct ExampleManifest;

impl PerService for ExampleManifest {
    type Item = Value;
    fn of<S: OpenStackService>(&self) -> Value {
        S::example("x", "2026.1", "registry.example/x", 2).manifest
    }
}

fn templates() -> &'static [Value] {
    static TEMPLATES: std::sync::OnceLock<Vec<Value>> = std::sync::OnceLock::new();
    TEMPLATES.get_or_init(|| {
        let mut templates = vec![
            ratchet_fuzz::cinder_v1beta1(),
            ratchet_fuzz::cinder_v1alpha1(),
            ratchet_fuzz::ironic(),
        ];
        templates.extend(Services::map(&ExampleManifest));
        templates
    })
}

fuzz_target!(|data: &[u8]| {
    let mut u = arbitrary::Unstructured::new(data);
    let (Ok(new), Ok(old)) = (
        ratchet_fuzz::object(&mut u, templates()),
        ratchet_fuzz::object(&mut u, templates()),
    ) else {
        return;
    };
    Services::visit_all(&mut Admission {
        new: &new,
        old: &old,
    });
    // Raw bytes as a review body.
    if let Ok(raw) = serde_json::from_slice::<AdmissionReview<Cinder>>(data) {
        let _ = admission_answer(raw);
    }
});
