//! `ratchet demo`: Ratchet on its own local control plane, built and started on
//! this machine with nothing but Go and Rust. It installs a Cinder, upgrades it
//! one release forward with live progress (optionally with an injected failure,
//! which it then aborts), and ends with a timeline and a verdict.

mod timeline;

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use ratchet_api::cinder::v1beta1::Cinder;
use ratchet_operator::OperatorConfig;
use ratchet_operator::webhooks::{Endpoint, Registration, TlsSource, WebhookConfig};
use ratchet_release::Release;
use ratchet_testenv::{
    Behaviour, ClusterOptions, KubeletOptions, LocalCluster, PodSelector, Scenarios, SimKubelet,
};

mod upgrade;

const NAMESPACE: &str = "demo";

/// A failure to inject into the upgrade.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Inject {
    /// The expand Job fails every attempt.
    FailExpand,
    /// The migrate Job (the upgrade check wrapper) fails with an unexpected code.
    FailMigrate,
    /// The contract Job fails every attempt.
    FailContract,
    /// New backup pods never become ready: the roll stalls.
    StuckRollout,
}

#[derive(Args)]
pub struct DemoArgs {
    /// OpenStack release to install.
    #[arg(long, default_value = "2026.1")]
    release: String,
    /// Release to upgrade to (default: the next one). `none` skips the upgrade.
    #[arg(long)]
    to: Option<String>,
    /// Inject a failure into the upgrade; the demo then aborts it.
    #[arg(long, value_enum)]
    inject: Option<Inject>,
    /// Number of volume back ends.
    #[arg(long, default_value_t = 1)]
    backends: usize,
    /// Delay before a simulated pod becomes Ready, in milliseconds.
    #[arg(long, default_value_t = 300)]
    ready_delay_ms: u64,
    /// Keep the cluster's directory (certificates, logs, etcd data) after exit.
    #[arg(long)]
    keep_dir: bool,
    /// Exit at the end instead of serving until Ctrl-C.
    #[arg(long, alias = "exit-when-ready")]
    exit_when_done: bool,
}

pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    println!(
        "Starting Ratchet's local control plane (the first run builds Kubernetes from Go modules)..."
    );
    let cluster = LocalCluster::start_with(ClusterOptions {
        keep_dir: args.keep_dir,
        start_timeout: Duration::from_secs(120),
        ..ClusterOptions::default()
    })
    .await
    .context("starting the local control plane")?;
    let client = cluster.client()?;
    let kubelet = SimKubelet::start(
        client.clone(),
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

    ratchet_operator::install::install_crds(&client, Duration::from_secs(60)).await?;
    let operator = ratchet_operator::start(
        client.clone(),
        OperatorConfig {
            webhook: Some(WebhookConfig {
                bind: "127.0.0.1:0".parse()?,
                tls: TlsSource::SelfManaged {
                    dns_names: vec!["localhost".into()],
                    ips: vec![std::net::Ipv4Addr::LOCALHOST.into()],
                },
                registration: Some(Registration {
                    name: "ratchet".into(),
                    endpoint: Endpoint::Url("https://127.0.0.1:0".into()),
                    namespace_selector: None,
                    conversion: true,
                    admission: true,
                }),
            }),
            instance: "ratchet-demo".into(),
            ..OperatorConfig::default()
        },
    )
    .await
    .context("starting the operator")?;
    println!(
        "Operator running (admission webhook on {}).",
        operator
            .webhook_addr()
            .map(|a| a.to_string())
            .unwrap_or_default()
    );

    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({ "metadata": { "name": NAMESPACE } }))?;
    namespaces
        .patch(
            NAMESPACE,
            &PatchParams::apply("ratchet-demo"),
            &Patch::Apply(&ns),
        )
        .await?;
    ratchet_operator::install::ensure_example_secrets(&client, NAMESPACE).await?;
    let backends: Vec<String> = (1..=args.backends).map(|i| format!("backend{i}")).collect();
    let backend_refs: Vec<&str> = backends.iter().map(String::as_str).collect();
    let manifest = ratchet_api::cinder::example_manifest(
        "cinder",
        &args.release,
        "registry.invalid/openstack/cinder",
        &args.release,
        &backend_refs,
    );
    let mut manifest = manifest;
    if args.inject == Some(Inject::StuckRollout) {
        // A short progress deadline so the stall is reported within the demo.
        manifest["spec"]["rolloutDeadlineSeconds"] = serde_json::json!(10);
    }
    let cinder: Cinder = serde_json::from_value(manifest)?;
    let cinders: Api<Cinder> = Api::namespaced(client.clone(), NAMESPACE);
    let started = Instant::now();
    cinders
        .create(&PostParams::default(), &cinder)
        .await
        .context("creating the demo Cinder")?;
    println!(
        "Created Cinder {NAMESPACE}/cinder at {} with {} back end(s).",
        args.release, args.backends
    );

    follow_until_ready(&cinders, "cinder", started).await?;

    let from: Release = args.release.parse()?;
    let to = match args.to.as_deref() {
        Some("none") => None,
        Some(text) => Some(text.parse::<Release>()?),
        None => from.next(),
    };
    let verdict = match to {
        Some(to) => {
            let scenarios = kubelet.scenarios();
            inject_failure(scenarios, args.inject, &to);
            upgrade::run(&client, &cinders, from, to).await?
        }
        None => format!("VERDICT: installed {from}; no upgrade requested."),
    };
    println!("{verdict}");
    println!("  kubeconfig:  {}", cluster.kubeconfig_path().display());
    println!(
        "  try:         {} --kubeconfig {} -n {NAMESPACE} get cinders,deployments,jobs",
        cluster.binaries().kubectl().display(),
        cluster.kubeconfig_path().display()
    );
    if args.exit_when_done {
        operator.stop().await;
        drop(kubelet);
        return Ok(());
    }
    println!("Serving until Ctrl-C.");
    crate::operator::shutdown_signal().await;
    println!("Stopping.");
    operator.stop().await;
    drop(kubelet);
    drop(cluster);
    Ok(())
}

