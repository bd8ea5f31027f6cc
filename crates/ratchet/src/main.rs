//! The `ratchet` command: its arguments and subcommands (the library does the work).

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use ratchet::{crds, demo, local, manage, manifests, operator, storage, timeline};
use ratchet_services::{Registry, Services};

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
    /// Every resource of every registered service (listed at run time, by
    /// `registry_help`): release, target, phase, the workload rolling, conditions.
    Status(manage::StatusArgs),
    /// What upgrading a resource to a release would do (changes nothing).
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

/// The help texts that name the services, from the registry: clap's derived
/// texts are fixed when compiled, and a list written there goes stale.
fn registry_help(command: clap::Command) -> clap::Command {
    let services = Services::services();
    let kinds: Vec<&str> = services.iter().map(|s| s.kind.as_str()).collect();
    let targets: Vec<String> = services
        .iter()
        .map(|s| format!("{}/NAME", s.service))
        .collect();
    // `manage::target`: a bare NAME is the first registered service's.
    let bare = kinds.first().copied().unwrap_or_default();
    let target = format!(
        "The resource: KIND/NAME ({}), or NAME alone for a {bare}",
        targets.join(", ")
    );
    let name = |command: clap::Command| command.mut_arg("name", |arg| arg.help(target.clone()));
    command
        .mut_subcommand("status", |c| {
            c.about(format!(
                "Every {}: release, target, phase, the workload rolling, conditions",
                spoken(&kinds, "and")
            ))
        })
        .mut_subcommand("plan", |c| {
            name(c).about(format!(
                "What upgrading a {} to a release would do (changes nothing)",
                spoken(&kinds, "or")
            ))
        })
        .mut_subcommand("abort", name)
        .mut_subcommand("timeline", name)
}

/// `a, b and c` (or `a, b or c`).
fn spoken(words: &[&str], conjunction: &str) -> String {
    match words.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} {conjunction} {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let matches = registry_help(Cli::command()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
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
    let done = match cli.command {
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
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One line, each cause after a colon: what failed and why, not
            // anyhow's report with its stack trace (RUST_BACKTRACE).
            eprintln!("ratchet: {error:#}");
            ExitCode::FAILURE
        }
    }
}
