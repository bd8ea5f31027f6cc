//! `ratchet storage report|preflight|migrate` as a cluster administrator runs
//! them before upgrading Ratchet, against a control plane whose etcd serves TLS
//! and wants client certificates, as production etcd does.

mod common;

use std::path::Path;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::PostParams;
use kube::{Api, CustomResourceExt};
use ratchet_services::Services;
use ratchet_services::cinder::{self, conversion, v1alpha1, v1beta1};
use ratchet_testenv::{ClusterOptions, EtcdClientFiles, LocalCluster};
use serde_json::{Value, json};

const OBJECTS: usize = 5;
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The report's row for the Cinder CRD.
fn cinder_row(kubeconfig: &Path, etcd_url: &str, files: &EtcdClientFiles) -> Result<Value> {
    let out = common::ratchet(
        kubeconfig,
        &[
            "storage",
            "report",
            "--json",
            "--etcd-url",
            etcd_url,
            "--etcd-ca-file",
            files.ca.to_str().context("path")?,
            "--etcd-cert-file",
            files.cert.to_str().context("path")?,
            "--etcd-key-file",
            files.key.to_str().context("path")?,
        ],
    );
    ensure!(out.status.success(), "{}", common::text(&out));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout)?;
    rows.into_iter()
        .find(|r| r["crd"] == "cinders.cinder.openstack.c5c3.io")
        .context("no Cinder row")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_preflight_and_migrate_before_upgrading_ratchet() -> Result<()> {
    let cluster = LocalCluster::start_with(ClusterOptions {
        etcd_tls: true,
        ..ClusterOptions::default()
    })
    .await?;
    let client = cluster.client()?;
    let kubeconfig = cluster.kubeconfig_path();
    let files = cluster.etcd_client_files().context("etcd TLS files")?;
    let etcd_url = cluster.etcd().base_url().to_string();
    ensure!(etcd_url.starts_with("https://"));

    // The previous Ratchet: Cinder stored as v1alpha1.
    ratchet_services::testing::install_crds_before_v1beta1(&client, TIMEOUT).await?;
    let namespace: Namespace = serde_json::from_value(json!({ "metadata": { "name": "old" } }))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await?;
    let alpha: Api<v1alpha1::Cinder> = Api::namespaced(client.clone(), "old");
    for i in 0..OBJECTS {
        let manifest = cinder::example_manifest(
            &format!("c{i}"),
            "2026.1",
            "registry.invalid/cinder",
            "2026.1",
            &["lvm"],
        );
        let object: v1alpha1::Cinder =
            serde_json::from_value(conversion::convert(manifest, conversion::V1ALPHA1)?)?;
        alpha.create(&PostParams::default(), &object).await?;
    }

    // This Ratchet's CRDs, with the conversion pointed at a local webhook.
    let webhook =
        ratchet_operator::install::install_crds_with_local_conversion::<Services>(&client, TIMEOUT)
            .await?;

    // What is really stored: every object still as v1alpha1.
    let row = cinder_row(kubeconfig, &etcd_url, files)?;
    ensure!(row["storage"] == "v1beta1", "{row}");
    ensure!(
        row["stored_versions"] == json!(["v1alpha1", "v1beta1"]),
        "{row}"
    );
    ensure!(
        row["in_etcd"] == json!({ "cinder.openstack.c5c3.io/v1alpha1": OBJECTS }),
        "{row}"
    );
    ensure!(
        row["verdict"]
            .as_str()
            .is_some_and(|v| v.contains("ratchet storage migrate")),
        "{row}"
    );
    // etcd refuses a client without a certificate it trusts.
    let plain = common::ratchet(kubeconfig, &["storage", "report", "--etcd-url", &etcd_url]);
    ensure!(
        !plain.status.success()
            && common::text(&plain).contains("etcd request failed")
            && !common::text(&plain).contains("panicked"),
        "{}",
        common::text(&plain)
    );

    // The next Ratchet drops v1alpha1: not safe yet.
    let next = cluster.dir().join("next-crds");
    std::fs::create_dir_all(&next)?;
    std::fs::write(
        next.join("cinders.yaml"),
        ratchet_api::crd_yaml(&v1beta1::Cinder::crd())?,
    )?;
    let next = next.to_str().context("path")?;
    let refused = common::ratchet(kubeconfig, &["storage", "preflight", "--crds", next]);
    ensure!(!refused.status.success(), "{}", common::text(&refused));
    ensure!(
        common::text(&refused).contains("v1alpha1")
            && common::text(&refused).contains("ratchet storage migrate"),
        "{}",
        common::text(&refused)
    );

    let migrated = common::ratchet(kubeconfig, &["storage", "migrate"]);
    ensure!(migrated.status.success(), "{}", common::text(&migrated));
    ensure!(
        common::text(&migrated)
            .contains("storedVersions pruned from [v1alpha1, v1beta1] to [v1beta1]"),
        "{}",
        common::text(&migrated)
    );

    let row = cinder_row(kubeconfig, &etcd_url, files)?;
    ensure!(row["stored_versions"] == json!(["v1beta1"]), "{row}");
    ensure!(
        row["in_etcd"] == json!({ "cinder.openstack.c5c3.io/v1beta1": OBJECTS }),
        "{row}"
    );
    ensure!(row["verdict"] == "clean", "{row}");
    let safe = common::ratchet(kubeconfig, &["storage", "preflight", "--crds", next]);
    ensure!(safe.status.success(), "{}", common::text(&safe));
    drop(webhook);
    Ok(())
}
