//! Ratchet's custom resources and the CRD manifests generated from them.
//!
//! The Rust types are the source of truth: `ratchet crds` prints the CRDs, the
//! checked-in copies under `deploy/crds/` are compared with them by a test, so a
//! type change without regenerating fails CI.

pub mod cinder;
pub mod common;
pub mod ironic;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// Every CRD Ratchet serves, with the file it is checked in as.
pub fn crds() -> Vec<(&'static str, CustomResourceDefinition)> {
    vec![
        (
            "cinders.cinder.openstack.c5c3.io.yaml",
            cinder::v1alpha1::Cinder::crd(),
        ),
        (
            "ironics.ironic.openstack.c5c3.io.yaml",
            ironic::v1alpha1::Ironic::crd(),
        ),
    ]
}

/// A CRD as the YAML document that is checked in.
pub fn crd_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_yaml_ng::Error> {
    serde_yaml_ng::to_string(crd)
}
