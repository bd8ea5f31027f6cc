//! `ratchet manifests`: everything to install Ratchet without Helm, as YAML
//! documents for `kubectl apply --server-side -f -`. One replica with
//! self-managed webhook certificates and leader election (so a second replica can
//! be added once certificates come from elsewhere). The Helm chart
//! (deploy/helm/ratchet) is the richer way; both use the same RBAC rules.

use clap::Args;
use ratchet_operator::rbac;
use ratchet_services::{Registry, Services};
use serde_json::{Value, json};

#[derive(Args)]
pub struct ManifestsArgs {
    /// Namespace the operator runs in.
    #[arg(long, default_value = "ratchet-system")]
    namespace: String,
    /// The operator image.
    #[arg(long, default_value = "ratchet:0.1.0")]
    image: String,
    /// Watch only this namespace (a Role there instead of a ClusterRole).
    #[arg(long)]
    watch_namespace: Option<String>,
}

fn binding(
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    role_kind: &str,
    sa_namespace: &str,
) -> Value {
    let mut metadata = json!({ "name": name, "labels": { "app.kubernetes.io/name": "ratchet" } });
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": metadata,
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name },
        "subjects": [{ "kind": "ServiceAccount", "name": "ratchet", "namespace": sa_namespace }],
    })
}

fn role(kind: &str, name: &str, namespace: Option<&str>, rules: Value) -> Value {
    let mut metadata = json!({ "name": name, "labels": { "app.kubernetes.io/name": "ratchet" } });
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    json!({ "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": metadata, "rules": rules })
}

/// The documents, in apply order.
pub fn documents(args: &ManifestsArgs) -> anyhow::Result<Vec<Value>> {
    let ns = args.namespace.as_str();
    let mut docs =
        vec![json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": ns } })];
    for crd in Services::crds()? {
        docs.push(serde_json::to_value(crd)?);
    }
    docs.push(json!({ "apiVersion": "v1", "kind": "ServiceAccount", "metadata": { "name": "ratchet", "namespace": ns } }));
    match &args.watch_namespace {
        Some(watched) => {
            docs.push(role(
                "Role",
                "ratchet",
                Some(watched),
                rbac::reconcile_rules::<Services>(),
            ));
            docs.push(binding("RoleBinding", "ratchet", Some(watched), "Role", ns));
        }
        None => {
            docs.push(role(
                "ClusterRole",
                "ratchet",
                None,
                rbac::reconcile_rules::<Services>(),
            ));
            docs.push(binding(
                "ClusterRoleBinding",
                "ratchet",
                None,
                "ClusterRole",
                ns,
            ));
        }
    }
    docs.push(role(
        "Role",
        "ratchet-leader",
        Some(ns),
        rbac::leader_rules(),
    ));
    docs.push(binding(
        "RoleBinding",
        "ratchet-leader",
        Some(ns),
        "Role",
        ns,
    ));
    docs.push(role(
        "Role",
        "ratchet-webhook-certificate",
        Some(ns),
        rbac::webhook_certificate_rules(),
    ));
    docs.push(binding(
        "RoleBinding",
        "ratchet-webhook-certificate",
        Some(ns),
        "Role",
        ns,
    ));
    docs.push(role(
        "ClusterRole",
        "ratchet-storage",
        None,
        rbac::storage_migration_rules::<Services>(),
    ));
    docs.push(binding(
        "ClusterRoleBinding",
        "ratchet-storage",
        None,
        "ClusterRole",
        ns,
    ));
    docs.push(role(
        "ClusterRole",
        "ratchet-webhook",
        None,
        rbac::webhook_rules(),
    ));
    docs.push(binding(
        "ClusterRoleBinding",
        "ratchet-webhook",
        None,
        "ClusterRole",
        ns,
    ));
    let labels =
        json!({ "app.kubernetes.io/name": "ratchet", "app.kubernetes.io/instance": "ratchet" });
    let mut operator_args = vec![
        "--log-format=json".to_string(),
        "operator".into(),
        "--leader-election".into(),
        "--metrics-bind=0.0.0.0:8080".into(),
        "--webhook-bind=0.0.0.0:9443".into(),
        format!("--webhook-register-service={ns}/ratchet:443"),
        // One self-managed certificate for every replica.
        format!("--webhook-cert-secret={ns}/ratchet-webhook-tls"),
        // Cluster-wide even when one namespace is watched: storedVersions is
        // a property of the whole cluster.
        "--storage-migration=true".into(),
    ];
    if let Some(watched) = &args.watch_namespace {
        operator_args.push(format!("--namespace={watched}"));
    }
    docs.push(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": { "name": "ratchet", "namespace": ns, "labels": labels },
        "spec": {
            "replicas": 1,
            "selector": { "matchLabels": labels },
            "template": {
                "metadata": { "labels": labels },
                "spec": {
                    "serviceAccountName": "ratchet",
                    "securityContext": { "runAsNonRoot": true, "seccompProfile": { "type": "RuntimeDefault" } },
                    "containers": [{
                        "name": "operator",
                        "image": args.image,
                        "args": operator_args,
                        "env": [
                            { "name": "POD_NAME", "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } },
                            { "name": "POD_NAMESPACE", "valueFrom": { "fieldRef": { "fieldPath": "metadata.namespace" } } },
                        ],
                        "ports": [{ "name": "metrics", "containerPort": 8080 }, { "name": "webhook", "containerPort": 9443 }],
                        "readinessProbe": { "httpGet": { "path": "/readyz", "port": "metrics" } },
                        "livenessProbe": { "httpGet": { "path": "/healthz", "port": "metrics" } },
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "capabilities": { "drop": ["ALL"] },
                        },
                    }],
                },
            },
        },
    }));
    docs.push(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": { "name": "ratchet", "namespace": ns, "labels": labels },
        "spec": {
            "selector": labels,
            "ports": [
                { "name": "metrics", "port": 8080, "targetPort": "metrics" },
                { "name": "webhook", "port": 443, "targetPort": "webhook" },
            ],
        },
    }));
    Ok(docs)
}

pub fn run(args: ManifestsArgs) -> anyhow::Result<()> {
    for doc in documents(&args)? {
        print!("---\n{}", serde_yaml_ng::to_string(&doc)?);
    }
    Ok(())
}
