//! The Ironic resource, by API version.

pub mod v1alpha1;
