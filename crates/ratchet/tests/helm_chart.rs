//! The Helm chart (deploy/helm/ratchet): rendered with a helm built from Go
//! modules and checked document by document, then installed into a local
//! cluster, where an operator acting as the chart's ServiceAccount installs a
//! Cinder — proof that the chart's RBAC is enough.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, ensure};
use ratchet_operator::webhooks::registration;
use ratchet_operator::webhooks::{Endpoint, Registration};
use ratchet_services::{Registry, Services};
use ratchet_testenv::TestEnv;
use ratchet_testenv::binaries::ensure_helm;
use serde::Deserialize;
use serde_json::Value;

fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/helm/ratchet")
}

fn helm(args: &[&str]) -> Result<std::process::Output> {
    Ok(Command::new(ensure_helm()?).args(args).output()?)
}

fn render(set: &[&str]) -> Result<Vec<Value>> {
    let chart = chart();
    let mut args = vec![
        "template",
        "ratchet",
        chart.to_str().context("chart path")?,
        "--namespace",
        "ratchet-system",
        "--include-crds",
    ];
    for s in set {
        args.push("--set");
        args.push(s);
    }
    let out = helm(&args)?;
    ensure!(
        out.status.success(),
        "helm template failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout)?;
    let mut docs = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(&text) {
        let value = Value::deserialize(doc)?;
        if !value.is_null() {
            docs.push(value);
        }
    }
    Ok(docs)
}

fn kinds(docs: &[Value]) -> Vec<String> {
    docs.iter()
        .filter_map(|d| d["kind"].as_str().map(str::to_owned))
        .collect()
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
}

#[test]
fn default_render_is_ha_with_cert_manager_and_cluster_rbac() -> Result<()> {
    let docs = render(&[])?;
    let kinds = kinds(&docs);
    for kind in [
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
        "Service",
        "PodDisruptionBudget",
        "Issuer",
        "Certificate",
        "ValidatingWebhookConfiguration",
    ] {
        ensure!(kinds.iter().any(|k| k == kind), "no {kind} in {kinds:?}");
    }
    let deployment = find(&docs, "Deployment", "ratchet").context("deployment")?;
    ensure!(deployment["spec"]["replicas"] == 2);
    let args: Vec<&str> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .context("args")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for arg in [
        "operator",
        "--leader-election",
        "--webhook-cert-file=/etc/ratchet/webhook/tls.crt",
        "--webhook-ca-file=/etc/ratchet/webhook/ca.crt",
        "--webhook-register-service=ratchet-system/ratchet:443",
        "--webhook-conversion-only",
        "--log-format=json",
    ] {
        ensure!(args.contains(&arg), "{arg} missing from {args:?}");
    }
    // With cert-manager the operator keeps only the Cinder CRD's conversion.
    let webhook_role = find(&docs, "ClusterRole", "ratchet-webhook").context("webhook role")?;
    ensure!(webhook_role["rules"] == ratchet_operator::rbac::conversion_rules());
    let security = &deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"];
    ensure!(
        security["allowPrivilegeEscalation"] == false && security["readOnlyRootFilesystem"] == true
    );
    let webhook = find(&docs, "ValidatingWebhookConfiguration", "ratchet").context("webhook")?;
    ensure!(
        webhook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
            == "ratchet-system/ratchet-webhook"
    );
    // One entry per registered service, as the operator registers it: each
    // names the version its handler speaks (others arrive converted).
    let registration = Registration {
        name: "ratchet".into(),
        endpoint: Endpoint::Service {
            namespace: "ratchet-system".into(),
            name: "ratchet".into(),
            port: 443,
        },
        namespace_selector: None,
        admission: true,
        conversion: false,
    };
    let mut expected = registration::webhooks::<Services>(&registration, "");
    for entry in &mut expected {
        if let Some(config) = entry["clientConfig"].as_object_mut() {
            config.remove("caBundle");
        }
    }
    ensure!(
        webhook["webhooks"] == serde_json::json!(expected),
        "the chart's webhooks drifted from the registry's: {}",
        webhook["webhooks"]
    );
    let rules = find(&docs, "ClusterRole", "ratchet").context("cluster role")?["rules"].to_string();
    ensure!(
        rules.contains("cinders/status") && !rules.contains("\"*\""),
        "least privilege, no wildcards: {rules}"
    );
    let pdb = find(&docs, "PodDisruptionBudget", "ratchet").context("pdb")?;
    ensure!(pdb["spec"]["minAvailable"] == 1);
    Ok(())
}

#[test]
fn namespaced_mode_uses_a_role_and_scopes_the_webhook() -> Result<()> {
    let docs = render(&["watchNamespace=openstack"])?;
    ensure!(
        find(&docs, "ClusterRole", "ratchet").is_none(),
        "no cluster-wide rules in namespaced mode"
    );
    let role = find(&docs, "Role", "ratchet").context("role")?;
    ensure!(role["metadata"]["namespace"] == "openstack");
    let deployment = find(&docs, "Deployment", "ratchet").context("deployment")?;
    ensure!(deployment.to_string().contains("--namespace=openstack"));
    let webhook = find(&docs, "ValidatingWebhookConfiguration", "ratchet").context("webhook")?;
    ensure!(
        webhook["webhooks"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
            == "openstack"
    );
    Ok(())
}

#[test]
fn self_managed_certificates_are_shared_by_every_replica() -> Result<()> {
    let docs = render(&["webhook.certificates=self-managed"])?;
    let deployment = find(&docs, "Deployment", "ratchet").context("deployment")?;
    ensure!(deployment["spec"]["replicas"] == 2);
    ensure!(
        deployment
            .to_string()
            .contains("--webhook-cert-secret=ratchet-system/ratchet-webhook-tls"),
        "{deployment}"
    );
    ensure!(
        find(&docs, "Role", "ratchet-webhook-certificate").map(|r| &r["rules"])
            == Some(&ratchet_operator::rbac::webhook_certificate_rules()),
        "the replicas may store and read their shared certificate"
    );
    ensure!(
        find(&render(&[])?, "Role", "ratchet-webhook-certificate").is_none(),
        "cert-manager mode needs no Secret rights"
    );
    ensure!(
        find(&docs, "ClusterRole", "ratchet-webhook").map(|r| &r["rules"])
            == Some(&ratchet_operator::rbac::webhook_rules()),
        "the operator may manage its webhook and the CRD's conversion"
    );
    ensure!(find(&docs, "Certificate", "ratchet-webhook").is_none());
    Ok(())
}

#[test]
fn chart_rbac_is_the_operators_own_list() -> Result<()> {
    let docs = render(&[])?;
    let role = find(&docs, "ClusterRole", "ratchet").context("cluster role")?;
    ensure!(
        role["rules"] == ratchet_operator::rbac::reconcile_rules::<Services>(),
        "deploy/helm/ratchet/templates/_helpers.tpl drifted from crates/operator/src/rbac.rs: {}",
        role["rules"]
    );
    let storage = find(&docs, "ClusterRole", "ratchet-storage").context("storage role")?;
    ensure!(
        storage["rules"] == ratchet_operator::rbac::storage_migration_rules::<Services>(),
        "the chart's storage-migration rules drifted from crates/operator/src/rbac.rs: {}",
        storage["rules"]
    );
    let off = render(&["storageMigration.enabled=false"])?;
    ensure!(find(&off, "ClusterRole", "ratchet-storage").is_none());
    Ok(())
}

#[test]
fn chart_crds_are_the_generated_ones() -> Result<()> {
    for crd in Services::crds()? {
        let file = ratchet_operator::registry::crd_file(&crd);
        let generated = ratchet_api::crd_yaml(&crd)?;
        let in_chart =
            std::fs::read_to_string(chart().join("crds").join(&file)).unwrap_or_default();
        ensure!(
            generated == in_chart,
            "deploy/helm/ratchet/crds/{file} is stale: copy deploy/crds/{file}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn the_chart_installs_and_its_rbac_runs_the_operator() -> Result<()> {
    let env = TestEnv::shared()?;
    let kubeconfig = env
        .kubeconfig_path()
        .to_str()
        .context("kubeconfig path")?
        .to_string();
    let chart = chart();
    let out = helm(&[
        "install",
        "ratchet",
        chart.to_str().context("chart")?,
        "--kubeconfig",
        &kubeconfig,
        "--namespace",
        "ratchet-system",
        "--create-namespace",
        "--set",
        "webhook.certificates=self-managed",
        "--wait",
        "--timeout",
        "120s",
    ])?;
    ensure!(
        out.status.success(),
        "helm install failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    common::service_account_runs_the_operator(env, "ratchet-system", "ratchet").await?;
    let _ = helm(&[
        "uninstall",
        "ratchet",
        "--kubeconfig",
        &kubeconfig,
        "--namespace",
        "ratchet-system",
    ]);
    Ok(())
}
