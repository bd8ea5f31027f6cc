//! The CRD conversion webhook: answers a `ConversionReview` by converting every
//! object to the desired version, decided without I/O. One object that cannot
//! be converted fails the whole review (the API server then fails the request
//! that needed it) with a message naming the object.

use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};

use crate::service::OpenStackService;

/// The answer to a review of `S`'s objects.
pub fn answer<S: OpenStackService>(review: ConversionReview) -> ConversionReview {
    let request = match ConversionRequest::from_review(review) {
        Ok(request) => request,
        Err(e) => {
            return ConversionResponse::invalid(Status::failure(&e.to_string(), "BadRequest"))
                .into_review();
        }
    };
    let kind = S::kind(&());
    let Some(conversion) = S::conversion() else {
        let message = format!("{kind} has one version: nothing converts it");
        return ConversionResponse::for_request(request)
            .failure(Status::failure(&message, "ConversionFailed"))
            .into_review();
    };
    let desired = request.desired_api_version.clone();
    let objects = request.objects.clone();
    let response = ConversionResponse::for_request(request);
    let converted: Result<Vec<_>, String> = objects
        .into_iter()
        .map(|object| {
            let name = object
                .pointer("/metadata/name")
                .and_then(|n| n.as_str())
                .unwrap_or("<unnamed>")
                .to_string();
            (conversion.convert)(object, &desired)
                .map_err(|e| format!("converting {kind} {name} to {desired}: {e}"))
        })
        .collect();
    let response = match converted {
        Ok(objects) => response.success(objects),
        Err(message) => {
            tracing::warn!(%message, "conversion refused");
            response.failure(Status::failure(&message, "ConversionFailed"))
        }
    };
    response.into_review()
}

#[cfg(test)]
mod tests {
    use ratchet_api::cinder::conversion::convert;
    use ratchet_api::cinder::v1beta1::Cinder;
    use ratchet_api::ironic::v1alpha1::Ironic;
    use serde_json::json;

    use super::*;

    fn answer(review: ConversionReview) -> ConversionReview {
        super::answer::<Cinder>(review)
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
        let mut object =
            ratchet_api::cinder::example_manifest(name, "2026.1", "cinder", "2026.1", &["lvm"]);
        object["metadata"]["namespace"] = json!("ns");
        convert(object, ratchet_api::cinder::conversion::V1ALPHA1).expect("a v1alpha1 form")
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
        let answer = super::answer::<Ironic>(review("ironic.openstack.c5c3.io/v1", vec![]));
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
}
