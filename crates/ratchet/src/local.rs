//! Ratchet's own local control plane for people: `ratchet local up` serves one
//! (etcd, kube-apiserver, kube-controller-manager, a simulated kubelet, the CRDs
//! and, unless asked not to, the operator) until Ctrl-C, the way `kind create
//! cluster` is used; the demo starts the same one.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use ratchet_operator::registry::PerService;
use ratchet_operator::service::OpenStackService;
use ratchet_operator::webhooks::{Endpoint, Registration, TlsSource, WebhookConfig};
use ratchet_operator::{OperatorConfig, OperatorHandle};
use ratchet_services::{Registry, Services};
use ratchet_testenv::process_kubelet::node::RealNode;
use ratchet_testenv::{
    ClusterOptions, KubeletOptions, LocalCluster, ProcessKubeletOptions, SimKubelet,
};

#[derive(Args)]
pub struct LocalArgs {
    #[command(subcommand)]
    command: LocalCommand,
}

#[derive(Subcommand)]
enum LocalCommand {
    /// Start a local control plane with Ratchet's CRDs (and its operator) and
    /// serve it until Ctrl-C; prints the kubeconfig and a kubectl line.
    Up(UpArgs),
}

#[derive(Args)]
struct UpArgs {
    /// Do not start Ratchet's operator: run your own build against the
    /// kubeconfig (`KUBECONFIG=… ratchet operator`, or `cargo run -p ratchet --
    /// operator`).
    #[arg(long)]
    no_operator: bool,
    /// Delay before a simulated pod becomes Ready, in milliseconds.
    #[arg(long, default_value_t = 300)]
    ready_delay_ms: u64,
    /// Keep the cluster's directory (certificates, logs, etcd data) after exit.
    #[arg(long)]
    keep_dir: bool,
    /// Also copy the kubeconfig to this path (it names the cluster's own
    /// certificates, which live only as long as the cluster does).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
}

/// Image repository of the examples: the simulated kubelet pulls nothing.
pub const EXAMPLE_REPOSITORY: &str = "registry.invalid/openstack";
/// The release the examples install.
const EXAMPLE_RELEASE: &str = "2026.1";

/// A running local control plane, its simulated kubelet, optionally a process
/// kubelet (real pods, in namespaces labelled for it) and the operator.
pub struct Local {
    pub cluster: LocalCluster,
    pub kubelet: SimKubelet,
    pub process: Option<RealNode>,
    pub operator: Option<OperatorHandle>,
}

/// How to start a [`Local`].
pub struct LocalOptions {
    pub keep_dir: bool,
    pub ready_delay: Duration,
    pub operator: bool,
    /// Also start a process kubelet (needs root): pods of namespaces labelled
    /// `ratchet.dev/kubelet=process` run as real processes.
    pub processes: bool,
    /// The operator's instance name (its events' reporting instance).
    pub instance: &'static str,
}

impl Local {
    pub async fn start(options: LocalOptions) -> anyhow::Result<Local> {
        println!(
            "Starting Ratchet's local control plane (the first run builds Kubernetes from Go modules)..."
        );
        let cluster = LocalCluster::start_with(ClusterOptions {
            keep_dir: options.keep_dir,
            start_timeout: Duration::from_secs(120),
            ..ClusterOptions::default()
        })
        .await
        .context("starting the local control plane")?;
        let client = cluster.client()?;
        let kubelet = SimKubelet::start(
            client.clone(),
            KubeletOptions {
                ready_delay: options.ready_delay,
                ..KubeletOptions::default()
            },
        )
        .await
        .context("starting the simulated kubelet")?;
        let process = if options.processes {
            let process = RealNode::start(&cluster, ProcessKubeletOptions::default())
                .await
                .context("starting the process kubelet (real pods) with kube-proxy and CoreDNS")?;
            println!(
                "Process kubelet running: pods on node {} are real processes; kube-proxy and CoreDNS serve its Services and DNS.",
                process.kubelet.node_name()
            );
            Some(process)
        } else {
            None
        };
        let t = cluster.timings();
        println!(
            "Local cluster ready in {:.1}s (etcd {:.1}s, kube-apiserver {:.1}s, kube-controller-manager {:.1}s).",
            t.total.as_secs_f64(),
            t.etcd.as_secs_f64(),
            t.apiserver.as_secs_f64(),
            t.controller_manager.as_secs_f64()
        );
        ratchet_operator::install::install_crds::<Services>(&client, Duration::from_secs(60))
            .await?;
        let operator = if options.operator {
            let operator =
                ratchet_operator::start::<Services>(client, operator_config(options.instance)?)
                    .await
                    .context("starting the operator")?;
            println!(
                "Operator running (admission and conversion webhook on {}).",
                operator
                    .webhook_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_default()
            );
            Some(operator)
        } else {
            None
        };
        Ok(Local {
            cluster,
            kubelet,
            process,
            operator,
        })
    }

