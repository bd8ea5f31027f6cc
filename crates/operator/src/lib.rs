//! Ratchet's controllers. Each OpenStack service is a profile on the shared phase
//! machine (`ratchet-phase-machine`); this crate observes the cluster, asks the
//! machine, and applies its decision.

mod children;
pub mod cinder;
pub mod context;
pub mod error;
mod events;
pub mod install;
pub mod labels;
pub mod metrics;
pub mod webhooks;

use std::sync::Arc;

pub use context::{Context, OperatorConfig};
pub use error::Error;

/// A running operator; stops when dropped.
pub struct OperatorHandle {
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    webhook: Option<webhooks::WebhookServer>,
    metrics_server: Option<metrics::MetricsServer>,
    metrics: Arc<metrics::Metrics>,
}

impl OperatorHandle {
    /// Stops gracefully: in-flight reconciles finish first.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let _ = (&mut self.task).await;
        self.webhook.take();
    }

    /// Where /metrics, /healthz and /readyz are served, if they are.
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.metrics_server.as_ref().map(|m| m.local_addr)
    }

    pub fn metrics(&self) -> &metrics::Metrics {
        &self.metrics
    }

    /// Where the admission webhook listens, if it runs.
    pub fn webhook_addr(&self) -> Option<std::net::SocketAddr> {
        self.webhook.as_ref().map(|w| w.local_addr)
    }
}

impl Drop for OperatorHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts the webhook server (when configured) and every controller on the
/// current runtime.
pub async fn start(client: kube::Client, config: OperatorConfig) -> Result<OperatorHandle, Error> {
    let metrics = Arc::new(metrics::Metrics::default());
    let metrics_server = match config.metrics_bind {
        Some(bind) => Some(
            metrics::serve(bind, metrics.clone())
                .await
                .map_err(|e| Error::Tls(format!("metrics endpoint on {bind}: {e}")))?,
        ),
        None => None,
    };
    let webhook = match &config.webhook {
        Some(webhook) => Some(webhooks::start(&client, webhook, metrics.clone()).await?),
        None => None,
    };
    let ctx = Arc::new(Context::new(client, config, metrics.clone()));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        cinder::run(ctx, async move {
            let _ = rx.await;
        })
        .await;
    });
    metrics.set_ready();
    Ok(OperatorHandle {
        shutdown: Some(tx),
        task,
        webhook,
        metrics_server,
        metrics,
    })
}
