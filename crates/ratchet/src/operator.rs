//! `ratchet operator`: run the controllers (and optionally the admission
//! webhook) against the current kubeconfig or the in-cluster service account.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use ratchet_operator::LeaderElection;
use ratchet_operator::OperatorConfig;
use ratchet_operator::webhooks::{Endpoint, Registration, TlsSource, WebhookConfig};
use ratchet_services::Services;

#[derive(Args)]
pub struct OperatorArgs {
    /// Watch only this namespace (default: all namespaces).
    #[arg(long, env = "RATCHET_NAMESPACE")]
    namespace: Option<String>,
    /// Reconciles running at once.
    #[arg(long, default_value_t = 4)]
    concurrency: u16,
    /// Reconcile only while holding a Lease, so several replicas never act at once.
    #[arg(long)]
    leader_election: bool,
    /// The Lease's name.
    #[arg(long, default_value = "ratchet-leader")]
    lease_name: String,
    /// The Lease's namespace (in a pod: its own, from POD_NAMESPACE).
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    lease_namespace: String,
    /// Seconds until a crashed leader's Lease expires and a standby takes over.
    #[arg(long, default_value_t = 15)]
    lease_duration_seconds: u64,
    /// Serve /metrics, /healthz and /readyz (plain HTTP) on this address.
    #[arg(long, default_value = "0.0.0.0:8080")]
    metrics_bind: SocketAddr,
    /// Serve the admission webhook on this address (e.g. 0.0.0.0:9443).
    #[arg(long)]
    webhook_bind: Option<SocketAddr>,
    /// Serving certificate (PEM), e.g. issued by cert-manager. Without it the
    /// operator generates one and manages the webhook configuration's caBundle.
    #[arg(long, requires = "webhook_key_file")]
    webhook_cert_file: Option<PathBuf>,
    #[arg(long, requires = "webhook_cert_file")]
    webhook_key_file: Option<PathBuf>,
    /// The CA that signed --webhook-cert-file (cert-manager's `ca.crt`): lets the
    /// operator keep the caBundle of what it registers.
    #[arg(long, requires = "webhook_cert_file")]
    webhook_ca_file: Option<PathBuf>,
    /// Register only the CRDs' conversion, not the admission webhook (its
    /// configuration is deployed with the caBundle injected by cert-manager).
    #[arg(long)]
    webhook_conversion_only: bool,
    /// Without certificate files: keep the generated certificate in this Secret
    /// (NAMESPACE/NAME) so that every replica serves the same one.
    #[arg(long, conflicts_with = "webhook_cert_file")]
    webhook_cert_secret: Option<String>,
    /// Register the webhook as this Service: NAMESPACE/NAME:PORT.
    #[arg(long, conflicts_with = "webhook_register_url")]
    webhook_register_service: Option<String>,
    /// Register the webhook at this URL base (e.g. https://127.0.0.1:9443).
    #[arg(long)]
    webhook_register_url: Option<String>,
    /// Migrate Ratchet's CRDs' stored objects to the storage version and prune
    /// storedVersions, at start-up and whenever a CRD changes (default: on when
    /// watching all namespaces; it needs cluster-wide rights).
    #[arg(long)]
    storage_migration: Option<bool>,
}

fn parse_service(text: &str) -> anyhow::Result<Endpoint> {
    let (namespace, rest) = text
        .split_once('/')
        .context("expected NAMESPACE/NAME:PORT")?;
    let (name, port) = rest
        .split_once(':')
        .context("expected NAMESPACE/NAME:PORT")?;
    Ok(Endpoint::Service {
        namespace: namespace.into(),
        name: name.into(),
        port: port.parse().context("the port must be a number")?,
    })
}

fn webhook_config(args: &OperatorArgs) -> anyhow::Result<Option<WebhookConfig>> {
    let Some(bind) = args.webhook_bind else {
        if args.webhook_register_service.is_some() || args.webhook_register_url.is_some() {
            bail!("--webhook-register-* needs --webhook-bind");
        }
        return Ok(None);
    };
    let endpoint = match (&args.webhook_register_service, &args.webhook_register_url) {
        (Some(service), _) => Some(parse_service(service)?),
        (None, Some(url)) => Some(Endpoint::Url(url.clone())),
        (None, None) => None,
    };
    let tls = match (&args.webhook_cert_file, &args.webhook_key_file) {
        (Some(cert), Some(key)) => TlsSource::Files {
            cert: cert.clone(),
            key: key.clone(),
            ca: args.webhook_ca_file.clone(),
        },
        _ => {
            let mut dns_names = vec!["localhost".to_string()];
            if let Some(Endpoint::Service {
                namespace, name, ..
            }) = &endpoint
            {
                dns_names.push(format!("{name}.{namespace}.svc"));
                dns_names.push(format!("{name}.{namespace}.svc.cluster.local"));
            }
            let ips = vec![std::net::Ipv4Addr::LOCALHOST.into()];
            match &args.webhook_cert_secret {
                Some(secret) => {
                    let (namespace, name) = secret
                        .split_once('/')
                        .filter(|(ns, name)| !ns.is_empty() && !name.is_empty())
                        .with_context(|| {
                            format!("--webhook-cert-secret {secret:?}: expected NAMESPACE/NAME")
                        })?;
                    TlsSource::SelfManagedShared {
                        dns_names,
                        ips,
                        namespace: namespace.to_string(),
                        name: name.to_string(),
                    }
                }
                None => TlsSource::SelfManaged { dns_names, ips },
            }
        }
    };
    Ok(Some(WebhookConfig {
        bind,
        tls,
        registration: endpoint.map(|endpoint| Registration {
            name: "ratchet".into(),
            endpoint,
            namespace_selector: None,
            conversion: true,
            admission: !args.webhook_conversion_only,
        }),
    }))
}

pub async fn run(args: OperatorArgs) -> anyhow::Result<()> {
    let client = kube::Client::try_default()
        .await
        .context("connecting to Kubernetes (kubeconfig or in-cluster)")?;
    let config = OperatorConfig {
        namespace: args.namespace.clone(),
        concurrency: args.concurrency,
        webhook: webhook_config(&args)?,
        metrics_bind: Some(args.metrics_bind),
        leader_election: args.leader_election.then(|| LeaderElection {
            lease_name: args.lease_name.clone(),
            namespace: args.lease_namespace.clone(),
            identity: std::env::var("POD_NAME")
                .unwrap_or_else(|_| format!("ratchet-{}", std::process::id())),
            duration_seconds: args.lease_duration_seconds.max(2),
            grace_seconds: (args.lease_duration_seconds.max(2) / 3).max(1),
        }),
        storage_migration: args.storage_migration.unwrap_or(args.namespace.is_none()),
        ..OperatorConfig::default()
    };
    let handle = ratchet_operator::start::<Services>(client, config).await?;
    tracing::info!(namespace = ?args.namespace, "ratchet operator running");
    shutdown_signal().await;
    tracing::info!("shutting down: finishing in-flight reconciles");
    handle.stop().await;
    Ok(())
}

/// SIGTERM (Kubernetes) or Ctrl-C (people).
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
