//! The permissions the operator needs where it reconciles (docs/permissions.md).
//! One list: `ratchet manifests` renders it, the least-privilege test runs the
//! operator under it, and a test holds the Helm chart's copy to it.

use serde_json::{Value, json};

/// PolicyRules for the namespaces the operator reconciles in.
pub fn reconcile_rules() -> Value {
    json!([
        { "apiGroups": ["cinder.openstack.c5c3.io"], "resources": ["cinders"], "verbs": ["get", "list", "watch", "patch"] },
        { "apiGroups": ["cinder.openstack.c5c3.io"], "resources": ["cinders/status"], "verbs": ["get", "patch", "update"] },
        { "apiGroups": ["ironic.openstack.c5c3.io"], "resources": ["ironics"], "verbs": ["get", "list", "watch", "patch"] },
        { "apiGroups": ["ironic.openstack.c5c3.io"], "resources": ["ironics/status"], "verbs": ["get", "patch", "update"] },
        { "apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "watch", "create", "delete", "patch"] },
        { "apiGroups": ["apps"], "resources": ["deployments", "statefulsets"], "verbs": ["get", "list", "watch", "create", "delete", "patch"] },
        { "apiGroups": [""], "resources": ["configmaps", "services"], "verbs": ["get", "list", "watch", "create", "delete", "patch"] },
        { "apiGroups": [""], "resources": ["secrets"], "verbs": ["get"] },
        { "apiGroups": [""], "resources": ["pods"], "verbs": ["list", "delete"] },
        { "apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"] },
    ])
}

/// PolicyRules for the leader-election Lease, in the operator's own namespace.
pub fn leader_rules() -> Value {
    json!([{ "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "patch", "update"] }])
}

/// Cluster-scoped rules for keeping the webhook configuration (self-managed certificates).
/// Also the CRDs' conversion endpoint and caBundle, kept by the same operator.
pub fn webhook_rules() -> Value {
    let mut rules = json!([
        { "apiGroups": ["admissionregistration.k8s.io"], "resources": ["validatingwebhookconfigurations"], "verbs": ["get", "create", "patch"] },
    ]);
    if let (Some(all), Some(conversion)) = (rules.as_array_mut(), conversion_rules().as_array()) {
        all.extend(conversion.iter().cloned());
    }
    rules
}

/// Rules in the operator's own namespace for a self-managed certificate shared
/// by every replica (`--webhook-cert-secret`): read it, or store it first.
pub fn webhook_certificate_rules() -> Value {
    json!([{ "apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "create", "update"] }])
}

/// Cluster-scoped rules to keep the CRDs' conversion pointed at the operator
/// (endpoint and caBundle), watching for re-applied CRDs.
pub fn conversion_rules() -> Value {
    json!([
        { "apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get", "list", "watch", "patch"] },
    ])
}

/// Cluster-scoped rules for the stored-version migration: read the CRDs, prune
/// their `status.storedVersions`, and rewrite every object of Ratchet's
/// resources in every namespace (a no-op update).
pub fn storage_migration_rules() -> Value {
    json!([
        { "apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get", "list", "watch"] },
        { "apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions/status"], "verbs": ["update"] },
        { "apiGroups": ["cinder.openstack.c5c3.io"], "resources": ["cinders"], "verbs": ["list", "update"] },
        { "apiGroups": ["ironic.openstack.c5c3.io"], "resources": ["ironics"], "verbs": ["list", "update"] },
    ])
}
