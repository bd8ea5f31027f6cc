//! Labels and annotations on everything Ratchet creates.

use std::collections::BTreeMap;

pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const MANAGER: &str = "ratchet";
pub const NAME: &str = "app.kubernetes.io/name";
pub const INSTANCE: &str = "app.kubernetes.io/instance";
pub const COMPONENT: &str = "app.kubernetes.io/component";

/// Hash of what a Job's pod runs (image, command, configuration): a new hash
/// replaces the Job.
pub const POD_SPEC_HASH: &str = "ratchet.c5c3.io/pod-spec-hash";
/// Hash of a workload's rendered pod template: an equal hash skips the apply.
pub const TEMPLATE_HASH: &str = "ratchet.c5c3.io/template-hash";
/// Hash of the rendered configuration, on pod templates so a change rolls pods.
pub const CONFIG_HASH: &str = "ratchet.c5c3.io/config-hash";

/// Labels of one component of one resource.
pub fn component(service: &str, instance: &str, component: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME.to_string(), service.to_string()),
        (INSTANCE.to_string(), instance.to_string()),
        (COMPONENT.to_string(), component.to_string()),
        (MANAGED_BY.to_string(), MANAGER.to_string()),
    ])
}

/// Selector for everything Ratchet made for one resource.
pub fn instance_selector(service: &str, instance: &str) -> String {
    format!("{NAME}={service},{INSTANCE}={instance},{MANAGED_BY}={MANAGER}")
}
