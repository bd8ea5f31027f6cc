//! Time from creating a Cinder to Ready, with instant simulated pods, and the
//! API requests the operator made for it.

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::PostParams;
use ratchet_api::cinder::v1alpha1::Cinder;
use ratchet_operator::OperatorConfig;
use ratchet_testenv::wait::until;
use ratchet_testenv::{KubeletOptions, LocalCluster, SimKubelet};

use crate::counting::counting_client;
use crate::stats::summary;

#[derive(Args)]
pub struct InstallArgs {
    /// Installs to measure (each in its own namespace).
    #[arg(long, default_value_t = 10)]
    runs: usize,
    /// Volume back ends per Cinder.
    #[arg(long, default_value_t = 1)]
    backends: usize,
}

pub async fn run(args: InstallArgs) -> anyhow::Result<()> {
    let cluster = LocalCluster::start().await?;
    let admin = cluster.client()?;
    let _kubelet = SimKubelet::start(admin.clone(), KubeletOptions::default()).await?;
    ratchet_operator::install::install_crds(&admin, Duration::from_secs(60)).await?;
    let (operator_client, counter) = counting_client(cluster.config().clone())?;
    let operator = ratchet_operator::start(operator_client, OperatorConfig::default()).await?;

    let backends: Vec<String> = (1..=args.backends).map(|i| format!("b{i}")).collect();
    let backends: Vec<&str> = backends.iter().map(String::as_str).collect();
    let mut times = Vec::new();
    let mut requests = Vec::new();
    for run in 0..args.runs {
        let ns = format!("bench-{run}");
        let namespace: Namespace =
            serde_json::from_value(serde_json::json!({ "metadata": { "name": ns } }))?;
        Api::<Namespace>::all(admin.clone())
            .create(&PostParams::default(), &namespace)
            .await?;
        ratchet_operator::install::ensure_example_secrets(&admin, &ns).await?;
        let cinder: Cinder = serde_json::from_value(ratchet_api::cinder::example_manifest(
            "cinder",
            "2026.1",
            "registry.invalid/openstack/cinder",
            "2026.1",
            &backends,
        ))?;
        let api: Api<Cinder> = Api::namespaced(admin.clone(), &ns);
        // Let the operator's watches settle on the new namespace's objects first.
        counter.take();
        let started = Instant::now();
        api.create(&PostParams::default(), &cinder).await?;
        until(
            &api,
            "cinder",
            Duration::from_secs(120),
            "Ready",
            |c: &Cinder| {
                c.status.as_ref().is_some_and(|s| {
                    s.observed_generation == c.metadata.generation
                        && s.conditions
                            .iter()
                            .any(|x| x.type_ == "Ready" && x.status == "True")
                })
            },
        )
        .await
        .context("waiting for Ready")?;
        times.push(started.elapsed());
        requests.push(counter.take());
    }
    operator.stop().await;
    println!(
        "apply → Ready ({} back end(s), instant pods): {}",
        args.backends,
        summary(&times)
    );
    let mean = requests.iter().sum::<u64>() as f64 / requests.len().max(1) as f64;
    println!(
        "operator API requests per install: mean {mean:.1}, min {}, max {}",
        requests.iter().min().copied().unwrap_or_default(),
        requests.iter().max().copied().unwrap_or_default()
    );
    Ok(())
}
