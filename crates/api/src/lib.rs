//! Ratchet's custom resources and the CRD manifests generated from them.
//!
//! The Rust types are the source of truth: `ratchet crds` prints the CRDs (one
//! per service, listed by the operator's registry), the checked-in copies under
//! `deploy/crds/` are compared with them by a test, so a type change without
//! regenerating fails CI.

pub mod cinder;
pub mod common;
pub mod ironic;
pub mod oslo;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// A CRD as the YAML document that is checked in.
pub fn crd_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_yaml_ng::Error> {
    serde_yaml_ng::to_string(crd)
}
