//! The CRD conversion webhook: answers a `ConversionReview` by converting every
//! object to the desired version, decided without I/O. One object that cannot
//! be converted fails the whole review (the API server then fails the request
//! that needed it) with a message naming the object.

use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};

use crate::service::contract::OpenStackService;

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
