//! A real upgrade under load (process kubelet, root): the demo's `--real`
//! run, repeated. Per run and summed up: the client's requests and failures,
//! its latencies in steady state and during the upgrade, what it lost, and
//! the upgrade's wall time beside what its Jobs and rolls took themselves
//! (the rest is Ratchet's: noticing, deciding, applying).

use clap::Args;
use ratchet::demo::{self, DemoArgs};

#[derive(Args)]
pub struct RealArgs {
    /// The service to upgrade (every registered one with a real example).
    #[arg(long, default_value = "cinder")]
    service: String,
    #[arg(long, default_value_t = 1)]
    runs: usize,
}

pub async fn run(args: RealArgs) -> anyhow::Result<()> {
    let mut lines = Vec::new();
    for run in 1..=args.runs {
        println!(
            "== run {run} of {}: {} 2026.1 → 2026.2, real",
            args.runs, args.service
        );
        let figures = demo::run(DemoArgs::real(&args.service))
            .await?
            .ok_or_else(|| anyhow::anyhow!("the run made no figures (no upgrade)"))?;
        lines.push(format!("run {run}: {}", figures.line()));
    }
    println!("== {} real upgrade(s) of {}:", args.runs, args.service);
    for line in lines {
        println!("{line}");
    }
    Ok(())
}
