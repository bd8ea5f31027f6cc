//! `ratchet timeline [KIND/]NAME`: a resource's last upgrade, read from its
//! status, events and owned objects in any cluster (`collect`), turned into a
//! timeline (`build`, pure) and shown as a table (`text`) or an SVG Gantt
//! chart (`svg`). The demo prints the same timeline.

mod build;
mod collect;
mod record;
mod svg;
mod text;

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use kube::Client;
use ratchet_operator::registry::{Registered, ServiceFn};
use ratchet_operator::service::OpenStackService;
use ratchet_phase_machine::Profile;

pub use build::Timeline;
pub(crate) use collect::job_verdict;
use ratchet_services::{Registry, Services};
pub(crate) use record::JobVerdict;
use record::Record;

#[derive(Args)]
pub struct TimelineArgs {
    /// The resource: NAME (a Cinder) or KIND/NAME (its help names the services).
    name: String,
    #[arg(short, long)]
    namespace: Option<String>,
    /// Also draw the timeline as an SVG Gantt chart into FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

pub async fn run(args: TimelineArgs) -> anyhow::Result<()> {
    let (service, name) = crate::manage::target(&args.name)?;
    let client = Client::try_default()
        .await
        .context("connecting to Kubernetes")?;
    let namespace = args
        .namespace
        .unwrap_or_else(|| client.default_namespace().to_string());
    let timeline = read(&client, service, &namespace, name).await?;
    print!("{}", text::render(&timeline));
    if let Some(path) = args.svg {
        std::fs::write(&path, svg::render(&timeline))
            .with_context(|| format!("writing {}", path.display()))?;
        println!("\nSVG written to {}", path.display());
    }
    Ok(())
}

/// The last upgrade of `service` `namespace/name` as a table, for the demo.
pub async fn table(
    client: &Client,
    service: &str,
    namespace: &str,
    name: &str,
) -> anyhow::Result<String> {
    Ok(text::render(&read(client, service, namespace, name).await?))
}

/// The last upgrade of `service` `namespace/name`, as built from the cluster.
pub async fn read(
    client: &Client,
    service: &str,
    namespace: &str,
    name: &str,
) -> anyhow::Result<Timeline> {
    struct Describe;
    impl ServiceFn for Describe {
        type Output = (Registered, Profile);
        fn call<S: OpenStackService>(self) -> Self::Output {
            (Registered::of::<S>(), S::profile())
        }
    }
    let (registered, profile) =
        Services::with_service(service, Describe).context("no such service")?;
    let record = collect::collect(client, &registered, namespace, name).await?;
    build::build(&profile, &record).with_context(|| no_upgrade(&record))
}

/// Why there is nothing to show.
fn no_upgrade(record: &Record) -> String {
    let running = match record.upgrade_phase.as_str() {
        "" => String::new(),
        phase => format!(" (status.upgradePhase is {phase}: its UpgradeInitiated has expired)"),
    };
    format!(
        "no upgrade recorded for {}: no UpgradeInitiated event{running}. Kubernetes keeps \
         events for an hour by default (kube-apiserver --event-ttl)",
        record.subject
    )
}
