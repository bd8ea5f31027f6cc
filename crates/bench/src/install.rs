//! Time from creating a Cinder to Ready, with instant simulated pods, and the
//! API requests the operator made for it.

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use kube::api::PostParams;
use ratchet_testenv::wait::until;

use crate::setup::{Bench, mean_reconcile_seconds, settled_at};
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
    let bench = Bench::start().await?;
    let backends: Vec<String> = (1..=args.backends).map(|i| format!("b{i}")).collect();
    let backends: Vec<&str> = backends.iter().map(String::as_str).collect();
    let mut times = Vec::new();
    let mut requests = Vec::new();
    for run in 0..args.runs {
        let (api, cinder) = bench
            .namespace(&format!("bench-{run}"), "2026.1", &backends)
            .await?;
        bench.counter.take();
        let started = Instant::now();
        api.create(&PostParams::default(), &cinder).await?;
        until(
            &api,
            "cinder",
            Duration::from_secs(120),
            "Ready",
            settled_at("2026.1"),
        )
        .await
        .context("waiting for Ready")?;
        times.push(started.elapsed());
        requests.push(bench.counter.take());
    }
    if let Some(mean) = mean_reconcile_seconds(&bench.operator) {
        println!("operator reconcile pass: mean {:.1} ms", mean * 1000.0);
    }
    bench.operator.stop().await;
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
