//! Ratchet's custom resources and the CRD manifests generated from them.
//!
//! The Rust types are the source of truth: `ratchet crds` prints the CRDs, the
//! checked-in copies under `deploy/crds/` are compared with them by a test, so a
//! type change without regenerating fails CI.

pub mod cinder;
pub mod common;
pub mod ironic;
pub mod oslo;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use kube::core::crd::MergeError;

/// Every CRD Ratchet serves, with the file it is checked in as.
pub fn crds() -> Result<Vec<(&'static str, CustomResourceDefinition)>, MergeError> {
    Ok(vec![
        ("cinders.cinder.openstack.c5c3.io.yaml", cinder::crd()?),
        (
            "ironics.ironic.openstack.c5c3.io.yaml",
            ironic::v1alpha1::Ironic::crd(),
        ),
    ])
}

/// The names of Ratchet's CRDs.
pub fn crd_names() -> Vec<&'static str> {
    vec![
        cinder::v1beta1::Cinder::crd_name(),
        ironic::v1alpha1::Ironic::crd_name(),
    ]
}

/// A CRD as the YAML document that is checked in.
pub fn crd_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_yaml_ng::Error> {
    serde_yaml_ng::to_string(crd)
}
