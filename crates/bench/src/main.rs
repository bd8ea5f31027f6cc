//! `ratchet-bench`: measures and prints; never asserts. Figures go into
//! docs/benchmarks.md together with the command that produced them.

mod chaos;
mod cluster;
mod counting;
mod heap;
mod install;
mod operator;
mod pods;
mod real;
mod setup;
mod stats;
mod storage;
mod upgrade;

use clap::{Parser, Subcommand};

/// Counts live heap bytes, for what the operator's caches cost (`heap`).
#[global_allocator]
static ALLOCATOR: heap::Counting = heap::Counting;

#[derive(Parser)]
#[command(name = "ratchet-bench", about = "Ratchet benchmarks (print figures)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Local control plane: start-up time (warm, optionally cold) and a 3-replica rollout.
    Cluster(cluster::ClusterArgs),
    /// Cinder install: apply → Ready time and the operator's API requests.
    Install(install::InstallArgs),
    /// Cinder upgrade: wall time, operator reaction times, API requests.
    Upgrade(upgrade::UpgradeArgs),
    /// The operator process: RSS at idle and under load, standby takeover time.
    Operator(operator::OperatorArgs),
    /// Stored-version migration of many objects: throughput and peak memory.
    Storage(storage::StorageArgs),
    /// Upgrades while the operator is SIGKILLed and the API server restarts:
    /// what went wrong (counts) and how fast upgrades resume.
    Chaos(chaos::ChaosArgs),
    /// Real pods (process kubelet, root): start latency and an image build, cold and cached.
    Pods(pods::PodsArgs),
    /// A real upgrade under a client's load (process kubelet, root): failed
    /// requests, latencies before and during, what was lost, Ratchet's overhead.
    Real(real::RealArgs),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,kube_client::client::builder=off".into()),
        )
        .init();
    match Cli::parse().command {
        Command::Cluster(args) => cluster::run(args).await,
        Command::Install(args) => install::run(args).await,
        Command::Upgrade(args) => upgrade::run(args).await,
        Command::Operator(args) => operator::run(args).await,
        Command::Storage(args) => storage::run(args).await,
        Command::Chaos(args) => chaos::run(args).await,
        Command::Pods(args) => pods::run(args).await,
        Command::Real(args) => real::run(args).await,
    }
}