/// Prints every change of the Cinder's conditions until it is Ready.
async fn follow_until_ready(api: &Api<Cinder>, name: &str, started: Instant) -> anyhow::Result<()> {
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut stream = watcher::watcher(api.clone(), config)
        .applied_objects()
        .boxed();
    let mut last = String::new();
    let deadline = Duration::from_secs(300);
    loop {
        let next = tokio::time::timeout(deadline.saturating_sub(started.elapsed()), stream.next())
            .await
            .context("the Cinder did not become Ready in time")?;
        let Some(cinder) = next.transpose()? else {
            bail!("the watch ended");
        };
        let Some(status) = cinder.status.as_ref() else {
            continue;
        };
        let line = status
            .conditions
            .iter()
            .map(|c| format!("{}={} ({})", c.type_, c.status, c.reason))
            .collect::<Vec<_>>()
            .join("  ");
        if line != last {
            println!("  [{:>5.1}s] {line}", started.elapsed().as_secs_f64());
            last = line;
        }
        let ready = status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if ready && status.observed_generation == cinder.metadata.generation {
            println!(
                "Cinder is Ready at release {} after {:.1}s.",
                status.installed_release,
                started.elapsed().as_secs_f64()
            );
            return Ok(());
        }
    }
}

/// Sets the simulated kubelet up to make the chosen part of the upgrade fail.
fn inject_failure(scenarios: &Scenarios, inject: Option<Inject>, to: &Release) {
    let rule = |workload: &str, behaviour: Behaviour| {
        scenarios.add(PodSelector::workload(NAMESPACE, workload), behaviour);
    };
    match inject {
        None => {}
        Some(Inject::FailExpand) => rule(
            "cinder-db-expand",
            Behaviour::always_exit(1, "OperationalError: simulated failure"),
        ),
        Some(Inject::FailMigrate) => rule(
            "cinder-db-migrate",
            Behaviour::always_exit(255, "cinder-status upgrade check exit 255"),
        ),
        Some(Inject::FailContract) => rule(
            "cinder-db-contract",
            Behaviour::always_exit(2, "online data migrations errored"),
        ),
        Some(Inject::StuckRollout) => {
            scenarios.add(
                PodSelector::workload(NAMESPACE, "cinder-backup")
                    .with_image_containing(&format!(":{to}")),
                Behaviour::hang(),
            );
        }
    }
}
