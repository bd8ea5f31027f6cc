//! The operator's shared rules (admission, conversion, `ratchet plan`, the
//! example Secrets, the witness's expectations) checked on the registered
//! services: the operator crate names no service, so its examples live here.

mod agents;
pub mod checked_step;
mod conversion;
mod desired;
mod groups;
mod install;
pub mod peers;
mod pins;
mod plan;
mod pod_claims;
mod server;
mod validation;
mod witness;

/// An example manifest as the API server hands the resource over: in
/// namespace `ns`, with a uid.
pub fn stored<S: serde::de::DeserializeOwned + kube::Resource>(manifest: serde_json::Value) -> S {
    let mut object: S = serde_json::from_value(manifest).expect("the example deserializes");
    object.meta_mut().namespace = Some("ns".into());
    object.meta_mut().uid = Some("u-1".into());
    object
}
