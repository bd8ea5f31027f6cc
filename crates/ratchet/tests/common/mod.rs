//! Set-up the `ratchet` command's tests share.

#![allow(dead_code)] // each test binary uses a different part

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use anyhow::Result;
use kube::Client;
use ratchet_operator::testing::impersonating;
use ratchet_operator::{OperatorConfig, OperatorHandle};
use ratchet_services::Services;
use ratchet_services::testing::{create_example_cinder, settled_at};
use ratchet_testenv::wait::until;
use ratchet_testenv::{TestEnv, TestNamespace};

pub const TIMEOUT: Duration = Duration::from_secs(60);

/// CRDs installed, a fresh namespace with the example Secrets, and an operator
/// reconciling only there (with `client`'s identity).
pub async fn scoped_operator(
    env: &TestEnv,
    client: Client,
    prefix: &str,
) -> Result<(TestNamespace, OperatorHandle)> {
    ratchet_operator::install::install_crds::<Services>(&env.client()?, TIMEOUT).await?;
    let admin = env.client()?;
    let ns = env.namespace(&admin, prefix).await?;
    ratchet_operator::install::ensure_example_secrets::<Services>(&admin, ns.name()).await?;
    let operator = ratchet_operator::start::<Services>(
        client,
        OperatorConfig {
            namespace: Some(ns.name().to_string()),
            ..OperatorConfig::default()
        },
    )
    .await?;
    Ok((ns, operator))
}

/// An operator acting as the ServiceAccount `namespace/name` installs a Cinder
/// to Ready: the account's RBAC is enough.
pub async fn service_account_runs_the_operator(
    env: &TestEnv,
    namespace: &str,
    name: &str,
) -> Result<()> {
    let (ns, operator) =
        scoped_operator(env, impersonating(env.config(), namespace, name)?, "rbac").await?;
    let api = create_example_cinder(&env.client()?, ns.name(), "c", "2026.1", &[]).await?;
    until(
        &api,
        "c",
        TIMEOUT,
        &format!("Ready under {namespace}/{name}'s RBAC"),
        settled_at("2026.1"),
    )
    .await?;
    operator.stop().await;
    ns.cleanup().await;
    Ok(())
}

/// Runs the `ratchet` binary against the cluster of `kubeconfig`.
pub fn ratchet(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ratchet"))
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .expect("the ratchet binary runs")
}

/// What a run printed, stdout then stderr.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
