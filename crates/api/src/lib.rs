//! What every service's custom resource shares (`common`), the rules for text
//! that reaches an oslo.config file (`oslo`), and the CRD manifest format.
//!
//! Each service's own types live in its folder in `ratchet-services`; they are
//! the source of truth: `ratchet crds` prints the CRDs (one per service, listed
//! by the registry), the checked-in copies under `deploy/crds/` are compared
//! with them by a test, so a type change without regenerating fails CI.

pub mod common;
pub mod identity;
pub mod oslo;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// A CRD as the YAML document that is checked in.
pub fn crd_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_yaml_ng::Error> {
    serde_yaml_ng::to_string(crd)
}