    /// Prints how to reach the cluster.
    pub fn print_access(&self, namespace: Option<&str>, resources: &str) {
        let kubeconfig = self.cluster.kubeconfig_path();
        println!("  kubeconfig:  {}", kubeconfig.display());
        let scope = namespace.map_or_else(|| "-A".to_string(), |ns| format!("-n {ns}"));
        println!(
            "  try:         {} --kubeconfig {} {scope} get {resources}",
            self.cluster.binaries().kubectl().display(),
            kubeconfig.display(),
        );
    }

    /// Stops the operator, then the kubelets (real pods first) and the cluster.
    pub async fn stop(self) {
        if let Some(operator) = self.operator {
            operator.stop().await;
        }
        drop(self.process);
        drop(self.kubelet);
        drop(self.cluster);
    }
}

/// The operator as the local cluster runs it: in-process, with self-managed
/// webhook certificates on loopback, registering admission and conversion.
fn operator_config(instance: &str) -> anyhow::Result<OperatorConfig> {
    Ok(OperatorConfig {
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
        instance: instance.into(),
        ..OperatorConfig::default()
    })
}

/// Writes every registered service's example resource (at the oldest release
/// Ratchet installs) into `dir`, one YAML file each; returns their paths.
fn write_examples(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    struct Example;
    impl PerService for Example {
        type Item = (&'static str, serde_json::Value);
        fn of<S: OpenStackService>(&self) -> Self::Item {
            let repository = format!("{EXAMPLE_REPOSITORY}/{}", S::SERVICE);
            let example = S::example(S::SERVICE, EXAMPLE_RELEASE, &repository, 1);
            (S::SERVICE, example.manifest)
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    Services::map(&Example)
        .into_iter()
        .map(|(service, manifest)| {
            let path = dir.join(format!("{service}.yaml"));
            let yaml = serde_yaml_ng::to_string(&manifest)?;
            std::fs::write(&path, yaml).with_context(|| format!("writing {}", path.display()))?;
            Ok(path)
        })
        .collect()
}

pub async fn run(args: LocalArgs) -> anyhow::Result<()> {
    let LocalCommand::Up(args) = args.command;
    let local = Local::start(LocalOptions {
        keep_dir: args.keep_dir,
        ready_delay: Duration::from_millis(args.ready_delay_ms),
        operator: !args.no_operator,
        processes: false,
        instance: "ratchet-local",
    })
    .await?;
    let client = local.cluster.client()?;
    let namespace = "default";
    ratchet_operator::install::ensure_example_secrets::<Services>(&client, namespace).await?;
    if let Some(path) = &args.kubeconfig {
        std::fs::copy(local.cluster.kubeconfig_path(), path)
            .with_context(|| format!("copying the kubeconfig to {}", path.display()))?;
        println!("Kubeconfig copied to {}.", path.display());
    }
    let examples = write_examples(&local.cluster.dir().join("examples"))?;
    println!(
        "Ready. Namespace {namespace} holds the Secrets these examples refer to (apply one with kubectl apply -f):"
    );
    for path in &examples {
        println!("  example:     {}", path.display());
    }
    let plurals: Vec<String> = Services::services().into_iter().map(|s| s.plural).collect();
    local.print_access(
        None,
        &format!(
            "{},deployments,statefulsets,daemonsets,jobs",
            plurals.join(",")
        ),
    );
    if args.no_operator {
        println!(
            "  operator:    not started; run yours with KUBECONFIG={} ratchet operator",
            local.cluster.kubeconfig_path().display()
        );
    }
    println!("Serving until Ctrl-C.");
    crate::operator::shutdown_signal().await;
    println!("Stopping.");
    local.stop().await;
    Ok(())
}
