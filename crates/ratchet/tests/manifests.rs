//! `ratchet manifests` applied with kubectl to a local cluster: everything is
//! accepted, the operator Deployment becomes available, and an operator acting
//! as its ServiceAccount installs a Cinder (the RBAC is enough).

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
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

    common::service_account_runs_the_operator(env, "ratchet-system", "ratchet").await?;
    Ok(())
}
