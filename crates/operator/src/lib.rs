//! Ratchet's controllers. Each OpenStack service is a profile on the shared phase
//! machine (`ratchet-phase-machine`); this crate observes the cluster, asks the
//! machine, and applies its decision.

mod children;
pub mod cinder;
pub mod context;
pub mod error;
mod events;
pub mod labels;

use std::sync::Arc;

pub use context::{Context, OperatorConfig};
pub use error::Error;

/// A running operator; stops when dropped.
pub struct OperatorHandle {
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl OperatorHandle {
    /// Stops gracefully: in-flight reconciles finish first.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let _ = (&mut self.task).await;
    }
}

impl Drop for OperatorHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts every controller on the current runtime.
pub fn start(client: kube::Client, config: OperatorConfig) -> OperatorHandle {
    let ctx = Arc::new(Context::new(client, config));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        cinder::run(ctx, async move {
            let _ = rx.await;
        })
        .await;
    });
    OperatorHandle {
        shutdown: Some(tx),
        task,
    }
}
