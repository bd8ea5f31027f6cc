//! `ratchet demo`: the embedded local control plane, built and started on this
//! machine with nothing but Go and Rust.

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use ratchet_testenv::{ClusterOptions, KubeletOptions, LocalCluster, SimKubelet};

#[derive(Args)]
pub struct DemoArgs {
    /// Keep the cluster's directory (certificates, logs, etcd data) after exit.
    #[arg(long)]
    keep_dir: bool,
    /// Delay before a simulated pod becomes Ready, in milliseconds.
    #[arg(long, default_value_t = 500)]
    ready_delay_ms: u64,
    /// Exit once the cluster is up instead of serving until Ctrl-C.
    #[arg(long)]
    exit_when_ready: bool,
}

pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    println!(
        "Starting Ratchet's local control plane (first run builds Kubernetes from Go modules)..."
    );
    let cluster = LocalCluster::start_with(ClusterOptions {
        keep_dir: args.keep_dir,
        start_timeout: Duration::from_secs(120),
        ..ClusterOptions::default()
    })
    .await
    .context("starting the local control plane")?;
    let kubelet = SimKubelet::start(
        cluster.client()?,
        KubeletOptions {
            ready_delay: Duration::from_millis(args.ready_delay_ms),
            ..KubeletOptions::default()
        },
    )
    .await
    .context("starting the simulated kubelet")?;

    let t = cluster.timings();
    println!(
        "Local cluster ready in {:.1}s (etcd {:.1}s, kube-apiserver {:.1}s, kube-controller-manager {:.1}s).",
        t.total.as_secs_f64(),
        t.etcd.as_secs_f64(),
        t.apiserver.as_secs_f64(),
        t.controller_manager.as_secs_f64()
    );
    println!("  API server:  {}", cluster.apiserver_url());
    println!("  kubeconfig:  {}", cluster.kubeconfig_path().display());
    println!(
        "  try:         {} --kubeconfig {} get nodes",
        cluster.binaries().kubectl().display(),
        cluster.kubeconfig_path().display()
    );
    for (component, log) in cluster.logs() {
        println!("  {component} log: {}", log.display());
    }
    if args.exit_when_ready {
        drop(kubelet);
        return Ok(());
    }
    println!("Serving until Ctrl-C.");
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    println!("Stopping.");
    drop(kubelet);
    drop(cluster);
    Ok(())
}
