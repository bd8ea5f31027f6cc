//! Ratchet's controllers. Each OpenStack service is a profile on the shared phase
//! machine (`ratchet-phase-machine`); this crate observes the cluster, asks the
//! machine, and applies its decision.

mod children;
pub mod context;
pub mod error;
mod events;
pub mod install;
pub mod labels;
pub mod leader;
pub mod metrics;
pub mod pods;
pub mod rbac;
pub mod registry;
pub mod service;
pub mod storage;
pub mod testing;
pub mod webhooks;

use std::sync::Arc;

pub use context::{Context, LeaderElection, OperatorConfig};
pub use error::Error;
pub use registry::Registry;

/// How long a graceful stop waits for in-flight reconciles.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(20);

/// A running operator; stops when dropped.
pub struct OperatorHandle {
    shutdown: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    webhook: Option<webhooks::WebhookServer>,
    metrics_server: Option<metrics::MetricsServer>,
    metrics: Arc<metrics::Metrics>,
}

impl OperatorHandle {
    /// Stops gracefully: in-flight reconciles finish first.
    pub async fn stop(mut self) {
        let _ = self.shutdown.send(true);
        // Bounded, like a pod's termination grace period: a pass that does not
        // finish in time is cut off (the next leader repeats it).
        if tokio::time::timeout(STOP_GRACE, &mut self.task)
            .await
            .is_err()
        {
            tracing::warn!(
                "in-flight reconciles did not finish within {STOP_GRACE:?}; stopping anyway"
            );
            self.task.abort();
        }
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

/// Starts the webhook server (when configured) and the controller of every
/// service in `R` on the current runtime.
pub async fn start<R: Registry>(
    client: kube::Client,
    config: OperatorConfig,
) -> Result<OperatorHandle, Error> {
    let metrics = Arc::new(metrics::Metrics::default());
    let metrics_server = match config.metrics_bind {
        Some(bind) => Some(
            metrics::serve(bind, metrics.clone())
                .await
                .map_err(|e| Error::Tls(format!("metrics endpoint on {bind}: {e}")))?,
        ),
        None => None,
    };
    let (webhook, conversion) = match &config.webhook {
        Some(webhook) => {
            let (server, conversion) =
                webhooks::start::<R>(&client, webhook, metrics.clone()).await?;
            (Some(server), conversion)
        }
        None => (None, None),
    };
    let election = config.leader_election.clone();
    let ctx = Arc::new(Context::new(client, config, metrics.clone()).with_conversion(conversion));
    let (tx, stop) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(async move {
        match election {
            None => {
                let mut stop = stop;
                controllers::<R>(ctx, async move {
                    let _ = stop.wait_for(|s| *s).await;
                })
                .await;
            }
            Some(election) => {
                leader::run_while_leading(ctx, election, stop, controllers::<R>).await;
            }
        }
    });
    metrics.set_ready();
    Ok(OperatorHandle {
        shutdown: tx,
        task,
        webhook,
        metrics_server,
        metrics,
    })
}

/// Everything that runs while this replica may write: every service's
/// controller and, when enabled, the upkeep of Ratchet's CRDs (conversion
/// endpoint, stored-version migration).
async fn controllers<R: Registry>(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    use futures::FutureExt;
    let shutdown = shutdown.shared();
    let crds_kept = ctx.config.storage_migration || ctx.conversion.is_some();
    tokio::join!(run_all::<R>(ctx.clone(), shutdown.clone()), async {
        if crds_kept {
            storage::runner::run::<R>(ctx.clone(), shutdown.clone()).await;
        }
    });
}

/// Runs the controller of every service in `R` until `shutdown` resolves, over
/// one shared set of child watches. Each controller and each watch's routing
/// is its own task, so a busy one never delays another's reaction.
async fn run_all<R: Registry>(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    use futures::FutureExt;
    use futures::future::{BoxFuture, Shared};
    use std::any::Any;
    use std::collections::HashMap;
    /// Each service's own watch, started before any controller so that every
    /// pass can read its peers from the stores.
    struct Reflect<'a> {
        ctx: &'a Context,
        sources: service::peer_directory::Sources,
        listed: Vec<(&'static str, BoxFuture<'static, ()>)>,
        reflected: HashMap<&'static str, Box<dyn Any + Send>>,
    }
    impl registry::ServiceVisitor for Reflect<'_> {
        fn visit<S: service::OpenStackService>(&mut self) {
            // Our own reflector rather than `Controller::new`'s: it retries a
            // failed watch within a second and keeps its errors out of the
            // trigger stream.
            let (tap, listed) = self.sources.tap::<S>();
            let (store, stream) = service::caches::reflected_tapped(
                self.ctx.api::<S>(),
                kube::runtime::watcher::Config::default(),
                service::drop_managed_fields,
                tap,
            );
            self.sources.add(store.clone());
            self.listed.push((S::SERVICE, listed));
            self.reflected.insert(S::SERVICE, Box::new((store, stream)));
        }
    }
    struct Controllers<F: std::future::Future> {
        ctx: Arc<Context>,
        caches: service::Caches,
        triggers: HashMap<&'static str, service::Triggers>,
        reflected: HashMap<&'static str, Box<dyn Any + Send>>,
        shutdown: Shared<F>,
        running: tokio::task::JoinSet<()>,
    }
    impl<F> registry::ServiceVisitor for Controllers<F>
    where
        F: std::future::Future<Output = ()> + Send + Sync + 'static,
    {
        fn visit<S: service::OpenStackService>(&mut self) {
            let reflected = self
                .reflected
                .remove(S::SERVICE)
                .and_then(|r| r.downcast::<service::Reflected<S>>().ok());
            if let (Some(triggers), Some(reflected)) = (self.triggers.remove(S::SERVICE), reflected)
            {
                self.running.spawn(service::run::<S>(
                    self.ctx.clone(),
                    self.caches.clone(),
                    triggers,
                    *reflected,
                    self.shutdown.clone(),
                ));
            }
        }
    }
    let shutdown = shutdown.shared();
    let mut reflect = Reflect {
        ctx: &ctx,
        sources: Default::default(),
        listed: Vec::new(),
        reflected: HashMap::new(),
    };
    R::visit_all(&mut reflect);
    let Reflect {
        sources,
        listed,
        reflected,
        ..
    } = reflect;
    let (caches, routed) = service::Caches::start(&ctx, &R::service_names(), sources, listed);
    let mut controllers = Controllers {
        ctx,
        caches,
        triggers: routed.triggers,
        reflected,
        shutdown: shutdown.clone(),
        running: tokio::task::JoinSet::new(),
    };
    R::visit_all(&mut controllers);
    for routing in routed.routing {
        let shutdown = shutdown.clone();
        controllers.running.spawn(async move {
            tokio::select! {
                _ = routing => {}
                _ = shutdown => {}
            }
        });
    }
    // Dropped early (the lease lost without a graceful stop), the set aborts
    // every task in it.
    while controllers.running.join_next().await.is_some() {}
}
