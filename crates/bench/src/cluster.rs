//! Start-up of the local control plane and the speed of a real rollout on it.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use ratchet_testenv::binaries::build_script;
use ratchet_testenv::wait::until;
use ratchet_testenv::{KubeletOptions, LocalCluster, SimKubelet};
use serde_json::json;

use crate::stats::summary;

#[derive(Args)]
pub struct ClusterArgs {
    /// Warm starts to measure.
    #[arg(long, default_value_t = 5)]
    starts: usize,
    /// Rollouts of a 3-replica Deployment to measure.
    #[arg(long, default_value_t = 10)]
    rollouts: usize,
    /// Also build the binaries from scratch (empty Go build cache and binary
    /// cache in temporary directories): several minutes on 2 cores.
    #[arg(long)]
    cold: bool,
}

pub async fn run(args: ClusterArgs) -> anyhow::Result<()> {
    if args.cold {
        cold_build()?;
    }
    let mut totals = Vec::new();
    let mut last = None;
    for _ in 0..args.starts {
        let cluster = LocalCluster::start().await?;
        let t = cluster.timings();
        println!(
            "warm start: total {:.2}s (binaries {:.3}s, etcd {:.2}s, kube-apiserver {:.2}s, kube-controller-manager {:.2}s)",
            t.total.as_secs_f64(),
            t.binaries.as_secs_f64(),
            t.etcd.as_secs_f64(),
            t.apiserver.as_secs_f64(),
            t.controller_manager.as_secs_f64()
        );
        totals.push(t.total);
        last = Some(cluster);
    }
    println!("warm start summary: {}", summary(&totals));

    let cluster = match last {
        Some(c) => c,
        None => LocalCluster::start().await?,
    };
    let client = cluster.client()?;
    let _kubelet = SimKubelet::start(client.clone(), KubeletOptions::default()).await?;
    let api: Api<Deployment> = Api::namespaced(client, "default");
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": { "name": "bench" },
        "spec": {
            "replicas": 3,
            "selector": { "matchLabels": { "app": "bench" } },
            "strategy": { "rollingUpdate": { "maxSurge": 1, "maxUnavailable": 0 } },
            "template": {
                "metadata": { "labels": { "app": "bench" } },
                "spec": { "containers": [{ "name": "main", "image": "bench:0" }] }
            }
        }
    }))?;
    api.create(&PostParams::default(), &deployment).await?;
    wait_rolled_out(&api).await?;
    let mut rollouts = Vec::new();
    for i in 1..=args.rollouts {
        let started = Instant::now();
        let patch = json!({ "spec": { "template": { "spec": { "containers": [{ "name": "main", "image": format!("bench:{i}") }] } } } });
        api.patch("bench", &PatchParams::default(), &Patch::Strategic(&patch))
            .await?;
        wait_rolled_out(&api).await?;
        rollouts.push(started.elapsed());
    }
    println!(
        "3-replica rollout (maxSurge 1, maxUnavailable 0, instant pods): {}",
        summary(&rollouts)
    );
    Ok(())
}

async fn wait_rolled_out(api: &Api<Deployment>) -> anyhow::Result<()> {
    until(api, "bench", Duration::from_secs(120), "rollout", |d| {
        let generation = d.metadata.generation;
        d.status.as_ref().is_some_and(|s| {
            s.observed_generation == generation
                && s.updated_replicas == Some(3)
                && s.available_replicas == Some(3)
                && s.replicas == Some(3)
        })
    })
    .await?;
    Ok(())
}

fn cold_build() -> anyhow::Result<()> {
    let cache = tempfile::tempdir()?;
    let gocache = tempfile::tempdir()?;
    let started = Instant::now();
    let status = Command::new("bash")
        .arg(build_script())
        .env("RATCHET_CACHE_DIR", cache.path())
        .env("GOCACHE", gocache.path())
        .status()
        .context("running the build script")?;
    if !status.success() {
        bail!("cold build failed: {status}");
    }
    println!(
        "cold build (empty Go build cache, modules already downloaded): {:.0}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
