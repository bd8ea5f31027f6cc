//! Leader election through a coordination.k8s.io Lease (kube-lease-manager, which
//! tracks kube 5): with two replicas only the holder runs the controllers; the
//! other takes over when the holder releases the Lease (graceful stop) or stops
//! renewing it (crash) and it expires.

use std::future::Future;
use std::sync::Arc;

use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;

use crate::context::{Context, LeaderElection};

/// Resolves once `stop` says true.
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Runs `controllers` while this replica leads, until `stop`.
pub async fn run_while_leading<F, Fut>(
    ctx: Arc<Context>,
    election: LeaderElection,
    stop: watch::Receiver<bool>,
    controllers: F,
) where
    F: Fn(Arc<Context>, std::pin::Pin<Box<dyn Future<Output = ()> + Send + Sync>>) -> Fut,
    Fut: Future<Output = ()>,
{
    let manager = LeaseManagerBuilder::new(ctx.client.clone(), &election.lease_name)
        .with_namespace(&election.namespace)
        .with_identity(&election.identity)
        .with_duration(election.duration_seconds)
        .with_grace(election.grace_seconds)
        .build()
        .await;
    let manager = match manager {
        Ok(m) => m,
        Err(e) => {
            tracing::error!(error = %e, lease = %election.lease_name, "leader election unavailable; not reconciling");
            stopped(stop).await;
            return;
        }
    };
    let (mut leading, lease_task) = manager.watch().await;
    // Aborting this future (a crash) aborts the renewals too, so the Lease expires.
    let lease_task = AbortOnDrop(Some(lease_task));
    loop {
        tokio::select! {
            biased;
            _ = stopped(stop.clone()) => break,
            changed = leading.wait_for(|l| *l) => if changed.is_err() { break },
        }
        tracing::info!(identity = %election.identity, "leading: starting the controllers");
        let lost = {
            let mut leading = leading.clone();
            let stop = stop.clone();
            async move {
                tokio::select! {
                    _ = leading.wait_for(|l| !*l) => {}
                    _ = stopped(stop) => {}
                }
            }
        };
        controllers(ctx.clone(), Box::pin(lost)).await;
        if *stop.borrow() {
            break;
        }
        tracing::warn!(identity = %election.identity, "lost the lease: controllers stopped");
    }
    // Graceful stop: closing the channel makes the manager release the Lease.
    drop(leading);
    if let Some(task) = lease_task.take() {
        let _ = task.await;
    }
}

struct AbortOnDrop(
    Option<tokio::task::JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>>,
);

impl AbortOnDrop {
    fn take(
        mut self,
    ) -> Option<tokio::task::JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>>
    {
        self.0.take()
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}
