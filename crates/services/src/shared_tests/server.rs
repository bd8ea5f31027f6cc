use crate::cinder::v1beta1::Cinder;
use serde_json::json;

use kube::core::admission::AdmissionReview;
use ratchet_operator::webhooks::server::*;

fn review(backend: serde_json::Value) -> AdmissionReview<Cinder> {
    review_with(backend, json!({}))
}

fn review_with(backend: serde_json::Value, backup: serde_json::Value) -> AdmissionReview<Cinder> {
    serde_json::from_value(json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u",
            "kind": { "group": "cinder.openstack.c5c3.io", "version": "v1beta1", "kind": "Cinder" },
            "resource": { "group": "cinder.openstack.c5c3.io", "version": "v1beta1", "resource": "cinders" },
            "operation": "CREATE",
            "userInfo": {},
            "object": {
                "apiVersion": "cinder.openstack.c5c3.io/v1beta1",
                "kind": "Cinder",
                "metadata": { "name": "c", "namespace": "ns" },
                "spec": {
                    "openStackRelease": "2026.1",
                    "image": { "repository": "cinder", "reference": { "tag": "2026.1" } },
                    "database": { "secretName": "db", "key": "connection" },
                    "transport": { "secretName": "mq", "key": "url" },
                    "volumeBackends": [backend],
                    "backup": backup,
                }
            },
        }
    }))
    .expect("review")
}

#[test]
fn a_privileged_back_end_is_admitted_with_a_warning() {
    let answer = admission_answer(review(json!({ "name": "lvm", "privileged": true }))).0;
    let response = answer.response.expect("response");
    assert!(response.allowed);
    assert_eq!(
        response.warnings,
        Some(vec![
            "spec.volumeBackends[\"lvm\"].privileged: its cinder-volume pods run as root, privileged, with privilege escalation allowed".to_string()
        ])
    );
    let answer = admission_answer(review(json!({ "name": "lvm" }))).0;
    let response = answer.response.expect("response");
    assert!(response.allowed && response.warnings.is_none());
}

#[test]
fn a_privileged_backup_is_admitted_with_a_warning_while_it_has_pods() {
    let lvm = || json!({ "name": "lvm" });
    let warned = |backup| {
        admission_answer(review_with(lvm(), backup))
            .0
            .response
            .expect("response")
            .warnings
    };
    assert_eq!(
        warned(json!({ "posixVolumeClaim": "backups", "privileged": true })),
        Some(vec![
            "spec.backup.privileged: its cinder-backup pods run as root, privileged, with privilege escalation allowed".to_string()
        ])
    );
    // No driver: no backup pods to run privileged.
    assert_eq!(warned(json!({ "privileged": true })), None);
}
