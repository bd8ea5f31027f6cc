//! The stored-version migration at scale: objects created while v1alpha1 is
//! the storage version, storage flipped to v1beta1 (conversion by the
//! operator's webhook server), then `ratchet storage migrate` run as its own
//! process — wall time, objects per second, its peak RSS — and etcd and the
//! CRD's `status.storedVersions` checked. With `--in-tree`, the same first on
//! a cluster of its own with Kubernetes' own migrator (the
//! `StorageVersionMigrator` feature gate, `storagemigration.k8s.io/v1beta1`
//! and the controller-manager's controller): one run, both migrators, the
//! same objects and flags.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Args;
use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::storagemigration::v1beta1::StorageVersionMigration;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::PostParams;
use kube::{Api, Client};
use ratchet_services::cinder::{self, v1alpha1};
use ratchet_testenv::wait::until;
use ratchet_testenv::{ClusterOptions, LocalCluster};

use crate::operator::ratchet_binary;
use ratchet_services::Services;

#[derive(Args)]
pub struct StorageArgs {
    /// Objects to create and migrate.
    #[arg(long, default_value_t = 10_000)]
    objects: usize,
    /// Objects per list page.
    #[arg(long, default_value_t = 500)]
    page_size: u32,
    /// Also migrate with Kubernetes' in-tree StorageVersionMigration
    /// controller, first, on a cluster of its own.
    #[arg(long)]
    in_tree: bool,
}

/// Who rewrites the stored objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Migrator {
    Ratchet,
    InTree,
}

/// What each cluster runs when the in-tree migrator is compared: the same
/// flags for both runs, so only the migrator differs.
fn options(in_tree: bool) -> ClusterOptions {
    if !in_tree {
        return ClusterOptions::default();
    }
    let gate = "--feature-gates=StorageVersionMigrator=true".to_string();
    ClusterOptions {
        apiserver_args: vec![
            gate.clone(),
            "--runtime-config=storagemigration.k8s.io/v1beta1=true".into(),
        ],
        controller_manager_args: vec![
            gate,
            "--controllers=storage-version-migrator-controller".into(),
        ],
        ..ClusterOptions::default()
    }
}

const CRD: &str = "cinders.cinder.openstack.c5c3.io";
const NAMESPACE: &str = "bench-storage";

/// Peak resident set size (VmHWM) of a live process, in MiB.
fn peak_rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

pub async fn run(args: StorageArgs) -> anyhow::Result<()> {
    let mut lines = Vec::new();
    if args.in_tree {
        lines.push(migrate_once(&args, Migrator::InTree).await?);
    }
    lines.push(migrate_once(&args, Migrator::Ratchet).await?);
    println!("== {} objects, page size {}:", args.objects, args.page_size);
    for line in lines {
        println!("{line}");
    }
    Ok(())
}

/// One cluster: create, flip the storage version, migrate; the figures line.
async fn migrate_once(args: &StorageArgs, migrator: Migrator) -> anyhow::Result<String> {
    let cluster = LocalCluster::start_with(options(args.in_tree)).await?;
    let client = cluster.client()?;
    ratchet_services::testing::install_crds_before_v1beta1(&client, Duration::from_secs(60))
        .await?;
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({ "metadata": { "name": NAMESPACE } }))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await?;

    let api: Api<v1alpha1::Cinder> = Api::namespaced(client.clone(), NAMESPACE);
    let started = Instant::now();
    let created: Vec<anyhow::Result<()>> = stream::iter(0..args.objects)
        .map(|i| {
            let api = api.clone();
            async move {
                let object = cinder::example_v1alpha1(&format!("c{i:05}"))?;
                api.create(&PostParams::default(), &object).await?;
                Ok(())
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    created.into_iter().collect::<anyhow::Result<Vec<()>>>()?;
    println!(
        "{migrator:?}: created {} Cinders as v1alpha1 in {:.1} s",
        args.objects,
        started.elapsed().as_secs_f64()
    );

    // Upgrading Ratchet: its CRDs, with the conversion pointed at the webhook.
    let webhook = ratchet_operator::install::install_crds_with_local_conversion::<Services>(
        &client,
        Duration::from_secs(60),
    )
    .await?;

    let started = Instant::now();
    let peak = match migrator {
        Migrator::Ratchet => Some(ratchet_migrate(&cluster, args.page_size).await?),
        Migrator::InTree => {
            in_tree_migrate(&client).await?;
            None
        }
    };
    let took = started.elapsed();
    let stored = cluster
        .etcd()
        .list_prefix(&format!(
            "/registry/cinder.openstack.c5c3.io/cinders/{NAMESPACE}/"
        ))
        .await?;
    let as_v1beta1 = stored
        .iter()
        .filter(|o| o.json_api_version().as_deref() == Some("cinder.openstack.c5c3.io/v1beta1"))
        .count();
    let stored_versions = Api::<CustomResourceDefinition>::all(client.clone())
        .get(CRD)
        .await?
        .status
        .and_then(|s| s.stored_versions)
        .unwrap_or_default();
    drop(webhook);
    Ok(format!(
        "{migrator:?}: migrated in {:.2} s: {:.0} objects/s; peak RSS of the migrating process {}; etcd: {as_v1beta1}/{} stored as v1beta1; status.storedVersions afterwards {stored_versions:?}",
        took.as_secs_f64(),
        args.objects as f64 / took.as_secs_f64(),
        peak.map_or(
            "n/a (inside kube-controller-manager)".to_string(),
            |p| format!("{p:.1} MiB")
        ),
        stored.len()
    ))
}

/// `ratchet storage migrate` as its own process: its peak RSS.
async fn ratchet_migrate(cluster: &LocalCluster, page_size: u32) -> anyhow::Result<f64> {
    let mut child = std::process::Command::new(ratchet_binary()?)
        .args([
            "storage",
            "migrate",
            "--crd",
            CRD,
            "--page-size",
            &page_size.to_string(),
        ])
        .env("KUBECONFIG", cluster.kubeconfig_path())
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let pid = child.id();
    let mut peak = 0.0f64;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        peak = peak.max(peak_rss_mib(pid).unwrap_or(0.0));
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut output = String::new();
    if let Some(mut out) = child.stdout.take() {
        use std::io::Read;
        out.read_to_string(&mut output)?;
    }
    if !status.success() {
        bail!("ratchet storage migrate failed: {output}");
    }
    print!("{output}");
    Ok(peak)
}

/// A `StorageVersionMigration` of the Cinders, waited on until it succeeds
/// (or fails, which ends the benchmark).
async fn in_tree_migrate(client: &Client) -> anyhow::Result<()> {
    let api: Api<StorageVersionMigration> = Api::all(client.clone());
    let migration: StorageVersionMigration = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "cinders" },
        "spec": { "resource": { "group": "cinder.openstack.c5c3.io", "resource": "cinders" } },
    }))?;
    api.create(&PostParams::default(), &migration).await?;
    let ended = until(
        &api,
        "cinders",
        Duration::from_secs(3600),
        "migration ended",
        |m| {
            conditions(m)
                .any(|(kind, status)| (kind == "Succeeded" || kind == "Failed") && status == "True")
        },
    )
    .await?;
    if conditions(&ended).any(|(kind, status)| kind == "Failed" && status == "True") {
        bail!("the in-tree migration failed: {:?}", ended.status);
    }
    Ok(())
}

fn conditions(m: &StorageVersionMigration) -> impl Iterator<Item = (&str, &str)> {
    m.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .map(|c| (c.type_.as_str(), c.status.as_str()))
}
