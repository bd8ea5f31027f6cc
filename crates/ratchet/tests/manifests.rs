//! `ratchet manifests` applied with kubectl to a local cluster: everything is
//! accepted, the operator Deployment becomes available, and an operator acting
//! as its ServiceAccount installs a Cinder (the RBAC is enough).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use ratchet_api::cinder::v1alpha1::Cinder;
use ratchet_operator::OperatorConfig;
use ratchet_operator::testing::{create_example_cinder, impersonating};
use ratchet_testenv::wait::until;
use ratchet_testenv::{KubeBinaries, TestEnv};

#[tokio::test]
async fn manifests_apply_and_their_rbac_runs_the_operator() -> Result<()> {
    let env = TestEnv::shared()?;
    let out = Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args(["manifests", "--image", "registry.invalid/ratchet:test"])
        .output()?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut kubectl = Command::new(KubeBinaries::ensure()?.kubectl())
        .args(["apply", "--server-side", "-f", "-"])
        .env("KUBECONFIG", env.kubeconfig_path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    kubectl
        .stdin
        .take()
        .context("stdin")?
        .write_all(&out.stdout)?;
    let applied = kubectl.wait_with_output()?;
    ensure!(
        applied.status.success(),
        "kubectl apply: {}{}",
        String::from_utf8_lossy(&applied.stdout),
        String::from_utf8_lossy(&applied.stderr)
    );

    let admin = env.client()?;
    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), "ratchet-system");
    until(
        &deployments,
        "ratchet",
        Duration::from_secs(60),
        "operator Deployment available",
        |d: &Deployment| d.status.as_ref().and_then(|s| s.available_replicas) == Some(1),
    )
    .await?;

    let ns = env.namespace(&admin, "manifests").await?;
    ratchet_operator::install::ensure_example_secrets(&admin, ns.name()).await?;
    let operator = ratchet_operator::start(
        impersonating(env.config(), "ratchet-system", "ratchet")?,
        OperatorConfig {
            namespace: Some(ns.name().to_string()),
            ..OperatorConfig::default()
        },
    )
    .await?;
    let api = create_example_cinder(&admin, ns.name(), "c", "2026.1", &[]).await?;
    until(
        &api,
        "c",
        Duration::from_secs(60),
        "Ready under the manifests' RBAC",
        |c: &Cinder| {
            c.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|x| x.type_ == "Ready" && x.status == "True")
            })
        },
    )
    .await?;
    operator.stop().await;
    ns.cleanup().await;
    Ok(())
}
