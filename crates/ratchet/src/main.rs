//! The `ratchet` command: its arguments and subcommands (the library does the work).

use clap::{Parser, Subcommand};
use ratchet::{crds, demo, local, manage, manifests, operator, storage, timeline};

#[derive(Parser)]
#[command(
    name = "ratchet",
    version,
    about = "Zero-downtime OpenStack release upgrades on Kubernetes"
)]
struct Cli {
    /// Log format: `text` for people, `json` for log pipelines (one object per
    /// line, with the resource being reconciled in its span fields).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "text",
        env = "RATCHET_LOG_FORMAT"
    )]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Install and upgrade a service on Ratchet's own local control plane
    /// (etcd, kube-apiserver, kube-controller-manager, simulated kubelet),
    /// with live progress, a timeline and a verdict.
    Demo(demo::DemoArgs),
    /// Ratchet's own local control plane, without the demo: `local up` serves
    /// it (with the CRDs and the operator) until Ctrl-C.
    Local(local::LocalArgs),
    /// Every Cinder and Ironic: release, target, phase, the workload rolling, conditions.
    Status(manage::StatusArgs),
    /// What upgrading a Cinder to a release would do (changes nothing).
    Plan(manage::PlanArgs),
    /// Abort a running upgrade with the right patch (release and image together).
    Abort(manage::AbortArgs),
    /// A resource's last upgrade: phases, rolls, Jobs, warnings (text, or SVG with --svg).
    Timeline(timeline::TimelineArgs),
    /// Run the operator against the current cluster.
    Operator(operator::OperatorArgs),
    /// Everything to install Ratchet without Helm (apply with --server-side).
    Manifests(manifests::ManifestsArgs),
    /// Print Ratchet's CRDs as YAML (or write them, one file each, into a directory).
    Crds(crds::CrdsArgs),
    /// How Kubernetes stores Ratchet's resources: report, migrate, pre-flight.
    Storage(storage::StorageArgs),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // The demo prints its own story; the operator's logs would drown it.
    let default_filter = match cli.command {
        Command::Demo(_) | Command::Local(_) => {
            "warn,ratchet_operator=error,ratchet_testenv=error,kube_runtime=error,kube_client::client::builder=off"
        }
        _ => "info,kube_client::client::builder=off",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| default_filter.into());
    match cli.log_format {
        LogFormat::Text => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_target(false)
            .init(),
        LogFormat::Json => tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
    match cli.command {
        Command::Demo(args) => demo::run(args).await.map(|_| ()),
        Command::Local(args) => local::run(args).await,
        Command::Crds(args) => crds::run(args).await,
        Command::Manifests(args) => manifests::run(args),
        Command::Operator(args) => operator::run(args).await,
        Command::Status(args) => manage::status(args).await,
        Command::Plan(args) => manage::plan_cmd(args).await,
        Command::Abort(args) => manage::abort(args).await,
        Command::Timeline(args) => timeline::run(args).await,
        Command::Storage(args) => storage::run(args).await,
    }
}
