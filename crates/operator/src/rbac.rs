//! The permissions the operator needs where it reconciles (docs/permissions.md).
//! One list: `ratchet manifests` renders it, the least-privilege test runs the
//! operator under it, and a test holds the Helm chart's copy to it.

use serde_json::{Value, json};

use crate::registry::Registry;

/// PolicyRules for the namespaces the operator reconciles in.
pub fn reconcile_rules<R: Registry>() -> Value {
    let services = R::services().into_iter().flat_map(|s| {
        [
            json!({ "apiGroups": [s.group], "resources": [s.plural], "verbs": ["get", "list", "watch", "patch"] }),
            json!({ "apiGroups": [s.group], "resources": [format!("{}/status", s.plural)], "verbs": ["get", "patch", "update"] }),
        ]
    });
    let children = json!([
        { "apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "watch", "create", "delete", "patch"] },
        { "apiGroups": ["apps"], "resources": ["deployments", "statefulsets", "daemonsets"], "verbs": ["get", "list", "watch", "create", "delete", "patch"] },
        { "apiGroups": [""], "resources": ["configmaps", "services"], "verbs": ["get", "list", "watch", "create", "delete", "patch"] },
        { "apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch", "create"] },
        { "apiGroups": [""], "resources": ["pods"], "verbs": ["list", "delete"] },
        { "apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"] },
    ]);
    Value::Array(services.chain(rules(children)).collect())
}

fn rules(list: Value) -> Vec<Value> {
    match list {
        Value::Array(rules) => rules,
        _ => Vec::new(),
    }
}

/// PolicyRules for the leader-election Lease, in the operator's own namespace.
pub fn leader_rules() -> Value {
    json!([{ "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "patch", "update"] }])
}

/// Cluster-scoped rules for keeping the webhook configuration (self-managed certificates).
/// Also the CRDs' conversion endpoint and caBundle, kept by the same operator.
pub fn webhook_rules() -> Value {
    let admission = json!([
        { "apiGroups": ["admissionregistration.k8s.io"], "resources": ["validatingwebhookconfigurations"], "verbs": ["get", "create", "patch"] },
    ]);
    Value::Array([rules(admission), rules(conversion_rules())].concat())
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
pub fn storage_migration_rules<R: Registry>() -> Value {
    let crds = json!([
        { "apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get", "list", "watch"] },
        { "apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions/status"], "verbs": ["update"] },
    ]);
    let services = R::services().into_iter().map(
        |s| json!({ "apiGroups": [s.group], "resources": [s.plural], "verbs": ["list", "update"] }),
    );
    Value::Array(rules(crds).into_iter().chain(services).collect())
}
