//! The stored-version migration at scale: objects created while v1alpha1 is
//! the storage version, storage flipped to v1beta1 (conversion by the
//! operator's webhook server), then `ratchet storage migrate` run as its own
//! process — wall time, objects per second, its peak RSS — and etcd checked.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Args;
use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::PostParams;
use ratchet_services::cinder::{self, v1alpha1};
use ratchet_testenv::LocalCluster;

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
}

const CRD: &str = "cinders.cinder.openstack.c5c3.io";

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
    let binary = ratchet_binary()?;
    let cluster = LocalCluster::start().await?;
    let client = cluster.client()?;
    ratchet_services::testing::install_crds_before_v1beta1(&client, Duration::from_secs(60))
        .await?;
    let ns = "bench-storage";
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({ "metadata": { "name": ns } }))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await?;

    let api: Api<v1alpha1::Cinder> = Api::namespaced(client.clone(), ns);
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
        "created {} Cinders as v1alpha1 in {:.1} s",
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
    let mut child = std::process::Command::new(binary)
        .args([
            "storage",
            "migrate",
            "--crd",
            CRD,
            "--page-size",
            &args.page_size.to_string(),
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
    let took = started.elapsed();
    let mut output = String::new();
    if let Some(mut out) = child.stdout.take() {
        use std::io::Read;
        out.read_to_string(&mut output)?;
    }
    if !status.success() {
        bail!("ratchet storage migrate failed: {output}");
    }
    print!("{output}");
    let stored = cluster
        .etcd()
        .list_prefix(&format!("/registry/cinder.openstack.c5c3.io/cinders/{ns}/"))
        .await?;
    let as_v1beta1 = stored
        .iter()
        .filter(|o| o.json_api_version().as_deref() == Some("cinder.openstack.c5c3.io/v1beta1"))
        .count();
    println!(
        "migrated {} objects (page size {}) in {:.2} s: {:.0} objects/s; peak RSS of the migrating process {:.1} MiB; etcd: {as_v1beta1}/{} stored as v1beta1",
        args.objects,
        args.page_size,
        took.as_secs_f64(),
        args.objects as f64 / took.as_secs_f64(),
        peak,
        stored.len()
    );
    drop(webhook);
    Ok(())
}
